import ArgumentParser
import ImageDownloader
import ImageWorkerServer
import Logging

/// The worker's threads, for `serve` and `get` alike: their CPU scheduling policy and how many
/// serve the network. Applied once, first thing in `run()`, before the worker starts its threads.
struct ThreadOptions: ParsableArguments {
    @Option(help: ThreadScheduling.help)
    var scheduling: String = ThreadScheduling.batch.rawValue

    @Option(help: "Threads for the network: connections, HTTP and TLS (default: a quarter of the CPUs the worker may use, at least 1).")
    var networkThreads: Int?

    func validate() throws {
        try ThreadScheduling.validate(scheduling)
        if let n = networkThreads, !(1...NetworkThreads.maximum).contains(n) {
            throw ValidationError("--network-threads must be between 1 and \(NetworkThreads.maximum)")
        }
    }

    /// Sets the policy of the threads there are (threads made later inherit it) and the network's
    /// thread count, which it returns (`WorkerOptions.networkThreads`); says on `logger` when the
    /// kernel refused the policy.
    func apply(logger: Logger) -> Int {
        if let refused = ThreadScheduling(rawValue: scheduling)!.apply() { logger.notice("\(refused)") }
        return NetworkThreads.use(networkThreads ?? NetworkThreads.defaultCount(cpus: WorkerServer.availableCPUs))
    }
}
