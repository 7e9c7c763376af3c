import Foundation
import ImageDecoding
import ImageDownloader
import ImageWorkerProtocol
import Testing

@testable import ImageWorkerServer

/// The worker's delivery, sharing and lifecycle rules in process, with scripted fetches: no
/// socket, no child process (the end-to-end suite covers those).
@Suite struct DeliveryRulesTests {
    /// A small PNG made here: 40×30 RGB gradient.
    static let png: [UInt8] = {
        let (width, height) = (40, 30)
        let pixels = (0..<(width * height * 3)).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        let image = DecodedImage(width: width, height: height, layout: .rgb, pixels: pixels, format: .png)
        return (try? ImageDecoders.encodePNG(image)) ?? []
    }()
    /// A PNG signature followed by nothing a decoder can use.
    static let broken: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A] + [UInt8](repeating: 0x42, count: 300)

    private func errorName(_ completed: JSONValue) -> String? {
        completed["error"]?["data"]?["name"]?.stringValue
    }

    @Test func tokensOfOneURLShareOneFetchAndOneDecode() async throws {
        let h = ServerHarness(["/a.png": .gated(Self.png, gate: "a")])
        let first = h.send(WorkerMethod.download, ["token": "t1", "url": "http://scripted.test/a.png", "output": ["format": "rgba", "delivery": "none"]])
        let second = h.send(WorkerMethod.download, ["token": "t2", "url": "http://scripted.test/a.png", "output": ["format": "rgba", "delivery": "inline"]])
        _ = try await h.reply(first)
        _ = try await h.reply(second)
        h.loader.open("a")
        for token in ["t1", "t2"] {
            let completed = try await h.completed(token)
            #expect(completed["outcome"]?.stringValue == "success", "\(completed)")
            #expect(completed["width"]?.integerValue == 40 && completed["height"]?.integerValue == 30)
        }
        #expect(try await h.completed("t2")["data"]?.stringValue?.isEmpty == false, "the inline token got its pixels")
        #expect(h.loader.loadCount("/a.png") == 1, "one fetch for both tokens")
        let status = try await h.reply(h.send(WorkerMethod.status))
        #expect(status["result"]?["decodes"]?.integerValue == 1, "one decode for both tokens: \(status)")
        h.endInput()
        #expect(try await h.exitStatus() == 0)
    }

    /// A bad image fails its own tokens (BadImageData) and nothing else: another URL succeeds, and
    /// the bad URL is not blocked (a decode failure is not the fetch's).
    @Test func aBadImageFailsOnlyItsTokens() async throws {
        let h = ServerHarness(["/bad.png": .gated(Self.broken, gate: "bad"), "/good.png": .body(Self.png)])
        h.download("b1", "/bad.png")
        h.download("b2", "/bad.png", output: ["format": "png", "delivery": "inline"])
        h.download("g", "/good.png")
        #expect(try await h.completed("g")["outcome"]?.stringValue == "success")
        h.loader.open("bad")
        for token in ["b1", "b2"] {
            let completed = try await h.completed(token)
            #expect(completed["outcome"]?.stringValue == "error")
            #expect(errorName(completed) == "BadImageData", "\(completed)")
        }
        h.download("b3", "/bad.png")
        #expect(errorName(try await h.completed("b3")) == "BadImageData", "fetched again, not on the failed-URL list")
        #expect(h.loader.loadCount("/bad.png") == 2)
        h.endInput()
        #expect(try await h.exitStatus() == 0)
    }

    /// A write that fails fails that token alone (OutputFailed, with its path); the fetch's other
    /// token gets its image.
    @Test func anOutputFailureFailsOnlyItsToken() async throws {
        let blocker = FileManager.default.temporaryDirectory.appendingPathComponent("iw-server-tests-\(UUID().uuidString)")
        try Data("a file, not a directory".utf8).write(to: blocker)
        defer { try? FileManager.default.removeItem(at: blocker) }
        let h = ServerHarness(["/a.png": .gated(Self.png, gate: "a")])
        let path = blocker.appendingPathComponent("out.png").path
        let first = h.send(WorkerMethod.download, [
            "token": "file", "url": "http://scripted.test/a.png", "output": ["format": "png", "delivery": "file", "path": .string(path)],
        ])
        let second = h.send(WorkerMethod.download, ["token": "inline", "url": "http://scripted.test/a.png", "output": ["format": "png", "delivery": "inline"]])
        _ = try await h.reply(first)
        _ = try await h.reply(second)
        h.loader.open("a")
        let failed = try await h.completed("file")
        #expect(errorName(failed) == "OutputFailed", "\(failed)")
        #expect(failed["error"]?["data"]?["path"]?.stringValue == path)
        let said = "cannot create directory \(blocker.path): \(blocker.path) is a file, not a folder"
        #expect(failed["error"]?["message"]?.stringValue == said, "which part of the path is in the way, and why")
        #expect(try await h.completed("inline")["outcome"]?.stringValue == "success")
        #expect(h.loader.loadCount("/a.png") == 1)
        h.endInput()
        #expect(try await h.exitStatus() == 0)
    }

    /// The fetch's failures reach the wire with their codes: an idle stall times out, a thrown
    /// transport failure keeps its reason, a status fails as such.
    @Test func fetchFailuresKeepTheirReasons() async throws {
        let h = ServerHarness([
            "/stall": .stall(after: [0x89, 0x50]),
            "/reset": .failure(.network(.reset, "scripted reset")),
            "/gone": .status(404),
        ])
        h.download("stall", "/stall", extra: ["timeoutMs": 100])
        h.download("reset", "/reset")
        h.download("gone", "/gone")
        let stalled = try await h.completed("stall")
        #expect(errorName(stalled) == "NetworkError" && stalled["error"]?["data"]?["reason"]?.stringValue == "timeout", "\(stalled)")
        let reset = try await h.completed("reset")
        #expect(reset["error"]?["data"]?["reason"]?.stringValue == "reset", "\(reset)")
        let gone = try await h.completed("gone")
        #expect(errorName(gone) == "InvalidDownloadStatusCode" && gone["error"]?["data"]?["statusCode"]?.integerValue == 404)
        for token in ["stall", "reset", "gone"] {
            #expect(h.events(token).filter { $0 == WorkerEvent.completed }.count == 1, "one terminal event: \(h.events(token))")
        }
        h.endInput()
        #expect(try await h.exitStatus() == 0)
    }

    /// LSP's shutdown with `cancelPending`: the stalled token ends cancelled before the answer,
    /// then only `exit` is accepted, and the worker ends with status 0.
    @Test func shutdownCancelsPendingThenExitEndsCleanly() async throws {
        let h = ServerHarness(["/stall": .stall(after: [])])
        h.download("s", "/stall")
        let shutdown = h.send(WorkerMethod.shutdown, ["cancelPending": true])
        let answer = try await h.reply(shutdown)
        #expect(answer["error"] == nil, "\(answer)")
        #expect(try await h.completed("s")["outcome"]?.stringValue == "cancelled")
        let refused = try await h.reply(h.send(WorkerMethod.status))
        #expect(refused["error"]?["code"]?.integerValue == -32600, "\(refused)")
        h.send(WorkerMethod.exit, notification: true)
        #expect(try await h.exitStatus() == 0)
    }

    /// stdin's end with the default `drain`: what was accepted still finishes, then the worker
    /// ends with status 0.
    @Test func theEndOfInputLetsAcceptedWorkFinish() async throws {
        let h = ServerHarness(["/a.png": .gated(Self.png, gate: "a")])
        let id = h.send(WorkerMethod.download, ["token": "d", "url": "http://scripted.test/a.png", "output": ["format": "rgb", "delivery": "none"]])
        _ = try await h.reply(id)
        h.endInput()
        h.loader.open("a")
        let completed = try await h.completed("d")
        #expect(completed["outcome"]?.stringValue == "success" && completed["pixelFormat"]?.stringValue == "rgb", "\(completed)")
        #expect(try await h.exitStatus() == 0)
    }
}

extension DeliveryRulesTests {
    /// A progressive token, a decoded one and an original one share a fetch; when all three have
    /// their results, nothing of the fetch is left: no shared decode, no progressive decoder.
    @Test func aFetchLeavesNothingBehindOnceEveryTokenIsDelivered() async throws {
        let h = ServerHarness(["/a.png": .gated(Self.png, gate: "a"), "/bad.png": .gated(Self.broken, gate: "a")])
        var ids: [Int] = []
        for path in ["/a.png", "/bad.png"] {
            ids.append(h.send(WorkerMethod.download, [
                "token": .string("p\(path)"), "url": .string("http://scripted.test\(path)"), "progressive": true,
                "output": ["format": "png", "delivery": "none", "partialIntervalMs": 0],
            ]))
            ids.append(h.send(WorkerMethod.download, [
                "token": .string("d\(path)"), "url": .string("http://scripted.test\(path)"), "output": ["format": "rgb", "delivery": "none", "maxPixelSize": 8],
            ]))
            ids.append(h.send(WorkerMethod.download, ["token": .string("o\(path)"), "url": .string("http://scripted.test\(path)"), "output": ["delivery": "none"]]))
        }
        for id in ids { _ = try await h.reply(id) }
        h.loader.open("a")
        for token in ["p/a.png", "d/a.png", "o/a.png", "o/bad.png"] {
            #expect(try await h.completed(token)["outcome"]?.stringValue == "success", "\(token)")
        }
        for token in ["p/bad.png", "d/bad.png"] {
            #expect(try await h.completed(token)["outcome"]?.stringValue == "error", "\(token)")
        }
        #expect(h.loader.loadCount("/a.png") == 1 && h.loader.loadCount("/bad.png") == 1)
        // The progressive decoder gave its memory back (on its queue, after the last token).
        var counts = h.server.slots.counts
        for _ in 0..<200 where counts.progressive > 0 || counts.bytesInFlight > 0 {
            try await Task.sleep(for: .milliseconds(10))
            counts = h.server.slots.counts
        }
        #expect(counts.progressive == 0 && counts.bytesInFlight == 0, "the decode budget is whole again")
        h.endInput()
        #expect(try await h.exitStatus() == 0)
    }
}
