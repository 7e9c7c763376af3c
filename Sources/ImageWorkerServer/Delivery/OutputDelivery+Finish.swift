import Dispatch
import Foundation
import ImageDecoding
import ImageWorkerProtocol
import NIOCore

/// A token's final image finished: its bitmap's cost for the decode budget, then (`finish`) made
/// what its output asks by the `Renderer`, placed by `FrameDelivery`, and timed for its event.
extension OutputDelivery {
    /// The bytes of bitmap a decode of `body` will hold, for the decode stage's memory budget:
    /// the stored size in RGBA by the header; for a body whose header is not in its first 64 KiB
    /// (or is no image: the decode fails at once), a guess from its length.
    static func bitmapCost(_ body: ByteBuffer, source: ImageFormat?) -> Int {
        guard source != nil else { return 0 }
        // Most headers lie in the first 4 KiB; a JPEG's frame header may follow large metadata.
        for prefix in [4 * 1024, 64 * 1024] {
            if case .success(let header) = ImageHeader.read(Array(body.readableBytesView.prefix(prefix))) {
                return bitmapCost(width: header.width, height: header.height)
            }
            if body.readableBytes <= prefix { break }
        }
        return bitmapCost(unknownSizeOf: body.readableBytes)
    }

    /// With every frame asked (`output.frames` `all`): the frames kept at the size the token
    /// asked, beside the canvas `bitmapCost` counts (0 otherwise, or for a still image). Read from
    /// the headers; a file whose headers are refused costs nothing more (its decode fails first).
    static func framesCost(_ body: ByteBuffer, spec: OutputSpec, settings: DecodeSettings) -> Int {
        guard spec.frames == .all else { return 0 }
        var options = DecodeOptions()
        (options.maxPixels, options.maxFrames) = (settings.maxPixels, settings.maxFrames)
        guard let frames = try? AnimationDecoder.frames(Array(body.readableBytesView), options: options) else { return 0 }
        let size = spec.geometry.decodeSize(of: (frames.width, frames.height), orientation: 1)
        return bitmapCost(width: size.width, height: size.height) &* frames.count
    }

    /// An RGBA bitmap of `width` × `height` (overflow wraps rather than traps: sizes that large fail
    /// the pixel limit anyway).
    static func bitmapCost(width: Int, height: Int) -> Int {
        width.multipliedReportingOverflow(by: height).partialValue &* 4
    }

    /// A decode of `bytes` of compressed data whose size was not found: sixteen times as much.
    static func bitmapCost(unknownSizeOf bytes: Int) -> Int {
        bytes &* 16
    }

    /// A decoded image made into what the token asked for: rendered, and its file written when
    /// its delivery is a file (or shared memory, when the client has room for it).
    struct Finished: Sendable {
        var rendered: Renderer.Rendered
        /// Where the file went (a file, or shared memory).
        var placed: FrameDelivery.Placed?
        var decodeMs: JSONValue
        var writeMs: JSONValue?
        /// Shared memory had no room for it: the token's task delivers it inline.
        var sharedFull = false
        /// The bytes of a result not yet handed over, held in the decode stage's budget (taken
        /// while the decode's slot was still held, so no decode slips in between): the token's
        /// task gives it back once the result is written or sent.
        var hold: DecodeSlots.Slot?
    }

    /// `image` rendered (`Renderer.render`; for a token that delivers nothing, only described), then
    /// written to `target` if its delivery is a file, or into `shared` if it goes through shared
    /// memory and the client has room for it now (else the token's task waits for room): on the
    /// calling thread, one on the blocking pool. `decodeStart`: when its decode slot was let in.
    static func finish(
        _ image: DecodedImage, spec: OutputSpec, source: ImageFormat?, to target: FrameDelivery.Target, shared: SharedOutput,
        slots: DecodeSlots, decodeStart: UInt64
    ) throws(DeliveryFailure) -> Finished {
        let rendered =
            spec.delivery == .none
            ? Renderer.described(
                width: image.width, height: image.height, orientation: image.orientation, source: image.format, spec: spec,
                animation: image.animation)
            : try Renderer.render(image, spec: spec)
        let decodeMs = milliseconds(since: decodeStart)
        let writeStart = DispatchTime.now().uptimeNanoseconds
        var placed: FrameDelivery.Placed?
        // Shared memory has no room for it, or none to be had: the token's task sends it inline.
        var sharedFull = false
        switch spec.delivery {
        case .file:
            placed = try FrameDelivery.deliver(rendered.payload, fileExtension: rendered.fileExtension, source: source, to: target, final: true)
        case .shared where rendered.payload.count > SharedOutput.inlineLimit:
            switch shared.tryReserve(rendered.payload.count, fileExtension: rendered.fileExtension) {
            case .reserved(let reservation):
                let into = FrameDelivery.SharedFile(reservation: reservation, output: shared)
                switch try FrameDelivery.deliver(
                    rendered.payload, fileExtension: rendered.fileExtension, source: source, to: target, final: true, sharedFile: into)
                {
                case .sharedFull: sharedFull = true
                case let done: placed = done
                }
            case .full: break  // (the token's task waits for room)
            case .unavailable: sharedFull = true
            }
        default:
            break  // inline (or nothing: a described image has no bytes), by the token's task
        }
        guard let placed else {
            // Handed over by the token's task: its bytes stay in the budget until then.
            let bytes = rendered.payload.count
            return Finished(rendered: rendered, decodeMs: decodeMs, sharedFull: sharedFull, hold: bytes > 0 ? slots.hold(bytes: bytes) : nil)
        }
        // Written: the event needs no bytes, and a bitmap kept until the token's task takes the
        // result (after the decode slot went to the next decode) would be one more in memory.
        var written = rendered
        written.payload = Payload([])
        return Finished(rendered: written, placed: placed, decodeMs: decodeMs, writeMs: milliseconds(since: writeStart))
    }

    /// Milliseconds since `start` (`DispatchTime`'s nanoseconds), to two decimals, for a token's metrics.
    static func milliseconds(since start: UInt64) -> JSONValue {
        .double((Double(DispatchTime.now().uptimeNanoseconds - start) / 1e4).rounded() / 100)
    }

}
