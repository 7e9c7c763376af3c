import Dispatch
import ImageDecoding
import ImageDownloader
import ImageWorkerProtocol
import NIOCore

/// The delivery stage's one owner of what a fetch shares among its tokens: the progressive
/// decoder fed while bytes arrive, the shared decodes once the body is in, how many tokens are
/// still to finish, and each progressive token's target (`DeliveryLedger`, a value under one
/// lock). Every image a token gets goes through `FrameDelivery.deliver` and `EventEncoder`: its
/// partial images from here (`FetchDeliveries+Partial.swift`), its final one from
/// `OutputDelivery`. A download without `progressive` never reaches the progressive code: its
/// fetch streams no body, and its delivery takes no frame.
final class FetchDeliveries: Sendable {
    /// A fetch's progressively decoded image, and the size it has in the file.
    struct Frame: Sendable {
        var image: DecodedImage
        var source: (width: Int, height: Int)
    }

    typealias Ledger = DeliveryLedger<ProgressiveSession, SharedDecode>

    let ledger = LockedState(Ledger())
    let writer: WireWriter
    let settings: LockedState<DecodeSettings>
    /// The delivery stage's memory budget, which a progressive decode's bitmap counts against.
    let slots: DecodeSlots

    init(writer: WireWriter, settings: LockedState<DecodeSettings>, slots: DecodeSlots) {
        self.writer = writer
        self.settings = settings
        self.slots = slots
    }

    /// Progressive decoders and shared decodes started since start.
    var decodesStarted: Int { ledger.withLock { $0.decodesStarted } }
    /// Fetches with something here (a decoder, a decode, tokens still delivering).
    var openFetches: Int { ledger.withLock { $0.fetches.count } }

    // MARK: Tokens

    /// A progressive download was accepted for `token`.
    func register(_ token: DownloadToken, url: String, spec: OutputSpec) {
        ledger.withLock { $0.register(token, spec: spec, url: url) }
    }

    /// Sends a token's terminal event, atomically with the end of its partial images.
    func finish(_ token: DownloadToken, send: () -> Void) {
        ledger.withLock { l in
            l.tokenEnded(token)
            send()
        }
    }

    /// Where the token's partial images went: its final image replaces the last of them there.
    func reservedPath(_ token: DownloadToken) -> String? {
        ledger.withLock { $0.targets[token]?.reservedPath }
    }

    // MARK: The body as it arrives (fetches with a progressive token only)

    func observe(_ notice: BodyNotice) {
        switch notice {
        case .chunk(let fetchID, let offset, let bytes, let tokens):
            let session = ledger.withLock { l -> ProgressiveSession in
                if case .feed(let existing) = l.chunk(fetchID) { return existing }
                let made = ProgressiveSession(fetchID: fetchID)
                l.streamStarted(fetchID, made)
                return made
            }
            let settings = self.settings.withLock { $0 }
            session.queue.async { session.feed(offset: offset, bytes: bytes, tokens: tokens, settings: settings, owner: self) }
        case .end(let fetchID):
            guard let session = ledger.withLock({ $0.stream(of: fetchID) }) else { return }
            session.queue.async { session.end(owner: self) }
        case .abort(let fetchID):
            guard let session = ledger.withLock({ $0.streamAborted(fetchID) }) else { return }
            session.queue.async { session.abandon(owner: self) }
        }
    }

    /// The fetch's progressively decoded final image (nil when no decoder followed its body),
    /// once its decoder has taken every byte; with the orientation the whole file records, as a
    /// whole decode has it (a WebP's EXIF chunk comes after its image data, a PNG's `eXIf` may).
    func frame(of resource: FetchedResource) async -> Result<Frame, DecodeError>? {
        guard resource.streamed, let session = ledger.withLock({ $0.stream(of: resource.fetchID) }) else { return nil }
        let result = await withCheckedContinuation { (continuation: CheckedContinuation<Result<Frame, DecodeError>?, Never>) in
            session.queue.async { continuation.resume(returning: session.result) }
        }
        guard case .success(var frame)? = result, frame.image.orientation == 1 else { return result }
        frame.image.orientation = resource.body.withUnsafeReadableBytes { ImageDecoders.recordedOrientation($0, format: frame.image.format) }
        return .success(frame)
    }

    // MARK: Once the body is in

    /// The decode for `key`, once for every token of the fetch that asks the same: the one a
    /// token started already (`joined`), or a new one handed on to `lane` to run. `whenDone` is
    /// added to it before it can end (it runs on the decoding thread).
    func sharedDecode(
        for resource: FetchedResource, key: Ledger.DecodeKey, whenDone: SharedDecode.Hook?, lane: inout BlockingWork.Lane,
        decode: @escaping @Sendable () throws(DecodeError) -> DecodedImage
    ) -> (decode: SharedDecode, joined: Bool) {
        let (shared, made) = ledger.withLock { l -> (SharedDecode, Bool) in
            if case .join(let running) = l.decode(resource.fetchID, key) { return (running, false) }
            let made = SharedDecode(decode)
            l.decodeStarted(resource.fetchID, key, made)
            return (made, true)
        }
        if let whenDone { shared.whenDone(whenDone, lane: &lane) }
        if made { lane.handOn { shared.run(&$0) } }
        return (shared, !made)
    }

    /// `token` of the resource's fetch has what it needs of its decode (its hook ran): once every
    /// token of the fetch has, the fetch's decodes are let go.
    func doneDecoding(_ resource: FetchedResource, token: DownloadToken) {
        ledger.withLock { $0.doneDecoding(resource.fetchID, token, consumers: resource.consumers) }
    }

    /// `token` of the resource's fetch finished its delivery (also one that needed no decode, or
    /// failed). The last one releases the fetch's decodes and progressive decoder.
    func delivered(_ resource: FetchedResource, token: DownloadToken) {
        let action = ledger.withLock { $0.delivered(resource.fetchID, token, consumers: resource.consumers) }
        if case .release(let session?) = action {
            session.queue.async { session.giveMemoryBack(owner: self) }
        }
    }
}
