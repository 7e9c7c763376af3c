import Foundation
import ImageWorkerProtocol
import Testing
import TestSupport

/// `minImageSize`, `maxImageArea` and `maxAspectRatio` through the real worker: checked on the
/// header's size before any decode, for decoded formats and original bytes alike, failing only
/// the token that asks (its fetch's other tokens go on), with `Filtered` naming the filter.
@Suite struct SizeFilterEndToEndTests {
    func error(_ done: JSONValue?) -> (code: Int64?, name: String?, filter: String?, width: Int64?, height: Int64?) {
        let error = done?["error"]
        let data = error?["data"]
        return (error?["code"]?.integerValue, data?["name"]?.stringValue, data?["filter"]?.stringValue, data?["width"]?.integerValue,
                data?["height"]?.integerValue)
    }

    /// testorig.jpg is 227 x 149, basn2c08.png 32 x 32: each filter fails the one and passes the
    /// other, whatever the format asked (a decoded one, or the bytes as they came).
    @Test(arguments: ["png", "original"])
    func eachFilterFailsOnlyTheImagesItNames(_ format: String) async throws {
        let server = try await E2E.startServer()
        defer { Task { await server.shutdown() } }
        let worker = try WorkerProcess()
        let cases: [(String, JSONValue, fails: [String])] = [
            ("minImageSize", 32, []), ("minImageSize", 33, ["basn2c08.png"]), ("minImageSize", 150, ["testorig.jpg", "basn2c08.png"]),
            ("maxImageArea", 1024, ["testorig.jpg"]), ("maxImageArea", 1023, ["testorig.jpg", "basn2c08.png"]),
            ("maxImageArea", .int(227 * 149), []), ("maxAspectRatio", 1.5, ["testorig.jpg"]), ("maxAspectRatio", 1.0, ["testorig.jpg"]),
            ("maxAspectRatio", 1.6, []),
        ]
        var id = 0
        for (n, (filter, value, _)) in cases.enumerated() {
            for file in ["testorig.jpg", "basn2c08.png"] {
                id += 1
                worker.request(id, "download", [
                    "url": .string(server.url("/files/\(file)?case=\(n)")), "token": .string("\(n)-\(file)"),
                    "output": ["format": .string(format), "delivery": "none", .init(filter): value],
                ])
            }
        }
        for (n, (filter, _, fails)) in cases.enumerated() {
            for (file, size) in [("testorig.jpg", (227, 149)), ("basn2c08.png", (32, 32))] {
                let done = try await worker.completion(.string("\(n)-\(file)"))["params"]
                if fails.contains(file) {
                    let e = error(done)
                    #expect(e.code == 1011 && e.name == "Filtered" && e.filter == filter, "\(filter) \(file): \(String(describing: done))")
                    #expect(e.width == Int64(size.0) && e.height == Int64(size.1))
                    let problems = try E2E.schemas().validate(try #require(worker.events(.string("\(n)-\(file)")).last),
                                                              against: "events/download-completed.schema.json")
                    #expect(problems == [], "\(problems)")
                } else {
                    #expect(done?["outcome"] == "success", "\(filter) \(file): \(String(describing: done))")
                }
            }
        }
        worker.closeStdin()
        #expect(try await worker.waitForExit() == 0)
    }

    /// Tokens of one fetch: the one whose filter refuses the image fails, the others get it; a
    /// progressive token refused gets no partial image.
    @Test func aFilteredTokenLeavesItsFetchsOthersAlone() async throws {
        let server = try await E2E.startServer()
        defer { Task { await server.shutdown() } }
        let worker = try WorkerProcess()
        let url = JSONValue.string(server.url("/files/testimgp.jpg?chunk=400&delayMs=20"))
        worker.request(1, "download", [
            "url": url, "token": "refused", "progressive": true,
            "output": ["format": "rgba", "delivery": "inline", "partialIntervalMs": 0, "minImageSize": 200],
        ])
        worker.request(2, "download", [
            "url": url, "token": "kept", "progressive": true,
            "output": ["format": "rgba", "delivery": "inline", "partialIntervalMs": 0, "minImageSize": 100],
        ])
        worker.request(3, "download", ["url": url, "token": "plain", "output": ["format": "png", "delivery": "none"]])
        let refused = try await worker.completion("refused")["params"]
        #expect(error(refused).name == "Filtered" && error(refused).filter == "minImageSize")
        #expect(try await worker.completion("kept")["params"]?["outcome"] == "success")
        #expect(try await worker.completion("plain")["params"]?["outcome"] == "success")
        #expect(!worker.events("refused").contains { $0["method"] == .string(WorkerEvent.partialImage) })
        #expect(worker.events("kept").contains { $0["method"] == .string(WorkerEvent.partialImage) })
        worker.closeStdin()
        #expect(try await worker.waitForExit() == 0)
    }

    /// Original bytes that show no size cannot be judged: they fail as `verify` would fail them;
    /// values out of range are refused by the request.
    @Test func bytesWithoutASizeAndBadValues() async throws {
        let server = try await E2E.startServer()
        defer { Task { await server.shutdown() } }
        server.setFile("notes.txt", Array("not an image at all".utf8))
        let worker = try WorkerProcess()
        worker.request(1, "download", [
            "url": .string(server.url("/files/notes.txt")), "token": "text", "output": ["delivery": "none", "maxImageArea": 1000],
        ])
        #expect(error(try await worker.completion("text")["params"]).name == "UnsupportedFormat")
        worker.request(2, "download", [
            "url": .string(server.url("/files/testorig.jpg")), "token": "bad", "output": ["delivery": "none", "maxAspectRatio": 0.5],
        ])
        let response = try await worker.response(2)
        #expect(response["error"]?["code"]?.integerValue == -32602, "\(response)")
        worker.closeStdin()
        #expect(try await worker.waitForExit() == 0)
    }

    /// `get`'s flags: the image its filter refuses is a failed line naming the filter, the other
    /// is saved; the run's exit status says one failed.
    @Test func getsFlagsFilterAndSayWhy() async throws {
        let server = try await E2E.startServer()
        defer { Task { await server.shutdown() } }
        let out = try E2E.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: out) }
        let urls = [server.url("/files/testorig.jpg"), server.url("/files/basn2c08.png")]
        let run = try await GetCommandTests.run(["get", "-o", out.path, "--min-image-size", "64", "--max-aspect-ratio", "1.6"] + urls)
        #expect(run.status == 1, "\(run)")
        #expect(run.lines.contains { $0.hasPrefix("ok      \(urls[0]) -> ") }, "\(run.lines)")
        #expect(run.lines.contains { $0.hasPrefix("failed  \(urls[1]): Filtered:") && $0.contains("minImageSize 64") }, "\(run.lines)")
        #expect(!FileManager.default.fileExists(atPath: out.appendingPathComponent("basn2c08.png").path))
        let refused = try await GetCommandTests.run(["get", "-o", out.path, "--max-aspect-ratio", "0.5"] + urls)
        #expect(refused.status == 64 && refused.stderr.contains("--max-aspect-ratio must be between 1 and"), "\(refused)")
    }
}
