import ImageDecoding
import ImageDownloader

/// One decode per fetch and decode request, shared by the tokens that coalesced on the fetch:
/// the first token's processor starts it on the blocking pool, the others await the same result.
/// An entry is dropped once every consumer of the fetch has been through.
actor SharedDecodes {
    struct Key: Hashable {
        var fetchID: Int
        var format: OutputSpec.Format
        var maxPixelSize: Int?
        var maxPixelCount: Int?
    }

    private var tasks: [Key: Task<Result<DecodedImage, DecodeError>, Never>] = [:]
    private var remaining: [Int: Int] = [:]
    private(set) var decodesStarted = 0

    func image(
        for resource: FetchedResource, key: Key, decode: @escaping @Sendable () throws(DecodeError) -> DecodedImage
    ) async -> Result<DecodedImage, DecodeError> {
        if remaining[resource.fetchID] == nil { remaining[resource.fetchID] = resource.consumers }
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
        let result = await task.value
        finished(resource.fetchID)
        return result
    }

    /// A consumer of the fetch is done (also one that needed no decode).
    func finished(_ fetchID: Int) {
        guard let count = remaining[fetchID] else { return }
        if count <= 1 {
            remaining[fetchID] = nil
            // Removed in place: rebuilding the dictionary for every fetch showed in profiles.
            for key in tasks.keys.filter({ $0.fetchID == fetchID }) { tasks[key] = nil }
        } else {
            remaining[fetchID] = count - 1
        }
    }
}
