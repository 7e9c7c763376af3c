import ImageDecoding
import ImageDownloader

/// One decode per fetch and decode request, shared by the tokens that coalesced on the fetch:
/// the first token's processor starts it on the blocking pool, the others await the same result.
/// Each fetch's `DeliverySession` says when every consumer has been through: then its decodes
/// are dropped.
actor SharedDecodes {
    struct Key: Hashable {
        var fetchID: Int
        var format: OutputSpec.Format
        var maxPixelSize: Int?
        var maxPixelCount: Int?
    }

    private var tasks: [Key: Task<Result<DecodedImage, DecodeError>, Never>] = [:]
    private var sessions: [Int: DeliverySession] = [:]
    private(set) var decodesStarted = 0

    /// Fetches with state here (a session or a decode): none once every delivery has finished.
    var openFetches: Int { Set(sessions.keys).union(tasks.keys.map(\.fetchID)).count }

    func image(
        for resource: FetchedResource, key: Key, decode: @escaping @Sendable () throws(DecodeError) -> DecodedImage
    ) async -> Result<DecodedImage, DecodeError> {
        let task: Task<Result<DecodedImage, DecodeError>, Never>
        if let existing = tasks[key] {
            task = existing
        } else {
            decodesStarted += 1
            task = Task {
                do throws(DecodeError) {
                    return .success(try await BlockingWork.run(decode))
                } catch {
                    return .failure(error)
                }
            }
            tasks[key] = task
        }
        return await task.value
    }

    /// A token of the resource's fetch finished its delivery (also one that needed no decode, or
    /// failed). True when it was the last: the fetch's decodes are dropped.
    func tokenFinished(_ resource: FetchedResource) -> Bool {
        let fetchID = resource.fetchID
        var session = sessions[fetchID] ?? DeliverySession(consumers: resource.consumers)
        switch session.tokenFinished() {
        case .none:
            sessions[fetchID] = session
            return false
        case .release:
            sessions[fetchID] = nil
            // Removed in place: rebuilding the dictionary for every fetch showed in profiles.
            for key in tasks.keys.filter({ $0.fetchID == fetchID }) { tasks[key] = nil }
            return true
        }
    }
}
