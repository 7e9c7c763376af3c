import Foundation
import ImageWorkerProtocol
import Testing
import TestSupport

/// `disallowedHeaderDirectives` and `userAgentToken` through the real worker: a response whose
/// `X-Robots-Tag` says a listed directive, for every crawler or for this one, fails its
/// download with `OptedOut` from the head (a body that never comes is not waited for); others,
/// and everything when the list is empty (the default), download as before.
@Suite struct OptOutEndToEndTests {
    func failure(_ done: JSONValue?) -> (code: Int64?, name: String?, directives: JSONValue?) {
        let error = done?["error"]
        return (error?["code"]?.integerValue, error?["data"]?["name"]?.stringValue, error?["data"]?["directives"])
    }

    @Test func listedDirectivesFailTheirDownloadsFromTheHead() async throws {
        let server = try await E2E.startServer()
        defer { Task { await server.shutdown() } }
        let worker = try WorkerProcess()
        worker.request(1, "configure", [
            "disallowedHeaderDirectives": ["noai", "noimageai", "noindex", "noimageindex", "none"], "userAgentToken": "MyBot",
        ])
        let configured = try await worker.response(1)
        #expect(configured["result"]?["configuration"]?["disallowedHeaderDirectives"] == ["noai", "noimageai", "noindex", "noimageindex", "none"])
        #expect(configured["result"]?["configuration"]?["userAgentToken"] == "MyBot")
        let cases: [(String, refused: JSONValue?)] = [
            // (The body never comes: a worker that waited for it would not end these.)
            ("noai", ["noai"]), ("nofollow|NoImageAI", ["noimageai"]), ("mybot: noindex, nofollow", ["noindex"]),
            ("googlebot: noai", nil), ("max-image-preview: none", nil), ("nofollow", nil),
        ]
        for (n, (robots, refused)) in cases.enumerated() {
            let hold = refused == nil ? "" : "&pauseAt=0&gate=never"
            let query = robots.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
            worker.request(n + 2, "download", [
                "url": .string(server.url("/files/testorig.jpg?robots=\(query)&n=\(n)\(hold)")), "token": .int(Int64(n)),
                "output": ["format": "rgba", "delivery": "none"],
            ])
        }
        for (n, (robots, refused)) in cases.enumerated() {
            let done = try await worker.completion(.int(Int64(n)), timeout: .seconds(20))["params"]
            if let refused {
                let f = failure(done)
                #expect(f.code == 1012 && f.name == "OptedOut" && f.directives == refused, "\(robots): \(String(describing: done))")
                #expect(done?["error"]?["message"]?.stringValue?.contains("X-Robots-Tag") == true)
                let problems = try E2E.schemas().validate(try #require(worker.events(.int(Int64(n))).last),
                                                          against: "events/download-completed.schema.json")
                #expect(problems == [], "\(problems)")
            } else {
                #expect(done?["outcome"] == "success", "\(robots): \(String(describing: done))")
            }
        }
        // The token is in the User-Agent sent.
        let agent = server.lastHeaders("/files/testorig.jpg").first { $0.0.lowercased() == "user-agent" }?.1 ?? ""
        #expect(agent.hasPrefix("image-worker/") && agent.hasSuffix(" (compatible; MyBot)"), "\(agent)")
        worker.closeStdin()
        #expect(try await worker.waitForExit() == 0)
    }

    /// By default nothing is refused; a list that is not one of strings is refused by `configure`.
    @Test func theDefaultRefusesNothing() async throws {
        let server = try await E2E.startServer()
        defer { Task { await server.shutdown() } }
        let worker = try WorkerProcess()
        worker.request(1, "download", ["url": .string(server.url("/files/testorig.jpg?robots=noai")), "token": "a"])
        #expect(try await worker.completion("a")["params"]?["outcome"] == "success")
        worker.request(2, "configure", ["disallowedHeaderDirectives": "noai"])
        #expect(try await worker.response(2)["error"]?["code"]?.integerValue == -32602)
        worker.request(3, "configure", ["disallowedHeaderDirectives": ["noai", ""]])
        #expect(try await worker.response(3)["error"]?["code"]?.integerValue == -32602)
        worker.request(4, "configure", ["userAgentToken": "a (b)"])
        #expect(try await worker.response(4)["error"]?["code"]?.integerValue == -32602)
        worker.closeStdin()
        #expect(try await worker.waitForExit() == 0)
    }

    /// `get --disallowed-header-directives` (comma-separated) and `--user-agent-token`.
    @Test func getsFlags() async throws {
        let server = try await E2E.startServer()
        defer { Task { await server.shutdown() } }
        let out = try E2E.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: out) }
        let refused = server.url("/files/testorig.jpg?robots=noimageai")
        let kept = server.url("/files/basn2c08.png?robots=otherbot:%20noai")
        let run = try await GetCommandTests.run(
            ["get", "-o", out.path, "--disallowed-header-directives", "noai, NoImageAI", "--user-agent-token", "mybot", refused, kept])
        #expect(run.status == 1, "\(run)")
        #expect(run.lines.contains { $0.hasPrefix("failed  \(refused): OptedOut:") && $0.contains("noimageai") }, "\(run.lines)")
        #expect(run.lines.contains { $0.hasPrefix("ok      \(kept) -> ") }, "\(run.lines)")
        let off = try await GetCommandTests.run(["get", "-o", out.path, "--overwrite", "--disallowed-header-directives", "", refused])
        #expect(off.status == 0, "\(off)")
    }
}
