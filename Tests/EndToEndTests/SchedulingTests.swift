import Foundation
import ImageWorkerProtocol
import Testing
import TestSupport

/// `--scheduling`: every thread of the worker, `serve` and `get` alike, runs under the policy
/// asked, as Linux's `/proc` reports it; a policy that does not exist is refused.
@Suite struct SchedulingTests {
    static let other = 0  // SCHED_OTHER
    static let batch = 3  // SCHED_BATCH

    /// Each thread's scheduling policy (field 41 of `/proc/PID/task/TID/stat`).
    static func policies(of pid: Int32) -> [Int] {
        ProcessThreads.read("stat", of: pid).compactMap { stat in
            guard let close = stat.lastIndex(of: ")") else { return nil }
            // After the command name's closing parenthesis come fields 3 (the state) onwards.
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            return fields.count > 38 ? Int(fields[38]) : nil
        }
    }

    @Test(arguments: [([String](), batch), (["--scheduling", "batch"], batch), (["--scheduling", "normal"], other)])
    func everyThreadOfTheProtocolWorker(arguments: [String], policy: Int) async throws {
        let server = try await E2E.startServer()
        defer { Task { await server.shutdown() } }
        let worker = try WorkerProcess(arguments: arguments)
        // A decode into a file, and an original: the network, pool, decoding and writer threads all exist.
        let out = try E2E.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: out) }
        worker.request(1, "download", ["url": .string(server.url("/files/testorig.jpg")), "token": "png", "output": ["format": "png", "delivery": "file", "dir": .string(out.path)]])
        worker.request(2, "download", ["url": .string(server.url("/files/basn2c08.png")), "token": "original"])
        #expect(try await worker.completion("png")["params"]?["outcome"] == "success")
        #expect(try await worker.completion("original")["params"]?["outcome"] == "success")
        let seen = Self.policies(of: worker.process.processIdentifier)
        #expect(seen.count >= 4, "threads: \(seen)")
        #expect(!seen.isEmpty && seen.allSatisfy { $0 == policy }, "policies: \(seen)")
        worker.closeStdin()
        #expect(try await worker.waitForExit() == 0)
    }

    @Test func everyThreadOfGetRunsBatchByDefault() async throws {
        let server = try await E2E.startServer()
        defer { Task { await server.shutdown() } }
        let out = try E2E.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: out) }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: WorkerProcess.binaryPath)
        // A download that takes about 30 s: its threads are looked at while it runs.
        process.arguments = ["get", "--no-progress", "-o", out.path, server.url("/files/testorig.jpg?chunk=100&delayMs=500")]
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try ChildExit.run(process)
        let deadline = ContinuousClock.now + .seconds(20)
        while Self.policies(of: process.processIdentifier).count < 4, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(20))
        }
        try await Task.sleep(for: .milliseconds(200))
        let seen = Self.policies(of: process.processIdentifier)
        kill(process.processIdentifier, SIGINT)
        _ = try await ChildExit.wait(for: process, terminatingAfter: .seconds(20))
        #expect(seen.count >= 4, "threads: \(seen)")
        #expect(!seen.isEmpty && seen.allSatisfy { $0 == Self.batch }, "policies: \(seen)")
    }

    @Test(arguments: [["--scheduling", "fifo"], ["get", "--scheduling", "", "-o", "/nonexistent", "http://127.0.0.1:9/"]])
    func anUnknownPolicyIsRefused(arguments: [String]) async throws {
        let run = try await GetCommandTests.run(arguments)
        #expect(run.status != 0)
        #expect(run.stderr.contains("--scheduling must be batch or normal"), "\(run.stderr)")
    }
}
