/// A JSON value that keeps what the wire needs and Foundation loses: integers stay integers
/// (so a request id `1` is echoed as `1`, never `1.0`), a number that neither would write back as
/// it came stays text, and object keys keep their order.
public enum JSONValue: Sendable, Equatable {
    case null
    case bool(Bool)
    case int(Int64)
    case double(Double)
    /// A number kept as the text it arrived as: the parser makes one of every number that `.int`
    /// or `.double` would not write back byte for byte (`-0`, `1e2`, `1.50`,
    /// `18446744073709551615`), so that an id is echoed exactly as sent.
    case rawNumber(String)
    case string(String)
    case array([JSONValue])
    case object(JSONObject)

    public subscript(key: String) -> JSONValue? {
        if case .object(let object) = self { return object[key] }
        return nil
    }

    public var stringValue: String? {
        if case .string(let s) = self { return s }
        return nil
    }

    public var boolValue: Bool? {
        if case .bool(let b) = self { return b }
        return nil
    }

    /// The value as a whole number: an integer, or a double with no fractional part.
    public var integerValue: Int64? {
        switch self {
        case .int(let i): return i
        case .double(let d) where d.rounded() == d && abs(d) < 9.0e15: return Int64(d)
        case .rawNumber(let text):
            if let i = Int64(text) { return i }
            return Double(text).flatMap { $0.rounded() == $0 && abs($0) < 9.0e15 ? Int64($0) : nil }
        default: return nil
        }
    }

    public var numberValue: Double? {
        switch self {
        case .int(let i): return Double(i)
        case .double(let d): return d
        case .rawNumber(let text): return Double(text)
        default: return nil
        }
    }

    public var objectValue: JSONObject? {
        if case .object(let o) = self { return o }
        return nil
    }

    /// A short name of the value's type, for error messages.
    public var typeName: String {
        switch self {
        case .null: return "null"
        case .bool: return "boolean"
        case .int, .double, .rawNumber: return "number"
        case .string: return "string"
        case .array: return "array"
        case .object: return "object"
        }
    }
}

extension JSONValue: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByBooleanLiteral,
    ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral, ExpressibleByNilLiteral, ExpressibleByFloatLiteral
{
    public init(stringLiteral value: String) { self = .string(value) }
    public init(integerLiteral value: Int64) { self = .int(value) }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(arrayLiteral elements: JSONValue...) { self = .array(elements) }
    public init(dictionaryLiteral elements: (String, JSONValue)...) { self = .object(JSONObject(elements)) }
    public init(nilLiteral: ()) { self = .null }
    public init(floatLiteral value: Double) { self = .double(value) }
}

extension JSONValue {
    public init(_ value: Int) { self = .int(Int64(value)) }
    public init(_ value: String?) { self = value.map { .string($0) } ?? .null }
}

/// A JSON object whose keys keep the order they were inserted in. Equality ignores order.
///
/// The pairs are kept in an array, found by comparing keys: the protocol's objects are small
/// (an event has up to about 30 keys), and comparing short strings costs less than hashing them
/// (a dictionary per object showed in the profile of every message). Past `indexedCount` keys
/// an index by key is kept too, so that a large object (a hostile request's) is not quadratic.
public struct JSONObject: Sendable, Equatable, Sequence, ExpressibleByDictionaryLiteral {
    public typealias Element = (key: String, value: JSONValue)

    private var pairs: [Element] = []
    private var index: [String: Int]? = nil
    static let indexedCount = 16

    public init() {}

    public init(_ pairs: [(String, JSONValue)]) {
        self.pairs.reserveCapacity(pairs.count)
        for (k, v) in pairs { self[k] = v }
    }

    public init(dictionaryLiteral elements: (String, JSONValue)...) { self.init(elements) }

    public var keys: [String] { pairs.map(\.key) }
    public var count: Int { pairs.count }
    public var isEmpty: Bool { pairs.isEmpty }

    private func position(of key: String) -> Int? {
        if let index { return index[key] }
        return pairs.firstIndex { $0.key == key }
    }

    /// Setting a key again keeps its first position (the last value wins, as in most JSON parsers);
    /// setting nil removes it.
    public subscript(key: String) -> JSONValue? {
        get { position(of: key).map { pairs[$0].value } }
        set {
            let at = position(of: key)
            switch (at, newValue) {
            case (let at?, let value?):
                pairs[at].value = value
            case (nil, let value?):
                pairs.append((key, value))
                if index != nil {
                    index![key] = pairs.count - 1
                } else if pairs.count > Self.indexedCount {
                    reindex()
                }
            case (let at?, nil):
                pairs.remove(at: at)
                if index != nil { reindex() }
            case (nil, nil):
                break
            }
        }
    }

    /// The index by key, made again from the pairs.
    private mutating func reindex() {
        index = Dictionary(uniqueKeysWithValues: pairs.enumerated().map { ($1.key, $0) })
    }

    public func makeIterator() -> IndexingIterator<[Element]> { pairs.makeIterator() }

    public static func == (lhs: JSONObject, rhs: JSONObject) -> Bool {
        lhs.count == rhs.count && lhs.pairs.allSatisfy { rhs[$0.key] == $0.value }
    }
}
