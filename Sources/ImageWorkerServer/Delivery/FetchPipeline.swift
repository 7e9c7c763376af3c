import Dispatch
import ImageDecoding
import ImageDownloader
import NIOCore

/// One fetch's way from body to its tokens' deliveries: made by the downloader when the fetch's
/// first attempt launches (`FetchFollower`), told the body's events in order, and handed to each
/// token's processor inside the resource (`OutputDelivery` reaches it as `resource.pipeline`).
/// What the fetch's tokens share lives here and nowhere else, in one value (`FetchPipelineState`)
/// under one lock: the progressive decoder fed while bytes arrive (`ProgressiveSession`, on its
/// own serial queue), the shared decodes of the complete body (`SharedDecode`), and how many
/// tokens are still to finish. The delivery stage's shared parts (the wire, the decode budget,
/// each live token's `TokenOutputs`) are `stage`'s. It goes with the fetch: no table of fetches
/// outlives one.
final class FetchPipeline: FetchFollower {
    typealias State = FetchPipelineState<ProgressiveSession, SharedDecode>

    /// A fetch's progressively decoded image, and the size it has in the file.
    struct Frame: Sendable {
        var image: DecodedImage
        var source: (width: Int, height: Int)
        /// What the file says of its colours (the frame's values are as stored, but a CMYK
        /// file's): each token's image is converted, or not, as it asks.
        var colorProfile = ColorProfile()
    }

    let fetchID: Int
    let stage: FetchDeliveries
    private let state = LockedState(State())

    init(fetchID: Int, stage: FetchDeliveries) {
        (self.fetchID, self.stage) = (fetchID, stage)
    }

    // MARK: The body as it arrives (fetches with a progressive token only)

    func bodyArrived(offset: Int64, bytes: ByteBuffer, tokens: [DownloadToken]) {
        let stage = self.stage
        var started = false
        let session = state.withLock { s -> ProgressiveSession? in
            switch s.chunk() {
            case .feed(let existing): return existing
            case .ignore: return nil
            case .start:
                let made = ProgressiveSession(fetchID: fetchID, slots: stage.slots)
                s.streamStarted(made)
                started = true
                return made
            }
        }
        guard let session else { return }
        if started { stage.countDecode() }
        let settings = stage.settings.withLock { $0 }
        session.queue.async {
            guard let progress = session.feed(offset: offset, bytes: bytes, demand: stage.demand(tokens), settings: settings) else { return }
            stage.partialImages(
                from: progress.decoder, source: progress.source, colorProfile: progress.colorProfile, tokens: tokens,
                frameUpdated: progress.frameUpdated)
        }
    }

    func bodyRestarted() {
        guard let session = state.withLock({ $0.restarted() }) else { return }
        session.queue.async { session.abandon() }
    }

    func bodyComplete() {
        guard let session = state.withLock({ $0.complete() }) else { return }
        session.queue.async { session.end() }
    }

    func fetchEnded() {
        guard let session = state.withLock({ $0.ended() }) else { return }
        session.queue.async { session.abandon() }
    }

    /// The fetch's progressively decoded final image (nil when no decoder followed its body),
    /// once its decoder has taken every byte; with the orientation the whole file records, as a
    /// whole decode has it (a WebP's EXIF chunk comes after its image data, a PNG's `eXIf` may).
    func frame(of resource: FetchedResource) async -> Result<Frame, DecodeError>? {
        guard resource.streamed, let session = state.withLock({ $0.stream }) else { return nil }
        let result = await withCheckedContinuation { (continuation: CheckedContinuation<Result<Frame, DecodeError>?, Never>) in
            session.queue.async { continuation.resume(returning: session.result) }
        }
        guard case .success(var frame)? = result else { return result }
        resource.body.withUnsafeReadableBytes { body in
            if frame.image.orientation == 1 { frame.image.orientation = ImageDecoders.recordedOrientation(body, format: frame.image.format) }
            frame.colorProfile = ColorProfile.read(body, format: frame.image.format)
        }
        return .success(frame)
    }

    // MARK: Once the body is in

    /// The decode for `key`, once for every token of the fetch that asks the same: the one a
    /// token started already (`joined`), or a new one handed on to `lane` to run. `whenDone` is
    /// added to it before it can end (it runs on the decoding thread).
    func sharedDecode(
        _ key: State.DecodeKey, whenDone: SharedDecode.Hook?, lane: inout BlockingWork.Lane,
        decode: @escaping @Sendable () throws(DecodeError) -> DecodedImage
    ) -> (decode: SharedDecode, joined: Bool) {
        let (shared, made) = state.withLock { s -> (SharedDecode, Bool) in
            if case .join(let running) = s.decode(key) { return (running, false) }
            let made = SharedDecode(decode)
            s.decodeStarted(key, made)
            return (made, true)
        }
        if made { stage.countDecode() }
        if let whenDone { shared.whenDone(whenDone, lane: &lane) }
        if made { lane.handOn { shared.run(&$0) } }
        return (shared, !made)
    }

    /// `token` (one of the resource's consumers) has what it needs of its decode (its hook ran):
    /// once every consumer has, the fetch's decodes are let go.
    func doneDecoding(_ resource: FetchedResource, token: DownloadToken) {
        state.withLock { $0.doneDecoding(token, consumers: resource.consumers) }
    }

    /// `token` finished its delivery (also one that needed no decode, or failed). The last one
    /// releases the fetch's decodes and progressive decoder.
    func delivered(_ resource: FetchedResource, token: DownloadToken) {
        let action = state.withLock { $0.delivered(token, consumers: resource.consumers) }
        if case .release(let session?) = action {
            session.queue.async { session.giveMemoryBack() }
        }
    }
}

extension FetchedResource {
    /// The pipeline of the fetch this body came from (the worker's downloader makes one per fetch).
    var pipeline: FetchPipeline? { follower as? FetchPipeline }
}
