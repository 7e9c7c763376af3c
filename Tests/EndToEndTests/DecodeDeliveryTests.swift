import Foundation
import ImageDecoding
import ImageWorkerProtocol
import Testing
import TestSupport

/// Decoded delivery through the binary: formats, shared decodes, errors that fail only their tokens.
@Suite struct DecodeDeliveryTests {
    func sample(_ name: String) throws -> [UInt8] { Array(try Data(contentsOf: E2E.samples.appendingPathComponent(name))) }

    @Test func coalescedTokensShareOneDecodeAndEachGetsItsOwnOutput() async throws {
        let server = try await E2E.startServer()
        defer { Task { await server.shutdown() } }
        let out = try E2E.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: out) }
        let worker = try WorkerProcess()
        let url = JSONValue.string(server.url("/files/testimgp.jpg?gate=g"))
        worker.request(1, "download", ["url": url, "token": "a", "output": ["format": "png", "delivery": "file", "dir": .string(out.path)]])
        worker.request(2, "download", ["url": url, "token": "b", "output": ["format": "png", "delivery": "inline"]])
        worker.request(3, "download", ["url": url, "token": "c", "output": ["format": "rgba"]])
        worker.request(4, "download", ["url": url, "token": "d"])
        for id in 1...4 { _ = try await worker.response(id) }
        server.openGate("g")
        let a = try await worker.completion("a")["params"]
        let b = try await worker.completion("b")["params"]
        let c = try await worker.completion("c")["params"]
        let d = try await worker.completion("d")["params"]
        #expect(server.hits("/files/testimgp.jpg") == 1)
        worker.request(5, "status")
        #expect(try await worker.response(5)["result"]?["decodes"] == 2, "png (a, b) once, rgba (c) once, original (d) none")
        // The PNG file and the inline PNG decode to the same pixels as decoding the JPEG here.
        let reference = try ImageDecoders.decode(try sample("testimgp.jpg"))
        let path = try #require(a?["path"]?.stringValue)
        let file = Array(try Data(contentsOf: URL(fileURLWithPath: path)))
        #expect(try ImageDecoders.decode(file) == DecodedImage(width: 227, height: 149, layout: .rgba, pixels: reference.pixels, format: .png))
        #expect(file[25] == 2, "a JPEG has no alpha: an RGB PNG")
        let encoded = try #require(b?["data"]?.stringValue)
        let inline = Array(try #require(Data(base64Encoded: encoded)))
        #expect(inline == file)
        #expect(c?["width"] == 227 && c?["stride"] == .int(227 * 4) && c?["pixelFormat"] == "rgba")
        #expect(d?["mimeType"] == "image/jpeg" && d?["width"] == nil)
        worker.closeStdin()
        #expect(try await worker.waitForExit() == 0)
    }

    /// One decode slot, many tokens: each decode is let in on the thread that ended the one before
    /// (and that thread renders and writes its token's file). Files, encodings, raw pixels, a body
    /// that is no image and cancels while tokens wait for the slot: every token ends exactly once,
    /// each with its own output, and the stage is empty after.
    @Test func oneDecodeSlotServesEveryKindOfOutputAndCancelsLoseNothing() async throws {
        let server = try await E2E.startServer()
        defer { Task { await server.shutdown() } }
        let out = try E2E.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: out) }
        server.setFile("broken.jpg", [0xFF, 0xD8, 0xFF, 0xE0] + Array("this is not really a JPEG".utf8))
        let worker = try WorkerProcess()
        worker.request(1, "configure", ["decodeConcurrency": 1])
        _ = try await worker.response(1)
        let count = 40
        func token(_ n: Int) -> JSONValue { .string("t\(n)") }
        for n in 0..<count {
            let path = n % 7 == 6 ? "/files/broken.jpg" : (n % 2 == 0 ? "/files/testorig.jpg" : "/files/basn2c08.png")
            let output: JSONValue
            switch n % 4 {
            case 0: output = ["format": "png", "maxPixelSize": 64, "delivery": "file", "dir": .string(out.path), "name": .string("f\(n).png")]
            case 1: output = ["format": "rgba", "delivery": "none"]
            case 2: output = ["format": "jpeg", "delivery": "inline"]
            default: output = ["format": "rgb", "delivery": "file", "dir": .string(out.path), "name": .string("f\(n).rgb")]
            }
            worker.request(100 + n, "download", ["url": .string(server.url("\(path)?n=\(n)")), "token": token(n), "output": output])
            if n % 5 == 4 { worker.request(200 + n, "cancel", ["token": token(n)]) }
        }
        for n in 0..<count {
            let done = try await worker.completion(token(n))["params"]
            let context = Comment(rawValue: "token \(n): \(String(describing: done))")
            let terminals = worker.events(token(n)).filter { $0["method"] == .string(WorkerEvent.completed) }
            #expect(terminals.count == 1, context)
            let outcome = done?["outcome"]?.stringValue
            if n % 5 == 4, outcome == "cancelled" { continue }
            if n % 7 == 6 {
                #expect(outcome == "error", context)
                continue
            }
            #expect(outcome == "success", context)
            let (width, height) = n % 2 == 0 ? (227, 149) : (32, 32)
            switch n % 4 {
            case 0:
                let file = Array(try Data(contentsOf: out.appendingPathComponent("f\(n).png")))
                let image = try ImageDecoders.decode(file)
                #expect(max(image.width, image.height) == min(64, max(width, height)), context)
            case 1:
                #expect(done?["width"] == .int(Int64(width)) && done?["data"] == nil && done?["path"] == nil, context)
            case 2:
                let encoded = try #require(done?["data"]?.stringValue)
                let data = Array(try #require(Data(base64Encoded: encoded)))
                #expect(try ImageDecoders.decode(data).width == width, context)
            default:
                let file = try Data(contentsOf: out.appendingPathComponent("f\(n).rgb"))
                #expect(file.count == width * height * 3, context)
            }
        }
        worker.request(2, "status")
        let stage = try await worker.response(2)["result"]?["decodeStage"]
        #expect(stage?["running"] == 0 && stage?["waiting"] == 0 && stage?["bitmapBytes"] == 0, "\(String(describing: stage))")
        worker.closeStdin()
        #expect(try await worker.waitForExit() == 0)
    }

    /// `png` writes RGB when every pixel is opaque (a JPEG, an RGB PNG), RGBA when any is not, at
    /// full size and scaled, with the pixels a decode here gives.
    @Test func pngOutputDropsOnlyAnOpaqueAlpha() async throws {
        let server = try await E2E.startServer()
        defer { Task { await server.shutdown() } }
        let worker = try WorkerProcess()
        let cases: [(file: String, maxPixelSize: Int?, colorType: UInt8)] = [
            ("testorig.jpg", nil, 2), ("testorig.jpg", 100, 2), ("basn2c08.png", nil, 2), ("basn2c08.png", 16, 2),
            ("basi6a08.png", nil, 6), ("basi6a08.png", 16, 6),
        ]
        for (i, c) in cases.enumerated() {
            var output: JSONObject = ["format": "png", "delivery": "inline"]
            if let size = c.maxPixelSize { output["maxPixelSize"] = JSONValue(size) }
            worker.request(i + 1, "download", ["url": .string(server.url("/files/\(c.file)")), "token": .string("t\(i)"), "output": .object(output)])
        }
        for (i, c) in cases.enumerated() {
            let params = try await worker.completion(.string("t\(i)"))["params"]
            let data = try #require(params?["data"]?.stringValue)
            let png = Array(try #require(Data(base64Encoded: data)))
            #expect(png[25] == c.colorType, "\(c.file) at \(c.maxPixelSize ?? 0)")
            var reference = try ImageDecoders.decode(try sample(c.file))
            if let size = c.maxPixelSize {
                var options = DecodeOptions()
                options.layout = c.colorType == 2 ? .rgb : .rgba
                reference = try ImageDecoders.decode(try sample(c.file), options: options, maxPixelSize: size, maxPixelCount: nil)
            }
            let decoded = try ImageDecoders.decode(png)
            #expect(decoded.pixels == reference.converted(to: .rgba).pixels, "\(c.file) at \(c.maxPixelSize ?? 0)")
        }
        worker.closeStdin()
        #expect(try await worker.waitForExit() == 0)
    }

    @Test func aBadImageFailsOnlyTheTokensThatDecodeIt() async throws {
        let server = try await E2E.startServer()
        defer { Task { await server.shutdown() } }
        server.setFile("broken.jpg", [0xFF, 0xD8, 0xFF, 0xE0] + Array("this is not really a JPEG".utf8))
        server.setFile("empty.gif", Array("GIF89a".utf8) + [1, 0, 1, 0, 0, 0, 0, 0x3B])
        server.setFile("pic.bmp", Array("BM".utf8) + [UInt8](repeating: 0, count: 60))
        var huge = try sample("basn2c08.png")
        huge[16...23] = [0, 0, 0xFF, 0xFF, 0, 0, 0xFF, 0xFF]  // 65535×65535 (the IHDR CRC no longer matches)
        server.setFile("huge.png", huge)
        server.setFile("cut.jpg", Array(try sample("testimgp.jpg").prefix(3000)))
        let worker = try WorkerProcess()
        let cases: [(String, String, String)] = [
            ("broken", "broken.jpg", "BadImageData"), ("gif", "empty.gif", "BadImageData"), ("bmp", "pic.bmp", "UnsupportedFormat"),
            ("cut", "cut.jpg", "BadImageData"), ("ok", "testorig.jpg", ""),
        ]
        for (i, (token, file, _)) in cases.enumerated() {
            let url = JSONValue.string(server.url("/files/\(file)"))
            worker.request(i * 2, "download", ["url": url, "token": .string(token), "output": ["format": "png"]])
            worker.request(i * 2 + 1, "download", ["url": url, "token": .string(token + "-bytes")])
        }
        for (token, _, name) in cases {
            let decoded = try await worker.completion(.string(token))["params"]
            if name.isEmpty {
                #expect(decoded?["outcome"] == "success")
            } else {
                #expect(decoded?["error"]?["data"]?["name"] == .string(name), "\(token): \(String(describing: decoded))")
            }
            // The same bytes, asked as they are, succeed: only the decoding tokens fail.
            #expect(try await worker.completion(.string(token + "-bytes"))["params"]?["outcome"] == "success")
        }
        let cut = try await worker.completion("cut")["params"]?["error"]?["message"]?.stringValue ?? ""
        #expect(cut.contains("truncated"))
        worker.request(100, "download", ["url": .string(server.url("/files/huge.png")), "token": "huge", "output": ["format": "rgba"]])
        let huge0 = try await worker.completion("huge")["params"]?["error"]
        // libpng checks the IHDR CRC first; either way the token ends with a clean error.
        #expect(huge0?["data"]?["name"] == "BadImageData" || huge0?["data"]?["name"] == "LimitExceeded")
        worker.closeStdin()
        #expect(try await worker.waitForExit() == 0)
    }

    /// Damaged WebP, GIF and AVIF bodies (cut short, or overwritten after their header) end their
    /// decoding tokens with BadImageData, whole and progressive, while a sound file of each format
    /// and the same bytes asked as they came succeed.
    @Test func damagedWebPGIFAndAVIFFailOnlyTheirTokens() async throws {
        let server = try await E2E.startServer()
        defer { Task { await server.shutdown() } }
        var names: [String] = []
        for file in ["test.webp", "beacon.gif", "extended_pixi.avif"] {
            let sound = try sample(file)
            var damaged = sound
            for i in stride(from: sound.count / 2, to: sound.count, by: 7) { damaged[i] ^= 0xA5 }
            server.setFile("cut-\(file)", Array(sound.prefix(sound.count * 2 / 3)))
            server.setFile("damaged-\(file)", damaged)
            names += ["cut-\(file)", "damaged-\(file)"]
        }
        let worker = try WorkerProcess()
        var id = 0
        func ask(_ file: String, _ token: String, _ progressive: Bool, _ format: String) {
            id += 1
            var params: JSONObject = ["url": .string(server.url("/files/\(file)")), "token": .string(token), "output": ["format": .string(format)]]
            if progressive { params["progressive"] = true }
            worker.request(id, "download", .object(params))
        }
        for name in names {
            ask(name, "\(name) whole", false, "png")
            ask(name, "\(name) progressive", true, "png")
            ask(name, "\(name) bytes", false, "original")
        }
        for file in ["test.webp", "beacon.gif", "extended_pixi.avif"] { ask(file, file, true, "jpeg") }
        for name in names {
            for way in ["whole", "progressive"] {
                let params = try await worker.completion(.string("\(name) \(way)"))["params"]
                // A damaged body may still hold a decodable image (a flipped bit in a lossy WebP's
                // pixels; a GIF cut or damaged after its first frame, shown as browsers show it):
                // then it succeeds; it never ends otherwise.
                if (name.hasPrefix("cut-") && !name.hasSuffix(".gif")) || params?["outcome"] != "success" {
                    #expect(params?["error"]?["data"]?["name"] == "BadImageData", "\(name) \(way): \(String(describing: params))")
                }
            }
            #expect(try await worker.completion(.string("\(name) bytes"))["params"]?["outcome"] == "success")
        }
        for file in ["test.webp", "beacon.gif", "extended_pixi.avif"] {
            let params = try await worker.completion(.string(file))["params"]
            #expect(params?["outcome"] == "success" && params?["mimeType"] == "image/jpeg", "\(file): \(String(describing: params))")
        }
        worker.closeStdin()
        #expect(try await worker.waitForExit() == 0)
    }

    /// A JPEG's EXIF orientation (either byte order; a baseline and a progressive file) is reported
    /// on completion, and with `applyOrientation` the pixels are delivered upright (and described
    /// upright when delivered nowhere).
    @Test func exifOrientationIsReportedAndAppliedWhenAsked() async throws {
        let server = try await E2E.startServer()
        defer { Task { await server.shutdown() } }
        let worker = try WorkerProcess()
        var id = 0
        for (file, littleEndian) in [("testorig.jpg", true), ("testimgp.jpg", false)] {
            let original = try sample(file)
            server.setFile("turned-\(file)", ExifSegment.inserting(orientation: 6, littleEndian: littleEndian, into: original))
            let url = JSONValue.string(server.url("/files/turned-\(file)"))
            for (token, apply) in [("\(file) as stored", false), ("\(file) upright", true)] {
                id += 1
                worker.request(
                    id, "download",
                    ["url": url, "token": .string(token), "output": ["format": "rgba", "delivery": "inline", "applyOrientation": .bool(apply)]])
            }
            id += 1
            worker.request(
                id, "download",
                ["url": url, "token": .string("\(file) upright, nowhere"),
                 "output": ["format": "rgba", "delivery": "none", "applyOrientation": true]])
            var reference = try ImageDecoders.decode(original)
            let stored = try await worker.completion(.string("\(file) as stored"))["params"]
            #expect(stored?["orientation"] == 6 && stored?["width"] == 227 && stored?["height"] == 149)
            #expect(Data(base64Encoded: stored?["data"]?.stringValue ?? "").map(Array.init) == reference.pixels)
            reference.orientation = 6
            let upright = try await worker.completion(.string("\(file) upright"))["params"]
            #expect(upright?["orientation"] == 6 && upright?["width"] == 149 && upright?["height"] == 227)
            #expect(Data(base64Encoded: upright?["data"]?.stringValue ?? "").map(Array.init) == reference.applyingOrientation().pixels)
            // Delivered nowhere, the image is only described: upright sides and stride all the same.
            let described = try await worker.completion(.string("\(file) upright, nowhere"))["params"]
            #expect(described?["width"] == 149 && described?["height"] == 227 && described?["stride"] == 596 && described?["data"] == nil)
        }
        worker.closeStdin()
        #expect(try await worker.waitForExit() == 0)
    }

    /// A PNG's `eXIf` chunk (after the image data) and a WebP's `EXIF` chunk give their
    /// orientation as a JPEG's APP1 does: reported on completion, and with `applyOrientation` the
    /// pixels come upright, whole, scaled, and from a progressive decode (whose final image takes
    /// the orientation from the whole file).
    @Test func pngAndWebPExifOrientationIsReportedAndApplied() async throws {
        let server = try await E2E.startServer()
        defer { Task { await server.shutdown() } }
        let worker = try WorkerProcess()
        let block = ExifSegment.tiff(orientation: 6, littleEndian: true)
        let png = try sample("basn2c08.png")
        let webp = try sample("test.webp")
        let files: [(name: String, bytes: [UInt8], original: [UInt8])] = [
            ("turned.png", ExifSegment.png(png, block: block, afterImageData: true), png),
            ("turned.webp", ExifSegment.webp(webp, width: 128, height: 128, block: block), webp),
        ]
        var id = 0
        for file in files {
            server.setFile(file.name, file.bytes)
            let url = JSONValue.string(server.url("/files/\(file.name)"))
            for (token, apply, progressive, size) in [
                ("as stored", false, false, nil), ("upright", true, false, nil), ("progressive upright", true, true, nil),
                ("scaled upright", true, false, 16),
            ] as [(String, Bool, Bool, Int?)] {
                id += 1
                var output: JSONObject = ["format": "rgba", "delivery": "inline", "applyOrientation": .bool(apply)]
                if let size { output["maxPixelSize"] = JSONValue(size) }
                var params: JSONObject = ["url": url, "token": .string("\(file.name) \(token)"), "output": .object(output)]
                if progressive { params["progressive"] = true }
                worker.request(id, "download", .object(params))
            }
        }
        for file in files {
            var reference = try ImageDecoders.decode(file.original)
            let (w, h) = (reference.width, reference.height)
            let stored = try await worker.completion(.string("\(file.name) as stored"))["params"]
            #expect(stored?["orientation"] == 6 && stored?["width"] == JSONValue(w) && stored?["height"] == JSONValue(h), "\(String(describing: stored))")
            #expect(Data(base64Encoded: stored?["data"]?.stringValue ?? "").map(Array.init) == reference.pixels)
            reference.orientation = 6
            let upright = reference.applyingOrientation().pixels
            for token in ["upright", "progressive upright"] {
                let params = try await worker.completion(.string("\(file.name) \(token)"))["params"]
                #expect(params?["orientation"] == 6 && params?["width"] == JSONValue(h) && params?["height"] == JSONValue(w), "\(file.name) \(token)")
                #expect(Data(base64Encoded: params?["data"]?.stringValue ?? "").map(Array.init) == upright, "\(file.name) \(token)")
            }
            let scaled = try await worker.completion(.string("\(file.name) scaled upright"))["params"]
            #expect(scaled?["orientation"] == 6 && scaled?["width"] == JSONValue(16 * h / w) && scaled?["height"] == 16, "\(String(describing: scaled))")
        }
        worker.closeStdin()
        #expect(try await worker.waitForExit() == 0)
    }
}
