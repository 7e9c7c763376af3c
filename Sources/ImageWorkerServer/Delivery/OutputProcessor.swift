import ImageDownloader
import ImageWorkerProtocol

extension WorkerServer {
    /// An output spec, and the processor that delivers it, held by reference by every queued
    /// download that asked for it.
    final class OutputProcessor: Sendable {
        let spec: OutputSpec
        let processor: Downloader<JSONObject, DeliveryFailure>.Processor

        /// The processor holds the server weakly: the server keeps the latest of these.
        init(_ spec: OutputSpec, server: WorkerServer) {
            self.spec = spec
            self.processor = { [weak server] resource, ticket throws(DeliveryFailure) in
                guard let server else { throw DeliveryFailure.output("the worker has stopped", path: nil) }
                return try await server.deliver(resource, ticket, spec: spec)
            }
        }
    }
}
