import CImageCodecs
import Foundation
@testable import ImageDecoding
import Testing
import TestSupport

/// The AC refinement scans of progressive files are decoded by iw_jpeg_refine.c, hooked into
/// libjpeg's progressive decoder. Its two decoders (the BMI2 one where the CPU has it, and the
/// portable one) must give libjpeg's own coefficients, hence its pixels, for every file: scan
/// scripts with split bands, many refinement levels, restarts, every sampling, and damaged scans.
@Suite(.enabled(if: Corpora.present, Comment(rawValue: Corpora.absent)))
struct RefinementScanTests {
    /// What one decode gave.
    struct Outcome: Equatable {
        var status: Int32
        var kind: Int32
        var message: String
        var pixels: [UInt8]

        /// Nil when equal, else what differs (in a line: the pixel arrays are too long to print).
        func difference(from other: Outcome) -> String? {
            if self == other { return nil }
            if status != other.status || kind != other.kind || message != other.message {
                return "status \(status) kind \(kind) \"\(message)\" against "
                    + "status \(other.status) kind \(other.kind) \"\(other.message)\""
            }
            guard pixels.count == other.pixels.count else { return "\(pixels.count) bytes against \(other.pixels.count)" }
            let differing = pixels.indices.filter { pixels[$0] != other.pixels[$0] }
            return "\(differing.count) of \(pixels.count) bytes differ, the first at \(differing.first ?? -1)"
        }
    }

    static let modes: [(name: String, mode: iw_refine_mode)] = [
        ("fastest", IW_REFINE_FASTEST), ("portable", IW_REFINE_PORTABLE), ("libjpeg", IW_REFINE_LIBJPEG),
    ]

    /// Decodes whole with `mode`, or with TurboJPEG (libjpeg's own decoder, not hooked) when nil;
    /// nil when TurboJPEG cannot read the header. Also returns the blocks decoded by the hook.
    static func decode(_ data: [UInt8], mode: iw_refine_mode?, layout: iw_layout = IW_RGBA, scale: Int32 = 1)
        -> (outcome: Outcome, refined: UInt64)?
    {
        var header = iw_image()
        let status = data.withUnsafeBufferPointer { iw_tj_header($0.baseAddress, $0.count, layout, 0, scale, &header) }
        guard status == 0 else { return nil }
        var pixels = [UInt8](repeating: 0xA5, count: Int(header.width) * Int(header.height) * Int(header.channels))
        var info = header
        let result = data.withUnsafeBufferPointer { input in
            pixels.withUnsafeMutableBufferPointer { output in
                if let mode {
                    return iw_jpeg_decode_whole_with(input.baseAddress, input.count, layout, scale, 0, mode, output.baseAddress, &info)
                }
                return iw_tj_decode_into(input.baseAddress, input.count, layout, scale, output.baseAddress, &info)
            }
        }
        let message = ImageDecoders.text(inArray: info.error)
        let outcome = Outcome(status: result, kind: result == 0 ? 0 : info.error_kind, message: message, pixels: result == 0 ? pixels : [])
        return (outcome, info.refined_blocks)
    }

    /// Feeds the incremental decoder `chunk` bytes at a time with `mode`; the final image (or the
    /// failure) and the blocks the hook decoded.
    static func feed(_ data: [UInt8], mode: iw_refine_mode, chunk: Int) throws -> (outcome: Outcome, refined: UInt64) {
        let decoder = try #require(iw_jpeg_create(IW_RGBA, 0, 0, 1))
        defer { iw_jpeg_destroy(decoder) }
        iw_jpeg_set_refine_mode(decoder, mode)
        let failure = Int32(IW_FAILED)
        var offset = 0
        var status: Int32 = 0
        repeat {
            let end = min(data.count, offset + chunk)
            status = data[offset..<end].withUnsafeBufferPointer {
                iw_jpeg_feed(decoder, $0.baseAddress, $0.count, end == data.count ? 1 : 0)
            }
            offset = end
        } while offset < data.count && status != failure
        let size = Int(iw_jpeg_width(decoder)) * Int(iw_jpeg_height(decoder)) * Int(iw_jpeg_channels(decoder))
        var pixels = [UInt8](repeating: 0, count: size)
        if status != failure, iw_jpeg_final_pending(decoder) != 0 {
            status = pixels.withUnsafeMutableBufferPointer { iw_jpeg_final_into(decoder, $0.baseAddress) }
        } else if status != failure, let frame = iw_jpeg_pixels(decoder) {
            pixels = Array(UnsafeBufferPointer(start: frame, count: pixels.count))
        }
        let failed = status == failure
        let outcome = Outcome(
            status: failed ? failure : 0, kind: failed ? iw_jpeg_error_kind(decoder) : 0,
            message: failed ? String(cString: iw_jpeg_error(decoder)) : "", pixels: failed ? [] : pixels)
        return (outcome, iw_jpeg_refined_blocks(decoder))
    }

    /// A photograph-like source: gradients, texture, flat areas and hard edges, so that
    /// coefficients of every size and long runs of zeros both occur.
    static func source(width: Int, height: Int) -> DecodedImage {
        var pixels = [UInt8](repeating: 0, count: width * height * 3)
        for y in 0..<height {
            for x in 0..<width {
                let i = (y * width + x) * 3
                let noise = UInt8(truncatingIfNeeded: (x &* 73_856_093) ^ (y &* 19_349_663) >> 3)
                let flat = x > width * 2 / 3 && y < height / 2
                pixels[i] = flat ? 200 : UInt8(truncatingIfNeeded: x * 255 / width) &+ noise / 32
                pixels[i + 1] = flat ? 40 : ((x / 9 + y / 7) % 2 == 0 ? 30 : 220)
                pixels[i + 2] = flat ? 90 : UInt8(truncatingIfNeeded: (x * y) / 64) ^ (noise / 8)
            }
        }
        return DecodedImage(width: width, height: height, layout: .rgb, pixels: pixels, format: .jpeg)
    }

    /// Scan scripts (cjpeg -scans): refinement in split bands and down to Al 0 from Al 3, a grey
    /// file refined ten times (large correction steps), and libjpeg's own script.
    static let scripts: [String: String] = [
        "split-bands": """
            # DC, then each component's first AC pass (luma's in two bands, 3 bits short; chroma 2)
            0,1,2: 0-0, 0, 2;   0: 1-5, 0, 3;   1: 1-63, 0, 2;   2: 1-63, 0, 2;   0: 6-63, 0, 3;
            # luma refined whole, then in two bands; DC refined down to its last bit
            0: 1-63, 3, 2;   0: 1-20, 2, 1;   0: 21-63, 2, 1;   0,1,2: 0-0, 2, 1;   0,1,2: 0-0, 1, 0;
            # chroma refined to the last bit (Cr's middle step in two bands), then luma's in two bands
            1: 1-63, 2, 1;   1: 1-63, 1, 0;   2: 1-10, 2, 1;   2: 11-63, 2, 1;   2: 1-63, 1, 0;
            0: 1-40, 1, 0;   0: 41-63, 1, 0;
            """,
        "ten-levels-grey": """
            0: 0-0, 0, 0;
            0: 1-63, 0, 10;
            """ + (1...10).reversed().map { "\n0: 1-63, \($0), \($0 - 1);" }.joined(),
    ]

    /// Progressive files made here: each script and libjpeg's, with and without restart markers
    /// (every MCU row; every 2 MCUs), in 4:2:0, 4:4:4 and 4:2:2.
    static func madeFiles(in directory: URL) throws -> [(name: String, data: [UInt8])] {
        let image = source(width: 333, height: 217)
        let ppm = directory.appendingPathComponent("source.ppm")
        try Data(Corpora.pnmBytes(image)).write(to: ppm)
        var files: [(String, [UInt8])] = []
        for (name, script) in scripts.sorted(by: { $0.key < $1.key }) + [("libjpeg", "")] {
            var arguments = ["-quality", "92"]
            if script.isEmpty {
                arguments += ["-progressive"]
            } else {
                let path = directory.appendingPathComponent("\(name).txt")
                try Data(script.utf8).write(to: path)
                arguments += ["-scans", path.path]
            }
            if name.hasSuffix("grey") { arguments += ["-grayscale"] }
            for (label, extra) in [("", []), (" restart 1", ["-restart", "1"]), (" restart 2B", ["-restart", "2B"])] {
                for sampling in name.hasSuffix("grey") ? [[String]()] : [["-sample", "2x2"], ["-sample", "1x1"], ["-sample", "2x1"]] {
                    let data = try #require(try Corpora.output(of: "cjpeg", arguments + extra + sampling + [ppm.path]))
                    files.append(("\(name)\(label) \(sampling.last ?? "")", data))
                }
            }
        }
        return files
    }

    @Test(.enabled(if: Corpora.hasCjpeg, "cjpeg (Debian: libjpeg-turbo-progs) is not installed"))
    func refinementScansGiveLibjpegsPixels() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("iw-refine-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        var files = try Self.madeFiles(in: directory)
        // The corpora's baseline files (every sampling, restarts, odd sizes), made progressive
        // without touching their coefficients, and their progressive files as they are.
        for path in Corpora.files("jpeg", suffix: ".jpg") + Corpora.files("jpeg-edge", suffix: ".jpg") {
            let data = try Corpora.bytes(path)
            guard ImageFormat.detect(data) == .jpeg, Self.decode(data, mode: nil)?.outcome.status == 0 else { continue }
            if data.withUnsafeBufferPointer({ iw_jpeg_has_progressive_frame($0.baseAddress, $0.count) }) != 0 {
                files.append((path, data))
            } else if let made = try Corpora.output(of: "jpegtran", ["-progressive", Corpora.root.appendingPathComponent(path).path]) {
                files.append(("\(path) made progressive", made))
            }
        }
        #expect(files.count >= 30)
        var refined: [String: UInt64] = [:]
        for (name, data) in files {
            for (layout, scale) in [(IW_RGBA, Int32(1)), (IW_GRAY, 1), (IW_RGB, 4)] {
                guard let reference = Self.decode(data, mode: nil, layout: layout, scale: scale) else { continue }
                for (modeName, mode) in Self.modes {
                    let decoded = try #require(Self.decode(data, mode: mode, layout: layout, scale: scale))
                    let difference = decoded.outcome.difference(from: reference.outcome)
                    #expect(difference == nil, "\(name), \(modeName), layout \(layout.rawValue), 1/\(scale)")
                    refined[modeName, default: 0] += decoded.refined
                }
            }
        }
        // The hook did the work (and libjpeg's own decoder, asked for, did all of it).
        #expect(refined["fastest", default: 0] > 100_000)
        #expect(refined["portable", default: 0] > 100_000)
        #expect(refined["libjpeg"] == 0)
    }

    /// Damage inside the refinement scans (bytes changed, a stray 0xFF, a marker where data
    /// should be, the file cut short): each decoder of the hook fails or succeeds exactly as
    /// libjpeg's own does, with its message and its pixels.
    @Test(.enabled(if: Corpora.hasCjpeg, "cjpeg (Debian: libjpeg-turbo-progs) is not installed"))
    func damagedRefinementScansEndAsLibjpegsDo() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("iw-refine-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let files = try Self.madeFiles(in: directory).filter { $0.name.hasPrefix("split-bands") || $0.name.hasPrefix("ten-levels") }
        var random = SplitMix(seed: 0x5EED_0F12)
        var failures = 0
        var successes = 0
        for (name, original) in files {
            // Where each scan's entropy-coded data lies: from the end of its SOS segment to the next marker.
            let scans = Self.entropySegments(original)
            #expect(scans.count >= 8, "\(name): \(scans.count) scans")
            for round in 0..<24 {
                var data = original
                let segment = scans[Int(random.next() % UInt64(scans.count))]
                guard segment.count > 4 else { continue }
                let at = segment.lowerBound + Int(random.next() % UInt64(segment.count - 2))
                switch round % 6 {
                case 0: data[at] ^= UInt8(truncatingIfNeeded: random.next() | 1)
                case 1: for i in 0..<3 { data[min(at + i * 5, segment.upperBound - 1)] = UInt8(truncatingIfNeeded: random.next()) }
                case 2: data[at] = 0xFF  // a stray 0xFF: a marker or a stuffed byte, depending on the next
                case 3: data.replaceSubrange(at..<at, with: [0xFF, 0xD0 + UInt8(truncatingIfNeeded: random.next() % 8)])
                case 4: data = Array(data[..<at])
                default: data.replaceSubrange(at..<min(at + 40, segment.upperBound), with: [])
                }
                guard let reference = Self.decode(data, mode: IW_REFINE_LIBJPEG) else { continue }
                if reference.outcome.status == 0 { successes += 1 } else { failures += 1 }
                for (modeName, mode) in Self.modes.prefix(2) {
                    let decoded = try #require(Self.decode(data, mode: mode))
                    let difference = decoded.outcome.difference(from: reference.outcome)
                    #expect(difference == nil, "\(name), round \(round), \(modeName)")
                }
            }
        }
        #expect(successes > 20 && failures > 5, "\(successes) decoded, \(failures) failed")
    }

    /// The incremental decoder (partial images while bytes arrive) takes the same hook: bytes fed
    /// 7 and 4096 at a time give TurboJPEG's pixels, and damaged files end as with libjpeg's own
    /// decoder. A block whose bytes have not all arrived goes to libjpeg, which waits for them.
    @Test(.enabled(if: Corpora.hasCjpeg, "cjpeg (Debian: libjpeg-turbo-progs) is not installed"))
    func bytesFedAsTheyArriveGiveTheSamePixels() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("iw-refine-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let files = try Self.madeFiles(in: directory)
        var refined: [String: UInt64] = [:]
        for (name, data) in files {
            let reference = try #require(Self.decode(data, mode: nil)).outcome
            #expect(reference.status == 0)
            for chunk in [7, 4096] {
                for (modeName, mode) in Self.modes {
                    let fed = try Self.feed(data, mode: mode, chunk: chunk)
                    #expect(fed.outcome.difference(from: reference) == nil, "\(name), \(chunk)-byte chunks, \(modeName)")
                    refined[modeName, default: 0] += fed.refined
                }
            }
        }
        #expect(refined["fastest", default: 0] > 100_000)
        #expect(refined["portable", default: 0] > 100_000)
        #expect(refined["libjpeg"] == 0)

        var random = SplitMix(seed: 0xFEED)
        for (name, original) in files where name.hasPrefix("split-bands") {
            let scans = Self.entropySegments(original)
            for round in 0..<12 {
                var data = original
                let segment = scans[Int(random.next() % UInt64(scans.count))]
                let at = segment.lowerBound + Int(random.next() % UInt64(max(segment.count - 2, 1)))
                if round % 2 == 0 { data[at] ^= UInt8(truncatingIfNeeded: random.next() | 1) } else { data[at] = 0xFF }
                let chunk = [7, 300, 4096][round % 3]
                let reference = try Self.feed(data, mode: IW_REFINE_LIBJPEG, chunk: chunk).outcome
                for (modeName, mode) in Self.modes.prefix(2) {
                    let fed = try Self.feed(data, mode: mode, chunk: chunk)
                    #expect(fed.outcome.difference(from: reference) == nil, "\(name), round \(round), \(modeName)")
                }
            }
        }
    }

    /// Arithmetic-coded progressive files have another entropy decoder: the hook leaves them alone.
    @Test(.enabled(if: Corpora.installed("jpegtran"), "jpegtran (libjpeg-turbo-progs) is not installed"))
    func arithmeticCodedFilesAreLeftToLibjpeg() throws {
        let source = Corpora.root.appendingPathComponent("jpeg/testorig.jpg").path
        let data = try #require(try Corpora.output(of: "jpegtran", ["-arithmetic", "-progressive", source]))
        let reference = try #require(Self.decode(data, mode: IW_REFINE_LIBJPEG))
        #expect(reference.outcome.status == 0)
        let decoded = try #require(Self.decode(data, mode: IW_REFINE_FASTEST))
        #expect(decoded.outcome.difference(from: reference.outcome) == nil)
        #expect(decoded.refined == 0)
    }

    /// The byte ranges of each scan's entropy-coded data.
    static func entropySegments(_ data: [UInt8]) -> [Range<Int>] {
        var segments: [Range<Int>] = []
        var i = 2
        while i + 4 <= data.count {
            guard data[i] == 0xFF else { i += 1; continue }
            let marker = data[i + 1]
            if marker == 0xFF || marker == 0x00 || (0xD0...0xD7).contains(marker) { i += 2; continue }
            if marker == 0xD9 { break }
            let length = Int(data[i + 2]) << 8 | Int(data[i + 3])
            let end = i + 2 + length
            if marker == 0xDA {
                var j = end
                while j + 1 < data.count, !(data[j] == 0xFF && data[j + 1] != 0 && !(0xD0...0xD7).contains(data[j + 1])) { j += 1 }
                segments.append(end..<j)
                i = j
            } else {
                i = end
            }
        }
        return segments
    }
}
