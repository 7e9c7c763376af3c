import Foundation

/// Where `fit: cover` crops when its `position` is a strategy rather than a place: libvips'
/// `smartcrop` (what sharp's `position: "entropy"` and `"attention"` run), on the image already
/// scaled to cover the box.
///
/// - `entropy`: slices are taken off the two opposite edges of each axis in turn (about 8 steps on
///   the axis that needs trimming most), each time the one whose histogram (every channel's, alpha
///   premultiplied) has the lower Shannon entropy, until the box is left.
/// - `attention`: the image shrunk to 32 × 32, scored for edges (a Laplacian of luminance), skin
///   tones and saturation (CIE a*), the score blurred by a Gaussian as wide as a tenth of the box,
///   and the crop centred on its maximum.
enum SmartCrop {
    /// The crop's top-left corner in `image` for a `width` × `height` box (no larger than the image).
    static func origin(of image: DecodedImage, width: Int, height: Int, attention: Bool) -> (x: Int, y: Int) {
        guard width < image.width || height < image.height else { return (0, 0) }
        let planes = Planes(image)
        return attention ? planes.attention(width: width, height: height) : planes.entropy(width: width, height: height)
    }

    /// The image as channels of bytes, alpha premultiplied (what lies under transparency does not count).
    struct Planes {
        var width: Int
        var height: Int
        var channels: Int
        var bytes: [UInt8]

        init(_ image: DecodedImage) {
            (width, height, channels) = (image.width, image.height, image.layout.channels)
            guard image.layout == .rgba else {
                bytes = image.pixels
                return
            }
            var out = image.pixels
            for i in Swift.stride(from: 0, to: out.count, by: 4) {
                let a = Int(out[i + 3])
                for k in 0..<3 { out[i + k] = UInt8((Int(out[i + k]) * a + 127) / 255) }
            }
            bytes = out
        }

        /// libvips' `hist_entropy` of a rectangle: -Σ p log2 p over every channel's histogram,
        /// p the count over all the rectangle's samples.
        func entropy(x: Int, y: Int, width w: Int, height h: Int) -> Double {
            var histogram = [Int](repeating: 0, count: 256 * channels)
            bytes.withUnsafeBufferPointer { b in
                for row in y..<(y + h) {
                    var i = (row * width + x) * channels
                    for _ in 0..<w {
                        for k in 0..<channels { histogram[k * 256 + Int(b[i + k])] += 1 }
                        i += channels
                    }
                }
            }
            let total = Double(w * h * channels)
            var sum = 0.0
            for count in histogram where count > 0 {
                let p = Double(count) / total
                sum -= p * log2(p)
            }
            return sum
        }

        func entropy(width target: Int, height targetHeight: Int) -> (x: Int, y: Int) {
            var (left, top, w, h) = (0, 0, width, height)
            let slice = max(Int((Double(width - target) / 8).rounded(.up)), Int((Double(height - targetHeight) / 8).rounded(.up)))
            while w > target || h > targetHeight {
                let sliceWidth = min(w - target, slice)
                let sliceHeight = min(h - targetHeight, slice)
                if sliceWidth > 0 {
                    let leftScore = entropy(x: left, y: top, width: sliceWidth, height: h)
                    let rightScore = entropy(x: left + w - sliceWidth, y: top, width: sliceWidth, height: h)
                    w -= sliceWidth
                    if leftScore < rightScore { left += sliceWidth }
                }
                if sliceHeight > 0 {
                    let topScore = entropy(x: left, y: top, width: w, height: sliceHeight)
                    let bottomScore = entropy(x: left, y: top + h - sliceHeight, width: w, height: sliceHeight)
                    h -= sliceHeight
                    if topScore < bottomScore { top += sliceHeight }
                }
            }
            return (left, top)
        }

        func attention(width target: Int, height targetHeight: Int) -> (x: Int, y: Int) {
            let side = 32
            let image = DecodedImage(
                width: width, height: height, layout: channels == 4 ? .rgba : channels == 3 ? .rgb : .gray, pixels: bytes, format: .png)
            let small = ImageResampler.resize(image.converted(to: .rgb), width: side, height: side).pixels
            // sRGB to CIE XYZ (D65, Y of white 100), as libvips' colourspace does it.
            func linear(_ v: UInt8) -> Double {
                let c = Double(v) / 255
                return c <= 0.04045 ? c / 12.92 : pow((c + 0.055) / 1.055, 2.4)
            }
            var xyz = [(Double, Double, Double)]()
            xyz.reserveCapacity(side * side)
            for i in 0..<(side * side) {
                let (r, g, b) = (linear(small[i * 3]), linear(small[i * 3 + 1]), linear(small[i * 3 + 2]))
                xyz.append(
                    ((0.4124 * r + 0.3576 * g + 0.1805 * b) * 100, (0.2126 * r + 0.7152 * g + 0.0722 * b) * 100,
                     (0.0193 * r + 0.1192 * g + 0.9505 * b) * 100))
            }
            func y(_ px: Int, _ py: Int) -> Double { xyz[min(side - 1, max(0, py)) * side + min(side - 1, max(0, px))].1 }
            var score = [Double](repeating: 0, count: side * side)
            for py in 0..<side {
                for px in 0..<side {
                    let (X, Y, Z) = xyz[py * side + px]
                    // Edges: a Laplacian of Y, times 5.
                    let edge = abs(5 * (4 * Y - y(px - 1, py) - y(px + 1, py) - y(px, py - 1) - y(px, py + 1)))
                    guard Y > 5 else {
                        score[py * side + px] = edge
                        continue
                    }
                    // Skin: how near the colour's direction in XYZ lies to smartcrop.js's skin tone.
                    let norm = max(1e-9, (X * X + Y * Y + Z * Z).squareRoot())
                    let (dx, dy, dz) = (X / norm - 0.78, Y / norm - 0.57, Z / norm - 0.44)
                    let skin = 100 - 100 * (dx * dx + dy * dy + dz * dz).squareRoot()
                    // Saturation: CIE a* (D65 white).
                    func f(_ t: Double) -> Double { t > 216.0 / 24389 ? cbrt(t) : (24389.0 / 27 * t + 16) / 116 }
                    let a = 500 * (f(X / 95.047) - f(Y / 100))
                    score[py * side + px] = edge + skin + a
                }
            }
            // Blurred over about the box's size (in the 32 x 32 grid), edges extended.
            let (hscale, vscale) = (Double(side) / Double(width), Double(side) / Double(height))
            let sigma = max(((Double(target) * hscale) * (Double(target) * hscale) + (Double(targetHeight) * vscale) * (Double(targetHeight) * vscale)).squareRoot() / 10, 1)
            let blurred = Self.gaussianBlur(score, side: side, sigma: sigma)
            var best = 0
            for i in 1..<blurred.count where blurred[i] > blurred[best] { best = i }
            let (ax, ay) = (Int(Double(best % side) / hscale), Int(Double(best / side) / vscale))
            return (min(max(0, ax - target / 2), width - target), min(max(0, ay - targetHeight / 2), height - targetHeight))
        }

        /// A separable Gaussian (libvips' mask: out to where it falls below a fifth of its peak... or
        /// 3 sigma, whichever is wider), edges extended.
        static func gaussianBlur(_ values: [Double], side: Int, sigma: Double) -> [Double] {
            let radius = max(1, Int((3 * sigma).rounded(.up)))
            let kernel = (-radius...radius).map { exp(-Double($0 * $0) / (2 * sigma * sigma)) }
            let total = kernel.reduce(0, +)
            func pass(_ input: [Double], horizontal: Bool) -> [Double] {
                var out = [Double](repeating: 0, count: input.count)
                for py in 0..<side {
                    for px in 0..<side {
                        var sum = 0.0
                        for (k, weight) in kernel.enumerated() {
                            let d = k - radius
                            let (sx, sy) = horizontal ? (min(side - 1, max(0, px + d)), py) : (px, min(side - 1, max(0, py + d)))
                            sum += input[sy * side + sx] * weight
                        }
                        out[py * side + px] = sum / total
                    }
                }
                return out
            }
            return pass(pass(values, horizontal: true), horizontal: false)
        }
    }
}
