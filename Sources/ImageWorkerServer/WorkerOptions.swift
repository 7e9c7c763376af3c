import Foundation
import ImageDownloader

/// What happens to in-flight work when stdin ends.
public enum EOFPolicy: String, Sendable, CaseIterable {
    /// Accept nothing more, finish what is in flight, flush, exit 0.
    case drain
    /// Cancel what is in flight (each token still gets its terminal event), flush, exit 0.
    case cancel
}

/// Start-up options of a worker process.
public struct WorkerOptions: Sendable {
    public var configuration: DownloaderConfiguration
    public var onEOF: EOFPolicy = .drain
    /// With `drain`: after stdin's end, once nothing has moved for this long (no head, no body
    /// bytes, no decode), what is left is cancelled (nil: wait until every download ends, as
    /// `get` does; the protocol worker's default is 2000).
    public var eofGraceMs: Int64?
    /// `file://` URLs are served only below this directory; refused when nil.
    public var fileRoot: String?
    /// The HTTP cache's directory (made when missing); nil: no cache.
    public var cacheDirectory: String?
    /// Input messages longer than this are answered with -32700 and skipped.
    public var maxMessageBytes = 16 << 20
    /// The threads the process's network was given (`NetworkThreads.use`): how HTTP requests are
    /// sent follows it (`HTTPExchange.Route.forNetwork`).
    public var networkThreads = 1

    /// What was wrong with the proxy variables of the environment (those values are not used);
    /// the worker logs it at start.
    public var proxyProblems: [String] = []

    /// Proxies come from `environment` (`http_proxy`, `https_proxy`, `all_proxy`, `no_proxy`, in
    /// either case).
    public init(environment: [String: String] = ProcessInfo.processInfo.environment) {
        configuration = DownloaderConfiguration(userAgent: "image-worker/\(WorkerServer.version)")
        (configuration.proxies, proxyProblems) = ProxySettings.fromEnvironment(environment)
    }

    /// What is wrong with a `--proxy` value (`scheme://[user:password@]host[:port]`), or nil when
    /// it can be used; the empty text means no proxy.
    public static func proxyProblem(_ text: String) -> String? {
        guard !text.isEmpty else { return nil }
        do { _ = try ProxySettings.Proxy.parse(text) } catch { return error.reason }
        return nil
    }

    /// Every URL goes through `text`'s proxy (the empty text: none), whatever the environment said;
    /// a value `proxyProblem` refuses is ignored.
    public mutating func useProxy(_ text: String) {
        configuration.proxies.useForBoth(text.isEmpty ? nil : try? ProxySettings.Proxy.parse(text))
    }

    /// The hosts that bypass the proxy, as `no_proxy` lists them.
    public mutating func useNoProxy(_ text: String) {
        configuration.proxies.setNoProxy(text)
    }
}
