import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

/// A loopback server that answers each request with bytes written as they are, for answers no
/// HTTP encoder would write (`HTTP/1.1 000`, a head with no reason phrase, …) and for connections
/// closed the way real servers close them (after the answer, without `Connection: close`).
///
/// Requests on one connection are answered in order; `answer` gets the request's head (its
/// request line and headers, as text) and the number of requests that connection has carried
/// before (0: its first), and says what to write and what to do after.
public final class RawHTTPServer: Sendable {
    public struct Answer: Sendable {
        public var bytes: [UInt8]
        public var after: After

        public init(_ bytes: [UInt8], after: After = .keepOpen) {
            self.bytes = bytes
            self.after = after
        }

        public init(_ text: String, after: After = .keepOpen) {
            self.init(Array(text.utf8), after: after)
        }
    }

    public enum After: Sendable {
        /// The connection stays open for the next request.
        case keepOpen
        /// The server closes the connection once the bytes are written, saying nothing before
        /// (no `Connection: close`): a client that sends its next request on it first finds it closed.
        case close
    }

    private let group: MultiThreadedEventLoopGroup
    private let channel: Channel
    private let counts: NIOLockedValueBox<(connections: Int, requests: Int)>
    public let port: Int

    public var baseURL: String { "http://127.0.0.1:\(port)" }
    public func url(_ path: String) -> String { baseURL + path }

    /// Connections accepted and requests answered so far.
    public var connections: Int { counts.withLockedValue { $0.connections } }
    public var requests: Int { counts.withLockedValue { $0.requests } }

    private init(group: MultiThreadedEventLoopGroup, channel: Channel, counts: NIOLockedValueBox<(connections: Int, requests: Int)>) {
        self.group = group
        self.channel = channel
        self.counts = counts
        self.port = channel.localAddress!.port!
    }

    public static func start(answer: @escaping @Sendable (_ head: String, _ earlierOnConnection: Int) -> Answer) async throws -> RawHTTPServer {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let counts = NIOLockedValueBox((connections: 0, requests: 0))
        let channel = try await ServerBootstrap(group: group)
            .serverChannelOption(.backlog, value: 256)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                counts.withLockedValue { $0.connections += 1 }
                return channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(RawHTTPHandler(answer: answer, counts: counts))
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        return RawHTTPServer(group: group, channel: channel, counts: counts)
    }

    public func shutdown() async {
        try? await channel.close()
        try? await group.shutdownGracefully()
    }
}

/// One connection of a `RawHTTPServer`: reads request heads (a body is not expected: the worker
/// sends GETs), answers each in turn.
final class RawHTTPHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private let answer: @Sendable (String, Int) -> RawHTTPServer.Answer
    private let counts: NIOLockedValueBox<(connections: Int, requests: Int)>
    private var buffered: [UInt8] = []
    private var answered = 0
    private var closing = false

    init(answer: @escaping @Sendable (String, Int) -> RawHTTPServer.Answer, counts: NIOLockedValueBox<(connections: Int, requests: Int)>) {
        self.answer = answer
        self.counts = counts
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !closing else { return }
        buffered.append(contentsOf: unwrapInboundIn(data).readableBytesView)
        while let end = headEnd() {
            let head = String(decoding: buffered[..<end], as: UTF8.self)
            buffered.removeFirst(end + 4)
            let reply = answer(head, answered)
            answered += 1
            counts.withLockedValue { $0.requests += 1 }
            let written = context.writeAndFlush(wrapOutboundOut(context.channel.allocator.buffer(bytes: reply.bytes)))
            if case .close = reply.after {
                closing = true
                let channel = context.channel
                written.whenComplete { _ in channel.close(promise: nil) }
                return
            }
        }
    }

    private func headEnd() -> Int? {
        guard buffered.count >= 4 else { return nil }
        for i in 0...(buffered.count - 4) where buffered[i] == 13 && buffered[i + 1] == 10 && buffered[i + 2] == 13 && buffered[i + 3] == 10 {
            return i
        }
        return nil
    }

    func errorCaught(context: ChannelHandlerContext, error: Error) {
        context.close(promise: nil)
    }
}
