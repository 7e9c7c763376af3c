import Foundation
import NIOCore

/// One attempt at fetching a resource.
public struct LoadRequest: Sendable {
    public var url: URL
    /// Final headers (defaults merged with the request's), without credentials or cookies.
    public var headers: [(String, String)]
    public var credentials: Credentials?
    public var allowInvalidCertificates: Bool
    public var handleCookies: Bool
    public var maxRedirects: Int
    /// Time allowed until the response head arrives. The downloader's idle watchdog enforces it
    /// (as it does between chunks); `HTTPExchange`'s `async` route also hands it to
    /// AsyncHTTPClient as the request's deadline.
    public var timeoutMs: Int64
    /// Which proxy each hop goes through (the configuration's when the attempt began).
    public var proxies = ProxySettings()
    /// How the HTTP cache (if the loader has one) answers this request.
    public var cachePolicy = CachePolicy.default
    /// Ask for the rest of a body (`Range: bytes=offset-`, `If-Range: validator`); nil: all of it.
    public var resume: ResumePoint?
}

public struct LoadedHead: Sendable {
    public var status: Int
    public var headers: [(String, String)]
    /// The URL the response came from (after redirects).
    public var finalURL: URL
    public var httpVersion: String?
    /// Whether the HTTP cache answered (and how).
    public var cache: CacheUse
    /// The connection it came on (nil: none, or not observed).
    public var connection: ConnectionInfo?
    /// Redirects followed to reach it.
    public var redirects: Int

    public init(
        status: Int, headers: [(String, String)], finalURL: URL, httpVersion: String?, cache: CacheUse = .none,
        connection: ConnectionInfo? = nil, redirects: Int = 0
    ) {
        self.status = status
        self.headers = headers
        self.finalURL = finalURL
        self.httpVersion = httpVersion
        self.cache = cache
        self.connection = connection
        self.redirects = redirects
    }

    public func header(_ name: String) -> String? {
        headers.first { LoadedHead.sameName($0.0, name) }?.1
    }

    /// Header names compare ASCII case-insensitively (RFC 9110 §5.1); others exactly.
    static func sameName(_ a: String, _ b: String) -> Bool {
        let x = a.utf8, y = b.utf8
        guard x.count == y.count else { return false }
        for (p, q) in zip(x, y) where p != q {
            guard p | 0x20 == q | 0x20, (0x61...0x7A).contains(p | 0x20) else { return false }
        }
        return true
    }
}

/// Fetches bytes from somewhere. The loader calls `onHead` once, then `onChunk` for each piece of
/// the body, and returns when the body is complete. Either callback may throw to stop the load;
/// the loader then rethrows that error. Transport failures are thrown as `DownloadFailure`;
/// cancellation (of the calling task) as `CancellationError`. Backpressure is the callbacks':
/// the next chunk is not read before `onChunk` returns.
public protocol ResourceLoader: Sendable {
    func load(
        _ request: LoadRequest,
        onHead: @Sendable (LoadedHead) async throws -> Void,
        onChunk: @Sendable (ByteBuffer) async throws -> Void
    ) async throws

    /// Whether `request` would be answered without the network (a stored response, or
    /// `cacheOnly`'s "not cached"): asked before an attempt for a host that is down is refused.
    func answersWithoutNetwork(_ request: LoadRequest) -> Bool
}

extension ResourceLoader {
    public func answersWithoutNetwork(_ request: LoadRequest) -> Bool { false }
}

/// What a loader throws when the request to the URL's own host never reached a connection (the
/// first hop, not through a proxy: refused, unreachable, no DNS answer, the connect timeout, or
/// cancelled while connecting): `underlying` is the failure itself. The downloader counts these per host
/// (`HostHealth`) and then goes on with `underlying`.
public struct HostNotReached: Error, Sendable {
    public let underlying: any Error

    public init(_ underlying: any Error) {
        self.underlying = underlying
    }
}
