/// A JSON-RPC 2.0 error object: `{code, message, data?}`.
public struct RPCError: Error, Sendable, Equatable, CustomStringConvertible {
    public var code: Int
    public var message: String
    public var data: JSONValue?

    public init(code: Int, message: String, data: JSONValue? = nil) {
        self.code = code
        self.message = message
        self.data = data
    }

    public var json: JSONValue {
        var object: JSONObject = ["code": .int(Int64(code)), "message": .string(message)]
        if let data { object["data"] = data }
        return .object(object)
    }

    public var description: String { "\(code) \(message)" }

    // The codes JSON-RPC 2.0 defines (section 5.1), plus LSP's RequestCancelled.
    public static let parseErrorCode = -32700
    public static let invalidRequestCode = -32600
    public static let methodNotFoundCode = -32601
    public static let invalidParamsCode = -32602
    public static let internalErrorCode = -32603
    public static let requestCancelledCode = -32800
    /// The worker's own (JSON-RPC's server-error range): a `download` past `maxLiveDownloads`
    /// while the queue is suspended.
    public static let queueFullCode = -32001

    public static func parseError(_ detail: String? = nil) -> RPCError {
        RPCError(code: parseErrorCode, message: "Parse error", data: detail.map { ["reason": .string($0)] })
    }

    public static func invalidRequest(_ detail: String? = nil) -> RPCError {
        RPCError(code: invalidRequestCode, message: "Invalid Request", data: detail.map { ["reason": .string($0)] })
    }

    public static func methodNotFound(_ method: String) -> RPCError {
        RPCError(code: methodNotFoundCode, message: "Method not found", data: ["method": .string(method)])
    }

    /// Invalid params, with the sentence that says what is wrong as the message.
    public static func invalidParams(_ message: String) -> RPCError {
        RPCError(code: invalidParamsCode, message: "Invalid params: \(message)")
    }

    public static func internalError(_ detail: String) -> RPCError {
        RPCError(code: internalErrorCode, message: "Internal error", data: ["reason": .string(detail)])
    }
}
