/// The name a client gives one download request: a string or an integer, as on the wire.
/// `"1"` and `1` are different tokens.
public enum DownloadToken: Hashable, Sendable, CustomStringConvertible {
    case string(String)
    case int(Int64)

    public var description: String {
        switch self {
        case .string(let s): return s
        case .int(let i): return String(i)
        }
    }

    /// A fresh token: 16 hex digits, like an aria2 GID.
    public static func random() -> DownloadToken {
        var generator = SystemRandomNumberGenerator()
        let value = generator.next() as UInt64
        let hex = String(value, radix: 16)
        return .string(String(repeating: "0", count: 16 - hex.count) + hex)
    }
}
