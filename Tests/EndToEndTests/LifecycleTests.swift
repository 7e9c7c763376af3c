import Foundation
import ImageWorkerProtocol
import Testing
import TestSupport

/// How the process ends: EOF, exit, signals, a vanished reader; and a slow reader.
@Suite struct LifecycleTests {
    /// A download that takes about 30 s: plenty of time to interrupt it.
    static func slowURL(_ server: TestHTTPServer, _ n: Int = 0) -> JSONValue {
        .string(server.url("/files/testorig.jpg?chunk=100&delayMs=500&n=\(n)"))
    }

    func downloadSlow(_ worker: WorkerProcess, _ server: TestHTTPServer, count: Int) async throws {
        for i in 0..<count {
            worker.request(i, "download", ["url": Self.slowURL(server, i), "token": .int(Int64(i))])
        }
        for i in 0..<count {
            try await worker.waitFor("started \(i)") { $0["method"] == "download/started" && $0["params"]?["token"] == .int(Int64(i)) }
        }
    }

    func expectAllCancelled(_ worker: WorkerProcess, count: Int) {
        for i in 0..<count {
            let events = worker.events(.int(Int64(i)))
            let terminals = events.filter { $0["method"] == "download/completed" }
            // On failure, the token's events and the worker's log say what happened. (Seen once: a
            // token of this 30-second download ended `success` after EOF-cancel; most likely this
            // test process's concurrency pool was held by the decoder tests, which then shared it,
            // for longer than the download, so stdin closed after the download had finished.)
            let context: Comment = "token \(i): \(events)\nworker stderr:\n\(worker.stderr)"
            #expect(terminals.count == 1, context)
            #expect(terminals.first?["params"]?["outcome"] == "cancelled", context)
            #expect(events.last?["method"] == "download/completed", context)
        }
    }

    @Test(arguments: [SIGTERM, SIGINT])
    func aSignalCancelsEverythingEmitsEveryTerminalEventAndExitsZero(signal: Int32) async throws {
        let server = try await E2E.startServer()
        defer { Task { await server.shutdown() } }
        let worker = try WorkerProcess()
        try await downloadSlow(worker, server, count: 3)
        worker.request(99, "configure", ["suspended": true])
        _ = try await worker.response(99)
        worker.request(100, "download", ["url": Self.slowURL(server, 100), "token": "queued"])
        _ = try await worker.response(100)
        worker.signal(signal)
        // "Within about a second" is the contract; the 10 s here only guards against a hang.
        #expect(try await worker.waitForExit(timeout: .seconds(10)) == 0)
        expectAllCancelled(worker, count: 3)
        #expect(worker.events("queued").map { $0["params"]?["outcome"] } == ["cancelled"])
    }

    /// A crash (a fatal signal: a trap, a bad access) ends the process at once by that signal,
    /// with one line on stderr, rather than after Swift's backtracer has symbolicated for ~20 s
    /// while the client waits on a worker that can do nothing more.
    @Test(arguments: [SIGSEGV, SIGILL])
    func aCrashEndsTheProcessAtOnceAndSaysSo(signal: Int32) async throws {
        let worker = try WorkerProcess()
        worker.request(1, "status")
        _ = try await worker.response(1)
        let sent = ContinuousClock.now
        worker.signal(signal)
        // (With Swift's backtracer a SIGSEGV kept the worker alive 59 s here: past this timeout.)
        let status = try await worker.waitForExit(timeout: .seconds(15))
        #expect(status == signal, "ended by the signal itself (status \(status)), \(ContinuousClock.now - sent) after it")
        #expect(worker.stderr.contains("image-worker: crashed"), "\(worker.stderr)")
        // No backtrace was made: the runtime's backtracer never ran.
        #expect(!worker.stderr.contains("Program crashed") && !worker.stderr.contains("Backtrace took"), "\(worker.stderr)")
    }

    /// `shutdown` is bounded: a download that never ends is cancelled after `timeoutMs` (5 s by
    /// default), its terminal event first, then the answer (an editor closing must not hang).
    @Test func shutdownCancelsWhatOutlivesItsTimeout() async throws {
        let server = try await E2E.startServer()
        defer { Task { await server.shutdown() } }
        let worker = try WorkerProcess()
        worker.request(1, "download", ["url": .string(server.url("/files/testorig.jpg?gate=never-opened")), "token": "hung"])
        _ = try await worker.response(1)
        try await worker.waitFor("started") { $0["method"] == .string(WorkerEvent.started) }
        let asked = ContinuousClock.now
        worker.request(2, "shutdown", ["timeoutMs": 300])
        let answer = try await worker.response(2, timeout: .seconds(20))
        #expect(answer["result"] != nil, "\(answer)")
        #expect(ContinuousClock.now - asked < .seconds(10))
        let order = worker.received.compactMap { m -> String? in
            if m["id"] == 2 { return "response" }
            return m["method"] == .string(WorkerEvent.completed) ? "completed" : nil
        }
        #expect(order == ["completed", "response"], "the terminal event first")
        #expect(try await worker.completion("hung")["params"]?["outcome"] == "cancelled")
        worker.notify("exit")
        #expect(try await worker.waitForExit() == 0)
        server.openGate("never-opened")
    }

    @Test func eofDrainsByDefault() async throws {
        let server = try await E2E.startServer()
        defer { Task { await server.shutdown() } }
        let worker = try WorkerProcess()
        worker.request(1, "download", ["url": .string(server.url("/files/testorig.jpg?chunk=1000&delayMs=30")), "token": "d"])
        _ = try await worker.response(1)
        worker.closeStdin()
        #expect(try await worker.waitForExit() == 0)
        #expect(worker.events("d").last?["params"]?["outcome"] == "success")
    }

    /// Closes stdin once `token`'s response has come: the worker's exit status, and how long it
    /// took from the close.
    func closeStdinOnceResponded(_ worker: WorkerProcess, _ token: JSONValue, exitWithin: Duration) async throws -> (status: Int32, took: Duration) {
        try await worker.waitFor("\(token) responded") { $0["method"] == "download/response" && $0["params"]?["token"] == token }
        let closed = ContinuousClock.now
        worker.closeStdin()
        let status = try await worker.waitForExit(timeout: exitWithin)
        return (status, ContinuousClock.now - closed)
    }

    /// A stalled download (half its bytes, then nothing) and stdin closed: with `--eof-grace-ms`
    /// it is cancelled once the grace has passed (its idle timeout is 15 s, three attempts).
    @Test func eofGraceCancelsWhatDidNotFinish() async throws {
        let server = try await E2E.startServer()
        defer { Task { await server.shutdown() } }
        let worker = try WorkerProcess(arguments: ["--eof-grace-ms", "300"])
        worker.request(1, "download", ["url": .string(server.url("/files/testorig.jpg?stallAfter=2000")), "token": "stalled"])
        worker.request(2, "download", ["url": .string(server.url("/files/testorig.jpg")), "token": "quick"])
        let (status, took) = try await closeStdinOnceResponded(worker, "stalled", exitWithin: .seconds(10))
        #expect(status == 0)
        #expect(took < .seconds(5))
        #expect(worker.events("stalled").last?["params"]?["outcome"] == "cancelled")
        #expect(worker.events("quick").last?["params"]?["outcome"] == "success")
    }

    /// stdin closed with one download whose host never answers and one that keeps arriving
    /// (a chunk every 0.7 s, 4 s in all): by default the moving one finishes, and once nothing
    /// has moved for 2 s the silent one is cancelled (it held the exit for its timeouts, 45 s).
    @Test func eofFinishesWhatMovesAndCancelsWhatIsSilent() async throws {
        let server = try await E2E.startServer()
        defer { Task { await server.shutdown() } }
        let mute = try await RawHTTPServer.start { _, _ in RawHTTPServer.Answer([UInt8]()) }
        let worker = try WorkerProcess()
        worker.request(1, "download", ["url": .string(mute.url("/a.jpg")), "token": "silent"])
        worker.request(2, "download", ["url": .string(server.url("/files/testorig.jpg?chunk=1000&delayMs=700")), "token": "moving"])
        let (status, took) = try await closeStdinOnceResponded(worker, "moving", exitWithin: .seconds(30))
        await mute.shutdown()
        #expect(status == 0)
        #expect(worker.events("moving").last?["params"]?["outcome"] == "success")
        #expect(worker.events("silent").last?["params"]?["outcome"] == "cancelled")
        // (The moving one's success says it was not cut short; its chunks' timing under load is
        // the test machine's.)
        #expect(took < .seconds(10), "\(took)")
    }

    /// With `--eof-grace-ms none`, stdin's end waits for every download, however quiet.
    @Test func eofGraceNoneWaitsForEverything() async throws {
        let server = try await E2E.startServer()
        defer { Task { await server.shutdown() } }
        let worker = try WorkerProcess(arguments: ["--eof-grace-ms", "none"])
        worker.request(1, "download", ["url": .string(server.url("/files/testorig.jpg?chunk=3000&delayMs=2600")), "token": "slow"])
        #expect(try await closeStdinOnceResponded(worker, "slow", exitWithin: .seconds(30)).status == 0)
        #expect(worker.events("slow").last?["params"]?["outcome"] == "success")
    }

    /// A reader that goes away while the worker has nothing to write (one download whose host
    /// never answers): the worker stops at once, not when a write would find the pipe closed
    /// (after the download's timeouts: 45 s with the defaults).
    @Test func aReaderThatGoesAwayStopsASilentWorker() async throws {
        let mute = try await RawHTTPServer.start { _, _ in RawHTTPServer.Answer([UInt8]()) }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: WorkerProcess.binaryPath)
        let input = Pipe()
        let output = Pipe()
        process.standardInput = input
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try ChildExit.run(process)
        let request = JSONWriter.encode(
            ["jsonrpc": "2.0", "id": 1, "method": "download", "params": ["token": "a", "url": .string(mute.url("/a.jpg"))]])
        input.fileHandleForWriting.write(Data(request + [UInt8(ascii: "\n")]))
        // The request's answer, then the download under way; then the reader leaves (stdin stays open).
        let answer = output.fileHandleForReading.availableData
        #expect(String(decoding: answer, as: UTF8.self).contains("\"result\""))
        let deadline = ContinuousClock.now + .seconds(10)
        while mute.connections == 0, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(20)) }
        #expect(mute.connections >= 1, "the download did start")
        let left = ContinuousClock.now
        try output.fileHandleForReading.close()
        let status = try await ChildExit.wait(for: process, terminatingAfter: .seconds(60))
        let took = ContinuousClock.now - left
        try? input.fileHandleForWriting.close()
        await mute.shutdown()
        #expect(status == 0)
        #expect(took < .seconds(5), "the worker went on for \(took) after its reader left")
    }

    /// `shutdown {}` gives what runs 2 s, not 5, before cancelling it.
    @Test func shutdownWaitsTwoSecondsByDefault() async throws {
        let server = try await E2E.startServer()
        defer { Task { await server.shutdown() } }
        let worker = try WorkerProcess()
        worker.request(1, "download", ["url": .string(server.url("/files/testorig.jpg?stallAfter=2000")), "token": "stalled"])
        try await worker.waitFor("stalled responded") { $0["method"] == "download/response" && $0["params"]?["token"] == "stalled" }
        let asked = ContinuousClock.now
        worker.request(2, "shutdown", [:])
        _ = try await worker.response(2, timeout: .seconds(10))
        let took = ContinuousClock.now - asked
        #expect(took >= .milliseconds(1900) && took < .milliseconds(4500), "\(took)")
        #expect(worker.events("stalled").last?["params"]?["outcome"] == "cancelled")
        worker.notify("exit")
        #expect(try await worker.waitForExit(timeout: .seconds(10)) == 0)
    }

    @Test func eofCancelsWithOnEOFCancel() async throws {
        let server = try await E2E.startServer()
        defer { Task { await server.shutdown() } }
        let worker = try WorkerProcess(arguments: ["--on-eof", "cancel"])
        try await downloadSlow(worker, server, count: 2)
        worker.closeStdin()
        #expect(try await worker.waitForExit(timeout: .seconds(10)) == 0)
        expectAllCancelled(worker, count: 2)
    }

    @Test func exitWithoutShutdownCancelsAndExitsOne() async throws {
        let server = try await E2E.startServer()
        defer { Task { await server.shutdown() } }
        let worker = try WorkerProcess()
        try await downloadSlow(worker, server, count: 2)
        worker.notify("exit")
        #expect(try await worker.waitForExit(timeout: .seconds(10)) == 1)
        expectAllCancelled(worker, count: 2)
    }

    @Test func shutdownWithCancelPending() async throws {
        let server = try await E2E.startServer()
        defer { Task { await server.shutdown() } }
        let worker = try WorkerProcess()
        try await downloadSlow(worker, server, count: 2)
        worker.request(50, "shutdown", ["cancelPending": true])
        let answer = try await worker.response(50)
        #expect(answer["result"] == .object(JSONObject()))
        let answerIndex = try #require(worker.received.firstIndex { $0["id"] == 50 })
        let lastTerminal = try #require(worker.received.lastIndex { $0["method"] == "download/completed" })
        #expect(lastTerminal < answerIndex, "every terminal event precedes the shutdown answer")
        worker.request(51, "download", ["url": Self.slowURL(server), "token": "late"])
        #expect(try await worker.response(51)["error"]?["code"] == -32600)
        worker.notify("exit")
        #expect(try await worker.waitForExit() == 0)
        expectAllCancelled(worker, count: 2)
    }

    @Test func aClosedStdoutEndsTheWorker() async throws {
        let server = try await E2E.startServer()
        defer { Task { await server.shutdown() } }
        // `head` leaves after two lines; the worker's next write fails and it must exit, even
        // though its stdin stays open and a 30-second download is under way.
        let worker = try WorkerProcess(shell: #""$IMAGE_WORKER" | head -n 2 > /dev/null; wait"#)
        worker.request(1, "download", ["url": Self.slowURL(server), "token": "x"])
        #expect(try await worker.waitForExit(timeout: .seconds(20)) == 0)
    }

    /// Past `maxLiveDownloads` the worker reads no more input until a download ends: the caller
    /// is held back by the pipe, not the worker's memory. Suspended, nothing would end: a download
    /// past the limit is refused (-32001) and the `configure` that resumes is still read.
    @Test func pastMaxLiveDownloadsTheInputWaitsAndASuspendedQueueRefuses() async throws {
        let server = try await E2E.startServer()
        defer { Task { await server.shutdown() } }
        server.setFile("a.jpg", Array(try Data(contentsOf: E2E.samples.appendingPathComponent("testorig.jpg"))))
        let worker = try WorkerProcess()
        worker.request(1, "configure", ["maxLiveDownloads": 2])
        #expect(try await worker.response(1)["result"]?["configuration"]?["maxLiveDownloads"] == 2)
        for i in 0..<3 {
            worker.request(10 + i, "download", ["url": .string(server.url("/files/a.jpg?gate=held&n=\(i)")), "token": .int(Int64(i))])
        }
        worker.request(20, "status", ["limit": 0])
        _ = try await worker.waitFor("the second download's start") { $0["method"] == "download/started" && $0["params"]?["token"] == 1 }
        try await Task.sleep(for: .milliseconds(300))
        #expect(worker.received.allSatisfy { $0["id"] != 12 && $0["id"] != 20 }, "nothing read past the second download")
        server.openGate("held")
        #expect(try await worker.response(12)["result"]?["token"] == 2)
        #expect(try await worker.response(20)["result"]?["liveTokensTotal"] != nil)
        for i in 0..<3 { #expect(try await worker.completion(.int(Int64(i)))["params"]?["outcome"] == "success") }

        worker.request(30, "configure", ["suspended": true])
        _ = try await worker.response(30)
        for i in 0..<3 { worker.request(40 + i, "download", ["url": .string(server.url("/files/a.jpg?s=\(i)")), "token": .string("s\(i)")]) }
        #expect(try await worker.response(41)["result"]?["token"] == "s1")
        let refused = try await worker.response(42)
        #expect(refused["error"]?["code"] == -32001, "\(refused)")
        #expect(refused["error"]?["data"]?["maxLiveDownloads"] == 2)
        worker.request(50, "configure", ["suspended": false])
        _ = try await worker.response(50)
        for i in 0..<2 { #expect(try await worker.completion(.string("s\(i)"))["params"]?["outcome"] == "success") }
        #expect(worker.events("s2").isEmpty, "a refused download has no token and no event")
        worker.closeStdin()
        #expect(try await worker.waitForExit() == 0)
    }

    @Test func aSlowReaderLosesNoResponseOrTerminalEventAndGetsCoalescedProgress() async throws {
        let server = try await E2E.startServer()
        defer { Task { await server.shutdown() } }
        let big = try await offThePool { (0..<2_000_000).map { UInt8(truncatingIfNeeded: $0 &* 7) } }
        server.setFile("big.bin", big)
        let worker = try WorkerProcess()
        worker.request(0, "configure", ["progressIntervalMs": 0, "maxConcurrentDownloads": 8])
        _ = try await worker.response(0)
        worker.pauseReading(true)
        let count = 8
        for i in 1...count {
            worker.request(i, "download", ["url": .string(server.url("/files/big.bin?chunk=1024&n=\(i)")), "token": .int(Int64(i))])
        }
        // Meanwhile the client reads nothing: the worker must not block its downloads on us.
        try await Task.sleep(for: .seconds(3))
        worker.pauseReading(false)
        worker.closeStdin()
        #expect(try await worker.waitForExit(timeout: .seconds(60)) == 0)
        var progressEvents = 0
        for i in 1...count {
            let token = JSONValue.int(Int64(i))
            #expect(worker.received.contains { $0["id"] == token && $0["result"] != nil }, "response \(i)")
            let events = worker.events(token)
            #expect(events.filter { $0["method"] == "download/completed" }.count == 1)
            #expect(events.last?["params"]?["outcome"] == "success")
            let received = events.compactMap { $0["method"] == "download/progress" ? $0["params"]?["receivedBytes"]?.integerValue : nil }
            #expect(received == received.sorted(), "progress never goes back")
            #expect(received.last == 2_000_000, "the last progress always arrives")
            progressEvents += received.count
        }
        // About 2,000 chunks per download were reported; a paused reader gets far fewer events.
        #expect(progressEvents < count * 2000, "\(progressEvents) progress events: nothing was coalesced")
    }

    /// The issue's invariant through the real binary: random downloads, cancels and priority
    /// changes at every concurrency limit from 1 to 8; every token ends exactly once.
    @Test(arguments: Array(1...8))
    func everyTokenEndsExactlyOnce(limit: Int) async throws {
        let server = try await E2E.startServer()
        defer { Task { await server.shutdown() } }
        let worker = try WorkerProcess()
        worker.request(0, "configure", ["maxConcurrentDownloads": .int(Int64(limit)), "maxRetries": 1, "retryBaseDelayMs": 5])
        _ = try await worker.response(0)
        var rng = SystemRandomNumberGenerator()
        let paths = ["/files/testorig.jpg?chunk=500&delayMs=2", "/files/testimgp.jpg", "/files/basn2c08.png?chunked=1",
                     "/status/404", "/status/503", "/files/testorig.jpg?resetAfter=1000", "/files/basi6a08.png?chunk=50&delayMs=1"]
        let priorities: [JSONValue] = ["veryLow", "low", "normal", "high", "veryHigh"]
        let count = 60
        var id = 1
        for i in 0..<count {
            worker.request(id, "download", ["url": .string(server.url(paths.randomElement(using: &rng)!)), "token": .int(Int64(i)),
                                            "priority": priorities.randomElement(using: &rng)!])
            id += 1
            let target = JSONValue.int(Int64(Int.random(in: 0...i, using: &rng)))
            switch Int.random(in: 0..<4, using: &rng) {
            case 0: worker.request(id, "cancel", ["token": target])
            case 1: worker.request(id, "setPriority", ["token": target, "priority": priorities.randomElement(using: &rng)!])
            default: worker.request(id, "status")
            }
            id += 1
        }
        worker.closeStdin()
        #expect(try await worker.waitForExit(timeout: .seconds(120)) == 0)
        for i in 0..<count {
            let events = worker.events(.int(Int64(i)))
            #expect(events.filter { $0["method"] == "download/completed" }.count == 1, "token \(i): \(events)")
            #expect(events.last?["method"] == "download/completed", "token \(i): events after its end")
        }
        #expect(worker.received.filter { $0["id"] != nil }.count == id, "every request (ids 0..<\(id)) answered once")
    }
}
