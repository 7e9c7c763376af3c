import Foundation
import ImageWorkerProtocol
import ImageWorkerServer
import Logging
import NIOConcurrencyHelpers

/// `image-worker get`: the worker itself, in process, fed with one `download` per URL through a
/// pipe, its events read back from another pipe and shown to a person (or passed through as
/// NDJSON with `--json`). The same engine as the protocol, down to the wire.
public enum GetRunner {
    /// Runs to the end and returns the exit status: 0 when every URL was downloaded, 1 when any
    /// failed, 130 / 143 when interrupted by SIGINT / SIGTERM, 141 (as if killed by SIGPIPE) when
    /// stdout or stderr was closed: the run is cancelled as soon as a write fails.
    public static func run(_ options: GetOptions, logger: Logger) async -> Int32 {
        signal(SIGPIPE, SIG_IGN)
        if let problem = Folders.make(options.directory) {
            TerminalDisplay.write(STDERR_FILENO, "image-worker get: cannot use \(options.directory) as the output folder: \(problem)\n")
            return 2
        }
        // A manifest: with `resume`, the URLs it shows as done are carried over, not fetched.
        let input = options.input
        var manifest: ManifestWriter?
        var done: ManifestIndex?
        var doneBefore = 0
        var shards: ShardWriter?
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
            if options.outputLayout.sharded {
                let writer = try ShardWriter(
                    directory: options.directory, layout: options.outputLayout, naming: options.shardNaming, rows: count,
                    captioned: input.columns.caption != nil, saved: input.columns.saved, format: options.format, resume: options.resume)
                shards = writer
                doneBefore += writer.rowsDone
                if writer.rowsDone > 0 && !options.json {
                    TerminalDisplay.write(
                        STDERR_FILENO, "image-worker get: \(writer.complete.count) of \(writer.shardCount) shards already complete\n")
                }
            }
            total = count - doneBefore
        } catch let mismatch as ShardWriter.Mismatch {
            TerminalDisplay.write(STDERR_FILENO, "image-worker get: \(mismatch)\n")
            return 64
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
        if manifest != nil || shards != nil { initial.recordFormat = options.format }
        if shards != nil { initial.shards = (options.shardNaming, options.outputLayout) }
        if options.format == "original", options.verify != .full { initial.originalCheck = options.verify }
        let reader = EventReader(
            fd: outputRead, session: initial, fed: fed, json: options.json, bars: options.progressBars,
            lines: options.progressLines && !options.json, lineInterval: options.progressInterval, manifest: manifest, shards: shards
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
        let sharded = shards
        let messageLimit = workerOptions.maxMessageBytes
        // Where the list could not be read past (a table damaged after its start, a file cut).
        let unreadable = NIOLockedValueBox<String?>(nil)
        let feeder = Thread {
            do {
                try feed()
            } catch {
                unreadable.withLockedValue { $0 = "\(error)" }
            }
            close(inputWrite)  // stdin's end: the worker finishes what it has, then returns
        }
        @Sendable func feed() throws {
            try input.forEach { entry in
                if fed.interrupted { return false }
                if let carried, carried.contains(url: entry.url, name: entry.name, index: entry.index) { return true }
                if let sharded, sharded.skips(index: entry.index) { return true }
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
        }
        feeder.name = "image-worker get: requests"
        feeder.start()

        _ = await server.run(input: InputReader(fd: inputRead, maximumMessageBytes: workerOptions.maxMessageBytes))
        await server.close()
        close(outputWrite)
        var session = await reader.finished()
        if fed.interrupted { session.interrupted = true }
        let shardProblem = shards?.close()
        if let shardProblem { TerminalDisplay.write(STDERR_FILENO, "image-worker get: \(shardProblem)\n") }
        close(outputRead)
        close(inputRead)  // a feeder still blocked on a full pipe (after a signal) gets EPIPE
        withExtendedLifetime(signals) {}

        if !options.json {
            let seconds = (ContinuousClock.now - started) / .seconds(1)
            let before = doneBefore > 0 ? ", \(doneBefore) done before (\(shards == nil ? "manifest" : "complete shards"))" : ""
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
        if let problem = unreadable.withLockedValue({ $0 }) {
            // What was fed ended as usual (in the manifest, complete shards kept); the rest was not read.
            TerminalDisplay.write(STDERR_FILENO, "image-worker get: input: \(problem); the rows after it were not read\n")
            return 2
        }
        if let number = interruptedBy.withLockedValue({ $0 }) { return 128 + number }
        if outputClosed.withLockedValue({ $0 }) { return 128 + SIGPIPE }
        return session.allDone && shardProblem == nil ? 0 : 1
    }

    private static func makePipe() -> (read: Int32, write: Int32)? {
        var fds: [Int32] = [0, 0]
        guard pipe(&fds) == 0 else { return nil }
        for fd in fds { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        return (fds[0], fds[1])
    }
}
