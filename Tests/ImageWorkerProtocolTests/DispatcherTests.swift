import Foundation
import ImageWorkerProtocol
import TestSupport
import Testing

/// The JSON-RPC 2.0 specification's own examples, against the dispatcher with the methods they
/// assume (subtract, sum, get_data, update, notify_*).
@Suite struct DispatcherSpecVectorTests {
    static func specMethods() -> RPCDispatcher {
        @Sendable func numbers(_ params: JSONValue?) throws -> [Int64] {
            guard let array = params?.arrayValue else { throw RPCError.invalidParams("expected an array") }
            return try array.map { guard let i = $0.integerValue else { throw RPCError.invalidParams("not a number") }; return i }
        }
        return RPCDispatcher(methods: [
            "subtract": { request in
                switch request.params {
                case .array?:
                    let n = try numbers(request.params)
                    return RPCReply(.int(n[0] - n[1]))
                case .object(let o)?:
                    guard let a = o["minuend"]?.integerValue, let b = o["subtrahend"]?.integerValue else {
                        throw RPCError.invalidParams("minuend and subtrahend")
                    }
                    return RPCReply(.int(a - b))
                default: throw RPCError.invalidParams("params")
                }
            },
            "sum": { request in RPCReply(.int(try numbers(request.params).reduce(0, +))) },
            "get_data": { _ in RPCReply(["hello", 5]) },
            "update": { _ in RPCReply(nil) },
            "notify_hello": { _ in RPCReply(nil) },
            "notify_sum": { _ in RPCReply(nil) },
        ])
    }

    struct Vector: CustomStringConvertible, Sendable {
        var sent: String
        var expected: String?
        var description: String { sent }
    }

    static func vectors() throws -> [Vector] {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Vectors/jsonrpc-2.0-spec.txt")
        var result: [Vector] = []
        for line in try String(contentsOf: url, encoding: .utf8).split(separator: "\n", omittingEmptySubsequences: true) {
            if line.hasPrefix("--> ") {
                result.append(Vector(sent: String(line.dropFirst(4))))
            } else if line.hasPrefix("<-- ") {
                result[result.count - 1].expected = String(line.dropFirst(4))
            }
        }
        return result
    }

    /// Codes instead of messages, batch answers in a stable order.
    static func normalized(_ value: JSONValue) -> JSONValue {
        switch value {
        case .array(let elements):
            return .array(elements.map(normalized).sorted { canonical($0) < canonical($1) })
        case .object(var o):
            if let error = o["error"] { o["error"] = ["code": error["code"] ?? nil] }
            return .object(o)
        default:
            return value
        }
    }

    /// JSON text with keys sorted, for ordering regardless of key order.
    static func canonical(_ value: JSONValue) -> String {
        switch value {
        case .object(let o):
            return "{" + o.keys.sorted().map { "\($0):\(canonical(o[$0]!))" }.joined(separator: ",") + "}"
        case .array(let a):
            return "[" + a.map(canonical).joined(separator: ",") + "]"
        default:
            return JSONWriter.encodeString(value)
        }
    }

    @Test func thereAreFifteenVectors() throws {
        #expect(try Self.vectors().count == 15)
    }

    @Test(arguments: try vectors())
    func specVector(_ vector: Vector) async throws {
        let outcome = await Self.specMethods().dispatch(Array(vector.sent.utf8))
        guard let expected = vector.expected else {
            #expect(outcome.reply == nil, "nothing may be answered")
            return
        }
        let reply = try #require(outcome.reply)
        #expect(Self.normalized(reply) == Self.normalized(try JSONParser.parse(expected)))
    }
}

@Suite struct DispatcherRuleTests {
    let dispatcher: RPCDispatcher = {
        var d = RPCDispatcher(methods: [
            "echo": { RPCReply($0.params ?? nil) },
            "fail": { _ in throw CocoaError(.fileNoSuchFile) },
        ])
        d.gate = { $0.method == "gated" ? .invalidRequest("closed") : nil }
        return d
    }()

    func answer(_ text: String) async throws -> JSONValue? {
        await dispatcher.dispatch(Array(text.utf8)).reply
    }

    @Test func idsAreEchoedWithTheirType() async throws {
        #expect(try await answer(#"{"jsonrpc":"2.0","id":"1","method":"echo","params":{}}"#)?["id"] == "1")
        #expect(try await answer(#"{"jsonrpc":"2.0","id":1,"method":"echo","params":{}}"#)?["id"] == 1)
        #expect(try await answer(#"{"jsonrpc":"2.0","id":1.5,"method":"echo","params":{}}"#)?["id"] == .double(1.5))
        #expect(try await answer(#"{"jsonrpc":"2.0","id":null,"method":"echo","params":{}}"#)?["id"] == .null)
    }

    @Test(arguments: ["18446744073709551615", "1e2", "-0", "1.50", "-9223372036854775809"])
    func numericIdsAreEchoedByteForByte(_ id: String) async throws {
        let reply = await dispatcher.dispatch(Array(#"{"jsonrpc":"2.0","id":\#(id),"method":"echo","params":{}}"#.utf8)).reply
        let text = try #require(reply.map { JSONWriter.encodeString($0) })
        #expect(text.hasPrefix(#"{"jsonrpc":"2.0","id":\#(id),"#), "\(text)")
    }

    @Test(arguments: [
        #"1"#, #""x""#, #"null"#, #"true"#, #"{"jsonrpc":"2.0","id":true,"method":"echo"}"#,
        #"{"jsonrpc":"2.0","id":{},"method":"echo"}"#, #"{"jsonrpc":"2.0","id":[],"method":"echo"}"#,
        #"{"jsonrpc":"1.0","id":1,"method":"echo"}"#, #"{"id":1,"method":"echo"}"#,
        #"{"jsonrpc":"2.0","id":1,"method":"echo","params":3}"#, #"{"jsonrpc":"2.0","id":1}"#,
    ])
    func invalidRequestsGetMinus32600(_ text: String) async throws {
        let reply = try #require(try await answer(text))
        #expect(reply["error"]?["code"] == -32600)
    }

    /// `"params": null` is taken as absent (Eglot, Atom's LSP client and the MCP SDK send it); a
    /// scalar is still an invalid request.
    @Test func nullParamsAreTakenAsAbsent() async throws {
        let reply = try #require(try await answer(#"{"jsonrpc":"2.0","id":7,"method":"echo","params":null}"#))
        #expect(reply["error"] == nil && reply["id"] == 7, "\(reply)")
        #expect(reply["result"] == .null, "echo answers its params: none")
        guard case .success(let request) = RPCRequest.validate(try JSONParser.parse(#"{"jsonrpc":"2.0","method":"m","params":null}"#)) else {
            Issue.record("params null refused")
            return
        }
        #expect(request.params == nil)
    }

    @Test func aBatchWithNullGetsAnArrayOfOneError() async throws {
        let reply = try await answer("[null]")
        #expect(reply?.arrayValue?.count == 1)
        #expect(reply?.arrayValue?.first?["error"]?["code"] == -32600)
    }

    @Test func notificationsAreNeverAnsweredEvenWhenTheyFail() async throws {
        #expect(try await answer(#"{"jsonrpc":"2.0","method":"nope"}"#) == nil)
        #expect(try await answer(#"{"jsonrpc":"2.0","method":"fail"}"#) == nil)
        #expect(try await answer(#"{"jsonrpc":"2.0","method":"gated"}"#) == nil)
    }

    @Test func aThrownErrorThatIsNotAnRPCErrorIsAnInternalError() async throws {
        #expect(try await answer(#"{"jsonrpc":"2.0","id":7,"method":"fail"}"#)?["error"]?["code"] == -32603)
    }

    @Test func theGateRefusesWithItsError() async throws {
        #expect(try await answer(#"{"jsonrpc":"2.0","id":7,"method":"gated"}"#)?["error"]?["code"] == -32600)
    }

    @Test func responsesSentToTheServerAreIgnored() async throws {
        #expect(try await answer(#"{"jsonrpc":"2.0","id":7,"result":{}}"#) == nil)
    }

    @Test func afterReplyWorkRunsInBatchOrder() async throws {
        let log = LogBox()
        let d = RPCDispatcher(methods: [
            "a": { r in RPCReply(["ok": true], afterReply: { log.add(r.params?["n"]?.integerValue ?? -1) }) }
        ])
        let outcome = await d.dispatch(Array(#"[{"jsonrpc":"2.0","id":1,"method":"a","params":{"n":1}},{"jsonrpc":"2.0","method":"a","params":{"n":2}}]"#.utf8))
        #expect(outcome.reply?.arrayValue?.count == 1)
        #expect(log.values.isEmpty, "after-reply work waits for the caller")
        for work in outcome.afterReply { await work() }
        #expect(log.values == [1, 2])
    }
}

final class LogBox: Sendable {
    private let storage = LockedValues()
    func add(_ v: Int64) { storage.append(v) }
    var values: [Int64] { storage.all }
}

import Synchronization
final class LockedValues: Sendable {
    private let m = Mutex<[Int64]>([])
    func append(_ v: Int64) { m.withLock { $0.append(v) } }
    var all: [Int64] { m.withLock { $0 } }
}
