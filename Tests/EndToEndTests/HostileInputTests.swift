import Foundation
import ImageDecoding
import ImageWorkerProtocol
import Testing
import TestSupport

/// What an attack on the worker found (a hostile server, an unlucky user), each case through the
/// real binary: one URL must never crash, wedge or bomb it, nor leak a credential.
@Suite struct HostileInputTests {
    /// The worker's peak resident size so far (VmHWM), in MB.
    static func peakMB(_ worker: WorkerProcess) throws -> Int {
        let status = try String(contentsOfFile: "/proc/\(worker.process.processIdentifier)/status", encoding: .utf8)
        let line = try #require(status.split(separator: "\n").first { $0.hasPrefix("VmHWM:") })
        let kB = try #require(Int(line.split(separator: " ", omittingEmptySubsequences: true)[1]))
        return kB / 1024
    }

    static func errorName(_ completed: JSONValue) -> JSONValue? { completed["params"]?["error"]?["data"]?["name"] }

    /// Downloads `/files/NAME` once for each output, whole and progressive (a fetch each), and
    /// expects every token to fail with `error`; returns the terminal events.
    @discardableResult
    static func expectEveryPathFails(
        _ worker: WorkerProcess, _ server: TestHTTPServer, _ name: String, outputs: [JSONValue], with error: JSONValue
    ) async throws -> [JSONValue] {
        var completions: [JSONValue] = []
        for output in outputs {
            for progressive in [false, true] {
                let token = JSONValue.string("\(name)-\(completions.count)")
                worker.request(completions.count, "download", [
                    "url": .string(server.url("/files/\(name)?n=\(completions.count)")), "token": token, "output": output,
                    "progressive": .bool(progressive),
                ])
                let completed = try await worker.completion(token)
                #expect(errorName(completed) == error, "\(name) \(output) progressive \(progressive): \(completed)")
                completions.append(completed)
            }
        }
        return completions
    }

    // MARK: Crash

    /// An empty `Content-Type` (or one that is only parameters) once took the whole worker down.
    @Test func aContentTypeWithoutAMediaTypeCrashesNothing() async throws {
        let server = try await E2E.startServer()
        defer { Task { await server.shutdown() } }
        let worker = try WorkerProcess()
        let types = ["", "%3B", "%3Bcharset%3Dx", "%20%3B", "%20IMAGE/JPEG%20%3B%20q%3D1", "image/jpeg"]
        for (i, type) in types.enumerated() {
            worker.request(i, "download", ["url": .string(server.url("/files/testorig.jpg?type=\(type)")), "token": .int(Int64(i))])
        }
        var mimeTypes: [String?] = []
        for i in types.indices {
            let token = JSONValue.int(Int64(i))
            #expect(try await worker.completion(token)["params"]?["outcome"] == "success", "type \(types[i])")
            mimeTypes.append(worker.events(token).first { $0["method"] == "download/response" }?["params"]?["mimeType"]?.stringValue)
        }
        #expect(mimeTypes == [nil, nil, nil, nil, "image/jpeg", "image/jpeg"])
        worker.closeStdin()
        #expect(try await worker.waitForExit() == 0)
    }

    @Test func aPortOutOfRangeIsAnInvalidURLAndCrashesNothing() async throws {
        let server = try await E2E.startServer()
        defer { Task { await server.shutdown() } }
        let worker = try WorkerProcess()
        let urls = [
            "http://127.0.0.1:70000/x.jpg", "http://[::1]:70000/x.jpg", "https://127.0.0.1:65536/x.jpg",
            "http://127.0.0.1:99999999999999999999/x.jpg", "http://127.0.0.1:0/x.jpg",
            server.url("/redirect-to?url=" + "http://127.0.0.1:70000/x.jpg".addingPercentEncoding(withAllowedCharacters: .alphanumerics)!),
        ]
        // A slow download in flight meanwhile must still end normally.
        worker.request(0, "download", ["url": .string(server.url("/files/testorig.jpg?chunk=1000&delayMs=20")), "token": "inflight"])
        for (i, url) in urls.enumerated() {
            worker.request(i + 1, "download", ["url": .string(url), "token": .int(Int64(i + 1))])
        }
        for i in 1...urls.count {
            let completed = try await worker.completion(.int(Int64(i)))
            #expect(Self.errorName(completed) == "InvalidURL", "\(urls[i - 1]): \(completed)")
        }
        #expect(try await worker.completion("inflight")["params"]?["outcome"] == "success")
        worker.closeStdin()
        #expect(try await worker.waitForExit() == 0)
    }

    // MARK: Memory bombs

    /// A real JPEG whose frame header claims 65500×65500.
    static func jpegClaiming(width: Int, height: Int) throws -> [UInt8] {
        var bytes = Array(try Data(contentsOf: E2E.samples.appendingPathComponent("testorig.jpg")))
        var at = 2
        while at + 9 < bytes.count {
            let marker = bytes[at + 1]
            let length = Int(bytes[at + 2]) << 8 | Int(bytes[at + 3])
            if (0xC0...0xC2).contains(marker) {
                bytes[at + 5] = UInt8(height >> 8)
                bytes[at + 6] = UInt8(height & 0xFF)
                bytes[at + 7] = UInt8(width >> 8)
                bytes[at + 8] = UInt8(width & 0xFF)
                return bytes
            }
            at += 2 + length
        }
        throw CancellationError()
    }

    @Test func aJPEGHeaderClaimingBillionsOfPixelsIsRefusedWithoutMemoryForEveryPath() async throws {
        let server = try await E2E.startServer()
        defer { Task { await server.shutdown() } }
        server.setFile("huge.jpg", try Self.jpegClaiming(width: 65500, height: 65500))
        let worker = try WorkerProcess()
        let outputs: [JSONValue] = [
            ["format": "rgba"], ["format": "rgba", "maxPixelSize": 256], ["format": "png", "maxPixelCount": 10000],
            ["format": "gray", "maxPixelSize": 64],
        ]
        let completions = try await Self.expectEveryPathFails(worker, server, "huge.jpg", outputs: outputs, with: "LimitExceeded")
        #expect(completions.allSatisfy { $0["params"]?["error"]?["data"]?["width"] == 65500 })
        // Before the fix, a scaled request decoded the header with no limit: 12 GB.
        #expect(try Self.peakMB(worker) < 200)
        worker.closeStdin()
        #expect(try await worker.waitForExit() == 0)
    }

    /// A small real PNG (from the samples) with an ancillary chunk claiming 2 GiB put before its
    /// image data.
    static func pngWithOversizeChunk(_ type: String) throws -> [UInt8] {
        let png = Array(try Data(contentsOf: E2E.samples.appendingPathComponent("basn2c08.png")))
        let ihdrEnd = 8 + 25
        return Array(png[..<ihdrEnd]) + PNGChunk.make(type, Array("Comment\u{0}\u{0}xxxxxxxxxxxxxxxxxxxx".utf8), claimedLength: 0x7FFF_FFFF)
            + Array(png[ihdrEnd...])
    }

    @Test(arguments: ["tEXt", "zTXt", "iTXt", "sPLT", "eXIf"])
    func aPNGChunkClaiming2GiBAllocatesNothing(type: String) async throws {
        let server = try await E2E.startServer()
        defer { Task { await server.shutdown() } }
        server.setFile("bomb.png", try Self.pngWithOversizeChunk(type))
        let worker = try WorkerProcess()
        let outputs: [JSONValue] = [["format": "rgba"], ["format": "rgba", "maxPixelSize": 8]]
        try await Self.expectEveryPathFails(worker, server, "bomb.png", outputs: outputs, with: "BadImageData")
        // Before the fix each decode touched 2 GiB.
        #expect(try Self.peakMB(worker) < 200)
        worker.closeStdin()
        #expect(try await worker.waitForExit() == 0)
    }

    /// Found by FuzzDecoders: a PNG header's size was turned into a scaling plan before the pixel
    /// limit was checked, and the pixel count overflowed: the worker crashed.
    @Test func aPNGHeaderAtTheLimitsOfItsFieldsFailsOnlyItsToken() async throws {
        let server = try await E2E.startServer()
        defer { Task { await server.shutdown() } }
        var png = Array(try Data(contentsOf: E2E.samples.appendingPathComponent("basn2c08.png")))
        png.replaceSubrange(16..<24, with: [0xFF, 0xFF, 0xFF, 0xF7, 0xF5, 0x00, 0x00, 0x00])
        png.replaceSubrange(29..<33, with: withUnsafeBytes(of: PNGChunk.crc32(png[12..<29]).bigEndian, Array.init))
        server.setFile("wide.png", png)
        let worker = try WorkerProcess()
        // libpng refuses a side over 2^31 - 1 ("Invalid IHDR data").
        let outputs: [JSONValue] = [["format": "png", "maxPixelCount": 100], ["format": "rgba", "maxPixelSize": 8], ["format": "rgba"]]
        try await Self.expectEveryPathFails(worker, server, "wide.png", outputs: outputs, with: "BadImageData")
        worker.closeStdin()
        #expect(try await worker.waitForExit() == 0)
    }

    // MARK: Deadlocks and runaways

    @Test func aBatchOfDownloadAndExitEndsTheWorker() async throws {
        let server = try await E2E.startServer()
        defer { Task { await server.shutdown() } }
        let worker = try WorkerProcess()
        let download = #"{"jsonrpc":"2.0","id":1,"method":"download","params":{"token":"t","url":"\#(server.url("/files/testorig.jpg"))"}}"#
        worker.send("[\(download),{\"jsonrpc\":\"2.0\",\"method\":\"exit\"}]\n")
        #expect(try await worker.waitForExit(timeout: .seconds(15)) == 1)
        #expect(worker.events("t").filter { $0["method"] == "download/completed" }.count == 1)
    }

    @Test func shutdownWithASuspendedQueueFinishesWhatWasAccepted() async throws {
        let server = try await E2E.startServer()
        defer { Task { await server.shutdown() } }
        let worker = try WorkerProcess()
        worker.request(1, "configure", ["suspended": true])
        _ = try await worker.response(1)
        worker.request(2, "download", ["url": .string(server.url("/files/testorig.jpg")), "token": "q"])
        _ = try await worker.response(2)
        worker.request(3, "shutdown")
        _ = try await worker.response(3, timeout: .seconds(15))
        #expect(try await worker.completion("q")["params"]?["outcome"] == "success")
        worker.notify("exit")
        #expect(try await worker.waitForExit() == 0)
    }

    @Test func eofWithASuspendedQueueDrainsIt() async throws {
        let server = try await E2E.startServer()
        defer { Task { await server.shutdown() } }
        let worker = try WorkerProcess()
        worker.request(1, "configure", ["suspended": true])
        worker.request(2, "download", ["url": .string(server.url("/files/testorig.jpg")), "token": "q"])
        _ = try await worker.response(2)
        worker.closeStdin()
        #expect(try await worker.waitForExit(timeout: .seconds(15)) == 0)
        #expect(try await worker.completion("q")["params"]?["outcome"] == "success")
    }

    @Test func aFIFOUnderTheFileRootIsRefusedAtOnce() async throws {
        let root = try E2E.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: root) }
        let fifo = root.appendingPathComponent("pipe.jpg").path
        #expect(mkfifo(fifo, 0o644) == 0)
        let worker = try WorkerProcess(arguments: ["--file-root", root.path])
        worker.request(1, "download", ["url": .string(URL(fileURLWithPath: fifo).absoluteString), "token": "f"])
        let completed = try await worker.completion("f", timeout: .seconds(10))
        #expect(Self.errorName(completed) == "InvalidDownloadOperation")
        worker.closeStdin()
        #expect(try await worker.waitForExit(timeout: .seconds(10)) == 0)
    }

    /// While the reader has stopped reading, the worker still reads stdin (a `cancelAll` acts at
    /// once) and starts no new fetch, so its output, and its memory, stay bounded.
    @Test func aPausedReaderHoldsTheQueueButNotTheInput() async throws {
        let server = try await E2E.startServer()
        defer { Task { await server.shutdown() } }
        var random = SplitMix(seed: 11)
        server.setFile("big.bin", random.bytes(1 << 20))
        let worker = try WorkerProcess(arguments: ["--max-concurrent-downloads", "2"])
        worker.pauseReading(true)
        let count = 150
        for i in 0..<count {
            worker.request(i, "download", [
                "url": .string(server.url("/files/big.bin?n=\(i)")), "token": .int(Int64(i)), "output": ["delivery": "inline"],
            ])
        }
        // About 1.4 MB of output each: past 8 MiB waiting, no new fetch may start.
        try await Task.sleep(for: .seconds(3))
        worker.request(1000, "cancelAll")
        try await Task.sleep(for: .seconds(1))
        let fetchedWhilePaused = server.hits("/files/big.bin")
        #expect(fetchedWhilePaused < 30, "fetches while the reader was paused: \(fetchedWhilePaused)")
        worker.pauseReading(false)
        let answer = try await worker.response(1000)
        #expect((answer["result"]?["cancelled"]?.integerValue ?? 0) >= Int64(count - 30), "\(answer)")
        for i in 0..<count {
            let terminals = worker.events(.int(Int64(i))).filter { $0["method"] == "download/completed" }
            #expect(terminals.count <= 1)
        }
        #expect(server.hits("/files/big.bin") == fetchedWhilePaused)
        worker.closeStdin()
        #expect(try await worker.waitForExit() == 0)
        for i in 0..<count {
            #expect(worker.events(.int(Int64(i))).filter { $0["method"] == "download/completed" }.count == 1)
        }
    }

    // MARK: Leaks

    @Test func credentialHeadersAreNotSentToAnotherOriginAfterARedirect() async throws {
        let origin = try await E2E.startServer()
        let other = try await TestHTTPServer.start()
        defer { Task { await origin.shutdown(); await other.shutdown() } }
        let worker = try WorkerProcess()
        worker.request(1, "configure", ["headers": ["Cookie": "default=1"]])
        _ = try await worker.response(1)
        let headers: JSONValue = ["Authorization": "Bearer secret", "Proxy-Authorization": "Basic c2VjcmV0", "X-Trace": "kept"]
        let away = other.url("/echo-headers").addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
        worker.request(2, "download", ["url": .string(origin.url("/redirect-to?url=\(away)")), "token": "away", "headers": headers])
        #expect(try await worker.completion("away")["params"]?["outcome"] == "success")
        let sent = Dictionary(other.lastHeaders("/echo-headers").map { ($0.0.lowercased(), $0.1) }, uniquingKeysWith: { a, _ in a })
        #expect(sent["authorization"] == nil)
        #expect(sent["proxy-authorization"] == nil)
        #expect(sent["cookie"] == nil)
        #expect(sent["x-trace"] == "kept")
        // The same origin keeps them.
        worker.request(3, "download", ["url": .string(origin.url("/redirect-to?url=%2Fecho-headers")), "token": "home", "headers": headers])
        #expect(try await worker.completion("home")["params"]?["outcome"] == "success")
        let home = Dictionary(origin.lastHeaders("/echo-headers").map { ($0.0.lowercased(), $0.1) }, uniquingKeysWith: { a, _ in a })
        #expect(home["authorization"] == "Bearer secret")
        #expect(home["cookie"] == "default=1")
    }

    @Test func aPasswordInTheURLIsUsedButNeverShown() async throws {
        let server = try await E2E.startServer()
        defer { Task { await server.shutdown() } }
        let worker = try WorkerProcess(arguments: ["--log-level", "trace"])
        let url = server.url("/auth/testorig.jpg").replacingOccurrences(of: "http://", with: "http://user:pass@")
        worker.request(1, "download", ["url": .string(url), "token": "a"])
        let completed = try await worker.completion("a")
        #expect(completed["params"]?["outcome"] == "success", "\(completed)")
        worker.request(2, "download", ["url": "http://user:pass@127.0.0.1:70000/x.jpg", "token": "b"])
        _ = try await worker.completion("b")
        worker.request(3, "status")
        _ = try await worker.response(3)
        worker.closeStdin()
        #expect(try await worker.waitForExit() == 0)
        let output = String(decoding: worker.rawOutput, as: UTF8.self)
        #expect(!output.contains("pass"), "\(output)")
        #expect(!worker.stderr.contains("user:pass"))
        #expect(worker.events("a").first?["params"]?["url"] == .string(server.url("/auth/testorig.jpg")))
    }

    /// At `trace`, AsyncHTTPClient logs each response head: a redirect's `Location` with a
    /// password in it, and `Set-Cookie` values. Neither reaches stderr.
    @Test func traceLogsCarryNoPasswordOfARedirectTargetAndNoCookie() async throws {
        let server = try await E2E.startServer()
        defer { Task { await server.shutdown() } }
        server.setFile("t.jpg", Array(try Data(contentsOf: E2E.samples.appendingPathComponent("testorig.jpg"))))
        let worker = try WorkerProcess(arguments: ["--log-level", "trace"])
        let target = server.url("/set-cookie/t.jpg").replacingOccurrences(of: "http://", with: "http://alice:S3cretPW@")
        let location = target.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
        worker.request(1, "download", ["url": .string(server.url("/redirect-to?url=\(location)")), "token": "r"])
        #expect(try await worker.completion("r")["params"]?["outcome"] == "success")
        worker.closeStdin()
        _ = try await worker.waitForExit()
        #expect(worker.stderr.contains("Location"), "AsyncHTTPClient's trace lines are there")
        #expect(!worker.stderr.contains("S3cretPW"), "the redirect target's password")
        #expect(!worker.stderr.contains("session=abc"), "the cookie's value")
    }

    /// `http://a:b@127.0.0.1:P\@evil/` names 127.0.0.1 for a browser (the URL standard reads `\`
    /// as `/` in http URLs), and for the worker: an allow-list in front of it sees the same host.
    @Test func aBackslashInTheAuthorityIsASlashAsInTheURLStandard() async throws {
        let server = try await E2E.startServer()
        defer { Task { await server.shutdown() } }
        server.setFile("w.jpg", Array(try Data(contentsOf: E2E.samples.appendingPathComponent("testorig.jpg"))))
        let worker = try WorkerProcess()
        let base = server.url("")
        let authority = base.replacingOccurrences(of: "http://", with: "http://user:pass@")
        worker.request(1, "download", ["url": .string(authority + "\\@evil.invalid/"), "token": "at"])
        let at = try await worker.completion("at")
        // Reached the loopback server (which has no file there), not evil.invalid.
        #expect(at["params"]?["error"]?["data"]?["statusCode"] == 404, "\(at)")
        #expect(at["params"]?["url"] == .string(base + "\\@evil.invalid/"), "the URL as sent, without its password")
        worker.request(2, "download", ["url": .string(base + "\\files\\w.jpg"), "token": "path"])
        let path = try await worker.completion("path")
        #expect(path["params"]?["outcome"] == "success", "\(path)")
        #expect(path["params"]?["finalUrl"] == .string(base + "/files/w.jpg"))
        // A redirect to `\\host/...` is scheme-relative, as a browser follows it.
        let away = "\\\\" + base.dropFirst("http://".count) + "/files/w.jpg"
        worker.request(3, "download", [
            "url": .string(server.url("/redirect-to?url=\(away.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!)")), "token": "redirect",
        ])
        let redirected = try await worker.completion("redirect")
        #expect(redirected["params"]?["finalUrl"] == .string(base + "/files/w.jpg"), "\(redirected)")
    }

    // MARK: Wrong results

    @Test func aFileDeliveredIntoADirectoryIsNamedForItsBytesNotTheServer() async throws {
        let server = try await E2E.startServer()
        defer { Task { await server.shutdown() } }
        let jpeg = Array(try Data(contentsOf: E2E.samples.appendingPathComponent("testorig.jpg")))
        server.setFile("x.exe", jpeg)
        server.setFile("photo.jpeg", jpeg)
        server.setFile("y.exe", Array("MZ not an image".utf8))
        let dir = try E2E.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let worker = try WorkerProcess()
        for (i, name) in ["x.exe", "photo.jpeg", "y.exe"].enumerated() {
            worker.request(i, "download", [
                "url": .string(server.url("/files/\(name)")), "token": .int(Int64(i)), "output": ["delivery": "file", "dir": .string(dir.path)],
            ])
        }
        var names: [String] = []
        for i in 0..<3 {
            let path = try await worker.completion(.int(Int64(i)))["params"]?["path"]?.stringValue
            names.append(URL(fileURLWithPath: path ?? "").lastPathComponent)
        }
        #expect(names == ["x.jpg", "photo.jpeg", "y.bin"])
    }

    @Test func aTruncatedPNGFailsInEveryPath() async throws {
        let server = try await E2E.startServer()
        defer { Task { await server.shutdown() } }
        let png = Array(try Data(contentsOf: E2E.samples.appendingPathComponent("basn2c08.png")))
        server.setFile("no-iend.png", Array(png.dropLast(12)))
        server.setFile("half.png", Array(png.prefix(png.count / 2)))
        let worker = try WorkerProcess()
        for name in ["no-iend.png", "half.png"] {
            let outputs: [JSONValue] = [["format": "rgba"], ["format": "png", "maxPixelSize": 8]]
            try await Self.expectEveryPathFails(worker, server, name, outputs: outputs, with: "BadImageData")
        }
    }

    /// A 5000×5000 PNG that compresses to little: a gradient with a pattern.
    static func largePNG(interlaced: Bool = false) throws -> [UInt8] {
        let (w, h) = (5000, 5000)
        var pixels = [UInt8](repeating: 0, count: w * h * 3)
        for y in 0..<h {
            for x in 0..<w {
                let i = (y * w + x) * 3
                pixels[i] = UInt8(truncatingIfNeeded: x / 20)
                pixels[i + 1] = UInt8(truncatingIfNeeded: y / 20)
                pixels[i + 2] = UInt8(truncatingIfNeeded: (x ^ y) & 0x3F)
            }
        }
        return try ImageDecoders.encodePNG(DecodedImage(width: w, height: h, layout: .rgb, pixels: pixels, format: .png))
    }

    /// With `maxPixelSize`, a progressive decode no longer holds (and copies, for each partial
    /// image) the full-size image: 5000×5000 is 100 MB of RGBA.
    @Test func aProgressiveThumbnailNeverHoldsTheFullSizeImage() async throws {
        let server = try await E2E.startServer()
        defer { Task { await server.shutdown() } }
        server.setFile("large.png", try await offThePool { try Self.largePNG() })
        let worker = try WorkerProcess()
        worker.request(1, "download", [
            "url": .string(server.url("/files/large.png?chunk=65536")), "token": "p", "progressive": true,
            "output": ["format": "png", "maxPixelSize": 256, "partialIntervalMs": 0],
        ])
        let completed = try await worker.completion("p", timeout: .seconds(120))
        #expect(completed["params"]?["width"] == 256, "\(completed)")
        let partials = worker.events("p").filter { $0["method"] == "download/partialImage" }
        #expect(partials.count >= 2)
        #expect(partials.allSatisfy { $0["params"]?["width"] == 256 })
        #expect(try Self.peakMB(worker) < 90)
    }

    /// The scaled progressive decode gives the pixels of the whole-buffer path, for every token
    /// size; a token that joins later asking more than the decode holds still gets its size.
    @Test(arguments: ["basn2c08.png", "testimgp.jpg", "testorig.jpg", "basi6a08.png"])
    func aScaledProgressiveDecodeMatchesTheWholeDecode(name: String) async throws {
        let server = try await E2E.startServer()
        defer { Task { await server.shutdown() } }
        let worker = try WorkerProcess()
        for (i, output) in ([["format": "rgba", "maxPixelSize": 20], ["format": "gray", "maxPixelCount": 500]] as [JSONValue]).enumerated() {
            for progressive in [true, false] {
                let token = "\(i)-\(progressive)"
                worker.request(0, "download", [
                    "url": .string(server.url("/files/\(name)?chunk=50&token=\(token)")), "token": .string(token),
                    "progressive": .bool(progressive), "output": output.objectValue.map { var o = $0; o["delivery"] = "inline"; return .object(o) }!,
                ])
            }
            let p = try await worker.completion(.string("\(i)-true"))["params"]
            let w = try await worker.completion(.string("\(i)-false"))["params"]
            #expect(p?["outcome"] == "success" && p?["data"] != nil, "\(String(describing: p))")
            #expect(p?["data"] == w?["data"] && p?["width"] == w?["width"] && p?["height"] == w?["height"], "\(name) \(output)")
        }
        // A late joiner asking the full size, while a thumbnail decode is under way.
        let url = JSONValue.string(server.url("/files/\(name)?chunk=50&pauseAt=60&gate=late"))
        worker.request(1, "download", ["url": url, "token": "thumb", "progressive": true, "output": ["format": "rgba", "maxPixelSize": 8]])
        try await worker.waitFor("thumb's response") { $0["method"] == "download/response" && $0["params"]?["token"] == "thumb" }
        worker.request(2, "download", ["url": url, "token": "full", "output": ["format": "rgba", "delivery": "inline"]])
        _ = try await worker.response(2)
        server.openGate("late")
        let full = try await worker.completion("full")["params"]
        let reference = try ImageDecoders.decode(Array(try Data(contentsOf: E2E.samples.appendingPathComponent(name))))
        #expect(full?["width"] == .int(Int64(reference.width)), "\(String(describing: full))")
        #expect(full?["data"] == .string(Data(reference.pixels).base64EncodedString()))
        #expect(try await worker.completion("thumb")["params"]?["outcome"] == "success")
        #expect(server.hits("/files/\(name)") == 5, "the late joiner shared the fetch")
    }

    @Test func aDecodeFailureDoesNotBlockTheURLForOriginalBytes() async throws {
        let server = try await E2E.startServer()
        defer { Task { await server.shutdown() } }
        let png = Array(try Data(contentsOf: E2E.samples.appendingPathComponent("basn2c08.png")))
        server.setFile("broken.png", Array(png.prefix(40)) + Array(repeating: 0x55, count: 200))
        let worker = try WorkerProcess()
        worker.request(1, "download", ["url": .string(server.url("/files/broken.png")), "token": "d", "output": ["format": "png"]])
        #expect(Self.errorName(try await worker.completion("d")) == "BadImageData")
        worker.request(2, "download", ["url": .string(server.url("/files/broken.png")), "token": "o"])
        #expect(try await worker.completion("o")["params"]?["outcome"] == "success")
        worker.request(3, "status")
        #expect(try await worker.response(3)["result"]?["blockedURLs"] == 0)
    }

    // MARK: Protocol

    @Test func aBadContentLengthHeaderCostsOneErrorAndAMessageCutByEOFIsAnswered() async throws {
        let worker = try WorkerProcess()
        let status = #"{"jsonrpc":"2.0","id":7,"method":"status"}"#
        worker.send("Content-Length: nope\r\n\r\n{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"status\"}")
        worker.send("Content-Length: \(status.utf8.count)\r\n\r\n\(status)")
        worker.send("Content-Length: 100\r\n\r\n{\"jsonrpc\"")
        worker.closeStdin()
        #expect(try await worker.waitForExit() == 0)
        // The answers, in Content-Length framing: the bad block's error, status 7, the cut message's.
        let raw = String(decoding: worker.rawOutput, as: UTF8.self)
        let bodies = raw.components(separatedBy: "\r\n\r\n").dropFirst().map { $0.components(separatedBy: "Content-Length:")[0] }
        let answers = try bodies.map { try JSONParser.parse($0) }
        #expect(answers.count == 3, "\(raw)")
        #expect(answers.filter { $0["error"]?["code"] == -32700 }.count == 2, "\(raw)")
        #expect(answers.contains { $0["id"] == 7 && $0["result"] != nil }, "\(raw)")
    }

    /// A client that declares too long a Content-Length and then waits for its answer (stdin
    /// left open) is answered once its input goes quiet, and the next message is read as usual.
    @Test func aTooLongContentLengthIsAnsweredWhileTheClientWaits() async throws {
        let worker = try WorkerProcess()
        let status = #"{"jsonrpc":"2.0","id":4,"method":"status"}"#
        worker.send("Content-Length: \(status.utf8.count + 40)\r\n\r\n\(status)")
        #expect(try await worker.response(4, timeout: .seconds(10))["result"] != nil)
        try await worker.waitFor("the bad length's error", timeout: .seconds(10)) { $0["error"]?["code"] == -32700 }
        let next = #"{"jsonrpc":"2.0","id":5,"method":"status"}"#
        worker.send("Content-Length: \(next.utf8.count)\r\n\r\n\(next)")
        #expect(try await worker.response(5, timeout: .seconds(10))["result"] != nil)
        worker.closeStdin()
        #expect(try await worker.waitForExit() == 0)
    }

    /// An LSP client may open with `Content-Type` before `Content-Length`: still that framing.
    @Test func contentLengthFramingMayOpenWithAnotherHeader() async throws {
        let worker = try WorkerProcess()
        let status = #"{"jsonrpc":"2.0","id":9,"method":"status","params":null}"#
        worker.send("Content-Type: application/vscode-jsonrpc; charset=utf-8\r\nContent-Length: \(status.utf8.count)\r\n\r\n\(status)")
        worker.closeStdin()
        #expect(try await worker.waitForExit() == 0)
        let raw = String(decoding: worker.rawOutput, as: UTF8.self)
        #expect(raw.hasPrefix("Content-Length: "), "answered in the client's framing: \(raw)")
        let body = try #require(raw.components(separatedBy: "\r\n\r\n").dropFirst().first)
        let answer = try JSONParser.parse(body)
        #expect(answer["id"] == 9 && answer["result"]?["framing"] == "content-length", "\(raw)")
    }

    @Test func numericIdsAreEchoedAsSent() async throws {
        let worker = try WorkerProcess()
        for id in ["18446744073709551615", "1e2", "-0", "2.50"] {
            worker.send(#"{"jsonrpc":"2.0","id":\#(id),"method":"status"}"# + "\n")
        }
        worker.closeStdin()
        #expect(try await worker.waitForExit() == 0)
        let lines = worker.rawLines.map { String(decoding: $0, as: UTF8.self) }
        for id in ["18446744073709551615", "1e2", "-0", "2.50"] {
            #expect(lines.contains { $0.hasPrefix(#"{"jsonrpc":"2.0","id":\#(id),"result""#) }, "\(id): \(lines)")
        }
    }
}
