/// A request id, echoed back exactly as it came, type included (`"1"` is not `1`).
public enum RPCId: Sendable, Hashable, CustomStringConvertible {
    case string(String)
    case int(Int64)
    /// Legal in JSON-RPC though discouraged; kept so it can be echoed back as sent.
    case double(Double)
    /// Any other number, as its text: `-0`, `1e2`, beyond 64 bits (`JSONValue.rawNumber`).
    case rawNumber(String)
    case null

    public init?(_ json: JSONValue) {
        switch json {
        case .string(let s): self = .string(s)
        case .int(let i): self = .int(i)
        case .double(let d): self = .double(d)
        case .rawNumber(let text): self = .rawNumber(text)
        case .null: self = .null
        default: return nil
        }
    }

    public var json: JSONValue {
        switch self {
        case .string(let s): return .string(s)
        case .int(let i): return .int(i)
        case .double(let d): return .double(d)
        case .rawNumber(let text): return .rawNumber(text)
        case .null: return .null
        }
    }

    public var description: String { JSONWriter.encodeString(json) }
}

/// A request or a notification (`id == nil`), already checked against JSON-RPC 2.0's shape rules.
public struct RPCRequest: Sendable {
    public var id: RPCId?
    public var method: String
    /// An object or an array, or nil when absent (or sent as `null`).
    public var params: JSONValue?

    public init(id: RPCId?, method: String, params: JSONValue? = nil) {
        self.id = id
        self.method = method
        self.params = params
    }

    public var isNotification: Bool { id == nil }

    /// Validates one element of a message (JSON-RPC 2.0 section 4).
    /// Returns the request, or the error to answer with and the id to answer it under.
    public static func validate(_ json: JSONValue) -> Result<RPCRequest, RPCFailure> {
        guard case .object(let object) = json else {
            return .failure(RPCFailure(id: .null, error: .invalidRequest("a request must be a JSON object")))
        }
        // An id we can read is echoed even in an Invalid Request answer; one we cannot is null.
        var id: RPCId? = nil
        if let rawId = object["id"] {
            guard let parsed = RPCId(rawId) else {
                return .failure(RPCFailure(id: .null, error: .invalidRequest("id must be a string, a number or null")))
            }
            id = parsed
        }
        guard object["jsonrpc"] == .string("2.0") else {
            return .failure(RPCFailure(id: id ?? .null, error: .invalidRequest("\"jsonrpc\" must be \"2.0\"")))
        }
        guard case .string(let method)? = object["method"] else {
            if object["method"] == nil, object["result"] != nil || object["error"] != nil {
                return .failure(RPCFailure(id: nil, error: .invalidRequest("a response was sent to the worker"), isResponse: true))
            }
            return .failure(RPCFailure(id: id ?? .null, error: .invalidRequest("\"method\" must be a string")))
        }
        let params = object["params"]
        switch params {
        case nil, .object?, .array?: break
        case .null?:
            // Taken as absent: Eglot, Atom's LSP client and the MCP SDK (`params=None`) send it.
            return .success(RPCRequest(id: id, method: method, params: nil))
        default:
            return .failure(RPCFailure(id: id ?? .null, error: .invalidRequest("\"params\" must be an object or an array")))
        }
        return .success(RPCRequest(id: id, method: method, params: params))
    }
}

/// An element that could not be taken as a request: what to answer, under which id.
public struct RPCFailure: Error, Sendable {
    /// nil: nothing is answered (a response sent to us by the client).
    public var id: RPCId?
    public var error: RPCError
    public var isResponse = false
}

public enum RPCResponse {
    public static func success(id: RPCId, result: JSONValue) -> JSONValue {
        ["jsonrpc": "2.0", "id": id.json, "result": result]
    }

    public static func failure(id: RPCId, error: RPCError) -> JSONValue {
        ["jsonrpc": "2.0", "id": id.json, "error": error.json]
    }

    public static func notification(method: String, params: JSONValue) -> JSONValue {
        ["jsonrpc": "2.0", "method": .string(method), "params": params]
    }
}
