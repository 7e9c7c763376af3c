import AsyncHTTPClient
import Foundation
@testable import ImageDownloader
import NIOCore
import Testing
import TestSupport

/// A server that closes each connection after its answer without saying so (no
/// `Connection: close`), as many do behind proxies or with short keep-alive timeouts: the client
/// keeps the connection for its next request, which finds it closed before any byte of an answer.
/// That request is sent again on another connection, without counting as an attempt, as browsers
/// and curl do: no download fails for it, even with retries off.
@Suite struct StaleConnectionTests {
    @Test(arguments: HTTPExchangeTests.routes) func aServerClosingAfterEachAnswerLosesNoDownload(route: HTTPExchange.Route) async throws {
        let body = bytes(2_000, seed: 3)
        let raw = try await RawHTTPServer.start { _, _ in
            .init(Array("HTTP/1.1 200 OK\r\nContent-Type: image/jpeg\r\nContent-Length: \(body.count)\r\n\r\n".utf8) + body, after: .close)
        }
        let h = try await DownloaderHarness.make({ $0.maxRetries = 0; $0.maxConcurrentDownloads = 16; $0.maxConcurrentPerHost = 16 }, route: route)
        defer { Task { await h.shutdown(); await raw.shutdown() } }
        let count = 600
        for n in 0..<count { try await h.start(.string("k\(n)"), raw.url("/img/\(n)")) }
        var failed: [String] = []
        for n in 0..<count {
            let outcome = try await h.outcome(.string("k\(n)"))
            if outcome.value != body.count { failed.append("k\(n): \(outcome)") }
        }
        #expect(failed.isEmpty, "\(failed.count) of \(count) failed; first: \(failed.prefix(3))")
        // Every download went out once as far as its attempts go (the resends are not attempts).
        #expect(raw.requests >= count)
    }

    /// Resent only when the connection had carried an earlier request (or the request never
    /// reached one): a new connection the server closes at once is the download's own failure.
    @Test func onlyAReusedConnectionsCloseIsSentAgain() {
        let closed = HTTPClientError.remoteConnectionClosed
        let first = ConnectionObserver.Observation(remoteAddress: nil, readyAt: 0, requestNumber: 1)
        let later = ConnectionObserver.Observation(remoteAddress: nil, readyAt: 0, requestNumber: 2)
        #expect(HTTPLoader.foundConnectionClosed(closed, on: later))
        #expect(HTTPLoader.foundConnectionClosed(closed, on: nil))
        #expect(!HTTPLoader.foundConnectionClosed(closed, on: first))
        #expect(!HTTPLoader.foundConnectionClosed(DownloadFailure.statusCode(500, retryAfterSeconds: nil), on: later))
        #expect(HTTPLoader.foundConnectionClosed(IOError(errnoCode: ECONNRESET, reason: "read"), on: later))
    }
}
