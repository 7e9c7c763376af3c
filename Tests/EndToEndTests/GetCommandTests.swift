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
    static func run(_ arguments: [String], executable: String = WorkerProcess.binaryPath, interruptWhen ready: (@Sendable () -> Bool)? = nil) async throws -> Run {
        let dir = try E2E.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let outURL = dir.appendingPathComponent("stdout")
        let errURL = dir.appendingPathComponent("stderr")
        try Data().write(to: outURL)
        try Data().write(to: errURL)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = try FileHandle(forWritingTo: outURL)
        process.standardError = try FileHandle(forWritingTo: errURL)
        let exited = AsyncStream<Int32>.makeStream()
        process.terminationHandler = { exited.continuation.yield($0.terminationStatus) }
        try process.run()
        if let ready {
            // Once the download is under way (so the signal handlers are surely installed).
            let deadline = ContinuousClock.now + .seconds(20)
            while !ready(), ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(20)) }
            try await Task.sleep(for: .milliseconds(100))
            kill(process.processIdentifier, SIGINT)
        }
        var status: Int32 = -1
        for await s in exited.stream {
            status = s
            break
        }
        return Run(
            status: status, stdout: try String(contentsOf: outURL, encoding: .utf8),
            stderr: try String(contentsOf: errURL, encoding: .utf8))
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
        #expect(jpegLine == "ok      \(urls[0]) -> \(out.path)/testorig.jpg (jpeg, 5.8 kB)")
        #expect(run.lines.contains { $0.hasPrefix("failed  \(urls[1]): InvalidDownloadStatusCode:") && $0.contains("404") })
        #expect(run.lines.contains { $0.hasPrefix("failed  nonsense:://: InvalidURL:") })
        // The bytes, as served; the summary on stderr; no progress bars off a terminal.
        #expect(try Data(contentsOf: out.appendingPathComponent("testorig.jpg")) == Data(contentsOf: E2E.samples.appendingPathComponent("testorig.jpg")))
        #expect(try Data(contentsOf: out.appendingPathComponent("basn2c08.png")) == Data(contentsOf: E2E.samples.appendingPathComponent("basn2c08.png")))
        #expect(run.stderr.hasPrefix("2 downloaded, 2 failed,"), "\(run.stderr)")
        #expect(!run.stderr.contains("\u{1B}["))

        let allGood = try await Self.run(["get", "-o", out.path, "--overwrite", urls[0], urls[2]])
        #expect(allGood.status == 0 && allGood.lines.count == 2, "\(allGood)")
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
    /// cancelled at once, exit status 141 (as if killed by SIGPIPE), where it used to go on
    /// downloading (the slow URL below takes two minutes) and exit 0.
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
        let stdout = Pipe()
        process.standardOutput = stdout
        let exited = AsyncStream<Int32>.makeStream()
        process.terminationHandler = { exited.continuation.yield($0.terminationStatus) }
        try process.run()
        // Read the first line (download/started), then close the pipe as `head -n 1` does.
        let reader = stdout.fileHandleForReading
        var first = Data()
        while !first.contains(UInt8(ascii: "\n")) {
            let chunk = reader.availableData
            if chunk.isEmpty { break }
            first.append(chunk)
        }
        try reader.close()
        #expect(String(decoding: first, as: UTF8.self).contains("download/started"))
        let deadline = Task {
            try await Task.sleep(for: .seconds(30))
            process.terminate()
        }
        var status: Int32 = -1
        for await s in exited.stream {
            status = s
            break
        }
        deadline.cancel()
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

    @Test func badArgumentsAreRefusedWithAReason() async throws {
        let run = try await Self.run(["get", "--progressive", "--format", "original", "http://127.0.0.1:9/a.jpg"])
        #expect(run.status != 0)
        #expect(run.stderr.contains("--progressive needs a decoded --format"), "\(run.stderr)")
        let alone = try await Self.run(["get", "--partial-max-pixel-size", "64", "http://127.0.0.1:9/a.jpg"])
        #expect(alone.status != 0 && alone.stderr.contains("--partial-max-pixel-size goes with --progressive"), "\(alone.stderr)")
        let none = try await Self.run(["get"])
        #expect(none.status != 0 && none.stderr.contains("URL"), "\(none.stderr)")
        let help = try await Self.run(["--help"])
        #expect(help.status == 0 && help.stdout.contains("get") && help.stdout.contains("serve"))
    }
}
