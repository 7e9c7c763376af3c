/// A strict RFC 8259 JSON parser over bytes. Rejects invalid UTF-8, trailing garbage, trailing
/// commas, leading zeros, NaN and comments; limits nesting depth so hostile input cannot exhaust
/// the stack.
public struct JSONParser {
    public struct Error: Swift.Error, Equatable, CustomStringConvertible {
        public var offset: Int
        public var reason: String
        public var description: String { "invalid JSON at byte \(offset): \(reason)" }
    }

    public static let maximumDepth = 256

    public static func parse(_ bytes: some Collection<UInt8>) throws(Error) -> JSONValue {
        try Array(bytes).withUnsafeBufferPointer { buffer throws(Error) in try parse(buffer: buffer) }
    }

    /// (A line read into an array is parsed where it lies: neither copied nor handed to the
    /// generic `Collection` code, whose metadata lookups show in the profile of every message.)
    public static func parse(_ bytes: ArraySlice<UInt8>) throws(Error) -> JSONValue {
        try bytes.withUnsafeBufferPointer { buffer throws(Error) in try parse(buffer: buffer) }
    }

    public static func parse(_ bytes: [UInt8]) throws(Error) -> JSONValue {
        try bytes.withUnsafeBufferPointer { buffer throws(Error) in try parse(buffer: buffer) }
    }

    private static func parse(buffer: UnsafeBufferPointer<UInt8>) throws(Error) -> JSONValue {
        var parser = Cursor(buffer: buffer)
        parser.skipWhitespace()
        let value = try parser.parseValue(depth: 0)
        parser.skipWhitespace()
        if parser.index != buffer.count {
            throw Error(offset: parser.index, reason: "unexpected data after the value")
        }
        return value
    }

    public static func parse(_ string: String) throws(Error) -> JSONValue {
        try parse(Array(string.utf8))
    }

    /// Where the JSON value that starts at `start` ends, found without parsing it: a string at its
    /// closing quote, an object or array at its closing bracket (brackets matched outside
    /// strings), anything else at the `,`, `}` or `]` that follows it on its own level (or the
    /// end of `bytes`). Nil when a string or bracket is still open at the end. Its syntax is not
    /// checked: `parse` does that, once the extent is known.
    /// (Not generic: called across modules for every record of a manifest, it must not go
    /// through protocol witnesses per byte.)
    public static func valueEnd(in bytes: ArraySlice<UInt8>, from start: Int) -> Int? {
        guard start < bytes.endIndex else { return nil }
        var depth = 0
        var inString = false
        var escaped = false
        var i = start
        while i < bytes.endIndex {
            let byte = bytes[i]
            if inString {
                if escaped {
                    escaped = false
                } else if byte == UInt8(ascii: "\\") {
                    escaped = true
                } else if byte == UInt8(ascii: "\"") {
                    inString = false
                    if depth == 0 { return i + 1 }
                }
            } else {
                switch byte {
                case UInt8(ascii: "\""): inString = true
                case UInt8(ascii: "{"), UInt8(ascii: "["): depth += 1
                case UInt8(ascii: "}"), UInt8(ascii: "]"):
                    if depth == 0 { return i }
                    depth -= 1
                    if depth == 0 { return i + 1 }
                case UInt8(ascii: ","):
                    if depth == 0 { return i }
                default: break
                }
            }
            i += 1
        }
        return depth == 0 && !inString ? i : nil
    }

    private struct Cursor {
        let buffer: UnsafeBufferPointer<UInt8>
        var index = 0
        var scratch: [UInt8] = []

        init(buffer: UnsafeBufferPointer<UInt8>) { self.buffer = buffer }

        func fail(_ reason: String) -> Error { Error(offset: index, reason: reason) }

        mutating func skipWhitespace() {
            while index < buffer.count {
                switch buffer[index] {
                case 0x20, 0x09, 0x0A, 0x0D: index += 1
                default: return
                }
            }
        }

        mutating func parseValue(depth: Int) throws(Error) -> JSONValue {
            guard index < buffer.count else { throw fail("unexpected end of input") }
            switch buffer[index] {
            case UInt8(ascii: "{"): return try parseObject(depth: depth + 1)
            case UInt8(ascii: "["): return try parseArray(depth: depth + 1)
            case UInt8(ascii: "\""): return .string(try parseString())
            case UInt8(ascii: "t"): try expectLiteral("true"); return .bool(true)
            case UInt8(ascii: "f"): try expectLiteral("false"); return .bool(false)
            case UInt8(ascii: "n"): try expectLiteral("null"); return .null
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try parseNumber()
            default: throw fail("unexpected character")
            }
        }

        mutating func expectLiteral(_ literal: StaticString) throws(Error) {
            let count = literal.utf8CodeUnitCount
            guard buffer.count - index >= count else { throw fail("unexpected end of input") }
            let base = literal.utf8Start
            for i in 0..<count where buffer[index + i] != base[i] {
                throw fail("invalid literal")
            }
            index += count
        }

        mutating func parseObject(depth: Int) throws(Error) -> JSONValue {
            guard depth <= JSONParser.maximumDepth else { throw fail("nesting too deep") }
            index += 1
            var object = JSONObject()
            skipWhitespace()
            if index < buffer.count, buffer[index] == UInt8(ascii: "}") {
                index += 1
                return .object(object)
            }
            while true {
                skipWhitespace()
                guard index < buffer.count, buffer[index] == UInt8(ascii: "\"") else {
                    throw fail("expected a string key")
                }
                let key = try parseString()
                skipWhitespace()
                guard index < buffer.count, buffer[index] == UInt8(ascii: ":") else { throw fail("expected ':'") }
                index += 1
                skipWhitespace()
                object[key] = try parseValue(depth: depth)
                skipWhitespace()
                guard index < buffer.count else { throw fail("unexpected end of input") }
                if buffer[index] == UInt8(ascii: ",") {
                    index += 1
                    continue
                }
                if buffer[index] == UInt8(ascii: "}") {
                    index += 1
                    return .object(object)
                }
                throw fail("expected ',' or '}'")
            }
        }

        mutating func parseArray(depth: Int) throws(Error) -> JSONValue {
            guard depth <= JSONParser.maximumDepth else { throw fail("nesting too deep") }
            index += 1
            var elements: [JSONValue] = []
            skipWhitespace()
            if index < buffer.count, buffer[index] == UInt8(ascii: "]") {
                index += 1
                return .array(elements)
            }
            while true {
                skipWhitespace()
                elements.append(try parseValue(depth: depth))
                skipWhitespace()
                guard index < buffer.count else { throw fail("unexpected end of input") }
                if buffer[index] == UInt8(ascii: ",") {
                    index += 1
                    continue
                }
                if buffer[index] == UInt8(ascii: "]") {
                    index += 1
                    return .array(elements)
                }
                throw fail("expected ',' or ']'")
            }
        }

        mutating func parseNumber() throws(Error) -> JSONValue {
            let start = index
            var isInteger = true
            if buffer[index] == UInt8(ascii: "-") { index += 1 }
            guard index < buffer.count, isDigit(buffer[index]) else { throw fail("invalid number") }
            if buffer[index] == UInt8(ascii: "0") {
                index += 1
                if index < buffer.count, isDigit(buffer[index]) { throw fail("leading zero in number") }
            } else {
                while index < buffer.count, isDigit(buffer[index]) { index += 1 }
            }
            if index < buffer.count, buffer[index] == UInt8(ascii: ".") {
                isInteger = false
                index += 1
                guard index < buffer.count, isDigit(buffer[index]) else { throw fail("invalid fraction") }
                while index < buffer.count, isDigit(buffer[index]) { index += 1 }
            }
            if index < buffer.count, buffer[index] == UInt8(ascii: "e") || buffer[index] == UInt8(ascii: "E") {
                isInteger = false
                index += 1
                if index < buffer.count, buffer[index] == UInt8(ascii: "+") || buffer[index] == UInt8(ascii: "-") {
                    index += 1
                }
                guard index < buffer.count, isDigit(buffer[index]) else { throw fail("invalid exponent") }
                while index < buffer.count, isDigit(buffer[index]) { index += 1 }
            }
            let text = String(decoding: UnsafeBufferPointer(rebasing: buffer[start..<index]), as: UTF8.self)
            if isInteger, let value = Int64(text), text != "-0" { return .int(value) }
            guard let value = Double(text), value.isFinite else { throw fail("number out of range") }
            // Kept as text when the writer would not give back the same bytes.
            return value.description == text ? .double(value) : .rawNumber(text)
        }

        func isDigit(_ byte: UInt8) -> Bool { byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") }

        mutating func parseString() throws(Error) -> String {
            index += 1  // opening quote
            let start = index
            var bits: UInt8 = 0  // every byte's bits: ASCII alone leaves the top one clear
            // Fast path: no escapes.
            while index < buffer.count {
                let byte = buffer[index]
                if byte == UInt8(ascii: "\"") {
                    let slice = UnsafeBufferPointer(rebasing: buffer[start..<index])
                    index += 1
                    // ASCII needs no validation (and `String(validating:)`, generic, costs a
                    // metadata lookup per string).
                    if bits < 0x80 { return String(decoding: slice, as: UTF8.self) }
                    guard let string = String(validating: slice, as: UTF8.self) else {
                        throw Error(offset: start, reason: "invalid UTF-8 in string")
                    }
                    return string
                }
                if byte == UInt8(ascii: "\\") { break }
                if byte < 0x20 { throw fail("control character in string") }
                bits |= byte
                index += 1
            }
            guard index < buffer.count else { throw fail("unterminated string") }
            scratch.removeAll(keepingCapacity: true)
            scratch.append(contentsOf: UnsafeBufferPointer(rebasing: buffer[start..<index]))
            while index < buffer.count {
                let byte = buffer[index]
                switch byte {
                case UInt8(ascii: "\""):
                    index += 1
                    guard let string = String(validating: scratch, as: UTF8.self) else {
                        throw Error(offset: start, reason: "invalid UTF-8 in string")
                    }
                    return string
                case UInt8(ascii: "\\"):
                    index += 1
                    guard index < buffer.count else { throw fail("unterminated escape") }
                    let escaped = buffer[index]
                    index += 1
                    switch escaped {
                    case UInt8(ascii: "\""): scratch.append(0x22)
                    case UInt8(ascii: "\\"): scratch.append(0x5C)
                    case UInt8(ascii: "/"): scratch.append(0x2F)
                    case UInt8(ascii: "b"): scratch.append(0x08)
                    case UInt8(ascii: "f"): scratch.append(0x0C)
                    case UInt8(ascii: "n"): scratch.append(0x0A)
                    case UInt8(ascii: "r"): scratch.append(0x0D)
                    case UInt8(ascii: "t"): scratch.append(0x09)
                    case UInt8(ascii: "u"): try appendUnicodeEscape()
                    default: throw fail("invalid escape")
                    }
                default:
                    if byte < 0x20 { throw fail("control character in string") }
                    scratch.append(byte)
                    index += 1
                }
            }
            throw fail("unterminated string")
        }

        mutating func readHex4() throws(Error) -> UInt32 {
            guard buffer.count - index >= 4 else { throw fail("short \\u escape") }
            var value: UInt32 = 0
            for _ in 0..<4 {
                let c = buffer[index]
                let digit: UInt32
                switch c {
                case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = UInt32(c - UInt8(ascii: "0"))
                case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = UInt32(c - UInt8(ascii: "a") + 10)
                case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = UInt32(c - UInt8(ascii: "A") + 10)
                default: throw fail("invalid \\u escape")
                }
                value = value << 4 | digit
                index += 1
            }
            return value
        }

        /// Decodes `\uXXXX` (with surrogate pairs). A lone surrogate cannot live in a Swift string
        /// and is replaced by U+FFFD, so what comes out is always valid UTF-8.
        mutating func appendUnicodeEscape() throws(Error) {
            var scalar = try readHex4()
            if (0xD800...0xDBFF).contains(scalar) {
                if buffer.count - index >= 6, buffer[index] == UInt8(ascii: "\\"), buffer[index + 1] == UInt8(ascii: "u") {
                    let saved = index
                    index += 2
                    let low = try readHex4()
                    if (0xDC00...0xDFFF).contains(low) {
                        scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                    } else {
                        index = saved
                        scalar = 0xFFFD
                    }
                } else {
                    scalar = 0xFFFD
                }
            } else if (0xDC00...0xDFFF).contains(scalar) {
                scalar = 0xFFFD
            }
            scratch.append(contentsOf: String(Character(Unicode.Scalar(scalar)!)).utf8)
        }
    }
}
