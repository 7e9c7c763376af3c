import ImageWorkerProtocol
import Logging

/// What the worker wants its user to know without failing anything (shared memory full, a proxy
/// setting skipped): logged on stderr, and sent once per `code` as a `worker/warning`
/// notification, so that a client shows it to the person running the script instead of keeping
/// it in a buffer of stderr lines nobody reads.
final class WorkerWarnings: Sendable {
    private let said = LockedState(Set<String>())
    private let send: @Sendable (JSONValue) -> Void
    private let logger: Logger

    init(logger: Logger, send: @escaping @Sendable (JSONValue) -> Void) {
        self.logger = logger
        self.send = send
    }

    /// Logs `message`; sends it unless a warning with the same `code` was sent before.
    func warn(_ code: String, _ message: String, details: [String: String] = [:]) {
        logger.warning("\(message)", metadata: details.mapValues { .string($0) })
        guard said.withLock({ $0.insert(code).inserted }) else { return }
        var params: JSONObject = ["code": .string(code), "message": .string(message)]
        if !details.isEmpty { params["details"] = .object(JSONObject(details.sorted { $0.key < $1.key }.map { ($0.key, JSONValue.string($0.value)) })) }
        send(RPCResponse.notification(method: WorkerNotification.warning, params: .object(params)))
    }
}
