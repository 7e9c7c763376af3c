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
    fileprivate let slots: DecodeSlots

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
    fileprivate func decodePlan(for tokens: [DownloadToken], source: (width: Int, height: Int)) -> (
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
    fileprivate func wantsPartialFrame(_ tokens: [DownloadToken], decoder: any IncrementalImageDecoder, source: (width: Int, height: Int)?) -> Bool {
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
    fileprivate func partialImages(
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
                    let result = try OutputDelivery.writeFile(
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

    /// One fetch's decoder. Its state is touched only on `queue`.
    final class Session: @unchecked Sendable {  // decoder state is confined to `queue`
        let fetchID: Int
        let queue: DispatchQueue
        private var decoder: (any IncrementalImageDecoder)?
        /// The image's size in the file, once its header was read.
        private var source: (width: Int, height: Int)?
        private var pending: [UInt8] = []
        private var received: Int64 = 0
        private var settings = DecodeSettings()
        private var tokens: [DownloadToken] = []
        private(set) var result: Result<Frame, DecodeError>?
        /// The memory of the decode budget the decoder's bitmap holds.
        private var memory: DecodeSlots.Slot?
        /// The budget was taken when the decoder would have started: no partial images; the
        /// image is decoded whole, under the budget, when its body is in (`result` stays nil).
        private var declined = false
        /// How far to look for an image's size (a JPEG's frame header may follow large metadata, a
        /// GIF's first image descriptor long extensions) before decoding at full size without it.
        static let headerSearchLimit = 1 << 20

        init(fetchID: Int) {
            self.fetchID = fetchID
            queue = DispatchQueue(label: "image-worker.decode.\(fetchID)", target: .global(qos: .userInitiated))
        }

        func feed(offset: Int64, bytes: ByteBuffer, tokens: [DownloadToken], settings: DecodeSettings, owner: ProgressiveDecodes) {
            guard result == nil, !declined else { return }
            // A late joiner's catch-up overlaps what was fed: skip what is already in.
            var chunk = Array(bytes.readableBytesView)
            if offset < received {
                let overlap = Int(received - offset)
                guard overlap < chunk.count else { return }
                chunk.removeFirst(overlap)
            } else if offset > received {
                result = .failure(.corrupt("missing bytes in the stream"))
                return
            }
            received += Int64(chunk.count)
            (self.settings, self.tokens) = (settings, tokens)
            let active: any IncrementalImageDecoder
            if let decoder {
                active = decoder
            } else {
                pending += chunk
                guard pending.count >= ImageFormat.signatureLength else { return }
                // The decode's size is chosen from the header: wait for it (a JPEG's frame header
                // may follow large metadata), up to a limit.
                let format = ImageFormat.detect(pending)
                let probed = ImageDecoders.probeSize(pending)
                guard probed != nil || !ImageDecoders.decodedFormats.contains(where: { $0 == format }) || pending.count >= Session.headerSearchLimit
                else { return }
                guard let started = start(source: probed, owner: owner) else { return }
                active = started
                chunk = pending
                pending = []
            }
            do {
                active.wantsPartialFrames = owner.wantsPartialFrame(tokens, decoder: active, source: source)
                let progress = try active.feed(chunk, isLast: false)
                if !progress.isDisjoint(with: [.pixels, .scan]), let source = source ?? active.size {
                    owner.partialImages(
                        from: active, source: source, tokens: tokens, fetchID: fetchID, frameUpdated: progress.contains(.pixels))
                }
            } catch {
                result = .failure(error)
            }
        }

        /// Creates the decoder, for an image of `source` size when its header was read (nil, with
        /// the failure in `result`, when it cannot be made).
        private func start(source probed: (width: Int, height: Int)?, owner: ProgressiveDecodes) -> (any IncrementalImageDecoder)? {
            guard let format = ImageFormat.detect(pending) else {
                result = .failure(.unsupported("unknown image format (no known signature)"))
                return nil
            }
            var options = DecodeOptions()
            options.maxPixels = settings.maxPixels
            options.maxScans = settings.maxProgressiveScans
            options.maxFrames = settings.maxFrames
            do {
                if let (width, height) = probed, width > 0, height > 0 {
                    source = (width, height)
                    try ImageDecoders.checkPixelLimit((width, height), options)
                    let plan = owner.decodePlan(for: tokens, source: (width, height))
                    options.layout = plan.layout
                    // A GIF is decoded onto its whole canvas, whatever the target.
                    let held = format == .gif ? (width, height) : plan.target
                    guard reserve(OutputDelivery.bitmapCost(width: held.0, height: held.1), owner: owner) else { return nil }
                    decoder = try ImageDecoders.makeIncremental(for: format, options: options, source: (width, height), target: plan.target)
                } else {
                    // No size within the header search: as a whole decode of such a body is counted.
                    guard reserve(OutputDelivery.bitmapCost(unknownSizeOf: pending.count), owner: owner) else { return nil }
                    decoder = try ImageDecoders.makeIncremental(for: format, options: options)
                }
                return decoder
            } catch {
                result = .failure(error)
                return nil
            }
        }

        /// Takes the decoder's memory from the budget; when it is taken, declines (and forgets
        /// the bytes kept so far: the whole decode reads the body).
        private func reserve(_ cost: Int, owner: ProgressiveDecodes) -> Bool {
            if let memory = owner.slots.reserve(cost: cost) {
                self.memory = memory
                return true
            }
            declined = true
            pending = []
            return false
        }

        /// The decode is over (its frame, if any, is the delivery's now, counted by its slot), or
        /// the fetch is gone: its memory goes back to the budget.
        func giveMemoryBack(owner: ProgressiveDecodes) {
            if let memory { owner.slots.release(memory) }
            memory = nil
        }

        func end(owner: ProgressiveDecodes) {
            defer { giveMemoryBack(owner: owner) }
            guard result == nil, !declined else { return }
            let active: any IncrementalImageDecoder
            if let decoder {
                active = decoder
            } else {
                guard !pending.isEmpty, let started = start(source: ImageDecoders.probeSize(pending), owner: owner) else {
                    if result == nil, !declined { result = .failure(.corrupt("no image data")) }
                    return
                }
                active = started
                do { _ = try active.feed(pending, isLast: false) } catch {
                    result = .failure(error)
                    return
                }
            }
            do {
                _ = try active.feed([], isLast: true)
                if active.isComplete, let image = active.currentImage() {
                    result = .success(Frame(image: image, source: source ?? (image.width, image.height)))
                } else {
                    result = .failure(.corrupt("no image decoded"))
                }
            } catch {
                result = .failure(error)
            }
            decoder = nil  // the pixels live on in `result`
        }

        func abandon(owner: ProgressiveDecodes) {
            decoder = nil
            result = .failure(.corrupt("abandoned"))
            giveMemoryBack(owner: owner)
        }

    }
}
