/// A `Content-Range: bytes FIRST-LAST/TOTAL` header (TOTAL may be `*`), and whether a `206` is the
/// rest of a body the worker asked to resume. (Fuzzed: `Fuzz/Sources/FuzzInputValidation`.)
public struct ContentRange: Sendable, Equatable {
    public var first: Int64
    public var last: Int64
    /// The whole body's length; nil for `*`.
    public var total: Int64?

    public init(first: Int64, last: Int64, total: Int64?) {
        (self.first, self.last, self.total) = (first, last, total)
    }

    /// Nil unless the value is well formed: `first <= last`, and `last < total` when a total is given.
    public static func parse(_ value: String?) -> ContentRange? {
        guard let value else { return nil }
        var text = Substring(value)
        while text.first == " " || text.first == "\t" { text.removeFirst() }
        while text.last == " " || text.last == "\t" { text.removeLast() }
        guard text.prefix(6).lowercased() == "bytes " else { return nil }
        text = text.dropFirst(6)
        while text.first == " " { text.removeFirst() }
        let halves = text.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
        guard halves.count == 2 else { return nil }
        let ends = halves[0].split(separator: "-", maxSplits: 1, omittingEmptySubsequences: false)
        guard ends.count == 2, let first = digits(ends[0]), let last = digits(ends[1]), first <= last else { return nil }
        if halves[1] == "*" { return ContentRange(first: first, last: last, total: nil) }
        guard let total = digits(halves[1]), last < total else { return nil }
        return ContentRange(first: first, last: last, total: total)
    }

    /// A run of ASCII digits (no sign, no spaces) that fits an Int64.
    private static func digits(_ text: Substring) -> Int64? {
        guard !text.isEmpty, text.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) else { return nil }
        return Int64(text)
    }

    /// Whether a `206` continues a body cut at `offset` bytes (`total`: its whole length, when the
    /// first answer declared one): its range starts at `offset`, ends at the body's last byte, names
    /// the same whole length, and `contentLength` (when given) is the range's. On success, the
    /// whole length the resumed body must reach (nil: unknown); on failure, why not.
    public static func continuation(
        status: Int, contentRange: String?, contentLength: Int64?, offset: Int64, total: Int64?
    ) -> Result<Int64?, Refusal> {
        guard status == 206, let range = parse(contentRange), range.first == offset,
            total == nil || range.total == nil || range.total == total
        else {
            return .failure(Refusal("the server did not resume at byte \(offset) (\(status) \(contentRange ?? "no Content-Range"))"))
        }
        let whole = range.total ?? total
        if let whole, range.last != whole - 1 {
            return .failure(Refusal("the server resumed with bytes \(range.first)-\(range.last) of \(whole), not the rest"))
        }
        if let contentLength, contentLength != range.last - range.first + 1 {
            return .failure(Refusal("a 206 of \(contentLength) bytes for the range \(range.first)-\(range.last)"))
        }
        return .success(whole)
    }

    public struct Refusal: Error, Sendable, Equatable {
        public let reason: String
        init(_ reason: String) { self.reason = reason }
    }
}
