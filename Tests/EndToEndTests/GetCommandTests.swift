import Foundation
import ImageDecoding
import ImageWorkerProtocol
import Testing
import TestSupport

/// `image-worker get`, the command line for people, run as a user would: the built binary, the
/// loopback server, real files.
@Suite struct GetCommandTests {
    struct Run {
        var status: Int32
        var stdout: String
        var stderr: String
        var lines: [String] { stdout.split(separator: "\n").map(String.init) }
    }

    /// Runs `image-worker ARGS` (or another program) to its end, stdout and stderr into files.
    static func run(
        _ arguments: [String], executable: String = WorkerProcess.binaryPath, stdin: String? = nil,
        interruptWhen ready: (@Sendable () -> Bool)? = nil
    ) async throws -> Run {
        let dir = try E2E.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let outURL = dir.appendingPathComponent("stdout")
        let errURL = dir.appendingPathComponent("stderr")
        try Data().write(to: outURL)
        try Data().write(to: errURL)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        if let stdin {
            let inURL = dir.appendingPathComponent("stdin")
            try Data(stdin.utf8).write(to: inURL)
            process.standardInput = try FileHandle(forReadingFrom: inURL)
        } else {
            process.standardInput = FileHandle.nullDevice
        }
        process.standardOutput = try FileHandle(forWritingTo: outURL)
        process.standardError = try FileHandle(forWritingTo: errURL)
        try ChildExit.run(process)
        if let ready {
            // Once the download is under way (so the signal handlers are surely installed).
            let deadline = ContinuousClock.now + .seconds(20)
            while !ready(), ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(20)) }
            try await Task.sleep(for: .milliseconds(100))
            kill(process.processIdentifier, SIGINT)
        }
        let status = try await ChildExit.wait(for: process)
        return Run(
            status: status, stdout: try String(contentsOf: outURL, encoding: .utf8),
            stderr: try String(contentsOf: errURL, encoding: .utf8))
    }

    /// An output folder that cannot be made says which part of its path is in the way, with
    /// status 2 and nothing fetched (Foundation's own sentence named neither).
    @Test func anOutputFolderInTheWaySaysWhichPart() async throws {
        let dir = try E2E.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let file = dir.appendingPathComponent("afile").path
        try Data("x".utf8).write(to: URL(fileURLWithPath: file))
        let same = try await Self.run(["get", "-o", file, "http://127.0.0.1:9/a.jpg"])
        #expect(same.status == 2)
        #expect(same.stderr.contains("cannot use \(file) as the output folder: \(file) is a file, not a folder"), "\(same.stderr)")
        let nested = try await Self.run(["get", "-o", file + "/sub/deeper", "http://127.0.0.1:9/a.jpg"])
        #expect(nested.status == 2 && nested.stdout.isEmpty)
        #expect(nested.stderr.contains(": \(file) is a file, not a folder"), "\(nested.stderr)")
        let cache = try await Self.run(["get", "--cache-dir", file + "/cache", "-o", dir.path, "http://127.0.0.1:9/a.jpg"])
        #expect(cache.status == 64 && cache.stderr.contains("--cache-dir: cannot use \(file)/cache: \(file) is a file, not a folder"), "\(cache)")
    }

    @Test func oneResultLinePerURLAndAFailingExitStatus() async throws {
        let server = try await E2E.startServer()
        defer { Task { await server.shutdown() } }
        let out = try E2E.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: out) }
        let urls = [
            server.url("/files/testorig.jpg"), server.url("/status/404"), server.url("/files/basn2c08.png"), "nonsense:://",
        ]
        let run = try await Self.run(["get", "-o", out.path, "-j", "2"] + urls)
        #expect(run.status == 1, "\(run)")
        #expect(run.lines.count == 4, "\(run)")
        for url in urls { #expect(run.lines.filter { $0.contains(url) }.count == 1, "\(url) in \(run.lines)") }
        let jpegLine = try #require(run.lines.first { $0.contains("testorig.jpg") })
        #expect(jpegLine == "ok      \(urls[0]) -> \(out.path)/testorig.jpg (227x149, jpeg, 5.8 kB)", "verified: the header's size")
        #expect(run.lines.contains { $0.hasPrefix("failed  \(urls[1]): InvalidDownloadStatusCode:") && $0.contains("404") })
        #expect(run.lines.contains { $0.hasPrefix("failed  nonsense:://: InvalidURL:") })
        // The bytes, as served; the summary on stderr; no progress bars off a terminal.
        #expect(try Data(contentsOf: out.appendingPathComponent("testorig.jpg")) == Data(contentsOf: E2E.samples.appendingPathComponent("testorig.jpg")))
        #expect(try Data(contentsOf: out.appendingPathComponent("basn2c08.png")) == Data(contentsOf: E2E.samples.appendingPathComponent("basn2c08.png")))
        #expect(run.stderr.hasPrefix("2 downloaded, 2 failed,"), "\(run.stderr)")
        #expect(!run.stderr.contains("\u{1B}["))
        // Off a terminal the downloads are quiet (their `completed` event alone), and the summary
        // still counts every byte received.
        let served = try [urls[0], urls[2]].map { try Data(contentsOf: E2E.samples.appendingPathComponent(String($0.split(separator: "/").last!))).count }
        #expect(run.stderr.contains("2 failed, \(String(format: "%.1f", Double(served.reduce(0, +)) / 1e3)) kB in "), "\(served): \(run.stderr)")
        // Then the medians of where the time went (the invalid URL never reached the network).
        let timings = try #require(run.stderr.split(separator: "\n").last { $0.hasPrefix("timings (median of ") }, "\(run.stderr)")
        #expect(timings.contains("queued ") && timings.contains("ttfb ") && timings.contains("transfer "), "\(timings)")

        let allGood = try await Self.run(["get", "-o", out.path, "--overwrite", urls[0], urls[2]])
        #expect(allGood.status == 0 && allGood.lines.count == 2, "\(allGood)")
    }

    /// A URL's password is sent (Basic) but never shown: not in the result lines, the progress
    /// display or the manifest, whose `--continue` still recognises the URL.
    @Test func aURLsPasswordIsNeverPrintedOrRecorded() async throws {
        let server = try await E2E.startServer()
        defer { Task { await server.shutdown() } }
        let out = try E2E.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: out) }
        let withPassword = server.url("/files/basn2c08.png").replacingOccurrences(of: "://", with: "://user:hunter2@")
        let failing = server.url("/status/404").replacingOccurrences(of: "://", with: "://user:hunter2@")
        let manifest = out.appendingPathComponent("m.jsonl").path
        let run = try await Self.run(["get", "-o", out.path, "--manifest", manifest, withPassword, failing])
        #expect(run.lines.count == 2, "\(run)")
        #expect(!run.stdout.contains("hunter2") && !run.stderr.contains("hunter2"), "\(run)")
        let recorded = try String(contentsOfFile: manifest, encoding: .utf8)
        #expect(!recorded.contains("hunter2") && recorded.contains("://127.0.0.1"), "\(recorded)")
        let hits = server.hits("/files/basn2c08.png")
        let again = try await Self.run(["get", "-o", out.path, "--manifest", manifest, "--continue", withPassword])
        #expect(again.stderr.contains("1 of 1 URLs already done"), "recognised without its password: \(again)")
        #expect(server.hits("/files/basn2c08.png") == hits)
        #expect(!again.stdout.contains("hunter2") && !again.stderr.contains("hunter2"))
    }

    @Test func jsonModeWritesTheWorkersEvents() async throws {
        let server = try await E2E.startServer()
        defer { Task { await server.shutdown() } }
        let out = try E2E.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: out) }
        let urls = [server.url("/files/testimgp.jpg?chunk=600&delayMs=10"), server.url("/status/404")]
        let run = try await Self.run(["get", "--json", "--progressive", "--priority", "high", "-o", out.path] + urls)
        #expect(run.status == 1)
        #expect(run.stderr.isEmpty, "\(run.stderr)")
        let schemas = try E2E.schemas()
        var ended: [String: Int] = [:]
        var afterEnd: [String] = []
        for line in run.lines {
            let message = try JSONParser.parse(line)
            let schema = try #require(JSONSchemaValidator.schemaName(forOutgoing: message, requestMethod: nil), "\(line)")
            #expect(schemas.validate(message, against: schema).isEmpty, "\(line)")
            let token = try #require(message["params"]?["token"]?.stringValue)
            if ended[token] != nil { afterEnd.append(line) }
            if message["method"] == .string(WorkerEvent.completed) { ended[token, default: 0] += 1 }
        }
        #expect(ended == ["1": 1, "2": 1])
        #expect(afterEnd.isEmpty)
        let completed = run.lines.compactMap { try? JSONParser.parse($0) }.filter {
            $0["method"] == .string(WorkerEvent.completed) && $0["params"]?["token"] == "1"
        }
        #expect(completed.first?["params"]?["outcome"] == "success")
        #expect(run.lines.contains { $0.contains(WorkerEvent.partialImage) }, "chunks every 10 ms should give a partial image")
        // --progressive means PNG, identical to a whole decode of the bytes.
        let png = try Data(contentsOf: out.appendingPathComponent("testimgp.png"))
        let written = try ImageDecoders.decode(Array(png))
        let reference = try ImageDecoders.decode(Array(Data(contentsOf: E2E.samples.appendingPathComponent("testimgp.jpg"))))
        #expect(written.pixels == reference.pixels && written.width == 227)
    }

    @Test func progressBarsOnATerminal() async throws {
        let server = try await E2E.startServer()
        defer { Task { await server.shutdown() } }
        let out = try E2E.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: out) }
        // util-linux's script(1) gives the command a pseudo-terminal and copies what it shows to
        // its own stdout; the command's stdout goes to a file, so the terminal shows stderr.
        let url = server.url("/files/testorig.jpg?chunk=500&delayMs=30")
        let results = out.appendingPathComponent("results.txt")
        let command = "'\(WorkerProcess.binaryPath)' get -o '\(out.path)' '\(url)' > '\(results.path)'"
        let run = try await Self.run(["-qec", command, "/dev/null"], executable: "/usr/bin/script")
        let screen = run.stdout
        #expect(run.status == 0, "\(run)")
        #expect(try String(contentsOf: results, encoding: .utf8).hasPrefix("ok      \(url) -> "))
        #expect(screen.contains("%") && screen.contains("testorig.jpg") && screen.contains("0/1 done"), "\(screen)")
        #expect(screen.contains("\u{1B}[J"), "the board is erased and redrawn in place: \(screen.debugDescription)")
        #expect(screen.contains("1 downloaded"), "\(screen)")
    }

    /// `get --json URL | head -n 1`: once stdout is closed, the next write fails and the run is
    /// cancelled at once, exit status 141 (as if killed by SIGPIPE), rather than going on
    /// downloading (the slow URL below takes two minutes) to exit 0.
    @Test func aClosedStdoutCancelsTheRun() async throws {
        let server = try await E2E.startServer()
        defer { Task { await server.shutdown() } }
        let out = try E2E.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: out) }
        let url = server.url("/files/testorig.jpg?chunk=50&delayMs=1000")
        let process = Process()
        process.executableURL = URL(fileURLWithPath: WorkerProcess.binaryPath)
        process.arguments = ["get", "--json", "-o", out.path, url]
        process.standardInput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        let stdout = try WorkerProcess.pipeClosedOnExec()  // no other child may hold its read end open
        process.standardOutput = stdout.write
        try ChildExit.run(process)
        try stdout.write.close()
        // Read the first line (download/started), then close the pipe as `head -n 1` does.
        let reader = stdout.read
        var first = Data()
        while !first.contains(UInt8(ascii: "\n")) {
            let chunk = reader.availableData
            if chunk.isEmpty { break }
            first.append(chunk)
        }
        try reader.close()
        #expect(String(decoding: first, as: UTF8.self).contains("download/started"))
        let status = try await ChildExit.wait(for: process, terminatingAfter: .seconds(30))
        #expect(status == 141, "exit status \(status): the run was not cancelled when its stdout closed")
        #expect(server.hits("/files/testorig.jpg") == 1)
    }

    @Test func ctrlCCancelsAndSaysSo() async throws {
        let server = try await E2E.startServer()
        defer { Task { await server.shutdown() } }
        let out = try E2E.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: out) }
        let url = server.url("/files/testorig.jpg?chunk=10&delayMs=200")
        let run = try await Self.run(["get", "-o", out.path, url], interruptWhen: { server.hits("/files/testorig.jpg") > 0 })
        #expect(run.status == 130, "\(run)")
        #expect(run.lines == ["cancelled \(url)"])
    }

    @Test func partialImagesAtAPreviewSize() async throws {
        let server = try await E2E.startServer()
        defer { Task { await server.shutdown() } }
        let out = try E2E.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: out) }
        let run = try await Self.run([
            "get", "--json", "--progressive", "--partial-max-pixel-size", "20", "--format", "rgba", "-o", out.path,
            server.url("/files/testimgp.jpg?chunk=600&delayMs=10"),
        ])
        #expect(run.status == 0, "\(run.stderr)")
        let messages = run.lines.compactMap { try? JSONParser.parse($0) }
        let partials = messages.filter { $0["method"] == .string(WorkerEvent.partialImage) }
        #expect(!partials.isEmpty)
        #expect(partials.allSatisfy { $0["params"]?["width"] == 20 && $0["params"]?["height"] == 13 }, "\(partials)")
        let completed = try #require(messages.first { $0["method"] == .string(WorkerEvent.completed) })
        #expect(completed["params"]?["width"] == 227 && completed["params"]?["height"] == 149)
    }

    /// `--deadline-ms` bounds URLs that never answer (the idle timeout is a minute here); the
    /// failure says so, with the attempts made.
    @Test func aDeadlineBoundsURLsThatNeverAnswer() async throws {
        let server = try await E2E.startServer()
        defer { Task { await server.shutdown() } }
        let out = try E2E.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: out) }
        let urls = [server.url("/files/testorig.jpg?gate=never1"), server.url("/files/testorig.jpg?gate=never2"), server.url("/files/testorig.jpg")]
        let run = try await Self.run(
            ["get", "--json", "--deadline-ms", "300", "--timeout-ms", "60000", "--max-retries", "0", "--retry-delay-ms", "5", "-o", out.path] + urls)
        #expect(run.status == 1)
        let completed = run.lines.compactMap { try? JSONParser.parse($0) }.filter { $0["method"] == .string(WorkerEvent.completed) }
        let reasons = completed.compactMap { $0["params"]?["error"]?["data"]?["reason"]?.stringValue }
        #expect(reasons == ["deadline", "deadline"], "\(run.lines)")
        #expect(completed.filter { $0["params"]?["outcome"] == "success" }.count == 1)
        let bad = try await Self.run(["get", "--deadline-ms", "0", "http://127.0.0.1:9/a.jpg"])
        #expect(bad.status != 0 && bad.stderr.contains("--deadline-ms"), "\(bad.stderr)")
    }

    /// A host that drops every packet, with the client's own connect timeout (10 s): once three
    /// connects have timed out it is down and its other URLs wait (the good host's are fetched);
    /// when the probe times out too, every one of them fails at once with `hostDown`.
    @Test func aSilentHostIsDownAfterThreeConnectTimeouts() async throws {
        let server = try await E2E.startServer()
        defer { Task { await server.shutdown() } }
        let silent = try SilentHost()
        defer { silent.close() }
        let out = try E2E.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: out) }
        let dead = (0..<12).map { "\(silent.baseURL)/photo\($0).jpg" }
        let good = (0..<3).map { server.url("/files/testorig.jpg?n=\($0)") }
        // No retries: each URL's one attempt is a connect that times out or a `hostDown`. The
        // first probe comes 1 s after the third timeout; given up, the host's others then have
        // 5 s to end before the next probe.
        let run = try await Self.run(
            ["get", "--json", "-j", "6", "--per-host", "3", "--max-retries", "0", "--host-down-ms", "5000", "-o", out.path] + dead + good)
        #expect(run.status == 1)
        let completed = run.lines.compactMap { try? JSONParser.parse($0) }.filter { $0["method"] == .string(WorkerEvent.completed) }
        #expect(completed.count == 15, "\(run.lines)")
        let failed = completed.filter { $0["params"]?["outcome"] == "error" }
        #expect(failed.count == 12 && failed.allSatisfy { ($0["params"]?["url"]?.stringValue ?? "").hasPrefix(silent.baseURL) }, "\(failed)")
        let errors = failed.compactMap { $0["params"]?["error"] }
        // Six waited for the connect timeout: three at once, the two that took the first two's
        // slots before the third ended (the host was not down yet), and the probe a second after
        // the third. The other six waited for the probe without a slot, then ended at once.
        let timedOut = errors.filter { $0["data"]?["reason"] == "timeout" }
        #expect(timedOut.count == 6 && timedOut.allSatisfy { ($0["message"]?.stringValue ?? "").contains("timed out while connecting") }, "\(errors)")
        let down = errors.filter { $0["data"]?["reason"] == "hostDown" }
        #expect(down.count == 6, "\(errors)")
        #expect(
            down.allSatisfy {
                let message = $0["message"]?.stringValue ?? ""
                return message.contains("\(silent.baseURL) is down: 6 attempts in a row could not connect or got no answer") && message.contains("and again after a wait")
            }, "\(down)")
        #expect(run.stderr.contains("host is down: its downloads wait") && run.stderr.contains("host is still down"), "\(run.stderr)")
        let bad = try await Self.run(["get", "--host-down-after", "-1", "http://127.0.0.1:9/a.jpg"])
        #expect(bad.status != 0 && bad.stderr.contains("--host-down-after"), "\(bad.stderr)")
    }

    /// 30 URLs of a host that accepts connections and never answers, ahead of 100 good ones,
    /// with the defaults: the good ones do not wait for the silent ones' idle timeouts (15 s),
    /// the job ends within a minute (it took 3 min 48 s), and the silent ones fail with reasons.
    @Test func aHostThatNeverAnswersDoesNotHoldTheJob() async throws {
        let server = try await E2E.startServer()
        defer { Task { await server.shutdown() } }
        let mute = try await RawHTTPServer.start { _, _ in RawHTTPServer.Answer([UInt8]()) }  // reads, says nothing
        let out = try E2E.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: out) }
        let silent = (0..<30).map { mute.url("/photo\($0).jpg") }
        let good = (0..<100).map { server.url("/files/testorig.jpg?n=\($0)") }
        let started = ContinuousClock.now
        let run = try await Self.run(["get", "--json", "-o", out.path] + silent + good)
        let took = ContinuousClock.now - started
        await mute.shutdown()
        #expect(run.status == 1)
        #expect(took < .seconds(60), "the job took \(took)")
        let completed = run.lines.compactMap { try? JSONParser.parse($0) }.filter { $0["method"] == .string(WorkerEvent.completed) }
        #expect(completed.count == 130, "\(completed.count) ended")
        let goodEnds = completed.filter { !($0["params"]?["url"]?.stringValue ?? "").hasPrefix(mute.baseURL) }
        #expect(goodEnds.count == 100 && goodEnds.allSatisfy { $0["params"]?["outcome"] == "success" })
        // Queued at most a few seconds (the silent ones lend their slots after 2 s), not 15 s.
        let queued = goodEnds.compactMap { $0["params"]?["metrics"]?["queuedMs"]?.numberValue }
        #expect(queued.count == 100 && queued.max()! < 6_000, "longest wait in the queue: \(queued.max() ?? -1) ms")
        let silentEnds = completed.filter { ($0["params"]?["url"]?.stringValue ?? "").hasPrefix(mute.baseURL) }
        let reasons = Set(silentEnds.compactMap { $0["params"]?["error"]?["data"]?["reason"]?.stringValue })
        #expect(silentEnds.count == 30 && silentEnds.allSatisfy { $0["params"]?["outcome"] == "error" })
        #expect(reasons.isSubset(of: ["timeout", "hostDown"]) && reasons.contains("hostDown"), "\(reasons)")
        #expect(mute.requests < 30 + 12, "the silent host was asked \(mute.requests) times: its retries stacked")
    }

    /// Originals that pass a header check and cannot be decoded (cut short, no scan, a bad CRC,
    /// 12-bit, a 60000 x 60000 header): saved as "ok" by default, and the summary says how many
    /// were checked by header only; `--verify full` decodes every pixel and refuses them, saving
    /// the good ones. The manifest tells the original's SHA-256 and size from the delivered ones.
    @Test func verifyFullDecodesEveryPixel() async throws {
        let corpora = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("shared/corpora")
        guard FileManager.default.fileExists(atPath: corpora.appendingPathComponent("pngsuite").path) else {
            Issue.record("../shared/corpora is not beside the repository")
            return
        }
        func read(_ path: String) throws -> [UInt8] { Array(try Data(contentsOf: corpora.appendingPathComponent(path))) }
        let photo = try read("jpeg/testorig.jpg")
        let sos = try #require((0..<photo.count - 1).first { photo[$0] == 0xFF && photo[$0 + 1] == 0xDA })
        // A PNG whose header says 60000 x 60000 (its IHDR's CRC right): no decode may allocate it.
        var huge: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]
        func chunk(_ type: String, _ data: [UInt8]) {
            let body = Array(type.utf8) + data
            huge += withUnsafeBytes(of: UInt32(data.count).bigEndian, Array.init) + body
            huge += withUnsafeBytes(of: CRC32.of(body).bigEndian, Array.init)
        }
        chunk("IHDR", withUnsafeBytes(of: UInt32(60_000).bigEndian, Array.init) + withUnsafeBytes(of: UInt32(60_000).bigEndian, Array.init) + [8, 2, 0, 0, 0])
        chunk("IDAT", [0x78, 0x9C, 0x03, 0x00, 0x00, 0x00, 0x00, 0x01])
        chunk("IEND", [])
        let server = try await E2E.startServer()
        defer { Task { await server.shutdown() } }
        let bad: [String: [UInt8]] = [
            "cut.jpg": Array(photo.prefix(4000)), "nosos.jpg": Array(photo.prefix(sos)) + [0xFF, 0xD9],
            "crc.png": try read("pngsuite/xcsn0g01.png"), "twelve.jpg": try read("jpeg/testorig12.jpg"), "huge.png": huge,
        ]
        for (name, bytes) in bad { server.setFile(name, bytes) }
        server.setFile("good.jpg", photo)
        let urls = bad.keys.sorted().map { server.url("/files/\($0)") } + [server.url("/files/good.jpg")]
        let out = try E2E.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: out) }

        let header = try await Self.run(["get", "-o", out.appendingPathComponent("header").path] + urls)
        #expect(header.status == 0, "\(header)")
        #expect(header.stderr.contains("6 downloaded") && header.stderr.contains("6 originals checked by header only (--verify full decodes every pixel)"), "\(header.stderr)")

        let manifest = out.appendingPathComponent("full.jsonl")
        let full = try await Self.run(["get", "-o", out.appendingPathComponent("full").path, "--verify", "full", "--manifest", manifest.path] + urls)
        #expect(full.status == 1, "\(full)")
        let failed = full.lines.filter { $0.hasPrefix("failed") }
        #expect(failed.count == 5, "\(full.stdout)")
        for name in bad.keys { #expect(failed.contains { $0.contains("/files/\(name):") }, "\(name): \(full.stdout)") }
        #expect(failed.contains { $0.contains("huge.png") && $0.contains("LimitExceeded") } && failed.contains { $0.contains("twelve.jpg") && $0.contains("UnsupportedFormat") })
        #expect(!full.stderr.contains("checked by header only"), "\(full.stderr)")
        let saved = try FileManager.default.contentsOfDirectory(atPath: out.appendingPathComponent("full").path)
        #expect(saved == ["good.jpg"], "\(saved)")
        let records = try Self.manifest(manifest)
        let good = try #require(records.first { $0["outcome"] == "ok" })
        #expect(good["sourceSha256"] == good["sha256"] && good["sourceWidth"] == 227 && good["sourceHeight"] == 149, "\(good)")
        let bad1 = try await Self.run(["get", "--verify", "pixels", server.url("/files/good.jpg")])
        #expect(bad1.status != 0 && bad1.stderr.contains("--verify must be header, full or none"), "\(bad1.stderr)")

        // A thumbnail: its own SHA-256 and size, and the original's beside them.
        let thumbs = out.appendingPathComponent("thumbs.jsonl")
        let thumb = try await Self.run(
            ["get", "-o", out.appendingPathComponent("thumbs").path, "--format", "webp", "--max-pixel-size", "100", "--manifest", thumbs.path,
             server.url("/files/good.jpg")])
        #expect(thumb.status == 0, "\(thumb)")
        let record = try #require(try Self.manifest(thumbs).first)
        let written = try Data(contentsOf: URL(fileURLWithPath: try #require(record["path"]?.stringValue)))
        #expect(record["sha256"] == .string(SHA256Hex.of(Array(written))) && record["sourceSha256"] == .string(SHA256Hex.of(photo)), "\(record)")
        #expect(record["width"] == 100 && record["sourceWidth"] == 227 && record["sourceHeight"] == 149 && record["bytes"] == .int(Int64(photo.count)), "\(record)")
    }

    /// The manifest's records, each checked against protocol/schema/manifest-record.schema.json.
    static func manifest(_ url: URL) throws -> [JSONValue] {
        let records = try String(contentsOf: url, encoding: .utf8).split(separator: "\n").map { try JSONParser.parse(Array($0.utf8)) }
        for record in records {
            let problems = try E2E.schemas().validate(record, against: "manifest-record.schema.json")
            #expect(problems.isEmpty, "\(record): \(problems)")
        }
        return records
    }

    /// A list file with names and a template, a manifest with one record per URL, then
    /// `--continue`: only what failed is fetched again; once all is done, a re-run fetches nothing.
    @Test func aManifestRecordsEveryURLAndContinueFetchesOnlyTheRest() async throws {
        let server = try await E2E.startServer()
        defer { Task { await server.shutdown() } }
        server.setFile("page.jpg", Array("<!DOCTYPE html><title>Sorry</title>".utf8))
        let out = try E2E.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: out) }
        let list = out.appendingPathComponent("urls.txt")
        let manifest = out.appendingPathComponent("manifest.jsonl")
        try """
            # the job
            \(server.url("/files/testorig.jpg"))\tnamed/first.jpg
            \(server.url("/files/page.jpg"))
            \(server.url("/flaky/1/basn2c08.png?failures=1"))

            \(server.url("/files/testorig.jpg"))

            """.write(to: list, atomically: true, encoding: .utf8)
        let images = out.appendingPathComponent("images").path
        let args = ["get", "-i", list.path, "-o", images, "--name-template", "p{index:3}.{ext}", "--manifest", manifest.path, "--max-retries", "0"]
        let first = try await Self.run(args)
        #expect(first.status == 1, "\(first)")
        var records = try Self.manifest(manifest)
        #expect(records.count == 4 && Set(records.compactMap { $0["index"]?.integerValue }) == [0, 1, 2, 3], "\(records)")
        func record(_ index: Int) -> JSONValue? { records.first { $0["index"]?.integerValue == Int64(index) } }
        #expect(record(0)?["outcome"] == "ok" && record(0)?["path"]?.stringValue == images + "/named/first.jpg")
        #expect(record(0)?["width"] == 227 && record(0)?["height"] == 149 && record(0)?["format"] == "jpeg")
        let original = try [UInt8](Data(contentsOf: E2E.samples.appendingPathComponent("testorig.jpg")))
        #expect(record(3)?["path"]?.stringValue == images + "/p003.jpg")
        #expect(record(3)?["bytes"]?.integerValue == Int64(original.count))
        #expect(record(3)?["sha256"]?.stringValue?.count == 64 && record(3)?["sha256"] == record(0)?["sha256"])
        #expect(record(1)?["outcome"] == "failed" && record(1)?["error"]?["name"] == "UnsupportedFormat", "verified by default")
        #expect(record(2)?["outcome"] == "failed" && record(2)?["error"]?["name"] == "InvalidDownloadStatusCode")
        #expect(!FileManager.default.fileExists(atPath: images + "/p001.jpg") && !FileManager.default.fileExists(atPath: images + "/p001.bin"))

        let hits = server.hits("/files/testorig.jpg")
        let second = try await Self.run(args + ["--continue"])
        #expect(second.status == 1, "the HTML page fails again: \(second)")
        #expect(server.hits("/files/testorig.jpg") == hits, "the finished URLs are not fetched again")
        #expect(second.stderr.contains("2 of 4 URLs already done"), "\(second.stderr)")
        records = try Self.manifest(manifest)
        #expect(records.count == 4, "still one record per URL: \(records)")
        #expect(record(2)?["outcome"] == "ok" && record(2)?["path"]?.stringValue == images + "/p002.png", "the flaky URL made it")

        server.setFile("page.jpg", original)
        let third = try await Self.run(args + ["--continue"])
        #expect(third.status == 0, "\(third)")
        let pageHits = server.hits("/files/page.jpg")
        let fourth = try await Self.run(args + ["--continue"])
        #expect(fourth.status == 0 && fourth.lines.isEmpty, "\(fourth)")
        #expect(server.hits("/files/page.jpg") == pageHits && server.hits("/files/testorig.jpg") == hits, "a finished job fetches nothing")
        #expect(fourth.stderr.contains("4 of 4 URLs already done"), "\(fourth.stderr)")
        records = try Self.manifest(manifest)
        #expect(records.count == 4 && records.allSatisfy { $0["outcome"] == "ok" }, "\(records)")
        // Without the manifest, --skip-existing keeps the files: no request either.
        let skip = try await Self.run(["get", "-i", list.path, "-o", images, "--name-template", "p{index:3}.{ext}", "--skip-existing"])
        #expect(skip.status == 0 && skip.lines.allSatisfy { $0.hasPrefix("kept    ") } && skip.lines.count == 4, "\(skip)")
        #expect(server.hits("/files/testorig.jpg") == hits)

        // A manifest that cannot be read: a clear error, nothing fetched, no temporary file left.
        let unreadable = out.appendingPathComponent("a-folder.jsonl")
        try FileManager.default.createDirectory(at: unreadable, withIntermediateDirectories: true)
        let refused = try await Self.run(["get", "-i", list.path, "-o", images, "--manifest", unreadable.path, "--continue"])
        #expect(refused.status == 2 && refused.stderr.contains("cannot read"), "\(refused)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: out.path).allSatisfy { !$0.contains(".tmp-") })
        #expect(server.hits("/files/testorig.jpg") == hits)
    }

    /// URLs from stdin (`-`); a progress line every interval when stderr is a file; Ctrl-C keeps
    /// the finished URLs' records and counts the others cancelled, apart from failures.
    @Test func stdinListsProgressLinesAndAnInterruptedManifest() async throws {
        let server = try await E2E.startServer()
        defer { Task { await server.shutdown() } }
        let out = try E2E.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: out) }
        let manifest = out.appendingPathComponent("m.jsonl")
        let urls = [server.url("/files/testorig.jpg"), server.url("/status/404"), server.url("/files/basn2c08.png?gate=held")]
        let start = ContinuousClock.now
        let run = try await Self.run(
            ["get", "-", "-o", out.path, "--manifest", manifest.path, "--progress-interval", "0.2"], stdin: urls.joined(separator: "\n"),
            interruptWhen: {
                // Past a few progress intervals, with the held URL under way.
                ContinuousClock.now - start > .seconds(1) && server.hits("/files/basn2c08.png") > 0
            })
        #expect(run.status == 130, "\(run)")
        let progress = run.stderr.split(separator: "\n").filter { $0.hasPrefix("image-worker get: ") && !$0.contains("--continue") }
        #expect(!progress.isEmpty && progress.allSatisfy { $0.contains("/3 done") }, "\(run.stderr)")
        #expect(run.stderr.contains("interrupted: 1 downloaded, 1 failed, 1 not done"), "\(run.stderr)")
        let records = try Self.manifest(manifest)
        #expect(records.count == 3, "\(records)")
        #expect(Set(records.compactMap { $0["outcome"]?.stringValue }) == ["ok", "failed", "cancelled"])
    }

    /// Ctrl-C on a list far longer than the worker takes at once (the feeder blocked on a full
    /// pipe, requests in it): nothing is recorded as failed (they were `InvalidRequest: the worker
    /// is stopping`), the summary says "interrupted", and a `--continue` run fetches the rest.
    @Test func ctrlCOnALongListRecordsNoFailure() async throws {
        let server = try await E2E.startServer()
        defer { Task { await server.shutdown() } }
        let out = try E2E.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: out) }
        let manifest = out.appendingPathComponent("m.jsonl")
        let list = out.appendingPathComponent("urls.txt")
        let count = 30_000
        try (0..<count).map { server.url("/files/testorig.jpg?n=\($0)&chunk=2000&delayMs=50") }.joined(separator: "\n")
            .write(to: list, atomically: true, encoding: .utf8)
        let run = try await Self.run(
            ["get", "-i", list.path, "-o", out.appendingPathComponent("images").path, "--manifest", manifest.path, "-j", "4"],
            interruptWhen: { server.hits("/files/testorig.jpg") > 8 })
        #expect(run.status == 130, "\(run.stderr.suffix(500))")
        let records = try Self.manifest(manifest)
        let outcomes = Dictionary(grouping: records.compactMap { $0["outcome"]?.stringValue }, by: { $0 }).mapValues(\.count)
        #expect(outcomes["failed"] == nil, "\(outcomes); \(records.first { $0["outcome"] == "failed" } ?? .null)")
        #expect((outcomes["ok"] ?? 0) > 0, "\(outcomes)")
        let summary = try #require(run.stderr.split(separator: "\n").first { $0.hasPrefix("interrupted: ") }, "\(run.stderr.suffix(500))")
        #expect(summary.contains("\(outcomes["ok"]!) downloaded, \(count - outcomes["ok"]!) not done"), "\(summary)")
        #expect(!run.stderr.contains("failed"), "\(run.stderr.suffix(500))")
    }

    /// The network options: a cache that a second run uses with no request, per-host limits, a
    /// proxy that is refused when it cannot be used.
    @Test func cacheHostAndProxyOptions() async throws {
        let server = try await E2E.startServer()
        defer { Task { await server.shutdown() } }
        let out = try E2E.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: out) }
        let cache = out.appendingPathComponent("cache").path
        let url = server.url("/files/testorig.jpg?cc=max-age%3D600")
        let first = try await Self.run(["get", "--cache-dir", cache, "--per-host", "2", "--per-host-rate", "50", "-o", out.path, url])
        #expect(first.status == 0, "\(first)")
        let second = try await Self.run(["get", "--json", "--cache-dir", cache, "--cache-policy", "cacheOnly", "-o", out.path, "--overwrite", url])
        #expect(second.status == 0, "\(second)")
        let completed = try #require(second.lines.map { try JSONParser.parse($0) }.first { $0["method"] == "download/completed" })
        #expect(completed["params"]?["fromCache"] == true && completed["params"]?["metrics"]?["wireBytes"] == 0)
        #expect(server.hits("/files/testorig.jpg") == 1)
        for bad in [["--cache-policy", "sometimes"], ["--per-host", "0"], ["--proxy", "ftp://p:1"], ["--proxy", "socks5://u:p@h:1"]] {
            let refused = try await Self.run(["get", "-o", out.path] + bad + [url])
            #expect(refused.status != 0 && refused.stderr.contains(bad[0]), "\(bad): \(refused.stderr)")
        }
    }

    /// `--json` failures name their URL (the completed event carries it).
    @Test func jsonFailuresCarryTheURL() async throws {
        let server = try await E2E.startServer()
        defer { Task { await server.shutdown() } }
        let out = try E2E.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: out) }
        let url = server.url("/status/500")
        let run = try await Self.run(["get", "--json", "--max-retries", "0", "-o", out.path, url])
        let completed = try #require(run.lines.compactMap { try? JSONParser.parse($0) }.first { $0["method"] == .string(WorkerEvent.completed) })
        #expect(completed["params"]?["outcome"] == "error" && completed["params"]?["url"]?.stringValue == url, "\(completed)")
        let schema = try #require(JSONSchemaValidator.schemaName(forOutgoing: completed, requestMethod: nil))
        #expect(try E2E.schemas().validate(completed, against: schema).isEmpty)
    }

    /// `--apply-orientation`: a phone photo's EXIF orientation (JPEG's APP1, PNG's eXIf) turns
    /// the written image upright; without the flag it is written as stored.
    @Test func applyOrientationWritesImagesUpright() async throws {
        let server = try await E2E.startServer()
        defer { Task { await server.shutdown() } }
        let out = try E2E.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: out) }
        let jpeg = try Array(Data(contentsOf: E2E.samples.appendingPathComponent("testorig.jpg")))
        server.setFile("phone.jpg", ExifSegment.inserting(orientation: 6, littleEndian: false, into: jpeg))
        let stored = try ImageDecoders.decode(jpeg)
        server.setFile("phone.png", ExifSegment.png(
            try ImageEncoders.encode(stored, as: .png), block: ExifSegment.tiff(orientation: 8, littleEndian: true), afterImageData: false))
        for (flags, folder, size) in [(["--apply-orientation"], "upright", "149x227"), ([], "stored", "227x149")] {
            let run = try await Self.run(
                ["get", "--no-progress", "--format", "png", "-o", out.appendingPathComponent(folder).path]
                    + flags + [server.url("/files/phone.jpg"), server.url("/files/phone.png")])
            #expect(run.status == 0, "\(run.stderr)")
            #expect(run.lines.count == 2 && run.lines.allSatisfy { $0.hasPrefix("ok") && $0.contains("(\(size), ") }, "\(run.stdout)")
            for name in ["phone.png", "phone-1.png"] {
                let written = try ImageDecoders.decode(Array(Data(contentsOf: out.appendingPathComponent(folder).appendingPathComponent(name))))
                #expect("\(written.width)x\(written.height)" == size, "\(folder)/\(name)")
            }
        }
    }

    @Test func badArgumentsAreRefusedWithAReason() async throws {
        let run = try await Self.run(["get", "--progressive", "--format", "original", "http://127.0.0.1:9/a.jpg"])
        #expect(run.status != 0)
        #expect(run.stderr.contains("--progressive needs a decoded --format"), "\(run.stderr)")
        let alone = try await Self.run(["get", "--partial-max-pixel-size", "64", "http://127.0.0.1:9/a.jpg"])
        #expect(alone.status != 0 && alone.stderr.contains("--partial-max-pixel-size goes with --progressive"), "\(alone.stderr)")
        let none = try await Self.run(["get"])
        #expect(none.status != 0 && none.stderr.contains("URL"), "\(none.stderr)")
        // The protocol's ranges and rules between options (OptionTable, from the schema), named by flag.
        for (args, says) in [
            (["--max-retries", "21"], "--max-retries must be between 0 and 20"),
            (["--format", "png", "--quality", "80"], "--quality goes with --format \"jpeg\" or \"webp\""),
            (["--skip-existing", "--overwrite"], "--overwrite and --skip-existing exclude each other"),
            (["--max-pixel-size", "64"], "--max-pixel-size needs a decoded --format"),
            (["--apply-orientation"], "--apply-orientation needs a decoded --format"),
        ] {
            let refused = try await Self.run(["get"] + args + ["http://127.0.0.1:9/a.jpg"])
            #expect(refused.status != 0 && refused.stderr.contains(says), "\(args): \(refused.stderr)")
        }
        let both = try await Self.run(["get", "--continue", "http://127.0.0.1:9/a.jpg"])
        #expect(both.status != 0 && both.stderr.contains("--continue needs --manifest"), "\(both.stderr)")
        let template = try await Self.run(["get", "--name-template", "{nope}.jpg", "http://127.0.0.1:9/a.jpg"])
        #expect(template.status != 0 && template.stderr.contains("unknown placeholder {nope}"), "\(template.stderr)")
        let help = try await Self.run(["--help"])
        #expect(help.status == 0 && help.stdout.contains("get") && help.stdout.contains("serve"))
    }
}
