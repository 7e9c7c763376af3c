import Dispatch
import Foundation
import ImageDecoding
import ImageDownloader
import ImageWorkerProtocol
import NIOCore

/// Partial images while bytes arrive. One incremental decoder per fetch that has a progressive
/// token, fed on the fetch's own serial queue (never a network thread), each byte once; its final
/// image serves every token of the fetch. A partial image is rendered for each progressive token
/// at most every `partialIntervalMs`, delivered like the final image (the same file, replaced
/// atomically, or inline), and sent under the lock that also sends the token's terminal event, so
/// no partial image can follow it. Partial files are written on the fetch's queue before the
/// final result is handed out, so a late partial never overwrites the final file.
///
/// The decoder starts once the image's header is in, at the smallest size that serves the
/// fetch's progressive tokens (`maxPixelSize`, `maxPixelCount`): JPEG at libjpeg's DCT scale, a
/// non-interlaced PNG scaled row by row, so a thumbnail never holds the full-size image.
final class ProgressiveDecodes: Sendable {
    /// A fetch's progressively decoded image, and the size it has in the file.
    struct Frame: Sendable {
        var image: DecodedImage
        var source: (width: Int, height: Int)
    }

    struct Registration: Sendable {
        var spec: OutputSpec
        /// The URL the token asked for, which names its file in a `dir`.
        var url: String
        var instance: UInt64
        var sequence = 0
        var lastPartialAt: UInt64 = 0
        var reservedPath: String?
    }

    private let registry = LockedState<(next: UInt64, tokens: [DownloadToken: Registration])>((0, [:]))
    private let sessions = LockedState<[Int: Session]>([:])
    private let started = LockedState(0)

    /// Progressive decodes started since start.
    var decodesStarted: Int { started.withLock { $0 } }
    /// Fetches whose decoder is still held.
    var openSessions: Int { sessions.withLock { $0.count } }
    private let writer: WireWriter
    private let settings: LockedState<DecodeSettings>
    /// The delivery stage's memory budget, which a progressive decode's bitmap counts against.
    let slots: DecodeSlots

    init(writer: WireWriter, settings: LockedState<DecodeSettings>, slots: DecodeSlots) {
        self.writer = writer
        self.settings = settings
        self.slots = slots
    }

    /// A progressive download was accepted for `token`.
    func register(_ token: DownloadToken, url: String, spec: OutputSpec) {
        registry.withLock { r in
            r.next += 1
            r.tokens[token] = Registration(spec: spec, url: url, instance: r.next)
        }
    }

    /// Sends a token's terminal event, atomically with dropping its registration.
    func finish(_ token: DownloadToken, send: () -> Void) {
        registry.withLock { r in
            r.tokens[token] = nil
            send()
        }
    }

    func reservedPath(_ token: DownloadToken) -> String? {
        registry.withLock { $0.tokens[token]?.reservedPath }
    }

    func observe(_ notice: BodyNotice) {
        switch notice {
        case .chunk(let fetchID, let offset, let bytes, let tokens):
            let session = sessions.withLock { all -> Session in
                if let existing = all[fetchID] { return existing }
                let created = Session(fetchID: fetchID)
                all[fetchID] = created
                started.withLock { $0 += 1 }
                return created
            }
            let settings = self.settings.withLock { $0 }
            session.queue.async { session.feed(offset: offset, bytes: bytes, tokens: tokens, settings: settings, owner: self) }
        case .end(let fetchID):
            guard let session = sessions.withLock({ $0[fetchID] }) else { return }
            session.queue.async { session.end(owner: self) }
        case .abort(let fetchID):
            guard let session = sessions.withLock({ $0.removeValue(forKey: fetchID) }) else { return }
            session.queue.async { session.abandon(owner: self) }
        }
    }

    /// The fetch's progressively decoded final image (nil when the fetch had no progressive
    /// token), once its decoder has taken every byte.
    func take(_ resource: FetchedResource) async -> Result<Frame, DecodeError>? {
        guard let session = sessions.withLock({ $0[resource.fetchID] }) else { return nil }
        return await withCheckedContinuation { (continuation: CheckedContinuation<Result<Frame, DecodeError>?, Never>) in
            session.queue.async { continuation.resume(returning: session.result) }
        }
    }

    /// Every token of the fetch has finished its delivery (its `DeliverySession` was released):
    /// the decoder and its frame go.
    func release(_ fetchID: Int) {
        guard let session = sessions.withLock({ $0.removeValue(forKey: fetchID) }) else { return }
        session.queue.async { session.giveMemoryBack(owner: self) }
    }

    /// The progressive tokens among `tokens` whose next partial image is due at `now` (their first,
    /// or `partialIntervalMs` after their last).
    private func due(_ tokens: [DownloadToken], now: UInt64) -> [(DownloadToken, Registration)] {
        registry.withLock { r in
            tokens.compactMap { token -> (DownloadToken, Registration)? in
                guard let registration = r.tokens[token] else { return nil }
                let interval = UInt64(max(0, registration.spec.partialIntervalMs)) * 1_000_000
                return registration.sequence == 0 || now &- registration.lastPartialAt >= interval ? (token, registration) : nil
            }
        }
    }

    /// How to decode for `tokens`: the smallest size that gives each what its spec asks of an
    /// image of `source` size (the largest of their fitted sizes; the full size when one asks no
    /// scaling), in their layout when they share one (so that the pixels are the whole-buffer
    /// path's), else RGBA.
    func decodePlan(for tokens: [DownloadToken], source: (width: Int, height: Int)) -> (
        target: (width: Int, height: Int), layout: PixelLayout
    ) {
        let specs = registry.withLock { r in tokens.compactMap { r.tokens[$0]?.spec } }
        let fitted = specs.map {
            ImageResampler.fittedSize(width: source.width, height: source.height, maxPixelSize: $0.maxPixelSize, maxPixelCount: $0.maxPixelCount)
        }
        let layouts = Set(specs.map(\.format.layout))
        let layout = layouts.count == 1 ? layouts.first! : .rgba
        guard let widest = fitted.map(\.width).max(), let tallest = fitted.map(\.height).max() else { return (source, layout) }
        return ((widest, tallest), layout)
    }

    /// Whether a frame decoded now would be used for any of `tokens`: when not, the decoder skips
    /// rendering it (a progressive JPEG's output pass over the whole image). Tokens served by the
    /// decoder's preview need no frame.
    func wantsPartialFrame(_ tokens: [DownloadToken], decoder: any IncrementalImageDecoder, source: (width: Int, height: Int)?) -> Bool {
        due(tokens, now: DispatchTime.now().uptimeNanoseconds).contains { _, registration in
            guard let source else { return true }
            return !Self.previewServes(registration.spec, decoder, source: source)
        }
    }

    /// The size of a token's partial images for an image of `source` size: its final size, fitted
    /// into `partialMaxPixelSize` when it has one.
    static func partialSize(_ spec: OutputSpec, source: (width: Int, height: Int)) -> (width: Int, height: Int) {
        let asked = ImageResampler.fittedSize(
            width: source.width, height: source.height, maxPixelSize: spec.maxPixelSize, maxPixelCount: spec.maxPixelCount)
        guard let limit = spec.partialMaxPixelSize else { return asked }
        return ImageResampler.fittedSize(width: asked.width, height: asked.height, maxPixelSize: limit, maxPixelCount: nil)
    }

    /// Whether the decoder's preview (a progressive JPEG's block averages, an eighth of the image)
    /// serves the token's partial images: when it is at least 90% of their size on both sides
    /// (enlarged by at most a ninth, a difference the eye does not see in a preview: 500 pixels
    /// for 512 from a 4000-pixel photo). Then they need no partial frame.
    static func previewServes(_ spec: OutputSpec, _ decoder: any IncrementalImageDecoder, source: (width: Int, height: Int)) -> Bool {
        guard spec.partialMaxPixelSize != nil, let preview = decoder.previewSize else { return false }
        let size = partialSize(spec, source: source)
        return preview.width * 10 >= size.width * 9 && preview.height * 10 >= size.height * 9
    }

    /// On the session's queue: renders and sends a partial image for each due progressive token,
    /// from the decoder's frame when this feed updated it (`frameUpdated`), or from its preview
    /// for tokens whose `partialMaxPixelSize` the preview covers.
    func partialImages(
        from decoder: any IncrementalImageDecoder, source: (width: Int, height: Int), tokens: [DownloadToken], fetchID: Int,
        frameUpdated: Bool
    ) {
        let now = DispatchTime.now().uptimeNanoseconds
        // While the reader is behind, no new inline payload is built: its partial images wait
        // for the next frame after it caught up (the final image is never skipped).
        let backedUp = writer.backedUp
        let due = due(tokens, now: now).filter { !backedUp || ($0.1.spec.delivery != .inline && $0.1.spec.delivery != .shared) }
        guard !due.isEmpty, let (frameWidth, frameHeight) = decoder.size else { return }
        let filled = decoder.filledRows
        let orientation = decoder.orientation
        // Each distinct rendering once, however many tokens want it. A full-size PNG of the frame
        // (the usual case) is encoded straight from the decoder's buffer, with no copy of it.
        var preview: (image: DecodedImage, passes: Int)??
        var renders: [RenderKey: (rendered: OutputDelivery.Rendered, passes: Int, filledRows: Int)] = [:]
        for (token, registration) in due {
            let spec = registration.spec
            let key = RenderKey(spec)
            if renders[key] == nil {
                let size = Self.partialSize(spec, source: source)
                if Self.previewServes(spec, decoder, source: source) {
                    if preview == nil { preview = decoder.preview() }
                    guard let (image, passes) = preview ?? nil,
                        let rendered = try? OutputDelivery.renderNow(OutputDelivery.resized(image, to: size, spec: spec), spec: spec)
                    else { continue }
                    renders[key] = (rendered, passes, size.height)
                } else {
                    guard frameUpdated else { continue }  // no new frame for this token
                    // Within the frame (a late joiner may ask more than it holds).
                    let target = (width: min(size.width, frameWidth), height: min(size.height, frameHeight))
                    let rows = frameHeight > 0 ? filled * target.height / frameHeight : 0
                    var rendered: OutputDelivery.Rendered?
                    if spec.delivery == .none, !spec.format.isEncoded {
                        // Delivered nowhere: described, never copied out of the decoder.
                        rendered = OutputDelivery.described(
                            width: target.width, height: target.height, orientation: orientation, source: decoder.format, spec: spec)
                    } else if spec.format.isEncoded, target == (frameWidth, frameHeight), !spec.applyOrientation || orientation == 1 {
                        rendered = decoder.withCurrentPixels { frame in
                            try? OutputDelivery.renderPartialEncoded(frame, orientation: orientation, source: decoder.format, spec: spec)
                        } ?? nil
                    } else {
                        // Taken from the frame where it lies (scaled down, or copied at full
                        // size), then in the token's layout.
                        let image = decoder.withCurrentPixels { frame in
                            ImageResampler.resize(
                                frame, width: target.width, height: target.height, orientation: orientation, format: decoder.format)
                        }
                        if let image { rendered = try? OutputDelivery.renderNow(spec.format.pixels(of: image), spec: spec) }
                    }
                    guard let rendered else { continue }
                    renders[key] = (rendered, decoder.completedPasses, rows)
                }
            }
            guard let (rendered, passes, rows) = renders[key] else { continue }
            var params: JSONObject = ["token": token.json, "sequence": JSONValue(registration.sequence + 1)]
            for (key, value) in rendered.fields { params[key] = value }
            params["filledRows"] = JSONValue(rows)
            params["passes"] = JSONValue(passes)
            params["byteLength"] = JSONValue(rendered.byteLength)
            var path = registration.reservedPath
            switch spec.delivery {
            case .none:
                break
            case .inline, .shared:
                // A `shared` token's partial images come inline: a replaced (never sent) partial
                // event must not leave a file nobody will take.
                params["data"] = .string(rendered.payload.base64())
            case .file:
                let written: String
                do throws(DeliveryFailure) {
                    let result = try FileTarget.write(
                        rendered.payload, spec: spec, reserved: path, url: registration.url, token: token, source: decoder.format,
                        fileExtension: rendered.fileExtension)
                    // A `skipExisting` file that appeared meanwhile is kept: no partial images into it.
                    guard !result.skipped else { continue }
                    written = result.path
                } catch {
                    continue  // the final delivery reports output failures
                }
                path = written
                params["path"] = .string(written)
                params["uri"] = .string(URL(fileURLWithPath: written, isDirectory: false).absoluteString)
            }
            registry.withLock { r in
                guard var current = r.tokens[token], current.instance == registration.instance else { return }
                current.sequence += 1
                current.lastPartialAt = now
                current.reservedPath = path
                r.tokens[token] = current
                writer.send(
                    RPCResponse.notification(method: WorkerEvent.partialImage, params: .object(params)),
                    replaceKey: EventEncoder.replaceKey(token, "partial"), alwaysReplace: true)
            }
        }
    }

    /// What makes two tokens' partial images the same bytes.
    struct RenderKey: Hashable {
        var format: OutputSpec.Format
        var encoding: ImageEncoding?
        var maxPixelSize: Int?
        var maxPixelCount: Int?
        var partialMaxPixelSize: Int?
        var applyOrientation: Bool
        /// Described only (raw pixels delivered nowhere) or made.
        var described: Bool

        init(_ spec: OutputSpec) {
            (format, encoding, maxPixelSize, maxPixelCount, partialMaxPixelSize, applyOrientation) =
                (spec.format, spec.encoding, spec.maxPixelSize, spec.maxPixelCount, spec.partialMaxPixelSize, spec.applyOrientation)
            described = spec.delivery == .none && !spec.format.isEncoded
        }
    }
}
