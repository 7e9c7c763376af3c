import Foundation
import ImageDecoding
import Testing
import TestSupport

/// A file cut short is refused the same way whether it is decoded whole (the default) or
/// incrementally (`progressive`): a truncated image is an error on both paths, even when the cut
/// only removes the end marker after the last row.
@Suite(.enabled(if: Corpora.present, Comment(rawValue: Corpora.absent)))
struct TruncationAgreementTests {
    static let files = Corpora.files("jpeg", suffix: ".jpg") + Corpora.files("jpeg-edge", suffix: ".jpg")
        + ["pngsuite/basn2c08.png", "pngsuite/basi6a08.png", "pngsuite/basn0g01.png", "jpeg/testorig.png"]

    /// The lengths tried: the last few bytes (end marker, trailing chunk) and points inside the data.
    static func cuts(_ count: Int) -> [Int] {
        Array(Set([count - 1, count - 2, count - 3, count - 12, count / 2, count / 3, count * 9 / 10])).filter { $0 > 0 }.sorted()
    }

    @Test(arguments: files)
    func wholeAndIncrementalDecodesAgreeOnEveryCut(path: String) async throws {
        let data = try Corpora.bytes(path)
        let format = try #require(ImageFormat.detect(data))
        var options = DecodeOptions()
        options.layout = .rgba
        let wholeFile: Bool = (try? ImageDecoders.decode(data, options: options)) != nil
        for cut in Self.cuts(data.count) {
            let prefix = Array(data.prefix(cut))
            let whole: Result<DecodedImage, DecodeError> = Result { () throws(DecodeError) in try ImageDecoders.decode(prefix, options: options) }
            for chunk in [prefix.count, 97] {
                let incremental: Result<Void, DecodeError> = Result { () throws(DecodeError) in
                    _ = try Corpora.feed(prefix, format: format, chunk: chunk, options: options)
                }
                let wholeOK = (try? whole.get()) != nil
                let incrementalOK = (try? incremental.get()) != nil
                #expect(wholeOK == incrementalOK, "\(path) cut at \(cut) of \(data.count), chunks of \(chunk): whole \(whole), incremental \(incremental)")
                if wholeFile, !wholeOK, case .failure(let error) = whole {
                    // A cut of a good file is reported as truncation, not as some other fault.
                    if case .truncated = error {} else if case .corrupt = error {} else {
                        Issue.record("\(path) cut at \(cut): \(error)")
                    }
                }
            }
        }
    }

    /// PNGs whose image data stops early but that still end with `IEND` (a cut that kept the
    /// file's last chunk, or an encoder that wrote too few rows): refused on both paths, as any
    /// truncated image (the incremental decoder once called a 64-row image with one row of data
    /// a success, 63 rows blank).
    static func shortImageData() -> [(String, [UInt8])] {
        let samples = (0..<64 * 64 * 3).map { ($0 * 7) % 251 }
        let whole = PNGDecodingTests.png(width: 64, height: 64, depth: 8, color: 2, gamma: nil, samples: samples)
        let oneRow = PNGDecodingTests.png(width: 64, height: 1, depth: 8, color: 2, gamma: nil, samples: Array(samples[0..<64 * 3]))
        let oneRowInterlaced = PNGDecodingTests.png(
            width: 64, height: 1, depth: 8, color: 2, interlaced: true, gamma: nil, samples: Array(samples[0..<64 * 3]))
        return [
            // A whole zlib stream holding one row, the header claiming 64.
            ("one row of 64", withHeight(64, oneRow)),
            ("one row of 64, interlaced", withHeight(64, oneRowInterlaced)),
            // The zlib stream itself cut to a third, then IEND.
            ("a third of the stream", cutImageData(whole, keeping: 3)),
        ]
    }

    /// `png` with its IHDR claiming `height` rows.
    static func withHeight(_ height: UInt32, _ png: [UInt8]) -> [UInt8] {
        var out = png
        // Signature (8), IHDR's length and type (8), width (4): the height at 20.
        out.replaceSubrange(20..<24, with: withUnsafeBytes(of: height.bigEndian, Array.init))
        let crc = PNGChunk.crc32(out[12..<29])
        out.replaceSubrange(29..<33, with: withUnsafeBytes(of: crc.bigEndian, Array.init))
        return out
    }

    /// `png` (IHDR, one IDAT, IEND) with its IDAT's data cut to a `part`th, IEND after it.
    static func cutImageData(_ png: [UInt8], keeping part: Int) -> [UInt8] {
        let idatStart = 8 + 25
        let length = Int(png[idatStart]) << 24 | Int(png[idatStart + 1]) << 16 | Int(png[idatStart + 2]) << 8 | Int(png[idatStart + 3])
        let data = Array(png[(idatStart + 8)..<(idatStart + 8 + length / part)])
        return Array(png[0..<idatStart]) + PNGChunk.make("IDAT", data) + PNGChunk.make("IEND", [])
    }

    @Test func pngImageDataThatStopsBeforeIENDFailsOnBothPaths() throws {
        var options = DecodeOptions()
        options.layout = .rgba
        for (name, data) in Self.shortImageData() {
            let whole: Result<DecodedImage, DecodeError> = Result { () throws(DecodeError) in try ImageDecoders.decode(data, options: options) }
            #expect((try? whole.get()) == nil, "\(name): decoded whole")
            for chunk in [data.count, 97, 7] {
                let incremental: Result<Void, DecodeError> = Result { () throws(DecodeError) in
                    _ = try Corpora.feed(data, format: .png, chunk: chunk, options: options)
                }
                #expect((try? incremental.get()) == nil, "\(name), chunks of \(chunk): decoded incrementally")
            }
        }
    }
}
