import CImageCodecs
import Foundation
import ImageDecoding
import Testing
import TestSupport

@Suite(.enabled(if: Corpora.present, Comment(rawValue: Corpora.absent)))
struct JPEGDecodingTests {
    static let testImages = Corpora.files("jpeg", suffix: ".jpg")
    static let edge = Corpora.files("jpeg-edge", suffix: ".jpg") + Corpora.files("jpeg-edge/mozilla", suffix: ".jpg")
    static let crash = Corpora.files("jpeg-edge/crash", suffix: ".jpg")
    static let twelveBit: Set<String> = ["jpeg/testorig12.jpg", "jpeg/monkey12.jpg"]

    /// libjpeg-turbo's test images (and the edge cases) decode to what djpeg produces.
    @Test(
        .enabled(if: Corpora.hasDjpeg, "djpeg (Debian: libjpeg-turbo-progs) is not installed"),
        arguments: testImages + edge)
    func decodesLikeDjpeg(_ path: String) throws {
        let data = try Corpora.bytes(path)
        guard ImageFormat.detect(data) == .jpeg else { return }  // a misnamed file (the worker sniffs, too)
        if Self.twelveBit.contains(path) {
            #expect(throws: DecodeError.self) { try ImageDecoders.decode(data) }
            do { _ = try ImageDecoders.decode(data) } catch {
                guard case .unsupported = error else { Issue.record("12-bit: \(error)"); return }
            }
            return
        }
        guard let reference = try Corpora.djpeg(path) else {
            #expect(throws: DecodeError.self, "djpeg fails on it, so must we") { try ImageDecoders.decode(data) }
            return
        }
        var options = DecodeOptions()
        options.layout = reference.layout
        #expect(try ImageDecoders.decode(data, options: options) == reference, "whole buffer")
        #expect(try Corpora.feed(data, format: .jpeg, chunk: 4096, options: options).decoder.currentImage() == reference, "incremental")
    }

    /// Incremental equals whole: bytes fed 1, 7, 4096 and 65536 at a time give the pixels of a
    /// whole-buffer (TurboJPEG) decode, and partial images arrive in order.
    @Test(arguments: (testImages + edge).filter { !twelveBit.contains($0) })
    func incrementalEqualsWhole(_ path: String) throws {
        let data = try Corpora.bytes(path)
        guard ImageFormat.detect(data) == .jpeg, let whole = try? ImageDecoders.decode(data) else { return }  // see decodesLikeDjpeg
        for chunk in [1, 7, 4096, 65536] {
            let decoder = try JPEGDecoder()
            var lastRows = 0
            var lastPasses = 0
            var offset = 0
            repeat {
                let end = min(data.count, offset + chunk)
                let progress = try decoder.feed(Array(data[offset..<end]), isLast: end == data.count)
                if progress.contains(.pixels) {
                    #expect(decoder.filledRows >= lastRows && decoder.completedPasses >= lastPasses, "in order")
                    lastRows = decoder.filledRows
                    lastPasses = decoder.completedPasses
                }
                offset = end
            } while offset < data.count
            #expect(decoder.isComplete, "chunk \(chunk)")
            #expect(decoder.currentImage() == whole, "chunk \(chunk)")
        }
    }

    @Test func progressiveFilesGiveAPartialImagePerScan() throws {
        let data = try Corpora.bytes("jpeg/testimgp.jpg")
        let (decoder, updates) = try Corpora.feed(data, format: .jpeg, chunk: 64)
        let jpeg = try #require(decoder as? JPEGDecoder)
        #expect(jpeg.completedPasses == 10)
        #expect(updates == 10)
    }

    /// Arithmetic-coded progressive files (libjpeg's arithmetic decoder cannot suspend mid-scan):
    /// libjpeg sees each scan once it is whole, so they get a partial image per scan too, in any
    /// chunking, and the final image of a whole decode; one cut mid-scan is truncated and keeps
    /// the scans before the cut.
    @Test(.enabled(if: Corpora.installed("jpegtran"), "jpegtran (libjpeg-turbo-progs) is not installed"))
    func arithmeticProgressiveFilesGiveAPartialImagePerScan() throws {
        let source = Corpora.root.appendingPathComponent("jpeg/testimgp.jpg").path
        let data = try #require(try Corpora.output(of: "jpegtran", ["-arithmetic", "-progressive", source]))
        let huffman = try Corpora.feed(try Corpora.bytes("jpeg/testimgp.jpg"), format: .jpeg, chunk: 64)
        let whole = try ImageDecoders.decode(data)
        #expect(data[0..<2] == [0xFF, 0xD8] && data.contains(0xCA) && whole == huffman.decoder.currentImage())
        for chunk in [1, 64, 1000] {
            let (decoder, updates) = try Corpora.feed(data, format: .jpeg, chunk: chunk)
            #expect(decoder.completedPasses == huffman.decoder.completedPasses, "chunk \(chunk)")
            #expect(updates >= (chunk == 1000 ? 3 : 8), "chunk \(chunk): \(updates) partial images")
            #expect(decoder.currentImage() == whole, "chunk \(chunk)")
        }
        let decoder = try ImageDecoders.makeIncremental(for: .jpeg)
        _ = try decoder.feed(Array(data.prefix(data.count * 2 / 3)), isLast: false)
        #expect(decoder.completedPasses > 0 && decoder.currentImage() != nil)
        #expect {
            _ = try decoder.feed([], isLast: true)
        } throws: { error in
            guard case .truncated? = error as? DecodeError else { return false }
            return true
        }
        #expect(decoder.currentImage() != nil, "the last partial image stays")
    }

    /// While no partial frame is wanted, completed scans are absorbed without their output pass;
    /// the next wanted frame shows them all (the frame a decoder wanting every frame has at that
    /// point), and the final image is the same.
    @Test func scansAreNotRenderedWhileNoPartialFrameIsWanted() throws {
        let data = try Corpora.bytes("jpeg/testimgp.jpg")
        let decoder = try JPEGDecoder()
        decoder.wantsPartialFrames = false
        let half = data.count / 2
        var offset = 0
        while offset < half {
            let end = min(half, offset + 64)
            #expect(try !decoder.feed(Array(data[offset..<end]), isLast: false).contains(.pixels))
            offset = end
        }
        #expect(decoder.completedPasses == 0 && decoder.currentImage() == nil)
        decoder.wantsPartialFrames = true
        #expect(try decoder.feed([data[offset]], isLast: false).contains(.pixels))
        offset += 1
        let reference = try JPEGDecoder()
        _ = try reference.feed(Array(data[..<offset]), isLast: false)
        #expect(decoder.completedPasses > 1 && decoder.completedPasses == reference.completedPasses, "several scans at once")
        #expect(decoder.currentImage() == reference.currentImage())
        decoder.wantsPartialFrames = false
        #expect(try decoder.feed(Array(data[offset...]), isLast: true).contains(.complete))
        #expect(decoder.currentImage() == (try ImageDecoders.decode(data)))
    }

    /// The EXIF orientation before the frame, in either byte order, is reported by every path: a
    /// whole baseline decode (TurboJPEG), a whole progressive decode (libjpeg), and the incremental
    /// decoder; the pixels are the file's as stored.
    @Test(arguments: ["jpeg/testorig.jpg", "jpeg/testimgp.jpg"], [true, false])
    func exifOrientationIsReported(_ path: String, littleEndian: Bool) throws {
        let original = try Corpora.bytes(path)
        for orientation in [3, 6, 8] {
            let data = ExifSegment.inserting(orientation: orientation, littleEndian: littleEndian, into: original)
            let whole = try ImageDecoders.decode(data)
            #expect(whole.orientation == orientation)
            #expect(whole.pixels == (try ImageDecoders.decode(original)).pixels)
            let incremental = try Corpora.feed(data, format: .jpeg, chunk: 4096).decoder
            #expect(incremental.orientation == orientation && incremental.currentImage()?.orientation == orientation)
        }
        #expect(try ImageDecoders.decode(original).orientation == 1)
    }

    @Test(arguments: crash)
    func crashCasesEndCleanly(_ path: String) throws {
        let data = try Corpora.bytes(path)
        // Either a DecodeError, or (libjpeg recovered, as djpeg and browsers do) djpeg's pixels.
        if let image = try? ImageDecoders.decode(data, options: { var o = DecodeOptions(); o.layout = .rgb; return o }()) {
            if Corpora.hasDjpeg, let reference = try Corpora.djpeg(path), reference.layout == .rgb {
                #expect(image == reference)
            }
        }
        _ = try? Corpora.feed(data, format: .jpeg, chunk: 7)
    }

    @Test func twelveBitAndUnknownFormatsAreUnsupported() throws {
        let twelve = try Corpora.bytes("jpeg/testorig12.jpg")
        do {
            _ = try ImageDecoders.decode(twelve)
            Issue.record("12-bit decoded")
        } catch {
            guard case .unsupported(let message) = error else { Issue.record("\(error)"); return }
            #expect(message.contains("12"))
        }
        let bmp = Array("BM".utf8) + [UInt8](repeating: 0, count: 40)
        #expect(throws: DecodeError.unsupported("BMP images are not decoded by this worker (JPEG, PNG, WEBP, GIF, AVIF, JXL are)")) {
            try ImageDecoders.decode(bmp)
        }
        let gifWithoutAnImage = Array("GIF89a".utf8) + [UInt8](repeating: 0, count: 20)
        #expect(throws: DecodeError.self) { try ImageDecoders.decode(gifWithoutAnImage) }
        #expect(throws: DecodeError.self) { try ImageDecoders.decode(Array("hello world, no image".utf8)) }
    }

    @Test func truncatedDataIsAnErrorThatSaysSoAndKeepsTheLastPartialImage() throws {
        let data = try Corpora.bytes("jpeg/testimgp.jpg")
        let decoder = try JPEGDecoder()
        _ = try decoder.feed(Array(data.prefix(data.count * 2 / 3)), isLast: false)
        let partial = try #require(decoder.currentImage())
        do {
            _ = try decoder.feed([], isLast: true)
            Issue.record("truncated data accepted")
        } catch {
            guard case .truncated = error else { Issue.record("expected truncated, got \(error)"); return }
        }
        #expect(decoder.currentImage() == partial)
        #expect(throws: DecodeError.self) { try ImageDecoders.decode(Array(data.prefix(data.count / 2))) }
    }

    /// Large progressive files (made here by cjpeg, in each chroma sampling and in grey) decode
    /// whole like djpeg, in every layout and at DCT scales, while the decoder hands their
    /// coefficient rows back to the system as its output pass leaves them; truncation and the scan
    /// cap are reported on this path too.
    @Test(
        .enabled(if: Corpora.hasCjpeg, "cjpeg and djpeg (Debian: libjpeg-turbo-progs) are not installed"),
        arguments: [["-sample", "2x2"], ["-sample", "1x1"], ["-sample", "2x1"], ["-grayscale"]])
    func largeProgressiveFilesDecodeLikeDjpegWhileTheirCoefficientsAreGivenBack(_ sampling: [String]) throws {
        let (width, height) = (2003, 1301)  // coefficient buffers of 5 MB and more: handed back
        var pixels = [UInt8](repeating: 0, count: width * height * 3)
        for y in 0..<height {
            for x in 0..<width {
                let i = (y * width + x) * 3
                let noise = UInt8(truncatingIfNeeded: (x &* 73_856_093) ^ (y &* 19_349_663))
                pixels[i] = UInt8(truncatingIfNeeded: x ^ y)
                pixels[i + 1] = UInt8(truncatingIfNeeded: (x * 3 + y * 5) / 4) &+ noise / 16
                pixels[i + 2] = y < height / 2 ? noise : UInt8(truncatingIfNeeded: x / 8)
            }
        }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("iw-cjpeg-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let source = directory.appendingPathComponent("source.ppm")
        try Data(Corpora.pnmBytes(DecodedImage(width: width, height: height, layout: .rgb, pixels: pixels, format: .jpeg)))
            .write(to: source)
        let data = try #require(try Corpora.output(of: "cjpeg", ["-progressive", "-quality", "90"] + sampling + [source.path]))
        let file = directory.appendingPathComponent("progressive.jpg")
        try Data(data).write(to: file)

        // Decoded into a fresh mapping (whose pages fault in as the output pass writes them), the
        // coefficient buffer (two bytes a coefficient, 64 a block) is nearly all handed back; into
        // memory already resident, none of it is (that would lower no peak).
        let samples = sampling == ["-grayscale"] ? 1.0 : sampling == ["-sample", "1x1"] ? 3.0 : sampling == ["-sample", "2x1"] ? 2.0 : 1.5
        var header = iw_image()
        #expect(data.withUnsafeBufferPointer { iw_tj_header($0.baseAddress, $0.count, IW_RGB, 0, 1, &header) } == 0)
        let size = Int(header.width) * Int(header.height) * Int(header.channels)
        func decode(into pixels: UnsafeMutablePointer<UInt8>) -> (status: Int32, released: Int) {
            var info = header
            let status = data.withUnsafeBufferPointer { iw_jpeg_decode_whole_into($0.baseAddress, $0.count, IW_RGB, 1, 0, pixels, &info) }
            return (status, info.released)
        }
        let mapping = try #require(mmap(nil, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0))
        try #require(mapping != UnsafeMutableRawPointer(bitPattern: -1), "mmap failed")
        defer { munmap(mapping, size) }
        let fresh = decode(into: mapping.assumingMemoryBound(to: UInt8.self))
        #expect(fresh.status == 0)
        let coefficientBytes = Double(width * height) * samples * 2
        #expect(Double(fresh.released) >= 0.8 * coefficientBytes, "\(fresh.released) of \(Int(coefficientBytes)) bytes")
        let output = Array(UnsafeBufferPointer(start: mapping.assumingMemoryBound(to: UInt8.self), count: size))
        var resident = [UInt8](repeating: 1, count: size)
        let kept = resident.withUnsafeMutableBufferPointer { decode(into: $0.baseAddress!) }
        #expect(kept.status == 0 && kept.released == 0)
        #expect(resident == output, "the same pixels either way")
        // A small file's buffer (here 227×149) is kept, even into fresh pages: handing it back would
        // cost more than it saves.
        let small = try Corpora.bytes("jpeg/testimgp.jpg")
        var smallHeader = iw_image()
        #expect(small.withUnsafeBufferPointer { iw_tj_header($0.baseAddress, $0.count, IW_RGB, 0, 1, &smallHeader) } == 0)
        let smallSize = Int(smallHeader.width) * Int(smallHeader.height) * 3
        let smallMapping = try #require(mmap(nil, smallSize, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0))
        try #require(smallMapping != UnsafeMutableRawPointer(bitPattern: -1), "mmap failed")
        defer { munmap(smallMapping, smallSize) }
        let smallStatus = small.withUnsafeBufferPointer {
            iw_jpeg_decode_whole_into($0.baseAddress, $0.count, IW_RGB, 1, 0, smallMapping.assumingMemoryBound(to: UInt8.self), &smallHeader)
        }
        #expect(smallStatus == 0 && smallHeader.released == 0)

        for denominator in [1, 2, 8] {
            let reference = try #require(try Corpora.djpeg(file: file, denominator == 1 ? [] : ["-scale", "1/\(denominator)"]))
            var options = DecodeOptions()
            options.scaleDenominator = denominator
            options.layout = reference.layout
            #expect(Corpora.difference(try ImageDecoders.decode(data, options: options), reference) == nil, "1/\(denominator)")
            options.layout = .rgba
            #expect(Corpora.difference(try ImageDecoders.decode(data, options: options), reference.converted(to: .rgba)) == nil, "1/\(denominator) RGBA")
        }
        let whole = try ImageDecoders.decode(data)
        let incremental = try #require(try Corpora.feed(data, format: .jpeg, chunk: 65536).decoder.currentImage())
        #expect(Corpora.difference(incremental, whole) == nil, "incremental")
        #expect(output.elementsEqual(whole.converted(to: .rgb).pixels), "the call above")

        do {
            _ = try ImageDecoders.decode(Array(data.prefix(data.count * 3 / 4)))
            Issue.record("truncated file decoded")
        } catch {
            guard case .truncated = error else { Issue.record("expected truncated, got \(error)"); return }
        }
        var capped = DecodeOptions()
        capped.maxScans = 3
        do {
            _ = try ImageDecoders.decode(data, options: capped)
            Issue.record("scan cap ignored")
        } catch {
            guard case .limit(let message, _, _) = error else { Issue.record("expected a limit, got \(error)"); return }
            #expect(message == "more than 3 progressive scans")
        }
    }

    /// A progressive file's preview (`partialMaxPixelSize`) is made from its coefficients, without
    /// an output pass: after each scan, the image at 1/8 scale as far as the scans go; once all
    /// are in, what libjpeg gives at 1/8 scale (exactly for grey; for colour, chroma is taken from
    /// its block instead of libjpeg's smooth upsampling).
    @Test(
        .enabled(if: Corpora.hasCjpeg, "cjpeg and djpeg (Debian: libjpeg-turbo-progs) are not installed"),
        arguments: [["-grayscale"], ["-sample", "2x2"], ["-sample", "1x1"], ["-sample", "2x1"]])
    func progressivePreviewsComeFromTheCoefficients(_ sampling: [String]) throws {
        let (width, height) = (403, 251)
        var pixels = [UInt8](repeating: 0, count: width * height * 3)
        for y in 0..<height {
            for x in 0..<width {
                let i = (y * width + x) * 3
                // Smooth colour, sharp grey edges (a checker in luma only): block-sized chroma
                // samples are then close to libjpeg's smoother chroma.
                let checker = (x / 40 + y / 40) % 2 == 0 ? 60 : 0
                pixels[i] = UInt8(x * 180 / width + checker)
                pixels[i + 1] = UInt8(y * 180 / height + checker)
                pixels[i + 2] = UInt8((x + y) * 180 / (width + height) + checker)
            }
        }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("iw-preview-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let source = directory.appendingPathComponent("source.ppm")
        try Data(Corpora.pnmBytes(DecodedImage(width: width, height: height, layout: .rgb, pixels: pixels, format: .jpeg))).write(to: source)
        let data = try #require(try Corpora.output(of: "cjpeg", ["-progressive", "-quality", "90"] + sampling + [source.path]))
        let file = directory.appendingPathComponent("p.jpg")
        try Data(data).write(to: file)
        let grey = sampling == ["-grayscale"]

        var options = DecodeOptions()
        options.layout = grey ? .gray : .rgb
        let decoder = try JPEGDecoder(options: options)
        decoder.wantsPartialFrames = false
        var previews: [(image: DecodedImage, passes: Int)] = []
        var offset = 0
        while offset < data.count {
            let end = min(data.count, offset + 512)
            let progress = try decoder.feed(Array(data[offset..<end]), isLast: end == data.count)
            if end < data.count {
                #expect(!progress.contains(.pixels), "no frame is rendered while none is wanted")
            }
            if offset == 0 { #expect(decoder.preview() == nil || progress.contains(.scan), "no preview before the first scan") }
            if progress.contains(.scan), let preview = decoder.preview() { previews.append(preview) }
            offset = end
        }
        #expect(decoder.isComplete)
        #expect(decoder.previewSize == nil && decoder.preview() == nil, "the coefficients are gone with the complete image")
        #expect(previews.count >= 3, "a preview after each of several scans")
        #expect(previews.allSatisfy { ($0.image.width, $0.image.height) == ((width + 7) / 8, (height + 7) / 8) })
        #expect(previews.map(\.passes) == previews.map(\.passes).sorted() && Set(previews.map(\.passes)).count == previews.count)
        // The last preview before the end: the DC coefficients are complete by then (cjpeg's
        // scripts refine the DC before the last AC scans).
        let final = try #require(previews.last).image
        let reference = try #require(try Corpora.djpeg(file: file, ["-scale", "1/8"]))
        #expect((final.width, final.height) == (reference.width, reference.height))
        let differences = zip(final.pixels, reference.pixels).map { abs(Int($0) - Int($1)) }
        let mean = Double(differences.reduce(0, +)) / Double(differences.count)
        if grey {
            #expect(final.pixels == reference.pixels)
        } else {
            #expect(mean < 2, "mean difference \(mean)")
            // Luma is exact: a colour file's grey preview is its Y blocks' averages.
            var greyOptions = DecodeOptions()
            greyOptions.layout = .gray
            let greyDecoder = try JPEGDecoder(options: greyOptions)
            _ = try greyDecoder.feed(Array(data.dropLast(2)), isLast: false)
            let luma = try #require(try Corpora.djpeg(file: file, ["-scale", "1/8", "-grayscale"]))
            #expect(try #require(greyDecoder.preview()).image.pixels == luma.pixels)
        }
        // In RGBA: the same colours, opaque.
        var rgba = DecodeOptions()
        rgba.layout = .rgba
        let decoder4 = try JPEGDecoder(options: rgba)
        _ = try decoder4.feed(Array(data.dropLast(2)), isLast: false)  // all but the end marker
        let preview4 = try #require(decoder4.preview()).image
        #expect(preview4.converted(to: final.layout).pixels == final.pixels)
        #expect(stride(from: 3, to: preview4.pixels.count, by: 4).allSatisfy { preview4.pixels[$0] == 255 })
    }

    @Test func baselineFilesHaveNoPreview() throws {
        let data = try Corpora.bytes("jpeg/testorig.jpg")
        let (decoder, _) = try Corpora.feed(data, format: .jpeg, chunk: 1024)
        #expect(decoder.isComplete && decoder.previewSize == nil && decoder.preview() == nil)
    }

    @Test func aProgressiveFileShowsNoFrameBeforeItsFirstScan() throws {
        // Its frame is not zeroed in advance (the first scan's output pass writes all of it), so
        // nothing may be read before that pass, not even after the file is cut short.
        let data = try Corpora.bytes("jpeg/testimgp.jpg")
        let decoder = try JPEGDecoder()
        var offset = 0
        while decoder.size == nil, offset < data.count {
            _ = try decoder.feed(Array(data[offset..<min(data.count, offset + 16)]), isLast: false)
            offset += 16
        }
        #expect(decoder.size != nil && decoder.completedPasses == 0 && decoder.filledRows == 0)
        #expect(decoder.currentImage() == nil)
        #expect(decoder.withCurrentPixels { _ in true } == nil)
        #expect(throws: DecodeError.self) { try decoder.feed([], isLast: true) }
        #expect(decoder.currentImage() == nil)
    }

    @Test func aHugeHeaderIsRefusedAtOnce() throws {
        // testorig.jpg with its SOF0 size patched to 65500×65500 (libjpeg's maximum).
        var data = try Corpora.bytes("jpeg/testorig.jpg")
        let sof = try #require((0..<data.count - 1).first { data[$0] == 0xFF && data[$0 + 1] == 0xC0 })
        data[sof + 5] = 0xFF; data[sof + 6] = 0xDC; data[sof + 7] = 0xFF; data[sof + 8] = 0xDC
        for decode in [{ try ImageDecoders.decode(data) }, { try Corpora.feed(data, format: .jpeg, chunk: 4096).decoder.currentImage()! }] {
            do {
                _ = try decode()
                Issue.record("accepted a 65500×65500 image")
            } catch let error as DecodeError {
                guard case .limit(_, let w, let h) = error else { Issue.record("\(error)"); continue }
                #expect(w == 65500 && h == 65500)
            }
        }
    }

    @Test func dctScalingGivesTheSmallerSize() throws {
        let data = try Corpora.bytes("jpeg/testorig.jpg")
        for denominator in [1, 2, 4, 8] {
            var options = DecodeOptions()
            options.scaleDenominator = denominator
            let whole = try ImageDecoders.decode(data, options: options)
            #expect(whole.width == (227 + denominator - 1) / denominator && whole.height == (149 + denominator - 1) / denominator)
            #expect(try Corpora.feed(data, format: .jpeg, chunk: 1000, options: options).decoder.currentImage() == whole)
        }
    }
}

@Suite struct JPEGHeaderTests {
    /// TurboJPEG 2.1 says "success" without a size for a stream with no image; that must still end
    /// in a clean error, every time.
    @Test func aJPEGSignatureFollowedByGarbageIsAnError() {
        let data: [UInt8] = [0xFF, 0xD8, 0xFF, 0xE0] + Array("this is not really a JPEG".utf8)
        for _ in 0..<20 {
            #expect(throws: DecodeError.self) { try ImageDecoders.decode(data) }
        }
    }
}

@Suite struct ImageFormatTests {
    @Test func detectsFormatsFromSignatures() {
        #expect(ImageFormat.detect([0xFF, 0xD8, 0xFF, 0xE0]) == .jpeg)
        #expect(ImageFormat.detect([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) == .png)
        #expect(ImageFormat.detect(Array("GIF89a".utf8)) == .gif)
        #expect(ImageFormat.detect(Array("RIFF\u{0}\u{0}\u{0}\u{0}WEBPVP8 ".utf8)) == .webp)
        #expect(ImageFormat.detect(Array("<html>".utf8)) == nil)
        #expect(ImageFormat.detect([0xFF, 0xD8]) == nil, "too few bytes yet")
    }
}
