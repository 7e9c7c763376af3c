import Dispatch
import Foundation
import ImageDecoding
import ImageDownloader
import ImageWorkerProtocol
import NIOCore

/// One fetch's progressive decoder, fed the body as it arrives (each byte once) on the fetch's
/// own serial queue, never a network thread. Its final image serves every token of the fetch;
/// while it decodes, its frames become the progressive tokens' partial images
/// (`FetchDeliveries.partialImages`). Its fetch's `FetchPipeline` owns it.
///
/// The decoder starts once the image's header is in, at the smallest size that serves the
/// fetch's progressive tokens (`maxPixelSize`, `maxPixelCount`): JPEG at libjpeg's DCT scale, a
/// non-interlaced PNG scaled row by row, so a thumbnail never holds the full-size image.
final class ProgressiveSession: @unchecked Sendable {  // decoder state is confined to `queue`
    let fetchID: Int
    let queue: DispatchQueue
    private var decoder: (any IncrementalImageDecoder)?
    /// The image's size in the file, once its header was read.
    private var source: (width: Int, height: Int)?
    private var pending: [UInt8] = []
    private var received: Int64 = 0
    private var settings = DecodeSettings()
    private var tokens: [DownloadToken] = []
    private(set) var result: Result<FetchPipeline.Frame, DecodeError>?
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

    func feed(offset: Int64, bytes: ByteBuffer, tokens: [DownloadToken], settings: DecodeSettings, owner: FetchDeliveries) {
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
            guard probed != nil || !ImageDecoders.decodedFormats.contains(where: { $0 == format }) || pending.count >= ProgressiveSession.headerSearchLimit
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
                    from: active, source: source, tokens: tokens, frameUpdated: progress.contains(.pixels))
            }
        } catch {
            result = .failure(error)
        }
    }

    /// Creates the decoder, for an image of `source` size when its header was read (nil, with
    /// the failure in `result`, when it cannot be made).
    private func start(source probed: (width: Int, height: Int)?, owner: FetchDeliveries) -> (any IncrementalImageDecoder)? {
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
    private func reserve(_ cost: Int, owner: FetchDeliveries) -> Bool {
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
    func giveMemoryBack(owner: FetchDeliveries) {
        if let memory { owner.slots.release(memory) }
        memory = nil
    }

    func end(owner: FetchDeliveries) {
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
                result = .success(FetchPipeline.Frame(image: image, source: source ?? (image.width, image.height)))
            } else {
                result = .failure(.corrupt("no image decoded"))
            }
        } catch {
            result = .failure(error)
        }
        decoder = nil  // the pixels live on in `result`
    }

    func abandon(owner: FetchDeliveries) {
        decoder = nil
        result = .failure(.corrupt("abandoned"))
        giveMemoryBack(owner: owner)
    }
}
