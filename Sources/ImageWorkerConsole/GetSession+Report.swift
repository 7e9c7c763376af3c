import Foundation

/// What a person reads of a run: a result line per URL, the timings' medians and the summary.
extension GetSession {
    /// `ok      URL -> PATH (227x149, jpeg, 5.6 kB)`, `failed  URL: Name: message`, `cancelled URL`.
    public static func resultLine(_ item: Item) -> String {
        switch item.outcome {
        case .success(let path, let detail)?:
            let target = path.map { " -> \($0)" } ?? ""
            return "ok      \(item.shownURL)\(target) (\(detail))"
        case .kept(let path, let detail)?:
            return "kept    \(item.shownURL)\(path.map { " -> \($0)" } ?? "") (\(detail))"
        case .failed(let name, let message)?:
            return "failed  \(item.shownURL): \(name): \(message)"
        case .cancelled?:
            return "cancelled \(item.shownURL)"
        case nil:
            return "pending \(item.shownURL)"
        }
    }

    /// The medians of the downloads' metrics, a phase over the downloads that went through it:
    /// `timings (median of 5): queued 0.2 ms, connect 3.1 ms (2 new connections), ttfb 12.0 ms,
    /// transfer 40.2 ms, decode 5.1 ms, write 1.0 ms; 1 from the cache, 4 over HTTP/2`; nil
    /// when no download has metrics.
    /// (Past `timingSample` downloads, the medians are a uniform sample's; the counts are exact.)
    public func timingSummary() -> String? {
        let all = timings
        guard !all.isEmpty else { return nil }
        func median(_ phase: Int) -> (Double, Int)? {
            let values = all.compactMap { $0.phase(phase).map(Double.init) }.sorted()
            guard !values.isEmpty else { return nil }
            let mid = values.count / 2
            return (values.count % 2 == 1 ? values[mid] : (values[mid - 1] + values[mid]) / 2, timed.phases[phase])
        }
        var parts: [String] = []
        for (phase, (_, label)) in Timing.phases.enumerated() {
            guard let (value, n) = median(phase) else { continue }
            let extra = label == "connect" ? " (\(n) new connection\(n == 1 ? "" : "s"))" : ""
            parts.append("\(label) \(String(format: "%.1f", value)) ms\(extra)")
        }
        var tail: [String] = []
        if timed.cached > 0 { tail.append("\(timed.cached) from the cache") }
        if timed.http2 > 0 { tail.append("\(timed.http2) over HTTP/2") }
        if timed.retried > 0 { tail.append("\(timed.retried) retried") }
        return "timings (median of \(timed.count)): " + parts.joined(separator: ", ") + (tail.isEmpty ? "" : "; " + tail.joined(separator: ", "))
    }

    /// `3 downloaded, 2 kept, 1 failed, 1 cancelled, 1.2 MB in 0.8 s`; interrupted:
    /// `interrupted: 3 downloaded, 1 failed, 200 not done, 1.2 MB in 0.8 s`.
    public func summary(seconds: Double) -> String {
        summaryCounts(seconds: seconds) + unverifiedNote
    }

    /// How many originals were saved without a full decode: a truncated or corrupt image
    /// passes a header check.
    var unverifiedNote: String {
        guard let check = originalCheck, check != .full, succeeded > 0 else { return "" }
        let what = succeeded == 1 ? "1 original" : "\(succeeded) originals"
        switch check {
        case .none: return "; \(what) saved unchecked (--verify full decodes every pixel)"
        case .header, .full: return "; \(what) checked by header only (--verify full decodes every pixel)"
        }
    }

    func summaryCounts(seconds: Double) -> String {
        var text = (interrupted ? "interrupted: " : "") + "\(succeeded) downloaded"
        if kept > 0 { text += ", \(kept) kept" }
        if failed > 0 { text += ", \(failed) failed" }
        if interrupted {
            // Cancelled, refused as the run stopped, or never sent: all of them not done.
            let notDone = count - succeeded - kept - failed
            if notDone > 0 { text += ", \(notDone) not done" }
        } else {
            if cancelled > 0 {
                text += ", \(cancelled) cancelled" + (cancelledWaiting > 0 ? " (\(cancelledWaiting) before they started)" : "")
            }
            let pending = count - succeeded - kept - failed - cancelled
            if pending > 0 { text += ", \(pending) unfinished" }
        }
        return text + ", \(ByteCount.format(receivedBytes)) in \(String(format: "%.1f", seconds)) s"
    }
}
