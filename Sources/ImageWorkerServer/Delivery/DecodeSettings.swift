/// Decoding limits, part of the worker's configuration (`configure`: `maxPixels`,
/// `maxProgressiveScans`).
public struct DecodeSettings: Sendable, Equatable {
    /// Images whose header announces more pixels fail with LimitExceeded before any pixel buffer
    /// is allocated (100 million: e.g. 12500×8000).
    public var maxPixels: UInt64 = 100_000_000
    /// Progressive JPEGs with more scans fail with LimitExceeded.
    public var maxProgressiveScans = 1000
    /// Animated GIF, WebP and AVIF files with more frames fail with LimitExceeded (frames are
    /// counted without being decoded; the first is the image).
    public var maxFrames = 50_000

    public init() {}
}
