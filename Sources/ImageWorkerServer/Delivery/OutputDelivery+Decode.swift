import Foundation
import ImageDecoding
import ImageDownloader

/// A token's decode: admitted by the decode slots, shared by the tokens of its fetch that ask
/// for the same size.
extension OutputDelivery {
    /// A token let into the decode stage with the slot `held` (on the pool, on `lane`): its
    /// fetch's decode for `key` (started here, or joined: the one another token of the fetch
    /// started), then, on the decoding thread, `finish` with the outcome, and the slot given back
    /// there, so that the decode it lets in follows on that thread.
    ///
    /// A token that joins a decode gives its slot back at once: the decode holds the slot of the
    /// token that started it, and the joiner's `finish` runs after that token's on the decoding
    /// thread. Held through the decode, a second slot would do no work while another decode
    /// waited for it: tokens that coalesced on one fetch (a URL asked for twice) left the cores
    /// idle.
    static func decodeAdmitted(
        _ resource: FetchedResource, token: DownloadToken, key: FetchPipeline.State.DecodeKey, held: DecodeSlots.Slot,
        slots: DecodeSlots, pipeline: FetchPipeline, lane: inout BlockingWork.Lane,
        finish: @escaping @Sendable (SharedDecode.Outcome) -> Void,
        decode: @escaping @Sendable () throws(DecodeError) -> DecodedImage
    ) {
        // Given back once: by the hook, or here for a joiner (whichever comes first).
        let slot = LockedState<DecodeSlots.Slot?>(held)
        let giveBack = { @Sendable (lane: inout BlockingWork.Lane) in
            if let held = slot.withLock({ s in defer { s = nil }; return s }) { slots.release(held, lane: &lane) }
        }
        let hook: SharedDecode.Hook = { outcome, lane in
            finish(outcome)
            pipeline.doneDecoding(resource, token: token)
            giveBack(&lane)
        }
        if pipeline.sharedDecode(key, whenDone: hook, lane: &lane, decode: decode).joined {
            giveBack(&lane)
        }
    }

    /// What makes two tokens' decodes of one fetch the same.
    static func decodeKey(_ spec: OutputSpec) -> FetchPipeline.State.DecodeKey {
        FetchPipeline.State.DecodeKey(format: spec.format, geometry: spec.geometry.final, colorProfile: spec.colorProfile, frames: spec.frames)
    }

    /// The decode of the image this token asked for, once for every token of the fetch that asks
    /// the same (a new one is handed on to `lane`). `source`: the format the body's signature names.
    static func sharedDecode(
        _ resource: FetchedResource, source: ImageFormat?, spec: OutputSpec, pipeline: FetchPipeline, settings: DecodeSettings,
        whenDone: SharedDecode.Hook?, lane: inout BlockingWork.Lane
    ) -> SharedDecode {
        pipeline.sharedDecode(
            decodeKey(spec), whenDone: whenDone, lane: &lane,
            decode: decodeWork(resource, source: source, spec: spec, settings: settings)
        ).decode
    }

    /// Decoding the body as `spec` asks, within the limits of `settings`.
    static func decodeWork(
        _ resource: FetchedResource, source: ImageFormat?, spec: OutputSpec, settings: DecodeSettings
    ) -> @Sendable () throws(DecodeError) -> DecodedImage {
        let body = resource.body
        return { () throws(DecodeError) -> DecodedImage in
            var options = DecodeOptions()
            options.layout = spec.decodeLayout(for: source)
            options.maxPixels = settings.maxPixels
            options.maxScans = settings.maxProgressiveScans
            options.maxFrames = settings.maxFrames
            options.colorProfile = spec.colorProfile
            options.frames = spec.frames
            return try spec.geometry.decode(Array(body.readableBytesView), options: options)
        }
    }

    /// A decode's image, or the token's failure.
    static func decoded(_ outcome: SharedDecode.Outcome, settings: DecodeSettings) throws(DeliveryFailure) -> DecodedImage {
        switch outcome {
        case .success(let image): return image
        case .failure(let error): throw DeliveryFailure(error, settings: settings)
        }
    }

    /// `original` bytes checked by their header (`output.verify`): the format and the stored size,
    /// or the token's failure when they are not an image (nothing is written).
    static func verified(_ header: Result<ImageHeader, ImageHeader.Failure>) throws(DeliveryFailure) -> ImageHeader {
        switch header {
        case .success(let header): return header
        case .failure(.notAnImage(let start)):
            throw .unsupportedFormat("the body is not an image of a known format (\(start))")
        case .failure(.badHeader(let format)):
            throw .badData("Image data cannot be read: the \(format.rawValue) signature is not followed by a valid header")
        }
    }
}
