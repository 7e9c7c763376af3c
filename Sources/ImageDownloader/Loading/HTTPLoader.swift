import AsyncHTTPClient
import Dispatch
import Foundation
import InputValidation
import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSOCKS
import NIOSSL

/// HTTP(S) through the worker's shared `HTTPClient` (or the one of the URL's proxy), streaming
/// the body with backpressure.
///
/// Redirects are followed here rather than inside the client, so that the limit can change at
/// run time, cookies apply to every hop, credentials are never sent to another origin, and each
/// hop takes its own route (`no_proxy`).
public struct HTTPLoader: ResourceLoader {
    public let clients: HTTPClients
    public let cookies: CookieJar
    public let logger: Logger
    /// The HTTP cache on disk (`--cache-dir`); nil: none.
    public let cache: HTTPCache?
    /// The logger handed to AsyncHTTPClient: `logger` when it shows `debug`, the level of
    /// everything the client logs; else one that drops everything. (The client sets two metadata
    /// values on a request's logger for every request, logged or not, each through the worker's
    /// redacting handler.)
    let clientLogger: Logger

    public init(clients: HTTPClients, cookies: CookieJar, logger: Logger, cache: HTTPCache? = nil) {
        self.clients = clients
        self.cookies = cookies
        self.logger = logger
        self.cache = cache
        self.clientLogger = logger.logLevel <= .debug ? logger : Logger(label: logger.label, factory: { _ in SwiftLogNoOpLogHandler() })
    }

    /// As `load` decides for its first hop: `cacheOnly` never goes to the network, and a stored
    /// response that matches answers `preferCache`, or `default` while it is fresh. (Cookies and
    /// credentials, which `Vary` may name, are left out here: a miss then goes to the network.)
    public func answersWithoutNetwork(_ request: LoadRequest) -> Bool {
        if request.cachePolicy == .cacheOnly { return true }
        guard let cache, request.resume == nil, !HTTPLoader.callerCaches(request.headers),
            let entry = HTTPLoader.storedEntry(in: cache, key: FetchKey.canonical(request.url), request, sent: request.headers)
        else { return false }
        return HTTPLoader.answers(entry, request, sent: request.headers)
    }

    /// Request headers with which the caller does its own caching: the cache stays out of it.
    static let callerConditionals: Set<String> = ["if-none-match", "if-modified-since", "if-range", "range", "if-match", "if-unmodified-since"]

    static func callerCaches(_ headers: [(String, String)]) -> Bool {
        headers.contains { callerConditionals.contains($0.0.lowercased()) }
    }

    /// The stored response that may answer a request sending `sent`: not for `reload`, nor for a
    /// request that skips certificate checks (it would refresh stored entries from an unverified
    /// server).
    static func storedEntry(in cache: HTTPCache, key: String, _ request: LoadRequest, sent: [(String, String)]) -> HTTPCache.Entry? {
        guard request.cachePolicy != .reload, !request.allowInvalidCertificates, let entry = cache.lookup(key),
            entry.response.matches(requestHeaders: sent)
        else { return nil }
        return entry
    }

    /// Whether that stored response answers without asking the server: any for `preferCache`
    /// and `cacheOnly`, a fresh one for `default`.
    static func answers(_ entry: HTTPCache.Entry, _ request: LoadRequest, sent: [(String, String)]) -> Bool {
        request.cachePolicy != .default || entry.response.isFresh(now: Date().timeIntervalSince1970, requestHeaders: sent)
    }

    public func load(
        _ request: LoadRequest, onHead: @Sendable (LoadedHead) async throws -> Void, onChunk: @Sendable (ByteBuffer) async throws -> Void
    ) async throws {
        var url = request.url
        var visited: Set<String> = [url.absoluteString]
        var redirects = 0
        var connectMs: Double? = nil
        while true {
            var outgoing = HTTPClientRequest(url: url.absoluteString)
            outgoing.method = .GET
            let sameOrigin = redirects == 0 || HTTPLoader.origin(of: url) == HTTPLoader.origin(of: request.url)
            for (name, value) in request.headers where sameOrigin || !HTTPLoader.isOriginBound(name) {
                outgoing.headers.add(name: name, value: value)
            }
            if let credentials = request.credentials, sameOrigin, !outgoing.headers.contains(name: "Authorization") {
                outgoing.headers.add(name: "Authorization", value: credentials.authorizationHeader)
            }
            if request.handleCookies, let cookie = cookies.header(for: url) {
                outgoing.headers.add(name: "Cookie", value: cookie)
            }
            if request.allowInvalidCertificates {
                var tls = TLSConfiguration.makeClientConfiguration()
                tls.certificateVerification = .none
                outgoing.tlsConfiguration = tls
            }
            // The cache, for this hop (redirects are always asked of the network); a resumed
            // attempt's range is not the cache's business.
            let sent = self.cache == nil || request.resume != nil ? [] : outgoing.headers.map { ($0.name, $0.value) }
            let cache = request.resume != nil || HTTPLoader.callerCaches(sent) ? nil : self.cache
            if let resume = request.resume {
                outgoing.headers.replaceOrAdd(name: "Range", value: "bytes=\(resume.offset)-")
                outgoing.headers.replaceOrAdd(name: "If-Range", value: resume.validator)
            }
            let cacheKey = cache == nil ? "" : FetchKey.canonical(url)
            var stored: HTTPCache.Entry? = nil
            if let cache, let entry = HTTPLoader.storedEntry(in: cache, key: cacheKey, request, sent: sent) {
                if HTTPLoader.answers(entry, request, sent: sent) {
                    cache.touch(entry)
                    logger.debug("from the cache", metadata: ["url": "\(url.absoluteString)"])
                    try await HTTPLoader.serve(
                        entry, response: entry.response, url: url, use: .stored, connection: nil, redirects: redirects, onHead: onHead,
                        onChunk: onChunk)
                    return
                }
                let conditionals = entry.response.conditionalHeaders
                if !conditionals.isEmpty {
                    for (name, value) in conditionals { outgoing.headers.replaceOrAdd(name: name, value: value) }
                    stored = entry
                }
            }
            if request.cachePolicy == .cacheOnly {
                throw DownloadFailure.network(.notCached, "no cached copy of \(url.absoluteString) (cachePolicy cacheOnly)")
            }
            let proxy = request.proxies.route(for: url)
            // Plain http through an HTTP proxy is forwarded, as curl does: the request goes to the
            // proxy with the URL as its request line (AsyncHTTPClient's own proxy support would open
            // a CONNECT tunnel, which proxies often allow to port 443 only). https is tunnelled.
            let forwarded = proxy?.kind == .http && url.scheme?.lowercased() == "http" ? proxy : nil
            if let forwarded {
                HTTPLoader.forward(&outgoing, to: forwarded, url: url)
                logger.debug("forwarded by the proxy", metadata: ["proxy": "\(forwarded)", "url": "\(url.absoluteString)"])
            }
            var requestTime = Date().timeIntervalSince1970
            var issuedAt = DispatchTime.now().uptimeNanoseconds
            var response: HTTPExchange
            var tag = ""
            // Resends so far: all of them, and those of a request that never reached a connection.
            var resent = (all: 0, unseen: 0)
            while true {
                // Tagged, so that the connection it goes out on can be told (the tag never leaves).
                tag = clients.observer.nextTag()
                outgoing.headers.replaceOrAdd(name: ConnectionObserver.header, value: tag)
                do {
                    response = try await HTTPExchange.send(
                        outgoing, on: clients.client(through: forwarded == nil ? proxy : nil), route: clients.route, logger: clientLogger)
                    break
                } catch {
                    // Whether the request went out on a connection (its tag was seen there), and on which.
                    let seen = clients.observer.take(tag)
                    if resent.all < HTTPLoader.maxStaleResends, seen != nil || resent.unseen < HTTPLoader.maxUnseenResends,
                        HTTPLoader.foundConnectionClosed(error, on: seen)
                    {
                        // A kept-alive connection the server had closed as the request went out
                        // (no byte of an answer came): sent again, on another connection, and not
                        // an attempt of the download's own, as browsers and curl do.
                        resent.all += 1
                        if seen == nil { resent.unseen += 1 }
                        logger.debug("sent again: the reused connection was closed", metadata: ["url": "\(url.absoluteString)"])
                        requestTime = Date().timeIntervalSince1970
                        issuedAt = DispatchTime.now().uptimeNanoseconds
                        continue
                    }
                    let target = "\(url.host ?? "?"):\(url.port ?? (url.scheme?.lowercased() == "https" ? 443 : 80))"
                    let failure = HTTPLoader.classify(
                        error, phase: proxy.map { "connecting to \(target) through the proxy \($0)" } ?? "connecting to \(target)")
                    // The URL's own host, not a redirect's: the one the downloader's host counts are of.
                    // (Through a proxy, a connection that fails is the proxy's: it says nothing of the host.)
                    if seen == nil && redirects == 0 && proxy == nil { throw HostNotReached(failure) }
                    throw failure
                }
            }
            let responseTime = Date().timeIntervalSince1970
            // Waits for new connections add up over the hops; the peer is the last hop's.
            let seen = clients.observer.take(tag)
            if let seen, seen.readyAt > issuedAt { connectMs = (connectMs ?? 0) + Double(seen.readyAt - issuedAt) / 1e6 }
            let connection = seen.map { ConnectionInfo(remoteAddress: $0.remoteAddress, connectMs: connectMs, reused: connectMs == nil) }
            if request.handleCookies {
                cookies.store(setCookieHeaders: response.head.headers["set-cookie"], from: url)
            }
            let status = Int(response.head.status.code)
            if forwarded != nil, status == 407 {
                throw DownloadFailure.network(.proxy, "the proxy asks for credentials (407)")
            }
            let version = response.head.version.major >= 2 ? "2" : "\(response.head.version.major).\(response.head.version.minor)"
            let received = response.head.headers.map { ($0.name, $0.value) }
            if status == 304, let cache, let stored {
                // Still current: the stored copy, with the 304's headers and times.
                try await HTTPLoader.discard(&response)
                let refreshed = stored.response.refreshed(with: received, requestTime: requestTime, responseTime: responseTime)
                cache.refresh(stored, with: refreshed)
                logger.debug("revalidated", metadata: ["url": "\(url.absoluteString)"])
                try await HTTPLoader.serve(
                    stored, response: refreshed, url: url, use: .revalidated, connection: connection, redirects: redirects, onHead: onHead,
                    onChunk: onChunk)
                return
            }
            if [301, 302, 303, 307, 308].contains(status), let location = response.head.headers.first(name: "location") {
                guard let resolved = URL(string: DownloadURL.whatwgSeparators(location, base: url.scheme), relativeTo: url)?.absoluteURL,
                    let scheme = resolved.scheme?.lowercased(), scheme == "http" || scheme == "https"
                else {
                    throw DownloadFailure.network(.redirect, "redirect to an unusable location: \(DownloadURL.redacted(location))")
                }
                // Checked as a request's URL is (a port out of range is `InvalidURL`); user
                // information in a Location is dropped, never sent on.
                let next = try DownloadURL.checked(resolved.absoluteString, fileURLsEnabled: false).url
                redirects += 1
                if redirects > request.maxRedirects {
                    throw DownloadFailure.network(.redirect, "more than \(request.maxRedirects) redirects")
                }
                guard visited.insert(next.absoluteString).inserted else {
                    throw DownloadFailure.network(.redirect, "redirect loop at \(next.absoluteString)")
                }
                logger.debug("redirect", metadata: ["status": "\(status)", "to": "\(DownloadURL.redacted(next.absoluteString))"])
                try await HTTPLoader.discard(&response)
                url = next
                continue
            }
            let head = LoadedHead(
                status: status, headers: received, finalURL: url, httpVersion: version, connection: connection, redirects: redirects)
            var writer: HTTPCache.Parked? = nil
            // A response fetched without checking the server's certificate is never stored: it
            // would answer requests that do check.
            if let cache, !request.allowInvalidCertificates,
                CachedResponse.isStorable(status: status, responseHeaders: received, requestHeaders: sent, hasCredentials: request.credentials != nil),
                let file = cache.beginStore()
            {
                let toStore = CachedResponse(
                    url: cacheKey, status: status, headers: received, requestTime: requestTime, responseTime: responseTime,
                    vary: CachedResponse.varyValues(responseHeaders: received, requestHeaders: sent), httpVersion: version, bodyBytes: 0)
                writer = HTTPCache.Parked(writer: file, head: toStore, validator: ResumePoint.validator(headers: received))
            }
            // A resumed attempt's 206 continues the entry its broken attempt began (parked then).
            if let resume = request.resume, let resumedCache = self.cache {
                let parked = resumedCache.unpark(FetchKey.canonical(url), validator: resume.validator, offset: resume.offset)
                if status == 206 { writer = parked }
            }
            try await onHead(head)
            do {
                while let chunk = try await response.nextChunk() {
                    writer?.writer.append(chunk)
                    try await onChunk(chunk)
                }
            } catch let error as DownloadFailure {
                throw error
            } catch {
                // Broken part-way: what was stored so far waits for the attempt that resumes it.
                if let writer, writer.validator != nil, writer.writer.bytesWritten > 0 { self.cache?.park(writer) }
                throw HTTPLoader.classify(error, phase: "receiving the body")
            }
            if let writer {
                let declared = writer.head.header("Content-Length").flatMap { Int64($0.trimmingCharacters(in: .whitespaces)) }
                if declared == nil || declared == writer.writer.bytesWritten, writer.writer.bytesWritten > 0 {
                    writer.writer.commit(writer.head)
                }
            }
            return
        }
    }

    /// Answers from a stored response: its head (status, headers as stored or refreshed), then its
    /// body from the file, chunk by chunk.
    private static func serve(
        _ entry: HTTPCache.Entry, response: CachedResponse, url: URL, use: CacheUse, connection: ConnectionInfo?, redirects: Int,
        onHead: @Sendable (LoadedHead) async throws -> Void, onChunk: @Sendable (ByteBuffer) async throws -> Void
    ) async throws {
        try await onHead(
            LoadedHead(
                status: response.status, headers: response.headerPairs, finalURL: url, httpVersion: response.httpVersion, cache: use,
                connection: connection, redirects: redirects))
        try await entry.readBody { try await onChunk($0) }
    }

    /// Turns `outgoing` into a request to `proxy` for `url`: sent to the proxy's address, with
    /// the target's `Host`, the proxy's credentials, and the absolute-form request line (written
    /// by the connection's `TagReader`).
    static func forward(_ outgoing: inout HTTPClientRequest, to proxy: ProxySettings.Proxy, url: URL) {
        guard var components = URLComponents(url: url, resolvingAgainstBaseURL: false) else { return }
        components.fragment = nil
        let absolute = components.string ?? url.absoluteString
        let host = components.host.map { $0.contains(":") && !$0.hasPrefix("[") ? "[\($0)]" : $0 } ?? ""
        let hostHeader = components.port.map { "\(host):\($0)" } ?? host
        components.scheme = "http"
        components.host = proxy.host.contains(":") ? "[\(proxy.host)]" : proxy.host  // (URLComponents wants an IPv6 host bracketed)
        components.port = proxy.port
        outgoing.url = components.string ?? "http://\(proxy.authority)/"
        outgoing.headers.replaceOrAdd(name: "Host", value: hostHeader)
        outgoing.headers.replaceOrAdd(name: ConnectionObserver.absoluteForm, value: absolute)
        if let authorization = proxy.authorization { outgoing.headers.replaceOrAdd(name: "Proxy-Authorization", value: authorization) }
    }

    /// Reads and drops a redirect's (small) body so the connection can be reused; a large one is
    /// abandoned, which closes its connection.
    private static func discard(_ response: inout HTTPExchange) async throws {
        var seen = 0
        while let chunk = try await response.nextChunk() {
            seen += chunk.readableBytes
            if seen > 64 * 1024 { return }
        }
    }

    /// How many times one hop's request is sent again after finding its reused connection closed.
    /// Each time takes another connection from the pool, which may hold several the server has
    /// closed (a server that closes every connection after one answer left about half of the
    /// requests on such a connection, and a few needed eight tries or more on loopback): the bound
    /// is there for a pool that keeps handing them out, not for the usual case.
    static let maxStaleResends = 32
    /// Of those, how many for a request that failed before reaching any connection (a pooled one
    /// found closed before the request was written, or a server that closes every connection as
    /// it accepts it: such a server gets a few more connections per attempt, not 32).
    static let maxUnseenResends = 4

    /// Whether a request failed only because the kept-alive connection it was given had been
    /// closed by the server (the connection closed or reset before any byte of an answer), on a
    /// connection that had carried an earlier request, or before it reached one at all: sending
    /// it again is safe (a GET) and is what the server expects. A new connection's failure is the
    /// download's own.
    static func foundConnectionClosed(_ error: any Error, on seen: ConnectionObserver.Observation?) -> Bool {
        if let seen, seen.requestNumber <= 1 { return false }
        if let e = error as? HTTPClientError { return e == .remoteConnectionClosed }
        if let e = error as? IOError { return e.errnoCode == ECONNRESET || e.errnoCode == EPIPE }
        if let e = error as? ChannelError {
            switch e {
            case .ioOnClosedChannel, .alreadyClosed, .outputClosed, .eof: return true
            default: return false
            }
        }
        return false
    }

    /// Headers that carry a credential meant for the request's own origin: after a redirect to
    /// another origin (scheme, host or port) they are not sent, as curl and the Fetch standard do.
    static func isOriginBound(_ name: String) -> Bool {
        let lower = name.lowercased()
        return lower == "authorization" || lower == "cookie" || lower == "proxy-authorization"
    }

    static func origin(of url: URL) -> String {
        let scheme = url.scheme?.lowercased() ?? ""
        let port = url.port ?? (scheme == "https" ? 443 : 80)
        return "\(scheme)://\(url.host?.lowercased() ?? ""):\(port)"
    }
}
