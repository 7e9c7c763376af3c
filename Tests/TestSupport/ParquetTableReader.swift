import Foundation

/// Reads back the Parquet files `get` writes, to check them without pyarrow (the clients' tests
/// hold them to pyarrow too): the footer through a generic Thrift compact-protocol reader, then
/// every row group's v1 data pages, uncompressed, PLAIN values with 1-bit definition levels in the
/// RLE/bit-packed hybrid. Anything else is reported as a failure, not guessed at.
public struct ParquetTableReader {
    public enum Value: Equatable, Sendable {
        case bytes([UInt8])
        case int(Int64)

        public var text: String? {
            if case .bytes(let b) = self { return String(decoding: b, as: UTF8.self) }
            return nil
        }
    }

    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    /// The columns' names in order, and each column's values, one per row (nil: null).
    public let names: [String]
    public let columns: [String: [Value?]]
    public let rowGroups: Int
    public var rows: Int { columns.values.first?.count ?? 0 }

    /// A Thrift value: integers, binaries, lists and structs (fields by id).
    indirect enum Thrift {
        case int(Int64)
        case binary([UInt8])
        case list([Thrift])
        case structure([Int: Thrift])

        subscript(_ id: Int) -> Thrift? {
            if case .structure(let fields) = self { return fields[id] }
            return nil
        }
        var int: Int64? {
            if case .int(let v) = self { return v }
            return nil
        }
        var list: [Thrift] {
            if case .list(let v) = self { return v }
            return []
        }
        var text: String? {
            if case .binary(let b) = self { return String(decoding: b, as: UTF8.self) }
            return nil
        }
    }

    public init(_ bytes: [UInt8]) throws {
        guard bytes.count >= 12, Array(bytes.prefix(4)) == Array("PAR1".utf8), Array(bytes.suffix(4)) == Array("PAR1".utf8) else {
            throw Failure(description: "not a Parquet file (magic)")
        }
        let n = bytes.count
        let length = Int(bytes[n - 8]) | Int(bytes[n - 7]) << 8 | Int(bytes[n - 6]) << 16 | Int(bytes[n - 5]) << 24
        guard length > 0, length <= n - 12 else { throw Failure(description: "bad footer length \(length)") }
        var cursor = n - 8 - length
        let footer = try Self.structure(bytes, &cursor)
        let schema = footer[2]?.list ?? []
        let leaves = schema.dropFirst()
        names = leaves.compactMap { $0[4]?.text }
        var columns: [String: [Value?]] = Dictionary(uniqueKeysWithValues: names.map { ($0, []) })
        let groups = footer[4]?.list ?? []
        rowGroups = groups.count
        for group in groups {
            guard let rows = group[3]?.int else { throw Failure(description: "row group without num_rows") }
            for (chunk, leaf) in zip(group[1]?.list ?? [], leaves) {
                guard let meta = chunk[3], let name = leaf[4]?.text, let type = leaf[1]?.int, let start = meta[9]?.int,
                    meta[4]?.int == 0
                else { throw Failure(description: "column chunk without metadata, or compressed") }
                var at = Int(start)
                let page = try Self.structure(bytes, &at)
                guard page[1]?.int == 0, let size = page[3]?.int, let values = page[5]?[1]?.int, values == rows else {
                    throw Failure(description: "\(name): not one v1 data page of \(rows) values")
                }
                columns[name, default: []] += try Self.values(Array(bytes[at..<at + Int(size)]), rows: Int(rows), type: type)
            }
        }
        self.columns = columns
    }

    public init(path: String) throws {
        guard let data = FileManager.default.contents(atPath: path) else { throw Failure(description: "cannot read \(path)") }
        try self.init(Array(data))
    }

    /// A data page's levels and values.
    static func values(_ page: [UInt8], rows: Int, type: Int64) throws -> [Value?] {
        func u32(_ at: Int) -> Int { Int(page[at]) | Int(page[at + 1]) << 8 | Int(page[at + 2]) << 16 | Int(page[at + 3]) << 24 }
        let levelsLength = u32(0)
        var at = 4
        var defined: [Bool] = []
        while defined.count < rows, at < 4 + levelsLength {
            let header = Int(try varint(page, &at))
            if header & 1 == 1 {
                for _ in 0..<(header >> 1) {
                    for bit in 0..<8 { defined.append(page[at] >> bit & 1 == 1) }
                    at += 1
                }
            } else {
                let value = page[at] == 1
                at += 1
                defined += Array(repeating: value, count: header >> 1)
            }
        }
        at = 4 + levelsLength
        var out: [Value?] = []
        for row in 0..<rows {
            guard defined[row] else {
                out.append(nil)
                continue
            }
            switch type {
            case 1:
                out.append(.int(Int64(Int32(truncatingIfNeeded: u32(at)))))
                at += 4
            case 2:
                out.append(.int(Int64(bitPattern: UInt64(u32(at)) | UInt64(u32(at + 4)) << 32)))
                at += 8
            case 6:
                let length = u32(at)
                out.append(.bytes(Array(page[at + 4..<at + 4 + length])))
                at += 4 + length
            default: throw Failure(description: "physical type \(type)")
            }
        }
        return out
    }

    static func varint(_ bytes: [UInt8], _ at: inout Int) throws -> UInt64 {
        var value: UInt64 = 0
        var shift: UInt64 = 0
        while true {
            guard at < bytes.count, shift < 64 else { throw Failure(description: "varint past the end") }
            let byte = bytes[at]
            at += 1
            value |= UInt64(byte & 0x7F) << shift
            if byte & 0x80 == 0 { return value }
            shift += 7
        }
    }

    static func structure(_ bytes: [UInt8], _ at: inout Int) throws -> Thrift {
        var fields: [Int: Thrift] = [:]
        var last = 0
        while true {
            guard at < bytes.count else { throw Failure(description: "struct past the end") }
            let header = bytes[at]
            at += 1
            if header == 0 { return .structure(fields) }
            let delta = Int(header >> 4)
            if delta == 0 {
                let raw = try varint(bytes, &at)
                last = Int(Int64(bitPattern: raw >> 1) ^ -Int64(bitPattern: raw & 1))
            } else {
                last += delta
            }
            fields[last] = try value(bytes, &at, type: header & 0x0F)
        }
    }

    static func value(_ bytes: [UInt8], _ at: inout Int, type: UInt8) throws -> Thrift {
        switch type {
        case 1, 2: return .int(type == 1 ? 1 : 0)
        case 3:
            at += 1
            return .int(Int64(Int8(bitPattern: bytes[at - 1])))
        case 4, 5, 6:
            let raw = try varint(bytes, &at)
            return .int(Int64(bitPattern: raw >> 1) ^ -Int64(bitPattern: raw & 1))
        case 8:
            let length = Int(try varint(bytes, &at))
            defer { at += length }
            return .binary(Array(bytes[at..<at + length]))
        case 9:
            let header = bytes[at]
            at += 1
            var count = Int(header >> 4)
            if count == 15 { count = Int(try varint(bytes, &at)) }
            return .list(try (0..<count).map { _ in try value(bytes, &at, type: header & 0x0F) })
        case 12: return try structure(bytes, &at)
        default: throw Failure(description: "Thrift type \(type)")
        }
    }
}
