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
            environment: [
                "HTTP_PROXY": "http://me:\(Self.secret)@127.0.0.1:\(proxy.port)", "NO_PROXY": "example.org", "no_proxy": "",
                "http_proxy": "", "https_proxy": "", "HTTPS_PROXY": "", "all_proxy": "", "ALL_PROXY": "",
            ])
        let schemas = try E2E.schemas()
        worker.request(1, "download", ["url": .string("http://images.test:\(server.port)/files/testorig.jpg"), "token": "a"])
        let done = try await worker.waitFor("completion") { $0["method"] == "download/completed" }
        #expect(done["params"]?["outcome"] == "success", "\(done)")
        #expect(done["params"]?["byteLength"] == 5770)
        #expect(proxy.forwarded == ["http://images.test:\(server.port)/files/testorig.jpg"])

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
        #expect(proxy.forwarded.count == 1)

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

/// Through Debian's tinyproxy, configured as it ships (CONNECT to ports 443 and 563 only) with
/// Basic credentials: plain http is forwarded, a tunnel to another port is refused clearly.
@Suite struct TinyproxyTests {
    static var binary: String? {
        ["/usr/bin/tinyproxy", "/usr/sbin/tinyproxy"].first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    static func freePort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        try withUnsafeMutablePointer(to: &address) { pointer in
            try pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { raw in
                guard bind(fd, raw, length) == 0, getsockname(fd, raw, &length) == 0 else { throw POSIXError(.EADDRINUSE) }
            }
        }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    @Test func plainHTTPGoesThroughTinyproxyAndTunnelsItRefusesFailClearly() async throws {
        let binary = try #require(Self.binary, "tinyproxy is installed by scripts/system-packages.sh test")
        let dir = try E2E.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let port = try Self.freePort()
        let log = dir.appendingPathComponent("tinyproxy.log").path
        let config = """
            Port \(port)
            Listen 127.0.0.1
            Timeout 30
            LogFile "\(log)"
            LogLevel Info
            MaxClients 20
            Allow 127.0.0.1
            BasicAuth me s3cret
            ConnectPort 443
            ConnectPort 563
            """
        let configPath = dir.appendingPathComponent("tinyproxy.conf").path
        try config.write(toFile: configPath, atomically: true, encoding: .utf8)
        let proxy = Process()
        proxy.executableURL = URL(fileURLWithPath: binary)
        proxy.arguments = ["-d", "-c", configPath]
        proxy.standardOutput = FileHandle.nullDevice
        proxy.standardError = FileHandle.nullDevice
        try ChildExit.run(proxy)
        // SIGKILL: tinyproxy keeps the signal mask it inherits from the test's thread, where SIGTERM
        // is blocked, so a SIGTERM would stay pending and leave it running after the tests.
        defer {
            kill(proxy.processIdentifier, SIGKILL)
            proxy.waitUntilExit()
        }
        // Listening?
        let deadline = ContinuousClock.now + .seconds(10)
        while (try? String(contentsOfFile: log, encoding: .utf8))?.contains("listening") != true, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(20))
        }

        let server = try await E2E.startServer()
        defer { Task { await server.shutdown() } }
        let tls = try await TestHTTPServer.startTLS(http2: false)
        defer { Task { await tls.shutdown() } }
        tls.setFile("t.bin", Array(repeating: 1, count: 1000))
        let proxyURL = "http://me:s3cret@127.0.0.1:\(port)"
        let worker = try WorkerProcess(
            arguments: ["--log-level", "debug"],
            environment: [
                "HTTP_PROXY": proxyURL, "HTTPS_PROXY": proxyURL, "NO_PROXY": "", "no_proxy": "", "http_proxy": "", "https_proxy": "",
                "all_proxy": "", "ALL_PROXY": "",
            ])
        worker.request(1, "download", ["url": .string(server.url("/files/testorig.jpg")), "token": "plain", "maxRetries": 0])
        let plain = try await worker.completion("plain")
        #expect(plain["params"]?["outcome"] == "success", "\(plain) \(worker.stderr)")
        #expect(plain["params"]?["metrics"]?["remoteAddress"] == .string("127.0.0.1:\(port)"), "the connection was the proxy's")
        #expect(server.hits("/files/testorig.jpg") == 1)
        let proxyLog = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
        #expect(proxyLog.contains("/files/testorig.jpg"), "tinyproxy saw the request:\n\(proxyLog)")

        worker.request(2, "download", ["url": .string(tls.url("/files/t.bin")), "token": "tunnel", "allowInvalidCertificates": true, "maxRetries": 0])
        let tunnel = try await worker.completion("tunnel")
        #expect(tunnel["params"]?["error"]?["data"]?["reason"] == "proxy", "CONNECT to port \(tls.port) is refused: \(tunnel)")
        #expect(tls.hits("/files/t.bin") == 0)

        // Without credentials tinyproxy answers 407 (with wrong ones, 401: it is the proxy's own answer).
        worker.request(3, "configure", ["proxy": .string("http://127.0.0.1:\(port)")])
        _ = try await worker.response(3)
        worker.request(4, "download", ["url": .string(server.url("/files/testimgp.jpg")), "token": "denied", "maxRetries": 0])
        let denied = try await worker.completion("denied")
        #expect(denied["params"]?["error"]?["data"]?["reason"] == "proxy", "\(denied)\n\((try? String(contentsOfFile: log, encoding: .utf8)) ?? "")")
        worker.closeStdin()
        #expect(try await worker.waitForExit() == 0)
        let everything = String(decoding: worker.rawOutput, as: UTF8.self) + worker.stderr
        #expect(!everything.contains("s3cret"), "no password in any event or log line")
    }
}
