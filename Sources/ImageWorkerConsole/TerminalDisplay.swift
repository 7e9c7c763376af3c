import Foundation
import ImageWorkerServer

/// Writes what a `get` run shows: result lines on stdout, and (on a terminal) the progress board
/// on stderr, redrawn in place. Used from one thread only.
final class TerminalDisplay {
    private let bars: Bool
    /// A status line every `lineInterval` instead of bars (stderr is a log, not a terminal).
    private let lines: Bool
    private let started = ContinuousClock.now
    private var lastLine = ContinuousClock.now
    private let lineInterval: Duration
    /// Called when stdout or stderr is closed (a write failed).
    private let onClosed: @Sendable () -> Void
    private var drawnLines = 0
    private var dirty = false
    private var lastDraw = ContinuousClock.now - .seconds(1)
    static let redrawInterval = Duration.milliseconds(100)

    init(bars: Bool, lines: Bool = false, lineInterval: Duration = .seconds(5), onClosed: @escaping @Sendable () -> Void) {
        self.bars = bars
        self.lines = lines
        self.lineInterval = lineInterval
        self.onClosed = onClosed
    }

    /// A URL ended: its line goes to stdout above the board.
    func result(_ line: String, _ session: GetSession) {
        erase()
        if !Self.write(STDOUT_FILENO, line + "\n") { onClosed() }
        draw(session)
    }

    /// The board changed; it is redrawn at most every `redrawInterval` (see `tick`).
    func changed(_ session: GetSession) {
        line(session)
        guard bars else { return }
        dirty = true
        if ContinuousClock.now - lastDraw >= Self.redrawInterval { draw(session) }
    }

    /// Called when nothing arrived for a while: draws a change that was held back.
    func tick(_ session: GetSession) {
        line(session)
        if bars, dirty { draw(session) }
    }

    private func line(_ session: GetSession) {
        guard lines, ContinuousClock.now - lastLine >= lineInterval else { return }
        lastLine = .now
        let text = ProgressBoard.statusLine(session, seconds: (ContinuousClock.now - started) / .seconds(1))
        if !Self.write(STDERR_FILENO, "image-worker get: " + text + "\n") { onClosed() }
    }

    /// Leaves the terminal clean (the board removed).
    func finish() {
        erase()
    }

    private func draw(_ session: GetSession) {
        guard bars else { return }
        erase()
        let size = Self.terminalSize()
        let lines = ProgressBoard.render(session, width: size.columns, maxBars: max(1, min(12, size.rows - 3)))
        if !Self.write(STDERR_FILENO, lines.joined(separator: "\n") + "\n") { onClosed() }
        drawnLines = lines.count
        dirty = false
        lastDraw = .now
    }

    private func erase() {
        guard drawnLines > 0 else { return }
        // Up to the board's first line, then clear to the end of the screen.
        if !Self.write(STDERR_FILENO, "\u{1B}[\(drawnLines)A\r\u{1B}[J") { onClosed() }
        drawnLines = 0
    }

    static func terminalSize() -> (columns: Int, rows: Int) {
        var size = winsize()
        if ioctl(STDERR_FILENO, UInt(TIOCGWINSZ), &size) == 0, size.ws_col > 0 {
            return (Int(size.ws_col), Int(size.ws_row))
        }
        return (80, 24)
    }

    /// Writes all of `text`; false when the descriptor is closed (`| head`) or failing.
    @discardableResult
    static func write(_ fd: Int32, _ text: String) -> Bool {
        FileDescriptorOutput.writeAll(fd, Array(text.utf8))
    }
}
