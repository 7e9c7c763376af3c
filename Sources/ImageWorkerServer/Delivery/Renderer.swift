import Foundation
import ImageDecoding
import ImageWorkerProtocol

/// Makes an image what a token's output asks, partial and final alike: at its size
/// (`fitted`, `resized`: `OutputGeometry` says which), upright if asked, encoded (PNG, JPEG, WebP)
/// or raw in its layout (`render`, `partialEncoded`: straight from a decoder's frame), or only
/// described (`described`: the event's fields of an image delivered nowhere). What comes out
/// (`Rendered`) goes to `FrameDelivery` to be placed, and its fields to `EventEncoder`.
enum Renderer {
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
    static func fitted(_ frame: FetchPipeline.Frame, spec: OutputSpec) -> DecodedImage? {
        let needed = spec.geometry.decodeSize(of: frame.source, orientation: frame.image.orientation)
        guard frame.image.width >= needed.width, frame.image.height >= needed.height else { return nil }
        // In the token's layout first (as the whole-buffer path decodes in it; with its alpha when
        // it is to be flattened), its colours as asked, then flattened and in the layout: a
        // see-through canvas is RGBA.
        var image = spec.geometry.shaped(spec.flattens ? frame.image : spec.format.pixels(of: frame.image), source: frame.source)
        image.manageColor(frame.colorProfile, spec.colorProfile)
        return spec.pixels(of: image)
    }

    /// In the token's layout, at `target`.
    static func resized(_ image: DecodedImage, to target: (width: Int, height: Int), spec: OutputSpec) -> DecodedImage {
        ImageResampler.resize(spec.pixels(of: image), width: target.width, height: target.height)
    }

    /// A partial image in an encoded format (PNG, JPEG, WebP), encoded from the decoder's frame
    /// where it lies (full size, upright as stored): the fields `render` gives.
    static func partialEncoded(_ frame: BorrowedPixels, orientation: Int, source: ImageFormat, spec: OutputSpec) throws(DeliveryFailure) -> Rendered {
        var rendered = described(width: frame.width, height: frame.height, orientation: orientation, source: source, spec: spec)
        guard let encoding = spec.encoding else { throw .output("no encoded format to render", path: nil) }
        do throws(DecodeError) { rendered.payload = Payload(try ImageEncoders.encode(frame, as: encoding)) } catch {
            throw .output(error.description, path: nil)
        }
        rendered.byteLength = rendered.payload.count
        return rendered
    }

    /// The image as the token asked for it, on the calling thread (already off the network and cooperative threads). PNGs,
    /// final and partial alike, use the encoder's fast settings (the Up filter, `iw_deflate`'s Huffman coding with runs):
    /// much faster than libpng's defaults, for slightly larger files.
    static func render(_ image: DecodedImage, spec: OutputSpec) throws(DeliveryFailure) -> Rendered {
        // (A format without alpha flattens it onto the background: the whole decode's image comes
        // here with it. Every step is done to each frame an animation delivers.)
        let image = spec.flattens ? image.mapFrames { spec.pixels(of: $0) } : image
        let upright = spec.applyOrientation ? image.mapFrames { $0.applyingOrientation() } : image
        var rendered = described(
            width: image.width, height: image.height, orientation: image.orientation, source: image.format, spec: spec,
            animation: image.animation)
        if let profile = image.iccProfile { rendered.fields["iccProfile"] = .string(Payload(profile).base64()) }
        if spec.frames == .all {
            // The frames delivered, and how long each is shown (a still image: one, 0 ms).
            rendered.fields["frames"] = JSONValue(upright.frameCount)
            let delays = image.animation?.delaysMs ?? []
            rendered.fields["delaysMs"] = .array((0..<upright.frameCount).map { JSONValue($0 < delays.count ? delays[$0] : 0) })
        }
        if let encoding = spec.encoding {
            do throws(DecodeError) { rendered.payload = Payload(try ImageEncoders.encodeFrames(upright, as: encoding)) } catch {
                throw .output(error.description, path: nil)
            }
            rendered.byteLength = rendered.payload.count
            return rendered
        }
        // Raw pixels in the layout the format names (a see-through `contain` canvas is RGBA), the
        // frames one after the other.
        let raw = upright.layout == spec.format.layout ? upright : upright.mapFrames { $0.converted(to: spec.format.layout) }
        rendered.payload = Payload(parts: raw.allFramePixels)
        rendered.byteLength = rendered.payload.count
        return rendered
    }

    /// What `render` says of an image of this stored size as the token receives it (turned
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
}
