import Dispatch
import ImageDecoding
import ImageDownloader
import ImageWorkerProtocol
import NIOCore

/// The delivery stage's parts that every fetch's pipeline (`FetchPipeline`) shares: the wire, the
/// decode settings and budget, and each progressive token's target (`TokenOutputs`, a value
/// under one lock). Every image a token gets goes through `FrameDelivery.deliver` and
/// `EventEncoder`: its partial images from here (`FetchDeliveries+Partial.swift`), its final one
/// from `OutputDelivery`. A download without `progressive` never reaches the progressive code: its
/// fetch streams no body, and its delivery takes no frame.
final class FetchDeliveries: Sendable {
    let targets = LockedState(TokenOutputs())
    let writer: WireWriter
    let settings: LockedState<DecodeSettings>
    /// The delivery stage's memory budget, which a progressive decode's bitmap counts against.
    let slots: DecodeSlots
    private let started = LockedState(0)

    init(writer: WireWriter, settings: LockedState<DecodeSettings>, slots: DecodeSlots) {
        self.writer = writer
        self.settings = settings
        self.slots = slots
    }

    /// The pipeline of fetch `id`, made by the downloader when the fetch's first attempt launches.
    func makePipeline(_ id: Int) -> FetchPipeline {
        FetchPipeline(fetchID: id, stage: self)
    }

    /// Progressive decoders and shared decodes started since start.
    var decodesStarted: Int { started.withLock { $0 } }

    /// A pipeline started a progressive decoder or a shared decode.
    func countDecode() {
        started.withLock { $0 += 1 }
    }

    // MARK: Tokens

    /// A progressive download was accepted for `token`.
    func register(_ token: DownloadToken, url: String, spec: OutputSpec) {
        targets.withLock { $0.register(token, spec: spec, url: url) }
    }

    /// Sends a token's terminal event, atomically with the end of its partial images; `send`
    /// gets the bytes the token had claimed on the wire, for the line to settle.
    func finish(_ token: DownloadToken, send: (_ claimed: Int) -> Void) {
        targets.withLock { t in
            send(t.tokenEnded(token))
        }
    }

    /// Waits for room on the wire for an inline result whose line takes `bytes`, claimed for
    /// `token` until its terminal event is sent (`finish`): results let through at once count
    /// before their lines exist, so a reader that stops reading holds them all back but one.
    /// False: the token ended meanwhile (its processing was cancelled before its terminal
    /// event, so a claim after it would never be settled): nothing is claimed.
    func claimWire(_ token: DownloadToken, bytes: Int) async -> Bool {
        await writer.waitForCapacity(claiming: bytes)
        let kept = targets.withLock { t -> Bool in
            guard !Task.isCancelled else { return false }
            t.claimed(token, bytes: bytes)
            return true
        }
        if !kept { writer.settle(bytes) }
        return kept
    }

    /// Where the token's partial images went: its final image replaces the last of them there.
    func reservedPath(_ token: DownloadToken) -> String? {
        targets.withLock { $0[token]?.reservedPath }
    }
}
