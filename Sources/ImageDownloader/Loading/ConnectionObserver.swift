import Dispatch
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOHTTP2
import Synchronization

/// What AsyncHTTPClient does not report per request: which connection served it, where that
/// connection goes, and when it was ready. (Its handler also writes the absolute-form request
/// line of a plain-http request forwarded by an HTTP proxy.) Through the client's debug initializers, every new
/// connection gets a mark (its readiness time and remote address) and a handler in front of its
/// request encoder; the loader tags each request with a private header that this handler
/// removes before anything is written, recording the connection it went out on. Every connection
/// and stream also gets a `ResponseStatusGuard` behind its response decoder.
public final class ConnectionObserver: Sendable {
    /// One request's connection.
    public struct Observation: Sendable, Equatable {
        public var remoteAddress: String?
        /// When the connection was ready (DNS, TCP, TLS and, for h2, its preface done): uptime ns.
        public var readyAt: UInt64
        /// The request's place among the connection's requests (1: its first).
        public var requestNumber: Int
    }

    static let header = "x-image-worker-trace"
    /// On a request to an HTTP proxy for a plain-http URL: the URL, for the request line
    /// (absolute-form, RFC 9112 §3.2.2), in place of the origin-form path.
    static let absoluteForm = "x-image-worker-absolute-form"

    /// How much a connection reads at once: up to 256 KiB (NIO's default stops at 64 KiB), so
    /// that a typical image's body comes in one read, one chunk and one hop to the downloader
    /// rather than two or more. The buffer grows only while reads fill it, and shrinks back.
    static let readSizes = AdaptiveRecvByteBufferAllocator(minimum: 64, initial: 64 << 10, maximum: 256 << 10)

    private let observed = NIOLockedValueBox<[String: Observation]>([:])
    private let counter = Atomic<UInt64>(0)

    public init() {}

    /// A fresh tag for one request.
    func nextTag() -> String {
        String(counter.wrappingAdd(1, ordering: .relaxed).newValue)
    }

    /// The connection a tagged request went out on (once), if it was seen.
    func take(_ tag: String) -> Observation? {
        observed.withLockedValue { $0.removeValue(forKey: tag) }
    }

    func record(_ tag: String, _ observation: Observation) {
        observed.withLockedValue { $0[tag] = observation }
    }

    /// A forgotten tag (a request that failed before reaching a connection) must not linger.
    func discard(_ tag: String) {
        _ = observed.withLockedValue { $0.removeValue(forKey: tag) }
    }

    /// An HTTP/1.1 connection is ready: mark it, and tag its requests.
    @Sendable func http1ConnectionReady(_ channel: Channel) -> EventLoopFuture<Void> {
        channel.eventLoop.makeCompletedFuture {
            let sync = channel.pipeline.syncOperations
            try channel.syncOptions?.setOption(ChannelOptions.recvAllocator, value: ConnectionObserver.readSizes)
            let mark = ConnectionMark(remoteAddress: ConnectionObserver.describe(channel.remoteAddress))
            try sync.addHandler(mark)
            let encoder = try sync.handler(type: HTTPRequestEncoder.self)
            try sync.addHandler(TagReader(observer: self, mark: mark), position: .after(encoder))
            let decoder = try sync.handler(type: ByteToMessageHandler<HTTPResponseDecoder>.self)
            try sync.addHandler(ResponseStatusGuard(), position: .after(decoder))
        }
    }

    /// An HTTP/2 connection is ready: mark it (its streams find the mark).
    @Sendable func http2ConnectionReady(_ channel: Channel) -> EventLoopFuture<Void> {
        channel.eventLoop.makeCompletedFuture {
            try channel.syncOptions?.setOption(ChannelOptions.recvAllocator, value: ConnectionObserver.readSizes)
            try channel.pipeline.syncOperations.addHandler(ConnectionMark(remoteAddress: ConnectionObserver.describe(channel.remoteAddress)))
        }
    }

    /// A stream of an HTTP/2 connection is made for a request: tag its request.
    @Sendable func http2StreamReady(_ channel: Channel) -> EventLoopFuture<Void> {
        channel.eventLoop.makeCompletedFuture {
            guard let parent = channel.parent, let mark = try? parent.pipeline.syncOperations.handler(type: ConnectionMark.self) else { return }
            let sync = channel.pipeline.syncOperations
            let codec = try sync.handler(type: HTTP2FramePayloadToHTTP1ClientCodec.self)
            try sync.addHandler(TagReader(observer: self, mark: mark), position: .after(codec))
            try sync.addHandler(ResponseStatusGuard(), position: .after(codec))
        }
    }

    static func describe(_ address: SocketAddress?) -> String? {
        guard let address, let ip = address.ipAddress, let port = address.port else { return nil }
        return address.protocol == .inet6 ? "[\(ip)]:\(port)" : "\(ip):\(port)"
    }
}

/// A connection's readiness and request count; lives in the connection's pipeline.
final class ConnectionMark: ChannelInboundHandler, Sendable {
    typealias InboundIn = NIOAny
    let remoteAddress: String?
    let readyAt = DispatchTime.now().uptimeNanoseconds
    let requests = Atomic<Int>(0)

    init(remoteAddress: String?) {
        self.remoteAddress = remoteAddress
    }
}

/// Takes the tag off each outgoing request head and records the connection it goes out on.
final class TagReader: ChannelOutboundHandler, Sendable {
    typealias OutboundIn = HTTPClientRequestPart
    typealias OutboundOut = HTTPClientRequestPart

    let observer: ConnectionObserver
    let mark: ConnectionMark

    init(observer: ConnectionObserver, mark: ConnectionMark) {
        self.observer = observer
        self.mark = mark
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        guard case .head(var head) = unwrapOutboundIn(data) else {
            context.write(data, promise: promise)
            return
        }
        if let absolute = head.headers.first(name: ConnectionObserver.absoluteForm) {
            head.headers.remove(name: ConnectionObserver.absoluteForm)
            head.uri = absolute
        }
        if let tag = head.headers.first(name: ConnectionObserver.header) {
            head.headers.remove(name: ConnectionObserver.header)
            let number = mark.requests.wrappingAdd(1, ordering: .relaxed).newValue
            observer.record(
                tag, ConnectionObserver.Observation(remoteAddress: mark.remoteAddress, readyAt: mark.readyAt, requestNumber: number))
        }
        context.write(wrapOutboundOut(.head(head)), promise: promise)
    }
}
