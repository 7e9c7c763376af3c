import Foundation
import ImageDecoding
import Testing

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
}
