/// A colour given as `#rrggbb` or `#rrggbbaa`, for what a `contain` canvas shows around the image.
public struct BackgroundColor: Sendable, Equatable, Hashable {
    public var red: UInt8, green: UInt8, blue: UInt8, alpha: UInt8

    public init(red: UInt8, green: UInt8, blue: UInt8, alpha: UInt8 = 255) {
        (self.red, self.green, self.blue, self.alpha) = (red, green, blue, alpha)
    }

    /// Opaque black, sharp's default.
    public static let black = BackgroundColor(red: 0, green: 0, blue: 0)

    /// `#rrggbb` or `#rrggbbaa` (hex digits of either case); nil for anything else.
    public init?(hex text: String) {
        let digits = Array(text.utf8)
        guard digits.first == UInt8(ascii: "#"), digits.count == 7 || digits.count == 9 else { return nil }
        var bytes: [UInt8] = []
        var i = 1
        while i < digits.count {
            guard let high = Self.nibble(digits[i]), let low = Self.nibble(digits[i + 1]) else { return nil }
            bytes.append(high << 4 | low)
            i += 2
        }
        self.init(red: bytes[0], green: bytes[1], blue: bytes[2], alpha: bytes.count == 4 ? bytes[3] : 255)
    }

    private static func nibble(_ c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return c - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return c - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return c - UInt8(ascii: "A") + 10
        default: return nil
        }
    }

    /// The colour's bytes in `layout` (gray: BT.601 luma, as `DecodedImage.converted` makes it).
    public func bytes(in layout: PixelLayout) -> [UInt8] {
        switch layout {
        case .rgba: return [red, green, blue, alpha]
        case .rgb: return [red, green, blue]
        case .gray:
            let luma = (19_595 * Int(red) + 38_470 * Int(green) + 7_471 * Int(blue) + 32_768) >> 16
            return [UInt8(luma)]
        }
    }
}

extension DecodedImage {
    /// The part of the image of `width` × `height` from (`x`, `y`), which must lie inside it.
    public func cropped(x: Int, y: Int, width: Int, height: Int) -> DecodedImage {
        precondition(x >= 0 && y >= 0 && width > 0 && height > 0 && x + width <= self.width && y + height <= self.height)
        guard width != self.width || height != self.height else { return self }
        let c = layout.channels
        var out = [UInt8]()
        out.reserveCapacity(width * height * c)
        for row in y..<(y + height) {
            let start = (row * self.width + x) * c
            out.append(contentsOf: pixels[start..<(start + width * c)])
        }
        return withPixels(out, width: width, height: height)
    }

    /// The image placed with its top-left corner at (`x`, `y`) on a canvas of `width` × `height`
    /// filled with `background`; the image must fit on it.
    public func embedded(x: Int, y: Int, width: Int, height: Int, background: BackgroundColor) -> DecodedImage {
        precondition(x >= 0 && y >= 0 && x + self.width <= width && y + self.height <= height)
        guard width != self.width || height != self.height else { return self }
        let c = layout.channels
        let fill = background.bytes(in: layout)
        var out = [UInt8](repeating: 0, count: width * height * c)
        out.withUnsafeMutableBufferPointer { canvas in
            for i in Swift.stride(from: 0, to: canvas.count, by: c) {
                for k in 0..<c { canvas[i + k] = fill[k] }
            }
            pixels.withUnsafeBufferPointer { source in
                for row in 0..<self.height {
                    let from = row * self.width * c
                    let to = ((y + row) * width + x) * c
                    for k in 0..<(self.width * c) { canvas[to + k] = source[from + k] }
                }
            }
        }
        return withPixels(out, width: width, height: height)
    }

    /// An RGBA image composited onto `background`'s colour (its alpha ignored: the result is
    /// opaque), as RGB; any other image as it is.
    public func flattened(onto background: BackgroundColor) -> DecodedImage {
        guard layout == .rgba else { return self }
        let count = width * height
        let fill = [Int(background.red), Int(background.green), Int(background.blue)]
        let out = [UInt8](unsafeUninitializedCapacity: count * 3) { buffer, initialized in
            pixels.withUnsafeBufferPointer { source in
                for i in 0..<count {
                    let a = Int(source[i * 4 + 3])
                    for k in 0..<3 { buffer[i * 3 + k] = UInt8((Int(source[i * 4 + k]) * a + fill[k] * (255 - a) + 127) / 255) }
                }
            }
            initialized = count * 3
        }
        return withPixels(out, width: width, height: height, layout: .rgb)
    }
}
