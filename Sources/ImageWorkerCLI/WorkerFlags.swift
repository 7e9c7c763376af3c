import ArgumentParser
import Foundation
import ImageDownloader
import ImageWorkerServer
import Logging

/// The flags `serve` and `get` share: what the worker logs, and how it reaches the network
/// (proxies, the HTTP cache).
struct WorkerFlags: ParsableArguments {
    @Option(help: "Log level on stderr: trace, debug, info, notice, warning, error, critical.")
    var logLevel: String = "warning"

    @Option(help: "Proxy for http and https URLs: http://[user:pass@]host:port or socks5://host:port; \"\" for none (default: http_proxy, https_proxy, all_proxy).")
    var proxy: String?

    @Option(help: "Hosts reached directly, comma-separated: names (with their subdomains), IPs, CIDR ranges, *; default: no_proxy.")
    var noProxy: String?

    @Option(help: "Keep responses in an HTTP cache in this directory (RFC 9111; made when missing; workers and get runs may share it).")
    var cacheDir: String?

    func validate() throws {
        guard Logger.Level(rawValue: logLevel) != nil else {
            throw ValidationError("--log-level must be one of trace, debug, info, notice, warning, error, critical")
        }
        if let p = proxy, let problem = WorkerOptions.proxyProblem(p) { throw ValidationError("--proxy: \(problem)") }
        if let d = cacheDir { try Self.makeCacheDirectory(d) }
    }

    /// Logs go to stderr at `--log-level`, with credentials redacted.
    func bootstrapLogging() {
        let level = Logger.Level(rawValue: logLevel)!
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return RedactingLogHandler(handler)
        }
    }

    /// Makes the cache directory, or says why it cannot be used.
    static func makeCacheDirectory(_ path: String) throws {
        if let problem = Folders.make(path) { throw ValidationError("--cache-dir: cannot use \(path): \(problem)") }
        guard access(path, W_OK) == 0 else { throw ValidationError("--cache-dir: \(path) is not writable") }
    }
}
