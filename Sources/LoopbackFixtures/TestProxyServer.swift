import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

/// A real forward proxy on 127.0.0.1, for tests: HTTP (`CONNECT` tunnels, and plain requests in
/// absolute form forwarded to their host; optionally asking for Basic credentials, 407
/// otherwise) or SOCKS5 without authentication. It resolves the names in `names`
/// itself (`images.test` → 127.0.0.1), so a URL naming one can only be fetched through the proxy,
/// and it records every tunnel's target and the `Proxy-Authorization` it was given.
public final class TestProxyServer: Sendable {
    public enum Kind: Sendable { case http, socks5 }

    struct State {
        var tunnels: [String] = []
        var forwarded: [String] = []
        var authorizations: [String] = []
        var refused = 0
    }

    let state = NIOLockedValueBox(State())
    let names: [String: String]
    let credentials: String?
    private let group: MultiThreadedEventLoopGroup
    private let channel: Channel
    public let port: Int
    public let kind: Kind

    /// `http://[user:pass@]127.0.0.1:PORT` or `socks5://127.0.0.1:PORT`.
    public var url: String {
        switch kind {
        case .http: return "http://\(credentials.map { "\($0)@" } ?? "")127.0.0.1:\(port)"
        case .socks5: return "socks5://127.0.0.1:\(port)"
        }
    }

    /// Targets of the tunnels opened so far (`host:port`, as the client named them).
    public var tunnels: [String] { state.withLockedValue { $0.tunnels } }
    /// Plain requests forwarded so far (their absolute-form targets).
    public var forwarded: [String] { state.withLockedValue { $0.forwarded } }
    /// `Proxy-Authorization` values received (HTTP), in order.
    public var authorizations: [String] { state.withLockedValue { $0.authorizations } }
    /// Tunnels refused for missing or wrong credentials.
    public var refused: Int { state.withLockedValue { $0.refused } }

    /// - credentials: `user:pass` the HTTP proxy requires (nil: none).
    public static func start(_ kind: Kind, credentials: String? = nil, names: [String: String] = ["images.test": "127.0.0.1"]) async throws
        -> TestProxyServer
    {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let box = NIOLockedValueBox<TestProxyServer?>(nil)
        let channel = try await ServerBootstrap(group: group)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    guard let server = box.withLockedValue({ $0 }) else { throw ChannelError.ioOnClosedChannel }
                    try channel.pipeline.syncOperations.addHandler(ProxyFrontHandler(server: server))
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        let server = TestProxyServer(group: group, channel: channel, kind: kind, credentials: credentials, names: names)
        box.withLockedValue { $0 = server }
        return server
    }

    private init(group: MultiThreadedEventLoopGroup, channel: Channel, kind: Kind, credentials: String?, names: [String: String]) {
        self.group = group
        self.channel = channel
        self.kind = kind
        self.credentials = credentials
        self.names = names
        self.port = channel.localAddress!.port!
    }

    public func shutdown() async {
        try? await channel.close()
        try? await group.shutdownGracefully()
    }
}

/// Reads the client's handshake (a CONNECT head, or SOCKS5's greeting and request), opens the
/// tunnel, then relays bytes both ways.
final class ProxyFrontHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    let server: TestProxyServer
    private var pending = ByteBuffer()
    private var socksGreeted = false
    private var peer: Channel?
    private var connecting = false

    init(server: TestProxyServer) {
        self.server = server
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var bytes = unwrapInboundIn(data)
        if let peer {
            peer.writeAndFlush(bytes, promise: nil)
            return
        }
        pending.writeBuffer(&bytes)
        guard !connecting else { return }
        switch server.kind {
        case .http: readConnect(context)
        case .socks5: readSocks(context)
        }
    }

    private func readConnect(_ context: ChannelHandlerContext) {
        let text = String(buffer: pending)
        guard let end = text.range(of: "\r\n\r\n") else { return }
        let lines = text[..<end.lowerBound].components(separatedBy: "\r\n")
        pending.moveReaderIndex(forwardBy: text[..<end.upperBound].utf8.count)
        let parts = lines[0].split(separator: " ")
        let plain = parts.count == 3 && parts[0] != "CONNECT" && parts[1].hasPrefix("http://")
        guard parts.count == 3, parts[0] == "CONNECT" || plain else {
            return reply(context, "HTTP/1.1 405 Method Not Allowed\r\n\r\n", close: true)
        }
        let authorization = lines.dropFirst().first { $0.lowercased().hasPrefix("proxy-authorization:") }
            .map { String($0.dropFirst("proxy-authorization:".count)).trimmingCharacters(in: .whitespaces) }
        if let authorization { server.state.withLockedValue { $0.authorizations.append(authorization) } }
        if let credentials = server.credentials, authorization != "Basic " + Data(credentials.utf8).base64EncodedString() {
            server.state.withLockedValue { $0.refused += 1 }
            return reply(context, "HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: Basic realm=\"test\"\r\nContent-Length: 0\r\n\r\n", close: true)
        }
        if plain {
            // Forwarded: the request (and what follows on this connection) goes to its host as it
            // came, absolute-form request line included (origin servers accept it).
            guard let url = URLComponents(string: String(parts[1])), let host = url.host else {
                return reply(context, "HTTP/1.1 400 Bad Request\r\n\r\n", close: true)
            }
            server.state.withLockedValue { $0.forwarded.append(String(parts[1])) }
            var request = ByteBuffer(string: text[..<end.upperBound].replacingOccurrences(of: "\r\nProxy-Authorization: ", with: "\r\nX-Was-Proxy-Authorization: "))
            request.writeBuffer(&pending)
            pending = request
            return open(context, target: nil, host: host, port: url.port ?? 80) { _ in "" }
        }
        let target = String(parts[1])
        guard let colon = target.lastIndex(of: ":"), let port = Int(target[target.index(after: colon)...]) else {
            return reply(context, "HTTP/1.1 400 Bad Request\r\n\r\n", close: true)
        }
        open(context, target: target, host: String(target[..<colon]), port: port) { ok in
            ok ? "HTTP/1.1 200 Connection Established\r\n\r\n" : "HTTP/1.1 502 Bad Gateway\r\n\r\n"
        }
    }

    private func readSocks(_ context: ChannelHandlerContext) {
        if !socksGreeted {
            guard pending.readableBytes >= 2, let count = pending.getInteger(at: pending.readerIndex + 1, as: UInt8.self),
                pending.readableBytes >= 2 + Int(count)
            else { return }
            let methods = pending.getBytes(at: pending.readerIndex + 2, length: Int(count)) ?? []
            pending.moveReaderIndex(forwardBy: 2 + Int(count))
            guard methods.contains(0) else { return reply(context, [5, 0xFF], close: true) }
            socksGreeted = true
            context.writeAndFlush(wrapOutboundOut(ByteBuffer(bytes: [5, 0])), promise: nil)
        }
        let bytes = pending.readableBytesView
        guard bytes.count >= 5 else { return }
        let start = bytes.startIndex
        let host: String
        let consumed: Int
        switch bytes[start + 3] {
        case 1:
            guard bytes.count >= 10 else { return }
            host = bytes[(start + 4)..<(start + 8)].map(String.init).joined(separator: ".")
            consumed = 10
        case 3:
            let length = Int(bytes[start + 4])
            guard bytes.count >= 7 + length else { return }
            host = String(decoding: bytes[(start + 5)..<(start + 5 + length)], as: UTF8.self)
            consumed = 7 + length
        default:
            return reply(context, [5, 8, 0, 1, 0, 0, 0, 0, 0, 0], close: true)
        }
        let port = Int(bytes[start + consumed - 2]) << 8 | Int(bytes[start + consumed - 1])
        pending.moveReaderIndex(forwardBy: consumed)
        open(context, target: "\(host):\(port)", host: host, port: port) { ok in
            ok ? "\u{5}\u{0}\u{0}\u{1}\u{0}\u{0}\u{0}\u{0}\u{0}\u{0}" : "\u{5}\u{5}\u{0}\u{1}\u{0}\u{0}\u{0}\u{0}\u{0}\u{0}"
        }
    }

    /// Connects to the target (through `names` first), answers with `answer(ok)` (nothing when
    /// empty), then relays; a tunnel's `target` is recorded.
    private func open(_ context: ChannelHandlerContext, target: String?, host: String, port: Int, answer: @escaping @Sendable (Bool) -> String) {
        connecting = true
        let address = server.names[host.lowercased()] ?? host
        let front = context.channel
        let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        ClientBootstrap(group: context.eventLoop)
            .channelInitializer { back in
                back.eventLoop.makeCompletedFuture { try back.pipeline.syncOperations.addHandler(ProxyBackHandler(front: front)) }
            }
            .connect(host: address, port: port)
            .whenComplete { result in
                let (handler, context) = loopBound.value
                switch result {
                case .success(let back):
                    if let target { handler.server.state.withLockedValue { $0.tunnels.append(target) } }
                    handler.peer = back
                    handler.connecting = false
                    let text = answer(true)
                    if !text.isEmpty { context.writeAndFlush(handler.wrapOutboundOut(ByteBuffer(string: text)), promise: nil) }
                    if handler.pending.readableBytes > 0 {
                        back.writeAndFlush(handler.pending, promise: nil)
                        handler.pending.clear()
                    }
                case .failure:
                    handler.reply(context, answer(false), close: true)
                }
            }
    }

    private func reply(_ context: ChannelHandlerContext, _ text: String, close: Bool) {
        reply(context, Array(text.utf8), close: close)
    }

    private func reply(_ context: ChannelHandlerContext, _ bytes: [UInt8], close: Bool) {
        let done = context.writeAndFlush(wrapOutboundOut(ByteBuffer(bytes: bytes)))
        if close {
            let channel = context.channel
            done.whenComplete { _ in channel.close(promise: nil) }
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        peer?.close(promise: nil)
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: Error) {
        context.close(promise: nil)
    }
}

/// The target's side of a tunnel: bytes go back to the client.
final class ProxyBackHandler: ChannelInboundHandler, Sendable {
    typealias InboundIn = ByteBuffer

    let front: Channel

    init(front: Channel) {
        self.front = front
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        front.writeAndFlush(unwrapInboundIn(data), promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        front.close(promise: nil)
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: Error) {
        context.close(promise: nil)
    }
}
