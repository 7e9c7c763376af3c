import Foundation
import ImageDecoding
import ImageDownloader
import ImageWorkerProtocol
import Testing

@testable import ImageWorkerServer

/// The one path partial and final images take to where a token asked (real files in a
/// temporary folder).
@Suite struct FrameDeliveryTests {
    let token = DownloadToken.string("t")
    let bytes: [UInt8] = Array("not really a png".utf8)

    func folder() throws -> String {
        let dir = NSTemporaryDirectory() + "frames-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        return dir
    }

    func spec(_ delivery: OutputSpec.Delivery, dir: String? = nil) -> OutputSpec {
        var spec = OutputSpec()
        spec.delivery = delivery
        spec.format = .png
        if let dir { spec.target = .directory(dir) }
        return spec
    }

    func deliver(_ spec: OutputSpec, reserved: String? = nil, final: Bool, _ payload: [UInt8]? = nil) throws -> FrameDelivery.Placed {
        try FrameDelivery.deliver(
            Payload(payload ?? bytes), fileExtension: "png", source: .jpeg,
            to: .init(token: token, url: "http://x/photo.jpg", spec: spec, reservedPath: reserved), final: final)
    }

    /// A partial image takes a name in the folder; the final image replaces it there, with its
    /// digest when asked (a partial image never carries one).
    @Test func theFinalImageReplacesThePartialOneAtItsPath() throws {
        let dir = try folder()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        var asked = spec(.file, dir: dir)
        asked.sha256 = true
        guard case .delivered(let partial, let path?) = try deliver(asked, final: false) else {
            Issue.record("the partial image was not written")
            return
        }
        #expect(path == dir + "/photo.png")
        #expect(partial["path"] == .string(path) && partial["uri"] == .string("file://" + path))
        #expect(partial["sha256"] == nil)
        let whole: [UInt8] = Array("the whole image".utf8)
        guard case .delivered(let final, let finalPath?) = try deliver(asked, reserved: path, final: true, whole) else {
            Issue.record("the final image was not written")
            return
        }
        #expect(finalPath == path)
        #expect(final["sha256"] == .string(SHA256.hex(whole)))
        #expect(FileManager.default.contents(atPath: path) == Data(whole))
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir) == ["photo.png"], "no second file, no temporary left")
    }

    /// A `skipExisting` file that appeared while the token downloaded is kept as it was.
    @Test func anExistingFileIsKept() throws {
        let dir = try folder()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        #expect(FileManager.default.createFile(atPath: dir + "/photo.png", contents: Data([1, 2, 3])))
        var asked = spec(.file, dir: dir)
        asked.skipExisting = true
        guard case .keptExisting(let path) = try deliver(asked, final: true) else {
            Issue.record("the existing file was replaced")
            return
        }
        #expect(path == dir + "/photo.png")
        #expect(FileManager.default.contents(atPath: path) == Data([1, 2, 3]))
    }

    /// Inline and `shared` images (partial, or a small final one) come as base64; `none`
    /// delivers nothing but the digest of a final image's bytes when asked.
    @Test func inlineSharedAndNone() throws {
        let encoded = JSONValue.string(Data(bytes).base64EncodedString())
        for delivery in [OutputSpec.Delivery.inline, .shared] {
            for final in [false, true] {
                guard case .delivered(let fields, nil) = try deliver(spec(delivery), final: final) else {
                    Issue.record("\(delivery) was not inline")
                    continue
                }
                #expect(fields == ["data": encoded], "\(delivery), final: \(final)")
            }
        }
        var original = spec(.none)
        original.format = .original
        original.sha256 = true
        guard case .delivered(let fields, nil) = try deliver(original, final: true) else {
            Issue.record("nothing was described")
            return
        }
        #expect(fields == ["sha256": .string(SHA256.hex(bytes))])
    }

    /// An animation's raw frames stay the parts they were decoded in: written to a file, hashed
    /// and put inline, they are the frames' bytes one after the other.
    @Test func framesInPartsArePlacedAsOneRunOfBytes() throws {
        let frames: [[UInt8]] = [Array(repeating: 1, count: 70_001), [], Array(0..<255), Array(repeating: 9, count: 3)]
        let joined = Array(frames.joined())
        let payload = Payload(parts: frames)
        #expect(payload.count == joined.count)
        #expect(payload.sha256() == SHA256.hex(joined))
        #expect(payload.base64() == Data(joined).base64EncodedString())
        let dir = try folder()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        var asked = spec(.file, dir: dir)
        asked.sha256 = true
        let placed = try FrameDelivery.deliver(
            payload, fileExtension: "rgba", source: .gif,
            to: .init(token: token, url: "http://x/clip.gif", spec: asked, reservedPath: nil), final: true)
        guard case .delivered(let fields, let path?) = placed else {
            Issue.record("the frames were not written")
            return
        }
        #expect(FileManager.default.contents(atPath: path) == Data(joined))
        #expect(fields["sha256"] == .string(SHA256.hex(joined)))
    }

    /// A folder that cannot be written fails the delivery with the output's error.
    @Test func anUnwritableFolderFails() throws {
        let dir = try folder()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        #expect(FileManager.default.createFile(atPath: dir + "/file", contents: Data()))
        #expect(throws: DeliveryFailure.self) { try deliver(spec(.file, dir: dir + "/file/below"), final: true) }
    }
}
