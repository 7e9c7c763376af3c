/// Apache Thrift's compact protocol, as much of it as Parquet's page headers and footer use:
/// structs of i32, i64, binary, list and struct fields, each struct's fields in increasing id.
/// (thrift/doc/specs/thrift-compact-protocol.md: field headers carry the id's delta from the
/// previous field when it is 1...15; integers are zigzag varints; a struct ends with a 0 byte.)
struct ThriftCompactWriter {
    enum FieldType: UInt8 {
        case i32 = 5, i64 = 6, binary = 8, list = 9, structure = 12
    }

    private(set) var bytes: [UInt8] = []
    /// The last field id written in each open struct, the outermost first.
    private var lastField: [Int16] = [0]

    /// Ends the outermost struct: the message is complete.
    mutating func finish() -> [UInt8] {
        bytes.append(0)
        return bytes
    }

    mutating func i32(_ id: Int16, _ value: Int32) {
        header(id, .i32)
        varint(Self.zigzag(Int64(value)))
    }

    mutating func i64(_ id: Int16, _ value: Int64) {
        header(id, .i64)
        varint(Self.zigzag(value))
    }

    mutating func string(_ id: Int16, _ value: String) {
        header(id, .binary)
        element(value)
    }

    /// A struct field, its fields written by `body`.
    mutating func structure(_ id: Int16, _ body: (inout ThriftCompactWriter) -> Void) {
        header(id, .structure)
        element(body)
    }

    /// A list field's header; its `count` elements follow, each written by `element(_:)`.
    mutating func list(_ id: Int16, of type: FieldType, count: Int) {
        header(id, .list)
        if count < 15 {
            bytes.append(UInt8(count) << 4 | type.rawValue)
        } else {
            bytes.append(0xF0 | type.rawValue)
            varint(UInt64(count))
        }
    }

    /// A list's i32 element.
    mutating func element(_ value: Int32) { varint(Self.zigzag(Int64(value))) }

    /// A list's string element (and a string field's value).
    mutating func element(_ value: String) {
        varint(UInt64(value.utf8.count))
        bytes.append(contentsOf: value.utf8)
    }

    /// A list's struct element (and a struct field's value).
    mutating func element(_ body: (inout ThriftCompactWriter) -> Void) {
        lastField.append(0)
        body(&self)
        bytes.append(0)
        lastField.removeLast()
    }

    private mutating func header(_ id: Int16, _ type: FieldType) {
        let delta = Int(id) - Int(lastField[lastField.count - 1])
        if (1...15).contains(delta) {
            bytes.append(UInt8(delta) << 4 | type.rawValue)
        } else {
            bytes.append(type.rawValue)
            varint(Self.zigzag(Int64(id)))
        }
        lastField[lastField.count - 1] = id
    }

    private mutating func varint(_ value: UInt64) { Self.varint(value, into: &bytes) }

    /// An unsigned LEB128 varint: Thrift's integers after their zigzag, and Parquet's RLE/bit-packed
    /// run headers.
    static func varint(_ value: UInt64, into out: inout [UInt8]) {
        var rest = value
        while rest >= 0x80 {
            out.append(UInt8(rest & 0x7F) | 0x80)
            rest >>= 7
        }
        out.append(UInt8(rest))
    }

    static func zigzag(_ value: Int64) -> UInt64 { UInt64(bitPattern: (value << 1) ^ (value >> 63)) }
}
