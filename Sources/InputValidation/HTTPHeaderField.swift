/// What a request header may be, for headers a client names (a download's `headers`, the
/// configured defaults): a name that is an HTTP token (RFC 9110 5.1), a value without CR, LF or
/// NUL, so that no header can smuggle another line into a request. (Fuzzed:
/// `Fuzz/Sources/FuzzURLs`.)
public enum HTTPHeaderField {
    public static func isValidName(_ name: String) -> Bool {
        !name.isEmpty && name.utf8.allSatisfy(isTokenByte)
    }

    public static func isValidValue(_ value: String) -> Bool {
        !value.utf8.contains { $0 == 0x0D || $0 == 0x0A || $0 == 0x00 }
    }

    /// A byte of an HTTP token (RFC 9110 5.6.2): what a header name is made of.
    public static func isTokenByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            return true
        default:
            return "!#$%&'*+-.^_`|~".utf8.contains(byte)
        }
    }
}
