/// Apache Thrift's compact protocol read into a generic tree (fields by id), as much of it as
/// Parquet's footer and page headers use: integers, booleans, binaries, lists and structs (sets
/// and maps are read past). `ThriftCompactWriter` is the other direction.
enum ThriftValue: Sendable {
    case int(Int64)
    case binary([UInt8])
    case list([ThriftValue])
    case structure([Int: ThriftValue])

    struct Failure: Error {
        let message: String
    }

    subscript(_ id: Int) -> ThriftValue? {
        if case .structure(let fields) = self { return fields[id] }
        return nil
    }

    var int: Int64? {
        if case .int(let value) = self { return value }
        return nil
    }

    var list: [ThriftValue] {
        if case .list(let values) = self { return values }
        return []
    }

    var text: String? {
        if case .binary(let bytes) = self { return String(decoding: bytes, as: UTF8.self) }
        return nil
    }

    /// A struct from `bytes` at `at` (moved past it). Throws when the bytes end first or hold a
    /// type the protocol does not have.
    static func structure(_ bytes: [UInt8], _ at: inout Int) throws(Failure) -> ThriftValue {
        var fields: [Int: ThriftValue] = [:]
        var last = 0
        while true {
            let header = try byte(bytes, &at)
            if header == 0 { return .structure(fields) }
            let delta = Int(header >> 4)
            last = delta == 0 ? Int(truncatingIfNeeded: zigzag(try varint(bytes, &at))) : last + delta
            fields[last] = try value(bytes, &at, type: header & 0x0F, inStruct: true)
        }
    }

    private static func value(_ bytes: [UInt8], _ at: inout Int, type: UInt8, inStruct: Bool) throws(Failure) -> ThriftValue {
        switch type {
        // A struct's boolean field is its type (1 true, 2 false); a list's booleans are bytes.
        case 1 where inStruct, 2 where inStruct: return .int(type == 1 ? 1 : 0)
        case 1, 2, 3: return .int(Int64(Int8(bitPattern: try byte(bytes, &at))))
        case 4, 5, 6: return .int(zigzag(try varint(bytes, &at)))
        case 7:
            guard at + 8 <= bytes.count else { throw Failure(message: "a double past the end") }
            at += 8
            return .int(0)
        case 8:
            let length = Int(clamping: try varint(bytes, &at))
            guard length <= bytes.count - at else { throw Failure(message: "a binary of \(length) bytes past the end") }
            defer { at += length }
            return .binary(Array(bytes[at..<at + length]))
        case 9, 10:
            let header = try byte(bytes, &at)
            var count = Int(header >> 4)
            if count == 15 { count = Int(clamping: try varint(bytes, &at)) }
            guard count <= bytes.count - at else { throw Failure(message: "a list of \(count) past the end") }
            var values: [ThriftValue] = []
            for _ in 0..<count { values.append(try value(bytes, &at, type: header & 0x0F, inStruct: false)) }
            return .list(values)
        case 11:
            let count = Int(clamping: try varint(bytes, &at))
            guard count > 0 else { return .list([]) }
            let types = try byte(bytes, &at)
            guard count <= bytes.count - at else { throw Failure(message: "a map of \(count) past the end") }
            for _ in 0..<count {
                _ = try value(bytes, &at, type: types >> 4, inStruct: false)
                _ = try value(bytes, &at, type: types & 0x0F, inStruct: false)
            }
            return .list([])
        case 12: return try structure(bytes, &at)
        default: throw Failure(message: "Thrift type \(type)")
        }
    }

    private static func byte<Bytes: RandomAccessCollection<UInt8>>(_ bytes: Bytes, _ at: inout Int) throws(Failure) -> UInt8
    where Bytes.Index == Int {
        guard at >= bytes.startIndex, at < bytes.endIndex else { throw Failure(message: "a struct past the end") }
        defer { at += 1 }
        return bytes[at]
    }

    /// An unsigned LEB128 varint at `at` (moved past it): Thrift's integers before their zigzag,
    /// and Parquet's RLE/bit-packed run headers.
    static func varint<Bytes: RandomAccessCollection<UInt8>>(_ bytes: Bytes, _ at: inout Int) throws(Failure) -> UInt64
    where Bytes.Index == Int {
        var value: UInt64 = 0
        var shift: UInt64 = 0
        while shift < 64 {
            let next = try byte(bytes, &at)
            value |= UInt64(next & 0x7F) << shift
            if next & 0x80 == 0 { return value }
            shift += 7
        }
        throw Failure(message: "a varint of more than 64 bits")
    }

    static func zigzag(_ raw: UInt64) -> Int64 { Int64(bitPattern: raw >> 1) ^ -Int64(bitPattern: raw & 1) }
}
