import Dispatch
import Foundation
import ImageDecoding
import ImageDownloader
import ImageWorkerProtocol

/// Partial images while bytes arrive: a partial image is rendered for each progressive token at
/// most every `partialIntervalMs`, delivered like the final image (`FrameDelivery.deliver`: the
/// same file, replaced atomically, or inline), and sent under the targets' lock, which also sends
/// the token's terminal event, so no partial image can follow it. Partial files are written on
/// the fetch's queue before the final result is handed out, so a late partial never overwrites
/// the final file.
extension FetchDeliveries {
    /// What `tokens`' progressive ones ask of the fetch's decoder now (`ProgressiveSession.Demand`).
    func demand(_ tokens: [DownloadToken]) -> ProgressiveSession.Demand {
        let now = DispatchTime.now().uptimeNanoseconds
        return targets.withLock { t in
            ProgressiveSession.Demand(specs: tokens.compactMap { t[$0]?.spec }, due: t.due(tokens, now: now).map(\.1.spec))
        }
    }

    /// Whether the decoder's preview (a progressive JPEG's block averages, an eighth of the image)
    /// serves the token's partial images: when it is at least 90% of their size on both sides
    /// (enlarged by at most a ninth, a difference the eye does not see in a preview: 500 pixels
    /// for 512 from a 4000-pixel photo). Then they need no partial frame.
    /// (Not for a box: its crop or canvas is made from the frame.)
    static func previewServes(_ spec: OutputSpec, _ decoder: any IncrementalImageDecoder, source: (width: Int, height: Int)) -> Bool {
        guard spec.partialMaxPixelSize != nil, spec.geometry.box == nil, let preview = decoder.previewSize else { return false }
        let size = spec.geometry.partialSize(of: source, orientation: decoder.orientation)
        return preview.width * 10 >= size.width * 9 && preview.height * 10 >= size.height * 9
    }

    /// On the session's queue: renders and sends a partial image for each due progressive token,
    /// from the decoder's frame when this feed updated it (`frameUpdated`), or from its preview
    /// for tokens whose `partialMaxPixelSize` the preview covers.
    func partialImages(
        from decoder: any IncrementalImageDecoder, source: (width: Int, height: Int), colorProfile: ColorProfile,
        tokens: [DownloadToken], frameUpdated: Bool
    ) {
        let now = DispatchTime.now().uptimeNanoseconds
        // While the reader is behind, no new inline payload is built: its partial images wait
        // for the next frame after it caught up (the final image is never skipped).
        let backedUp = writer.backedUp
        let due = targets.withLock { $0.due(tokens, now: now) }.filter {
            !backedUp || ($0.1.spec.delivery != .inline && $0.1.spec.delivery != .shared)
        }
        guard !due.isEmpty, let (frameWidth, frameHeight) = decoder.size else { return }
        var limits = DecodeOptions()
        limits.maxPixels = settings.withLock { $0.maxPixels }
        let filled = decoder.filledRows
        let orientation = decoder.orientation
        // Each distinct rendering once, however many tokens want it. A full-size PNG of the frame
        // (the usual case) is encoded straight from the decoder's buffer, with no copy of it.
        var preview: (image: DecodedImage, passes: Int)??
        var renders: [RenderKey: (rendered: Renderer.Rendered, passes: Int, filledRows: Int)] = [:]
        // The frame's values are as stored: each token's partial image in its colours.
        func colored(_ image: DecodedImage, _ spec: OutputSpec) -> DecodedImage {
            var image = image
            image.manageColor(colorProfile, spec.colorProfile)
            return image
        }
        // Straight from the decoder's frame only when the colours stay as they are, and no profile is to be embedded.
        let asStored = !colorProfile.changesColors(in: .rgb)
        for (token, target) in due {
            let spec = target.spec
            // (An image its size filters refuse gets none: its token fails when the body is in.)
            if spec.sizeFilter.refusal(width: source.width, height: source.height) != nil { continue }
            let key = RenderKey(spec)
            if renders[key] == nil {
                let size = spec.geometry.partialSize(of: source, orientation: orientation)
                if let plan = spec.geometry.plan(source: source, orientation: orientation) {
                    // (A box over the pixel limit gets none: its token fails when the body is in.)
                    guard frameUpdated, (try? spec.geometry.checkLimit(source: source, orientation: orientation, options: limits)) != nil
                    else { continue }
                    // The box's plan carried out on the frame so far (taken out of the decoder at
                    // its size), fitted into partialMaxPixelSize; the rows arrived mapped into it.
                    let fraction = frameHeight > 0 ? Double(filled) / Double(frameHeight) : 0
                    let rows = plan.filledRows(fraction: fraction) * size.height / max(1, plan.outputHeight)
                    var rendered: Renderer.Rendered?
                    if spec.delivery == .none, !spec.format.isEncoded {
                        rendered = Renderer.described(
                            width: size.width, height: size.height, orientation: orientation, source: decoder.format, spec: spec)
                    } else if let frame = decoder.withCurrentPixels({ frame in
                        ImageResampler.resize(frame, width: frame.width, height: frame.height, orientation: orientation, format: decoder.format)
                    }) {
                        rendered = try? Renderer.render(
                            spec.pixels(of: colored(spec.geometry.partialShaped(frame, source: source), spec)), spec: spec)
                    }
                    guard let rendered else { continue }
                    renders[key] = (rendered, decoder.completedPasses, rows)
                } else if Self.previewServes(spec, decoder, source: source) {
                    if preview == nil { preview = decoder.preview() }
                    guard let (image, passes) = preview ?? nil,
                        let rendered = try? Renderer.render(colored(Renderer.resized(image, to: size, spec: spec), spec), spec: spec)
                    else { continue }
                    renders[key] = (rendered, passes, size.height)
                } else {
                    guard frameUpdated else { continue }  // no new frame for this token
                    // Within the frame (a late joiner may ask more than it holds).
                    let target = (width: min(size.width, frameWidth), height: min(size.height, frameHeight))
                    let rows = frameHeight > 0 ? filled * target.height / frameHeight : 0
                    var rendered: Renderer.Rendered?
                    if spec.delivery == .none, !spec.format.isEncoded {
                        // Delivered nowhere: described, never copied out of the decoder.
                        rendered = Renderer.described(
                            width: target.width, height: target.height, orientation: orientation, source: decoder.format, spec: spec)
                    } else if spec.format.isEncoded, target == (frameWidth, frameHeight), !spec.applyOrientation || orientation == 1,
                        spec.colorProfile == .keep ? colorProfile.icc == nil : asStored
                    {
                        rendered = decoder.withCurrentPixels { frame in
                            try? Renderer.partialEncoded(frame, orientation: orientation, source: decoder.format, spec: spec)
                        } ?? nil
                    } else {
                        // Taken from the frame where it lies (scaled down, or copied at full
                        // size), then in the token's layout.
                        let image = decoder.withCurrentPixels { frame in
                            ImageResampler.resize(
                                frame, width: target.width, height: target.height, orientation: orientation, format: decoder.format)
                        }
                        if let image { rendered = try? Renderer.render(spec.pixels(of: colored(image, spec)), spec: spec) }
                    }
                    guard let rendered else { continue }
                    renders[key] = (rendered, decoder.completedPasses, rows)
                }
            }
            guard let (rendered, passes, rows) = renders[key] else { continue }
            let placed: FrameDelivery.Placed
            do throws(DeliveryFailure) {
                placed = try FrameDelivery.deliver(
                    rendered.payload, fileExtension: rendered.fileExtension, source: decoder.format,
                    to: FrameDelivery.Target(token: token, url: target.url, spec: spec, reservedPath: target.reservedPath), final: false)
            } catch {
                continue  // the final delivery reports output failures
            }
            // A `skipExisting` file that appeared meanwhile is kept: no partial images into it.
            guard case .delivered(let fields, let path) = placed else { continue }
            let (message, replaceKey) = EventEncoder.partialImage(
                token, sequence: target.sequence + 1, image: rendered, filledRows: rows, passes: passes, delivery: fields)
            targets.withLock { l in
                guard l.partialReady(token, of: target, path: path ?? target.reservedPath, now: now) else { return }
                writer.send(message, replaceKey: replaceKey, alwaysReplace: true)
            }
        }
    }

    /// What makes two tokens' partial images the same bytes.
    struct RenderKey: Hashable {
        var format: OutputSpec.Format
        var encoding: ImageEncoding?
        var geometry: OutputGeometry
        var applyOrientation: Bool
        var colorProfile: ColorHandling
        /// Described only (raw pixels delivered nowhere) or made.
        var described: Bool

        init(_ spec: OutputSpec) {
            (format, encoding, geometry, applyOrientation) = (spec.format, spec.encoding, spec.geometry, spec.applyOrientation)
            colorProfile = spec.colorProfile
            described = spec.delivery == .none && !spec.format.isEncoded
        }
    }
}
