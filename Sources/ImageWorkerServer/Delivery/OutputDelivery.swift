import Dispatch
import Foundation
import ImageDecoding
import ImageDownloader
import ImageWorkerProtocol
import NIOCore

/// Turns a fetched resource into what a token's `output` asked for, and describes the result
/// for its `download/completed` event.
enum OutputDelivery {
    /// `url`: the token's URL as sent (user information removed); the resource's is the final one.
    static func deliver(
        _ resource: FetchedResource, token: DownloadToken, priority: DownloadPriority, url: String, spec: OutputSpec,
        deliveries: FetchDeliveries, slots: DecodeSlots, shared: SharedOutput, settings: DecodeSettings,
        outputCapacity: @Sendable () async -> Void
    ) async throws(DeliveryFailure) -> JSONObject {
        let result: Result<JSONObject, DeliveryFailure>
        do throws(DeliveryFailure) {
            result = .success(
                try await deliverToken(
                    resource, token: token, priority: priority, url: url, spec: spec, deliveries: deliveries, slots: slots,
                    shared: shared, settings: settings, outputCapacity: outputCapacity))
        } catch {
            result = .failure(error)
        }
        // Whatever happened, this token is through: the last of the fetch releases what it shared.
        deliveries.delivered(resource, token: token)
        return try result.get()
    }

    private static func deliverToken(
        _ resource: FetchedResource, token: DownloadToken, priority: DownloadPriority, url sentURL: String, spec: OutputSpec,
        deliveries: FetchDeliveries, slots: DecodeSlots, shared: SharedOutput, settings: DecodeSettings,
        outputCapacity: @Sendable () async -> Void
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
        // A decoding token holds a slot from its decode to its delivery (not while it waits for
        // the reader): the bitmaps being made or written at once are bounded by the slots.
        var slot: DecodeSlots.Slot?
        defer { if let slot { slots.release(slot) } }
        // A result still to be handed over (waiting for room in shared memory, or for the reader
        // of inline output) keeps its bytes in the decode stage's budget until then, whether or
        // not its slot went on to the next decode: results nobody takes hold decoding back.
        var hold: DecodeSlots.Slot?
        defer { if let hold { slots.release(hold) } }
        // The delivery's part of the token's metrics (the downloader's are merged in the event).
        var timings: JSONObject = [:]
        // A progressive token's partial images went to a path chosen then: the final image
        // replaces the last of them there (asked once its decoder has taken every byte).
        func target() -> FrameDelivery.Target {
            FrameDelivery.Target(token: token, url: sentURL, spec: spec, reservedPath: resource.streamed ? deliveries.reservedPath(token) : nil)
        }
        // Written already (a decoded image delivered as a file, or into shared memory).
        var written: FrameDelivery.Placed?
        // Shared memory had no room for it: inline instead.
        var sharedFull = false
        // The stored size, read once for `verify` and `sourceWidth` (the decode budget's look,
        // `bitmapCost`, reads no further than 64 KiB).
        let header = spec.format.needsDecoding || spec.verify ? SourceFacts.header(resource.body) : nil
        if spec.format.needsDecoding {
            let cost = bitmapCost(resource.body, source: source)
            let finished: Finished
            if !resource.streamed {
                finished = try await decodedWhole(
                    resource, token: token, priority: priority, cost: cost, source: source, spec: spec, target: target(),
                    deliveries: deliveries, slots: slots, shared: shared, settings: settings)
            } else {
                slot = await slots.acquire(token: token, priority: priority, cost: cost)
                guard slot != nil else { throw .output("cancelled before its decode", path: nil) }
                let decodeStart = DispatchTime.now().uptimeNanoseconds
                // The progressive decode's final image, if the fetch had one.
                let progressiveResult = await deliveries.frame(of: resource)
                let image: DecodedImage
                // (Scaling a progressive frame to the token's size is pixel work: on the blocking pool.)
                if case .success(let frame)? = progressiveResult, let fitted = await BlockingWork.run({ fitted(frame, spec: spec) }) {
                    image = fitted
                } else if case .failure(let error)? = progressiveResult {
                    throw DeliveryFailure(error, settings: settings)
                } else {
                    // No progressive decode, or one scaled for other tokens below what this one
                    // asks (a token that joined the fetch after its decode began): decoded whole.
                    var lane = BlockingWork.Lane()
                    let decode = sharedDecode(
                        resource, source: source, spec: spec, deliveries: deliveries, settings: settings, whenDone: nil, lane: &lane)
                    lane.startPending()
                    image = try decoded(await decode.value(), settings: settings)
                }
                let fileTarget = target()
                finished = try await BlockingWork.run { () throws(DeliveryFailure) -> Finished in
                    try finish(image, spec: spec, source: source, to: fileTarget, shared: shared, slots: slots, decodeStart: decodeStart)
                }
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
            if let header {
                let stored = try verified(header)
                result["width"] = JSONValue(stored.width)
                result["height"] = JSONValue(stored.height)
                if spec.verifyPixels {
                    try await SourceFacts.decodeEveryPixel(
                        resource, token: token, priority: priority, source: source, spec: spec, slots: slots, settings: settings)
                }
            }
            let mime = source?.mimeType ?? resource.response.mimeType
            result["mimeType"] = JSONValue(mime)
            if let source { result["sourceFormat"] = .string(source.rawValue) }
        }
        // The slot goes on to the next decode while this result waits (below); its bytes stay
        // counted until it is handed over.
        func keepBytesOnly() {
            if hold == nil, payload.count > 0, slot != nil { hold = slots.hold(bytes: payload.count) }
            if let held = slot {
                slots.release(held)
                slot = nil
            }
        }
        if written == nil, spec.delivery == .shared, payload.count > SharedOutput.inlineLimit, !sharedFull {
            // No new file while the client has not taken enough of the earlier ones (the wait is in
            // `reserve`; nil: shared memory is not to be had, inline instead).
            keepBytesOnly()
            let writeStart = DispatchTime.now().uptimeNanoseconds
            if let reservation = try await shared.reserve(payload.count, fileExtension: fileExtension ?? source?.fileExtension ?? "bin") {
                written = await BlockingWork.run { writeShared(payload, into: reservation, shared: shared, spec: spec) }
                if written != nil { timings["writeMs"] = milliseconds(since: writeStart) }
            }
        }
        let placed: FrameDelivery.Placed
        if let written {
            placed = written
        } else {
            if spec.delivery != .none, spec.delivery != .file {
                // No new inline payload while the reader is behind: memory stays bounded.
                keepBytesOnly()
                await outputCapacity()
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

    /// A token's image decoded whole, from the moment its slot is let in: on the thread of the
    /// decode that gave the slot back, if one did (`DecodeSlots.acquire(admitted:)`). That
    /// thread then finishes the token (renders its image, writes its file) and gives the slot
    /// back, so the next decode it lets in starts there too (`decodeAdmitted`).
    private static func decodedWhole(
        _ resource: FetchedResource, token: DownloadToken, priority: DownloadPriority, cost: Int, source: ImageFormat?,
        spec: OutputSpec, target: FrameDelivery.Target, deliveries: FetchDeliveries, slots: DecodeSlots, shared: SharedOutput,
        settings: DecodeSettings
    ) async throws(DeliveryFailure) -> Finished {
        let step = await slots.acquire(token: token, priority: priority, cost: cost) {
            held, lane -> Promise<Result<Finished, DeliveryFailure>> in
            let start = DispatchTime.now().uptimeNanoseconds
            let step = Promise<Result<Finished, DeliveryFailure>>()
            decodeAdmitted(
                resource, token: token, key: decodeKey(spec), held: held, slots: slots, deliveries: deliveries, lane: &lane,
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

    /// An RGBA bitmap of `width` × `height` (overflow wraps rather than traps: sizes that large fail
    /// the pixel limit anyway).
    static func bitmapCost(width: Int, height: Int) -> Int {
        width.multipliedReportingOverflow(by: height).partialValue &* 4
    }

    /// A decode of `bytes` of compressed data whose size was not found: sixteen times as much.
    static func bitmapCost(unknownSizeOf bytes: Int) -> Int {
        bytes &* 16
    }

    /// What a decoded image is delivered as: the event's fields, the bytes, their type.
    struct Rendered: Sendable {
        var fields: JSONObject
        var payload: Payload
        /// The payload's size (for a raw image described but not made, the size it would have).
        var byteLength: Int
        var mimeType: String
        var fileExtension: String
    }

    /// A progressive decode's image at what the token asked of the file's image, or nil when the
    /// decode holds fewer pixels than that (it was scaled for the fetch's other tokens).
    static func fitted(_ frame: FetchDeliveries.Frame, spec: OutputSpec) -> DecodedImage? {
        let target = ImageResampler.fittedSize(
            width: frame.source.width, height: frame.source.height, maxPixelSize: spec.maxPixelSize, maxPixelCount: spec.maxPixelCount)
        guard frame.image.width >= target.width, frame.image.height >= target.height else { return nil }
        return resized(frame.image, to: target, spec: spec)
    }

    /// In the token's layout, at `target`.
    static func resized(_ image: DecodedImage, to target: (width: Int, height: Int), spec: OutputSpec) -> DecodedImage {
        ImageResampler.resize(spec.format.pixels(of: image), width: target.width, height: target.height)
    }

    /// A decoded image made into what the token asked for: rendered, and its file written when
    /// its delivery is a file (or shared memory, when the client has room for it).
    struct Finished: Sendable {
        var rendered: Rendered
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

    /// `image` rendered (`renderNow`; for a token that delivers nothing, only described), then
    /// written to `target` if its delivery is a file, or into `shared` if it goes through shared
    /// memory and the client has room for it now (else the token's task waits for room): on the
    /// calling thread, one on the blocking pool. `decodeStart`: when its decode slot was let in.
    static func finish(
        _ image: DecodedImage, spec: OutputSpec, source: ImageFormat?, to target: FrameDelivery.Target, shared: SharedOutput,
        slots: DecodeSlots, decodeStart: UInt64
    ) throws(DeliveryFailure) -> Finished {
        let rendered =
            spec.delivery == .none
            ? described(
                width: image.width, height: image.height, orientation: image.orientation, source: image.format, spec: spec,
                animation: image.animation)
            : try renderNow(image, spec: spec)
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
                placed = writeShared(rendered.payload, into: reservation, shared: shared, spec: spec)
                sharedFull = placed == nil
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

    /// `payload` written into its reserved shared-memory file (on the calling thread: a decoding
    /// one, or one of the blocking pool): the event's fields, `sha256` first when asked; nil when
    /// shared memory has no room for it (to be delivered inline).
    static func writeShared(
        _ payload: Payload, into reservation: SharedOutput.Reservation, shared: SharedOutput, spec: OutputSpec
    ) -> FrameDelivery.Placed? {
        guard let path = shared.write(payload, into: reservation) else { return nil }
        var fields: JSONObject = [:]
        if FrameDelivery.wantsDigest(spec) { fields["sha256"] = .string(payload.withUnsafeBytes { SHA256.hex($0) }) }
        fields["path"] = .string(path)
        fields["shared"] = true
        return .delivered(fields, path: path)
    }

    /// Milliseconds since `start` (`DispatchTime`'s nanoseconds), to two decimals, for a token's metrics.
    static func milliseconds(since start: UInt64) -> JSONValue {
        .double((Double(DispatchTime.now().uptimeNanoseconds - start) / 1e4).rounded() / 100)
    }

    /// A partial image in an encoded format (PNG, JPEG, WebP), encoded from the decoder's frame
    /// where it lies (full size, upright as stored): the fields `renderNow` gives.
    static func renderPartialEncoded(_ frame: BorrowedPixels, orientation: Int, source: ImageFormat, spec: OutputSpec) throws(DeliveryFailure) -> Rendered {
        var rendered = described(width: frame.width, height: frame.height, orientation: orientation, source: source, spec: spec)
        guard let encoding = spec.encoding else { throw .output("no encoded format to render", path: nil) }
        do throws(DecodeError) { rendered.payload = Payload(try ImageEncoders.encode(frame, as: encoding)) } catch {
            throw .output(error.description, path: nil)
        }
        rendered.byteLength = rendered.payload.count
        return rendered
    }

    /// `render`, on the calling thread (already off the network and cooperative threads). PNGs,
    /// final and partial alike, use the encoder's fast settings (the Up filter, `iw_deflate`'s Huffman coding with runs):
    /// much faster than libpng's defaults, for slightly larger files.
    static func renderNow(_ image: DecodedImage, spec: OutputSpec) throws(DeliveryFailure) -> Rendered {
        let upright = spec.applyOrientation ? image.applyingOrientation() : image
        var rendered = described(
            width: image.width, height: image.height, orientation: image.orientation, source: image.format, spec: spec,
            animation: image.animation)
        if let encoding = spec.encoding {
            do throws(DecodeError) { rendered.payload = Payload(try ImageEncoders.encode(upright, as: encoding)) } catch {
                throw .output(error.description, path: nil)
            }
            rendered.byteLength = rendered.payload.count
            return rendered
        }
        rendered.payload = Payload(upright.pixels)
        return rendered
    }

    /// What `renderNow` says of an image of this stored size as the token receives it (turned
    /// upright if asked: orientations 5–8 swap the sides), without its bytes: `byteLength` is the
    /// raw formats' size, 0 for encoded formats until encoded. An animated source's frames and
    /// loops are said too (`animated`, `frameCount`, `loopCount`).
    static func described(
        width stored: Int, height storedHeight: Int, orientation: Int, source: ImageFormat, spec: OutputSpec, animation: Animation? = nil
    ) -> Rendered {
        let turned = spec.applyOrientation && orientation >= 5 && orientation <= 8
        let (width, height) = turned ? (storedHeight, stored) : (stored, storedHeight)
        var fields: JSONObject = [
            "width": JSONValue(width), "height": JSONValue(height),
            "sourceFormat": .string(source.rawValue), "orientation": JSONValue(orientation),
        ]
        if let animation {
            fields["animated"] = true
            fields["frameCount"] = JSONValue(animation.frameCount)
            if let loops = animation.loopCount { fields["loopCount"] = JSONValue(loops) }
        }
        if let encoding = spec.encoding {
            let mime = encoding.format.mimeType
            fields["mimeType"] = .string(mime)
            return Rendered(fields: fields, payload: Payload([]), byteLength: 0, mimeType: mime, fileExtension: spec.format.fileExtension)
        }
        let stride = width * spec.format.layout.channels
        fields["pixelFormat"] = .string(spec.format.rawValue)
        fields["stride"] = JSONValue(stride)
        fields["mimeType"] = "application/octet-stream"
        return Rendered(
            fields: fields, payload: Payload([]), byteLength: stride * height, mimeType: "application/octet-stream",
            fileExtension: spec.format.rawValue)
    }

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
        _ resource: FetchedResource, token: DownloadToken, key: FetchDeliveries.Ledger.DecodeKey, held: DecodeSlots.Slot,
        slots: DecodeSlots, deliveries: FetchDeliveries, lane: inout BlockingWork.Lane,
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
            deliveries.doneDecoding(resource, token: token)
            giveBack(&lane)
        }
        if deliveries.sharedDecode(for: resource, key: key, whenDone: hook, lane: &lane, decode: decode).joined {
            giveBack(&lane)
        }
    }

    /// What makes two tokens' decodes of one fetch the same.
    static func decodeKey(_ spec: OutputSpec) -> FetchDeliveries.Ledger.DecodeKey {
        FetchDeliveries.Ledger.DecodeKey(format: spec.format, maxPixelSize: spec.maxPixelSize, maxPixelCount: spec.maxPixelCount)
    }

    /// The decode of the image this token asked for, once for every token of the fetch that asks
    /// the same (a new one is handed on to `lane`). `source`: the format the body's signature names.
    static func sharedDecode(
        _ resource: FetchedResource, source: ImageFormat?, spec: OutputSpec, deliveries: FetchDeliveries, settings: DecodeSettings,
        whenDone: SharedDecode.Hook?, lane: inout BlockingWork.Lane
    ) -> SharedDecode {
        deliveries.sharedDecode(
            for: resource, key: decodeKey(spec), whenDone: whenDone, lane: &lane,
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
            options.layout = spec.format.decodeLayout(for: source)
            options.maxPixels = settings.maxPixels
            options.maxScans = settings.maxProgressiveScans
            options.maxFrames = settings.maxFrames
            return try ImageDecoders.decode(
                Array(body.readableBytesView), options: options, maxPixelSize: spec.maxPixelSize, maxPixelCount: spec.maxPixelCount)
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
