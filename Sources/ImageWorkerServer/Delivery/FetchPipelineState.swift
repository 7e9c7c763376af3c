import ImageDecoding
import ImageDownloader

/// What one fetch's pipeline holds, as a value: each event changes it and says what to do, and
/// `FetchPipeline` does it under its lock. Tested without I/O (`FetchPipelineStateTests`):
/// `Stream` and `Decode` stand for the progressive decoder and a shared decode's task, which the
/// state only holds.
///
/// - The **body**: while it arrives, the progressive decoder a streaming token asked for (made
///   with the first bytes, dropped when the body starts over); once it is complete, that decoder
///   finishes and its image waits for the tokens; once the fetch ended without a body, nothing.
/// - The **decodes** of the complete body: one per decode request (`DecodeKey`), shared by every
///   token of the fetch that asks the same, dropped once every consumer (a token whose processor
///   got the body) is done with them.
/// - The **consumers** still to finish: the last one releases everything.
struct FetchPipelineState<Stream: Sendable, Decode: Sendable>: Sendable {
    /// What makes two tokens' decodes of one fetch the same.
    struct DecodeKey: Hashable, Sendable {
        var format: OutputSpec.Format
        /// The final image's size terms (`OutputGeometry.final`).
        var geometry: OutputGeometry
        var colorProfile = ColorHandling.srgb
        var frames = FrameSelection.first
    }

    enum Body: Sendable {
        /// No byte fed to a decoder yet (or the body started over).
        case waiting
        /// Bytes are being fed to this decoder.
        case streaming(Stream)
        /// The body is complete; the decoder (if any) took every byte.
        case complete(Stream?)
        /// The fetch failed, was cancelled, or was released: no more bytes.
        case ended
    }

    private(set) var body = Body.waiting
    private(set) var decodes: [DecodeKey: Decode] = [:]
    /// Consumers still to finish; nil until the first finishes (it says how many there are).
    private(set) var remaining: Int?
    /// Consumers that need the decodes no more: their decode's hook has run, or they finished.
    private var doneDecoding: Set<DownloadToken> = []

    /// The progressive decoder, while or once it had the body.
    var stream: Stream? {
        switch body {
        case .streaming(let stream): return stream
        case .complete(let stream): return stream
        case .waiting, .ended: return nil
        }
    }

    // MARK: The body as it arrives

    enum ChunkAction: Sendable {
        case feed(Stream)
        /// No decoder yet: make one (`streamStarted`), then feed it.
        case start
        /// Too late (the body is complete, or the fetch ended): dropped.
        case ignore
    }

    /// Bytes of the body arrived for the fetch's streaming tokens.
    func chunk() -> ChunkAction {
        switch body {
        case .waiting: return .start
        case .streaming(let stream): return .feed(stream)
        case .complete, .ended: return .ignore
        }
    }

    mutating func streamStarted(_ stream: Stream) {
        if case .waiting = body { body = .streaming(stream) }
    }

    /// The body starts over: the decoder is taken out (to be abandoned); a new one starts with the
    /// next bytes.
    mutating func restarted() -> Stream? {
        guard case .streaming(let stream) = body else { return nil }
        body = .waiting
        return stream
    }

    /// The body is complete: the decoder (to be told) keeps its image for the tokens.
    mutating func complete() -> Stream? {
        switch body {
        case .waiting:
            body = .complete(nil)
            return nil
        case .streaming(let stream):
            body = .complete(stream)
            return stream
        case .complete, .ended:
            return nil
        }
    }

    /// The fetch ended without a complete body: its decoder (if any) is taken out, to be abandoned.
    mutating func ended() -> Stream? {
        let stream: Stream?
        if case .streaming(let running) = body { stream = running } else { stream = nil }
        body = .ended
        return stream
    }

    // MARK: The tokens' deliveries

    enum DecodeAction: Sendable {
        /// Another token of the fetch started this decode: await it.
        case join(Decode)
        /// The first: start it (`decodeStarted`).
        case start
    }

    func decode(_ key: DecodeKey) -> DecodeAction {
        decodes[key].map { .join($0) } ?? .start
    }

    mutating func decodeStarted(_ key: DecodeKey, _ decode: Decode) {
        decodes[key] = decode
    }

    /// `token`, a consumer of the fetch (one of `consumers`), needs the fetch's decodes no more:
    /// its decode's hook has run (it holds what it needs). Once every consumer is done with them,
    /// the decodes are dropped, so that a decoded image lives as long as someone holds it, not
    /// until the last consumer's event.
    mutating func doneDecoding(_ token: DownloadToken, consumers: Int) {
        doneDecoding.insert(token)
        if doneDecoding.count >= max(1, consumers) { decodes = [:] }
    }

    enum DeliveredAction: Sendable {
        case none
        /// The last consumer finished: the decodes are dropped, and the progressive decoder (if
        /// any) gives its memory back.
        case release(Stream?)
    }

    /// A consumer of the fetch (one of `consumers`) finished its delivery, whatever the outcome.
    mutating func delivered(_ token: DownloadToken, consumers: Int) -> DeliveredAction {
        let left = (remaining ?? max(1, consumers)) - 1
        guard left <= 0 else {
            remaining = left
            doneDecoding(token, consumers: consumers)
            return .none
        }
        remaining = 0
        let stream = self.stream
        (body, decodes) = (.ended, [:])
        return .release(stream)
    }
}
