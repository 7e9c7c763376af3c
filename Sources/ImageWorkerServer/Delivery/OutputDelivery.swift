import Dispatch
import Foundation
import ImageDecoding
import ImageDownloader
import ImageWorkerProtocol

/// Turns a fetched resource into what a token's `output` asked for, and describes the result
/// for its `download/completed` event.
enum OutputDelivery {
    /// `url`: the token's URL as sent (user information removed); the resource's is the final one.
    static func deliver(
        _ resource: FetchedResource, token: DownloadToken, priority: DownloadPriority, url: String, spec: OutputSpec,
        deliveries: FetchDeliveries, slots: DecodeSlots, shared: SharedOutput, settings: DecodeSettings
    ) async throws(DeliveryFailure) -> JSONObject {
        // The fetch's pipeline (one made for this token alone when the resource came from no
        // worker downloader), resolved once for every step below.
        let pipeline = resource.pipeline ?? deliveries.makePipeline(resource.fetchID)
        let result: Result<JSONObject, DeliveryFailure>
        do throws(DeliveryFailure) {
            result = .success(
                try await deliverToken(
                    resource, token: token, priority: priority, url: url, spec: spec, pipeline: pipeline, slots: slots,
                    shared: shared, settings: settings))
        } catch {
            result = .failure(error)
        }
        // Whatever happened, this token is through: the last of the fetch releases what it shared.
        pipeline.delivered(resource, token: token)
        return try result.get()
    }

    private static func deliverToken(
        _ resource: FetchedResource, token: DownloadToken, priority: DownloadPriority, url sentURL: String, spec: OutputSpec,
        pipeline: FetchPipeline, slots: DecodeSlots, shared: SharedOutput, settings: DecodeSettings
    ) async throws(DeliveryFailure) -> JSONObject {
        let source = ImageFormat.detect(resource.body.readableBytesView)
        var result: JSONObject = [
            "byteLength": JSONValue(resource.byteCount),
            "url": .string(sentURL),
            "finalUrl": .string(resource.response.finalURL),
            "status": JSONValue(resource.response.status),
            "fromCache": .bool(resource.response.cache != .none),
            "revalidated": .bool(resource.response.cache == .revalidated),
        ]
        let payload: Payload
        let fileExtension: String?
        // A decoding token holds a slot from its decode until its image is rendered and, for a
        // file, written (`decodedWhole`, `decodedStreamed`): the bitmaps being made or written at
        // once are bounded by the slots. A result still to be handed over (waiting for room in
        // shared memory, or for the reader of inline output) keeps its bytes in the decode
        // stage's budget until then (`Finished.hold`), while its slot goes on to the next decode:
        // results nobody takes hold decoding back.
        var hold: DecodeSlots.Slot?
        defer { if let hold { slots.release(hold) } }
        // The delivery's part of the token's metrics (the downloader's are merged in the event).
        var timings: JSONObject = [:]
        // A progressive token's partial images went to a path chosen then: the final image
        // replaces the last of them there (asked once its decoder has taken every byte).
        func target() -> FrameDelivery.Target {
            FrameDelivery.Target(token: token, url: sentURL, spec: spec, reservedPath: resource.streamed ? pipeline.stage.reservedPath(token) : nil)
        }
        // Written already (a decoded image delivered as a file, or into shared memory).
        var written: FrameDelivery.Placed?
        // Shared memory had no room for it: inline instead.
        var sharedFull = false
        // The stored size, read once for `verify`, the size filters and `sourceWidth` (the decode
        // budget's look, `bitmapCost`, reads no further than 64 KiB).
        let filters = !spec.sizeFilter.isEmpty
        let header = spec.format.needsDecoding || spec.verify || filters ? SourceFacts.header(resource.body) : nil
        // The size filters, before any decode: an original's bytes must show a size to be judged.
        if filters, let header {
            let size = spec.format.needsDecoding ? try? header.get() : try verified(header)
            if let size, let refusal = spec.sizeFilter.refusal(width: size.width, height: size.height) { throw refusal }
        }
        if spec.format.needsDecoding {
            let stored = (try? header?.get()).map { (width: $0.width, height: $0.height) }
            if let stored {
                // This token's box, over the pixel limit, fails it alone (before its decode, which
                // other tokens of the fetch may share).
                var limits = DecodeOptions()
                limits.maxPixels = settings.maxPixels
                let orientation = resource.body.withUnsafeReadableBytes { spec.geometry.orientation(of: $0, format: source) }
                do throws(DecodeError) { try spec.geometry.checkLimit(source: stored, orientation: orientation, options: limits) } catch {
                    throw DeliveryFailure(error, settings: settings)
                }
            }
            // The stored size read once (else a guess from the body); an enlarged image takes more
            // than its source: a box's size counts too.
            let cost = (stored.map { bitmapCost(width: $0.width, height: $0.height) } ?? bitmapCost(resource.body, source: source))
                &+ spec.geometry.boxCost(source: stored) &+ framesCost(resource.body, spec: spec, settings: settings)
            let finished: Finished
            if !resource.streamed {
                finished = try await decodedWhole(
                    resource, token: token, priority: priority, cost: cost, source: source, spec: spec, target: target(),
                    pipeline: pipeline, slots: slots, shared: shared, settings: settings)
            } else {
                finished = try await decodedStreamed(
                    resource, token: token, priority: priority, cost: cost, source: source, spec: spec, target: target,
                    pipeline: pipeline, slots: slots, shared: shared, settings: settings)
            }
            timings["decodeMs"] = finished.decodeMs
            if let writeMs = finished.writeMs { timings["writeMs"] = writeMs }
            for (key, value) in finished.rendered.fields { result[key] = value }
            payload = finished.rendered.payload
            fileExtension = finished.rendered.fileExtension
            written = finished.placed
            sharedFull = finished.sharedFull
            hold = finished.hold
        } else {
            payload = Payload(resource.body)
            fileExtension = nil
            let facts = try await originalFields(
                resource, header: header, token: token, priority: priority, source: source, spec: spec, slots: slots, settings: settings)
            for (key, value) in facts { result[key] = value }
        }
        if written == nil, spec.delivery == .shared, payload.count > SharedOutput.inlineLimit, !sharedFull {
            // No new file while the client has not taken enough of the earlier ones (the wait is in
            // `reserve`; nil: shared memory is not to be had, inline instead).
            let writeStart = DispatchTime.now().uptimeNanoseconds
            if let reservation = try await shared.reserve(payload.count, fileExtension: fileExtension ?? source?.fileExtension ?? "bin") {
                let (target, into) = (target(), FrameDelivery.SharedFile(reservation: reservation, output: shared))
                let placed = try await BlockingWork.run { () throws(DeliveryFailure) -> FrameDelivery.Placed in
                    try FrameDelivery.deliver(payload, fileExtension: fileExtension, source: source, to: target, final: true, sharedFile: into)
                }
                if case .sharedFull = placed {} else {
                    written = placed
                    timings["writeMs"] = milliseconds(since: writeStart)
                }
            }
        }
        let placed: FrameDelivery.Placed
        if let written {
            placed = written
        } else {
            if spec.delivery != .none, spec.delivery != .file {
                // No new inline payload while the reader is behind, and one let through counts
                // on the wire at once (its base64 line): memory stays bounded.
                guard await pipeline.stage.claimWire(token, bytes: (payload.count + 2) / 3 * 4) else {
                    throw .output("cancelled before its delivery", path: nil)
                }
            }
            let writeStart = DispatchTime.now().uptimeNanoseconds
            let target = target()
            let deliver = { @Sendable () throws(DeliveryFailure) -> FrameDelivery.Placed in
                try FrameDelivery.deliver(payload, fileExtension: fileExtension, source: source, to: target, final: true)
            }
            // Writing a file, and hashing or base64 of a large image, are work for the blocking pool.
            let heavy = spec.delivery == .file || (payload.count >= 256 * 1024 && (spec.delivery != .none || FrameDelivery.wantsDigest(spec)))
            placed = heavy ? try await BlockingWork.run(deliver) : try deliver()
            if spec.delivery == .file { timings["writeMs"] = milliseconds(since: writeStart) }
        }
        switch placed {
        case .sharedFull:
            // (Only a write into a reserved shared-memory file says so, and that case went inline above.)
            throw .output("no room in shared memory", path: nil)
        case .keptExisting(let path):
            // Kept as it was (it appeared while this token downloaded): described as on disk.
            return try await BlockingWork.run { () throws(DeliveryFailure) -> JSONObject in
                try FileTarget.describeExisting(path, spec: spec, url: sentURL)
            }
        case .delivered(let fields, _):
            for (key, value) in fields { result[key] = value }
        }
        if header != nil || spec.sha256 {
            for (key, value) in SourceFacts.fields(resource.body, header: header, source: source, spec: spec, delivered: result) {
                result[key] = value
            }
        }
        if !timings.isEmpty { result["metrics"] = .object(timings) }
        return result
    }

    /// What an original's event says of it: its format and type, and with `verify` its stored
    /// size from the header (every pixel decoded too with `verify: "full"`); the token's failure
    /// when the bytes are not the image they claim to be.
    private static func originalFields(
        _ resource: FetchedResource, header: Result<ImageHeader, ImageHeader.Failure>?, token: DownloadToken,
        priority: DownloadPriority, source: ImageFormat?, spec: OutputSpec, slots: DecodeSlots, settings: DecodeSettings
    ) async throws(DeliveryFailure) -> JSONObject {
        var fields: JSONObject = [:]
        if let header {
            let stored = try verified(header)
            fields["width"] = JSONValue(stored.width)
            fields["height"] = JSONValue(stored.height)
            if spec.verifyPixels {
                try await SourceFacts.decodeEveryPixel(
                    resource, token: token, priority: priority, source: source, spec: spec, slots: slots, settings: settings)
            }
        }
        fields["mimeType"] = JSONValue(source?.mimeType ?? resource.response.mimeType)
        if let source { fields["sourceFormat"] = .string(source.rawValue) }
        return fields
    }

    /// A streamed token's image (its fetch's body went through a progressive decoder): the
    /// decoder's final image scaled to the token's size, or, when there was none or it was
    /// scaled below what this token asks (a token that joined the fetch after its decode began),
    /// the fetch's decode of the whole body; rendered (and, for a file, written) under a decode
    /// slot, given back when this returns.
    private static func decodedStreamed(
        _ resource: FetchedResource, token: DownloadToken, priority: DownloadPriority, cost: Int, source: ImageFormat?,
        spec: OutputSpec, target: () -> FrameDelivery.Target, pipeline: FetchPipeline, slots: DecodeSlots, shared: SharedOutput,
        settings: DecodeSettings
    ) async throws(DeliveryFailure) -> Finished {
        guard let slot = await slots.acquire(token: token, priority: priority, cost: cost) else {
            throw .output("cancelled before its decode", path: nil)
        }
        defer { slots.release(slot) }
        let decodeStart = DispatchTime.now().uptimeNanoseconds
        let progressiveResult = await pipeline.frame(of: resource)
        let image: DecodedImage
        // (Scaling a progressive frame to the token's size is pixel work: on the blocking pool.)
        // (Every frame of an animation is the whole decode's: the progressive one made the first.)
        if spec.frames == .first, case .success(let frame)? = progressiveResult, let fitted = await BlockingWork.run({ Renderer.fitted(frame, spec: spec) }) {
            image = fitted
        } else if case .failure(let error)? = progressiveResult {
            throw DeliveryFailure(error, settings: settings)
        } else {
            var lane = BlockingWork.Lane()
            let decode = sharedDecode(
                resource, source: source, spec: spec, pipeline: pipeline, settings: settings, whenDone: nil, lane: &lane)
            lane.startPending()
            image = try decoded(await decode.value(), settings: settings)
        }
        // (Asked once the decoder has taken every byte: its last partial image's path.)
        let fileTarget = target()
        return try await BlockingWork.run { () throws(DeliveryFailure) -> Finished in
            try finish(image, spec: spec, source: source, to: fileTarget, shared: shared, slots: slots, decodeStart: decodeStart)
        }
    }

    /// A token's image decoded whole, from the moment its slot is let in: on the thread of the
    /// decode that gave the slot back, if one did (`DecodeSlots.acquire(admitted:)`). That
    /// thread then finishes the token (renders its image, writes its file) and gives the slot
    /// back, so the next decode it lets in starts there too (`decodeAdmitted`).
    private static func decodedWhole(
        _ resource: FetchedResource, token: DownloadToken, priority: DownloadPriority, cost: Int, source: ImageFormat?,
        spec: OutputSpec, target: FrameDelivery.Target, pipeline: FetchPipeline, slots: DecodeSlots, shared: SharedOutput,
        settings: DecodeSettings
    ) async throws(DeliveryFailure) -> Finished {
        let step = await slots.acquire(token: token, priority: priority, cost: cost) {
            held, lane -> Promise<Result<Finished, DeliveryFailure>> in
            let start = DispatchTime.now().uptimeNanoseconds
            let step = Promise<Result<Finished, DeliveryFailure>>()
            decodeAdmitted(
                resource, token: token, key: decodeKey(spec), held: held, slots: slots, pipeline: pipeline, lane: &lane,
                finish: { outcome in
                    step.fulfil(
                        Result { () throws(DeliveryFailure) -> Finished in
                            try finish(
                                decoded(outcome, settings: settings), spec: spec, source: source, to: target, shared: shared,
                                slots: slots, decodeStart: start)
                        })
                },
                decode: decodeWork(resource, source: source, spec: spec, settings: settings))
            return step
        }
        // Nil: the token was cancelled while it waited; it has had its event already.
        guard let step else { throw .output("cancelled before its decode", path: nil) }
        return try await step.value().get()
    }
}
