import Dispatch
import Foundation
import ImageDecoding
import ImageDownloader
import ImageWorkerProtocol
import NIOCore

/// One fetch's progressive decoder, fed the body as it arrives (each byte once) on the fetch's
/// own serial queue, never a network thread. Its final image serves every token of the fetch;
/// while it decodes, each feed says whether its frame moved on, and its fetch's `FetchPipeline`
/// (which owns it) then has the progressive tokens' partial images made from it
/// (`FetchDeliveries.partialImages`). It is told what those tokens ask (`Demand`), and calls
/// nobody back.
///
/// The decoder starts once the image's header is in, at the smallest size that serves the
/// fetch's progressive tokens (`maxPixelSize`, `maxPixelCount`): JPEG at libjpeg's DCT scale, a
/// non-interlaced PNG scaled row by row, so a thumbnail never holds the full-size image.
final class ProgressiveSession: @unchecked Sendable {  // decoder state is confined to `queue`
    /// What the fetch's progressive tokens ask when bytes arrive (read on the queue, before the
    /// feed): every one's spec (the decode's size and layout serve them all), and the specs of
    /// those whose next partial image is due.
    struct Demand {
        var specs: [OutputSpec]
        var due: [OutputSpec]
    }

    /// What a feed did: when the frame (or the preview) moved on, the decoder to make partial
    /// images from, the image's size in the file, and whether the frame's pixels changed.
    struct Progress {
        var decoder: any IncrementalImageDecoder
        var source: (width: Int, height: Int)
        var frameUpdated: Bool
        /// What the file says of its colours (complete before the image data).
        var colorProfile: ColorProfile
    }

    let fetchID: Int
    let queue: DispatchQueue
    /// The delivery stage's memory budget, which the decoder's bitmap counts against.
    private let slots: DecodeSlots
    private var decoder: (any IncrementalImageDecoder)?
    /// The image's size in the file, once its header was read.
    private var source: (width: Int, height: Int)?
    private var pending: [UInt8] = []
    /// The first bytes until what they say of the colours is known (`ColorProfile.readHead`);
    /// nil from then on.
    private var colorHead: [UInt8]? = []
    private var colorProfile = ColorProfile()
    /// How far to look for colour information before taking the file as untagged.
    static let colorSearchLimit = 4 << 20
    private var received: Int64 = 0
    private var settings = DecodeSettings()
    private var demand = Demand(specs: [], due: [])
    private(set) var result: Result<FetchPipeline.Frame, DecodeError>?
    /// The memory of the decode budget the decoder's bitmap holds.
    private var memory: DecodeSlots.Slot?
    /// The budget was taken when the decoder would have started: no partial images; the
    /// image is decoded whole, under the budget, when its body is in (`result` stays nil).
    private var declined = false
    /// How far to look for an image's size (a JPEG's frame header may follow large metadata, a
    /// GIF's first image descriptor long extensions) before decoding at full size without it.
    static let headerSearchLimit = 1 << 20

    init(fetchID: Int, slots: DecodeSlots) {
        (self.fetchID, self.slots) = (fetchID, slots)
        queue = DispatchQueue(label: "image-worker.decode.\(fetchID)", target: .global(qos: .userInitiated))
    }

    /// Feeds the bytes at `offset` (a late joiner's catch-up may overlap what was fed). `demand`
    /// is read only when the bytes are fed (not once the decode is over or was declined).
    func feed(offset: Int64, bytes: ByteBuffer, demand: @autoclosure () -> Demand, settings: DecodeSettings) -> Progress? {
        guard result == nil, !declined else { return nil }
        // A late joiner's catch-up overlaps what was fed: skip what is already in.
        var chunk = Array(bytes.readableBytesView)
        if offset < received {
            let overlap = Int(received - offset)
            guard overlap < chunk.count else { return nil }
            chunk.removeFirst(overlap)
        } else if offset > received {
            result = .failure(.corrupt("missing bytes in the stream"))
            return nil
        }
        received += Int64(chunk.count)
        (self.settings, self.demand) = (settings, demand())
        learnColors(chunk)
        let active: any IncrementalImageDecoder
        if let decoder {
            active = decoder
        } else {
            pending += chunk
            guard pending.count >= ImageFormat.signatureLength else { return nil }
            // The decode's size is chosen from the header: wait for it (a JPEG's frame header
            // may follow large metadata), up to a limit.
            let format = ImageFormat.detect(pending)
            let probed = ImageDecoders.probeSize(pending)
            guard probed != nil || !ImageDecoders.decodedFormats.contains(where: { $0 == format }) || pending.count >= ProgressiveSession.headerSearchLimit
            else { return nil }
            guard let started = start(source: probed) else { return nil }
            active = started
            chunk = pending
            pending = []
        }
        do {
            active.wantsPartialFrames = Self.wantsPartialFrame(self.demand.due, decoder: active, source: source)
            let progress = try active.feed(chunk, isLast: false)
            guard !progress.isDisjoint(with: [.pixels, .scan]), let source = source ?? active.size else { return nil }
            return Progress(decoder: active, source: source, frameUpdated: progress.contains(.pixels), colorProfile: colorProfile)
        } catch {
            result = .failure(error)
            return nil
        }
    }

    /// Reads the colour information from the first bytes, once they hold it.
    private func learnColors(_ chunk: [UInt8]) {
        guard var head = colorHead else { return }
        head += chunk
        colorHead = nil
        guard let format = ImageFormat.detect(head) else {
            if head.count < ImageFormat.signatureLength { colorHead = head }
            return
        }
        if let known = ColorProfile.readHead(head, format: format) {
            colorProfile = known
        } else if head.count < Self.colorSearchLimit {
            colorHead = head
        }
    }

    /// Whether a frame decoded now would be used for any of the due tokens: when not, the
    /// decoder skips rendering it (a progressive JPEG's output pass over the whole image).
    /// Tokens served by the decoder's preview need no frame.
    static func wantsPartialFrame(_ due: [OutputSpec], decoder: any IncrementalImageDecoder, source: (width: Int, height: Int)?) -> Bool {
        due.contains { spec in
            guard let source else { return true }
            return !FetchDeliveries.previewServes(spec, decoder, source: source)
        }
    }

    /// How to decode for specs: the smallest size that gives each what it asks of an image of
    /// `source` size (the largest of their fitted sizes; the full size when one asks no
    /// scaling), in their layout when they share one (so that the pixels are the whole-buffer
    /// path's), else RGBA.
    static func plan(for specs: [OutputSpec], source: (width: Int, height: Int), orientation: Int) -> (
        target: (width: Int, height: Int), layout: PixelLayout
    ) {
        let layouts = Set(specs.map { $0.flattens ? PixelLayout.rgba : $0.format.layout })
        let layout = layouts.count == 1 ? layouts.first! : .rgba
        return (OutputGeometry.decodeSize(serving: specs.map(\.geometry), source: source, orientation: orientation), layout)
    }

    /// Creates the decoder, for an image of `source` size when its header was read (nil, with
    /// the failure in `result`, when it cannot be made).
    private func start(source probed: (width: Int, height: Int)?) -> (any IncrementalImageDecoder)? {
        guard let format = ImageFormat.detect(pending) else {
            result = .failure(.unsupported("unknown image format (no known signature)"))
            return nil
        }
        var options = DecodeOptions()
        options.maxPixels = settings.maxPixels
        options.maxScans = settings.maxProgressiveScans
        options.maxFrames = settings.maxFrames
        // (Only a CMYK file's colours are the decoder's: through its profile unless every token keeps them.)
        options.colorProfile = demand.specs.allSatisfy { $0.colorProfile == .keep } && !demand.specs.isEmpty ? .keep : .srgb
        do {
            if let (width, height) = probed, width > 0, height > 0 {
                source = (width, height)
                try ImageDecoders.checkPixelLimit((width, height), options)
                // (The EXIF orientation comes before the frame header: a box for the upright image
                // swaps a fill's scales when the image is stored turned.)
                let orientation = pending.withUnsafeBytes { ImageDecoders.recordedOrientation($0, format: format) }
                let plan = Self.plan(for: demand.specs, source: (width, height), orientation: orientation)
                options.layout = plan.layout
                // A GIF is decoded onto its whole canvas, and a JPEG XL at its full size, whatever the target.
                let held = format == .gif || format == .jxl ? (width, height) : plan.target
                guard reserve(OutputDelivery.bitmapCost(width: held.0, height: held.1)) else { return nil }
                decoder = try ImageDecoders.makeIncremental(for: format, options: options, source: (width, height), target: plan.target)
            } else {
                // No size within the header search: as a whole decode of such a body is counted.
                guard reserve(OutputDelivery.bitmapCost(unknownSizeOf: pending.count)) else { return nil }
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
    private func reserve(_ cost: Int) -> Bool {
        if let memory = slots.reserve(cost: cost) {
            self.memory = memory
            return true
        }
        declined = true
        pending = []
        return false
    }

    /// The decode is over (its frame, if any, is the delivery's now, counted by its slot), or
    /// the fetch is gone: its memory goes back to the budget.
    func giveMemoryBack() {
        if let memory { slots.release(memory) }
        memory = nil
    }

    func end() {
        defer { giveMemoryBack() }
        guard result == nil, !declined else { return }
        let active: any IncrementalImageDecoder
        if let decoder {
            active = decoder
        } else {
            guard !pending.isEmpty, let started = start(source: ImageDecoders.probeSize(pending)) else {
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

    func abandon() {
        decoder = nil
        result = .failure(.corrupt("abandoned"))
        giveMemoryBack()
    }
}
