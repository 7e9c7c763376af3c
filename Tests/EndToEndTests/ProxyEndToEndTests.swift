import Foundation
import ImageWorkerProtocol
import Testing
import TestSupport

/// Proxies as a user sets them: the environment of the worker process, `configure`, and `get`.
@Suite struct ProxyEndToEndTests {
    static let secret = "pa55-w0rd-never-shown"

    @Test func theEnvironmentsProxyIsUsedAndItsPasswordNeverShown() async throws {
        let server = try await E2E.startServer()
        defer { Task { await server.shutdown() } }
        let proxy = try await TestProxyServer.start(.http, credentials: "me:\(Self.secret)")
        defer { Task { await proxy.shutdown() } }
        let worker = try WorkerProcess(
            arguments: ["--log-level", "debug"],
            environment: ["HTTP_PROXY": "http://me:\(Self.secret)@127.0.0.1:\(proxy.port)", "NO_PROXY": "example.org"])
        let schemas = try E2E.schemas()
        worker.request(1, "download", ["url": .string("http://images.test:\(server.port)/files/testorig.jpg"), "token": "a"])
        let done = try await worker.waitFor("completion") { $0["method"] == "download/completed" }
        #expect(done["params"]?["outcome"] == "success", "\(done)")
        #expect(done["params"]?["byteLength"] == 5770)
        #expect(proxy.tunnels == ["images.test:\(server.port)"])

        worker.request(2, "status")
        let status = try await worker.response(2)
        #expect(schemas.validate(status, against: "results/status.schema.json").isEmpty, "\(status)")
        let configuration = try #require(status["result"]?["configuration"])
        #expect(configuration["httpProxy"] == .string("http://me@127.0.0.1:\(proxy.port)"))
        #expect(configuration["httpsProxy"] == .null)
        #expect(configuration["noProxy"] == "example.org")

        // Replaced at run time; a bad one is refused as a whole.
        worker.request(3, "configure", ["proxy": "socks5://u:p@127.0.0.1:1080"])
        #expect(try await worker.response(3)["error"]?["code"] == -32602)
        worker.request(4, "configure", ["proxy": ""])
        #expect(try await worker.response(4)["result"]?["configuration"]?["httpProxy"] == .null)
        worker.request(5, "download", ["url": .string("http://images.test:\(server.port)/files/testorig.jpg"), "token": "b", "maxRetries": 0])
        let direct = try await worker.waitFor("second completion") { $0["method"] == "download/completed" && $0["params"]?["token"] == "b" }
        #expect(direct["params"]?["outcome"] == "error", "directly, images.test does not resolve")
        #expect(proxy.tunnels.count == 1)

        worker.closeStdin()
        #expect(try await worker.waitForExit() == 0)
        for message in worker.received where message["method"] != nil {
            #expect(schemas.validate(message, against: JSONSchemaValidator.schemaName(forOutgoing: message, requestMethod: nil) ?? "?").isEmpty, "\(message)")
        }
        let everything = String(decoding: worker.rawOutput, as: UTF8.self) + worker.stderr
        #expect(worker.stderr.contains("proxy"), "the debug log mentions the proxy")
        #expect(!everything.contains(Self.secret), "the proxy's password is in no event and no log line")
    }
}
