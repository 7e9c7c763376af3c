import Foundation
import ImageWorkerProtocol
import Testing
import TestSupport

/// `get` against a hostile list and a hostile folder: every line of the list gets its result and
/// its record, and nothing planted beside the manifest is written through.
@Suite struct GetHostileListTests {
    static func records(_ path: String) throws -> [JSONValue] {
        try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n").map { try JSONParser.parse(Array($0.utf8)) }
    }

    /// A list line over the worker's 16 MiB message limit: refused as its own failure, with its
    /// manifest record, the lines around it downloaded (not "1 unfinished" with no record).
    @Test func aListLineOverTheMessageLimitGetsItsOwnFailureAndRecord() async throws {
        let server = try await E2E.startServer()
        defer { Task { await server.shutdown() } }
        let dir = try E2E.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let long = server.url("/files/testorig.jpg?pad=") + String(repeating: "a", count: 17 << 20)
        let list = dir.appendingPathComponent("urls.txt")
        try Data((server.url("/files/testorig.jpg") + "\n" + long + "\n" + server.url("/files/basn2c08.png") + "\n").utf8).write(to: list)
        let manifest = dir.appendingPathComponent("m.jsonl").path
        let started = ContinuousClock.now
        let run = try await GetCommandTests.run(["get", "-i", list.path, "-o", dir.appendingPathComponent("out").path, "--manifest", manifest])
        #expect(run.status == 1, "\(run.stderr)")
        #expect(run.stderr.contains("2 downloaded, 1 failed"), "\(run.stderr)")
        #expect(!run.stderr.contains("unfinished"), "\(run.stderr)")
        let records = try Self.records(manifest)
        #expect(records.count == 3)
        let refused = try #require(records.first { $0["index"] == 1 })
        #expect(refused["outcome"] == "failed", "\(refused["outcome"] ?? .null)")
        #expect(refused["error"]?["message"]?.stringValue?.contains("over the worker's limit") == true)
        // (No figure: a whole-process bound only, far above the seconds it takes.)
        #expect(ContinuousClock.now - started < .seconds(60))
    }

    /// A link planted where a guessable temporary file of the manifest would be (`M.tmp-PID`) is
    /// not followed: its target stays as it was, and the manifest is a file of its own. The
    /// temporary name is not the process's number.
    @Test func aLinkPlantedBesideTheManifestIsNotFollowed() async throws {
        let server = try await E2E.startServer()
        defer { Task { await server.shutdown() } }
        let dir = try E2E.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let victim = dir.appendingPathComponent("victim").path
        try Data("precious\n".utf8).write(to: URL(fileURLWithPath: victim))
        let manifest = dir.appendingPathComponent("m.jsonl").path
        // The pids the next processes are likely to get: links at every one of those names.
        var next: Int32 = 0
        let probe = Process()
        probe.executableURL = URL(fileURLWithPath: "/bin/true")
        try probe.run()
        probe.waitUntilExit()
        next = probe.processIdentifier
        for pid in next..<(next + 400) { _ = symlink(victim, "\(manifest).tmp-\(pid)") }
        let run = try await GetCommandTests.run(["get", "-o", dir.appendingPathComponent("out").path, "--manifest", manifest, server.url("/files/testorig.jpg")])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(try String(contentsOfFile: victim, encoding: .utf8) == "precious\n", "the link's target is untouched")
        var info = stat()
        #expect(lstat(manifest, &info) == 0 && info.st_mode & S_IFMT == S_IFREG, "the manifest is a file, not a link")
        #expect(try Self.records(manifest).count == 1)
    }
}
