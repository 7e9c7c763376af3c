import Foundation
import ImageWorkerProtocol
import Testing
import TestSupport

/// `--network-threads`: how many threads serve the network (NIO's shared event loops, named
/// `NIO-SGLTN-…`). By default a quarter of the CPUs, at least one; as asked otherwise.
@Suite struct NetworkThreadsTests {
    /// The network threads of a worker started with `arguments`, once it has downloaded two images.
    static func networkThreads(arguments: [String]) async throws -> Int {
        let server = try await E2E.startServer()
        defer { Task { await server.shutdown() } }
        let worker = try WorkerProcess(arguments: arguments)
        worker.request(1, "download", ["url": .string(server.url("/files/testorig.jpg")), "token": "a"])
        worker.request(2, "download", ["url": .string(server.url("/files/basn2c08.png")), "token": "b"])
        #expect(try await worker.completion("a")["params"]?["outcome"] == "success")
        #expect(try await worker.completion("b")["params"]?["outcome"] == "success")
        let names = ProcessThreads.read("comm", of: worker.process.processIdentifier)
        worker.closeStdin()
        #expect(try await worker.waitForExit() == 0)
        return names.filter { $0.hasPrefix("NIO-SGLTN") }.count
    }

    @Test(arguments: [1, 3])
    func asManyAsAsked(count: Int) async throws {
        #expect(try await Self.networkThreads(arguments: ["--network-threads", String(count)]) == count)
    }

    /// NIO's own default would be one per CPU.
    @Test func aQuarterOfTheCPUsByDefault() async throws {
        let online = max(1, sysconf(Int32(_SC_NPROCESSORS_ONLN)))
        let seen = try await Self.networkThreads(arguments: [])
        #expect(seen >= 1 && seen <= max(1, online / 4), "\(seen) network threads on \(online) CPUs")
    }

    @Test(arguments: [["--network-threads", "0"], ["get", "--network-threads", "257", "-o", "/nonexistent", "http://127.0.0.1:9/"]])
    func aCountOutOfRangeIsRefused(arguments: [String]) async throws {
        let run = try await GetCommandTests.run(arguments)
        #expect(run.status != 0)
        #expect(run.stderr.contains("--network-threads must be between 1 and 256"), "\(run.stderr)")
    }
}
