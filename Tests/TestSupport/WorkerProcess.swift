import Foundation
import ImageWorkerProtocol
import Synchronization

/// The real `image-worker` binary, spawned with pipes, as a client would drive it.
public final class WorkerProcess: Sendable {
    public struct Timeout: Error, CustomStringConvertible {
        public let what: String
        public let stderr: String
        /// The worker's threads' stacks when it would not exit (gdb's, when installed).
        public var stacks: String = ""
        public var description: String {
            "timed out waiting for \(what); worker stderr:\n\(stderr)" + (stacks.isEmpty ? "" : "\nworker stacks:\n\(stacks)")
        }
    }

    private struct Inbox {
        var bytes: [UInt8] = []
        var lines: [[UInt8]] = []
        var messages: [JSONValue] = []
        var closed = false
    }

    public let process: Process
    /// While true, the test stops reading the worker's stdout (a slow client).
    private let paused = Mutex(false)
    private let stdinHandle: FileHandle
    /// The worker's stdout and stderr, read by two threads (kept open as long as this object).
    private let outputHandles: [FileHandle]
    private let inbox = Mutex(Inbox())
    private let exited = Mutex<Int32?>(nil)
    private let stderrText = Mutex("")

    /// The binary under test: `$IMAGE_WORKER_BIN`, or the one built beside the test bundle.
    public static var binaryPath: String {
        if let path = ProcessInfo.processInfo.environment["IMAGE_WORKER_BIN"] { return path }
        let beside = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
            .appendingPathComponent("image-worker").path
        if FileManager.default.isExecutableFile(atPath: beside) { return beside }
        let repo = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        return repo.appendingPathComponent(".build/debug/image-worker").path
    }

    public static var repositoryRoot: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    }

    /// Spawns the worker (or, with `shell`, `/bin/sh -c shell` with `$IMAGE_WORKER` set to it),
    /// with `environment` over this process's own.
    public init(arguments: [String] = [], shell: String? = nil, environment extra: [String: String] = [:]) throws {
        let process = Process()
        var environment = ProcessInfo.processInfo.environment
        for (name, value) in extra { environment[name] = value }
        if let shell {
            process.executableURL = URL(fileURLWithPath: "/bin/sh")
            process.arguments = ["-c", shell]
            environment["IMAGE_WORKER"] = WorkerProcess.binaryPath
        } else {
            process.executableURL = URL(fileURLWithPath: WorkerProcess.binaryPath)
            process.arguments = arguments
        }
        process.environment = environment
        let (stdin, stdout, stderr) = (try Self.pipeClosedOnExec(), try Self.pipeClosedOnExec(), try Self.pipeClosedOnExec())
        process.standardInput = stdin.read
        process.standardOutput = stdout.write
        process.standardError = stderr.write
        try ChildExit.run(process)
        // The child's ends are the child's: closed here, so that its exit ends our reads.
        for end in [stdin.read, stdout.write, stderr.write] { try? end.close() }
        self.process = process
        self.stdinHandle = stdin.write
        self.outputHandles = [stdout.read, stderr.read]
        let outFD = stdout.read.fileDescriptor
        let errFD = stderr.read.fileDescriptor
        let inbox = self.inboxRef
        Thread.detachNewThread {
            var pending: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 65536)
            while true {
                while inbox.owner.paused.withLock({ $0 }) { usleep(2000) }
                let n = buffer.withUnsafeMutableBytes { read(outFD, $0.baseAddress, $0.count) }
                if n < 0 && errno == EINTR { continue }
                if n <= 0 { break }
                pending.append(contentsOf: buffer[0..<n])
                inbox.raw(buffer[0..<n])
                // Only when a message may have ended: a long line is not searched once a read.
                guard buffer[0..<n].contains(0x0A) || pending.starts(with: Array("Content-Length: ".utf8)) else { continue }
                while let message = WorkerProcess.nextMessage(&pending) { inbox.deliver(message) }
            }
            inbox.close()
        }
        let errText = self.stderrRef
        Thread.detachNewThread {
            var buffer = [UInt8](repeating: 0, count: 65536)
            while true {
                let n = buffer.withUnsafeMutableBytes { read(errFD, $0.baseAddress, $0.count) }
                if n < 0 && errno == EINTR { continue }
                if n <= 0 { break }
                errText.append(String(decoding: buffer[0..<n], as: UTF8.self))
            }
        }
    }

    /// The next whole message at the front of `pending`, removed from it: a line, or (the worker
    /// answers Content-Length framing in kind) a `Content-Length: N` frame's body.
    static func nextMessage(_ pending: inout [UInt8]) -> [UInt8]? {
        let header = Array("Content-Length: ".utf8)
        if pending.starts(with: header) {
            guard let end = pending.firstRange(of: [13, 10, 13, 10]),
                let length = Int(String(decoding: pending[header.count..<end.lowerBound], as: UTF8.self)),
                pending.count >= end.upperBound + length
            else { return nil }
            let body = Array(pending[end.upperBound..<end.upperBound + length])
            pending.removeFirst(end.upperBound + length)
            return body
        }
        guard let newline = pending.firstIndex(of: 0x0A) else { return nil }
        let line = Array(pending[..<newline])
        pending.removeFirst(newline + 1)
        return line
    }

    // Small Sendable views for the reader threads.
    private var inboxRef: InboxRef { InboxRef(owner: self) }
    private var stderrRef: StderrRef { StderrRef(owner: self) }

    struct InboxRef: Sendable {
        let owner: WorkerProcess
        func deliver(_ line: [UInt8]) {
            let parsed = (try? JSONParser.parse(line)) ?? .string("<<unparsable line: \(String(decoding: line, as: UTF8.self))>>")
            owner.inbox.withLock { s in
                s.lines.append(line)
                s.messages.append(parsed)
            }
        }
        func close() {
            owner.inbox.withLock { $0.closed = true }
        }
        func raw(_ bytes: ArraySlice<UInt8>) {
            owner.inbox.withLock { $0.bytes.append(contentsOf: bytes) }
        }
    }

    struct StderrRef: Sendable {
        let owner: WorkerProcess
        func append(_ text: String) { owner.stderrText.withLock { $0 += text } }
    }

    public var stderr: String { stderrText.withLock { $0 } }

    /// Everything written to stdout so far.
    public var rawOutput: [UInt8] { inbox.withLock { $0.bytes } }

    /// Every line written to stdout so far, raw.
    public var rawLines: [[UInt8]] { inbox.withLock { $0.lines } }

    /// Every message received so far.
    public var received: [JSONValue] { inbox.withLock { $0.messages } }

    public func send(_ text: String) {
        stdinHandle.write(Data(text.utf8))
    }

    public func sendBytes(_ bytes: [UInt8]) {
        stdinHandle.write(Data(bytes))
    }

    public func sendLine(_ json: JSONValue) {
        send(JSONWriter.encodeString(json) + "\n")
    }

    public func request(_ id: Int, _ method: String, _ params: JSONValue = [:]) {
        sendLine(["jsonrpc": "2.0", "id": .int(Int64(id)), "method": .string(method), "params": params])
    }

    public func notify(_ method: String, _ params: JSONValue = [:]) {
        sendLine(["jsonrpc": "2.0", "method": .string(method), "params": params])
    }

    public func pauseReading(_ value: Bool) {
        paused.withLock { $0 = value }
    }

    public func closeStdin() {
        try? stdinHandle.close()
    }

    /// Waits until some received message satisfies `predicate` and returns it (searching all
    /// messages, old and new).
    @discardableResult
    public func waitFor(_ what: String, timeout: Duration = .seconds(30), _ predicate: @escaping @Sendable (JSONValue) -> Bool) async throws -> JSONValue {
        let deadline = ContinuousClock.now + timeout
        while true {
            let (found, closed) = inbox.withLock { s in (s.messages.first(where: predicate), s.closed) }
            if let found { return found }
            if closed { throw Timeout(what: what + " (stdout closed)", stderr: stderr) }
            if ContinuousClock.now >= deadline { throw Timeout(what: what, stderr: stderr) }
            await waitForMore(until: deadline)
        }
    }

    /// The response to request `id`.
    public func response(_ id: Int, timeout: Duration = .seconds(30)) async throws -> JSONValue {
        try await waitFor("response \(id)", timeout: timeout) { $0["id"] == .int(Int64(id)) && $0["method"] == nil }
    }

    /// The terminal event of `token`.
    public func completion(_ token: JSONValue, timeout: Duration = .seconds(30)) async throws -> JSONValue {
        try await waitFor("completion of \(token)", timeout: timeout) {
            $0["method"] == .string(WorkerEvent.completed) && $0["params"]?["token"] == token
        }
    }

    /// Every event of `token` received so far, in order.
    public func events(_ token: JSONValue) -> [JSONValue] {
        received.filter { $0["method"] != nil && $0["params"]?["token"] == token }
    }

    /// Waits until `count` messages have arrived in total.
    public func waitForCount(_ count: Int, timeout: Duration = .seconds(30)) async throws {
        _ = try await waitFor("\(count) messages", timeout: timeout) { [self] _ in self.received.count >= count }
    }

    private func waitForMore(until deadline: ContinuousClock.Instant) async {
        // Polling keeps this simple and cancellation-safe; 5 ms is far below any test's scale.
        try? await Task.sleep(for: .milliseconds(5))
    }

    /// Waits for the process to exit; returns its status (killing it after `timeout`).
    public func waitForExit(timeout: Duration = .seconds(30)) async throws -> Int32 {
        let deadline = ContinuousClock.now + timeout
        while true {
            if let status = exitStatus() {
                // Let the reader thread take the last lines.
                for _ in 0..<100 where !inbox.withLock({ $0.closed }) { try await Task.sleep(for: .milliseconds(10)) }
                return status
            }
            if ContinuousClock.now >= deadline {
                // A worker that does not exit is a bug to find: its threads' stacks say where it waits.
                let stacks = Self.stacks(of: process.processIdentifier)
                process.terminate()
                throw Timeout(what: "exit", stderr: stderr, stacks: stacks)
            }
            try await Task.sleep(for: .milliseconds(20))
        }
    }

    /// The exit status, once the worker has ended (`ChildExit`: reaped here if Foundation has
    /// not noticed; its pid is then never signalled again).
    private func exitStatus() -> Int32? {
        exited.withLock { exited in
            if exited == nil { exited = ChildExit.status(of: process) }
            return exited
        }
    }

    /// A pipe whose ends are closed in every child this test process spawns (`FD_CLOEXEC`; the
    /// child's own end reaches it by `dup2`, which clears the flag). Tests run in parallel: with
    /// plain pipes, a worker spawned by one test inherited the stdin write ends of the workers
    /// of others and held them open, so that those never saw their input end, and two workers
    /// that held each other's never exited. (Glibc's module has no `pipe2`: the flag is set at
    /// once, and a lock around the spawns would block the few threads the tests' tasks run on.)
    /// Every pipe a test makes, for a child or for a worker in this process, must be one of these.
    public static func pipeClosedOnExec() throws -> (read: FileHandle, write: FileHandle) {
        let (read, write) = try pipeDescriptorsClosedOnExec()
        return (FileHandle(fileDescriptor: read, closeOnDealloc: true), FileHandle(fileDescriptor: write, closeOnDealloc: true))
    }

    /// The same pipe as two descriptors the caller closes.
    public static func pipeDescriptorsClosedOnExec() throws -> (read: Int32, write: Int32) {
        var fds: [Int32] = [-1, -1]
        guard pipe(&fds) == 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        for fd in fds { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        return (fds[0], fds[1])
    }

    /// Every thread's backtrace of process `pid` by gdb in batch mode (empty when gdb is absent or
    /// cannot attach), the last `limit` characters. gdb writes into a file, not a pipe: while it
    /// holds this very process stopped, nobody here could read a pipe, and it would wait forever.
    public static func stacks(of pid: Int32, limit: Int = 40_000) -> String {
        let gdb = "/usr/bin/gdb"
        guard FileManager.default.isExecutableFile(atPath: gdb) else { return "" }
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("iw-stacks-\(UUID().uuidString)")
        guard FileManager.default.createFile(atPath: file.path, contents: nil), let output = FileHandle(forWritingAtPath: file.path) else {
            return ""
        }
        defer { try? FileManager.default.removeItem(at: file) }
        let run = Process()
        run.executableURL = URL(fileURLWithPath: gdb)
        run.arguments = ["-p", String(pid), "--batch", "-ex", "thread apply all bt"]
        run.standardOutput = output
        run.standardError = FileHandle.nullDevice  // gdb's symbol-reading complaints
        run.standardInput = FileHandle.nullDevice
        guard (try? ChildExit.run(run)) != nil else { return "" }
        run.waitUntilExit()
        try? output.close()
        let text = (try? String(contentsOf: file, encoding: .utf8)) ?? ""
        return String(text.suffix(limit))
    }

    public func signal(_ number: Int32) {
        guard exitStatus() == nil else { return }
        kill(process.processIdentifier, number)
    }

    deinit {
        if exitStatus() == nil { process.terminate() }
    }
}
