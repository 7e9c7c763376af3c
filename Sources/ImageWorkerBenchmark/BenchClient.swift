import Foundation
import NIOConcurrencyHelpers

/// A lean client for measuring: it timestamps and keeps raw lines without parsing them, so the
/// client is never the bottleneck being measured.
final class BenchClient: Sendable {
    struct Timeout: Error {}

    private struct State {
        var lines: [(time: UInt64, text: String)] = []
        var closed = false
        /// Waiting for more lines: resumed by the reader thread, so nothing polls and steals the
        /// CPU whose latency is being measured.
        var waiters: [CheckedContinuation<Void, Never>] = []
    }

    private let process: Process
    private let input: FileHandle
    /// The lines read so far, shared with the reader thread.
    private let state = NIOLockedValueBox(State())

    init(worker: String, arguments: [String] = []) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: worker)
        process.arguments = arguments
        let stdin = Pipe()
        let stdout = Pipe()
        process.standardInput = stdin
        process.standardOutput = stdout
        process.standardError = FileHandle.nullDevice
        try process.run()
        self.process = process
        self.input = stdin.fileHandleForWriting
        let fd = stdout.fileHandleForReading.fileDescriptor
        let thread = Thread { [state] in
            var pending: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 1 << 16)
            while true {
                let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
                if n < 0 && errno == EINTR { continue }
                if n <= 0 { break }
                let now = DispatchTime.now().uptimeNanoseconds
                pending.append(contentsOf: buffer[0..<n])
                var lines: [(UInt64, String)] = []
                var start = 0
                while let newline = pending[start...].firstIndex(of: 0x0A) {
                    lines.append((now, String(decoding: pending[start..<newline], as: UTF8.self)))
                    start = newline + 1
                }
                pending.removeFirst(start)
                let waiters = state.withLockedValue { s -> [CheckedContinuation<Void, Never>] in
                    s.lines.append(contentsOf: lines.map { (time: $0.0, text: $0.1) })
                    defer { s.waiters = [] }
                    return s.waiters
                }
                waiters.forEach { $0.resume() }
            }
            let waiters = state.withLockedValue { s -> [CheckedContinuation<Void, Never>] in
                s.closed = true
                defer { s.waiters = [] }
                return s.waiters
            }
            waiters.forEach { $0.resume() }
        }
        thread.start()
    }

    func send(_ line: String) { sendRaw(line + "\n") }

    func sendRaw(_ text: String) { input.write(Data(text.utf8)) }

    var lineCount: Int { state.withLockedValue { $0.lines.count } }

    func count(of needle: String) -> Int { state.withLockedValue { $0.lines.filter { $0.text.contains(needle) }.count } }

    /// Returns once more than `count` lines have arrived (or the worker's stdout closed).
    private func waitForMore(than count: Int) async throws {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let ready = state.withLockedValue { s -> Bool in
                if s.lines.count > count || s.closed { return true }
                s.waiters.append(continuation)
                return false
            }
            if ready { continuation.resume() }
        }
        if state.withLockedValue({ $0.closed && $0.lines.count <= count }) { throw Timeout() }
    }

    /// The arrival time of the first line containing `needle`.
    func waitFor(_ needle: String) async throws -> UInt64 {
        var scanned = 0
        while true {
            let (found, count) = state.withLockedValue { s -> (UInt64?, Int) in
                (s.lines[scanned...].first { $0.text.contains(needle) }?.time, s.lines.count)
            }
            if let found { return found }
            scanned = count
            try await waitForMore(than: count)
        }
    }

    func waitForLines(_ count: Int) async throws {
        while true {
            let have = lineCount
            if have >= count { return }
            try await waitForMore(than: have)
        }
    }

    func waitForCount(of needle: String, _ count: Int) async throws {
        var scanned = 0
        var seen = 0
        while seen < count {
            let total = state.withLockedValue { s -> Int in
                seen += s.lines[scanned...].filter { $0.text.contains(needle) }.count
                return s.lines.count
            }
            scanned = total
            if seen < count { try await waitForMore(than: total) }
        }
    }

    /// CPU seconds and peak RSS of the worker so far, from /proc.
    func usage() -> (cpuSeconds: Double, peakRSSMB: Double) {
        let pid = process.processIdentifier
        var cpu = 0.0
        if let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = stat.lastIndex(of: ")")
        {
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            // After the command: state is field 3, utime 14 and stime 15 (1-based in proc(5)).
            if fields.count > 13, let user = Double(fields[11]), let system = Double(fields[12]) {
                cpu = (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
            }
        }
        var rss = 0.0
        if let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
            let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") })
        {
            rss = (Double(line.split(separator: " ").dropFirst().first ?? "0") ?? 0) / 1024
        }
        return (cpu, rss)
    }

    /// Closes stdin and waits for the worker to exit.
    func finish() async throws -> Int32 {
        try? input.close()
        while process.isRunning { try await Task.sleep(nanoseconds: 1_000_000) }
        return process.terminationStatus
    }
}
