import AsyncHTTPClient
import Logging
import NIOConcurrencyHelpers
import NIOCore

/// The worker's HTTP clients: one shared `HTTPClient` for direct connections and one per proxy in
/// use (AsyncHTTPClient takes its proxy per client, not per request), each made at first use with
/// the same settings. `no_proxy` decides per request which one a URL takes (`ProxySettings`).
public final class HTTPClients: Sendable {
    private let clients = NIOLockedValueBox<[ProxySettings.Proxy?: HTTPClient]>([:])
    private let logger: Logger
    /// Which connection each request went out on (every client's connections report to it).
    public let observer = ConnectionObserver()
    /// How requests are sent (`HTTPExchange.Route.forNetwork` gives the one that suits a number
    /// of network threads); both behave the same.
    public let route: HTTPExchange.Route

    public init(logger: Logger, route: HTTPExchange.Route) {
        self.logger = logger
        self.route = route
    }

    /// The client that connects directly, or through `proxy`.
    public func client(through proxy: ProxySettings.Proxy?) -> HTTPClient {
        clients.withLockedValue { clients in
            if let client = clients[proxy] { return client }
            if let proxy { logger.info("using a proxy", metadata: ["proxy": "\(proxy)"]) }
            let client = HTTPClients.makeClient(proxy: proxy, observer: observer)
            clients[proxy] = client
            return client
        }
    }

    /// Shuts every client down (in-flight requests fail).
    public func shutdown() async {
        let all = clients.withLockedValue { clients in
            let all = Array(clients.values)
            clients = [:]
            return all
        }
        for client in all { try? await client.shutdown() }
    }

    /// The client configuration the worker uses: no redirects (followed by the loader), no
    /// connection-retry loop (the downloader retries with its own backoff and fails a dead server
    /// fast), no read timeout (the downloader's idle watchdog does that), HTTP/2 when offered, no
    /// tracing.
    static func makeClient(proxy: ProxySettings.Proxy?, observer: ConnectionObserver) -> HTTPClient {
        var configuration = HTTPClient.Configuration(
            redirectConfiguration: .disallow,
            timeout: .init(connect: .seconds(10), read: nil),
            decompression: .disabled)
        configuration.connectionPool.retryConnectionEstablishment = false
        configuration.httpVersion = .automatic
        // No distributed tracing: with the default (no-op) tracer, AsyncHTTPClient still makes a
        // span and parses each request's URL again for its attributes.
        configuration.tracing.tracer = nil
        configuration.http1_1ConnectionDebugInitializer = observer.http1ConnectionReady
        configuration.http2ConnectionDebugInitializer = observer.http2ConnectionReady
        configuration.http2StreamChannelDebugInitializer = observer.http2StreamReady
        if let proxy {
            switch proxy.kind {
            case .http:
                let authorization = proxy.user.map { HTTPClient.Authorization.basic(username: $0, password: proxy.password ?? "") }
                configuration.proxy = .server(host: proxy.host, port: proxy.port, authorization: authorization)
            case .socks5:
                configuration.proxy = .socksServer(host: proxy.host, port: proxy.port)
            }
        }
        return HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
    }
}
