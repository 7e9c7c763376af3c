import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1

/// The server a handler answers for, set once it is bound.
final class ServerBox: Sendable {
    let server = NIOLockedValueBox<TestHTTPServer?>(nil)
    var value: TestHTTPServer { server.withLockedValue { $0! } }
}

/// The loopback server's answers: `TestHTTPServer`'s routes (its file and query language is
/// documented there), one handler per connection.
final class TestHTTPHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private let box: ServerBox
    private var head: HTTPRequestHead?

    init(box: ServerBox) { self.box = box }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let h): head = h
        case .body: break
        case .end:
            if let head { route(context: context, head: head) }
            head = nil
        }
    }

    private func route(context: ChannelHandlerContext, head: HTTPRequestHead) {
        let server = box.value
        let components = URLComponents(string: head.uri)
        let path = components?.path ?? head.uri
        var query: [String: String] = [:]
        for item in components?.queryItems ?? [] { query[item.name] = item.value ?? "" }
        server.state.withLockedValue { s in
            s.hits[path, default: 0] += 1
            s.lastHeaders[path] = head.headers.map { ($0.name, $0.value) }
        }
        let parts = path.split(separator: "/").map(String.init)
        guard let first = parts.first else { return simple(context, .notFound) }
        switch first {
        case "files" where parts.count == 2:
            guard let bytes = server.state.withLockedValue({ $0.files[parts[1]] }) else { return simple(context, .notFound) }
            let validators = TestHTTPHandler.validators(bytes, query)
            if !validators.isEmpty {
                let etag = validators.first { $0.0 == "ETag" }?.1
                let lastModified = validators.first { $0.0 == "Last-Modified" }?.1
                let matches =
                    (etag != nil && head.headers["if-none-match"].contains(etag!))
                    || (head.headers["if-none-match"].isEmpty && lastModified != nil && head.headers["if-modified-since"].contains(lastModified!))
                if matches {
                    var headers = HTTPHeaders(validators)
                    headers.add(name: "Date", value: TestHTTPHandler.httpDate(Date()))
                    return simple(context, .notModified, headers: headers)
                }
            }
            if let mode = query["ranges"] {
                return serveRange(context, head: head, bytes: bytes, query: query, mode: mode)
            }
            if let n = Int(query["partial206"] ?? ""), n > 0, n < bytes.count {
                // A 206 whatever was asked: the first N bytes, with a Content-Range that says so.
                var headers = HTTPHeaders()
                headers.add(name: "Content-Type", value: TestHTTPHandler.mimeType(bytes))
                headers.add(name: "Content-Length", value: String(n))
                headers.add(name: "Content-Range", value: "bytes 0-\(n - 1)/\(bytes.count)")
                context.writeAndFlush(wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: .partialContent, headers: headers))), promise: nil)
                return send(context, Array(bytes[0..<n]), from: 0, limit: n, chunk: 16_384, delayMs: 0, ending: .complete)
            }
            if let gate = query["gate"], query["pauseAt"] == nil {
                server.gateFuture(gate, on: context.eventLoop).assumeIsolated().whenSuccess { _ in
                    self.serve(context, bytes, query)
                }
            } else {
                serve(context, bytes, query)
            }
        case "status" where parts.count == 2:
            var headers = HTTPHeaders()
            if let retryAfter = query["retryAfter"] { headers.add(name: "Retry-After", value: retryAfter) }
            simple(context, HTTPResponseStatus(statusCode: Int(parts[1]) ?? 500), headers: headers)
        case "flaky" where parts.count == 3:
            let failures = Int(query["failures"] ?? "1") ?? 1
            let count = server.state.withLockedValue { s -> Int in
                s.flaky[parts[1], default: 0] += 1
                return s.flaky[parts[1]]!
            }
            if count <= failures {
                if query["mode"] == "reset" { return reset(context) }
                var headers = HTTPHeaders()
                if let retryAfter = query["retryAfter"] { headers.add(name: "Retry-After", value: retryAfter) }
                return simple(context, HTTPResponseStatus(statusCode: Int(query["status"] ?? "503") ?? 503), headers: headers)
            }
            guard let bytes = server.state.withLockedValue({ $0.files[parts[2]] }) else { return simple(context, .notFound) }
            serve(context, bytes, [:])
        case "redirect" where parts.count == 3:
            let n = Int(parts[1]) ?? 0
            redirect(context, to: n <= 1 ? "/files/\(parts[2])" : "/redirect/\(n - 1)/\(parts[2])")
        case "redirect-to":
            redirect(context, to: query["url"] ?? "/")
        case "loop" where parts.count == 2:
            redirect(context, to: parts[1] == "a" ? "/loop/b" : "/loop/a")
        case "huge":
            var headers = HTTPHeaders()
            headers.add(name: "Content-Length", value: "10000000000")
            headers.add(name: "Content-Type", value: "image/jpeg")
            context.writeAndFlush(wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: .ok, headers: headers))), promise: nil)
        case "not-modified":
            simple(context, .notModified)
        case "echo-headers":
            var object: [String: String] = [:]
            for (name, value) in head.headers { object[name.lowercased()] = value }
            let body = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data()
            serve(context, Array(body), ["type": "application/json"])
        case "auth" where parts.count == 2:
            guard head.headers["authorization"].first == "Basic dXNlcjpwYXNz" else {
                var headers = HTTPHeaders()
                headers.add(name: "WWW-Authenticate", value: "Basic realm=\"test\"")
                return simple(context, .unauthorized, headers: headers)
            }
            guard let bytes = server.state.withLockedValue({ $0.files[parts[1]] }) else { return simple(context, .notFound) }
            serve(context, bytes, [:])
        case "set-cookie" where parts.count == 2:
            guard let bytes = server.state.withLockedValue({ $0.files[parts[1]] }) else { return simple(context, .notFound) }
            serve(context, bytes, [:], extraHeaders: [("Set-Cookie", "session=abc; Path=/")])
        case "needs-cookie" where parts.count == 2:
            guard head.headers["cookie"].contains(where: { $0.contains("session=abc") }) else { return simple(context, .forbidden) }
            guard let bytes = server.state.withLockedValue({ $0.files[parts[1]] }) else { return simple(context, .notFound) }
            serve(context, bytes, [:])
        default:
            simple(context, .notFound)
        }
    }

    private func simple(_ context: ChannelHandlerContext, _ status: HTTPResponseStatus, headers: HTTPHeaders = HTTPHeaders()) {
        var headers = headers
        let body = Array("\(status.code) \(status.reasonPhrase)\n".utf8)
        let hasBody = status.code != 304 && status.code != 204
        headers.add(name: "Content-Length", value: hasBody ? String(body.count) : "0")
        context.write(wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: status, headers: headers))), promise: nil)
        if hasBody { context.write(wrapOutboundOut(.body(.byteBuffer(ByteBuffer(bytes: body)))), promise: nil) }
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
    }

    private func redirect(_ context: ChannelHandlerContext, to location: String) {
        var headers = HTTPHeaders()
        headers.add(name: "Location", value: location)
        simple(context, .found, headers: headers)
    }

    private func reset(_ context: ChannelHandlerContext) {
        // SO_LINGER 0: close() sends RST instead of FIN.
        if let provider = context.channel as? SocketOptionProvider {
            provider.setSoLinger(linger(l_onoff: 1, l_linger: 0)).assumeIsolated().whenComplete { _ in
                context.close(promise: nil)
            }
        } else {
            context.close(promise: nil)
        }
    }

    /// `?ranges=`: whole or partial bodies with `Accept-Ranges`, cut at random points with `drops`.
    private func serveRange(_ context: ChannelHandlerContext, head: HTTPRequestHead, bytes: [UInt8], query: [String: String], mode: String) {
        let etag = "\"r\(TestHTTPHandler.fnv(bytes))\""
        var start = 0
        if mode != "ignore", let range = head.headers.first(name: "range"), range.hasPrefix("bytes="), range.hasSuffix("-"),
            let from = Int(range.dropFirst(6).dropLast()), from < bytes.count,
            head.headers.first(name: "if-range").map({ $0 == etag }) ?? true
        {
            start = mode == "bad" ? max(0, from - 1) : from
        }
        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: TestHTTPHandler.mimeType(bytes))
        headers.add(name: "Accept-Ranges", value: "bytes")
        headers.add(name: "ETag", value: etag)
        for (name, value) in TestHTTPHandler.validators(bytes, query) where name != "ETag" { headers.add(name: name, value: value) }
        headers.add(name: "Content-Length", value: String(bytes.count - start))
        let status: HTTPResponseStatus = start > 0 || (mode == "bad" && head.headers.first(name: "range") != nil) ? .partialContent : .ok
        if status == .partialContent { headers.add(name: "Content-Range", value: "bytes \(start)-\(bytes.count - 1)/\(bytes.count)") }
        context.writeAndFlush(wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: status, headers: headers))), promise: nil)
        // The first `drops` responses of this URL end early, each at a point of its own.
        let server = box.value
        let count = server.state.withLockedValue { s -> Int in
            s.flaky["drop:" + head.uri, default: 0] += 1
            return s.flaky["drop:" + head.uri]!  // set on the line above
        }
        var limit = bytes.count
        var ending = Ending.complete
        if count <= Int(query["drops"] ?? "0") ?? 0, bytes.count - start > 1 {
            var rng = SplitMix(seed: (UInt64(query["seed"] ?? "") ?? 1) &* 1_000_003 &+ UInt64(count))
            limit = start + 1 + Int(rng.next() % UInt64(bytes.count - start - 1))
            ending = .reset
        }
        send(context, Array(bytes[start...]), from: 0, limit: limit - start, chunk: 16_384, delayMs: 0, ending: ending)
    }

    /// The caching and robots headers a `/files` query asks for.
    static func validators(_ bytes: [UInt8], _ query: [String: String]) -> [(String, String)] {
        var headers: [(String, String)] = []
        if let v = query["cc"] { headers.append(("Cache-Control", v)) }
        if let v = query["expires"] { headers.append(("Expires", v)) }
        if let v = query["vary"] { headers.append(("Vary", v)) }
        if query["etag"] != nil { headers.append(("ETag", "\"\(fnv(bytes))\"")) }
        if query["lm"] != nil { headers.append(("Last-Modified", httpDate(Date().addingTimeInterval(-86_400).roundedToDays))) }
        // One X-Robots-Tag header per `|`-separated value (`robots=noai|otherbot: noindex`).
        for value in query["robots"]?.split(separator: "|") ?? [] { headers.append(("X-Robots-Tag", String(value))) }
        return headers
    }

    /// The bytes' FNV-1a hash in hex: an ETag that changes with the content.
    static func fnv(_ bytes: [UInt8]) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for b in bytes { hash = (hash ^ UInt64(b)) &* 0x100_0000_01b3 }
        return String(hash, radix: 16)
    }

    static func httpDate(_ date: Date) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        return formatter.string(from: date)
    }

    private func serve(_ context: ChannelHandlerContext, _ bytes: [UInt8], _ query: [String: String], extraHeaders: [(String, String)] = []) {
        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: query["type"] ?? TestHTTPHandler.mimeType(bytes))
        headers.add(name: "Date", value: TestHTTPHandler.httpDate(Date()))
        for (name, value) in TestHTTPHandler.validators(bytes, query) { headers.add(name: name, value: value) }
        for (name, value) in extraHeaders { headers.add(name: name, value: value) }
        if query["chunked"] == nil {
            headers.add(name: "Content-Length", value: String(bytes.count))
        } else {
            headers.add(name: "Transfer-Encoding", value: "chunked")
        }
        context.writeAndFlush(wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: .ok, headers: headers))), promise: nil)
        let chunk = max(1, Int(query["chunk"] ?? "") ?? 65536)
        let delay = Int64(query["delayMs"] ?? "") ?? 0
        var limit = bytes.count
        var ending = Ending.complete
        if let n = Int(query["stallAfter"] ?? "") { limit = min(n, bytes.count); ending = .stall }
        if let n = Int(query["resetAfter"] ?? "") { limit = min(n, bytes.count); ending = .reset }
        if let n = Int(query["shortBy"] ?? "") { limit = max(0, bytes.count - n); ending = .close }
        var pause: (at: Int, gate: EventLoopFuture<Void>)?
        if let at = Int(query["pauseAt"] ?? ""), let gate = query["gate"] {
            pause = (at, box.value.gateFuture(gate, on: context.eventLoop))
        }
        send(context, bytes, from: 0, limit: limit, chunk: chunk, delayMs: delay, ending: ending, pause: pause)
    }

    private enum Ending { case complete, stall, reset, close }

    private func send(
        _ context: ChannelHandlerContext, _ bytes: [UInt8], from start: Int, limit: Int, chunk: Int, delayMs: Int64,
        ending: Ending, pause: (at: Int, gate: EventLoopFuture<Void>)? = nil
    ) {
        // A loop, not recursion, when there is no delay: a large body in small chunks would
        // otherwise overflow the event loop's stack.
        var offset = start
        while true {
            guard context.channel.isActive else { return }
            if let pause, offset >= pause.at {
                let resumeAt = offset
                pause.gate.assumeIsolated().whenSuccess { _ in
                    self.send(context, bytes, from: resumeAt, limit: limit, chunk: chunk, delayMs: delayMs, ending: ending)
                }
                return
            }
            if offset >= limit {
                switch ending {
                case .complete: context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
                case .stall: break
                case .reset: reset(context)
                case .close: context.close(promise: nil)
                }
                return
            }
            var end = min(limit, offset + chunk)
            if let pause, pause.at > offset { end = min(end, pause.at) }
            context.writeAndFlush(wrapOutboundOut(.body(.byteBuffer(ByteBuffer(bytes: bytes[offset..<end])))), promise: nil)
            offset = end
            if delayMs > 0 {
                context.eventLoop.assumeIsolated().scheduleTask(in: .milliseconds(delayMs)) {
                    self.send(context, bytes, from: end, limit: limit, chunk: chunk, delayMs: delayMs, ending: ending, pause: pause)
                }
                return
            }
        }
    }

    static func mimeType(_ bytes: [UInt8]) -> String {
        if bytes.starts(with: [0xFF, 0xD8, 0xFF]) { return "image/jpeg" }
        if bytes.starts(with: [0x89, 0x50, 0x4E, 0x47]) { return "image/png" }
        return "application/octet-stream"
    }
}

extension Date {
    /// Midnight (GMT) of this day: a Last-Modified that stays the same all day.
    var roundedToDays: Date { Date(timeIntervalSince1970: (timeIntervalSince1970 / 86_400).rounded(.down) * 86_400) }
}
