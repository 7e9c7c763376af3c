internal import CImageCodecs

/// How the process's allocator treats bitmap-sized memory.
public enum BitmapMemory {
    /// The default for the worker: bitmaps up to 256 MiB come from the allocator's heap, and up
    /// to that much freed memory is kept for the next image.
    public static let defaultRetainedBytes = 256 << 20

    /// Lets the C allocator serve allocations below `bytes` from its heap and keep up to `bytes`
    /// of freed memory, instead of mapping and unmapping each large bitmap: a decoder that hands
    /// out a fresh bitmap per image then reuses warm pages (a 12-megapixel JPEG decodes about a
    /// quarter faster). The cost is resident memory kept after a peak. Returns false where the
    /// allocator has no such setting (not glibc).
    @discardableResult
    public static func retainFreedMemory(upTo bytes: Int = defaultRetainedBytes) -> Bool {
        iw_retain_freed_memory(bytes) == 0
    }
}
