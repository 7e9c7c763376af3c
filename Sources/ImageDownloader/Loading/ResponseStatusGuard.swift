import NIOCore
import NIOHTTP1

/// Stands between NIO's response decoder and AsyncHTTPClient on every connection (and HTTP/2
/// stream): a response head whose status is below 100 is no HTTP status (RFC 9110 §15: three
/// digits, 1xx to 5xx), and AsyncHTTPClient would take it for an informational head and then stop
/// the process at the body that follows (a `preconditionFailure`). Such a head fails its request
/// here, as an invalid status, and the connection is closed; the rest of that answer never reaches
/// the client. Statuses 100–199 are real informational heads, which the client skips itself.
final class ResponseStatusGuard: ChannelInboundHandler {
    typealias InboundIn = HTTPClientResponsePart
    typealias InboundOut = HTTPClientResponsePart

    /// A head this guard refused: what follows of that answer is dropped.
    private var refused = false

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !refused else { return }
        if case .head(let head) = unwrapInboundIn(data), head.status.code < 100 {
            refused = true
            context.fireErrorCaught(DownloadFailure.statusCode(Int(head.status.code), retryAfterSeconds: nil))
            context.close(promise: nil)
            return
        }
        context.fireChannelRead(data)
    }
}
