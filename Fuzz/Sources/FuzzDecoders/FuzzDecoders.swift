import CImageCodecs
import ImageDecoding

/// Image bytes from a hostile server. The last four bytes of the input choose the variation (so
/// that real files are good seeds as they are): scaling (none, maxPixelSize or maxPixelCount), the
/// layout, and the chunk sizes the incremental decoders are fed in. Each input goes through the
/// whole-buffer decode (scaled or not), every frame of an animation (shaped small, written back as
/// a GIF), the incremental decoder at full size, and the incremental decoder scaled to the target,
/// reading every frame they lend. Checked: no crash, leak or
/// runaway allocation (libFuzzer's limits), and every image has the bytes its size says; a
/// progressive JPEG decodes to the same result (status, message, pixels) whichever decoder takes
/// its refinement scans (iw_jpeg_refine.c's two, libjpeg's own).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzDecoders(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    let control = bytes.suffix(4).reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
    var options = DecodeOptions()
    options.maxPixels = 1 << 22  // keeps each run quick; the limit's own path is fuzzed too
    options.maxScans = 200
    options.maxFrames = 500
    options.layout = [PixelLayout.rgba, .rgb, .gray][Int(control % 3)]
    let scaling = Int(control >> 2 % 3)
    let maxPixelSize = scaling == 1 ? Int(control >> 4 % 300) + 1 : nil
    let maxPixelCount = scaling == 2 ? Int(control >> 4 % 20_000) + 1 : nil

    if let image = try? ImageDecoders.decode(bytes, options: options, maxPixelSize: maxPixelSize, maxPixelCount: maxPixelCount) {
        check(image)
    }
    // Every frame (`frames: all`), each shaped to at most 32 pixels a side, and written back as a GIF.
    var every = options
    every.frames = .all
    if let frames = try? AnimationDecoder.frames(bytes, options: every),
        let image = try? AnimationDecoder.decode(bytes, frames: frames, options: every, shape: { frame in
            let size = ImageResampler.fittedSize(width: frame.width, height: frame.height, maxPixelSize: 32, maxPixelCount: nil)
            return ImageResampler.resize(frame, width: size.width, height: size.height)
        })
    {
        check(image)
        precondition(image.allFramePixels.allSatisfy { $0.count == image.pixels.count }, "frames of unlike sizes")
        precondition(image.animation?.delaysMs.count == image.frameCount, "a delay for every frame")
        _ = try? ImageEncoders.encodeFrames(image, as: .gif)
    }
    if ImageFormat.detect(bytes) == .jpeg { compareRefinementDecoders(bytes, layout: [IW_RGBA, IW_RGB, IW_GRAY][Int(control % 3)]) }
    guard let format = ImageFormat.detect(bytes), ImageDecoders.decodedFormats.contains(where: { $0 == format }) else { return 0 }
    var seed = control
    feed(bytes, into: try? ImageDecoders.makeIncremental(for: format, options: options), seed: &seed)
    if let (width, height) = ImageDecoders.probeSize(bytes), width > 0, height > 0 {
        let target = ImageResampler.fittedSize(width: width, height: height, maxPixelSize: maxPixelSize ?? 64, maxPixelCount: maxPixelCount)
        let decoder = try? ImageDecoders.makeIncremental(for: format, options: options, source: (width, height), target: target)
        feed(bytes, into: decoder, seed: &seed)
    }
    return 0
}

func feed(_ bytes: [UInt8], into decoder: (any IncrementalImageDecoder)?, seed: inout UInt64) {
    guard let decoder else { return }
    var offset = 0
    repeat {
        seed = seed &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
        let end = min(bytes.count, offset + Int(seed >> 33 % 4096) + 1)
        decoder.wantsPartialFrames = seed & 1 == 0
        guard (try? decoder.feed(Array(bytes[offset..<end]), isLast: end == bytes.count)) != nil else { break }
        _ = decoder.withCurrentPixels { frame -> Int in
            precondition(frame.bytes.count == frame.width * frame.height * frame.layout.channels, "a lent frame of the wrong size")
            return Int(frame.bytes.first ?? 0) + Int(frame.bytes.last ?? 0)
        }
        offset = end
    } while offset < bytes.count
    if let image = decoder.currentImage() { check(image) }
}

func check(_ image: DecodedImage) {
    precondition(image.width > 0 && image.height > 0, "an image without pixels")
    precondition(image.pixels.count == image.width * image.height * image.layout.channels, "pixels do not match the size")
}

/// The three decoders of a progressive file's refinement scans must agree on everything.
func compareRefinementDecoders(_ bytes: [UInt8], layout: iw_layout) {
    var header = iw_image()
    let progressive = bytes.withUnsafeBufferPointer { iw_jpeg_has_progressive_frame($0.baseAddress, $0.count) } != 0
    guard progressive, bytes.withUnsafeBufferPointer({ iw_tj_header($0.baseAddress, $0.count, layout, 1 << 22, 1, &header) }) == 0
    else { return }
    let size = Int(header.width) * Int(header.height) * Int(header.channels)
    var results: [(status: Int32, kind: Int32, message: String, pixels: [UInt8])] = []
    for mode in [IW_REFINE_LIBJPEG, IW_REFINE_PORTABLE, IW_REFINE_FASTEST] {
        var info = header
        var pixels = [UInt8](repeating: 0, count: size)
        let status = bytes.withUnsafeBufferPointer { input in
            pixels.withUnsafeMutableBufferPointer {
                iw_jpeg_decode_whole_with(input.baseAddress, input.count, layout, 1, 200, mode, $0.baseAddress, &info)
            }
        }
        let message = withUnsafeBytes(of: info.error) { String(decoding: $0.prefix(while: { $0 != 0 }), as: UTF8.self) }
        results.append((status, status == 0 ? 0 : info.error_kind, message, status == 0 ? pixels : []))
    }
    for result in results.dropFirst() {
        precondition(result.status == results[0].status && result.kind == results[0].kind && result.message == results[0].message,
                     "a refinement decoder ended otherwise than libjpeg's: \(result.message) / \(results[0].message)")
        precondition(result.pixels == results[0].pixels, "a refinement decoder gave other pixels than libjpeg's")
    }
}
