import Foundation
import ImageDecoding
import Testing

/// `ImageHeader`: the format and stored size from a file's first bytes, without decoding.
@Suite struct ImageHeaderTests {
    @Test func headersGiveTheSizeOfEveryKnownFormat() {
        func header(_ bytes: [UInt8]) -> ImageHeader? { try? ImageHeader.read(bytes).get() }
        let gif = Array("GIF89a".utf8) + [0x2C, 0x01, 0xC8, 0x00] + [UInt8](repeating: 0, count: 20)
        #expect(header(gif) == ImageHeader(format: .gif, width: 300, height: 200))
        func riff(_ chunk: String, _ body: [UInt8]) -> [UInt8] {
            Array("RIFF".utf8) + [0, 0, 0, 0] + Array("WEBP".utf8) + Array(chunk.utf8) + [UInt8(body.count), 0, 0, 0] + body
        }
        let lossy = riff("VP8 ", [0, 0, 0, 0x9D, 0x01, 0x2A, 0x80, 0x02, 0xE0, 0x01] + [UInt8](repeating: 0, count: 8))
        #expect(header(lossy) == ImageHeader(format: .webp, width: 640, height: 480))
        // VP8L: signature 0x2f, then 14 bits width-1 and 14 bits height-1 (99 and 49).
        let bits: UInt32 = 99 | (49 << 14)
        let lossless = riff("VP8L", [0x2F, UInt8(bits & 0xFF), UInt8(bits >> 8 & 0xFF), UInt8(bits >> 16 & 0xFF), UInt8(bits >> 24)] + [UInt8](repeating: 0, count: 8))
        #expect(header(lossless) == ImageHeader(format: .webp, width: 100, height: 50))
        let extended = riff("VP8X", [0x10, 0, 0, 0, 0xFF, 0x03, 0x00, 0x1F, 0x00, 0x00] + [UInt8](repeating: 0, count: 8))
        #expect(header(extended) == ImageHeader(format: .webp, width: 1024, height: 32))
        var tiff: [UInt8] = [0x49, 0x49, 0x2A, 0x00, 8, 0, 0, 0, 2, 0]
        tiff += [0x00, 0x01, 3, 0, 1, 0, 0, 0, 0x40, 0x01, 0, 0]  // ImageWidth SHORT 320
        tiff += [0x01, 0x01, 4, 0, 1, 0, 0, 0, 0xF0, 0x00, 0, 0]  // ImageLength LONG 240
        #expect(header(tiff) == ImageHeader(format: .tiff, width: 320, height: 240))
        #expect(header(try! ImageDecoders.encodePNG(DecodedImage(width: 40, height: 30, layout: .rgb, pixels: [UInt8](repeating: 9, count: 3600), format: .png))) == ImageHeader(format: .png, width: 40, height: 30))
        #expect(header(Array("GIF89a".utf8)) == nil, "a signature alone is not a header")
        #expect(header(Array("{\"error\": 1}".utf8)) == nil)
        if case .failure(.notAnImage(let start)) = ImageHeader.read(Array("{\"error\": 1}".utf8)) {
            #expect(start.contains("{\"error\": 1}"))
        } else {
            Issue.record("JSON is not an image")
        }
    }

    /// libjpeg-turbo's BMP test image, and every corpus JPEG and PNG that decodes: the header
    /// alone gives the decoded size.
    @Test(.enabled(if: Corpora.present, Comment(rawValue: Corpora.absent)))
    func corpusHeadersGiveTheDecodedSize() throws {
        let bmp = try ImageHeader.read(try Corpora.bytes("jpeg/testimg.bmp")).get()
        #expect(bmp == ImageHeader(format: .bmp, width: 227, height: 149))
        var checked = 0
        for path in Corpora.files("pngsuite", suffix: ".png") + Corpora.files("jpeg", suffix: ".jpg") {
            let bytes = try Corpora.bytes(path)
            guard let image = try? ImageDecoders.decode(bytes) else { continue }
            let header = try? ImageHeader.read(bytes).get()
            #expect(header?.width == image.width && header?.height == image.height, "\(path)")
            checked += 1
        }
        #expect(checked > 100)
    }
}
