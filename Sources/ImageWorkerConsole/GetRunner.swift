import Foundation
import ImageWorkerProtocol
import ImageWorkerServer
import Logging
import NIOConcurrencyHelpers

/// `image-worker get`: the worker itself, in process, fed with one `download` per URL through a
/// pipe, its events read back from another pipe and shown to a person (or passed through as
/// NDJSON with `--json`). The same engine as the protocol, down to the wire.
public enum GetRunner {
    /// Why a folder could not be made, as the system says it (Foundation's own sentence, "The
    /// operation could not be completed. A file with the same name already exists.", names neither
    /// the part of the path nor the cause).
    static func folderProblem(_ path: String, _ error: any Error) -> String {
        var info = stat()
        if stat(path, &info) == 0, info.st_mode & S_IFMT != S_IFDIR { return "it is a file, not a folder" }
        // The first component that is in the way, or that could not be made, says what is wrong.
        var parent = path.hasPrefix("/") ? "/" : "."
        var prefix = path.hasPrefix("/") ? "" : nil as String?
        for component in path.split(separator: "/") {
            let current = prefix.map { $0 + "/" + component } ?? String(component)
            defer { (parent, prefix) = (current, current) }
            if stat(current, &info) == 0 {
                if info.st_mode & S_IFMT != S_IFDIR { return "\(current) is a file, not a folder" }
                continue
            }
            let missing = errno
            guard missing == ENOENT else { return "\(current): \(reason(missing))" }
            if access(parent, W_OK | X_OK) != 0 {
                let denied = errno
                return "cannot make \(current) in \(parent): \(reason(denied))"
            }
            break
        }
        return error.localizedDescription
    }

    private static func reason(_ code: Int32) -> String { String(cString: strerror(code)).lowercased() }

    /// Runs to the end and returns the exit status: 0 when every URL was downloaded, 1 when any
    /// failed, 130 / 143 when interrupted by SIGINT / SIGTERM, 141 (as if killed by SIGPIPE) when
    /// stdout or stderr was closed: the run is cancelled as soon as a write fails.
    public static func run(_ options: GetOptions, logger: Logger) async -> Int32 {
        signal(SIGPIPE, SIG_IGN)
        do {
            try FileManager.default.createDirectory(atPath: options.directory, withIntermediateDirectories: true)
        } catch {
            let problem = folderProblem(options.directory, error)
            TerminalDisplay.write(STDERR_FILENO, "image-worker get: cannot use \(options.directory) as the output folder: \(problem)\n")
            return 2
        }
        // A manifest: with `resume`, the URLs it shows as done are carried over, not fetched.
        let input = options.input
        var manifest: ManifestWriter?
        var done: ManifestIndex?
        var doneBefore = 0
        let total: Int
        var uncommitted: ManifestWriter?
        do {
            var count = 0
            if let path = options.manifest {
                let writer = try ManifestWriter(path: path)
                uncommitted = writer
                if options.resume, FileManager.default.fileExists(atPath: path) {
                    // Read a line at a time; each done record is copied into the new manifest as
                    // its input line is met (the list is walked again when fed), never held.
                    let index = try ManifestIndex(path: path)
                    try input.forEach { entry in
                        count += 1
                        if let line = index.take(url: entry.url, name: entry.name, index: entry.index) {
                            try writer.carry(line)
                            doneBefore += 1
                        }
                        return true
                    }
                    done = index
                } else {
                    count = try input.count()
                }
                try writer.commit()
                uncommitted = nil
                manifest = writer
                if doneBefore > 0 && !options.json {
                    TerminalDisplay.write(STDERR_FILENO, "image-worker get: \(doneBefore) of \(count) URLs already done (\(path))\n")
                }
            } else {
                count = try input.count()
            }
            total = count - doneBefore
        } catch {
            uncommitted?.discard()
            TerminalDisplay.write(STDERR_FILENO, "image-worker get: \(options.manifest.map { "manifest \($0)" } ?? "input"): \(error)\n")
            return 2
        }
        defer { done?.close() }
        guard let (inputRead, inputWrite) = makePipe(), let (outputRead, outputWrite) = makePipe() else {
            TerminalDisplay.write(STDERR_FILENO, "image-worker get: cannot create pipes: \(String(cString: strerror(errno)))\n")
            return 2
        }

        var workerOptions = WorkerOptions()
        workerOptions.networkThreads = options.networkThreads
        workerOptions.configuration.maxConcurrentDownloads = options.concurrency
        workerOptions.configuration.maxConcurrentPerHost = options.perHost
        workerOptions.configuration.maxRequestsPerSecondPerHost = options.perHostRate
        if let p = options.proxy { workerOptions.useProxy(p) }  // (checked by the command)
        if let n = options.noProxy { workerOptions.useNoProxy(n) }
        workerOptions.cacheDirectory = options.cacheDirectory
        if let t = options.timeoutMs { workerOptions.configuration.timeoutMs = t }
        if let r = options.maxRetries { workerOptions.configuration.maxRetries = r }
        if let n = options.hostDownAfter { workerOptions.configuration.hostDownAfter = n }
        if let t = options.hostDownMs { workerOptions.configuration.hostDownMs = t }
        if let t = options.userAgentToken { workerOptions.configuration.userAgentToken = t }
        if let list = options.disallowedHeaderDirectives { workerOptions.configuration.disallowedHeaderDirectives = GetOptions.directives(list) }
        let server = WorkerServer(options: workerOptions, wireFD: outputWrite, logger: logger)
        let interruptedBy = NIOLockedValueBox<Int32?>(nil)
        // Entries fed and not yet taken by the reader: registered before their request is written,
        // so no message of a token comes before its entry.
        let fed = FedEntries()
        let signals = server.handleTerminationSignals { number in
            interruptedBy.withLockedValue { $0 = number }
            fed.interrupt()  // no more requests; those already sent and refused are not failures
        }

        let started = ContinuousClock.now
        let outputClosed = NIOLockedValueBox(false)
        var initial = GetSession()
        initial.total = total
        initial.quiet = options.quietEvents
        if manifest != nil { initial.recordFormat = options.format }
        if options.format == "original", options.verify != .full { initial.originalCheck = options.verify }
        let reader = EventReader(
            fd: outputRead, session: initial, fed: fed, json: options.json, bars: options.progressBars,
            lines: options.progressLines && !options.json, lineInterval: options.progressInterval, manifest: manifest
        ) {
            let first = outputClosed.withLockedValue { closed in
                defer { closed = true }
                return !closed
            }
            if first { server.requestTermination() }
        }
        // The list is walked again, each request made as the pipe takes it: past
        // `maxLiveDownloads` the worker stops reading, and the rest of the list waits unread.
        let carried = done
        let messageLimit = workerOptions.maxMessageBytes
        let feeder = Thread {
            try? input.forEach { entry in
                if fed.interrupted { return false }
                if let carried, carried.contains(url: entry.url, name: entry.name, index: entry.index) { return true }
                let request = options.downloadRequest(entry)
                var line = JSONWriter.encode(request)
                guard line.count <= messageLimit else {
                    // The worker would skip a message that large unread, and its reply could not
                    // name the request: refused here, as the worker refuses a request.
                    fed.refuse(
                        entry, id: RPCId(request["id"] ?? .null) ?? .null,
                        message: "the request for this URL is \(line.count) bytes, over the worker's limit of \(messageLimit) bytes a message "
                            + "(its URL is \(entry.url.utf8.count) bytes long)")
                    return true
                }
                fed.add(entry)
                line.append(UInt8(ascii: "\n"))
                return FileDescriptorOutput.writeAll(inputWrite, line)
            }
            close(inputWrite)  // stdin's end: the worker finishes what it has, then returns
        }
        feeder.name = "image-worker get: requests"
        feeder.start()

        _ = await server.run(input: InputReader(fd: inputRead, maximumMessageBytes: workerOptions.maxMessageBytes))
        await server.close()
        close(outputWrite)
        var session = await reader.finished()
        if fed.interrupted { session.interrupted = true }
        close(outputRead)
        close(inputRead)  // a feeder still blocked on a full pipe (after a signal) gets EPIPE
        withExtendedLifetime(signals) {}

        if !options.json {
            let seconds = (ContinuousClock.now - started) / .seconds(1)
            let before = doneBefore > 0 ? ", \(doneBefore) done before (manifest)" : ""
            TerminalDisplay.write(STDERR_FILENO, session.summary(seconds: seconds) + before + "\n")
            if session.interrupted, !session.allDone {
                TerminalDisplay.write(
                    STDERR_FILENO,
                    options.manifest != nil
                        ? "image-worker get: run it again with --continue to fetch only what is not done\n"
                        : "image-worker get: with --manifest FILE (and --continue when run again) a rerun fetches only what is not done\n")
            }
            // (With --json the events carry each download's metrics; stderr stays quiet.)
            if let timings = session.timingSummary() { TerminalDisplay.write(STDERR_FILENO, timings + "\n") }
        }
        if let number = interruptedBy.withLockedValue({ $0 }) { return 128 + number }
        if outputClosed.withLockedValue({ $0 }) { return 128 + SIGPIPE }
        return session.allDone ? 0 : 1
    }

    private static func makePipe() -> (read: Int32, write: Int32)? {
        var fds: [Int32] = [0, 0]
        guard pipe(&fds) == 0 else { return nil }
        for fd in fds { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        return (fds[0], fds[1])
    }

}

/// Reads the worker's output lines on a thread of its own, feeds them to a `GetSession` and the
/// display (or, with `--json`, copies the events to stdout), until the pipe ends.
final class EventReader: Sendable {
    private let result = NIOLockedValueBox<(session: GetSession?, waiter: CheckedContinuation<GetSession, Never>?)>((nil, nil))

    /// `onOutputClosed`: stdout or stderr could not be written (the reader went away). `lines`:
    /// a progress line every few seconds on stderr instead of bars. `manifest`: each URL's record
    /// is appended as it ends.
    init(
        fd: Int32, session start: GetSession, fed: FedEntries, json: Bool, bars: Bool, lines: Bool, lineInterval: Duration,
        manifest: ManifestWriter?, onOutputClosed: @escaping @Sendable () -> Void
    ) {
        let thread = Thread { [self] in
            var session = start
            let clock = ContinuousClock.now
            let display = TerminalDisplay(bars: bars && !json, lines: lines && !bars, lineInterval: lineInterval, onClosed: onOutputClosed)
            var pending: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 64 * 1024)
            func take(_ line: ArraySlice<UInt8>) {
                guard !line.isEmpty, let message = try? JSONParser.parse(line) else { return }
                for entry in fed.take() { session.register(entry) }
                if fed.interrupted { session.interrupted = true }
                handle(message, line: line)
            }
            /// Entries refused before they were sent: answered as the worker answers a refused request.
            func takeRefused() {
                for (entry, reply) in fed.takeRefused() {
                    for earlier in fed.take() { session.register(earlier) }
                    session.register(entry)
                    handle(reply, line: JSONWriter.encode(reply)[...])
                }
            }
            func handle(_ message: JSONValue, line: ArraySlice<UInt8>) {
                if json, message["method"] != nil || message["error"] != nil,
                    !TerminalDisplay.write(
                        STDOUT_FILENO, (session.withURL(message).map { String(decoding: JSONWriter.encode($0), as: UTF8.self) }
                            ?? String(decoding: line, as: UTF8.self)) + "\n")
                {
                    onOutputClosed()
                }
                let now = (ContinuousClock.now - clock) / .seconds(1)
                for output in session.handle(message, now: now) {
                    if case .record(let record) = output {
                        manifest?.append(record)
                        continue
                    }
                    guard !json else { continue }
                    switch output {
                    case .result(let text): display.result(text, session)
                    case .redraw: display.changed(session)
                    case .record: break
                    }
                }
            }
            reading: while true {
                var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
                let ready = poll(&p, 1, 100)
                if ready < 0 && errno == EINTR { continue }
                takeRefused()
                if ready == 0 {
                    display.tick(session)
                    continue
                }
                let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
                switch n {
                case ..<0 where errno == EINTR || errno == EAGAIN: continue
                case ...0: break reading
                default:
                    pending.append(contentsOf: buffer[0..<n])
                    var start = pending.startIndex
                    while let newline = pending[start...].firstIndex(of: UInt8(ascii: "\n")) {
                        take(pending[start..<newline])
                        start = newline + 1
                    }
                    pending.removeSubrange(..<start)
                }
            }
            take(pending[...])
            takeRefused()
            display.finish()
            let waiter = self.result.withLockedValue { r in
                r.session = session
                return r.waiter
            }
            waiter?.resume(returning: session)
        }
        thread.name = "image-worker get: events"
        thread.start()
    }

    /// The session once the worker's output has ended.
    func finished() async -> GetSession {
        await withCheckedContinuation { continuation in
            let done = result.withLockedValue { r -> GetSession? in
                if let session = r.session { return session }
                r.waiter = continuation
                return nil
            }
            if let done { continuation.resume(returning: done) }
        }
    }
}

/// The entries the feeder has written requests for and the event reader has not yet registered,
/// and those it refused to send (each with the error response that stands for the worker's).
final class FedEntries: Sendable {
    private let entries = NIOLockedValueBox<[GetEntry]>([])
    private let refused = NIOLockedValueBox<[(GetEntry, JSONValue)]>([])
    private let stopped = NIOLockedValueBox(false)

    /// The run is interrupted: the feeder sends no more, and refusals are not failures.
    func interrupt() { stopped.withLockedValue { $0 = true } }
    var interrupted: Bool { stopped.withLockedValue { $0 } }

    func add(_ entry: GetEntry) {
        entries.withLockedValue { $0.append(entry) }
    }

    func take() -> [GetEntry] {
        entries.withLockedValue { taken in
            defer { taken.removeAll(keepingCapacity: true) }
            return taken
        }
    }

    /// An entry whose request (of `id`) is not sent: it ends as a refused request, with `message`.
    func refuse(_ entry: GetEntry, id: RPCId, message: String) {
        let reply = RPCResponse.failure(id: id, error: RPCError(code: RPCError.invalidRequestCode, message: message))
        refused.withLockedValue { $0.append((entry, reply)) }
    }

    func takeRefused() -> [(GetEntry, JSONValue)] {
        refused.withLockedValue { taken in
            defer { taken.removeAll() }
            return taken
        }
    }
}
