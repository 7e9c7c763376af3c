/// What a method returns: its result, and optionally work to run once the reply is on its way
/// (the worker uses it so that `download`'s `{token}` is written before any event of that token,
/// also inside a batch, whose reply is written only when every element has been handled).
public struct RPCReply: Sendable {
    public var result: JSONValue
    public var afterReply: (@Sendable () async -> Void)?

    public init(_ result: JSONValue, afterReply: (@Sendable () async -> Void)? = nil) {
        self.result = result
        self.afterReply = afterReply
    }
}

public typealias RPCMethodHandler = @Sendable (RPCRequest) async throws -> RPCReply

/// JSON-RPC 2.0 dispatch, independent of any method: single messages and batches, notifications
/// (never answered), id echoing, and the standard error codes. Methods throw `RPCError` for
/// protocol errors; any other error becomes -32603.
public struct RPCDispatcher: Sendable {
    public struct Outcome: Sendable {
        /// One response object, an array for a batch, or nil when nothing is to be written.
        public var reply: JSONValue?
        public var afterReply: [@Sendable () async -> Void] = []
    }

    public var methods: [String: RPCMethodHandler]
    /// Asked before every method call; an error refuses the call (the worker refuses everything
    /// after `shutdown` this way).
    public var gate: (@Sendable (RPCRequest) -> RPCError?)?
    /// Told about elements that are dropped without an answer (responses sent to us, notifications
    /// that failed), so they can be logged.
    public var onUnanswered: (@Sendable (String) -> Void)?

    public init(methods: [String: RPCMethodHandler] = [:]) {
        self.methods = methods
    }

    /// Parses and dispatches one framed message.
    public func dispatch(_ bytes: [UInt8]) async -> Outcome {
        let json: JSONValue
        do {
            json = try JSONParser.parse(bytes)
        } catch {
            return Outcome(reply: RPCResponse.failure(id: .null, error: .parseError(error.description)))
        }
        return await dispatch(parsed: json)
    }

    public func dispatch(parsed json: JSONValue) async -> Outcome {
        guard case .array(let elements) = json else {
            let (answer, after) = await handleElement(json)
            return Outcome(reply: answer, afterReply: after.map { [$0] } ?? [])
        }
        guard !elements.isEmpty else {
            return Outcome(reply: RPCResponse.failure(id: .null, error: .invalidRequest("empty batch")))
        }
        var answers: [JSONValue] = []
        var afterReply: [@Sendable () async -> Void] = []
        for element in elements {
            let (answer, after) = await handleElement(element)
            if let answer { answers.append(answer) }
            if let after { afterReply.append(after) }
        }
        // A batch of notifications is answered with nothing at all, never `[]`.
        return Outcome(reply: answers.isEmpty ? nil : .array(answers), afterReply: afterReply)
    }

    private func handleElement(_ json: JSONValue) async -> (JSONValue?, (@Sendable () async -> Void)?) {
        let request: RPCRequest
        switch RPCRequest.validate(json) {
        case .success(let r): request = r
        case .failure(let failure):
            guard let id = failure.id else {
                onUnanswered?("ignored a message that is not a request: \(failure.error.data?["reason"]?.stringValue ?? "")")
                return (nil, nil)
            }
            return (RPCResponse.failure(id: id, error: failure.error), nil)
        }
        do {
            if let gate, let refusal = gate(request) { throw refusal }
            guard let method = methods[request.method] else {
                throw RPCError.methodNotFound(request.method)
            }
            let reply = try await method(request)
            guard let id = request.id else { return (nil, reply.afterReply) }
            return (RPCResponse.success(id: id, result: reply.result), reply.afterReply)
        } catch {
            let rpcError = (error as? RPCError) ?? .internalError(String(describing: error))
            guard let id = request.id else {
                if rpcError.code != RPCError.methodNotFoundCode {
                    onUnanswered?("notification \(request.method) failed: \(rpcError.message)")
                }
                return (nil, nil)
            }
            return (RPCResponse.failure(id: id, error: rpcError), nil)
        }
    }
}
