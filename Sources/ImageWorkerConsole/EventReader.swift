import Foundation
import ImageWorkerProtocol
import NIOConcurrencyHelpers

/// Reads the worker's output lines on a thread of its own, feeds them to a `GetSession` and the
/// display (or, with `--json`, copies the events to stdout), until the pipe ends.
final class EventReader: Sendable {
    private let result = NIOLockedValueBox<(session: GetSession?, waiter: CheckedContinuation<GetSession, Never>?)>((nil, nil))

    /// `onOutputClosed`: stdout or stderr could not be written (the reader went away). `lines`:
    /// a progress line every few seconds on stderr instead of bars. `manifest`: each URL's record
    /// is appended as it ends; `shards`: and taken into its shard.
    init(
        fd: Int32, session start: GetSession, fed: FedEntries, json: Bool, bars: Bool, lines: Bool, lineInterval: Duration,
        manifest: ManifestWriter?, shards: ShardWriter?, onOutputClosed: @escaping @Sendable () -> Void
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
                    if case .record(var record) = output {
                        if let shards {
                            // The image goes from the staging folder into its shard: the record
                            // names the shard.
                            shards.take(record)
                            if let staged = record["path"]?.stringValue, let index = record["index"]?.integerValue {
                                record["path"] = .string(shards.shardPath(Int(index), staged: staged))
                            }
                        }
                        manifest?.append(record)
                        continue
                    }
                    if case .remove(let path) = output {
                        unlink(path)
                        continue
                    }
                    guard !json else { continue }
                    switch output {
                    case .result(let text): display.result(text, session)
                    case .redraw: display.changed(session)
                    case .record, .remove: break
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
