import NIOCore

/// How many threads serve the network: AsyncHTTPClient's event loops, which connect, write
/// requests, read and parse responses and run TLS for every connection.
///
/// NIO's default is one per online CPU. Beside the worker's own threads (the task pool, one per
/// CPU, and the decoders) that makes each download's hand-offs between threads wake a sleeping
/// thread more often, for more CPU per file and no faster decoding. A
/// network thread does a small part of a download's work, so a quarter of the CPUs is plenty: 1
/// up to 7 CPUs, 4 on 16.
public enum NetworkThreads {
    /// `--network-threads`' largest value.
    public static let maximum = 256

    /// The default for a process that may use `cpus` CPUs: a quarter of them, at least 1.
    public static func defaultCount(cpus: Int) -> Int {
        min(maximum, max(1, cpus / 4))
    }

    /// Sets the count for this process. Call it once (NIO stops the process on a second call),
    /// first thing, before any download: NIO's shared threads are made at the first connection
    /// and keep the count they were made with.
    /// Returns the count set.
    @discardableResult
    public static func use(_ count: Int) -> Int {
        let count = max(1, min(maximum, count))
        NIOSingletons.groupLoopCountSuggestion = count
        return count
    }
}
