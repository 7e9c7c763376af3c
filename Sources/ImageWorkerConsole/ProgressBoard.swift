/// The progress bars of a `get` run, as lines of text: one per download under way, then a
/// totals line. Pure: the terminal side only moves the cursor and prints these.
public enum ProgressBoard {
    /// - Parameters:
    ///   - width: the terminal's columns; no line is longer.
    ///   - maxBars: at most this many bars; the others are counted on the totals line.
    public static func render(_ session: GetSession, width: Int, maxBars: Int) -> [String] {
        let width = max(width, 20)
        let active = session.items.filter { $0.phase != .waiting && $0.phase != .ended }
        var lines = active.prefix(max(maxBars, 0)).map { bar($0, width: width) }
        let waiting = session.count - session.ended - active.count
        var totals = "\(session.ended)/\(session.count) done"
        if session.failed > 0 { totals += ", \(session.failed) failed" }
        if active.count > lines.count { totals += ", \(active.count - lines.count) more running" }
        if waiting > 0 { totals += ", \(waiting) waiting" }
        totals += ", \(ByteCount.format(session.receivedBytes))"
        lines.append(clip(totals, width))
        return lines
    }

    /// `40/100 done, 2 failed, 1 cancelled, 6 running, 12.3 MB, 10 s`: the progress line written
    /// every few seconds when stderr is not a terminal.
    public static func statusLine(_ session: GetSession, seconds: Double) -> String {
        var text = "\(session.ended)/\(session.count) done"
        if session.kept > 0 { text += ", \(session.kept) kept" }
        if session.failed > 0 { text += ", \(session.failed) failed" }
        if session.cancelled > 0 { text += ", \(session.cancelled) cancelled" }
        if let running = session.running, running > 0 { text += ", \(running) running" }
        return text + ", \(ByteCount.format(session.receivedBytes)), \(Int(seconds.rounded())) s"
    }

    /// `[########------------]  41%  2.3 MB/5.6 MB  partial 2  name.jpg`
    static func bar(_ item: GetSession.Item, width: Int) -> String {
        let barWidth = 20
        var text: String
        if let expected = item.expectedBytes, expected > 0 {
            let fraction = min(1, Double(item.receivedBytes) / Double(expected))
            let filled = Int((fraction * Double(barWidth)).rounded(.down))
            let percent = Int((fraction * 100).rounded(.down))
            text = "[" + String(repeating: "#", count: filled) + String(repeating: "-", count: barWidth - filled) + "] "
            text += pad(String(percent) + "%", 4) + "  " + ByteCount.format(item.receivedBytes) + "/" + ByteCount.format(expected)
        } else {
            let label: String
            switch item.phase {
            case .connecting: label = "connecting"
            case .finishing: label = "finishing"
            default: label = "receiving"
            }
            text = "[" + pad(label, barWidth, centred: true) + "]       " + ByteCount.format(item.receivedBytes)
        }
        if item.phase == .finishing, item.expectedBytes != nil { text += "  finishing" }
        if item.partialImages > 0 { text += "  partial \(item.partialImages)" }
        text += "  " + displayName(item.shownURL)
        return clip(text, width)
    }

    /// The URL's last path component, or the URL.
    static func displayName(_ url: String) -> String {
        var path = url
        if let q = path.firstIndex(where: { $0 == "?" || $0 == "#" }) { path = String(path[..<q]) }
        let last = path.split(separator: "/", omittingEmptySubsequences: true).last.map(String.init) ?? url
        return last.contains(":") ? url : last
    }

    static func pad(_ text: String, _ width: Int, centred: Bool = false) -> String {
        let gap = max(0, width - text.count)
        guard centred else { return String(repeating: " ", count: gap) + text }
        return String(repeating: " ", count: gap / 2) + text + String(repeating: " ", count: gap - gap / 2)
    }

    static func clip(_ text: String, _ width: Int) -> String {
        text.count <= width - 1 ? text : String(text.prefix(width - 2)) + "…"
    }
}
