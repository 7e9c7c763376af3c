import ImageDownloader

/// Decoding limits and the delivery stage's size, part of the worker's configuration
/// (`configure`: `maxPixels`, `maxProgressiveScans`, `maxFrames`, `decodeConcurrency`,
/// `decodeMemoryBytes`).
public struct DecodeSettings: Sendable, Equatable {
    /// Images whose header announces more pixels fail with LimitExceeded before any pixel buffer
    /// is allocated (100 million: e.g. 12500×8000).
    public var maxPixels: UInt64 = 100_000_000
    /// Progressive JPEGs with more scans fail with LimitExceeded.
    public var maxProgressiveScans = 1000
    /// Animated GIF, WebP and AVIF files with more frames fail with LimitExceeded (frames are
    /// counted without being decoded; the first is the image).
    public var maxFrames = 50_000
    /// Tokens decoding, scaling, encoding or writing at once (the delivery stage's concurrency):
    /// one per CPU the worker may use (`AvailableCPUs`).
    public var decodeConcurrency = DecodeSlots.defaultConcurrency
    /// The bitmaps of the decodes in flight, in bytes by their headers' sizes (RGBA): a decode
    /// that would go past it waits; one larger than it runs alone.
    public var decodeMemoryBytes = DecodeSlots.defaultMemoryBytes

    /// `delivery: "shared"`: files written and not yet taken by the client, at most (a delivery
    /// past either limit waits until the client takes some).
    public var sharedMaxImages = 64
    public var sharedMaxBytes = 256 << 20

    /// Downloads live at once (queued, running or delivering): past it the worker reads no more
    /// input until one ends (`DownloadBacklog`).
    public var maxLiveDownloads = DownloadBacklog.defaultLimit

    /// The bodies the downloader may hold for this stage: four per decode, at least 8, so that a
    /// decode that ends finds the next body already in while new fetches refill the stage (with
    /// two, the cores stood idle while the network thread waited for its turn); and up to 16
    /// while they hold less than the downloader's `maxDeliveringBytes` (16 MiB): with few
    /// decodes, a server slowed by the busy cores it shares emptied a shorter queue of small
    /// images now and then (larger ones take longer to decode, so fewer cover the same wait).
    func sizeDeliveryStage(_ configuration: inout DownloaderConfiguration) {
        configuration.minDeliveringFetches = max(8, 4 * decodeConcurrency)
        configuration.maxDeliveringFetches = max(16, configuration.minDeliveringFetches)
    }

    public init() {}
}
