/// Good-quality downscaling: each output pixel is the area-weighted average of the input pixels
/// it covers (a box filter of the exact footprint), separably, rows then columns.
public enum ImageResampler {
    /// The size that fits `maxPixelSize` (longest side) and `maxPixelCount`, keeping the aspect
    /// ratio; never larger than the image.
    public static func fittedSize(width: Int, height: Int, maxPixelSize: Int?, maxPixelCount: Int?) -> (width: Int, height: Int) {
        var scale = 1.0
        if let maxPixelSize, maxPixelSize > 0 {
            scale = min(scale, Double(maxPixelSize) / Double(max(width, height)))
        }
        if let maxPixelCount, maxPixelCount > 0 {
            // In doubles: a header's size may be anything up to 2^31 per side.
            scale = min(scale, (Double(maxPixelCount) / (Double(width) * Double(height))).squareRoot())
        }
        guard scale < 1 else { return (width, height) }
        var w = max(1, Int((Double(width) * scale).rounded(.down)))
        var h = max(1, Int((Double(height) * scale).rounded(.down)))
        if let maxPixelCount, maxPixelCount > 0 {
            while w * h > maxPixelCount && (w > 1 || h > 1) {
                if w >= h { w -= 1 } else { h -= 1 }
            }
        }
        return (w, h)
    }

    public static func resize(_ image: DecodedImage, width: Int, height: Int) -> DecodedImage {
        guard width != image.width || height != image.height else { return image }
        let channels = image.layout.channels
        let horizontal = resampleAxis(
            image.pixels, count: image.height, inLength: image.width, outLength: width, channels: channels,
            stride: (item: image.width * channels, step: channels), outStride: (item: width * channels, step: channels))
        let vertical = resampleAxis(
            horizontal, count: width, inLength: image.height, outLength: height, channels: channels,
            stride: (item: channels, step: width * channels), outStride: (item: channels, step: width * channels))
        return DecodedImage(width: width, height: height, layout: image.layout, pixels: vertical, orientation: image.orientation, format: image.format)
    }

    /// Weights of each output pixel: the overlap of its footprint with each input pixel.
    static func spans(inLength: Int, outLength: Int) -> [(first: Int, weights: [Double])] {
        let scale = Double(inLength) / Double(outLength)
        var spans: [(first: Int, weights: [Double])] = []
        spans.reserveCapacity(outLength)
        for o in 0..<outLength {
            let start = Double(o) * scale
            let end = start + scale
            let first = Int(start)
            let last = min(inLength - 1, Int((end - 1e-9).rounded(.down)))
            var weights: [Double] = []
            for i in first...max(first, last) {
                let overlap = min(end, Double(i + 1)) - max(start, Double(i))
                weights.append(max(0, overlap) / scale)
            }
            spans.append((first, weights))
        }
        return spans
    }

    /// Resamples `count` lines of `inLength` pixels to `outLength` pixels each. `stride.item` is
    /// the distance between lines, `stride.step` between pixels of a line.
    private static func resampleAxis(
        _ input: [UInt8], count: Int, inLength: Int, outLength: Int, channels: Int,
        stride: (item: Int, step: Int), outStride: (item: Int, step: Int)
    ) -> [UInt8] {
        var output = [UInt8](repeating: 0, count: count * outLength * channels)
        if inLength == outLength {
            // Copy, re-laid out if needed.
            for line in 0..<count {
                for i in 0..<inLength {
                    for c in 0..<channels {
                        output[line * outStride.item + i * outStride.step + c] = input[line * stride.item + i * stride.step + c]
                    }
                }
            }
            return output
        }
        let spans = Self.spans(inLength: inLength, outLength: outLength)
        input.withUnsafeBufferPointer { src in
            output.withUnsafeMutableBufferPointer { dst in
                for line in 0..<count {
                    resampleLine(
                        src, from: line * stride.item, step: stride.step, into: dst, at: line * outStride.item,
                        step: outStride.step, spans: spans, channels: channels)
                }
            }
        }
        return output
    }

    /// One line: each output pixel the weighted sum of its span's input pixels, rounded to a byte.
    /// Shared by `resize` and `RowResampler`, so both give the same bytes.
    static func resampleLine(
        _ src: UnsafeBufferPointer<UInt8>, from inBase: Int, step inStep: Int, into dst: UnsafeMutableBufferPointer<UInt8>,
        at outBase: Int, step outStep: Int, spans: [(first: Int, weights: [Double])], channels: Int
    ) {
        var sums = [Double](repeating: 0, count: channels)
        for (o, span) in spans.enumerated() {
            for c in 0..<channels { sums[c] = 0 }
            for (k, weight) in span.weights.enumerated() {
                let p = inBase + (span.first + k) * inStep
                for c in 0..<channels { sums[c] += Double(src[p + c]) * weight }
            }
            let q = outBase + o * outStep
            for c in 0..<channels { dst[q + c] = UInt8(min(255, max(0, sums[c].rounded()))) }
        }
    }
}

/// `ImageResampler.resize` for rows that arrive one at a time, top to bottom: only the output, one
/// resampled row and the few output rows still accumulating are held, never the input image.
/// The arithmetic is the same, in the same order, so the result is identical to `resize`.
struct RowResampler {
    let inWidth: Int, inHeight: Int, outWidth: Int, outHeight: Int, channels: Int
    private let columns: [(first: Int, weights: [Double])]
    private let rows: [(first: Int, weights: [Double])]
    private var nextInputRow = 0
    /// The first output row not written yet; rows from it on may be accumulating.
    private var firstOpenRow = 0
    private var sums: [Int: [Double]] = [:]
    private var resampled: [UInt8]
    /// `push(rgba:as:)`'s row in the output layout.
    private var converted: [UInt8] = []
    private(set) var output: [UInt8]

    init(inWidth: Int, inHeight: Int, outWidth: Int, outHeight: Int, channels: Int) {
        (self.inWidth, self.inHeight, self.outWidth, self.outHeight, self.channels) = (inWidth, inHeight, outWidth, outHeight, channels)
        columns = ImageResampler.spans(inLength: inWidth, outLength: outWidth)
        rows = ImageResampler.spans(inLength: inHeight, outLength: outHeight)
        resampled = [UInt8](repeating: 0, count: outWidth * channels)
        output = [UInt8](repeating: 0, count: outWidth * outHeight * channels)
    }

    var isComplete: Bool { nextInputRow == inHeight }
    /// Output rows from the top that are final.
    var completedRows: Int { firstOpenRow }

    /// Takes the next input row as 8-bit RGBA (`inWidth * 4` bytes, as libpng's readers give
    /// rows), converted to `layout` (of this resampler's channels) first.
    mutating func push(rgba row: UnsafeBufferPointer<UInt8>, as layout: PixelLayout) {
        guard layout != .rgba else { return push(row) }
        if converted.isEmpty { converted = [UInt8](repeating: 0, count: inWidth * layout.channels) }
        DecodedImage.convertRow(row, from: .rgba, into: &converted, layout)
        // Moved out for the push (which mutates self) and back: no copy.
        var rowInLayout: [UInt8] = []
        swap(&rowInLayout, &converted)
        rowInLayout.withUnsafeBufferPointer { push($0) }
        swap(&rowInLayout, &converted)
    }

    /// Takes the next input row (`inWidth * channels` bytes).
    mutating func push(_ row: UnsafeBufferPointer<UInt8>) {
        precondition(nextInputRow < inHeight && row.count >= inWidth * channels)
        let y = nextInputRow
        nextInputRow += 1
        let c = channels
        // Across: as resize's first pass (which rounds to bytes before the second).
        resampled.withUnsafeMutableBufferPointer { dst in
            if inWidth == outWidth {
                for i in 0..<(inWidth * c) { dst[i] = row[i] }
                return
            }
            ImageResampler.resampleLine(row, from: 0, step: c, into: dst, at: 0, step: c, spans: columns, channels: c)
        }
        // Down: this row's share of every output row whose footprint covers it, in input order.
        var o = firstOpenRow
        while o < outHeight, rows[o].first <= y {
            let span = rows[o]
            let j = y - span.first
            if inHeight == outHeight {
                let start = o * outWidth * c
                for i in 0..<(outWidth * c) { output[start + i] = resampled[i] }
            } else if j < span.weights.count {
                let weight = span.weights[j]
                var acc = sums.removeValue(forKey: o) ?? [Double](repeating: 0, count: outWidth * c)
                for i in 0..<(outWidth * c) { acc[i] += Double(resampled[i]) * weight }
                if j == span.weights.count - 1 {
                    let start = o * outWidth * c
                    for i in 0..<(outWidth * c) { output[start + i] = UInt8(min(255, max(0, acc[i].rounded()))) }
                } else {
                    sums[o] = acc
                }
            }
            if span.first + max(span.weights.count, 1) - 1 <= y { firstOpenRow = o + 1 }
            o += 1
        }
    }
}

extension DecodedImage {
    /// The image turned upright per its EXIF orientation (1…8); orientation becomes 1.
    public func applyingOrientation() -> DecodedImage {
        guard orientation >= 2 && orientation <= 8 else { return self }
        let c = layout.channels
        let transposed = orientation >= 5
        let outW = transposed ? height : width
        let outH = transposed ? width : height
        var out = [UInt8](repeating: 0, count: pixels.count)
        for y in 0..<outH {
            for x in 0..<outW {
                // The source pixel that lands at (x, y) for each orientation.
                let (sx, sy): (Int, Int)
                switch orientation {
                case 2: (sx, sy) = (width - 1 - x, y)
                case 3: (sx, sy) = (width - 1 - x, height - 1 - y)
                case 4: (sx, sy) = (x, height - 1 - y)
                case 5: (sx, sy) = (y, x)
                case 6: (sx, sy) = (y, height - 1 - x)
                case 7: (sx, sy) = (width - 1 - y, height - 1 - x)
                default: (sx, sy) = (width - 1 - y, x)  // 8
                }
                let s = (sy * width + sx) * c
                let d = (y * outW + x) * c
                for k in 0..<c { out[d + k] = pixels[s + k] }
            }
        }
        return DecodedImage(width: outW, height: outH, layout: layout, pixels: out, orientation: 1, format: format)
    }
}
