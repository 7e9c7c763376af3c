import CImageCodecs
import Foundation
import ImageDecoding
import TestSupport
import Testing

/// The shared test corpora (`../shared/corpora` beside the repository), and reference decoders.
enum Corpora {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("shared/corpora")

    static let present = FileManager.default.fileExists(atPath: root.appendingPathComponent("pngsuite").path)
    static let absent = "../shared/corpora is not beside the repository: the corpus tests are skipped"

    /// The repository's own corpora of WebP, GIF and AVIF files (`Tests/Corpora`), always there.
    static let local = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Corpora")

    static func localFiles(_ folder: String, suffix: String) -> [String] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: local.appendingPathComponent(folder).path)) ?? []
        return names.filter { $0.hasSuffix(suffix) }.sorted().map { folder + "/" + $0 }
    }

    static func localBytes(_ path: String) throws -> [UInt8] {
        Array(try Data(contentsOf: local.appendingPathComponent(path)))
    }

    /// Whether `error` is a decoder's limit error (saying `text`, when given).
    static func isLimit(_ error: any Error, saying text: String = "") -> Bool {
        guard case .limit(let message, _, _)? = error as? DecodeError else { return false }
        return text.isEmpty || message.contains(text)
    }

    /// Decodes the local file `path` with at most `maxFrames` frames, expecting the frame
    /// limit's error saying `text`.
    static func expectFrameLimit(_ path: String, maxFrames: Int, saying text: String, sourceLocation: SourceLocation = #_sourceLocation) {
        var options = DecodeOptions()
        options.maxFrames = maxFrames
        #expect(sourceLocation: sourceLocation) {
            _ = try ImageDecoders.decode(try localBytes(path), options: options)
        } throws: { isLimit($0, saying: text) }
    }

    /// A binary PAM (P7, as `dwebp -pam` writes): RGBA, RGB or grey, 8-bit.
    static func pam(_ data: [UInt8]) -> DecodedImage? {
        guard let end = data.indices.first(where: { i in i + 6 <= data.count && data[i..<(i + 6)].elementsEqual("ENDHDR".utf8) }) else { return nil }
        var fields: [String: Int] = [:]
        for line in String(decoding: data[..<end], as: UTF8.self).split(separator: "\n") {
            let parts = line.split(separator: " ")
            if parts.count == 2, let value = Int(parts[1]) { fields[String(parts[0])] = value }
        }
        guard let width = fields["WIDTH"], let height = fields["HEIGHT"], let depth = fields["DEPTH"] else { return nil }
        let layout: PixelLayout = depth == 4 ? .rgba : depth == 3 ? .rgb : .gray
        let pixels = Array(data[(end + 7)...])
        guard pixels.count == width * height * depth else { return nil }
        return DecodedImage(width: width, height: height, layout: layout, pixels: pixels, format: .webp)
    }

    static func files(_ folder: String, suffix: String) -> [String] {
        guard present else { return [] }
        let directory = root.appendingPathComponent(folder)
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
        return names.filter { $0.hasSuffix(suffix) }.sorted().map { folder + "/" + $0 }
    }

    static func bytes(_ path: String) throws -> [UInt8] {
        Array(try Data(contentsOf: root.appendingPathComponent(path)))
    }

    /// Feeds `data` in pieces of `chunk` bytes; returns the decoder and how many partial updates came.
    static func feed(_ data: [UInt8], format: ImageFormat, chunk: Int, options: DecodeOptions = DecodeOptions())
        throws(DecodeError) -> (decoder: any IncrementalImageDecoder, updates: Int)
    {
        let decoder = try ImageDecoders.makeIncremental(for: format, options: options)
        var updates = 0
        var offset = 0
        repeat {
            let end = min(data.count, offset + chunk)
            let progress = try decoder.feed(Array(data[offset..<end]), isLast: end == data.count)
            if progress.contains(.pixels) { updates += 1 }
            offset = end
        } while offset < data.count
        return (decoder, updates)
    }

    /// djpeg's output (libjpeg-turbo-progs), as an image: P6 → RGB, P5 → gray.
    static func djpeg(_ path: String) throws -> DecodedImage? {
        try djpeg(file: root.appendingPathComponent(path))
    }

    /// djpeg's pixels for a JPEG file (`arguments` such as `-scale 1/2`), or nil when it fails.
    static func djpeg(file: URL, _ arguments: [String] = []) throws -> DecodedImage? {
        guard let data = try output(of: "djpeg", ["-pnm"] + arguments + [file.path]), data.count > 2 else { return nil }
        return pnm(data)
    }

    /// A tool's standard output, or nil when it exits with 1 (djpeg and cjpeg's failure; 2 is warnings).
    static func output(of tool: String, _ arguments: [String]) throws -> [UInt8]? {
        let run = try ChildExit.output(of: "/usr/bin/env", [tool] + arguments)
        return run.status == 1 ? nil : run.stdout
    }

    /// A binary PNM (P6 colour or P5 grey, 8-bit), as djpeg writes and cjpeg reads.
    static func pnm(_ data: [UInt8]) -> DecodedImage? {
        // "P6\n<w> <h>\n255\n" then the pixels.
        var fields: [String] = []
        var index = 0
        while fields.count < 4 && index < data.count {
            while index < data.count, data[index] == 0x20 || data[index] == 0x0A { index += 1 }
            var token = ""
            while index < data.count, data[index] != 0x20 && data[index] != 0x0A {
                token.append(Character(UnicodeScalar(data[index])))
                index += 1
            }
            fields.append(token)
        }
        index += 1
        guard fields.count == 4, let w = Int(fields[1]), let h = Int(fields[2]) else { return nil }
        let layout: PixelLayout = fields[0] == "P6" ? .rgb : .gray
        let pixels = Array(data[index...])
        guard pixels.count == w * h * layout.channels else { return nil }
        return DecodedImage(width: w, height: h, layout: layout, pixels: pixels, format: .jpeg)
    }

    static func pnmBytes(_ image: DecodedImage) -> [UInt8] {
        Array("\(image.layout == .gray ? "P5" : "P6")\n\(image.width) \(image.height)\n255\n".utf8) + image.pixels
    }

    /// Nil when two images are equal, else what differs (a short text: large images' pixel
    /// arrays are too long to print).
    static func difference(_ a: DecodedImage, _ b: DecodedImage) -> String? {
        if a == b { return nil }
        guard a.width == b.width, a.height == b.height, a.layout == b.layout else {
            return "\(a.width)x\(a.height) \(a.layout) against \(b.width)x\(b.height) \(b.layout)"
        }
        let differing = zip(a.pixels, b.pixels).enumerated().filter { $0.element.0 != $0.element.1 }
        guard let first = differing.first?.offset else { return "same pixels, other metadata" }
        let pixel = first / a.layout.channels
        return "\(differing.count) of \(a.pixels.count) bytes differ, the first at x \(pixel % a.width), y \(pixel / a.width)"
    }

    static var hasDjpeg: Bool { installed("djpeg") }
    static var hasCjpeg: Bool { installed("cjpeg") && installed("djpeg") }

    static func installed(_ tool: String) -> Bool {
        ProcessInfo.processInfo.environment["PATH"]?.split(separator: ":").contains {
            FileManager.default.isExecutableFile(atPath: "\($0)/\(tool)")
        } ?? false
    }
}

extension Corpora {
    struct ReferenceDecodeFailed: Error {}

    /// libpng's simplified API on a whole buffer, to RGBA: the reference the PNG decoder matches
    /// (but for 16-bit interlaced files, whose rows libpng 1.6.39 misplaces there).
    static func decodePNGWithSimplifiedAPI(_ data: [UInt8]) throws -> DecodedImage {
        var image = iw_image()
        let status = data.withUnsafeBufferPointer { iw_png_decode_simplified($0.baseAddress, $0.count, 0, &image) }
        guard status == 0 else { throw ReferenceDecodeFailed() }
        defer { iw_free(image.pixels) }
        let count = Int(image.width) * Int(image.height) * 4
        return DecodedImage(
            width: Int(image.width), height: Int(image.height), layout: .rgba,
            pixels: Array(UnsafeBufferPointer(start: image.pixels, count: count)), format: .png)
    }
}
