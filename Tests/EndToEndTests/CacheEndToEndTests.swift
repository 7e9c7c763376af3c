import Foundation
import ImageWorkerProtocol
import Testing
import TestSupport

/// The HTTP cache as users run it: `--cache-dir`, shared by several workers, crashes included.
@Suite struct CacheEndToEndTests {
    func download(_ worker: WorkerProcess, _ urls: [String], policy: String? = nil) async throws -> [JSONValue] {
        for (i, url) in urls.enumerated() {
            var params: JSONObject = ["url": .string(url), "token": .int(Int64(i)), "output": ["delivery": "inline"]]
            if let policy { params["cachePolicy"] = .string(policy) }
            worker.request(i + 1, "download", .object(params))
        }
        var done: [JSONValue] = []
        for i in urls.indices { done.append(try await worker.completion(.int(Int64(i)), timeout: .seconds(60))) }
        return done
    }

    @Test func twoWorkersShareOneDirectoryThenAThirdNeedsNoNetwork() async throws {
        let server = try await E2E.startServer()
        defer { Task { await server.shutdown() } }
        let directory = try E2E.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        var expected: [String] = []
        var urls: [String] = []
        for i in 0..<24 {
            let name = "big\(i).bin"
            let body = (0..<(40_000 + i * 7_919)).map { UInt8(truncatingIfNeeded: $0 &* (i + 3)) }
            server.setFile(name, body)
            expected.append(Data(body).base64EncodedString())
            urls.append(server.url("/files/\(name)?cc=max-age%3D3600&chunk=8192"))
        }
        let cache = directory.appendingPathComponent("cache").path
        let a = try WorkerProcess(arguments: ["--cache-dir", cache])
        let b = try WorkerProcess(arguments: ["--cache-dir", cache])
        let forward = urls
        let backward = Array(urls.reversed())
        async let fromA = download(a, forward)
        async let fromB = download(b, backward)
        let (doneA, doneB) = try await (fromA, fromB)
        for (i, done) in doneA.enumerated() { #expect(done["params"]?["data"] == .string(expected[i]), "worker a, \(i)") }
        for (i, done) in doneB.enumerated() { #expect(done["params"]?["data"] == .string(expected[urls.count - 1 - i]), "worker b, \(i)") }
        a.closeStdin()
        b.closeStdin()
        #expect(try await a.waitForExit() == 0)
        #expect(try await b.waitForExit() == 0)
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: cache + "/v1/tmp")
        #expect(leftovers.isEmpty, "no temporary file is left: \(leftovers)")

        // A third worker, told never to touch the network: every image from the shared cache.
        let hitsBefore = server.hits("/files/big0.bin")
        let c = try WorkerProcess(arguments: ["--cache-dir", cache])
        let schemas = try E2E.schemas()
        let doneC = try await download(c, urls, policy: "cacheOnly")
        for (i, done) in doneC.enumerated() {
            #expect(done["params"]?["outcome"] == "success", "\(done)")
            #expect(done["params"]?["data"] == .string(expected[i]))
            #expect(done["params"]?["fromCache"] == true && done["params"]?["revalidated"] == false)
            #expect(schemas.validate(done, against: "events/download-completed.schema.json").isEmpty)
        }
        #expect(server.hits("/files/big0.bin") == hitsBefore)
        c.closeStdin()
        #expect(try await c.waitForExit() == 0)
    }

    @Test func aWorkerKilledMidBodyLeavesNoEntry() async throws {
        let server = try await E2E.startServer()
        defer { Task { await server.shutdown() } }
        let directory = try E2E.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let cache = directory.appendingPathComponent("cache").path
        server.setFile("slow.bin", Array(repeating: 7, count: 200_000))
        // The server sends half of the body, then nothing: the worker cannot finish it before the kill.
        let url = server.url("/files/slow.bin?cc=max-age%3D3600&chunk=10000&stallAfter=100000")
        let worker = try WorkerProcess(arguments: ["--cache-dir", cache])
        worker.request(0, "configure", ["progressIntervalMs": 0])
        worker.request(1, "download", ["url": .string(url), "token": "t"])
        _ = try await worker.waitFor("some of the body") { $0["method"] == "download/progress" && ($0["params"]?["receivedBytes"]?.integerValue ?? 0) > 30_000 }
        worker.signal(SIGKILL)
        _ = try await worker.waitForExit()

        let again = try WorkerProcess(arguments: ["--cache-dir", cache])
        again.request(1, "download", ["url": .string(url), "token": "t", "cachePolicy": "cacheOnly"])
        let miss = try await again.completion("t")
        #expect(miss["params"]?["error"]?["data"]?["reason"] == "notCached", "no torn entry: \(miss) \(again.stderr)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: cache + "/v1/entries").isEmpty)
        let whole = server.url("/files/slow.bin?cc=max-age%3D3600")
        again.request(2, "download", ["url": .string(whole), "token": "u"])
        #expect(try await again.completion("u", timeout: .seconds(60))["params"]?["fromCache"] == false)
        again.request(3, "download", ["url": .string(whole), "token": "v"])
        let hit = try await again.completion("v")
        #expect(hit["params"]?["fromCache"] == true && hit["params"]?["byteLength"] == 200_000)
        again.closeStdin()
        #expect(try await again.waitForExit() == 0)
    }
}
