internal import CImageCodecs

/// Whole-buffer decompression of the general-purpose streams a Parquet table's pages come in
/// (`get -i table.parquet`): gzip (or zlib) through libdeflate, Zstandard through libzstd and
/// Brotli through libbrotlidec. The expanded size is known beforehand (a page's header says it)
/// and must be met exactly.
public enum Decompression {
    public struct Failure: Error, Sendable {
        public let message: String
    }

    /// A gzip stream (one member or several), or a zlib stream, expanded to `size` bytes.
    public static func gunzip(_ data: ArraySlice<UInt8>, size: Int) throws(Failure) -> [UInt8] {
        try expand(data, size: size, "gzip") { iw_gunzip($0, $1, $2, $3) }
    }

    /// A Zstandard stream (one frame or several) expanded to `size` bytes.
    public static func unzstd(_ data: ArraySlice<UInt8>, size: Int) throws(Failure) -> [UInt8] {
        try expand(data, size: size, "Zstandard") { iw_unzstd($0, $1, $2, $3) }
    }

    /// A Brotli stream expanded to `size` bytes.
    public static func unbrotli(_ data: ArraySlice<UInt8>, size: Int) throws(Failure) -> [UInt8] {
        try expand(data, size: size, "Brotli") { iw_unbrotli($0, $1, $2, $3) }
    }

    private static func expand(
        _ data: ArraySlice<UInt8>, size: Int, _ name: String,
        _ call: (UnsafePointer<UInt8>, Int, UnsafeMutablePointer<UInt8>, Int) -> Int32
    ) throws(Failure) -> [UInt8] {
        guard size >= 0 else { throw Failure(message: "a \(name) stream of \(size) bytes") }
        var ok = false
        let out = [UInt8](unsafeUninitializedCapacity: max(size, 1)) { buffer, count in
            data.withUnsafeBufferPointer { input in
                // (An empty input has no base address: a byte of its own stands in, read by no one.)
                var none: UInt8 = 0
                ok = withUnsafePointer(to: &none) { stand in
                    call(input.baseAddress ?? stand, input.count, buffer.baseAddress!, size) == 0
                }
            }
            count = ok ? size : 0
        }
        guard ok else { throw Failure(message: "a \(name) stream that does not expand to its \(size) bytes") }
        return out
    }
}
