import CImageCodecs
import Foundation
import ImageDecoding
import Testing
import TestSupport

/// The EXIF orientation of PNG (`eXIf`) and WebP (`EXIF`) files, read as JPEG's is: reported by
/// whole and scaled decodes, pixels as stored. (JPEG's own: `JPEGDecodingTests`.)
struct ExifOrientationTests {
    /// A 40 x 24 RGBA picture with no two rows or columns alike, as a PNG.
    static func png() throws -> [UInt8] {
        let (width, height) = (40, 24)
        var pixels: [UInt8] = []
        for y in 0..<height {
            for x in 0..<width { pixels += [UInt8(x * 6), UInt8(y * 10), UInt8((x * y) & 0xFF), UInt8(255 - x)] }
        }
        return try ImageEncoders.encode(DecodedImage(width: width, height: height, layout: .rgba, pixels: pixels, format: .png), as: .png)
    }

    @Test(arguments: [false, true], [false, true])
    func aPNGsExifChunkIsReportedBeforeOrAfterItsImageData(afterImageData: Bool, littleEndian: Bool) throws {
        let original = try Self.png()
        let stored = try ImageDecoders.decode(original)
        #expect(stored.orientation == 1)
        for orientation in [3, 6, 8] {
            let block = ExifSegment.tiff(orientation: orientation, littleEndian: littleEndian)
            // As the standard has it, and with the "Exif\0\0" some writers put first.
            for data in [ExifSegment.png(original, block: block, afterImageData: afterImageData),
                         ExifSegment.png(original, block: Array("Exif".utf8) + [0, 0] + block, afterImageData: afterImageData)] {
                let whole = try ImageDecoders.decode(data)
                #expect(whole.orientation == orientation && whole.pixels == stored.pixels)
                let scaled = try ImageDecoders.decode(data, options: DecodeOptions(), maxPixelSize: 20, maxPixelCount: nil)
                #expect(scaled.orientation == orientation && (scaled.width, scaled.height) == (20, 12))
                #expect(data.withUnsafeBytes { ImageDecoders.recordedOrientation($0, format: .png) } == orientation)
            }
        }
    }

    /// A real file's: image-rs's `F-exif-chunk-early.png` (eXIf before IDAT, big-endian, five
    /// tags) is 6, as Pillow's `getexif()` reads it.
    @Test(.enabled(if: Corpora.present, Comment(rawValue: Corpora.absent)))
    func aRealPNGsOrientationIsPillows() throws {
        let data = try Corpora.bytes("png-edge/bugfixes/F-exif-chunk-early.png")
        #expect(try ImageDecoders.decode(data).orientation == 6)
        #expect(try ImageDecoders.decode(data, options: DecodeOptions(), maxPixelSize: 100, maxPixelCount: nil).orientation == 6)
    }

    /// Fed piece by piece, the PNG decoder knows an `eXIf` chunk's orientation before the image
    /// data by its first rows (partial images are turned like the final one); one after the image
    /// data is left to the whole file's reading (a progressive fetch's final frame).
    @Test(arguments: [1, 7, 4096])
    func anIncrementalPNGDecoderKnowsTheOrientationBeforeItsRows(chunk: Int) throws {
        let original = try Self.png()
        let block = ExifSegment.tiff(orientation: 8, littleEndian: false)
        for afterImageData in [false, true] {
            let data = ExifSegment.png(original, block: block, afterImageData: afterImageData)
            let decoder = try ImageDecoders.makeIncremental(for: .png, options: DecodeOptions())
            var offset = 0
            repeat {
                let end = min(data.count, offset + chunk)
                _ = try decoder.feed(Array(data[offset..<end]), isLast: end == data.count)
                if decoder.filledRows > 0 { #expect(decoder.orientation == (afterImageData ? 1 : 8)) }
                offset = end
            } while offset < data.count
            #expect(decoder.isComplete && decoder.currentImage()?.orientation == (afterImageData ? 1 : 8))
            #expect(decoder.currentImage()?.pixels == (try ImageDecoders.decode(original)).pixels)
        }
    }

    /// libpng ignores an ancillary chunk whose CRC is wrong; so does the orientation.
    @Test func aPNGsExifChunkWithABadCRCIsIgnored() throws {
        var data = ExifSegment.png(try Self.png(), block: ExifSegment.tiff(orientation: 6, littleEndian: true), afterImageData: false)
        let at = try #require(data.indices.first { data[$0..<min($0 + 4, data.count)].elementsEqual("eXIf".utf8) })
        data[at + 4 + 26] ^= 0xFF  // the chunk's CRC (after 26 bytes of data)
        #expect(try ImageDecoders.decode(data).orientation == 1)
        // Incrementally too, and the chunk is passed over: the first IDAT still ends the wait.
        let decoder = try Corpora.feed(data, format: .png, chunk: 5).decoder
        #expect(decoder.isComplete && decoder.orientation == 1)
        var reached: Int32 = 0
        let prefix = Array(data[..<(at + 4 + 30 + 8)])  // up to the header of the chunk after it
        _ = prefix.withUnsafeBufferPointer { iw_png_scan_orientation_before_image($0.baseAddress, $0.count, &reached) }
        #expect(reached == 1)
    }

    @Test(arguments: ["webp/test.webp", "webp/lossless_vec_1_0.webp"])
    func aWebPsExifChunkIsReported(_ path: String) throws {
        let original = try Corpora.localBytes(path)
        let stored = try ImageDecoders.decode(original)
        for (orientation, littleEndian) in [(6, true), (8, false), (3, true)] {
            let data = ExifSegment.webp(
                original, width: stored.width, height: stored.height, alpha: stored.pixels.enumerated().contains { $0.offset % 4 == 3 && $0.element != 255 },
                block: ExifSegment.tiff(orientation: orientation, littleEndian: littleEndian))
            let whole = try ImageDecoders.decode(data)
            #expect(whole.orientation == orientation && whole.pixels == stored.pixels)
            let scaled = try ImageDecoders.decode(data, options: DecodeOptions(), maxPixelSize: stored.width / 2, maxPixelCount: nil)
            #expect(scaled.orientation == orientation && scaled.width == stored.width / 2)
        }
    }

    /// Every prefix of such files, and every file with one byte changed near its end, is read
    /// without a fault: a PNG whose eXIf chunk (after IDAT, before the 12-byte IEND) has a byte
    /// changed gives 1 (its CRC no longer matches), one with IEND changed still 6; a WebP whose
    /// EXIF chunk (last) is changed gives an orientation or 1.
    @Test func cutOrDamagedFilesAreReadSafely() throws {
        let block = ExifSegment.tiff(orientation: 6, littleEndian: false)
        let png = ExifSegment.png(try Self.png(), block: block, afterImageData: true)
        let webpOriginal = try Corpora.localBytes("webp/small_13x1.webp")
        let webp = ExifSegment.webp(webpOriginal, width: 13, height: 1, block: block)
        for (data, format) in [(png, ImageFormat.png), (webp, .webp)] {
            for end in 0...data.count {
                let found = data[..<end].withUnsafeBytes { ImageDecoders.recordedOrientation($0, format: format) }
                #expect(found == (end == data.count || (format == .png && end >= data.count - 12) ? 6 : 1), "\(format) cut at \(end)")
            }
            var random = SplitMix(seed: 7)
            for _ in 0..<2000 {
                var damaged = data
                let at = data.count - 42 + Int.random(in: 0..<42, using: &random)
                damaged[at] = UInt8.random(in: 0...255, using: &random)
                let found = damaged.withUnsafeBytes { ImageDecoders.recordedOrientation($0, format: format) }
                if format == .png, damaged != data {
                    // The eXIf chunk's data and CRC: 1; IEND's: the chunk before it is whole, 6.
                    #expect(found == (at >= data.count - 12 ? 6 : 1), "byte \(at) of \(data.count)")
                } else {
                    #expect((1...8).contains(found))
                }
            }
        }
    }
}
