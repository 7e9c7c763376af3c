import ImageDecoding
import ImageDownloader
import ImageWorkerProtocol
import NIOCore

/// What a completed event says of the original, beside what was delivered: its size as stored
/// (`sourceWidth`, `sourceHeight`: a thumbnail's `width` is not the photo's) and the SHA-256 of
/// the bytes received (`sourceSha256`, with `output.sha256`: `sha256` is the delivered bytes').
/// And `verify: "full"`: an original decoded to its last pixel before it is saved as it came.
enum SourceFacts {
    /// The original's fields for a success event; `header`: the body's, when it was read (decoded
    /// formats and verified originals); `delivered`: the event's fields so far (an `original`'s
    /// `sha256` is the same bytes' and is not computed twice).
    static func fields(
        _ body: ByteBuffer, header: Result<ImageHeader, ImageHeader.Failure>?, source: ImageFormat?, spec: OutputSpec, delivered: JSONObject
    ) -> JSONObject {
        var fields: JSONObject = [:]
        if source != nil, case .success(let stored)? = header {
            fields["sourceWidth"] = JSONValue(stored.width)
            fields["sourceHeight"] = JSONValue(stored.height)
        }
        if spec.sha256 {
            if !spec.format.needsDecoding, let same = delivered["sha256"] {
                fields["sourceSha256"] = same
            } else {
                fields["sourceSha256"] = .string(body.readableBytesView.withContiguousStorageIfAvailable { SHA256.hex(UnsafeRawBufferPointer($0)) }
                    ?? SHA256.hex(Array(body.readableBytesView)))
            }
        }
        return fields
    }

    /// The stored size from the header, read once per token: the first 16 KiB, or the whole body
    /// when a JPEG's frame header follows large metadata (EXIF, an ICC profile).
    static func header(_ body: ByteBuffer) -> Result<ImageHeader, ImageHeader.Failure> {
        let start = 16 * 1024
        var result = ImageHeader.read(Array(body.readableBytesView.prefix(start)))
        if case .failure(.badHeader) = result, body.readableBytes > start {
            result = ImageHeader.read(Array(body.readableBytesView))
        }
        return result
    }

    /// `verify: "full"`: every pixel of the original decoded (at its full size, within the pixel
    /// and frame limits, holding a decode slot for its bitmap), then dropped: a truncated body, a
    /// corrupt scan, a bad CRC or a size over the limit fails the token as a decode would, and
    /// nothing is written.
    static func decodeEveryPixel(
        _ resource: FetchedResource, token: DownloadToken, priority: DownloadPriority, source: ImageFormat?, spec: OutputSpec,
        slots: DecodeSlots, settings: DecodeSettings
    ) async throws(DeliveryFailure) {
        var whole = spec
        whole.format = .rgba
        whole.geometry = OutputGeometry()
        let cost = OutputDelivery.bitmapCost(resource.body, source: source)
        guard let slot = await slots.acquire(token: token, priority: priority, cost: cost) else {
            throw .output("cancelled before its decode", path: nil)
        }
        defer { slots.release(slot) }
        let decode = OutputDelivery.decodeWork(resource, source: source, spec: whole, settings: settings)
        let outcome = await BlockingWork.run { () -> Result<Void, DecodeError> in
            do throws(DecodeError) {
                _ = try decode()
                return .success(())
            } catch {
                return .failure(error)
            }
        }
        if case .failure(let error) = outcome { throw DeliveryFailure(error, settings: settings) }
    }
}
