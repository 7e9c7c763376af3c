import Crypto
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOHTTP2
import NIOPosix
import NIOSSL
import SwiftASN1
import X509

/// A real HTTP/1.1 server on 127.0.0.1 that misbehaves on request, for tests and benchmarks.
///
/// Routes (query parameters combine where it makes sense):
/// - `/files/NAME` the registered bytes. `?chunk=N&delayMs=M` trickles N bytes every M ms;
///   `?chunked=1` sends no Content-Length; `?stallAfter=N` sends N bytes then nothing, forever;
///   `?resetAfter=N` sends N bytes then resets the connection; `?shortBy=N` announces the full
///   length, sends N bytes less, and closes; `?gate=G` holds the response until `openGate(G)`;
///   `?partial206=N` answers any request with `206` and the first N bytes;
///   `?type=MIME` sets Content-Type; `?pauseAt=N&gate=G` sends N bytes, then holds the rest
///   until `openGate(G)`. Caching: `?cc=V` sends `Cache-Control: V`, `?expires=V` `Expires: V`,
///   `?vary=V` `Vary: V`; `?etag=1` an ETag from the bytes and `?lm=1` a fixed `Last-Modified`
///   (a day before the `Date` sent), either answering a matching conditional request with 304.
///   Ranges: `?ranges=1` sends `Accept-Ranges: bytes` and an ETag, and answers `Range: bytes=N-`
///   (with a matching or absent `If-Range`) with a 206; `?ranges=ignore` advertises them but
///   always sends the whole body; `?ranges=bad` answers with a 206 from the wrong offset.
///   `?drops=K&seed=S` cuts the first K responses of that URL (reset) at seeded random points.
/// - `/status/CODE` that status (`?retryAfter=S` adds Retry-After).
/// - `/flaky/KEY/NAME?failures=N&status=S` fails the first N requests of KEY with status S (or,
///   with `mode=reset`, by resetting the connection), then serves NAME.
/// - `/redirect/N/NAME` redirects N times, then to `/files/NAME`; `/loop/a` and `/loop/b` redirect
///   to each other; `/redirect-to?url=U` redirects to U.
/// - `/huge` announces 10 GB and stalls. `/not-modified` answers 304.
/// - `/echo-headers` answers the request's headers as a JSON object.
/// - `/auth/NAME` serves NAME only with `Authorization: Basic dXNlcjpwYXNz` (user:pass), else 401.
/// - `/set-cookie/NAME` sets `session=abc` and serves NAME; `/needs-cookie/NAME` serves NAME only
///   with that cookie, else 403.
public final class TestHTTPServer: Sendable {
    struct State {
        var files: [String: [UInt8]] = [:]
        var hits: [String: Int] = [:]
        var flaky: [String: Int] = [:]
        var lastHeaders: [String: [(String, String)]] = [:]
        var gates: [String: EventLoopPromise<Void>] = [:]
        var openGates: Set<String> = []
        /// Connections accepted.
        var connections = 0
    }

    let state = NIOLockedValueBox(State())
    private let group: MultiThreadedEventLoopGroup
    private let channel: Channel
    public let port: Int

    public let scheme: String

    public var baseURL: String { "\(scheme)://127.0.0.1:\(port)" }

    public func url(_ path: String) -> String { baseURL + path }

    private init(group: MultiThreadedEventLoopGroup, channel: Channel, scheme: String) {
        self.group = group
        self.channel = channel
        self.scheme = scheme
        self.port = channel.localAddress!.port!
    }

    /// Plain HTTP/1.1 on `port` (0: any free one).
    public static func start(port: Int = 0) async throws -> TestHTTPServer {
        let box = ServerBox()
        return try await start(box: box, scheme: "http", port: port) { channel in
            channel.eventLoop.makeCompletedFuture {
                try channel.pipeline.syncOperations.configureHTTPServerPipeline(withErrorHandling: true)
                try channel.pipeline.syncOperations.addHandler(TestHTTPHandler(box: box))
            }
        }
    }

    /// HTTPS with a self-signed certificate made now (so clients must skip verification), offering
    /// HTTP/2 through ALPN when `http2` is set, else HTTP/1.1 only.
    public static func startTLS(http2: Bool) async throws -> TestHTTPServer {
        let box = ServerBox()
        var tls = TLSConfiguration.makeServerConfiguration(
            certificateChain: [.certificate(selfSignedCertificate.certificate)],
            privateKey: .privateKey(selfSignedCertificate.key))
        tls.applicationProtocols = http2 ? ["h2", "http/1.1"] : ["http/1.1"]
        let context = try NIOSSLContext(configuration: tls)
        return try await start(box: box, scheme: "https") { channel in
            channel.eventLoop.makeCompletedFuture {
                try channel.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: context))
            }.flatMap {
                channel.configureHTTP2SecureUpgrade(
                    h2ChannelConfigurator: { connection in
                        connection.configureHTTP2Pipeline(mode: .server, inboundStreamInitializer: { stream in
                            stream.eventLoop.makeCompletedFuture {
                                try stream.pipeline.syncOperations.addHandler(HTTP2FramePayloadToHTTP1ServerCodec())
                                try stream.pipeline.syncOperations.addHandler(TestHTTPHandler(box: box))
                            }
                        }).map { _ in }
                    },
                    http1ChannelConfigurator: { connection in
                        connection.eventLoop.makeCompletedFuture {
                            try connection.pipeline.syncOperations.configureHTTPServerPipeline(withErrorHandling: true)
                            try connection.pipeline.syncOperations.addHandler(TestHTTPHandler(box: box))
                        }
                    })
            }
        }
    }

    private static func start(
        box: ServerBox, scheme: String, port: Int = 0, initializer: @escaping @Sendable (Channel) -> EventLoopFuture<Void>
    ) async throws -> TestHTTPServer {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let channel = try await ServerBootstrap(group: group)
            .serverChannelOption(.backlog, value: 256)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                box.server.withLockedValue { $0 }?.state.withLockedValue { $0.connections += 1 }
                return initializer(channel)
            }
            .bind(host: "127.0.0.1", port: port).get()
        let server = TestHTTPServer(group: group, channel: channel, scheme: scheme)
        box.server.withLockedValue { $0 = server }
        return server
    }

    /// One throw-away self-signed certificate for 127.0.0.1 and localhost, made at first use.
    static let selfSignedCertificate: (certificate: NIOSSLCertificate, key: NIOSSLPrivateKey) = {
        let key = P256.Signing.PrivateKey()
        let name = try! DistinguishedName { CommonName("image-worker test server") }
        let now = Date()
        let certificate = try! Certificate(
            version: .v3, serialNumber: Certificate.SerialNumber(), publicKey: .init(key.publicKey),
            notValidBefore: now - 3600, notValidAfter: now + 86_400, issuer: name, subject: name,
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try! Certificate.Extensions {
                SubjectAlternativeNames([.dnsName("localhost"), .ipAddress(ASN1OctetString(contentBytes: [127, 0, 0, 1]))])
            },
            issuerPrivateKey: .init(key))
        var serializer = DER.Serializer()
        try! serializer.serialize(certificate)
        return (
            try! NIOSSLCertificate(bytes: serializer.serializedBytes, format: .der),
            try! NIOSSLPrivateKey(bytes: Array(key.derRepresentation), format: .der)
        )
    }()

    public func shutdown() async {
        try? await channel.close()
        try? await group.shutdownGracefully()
    }

    public func setFile(_ name: String, _ bytes: [UInt8]) {
        state.withLockedValue { $0.files[name] = bytes }
    }

    /// Connections accepted so far.
    public var connections: Int { state.withLockedValue { $0.connections } }

    /// How many requests reached `path` (without its query).
    public func hits(_ path: String) -> Int {
        state.withLockedValue { $0.hits[path] ?? 0 }
    }

    public func lastHeaders(_ path: String) -> [(String, String)] {
        state.withLockedValue { $0.lastHeaders[path] ?? [] }
    }

    public func openGate(_ name: String) {
        let promise = state.withLockedValue { s -> EventLoopPromise<Void>? in
            s.openGates.insert(name)
            return s.gates.removeValue(forKey: name)
        }
        promise?.succeed(())
    }

    func gateFuture(_ name: String, on eventLoop: EventLoop) -> EventLoopFuture<Void> {
        state.withLockedValue { s in
            if s.openGates.contains(name) { return eventLoop.makeSucceededFuture(()) }
            if let existing = s.gates[name] { return existing.futureResult.hop(to: eventLoop) }
            let promise = eventLoop.makePromise(of: Void.self)
            s.gates[name] = promise
            return promise.futureResult
        }
    }
}
