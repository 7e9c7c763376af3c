import ImageDownloader
import ImageWorkerProtocol
import InputValidation

/// Reads a method's params object field by field, turning every mistake into a -32602 that says
/// which field is wrong and why, and refusing unknown fields (a typo should not pass silently).
struct ParamReader {
    let method: String
    let object: JSONObject

    /// - Parameter allowed: the method's fields, looked through as an array: a request names a
    ///   few of them, and a `Set` built per request cost more than the look-ups it saved.
    init(_ request: RPCRequest, allowed: [String]) throws(RPCError) {
        method = request.method
        switch request.params {
        case nil:
            object = JSONObject()
        case .object(let o)?:
            object = o
        case .array?:
            throw .invalidParams("\(request.method) takes its params as an object (by name), not an array")
        default:
            throw .invalidParams("params must be an object")
        }
        // `_meta` is the caller's (MCP puts its progress tokens and tracing there): accepted on
        // every method and ignored, as MCP requires of a server.
        for key in object.keys where !allowed.contains(key) && key != "_meta" {
            if allowed.isEmpty { throw .invalidParams("\(method) takes no params; got \"\(key)\"") }
            throw .invalidParams("unknown field \"\(key)\" in \(method); known fields: \(allowed.sorted().joined(separator: ", "))")
        }
    }

    func has(_ key: String) -> Bool { object[key] != nil && object[key] != .null }

    func string(_ key: String) throws(RPCError) -> String? {
        guard let value = object[key], value != .null else { return nil }
        guard case .string(let s) = value else { throw typeError(key, "a string", value) }
        return s
    }

    func requiredString(_ key: String) throws(RPCError) -> String {
        guard let s = try string(key) else { throw .invalidParams("\(method) needs \"\(key)\"") }
        return s
    }

    /// A download token: a non-empty string or an integer; nil when absent (or null).
    func token(_ key: String = "token") throws(RPCError) -> DownloadToken? {
        guard let value = object[key], value != .null else { return nil }
        guard let token = DownloadToken(json: value) else { throw .invalidParams("\"\(key)\" must be a non-empty string or an integer") }
        return token
    }

    func requiredToken() throws(RPCError) -> DownloadToken {
        guard let token = try token() else { throw .invalidParams("\(method) needs \"token\"") }
        return token
    }

    func bool(_ key: String) throws(RPCError) -> Bool? {
        guard let value = object[key], value != .null else { return nil }
        guard case .bool(let b) = value else { throw typeError(key, "true or false", value) }
        return b
    }

    func integer(_ key: String, in range: ClosedRange<Int64>) throws(RPCError) -> Int64? {
        guard let value = object[key], value != .null else { return nil }
        guard let i = value.integerValue else { throw typeError(key, "a whole number", value) }
        guard range.contains(i) else {
            throw .invalidParams("\"\(key)\" must be between \(range.lowerBound) and \(range.upperBound), not \(i)")
        }
        return i
    }

    func number(_ key: String, in range: ClosedRange<Double>) throws(RPCError) -> Double? {
        guard let value = object[key], value != .null else { return nil }
        guard let d = value.numberValue else { throw typeError(key, "a number", value) }
        guard range.contains(d) else {
            throw .invalidParams("\"\(key)\" must be between \(range.lowerBound) and \(range.upperBound), not \(d)")
        }
        return d
    }

    /// An array of strings, each non-empty and without CR, LF or NUL (they go into headers and
    /// logs); nil when absent.
    func strings(_ key: String) throws(RPCError) -> [String]? {
        guard let value = object[key], value != .null else { return nil }
        guard case .array(let items) = value else { throw typeError(key, "an array of strings", value) }
        return try items.map { item throws(RPCError) -> String in
            guard case .string(let s) = item, !s.isEmpty, !s.utf8.contains(where: { $0 == 0x0D || $0 == 0x0A || $0 == 0 }) else {
                throw .invalidParams("\"\(key)\" must be an array of non-empty strings without CR, LF or NUL")
            }
            return s
        }
    }

    func object(_ key: String) throws(RPCError) -> JSONObject? {
        guard let value = object[key], value != .null else { return nil }
        guard case .object(let o) = value else { throw typeError(key, "an object", value) }
        return o
    }

    func oneOf(_ key: String, _ choices: [String]) throws(RPCError) -> String? {
        guard let s = try string(key) else { return nil }
        guard choices.contains(s) else {
            throw .invalidParams("\"\(key)\" must be one of \(choices.joined(separator: ", ")), not \"\(s)\"")
        }
        return s
    }

    /// `true`, `false` or one of `choices` (`output.verify`); nil when absent.
    func boolOrOneOf(_ key: String, _ choices: [String]) throws(RPCError) -> JSONValue? {
        guard let value = object[key], value != .null else { return nil }
        switch value {
        case .bool: return value
        case .string(let s) where choices.contains(s): return value
        default:
            let listed = (["true", "false"] + choices.map { "\"\($0)\"" }).joined(separator: ", ")
            throw .invalidParams("\"\(key)\" must be one of \(listed), not \(value.typeName == "string" ? "\"\(value.stringValue ?? "")\"" : value.typeName)")
        }
    }

    func typeError(_ key: String, _ expected: String, _ value: JSONValue) -> RPCError {
        .invalidParams("\"\(key)\" must be \(expected), not \(value.typeName)")
    }
}

/// Header names are RFC 9110 tokens; values may not hold CR, LF or NUL (header injection).
enum HeaderValidation {
    static func headers(_ object: JSONObject, field: String) throws(RPCError) -> [(String, String)] {
        var result: [(String, String)] = []
        for (name, value) in object {
            guard case .string(let text) = value else {
                throw .invalidParams("\(field): the value of header \"\(name)\" must be a string")
            }
            guard HTTPHeaderField.isValidName(name) else {
                throw .invalidParams("\(field): \"\(name)\" is not a valid header name")
            }
            guard HTTPHeaderField.isValidValue(text) else {
                throw .invalidParams("\(field): the value of header \"\(name)\" contains CR, LF or NUL")
            }
            result.append((name, text))
        }
        return result
    }
}
