/// Compact JSON output. Besides what JSON requires, it escapes U+0085, U+2028 and U+2029, which
/// Python's `str.splitlines()` and some JavaScript line readers treat as line breaks, so one
/// message is always exactly one line. Non-finite doubles become `null`.
public enum JSONWriter {
    public static func encode(_ value: JSONValue) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(256)
        write(value, into: &out)
        return out
    }

    public static func encodeString(_ value: JSONValue) -> String {
        String(decoding: encode(value), as: UTF8.self)
    }

    public static func write(_ value: JSONValue, into out: inout [UInt8]) {
        switch value {
        case .null: out.append(contentsOf: "null".utf8)
        case .bool(let b): out.append(contentsOf: (b ? "true" : "false").utf8)
        case .int(let i): out.append(contentsOf: String(i).utf8)
        case .rawNumber(let text): out.append(contentsOf: text.utf8)
        case .double(let d):
            if d.isFinite {
                out.append(contentsOf: d.description.utf8)
            } else {
                out.append(contentsOf: "null".utf8)
            }
        case .string(let s): writeString(s, into: &out)
        case .array(let elements):
            out.append(UInt8(ascii: "["))
            for (i, element) in elements.enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                write(element, into: &out)
            }
            out.append(UInt8(ascii: "]"))
        case .object(let object):
            out.append(UInt8(ascii: "{"))
            var first = true
            for (key, element) in object {
                if !first { out.append(UInt8(ascii: ",")) }
                first = false
                writeString(key, into: &out)
                out.append(UInt8(ascii: ":"))
                write(element, into: &out)
            }
            out.append(UInt8(ascii: "}"))
        }
    }

    private static let hexDigits = Array("0123456789abcdef".utf8)

    static func writeString(_ string: String, into out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        var contiguous = string
        contiguous.withUTF8 { writeEscaped($0, into: &out) }
        out.append(UInt8(ascii: "\""))
    }

    private static func writeEscaped(_ bytes: UnsafeBufferPointer<UInt8>, into out: inout [UInt8]) {
        var runStart = 0
        var i = 0
        let n = bytes.count
        @inline(__always) func flush(_ end: Int) {
            if end > runStart { out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[runStart..<end])) }
        }
        @inline(__always) func unicodeEscape(_ code: UInt16) {
            out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "u"),
                                    hexDigits[Int(code >> 12 & 0xF)], hexDigits[Int(code >> 8 & 0xF)],
                                    hexDigits[Int(code >> 4 & 0xF)], hexDigits[Int(code & 0xF)]])
        }
        while i < n {
            let byte = bytes[i]
            if byte >= 0x20 && byte != 0x22 && byte != 0x5C && byte != 0xC2 && byte != 0xE2 {
                i += 1
                continue
            }
            switch byte {
            case 0x22:
                flush(i); out.append(contentsOf: [0x5C, 0x22]); i += 1; runStart = i
            case 0x5C:
                flush(i); out.append(contentsOf: [0x5C, 0x5C]); i += 1; runStart = i
            case 0x0A:
                flush(i); out.append(contentsOf: [0x5C, UInt8(ascii: "n")]); i += 1; runStart = i
            case 0x0D:
                flush(i); out.append(contentsOf: [0x5C, UInt8(ascii: "r")]); i += 1; runStart = i
            case 0x09:
                flush(i); out.append(contentsOf: [0x5C, UInt8(ascii: "t")]); i += 1; runStart = i
            case 0xC2 where i + 1 < n && bytes[i + 1] == 0x85:  // U+0085 NEXT LINE
                flush(i); unicodeEscape(0x0085); i += 2; runStart = i
            case 0xE2 where i + 2 < n && bytes[i + 1] == 0x80 && (bytes[i + 2] == 0xA8 || bytes[i + 2] == 0xA9):
                flush(i); unicodeEscape(bytes[i + 2] == 0xA8 ? 0x2028 : 0x2029); i += 3; runStart = i
            case 0xC2, 0xE2:
                i += 1
            default:  // other control characters
                flush(i); unicodeEscape(UInt16(byte)); i += 1; runStart = i
            }
        }
        flush(n)
    }
}
