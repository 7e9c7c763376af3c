import Foundation
import ImageWorkerProtocol
import NIOConcurrencyHelpers

/// The entries the feeder has written requests for and the event reader has not yet registered,
/// and those it refused to send (each with the error response that stands for the worker's).
final class FedEntries: Sendable {
    private let entries = NIOLockedValueBox<[GetEntry]>([])
    private let refused = NIOLockedValueBox<[(GetEntry, JSONValue)]>([])
    private let stopped = NIOLockedValueBox(false)

    /// The run is interrupted: the feeder sends no more, and refusals are not failures.
    func interrupt() { stopped.withLockedValue { $0 = true } }
    var interrupted: Bool { stopped.withLockedValue { $0 } }

    func add(_ entry: GetEntry) {
        entries.withLockedValue { $0.append(entry) }
    }

    func take() -> [GetEntry] {
        entries.withLockedValue { taken in
            defer { taken.removeAll(keepingCapacity: true) }
            return taken
        }
    }

    /// An entry whose request (of `id`) is not sent: it ends as a refused request, with `message`.
    func refuse(_ entry: GetEntry, id: RPCId, message: String) {
        let reply = RPCResponse.failure(id: id, error: RPCError(code: RPCError.invalidRequestCode, message: message))
        refused.withLockedValue { $0.append((entry, reply)) }
    }

    func takeRefused() -> [(GetEntry, JSONValue)] {
        refused.withLockedValue { taken in
            defer { taken.removeAll() }
            return taken
        }
    }
}
