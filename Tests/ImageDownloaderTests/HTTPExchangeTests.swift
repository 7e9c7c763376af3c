import AsyncHTTPClient
import Foundation
@testable import ImageDownloader
import Logging
import NIOCore
import Testing
import TestSupport

/// Both ways the loader sends a request (`HTTPExchange.Route`), against the real server on
/// 127.0.0.1: the rest of the suite runs one of them in process (`async` on a machine of two CPUs
/// or more) and the end-to-end suite the other (the binary's one network thread: `delegate`).
@Suite struct HTTPExchangeTests {
    static let routes: [HTTPExchange.Route] = [.delegate, .async]

    /// A reader that takes its time gets every byte, in order, and the end: the parts wait (or
    /// the connection does) rather than being dropped.
    @Test(arguments: routes) func aSlowReaderGetsTheWholeBodyInOrder(route: HTTPExchange.Route) async throws {
        let server = try await TestHTTPServer.start()
        let clients = HTTPClients(logger: Logger(label: "tests-clients"), route: route)
        let body = bytes(3_000_000, seed: 11)
        server.setFile("big.bin", body)
        var request = HTTPClientRequest(url: server.url("/files/big.bin?chunk=65536&delayMs=0"))
        request.method = .GET
        var exchange = try await HTTPExchange.send(
            request, on: clients.client(through: nil), route: route, logger: Logger(label: "tests"))
        #expect(exchange.head.status == .ok)
        #expect(exchange.head.headers.first(name: "content-length") == "3000000")
        var received: [UInt8] = []
        var chunks = 0
        while let chunk = try await exchange.nextChunk() {
            received.append(contentsOf: chunk.readableBytesView)
            chunks += 1
            if chunks % 4 == 0 { try await Task.sleep(for: .milliseconds(2)) }
        }
        #expect(received.count == body.count)
        #expect(received == body)
        #expect(try await exchange.nextChunk() == nil, "the end stays the end")
        await clients.shutdown()
        await server.shutdown()
    }

    /// Many small downloads over the pool's reused connections all arrive whole.
    @Test(arguments: routes) func manyDownloadsOverReusedConnections(route: HTTPExchange.Route) async throws {
        let h = try await DownloaderHarness.make({ $0.maxConcurrentDownloads = 6 }, route: route)
        defer { Task { await h.shutdown() } }
        let sizes = (0..<120).map { 1 + ($0 * 7_919) % 90_000 }
        for (n, size) in sizes.enumerated() { h.server.setFile("f\(n)", bytes(size, seed: UInt8(n % 251))) }
        for n in sizes.indices { try await h.start(.string("t\(n)"), h.server.url("/files/f\(n)")) }
        for (n, size) in sizes.enumerated() { #expect(try await h.outcome(.string("t\(n)")).value == size) }
    }

    /// A server that stops sending (before the head, then within the body) fails the attempt
    /// with a timeout: on both routes the downloader's watchdog is the only deadline, so both
    /// fail alike (an idle timeout before the head counts against the host as a failed connect).
    @Test(arguments: routes) func silenceTimesOutBeforeTheHeadAndWithinTheBody(route: HTTPExchange.Route) async throws {
        let h = try await DownloaderHarness.make({ $0.maxRetries = 0 }, route: route)
        defer { Task { await h.shutdown() } }
        h.server.setFile("s.bin", bytes(10_000))
        try await h.start(.string("head"), h.server.url("/files/s.bin?gate=never")) { $0.timeoutMs = 300 }
        try await h.start(.string("body"), h.server.url("/files/s.bin?stallAfter=1000")) { $0.timeoutMs = 300 }
        for token in ["head", "body"] {
            let failure = try await h.outcome(.string(token)).failure
            guard case .network(.timeout, _)? = failure else {
                Issue.record("\(token): expected a timeout, got \(h.events(.string(token)).last.map { "\($0)" } ?? "nothing")")
                continue
            }
            #expect(failure?.isIdleTimeout == true, "\(token) on \(route): \(failure.map { "\($0)" } ?? "")")
        }
    }

    /// A body cut short (announced length not reached; a reset, with or without a length) is a
    /// network failure, never a success.
    @Test(arguments: routes) func aCutBodyFails(route: HTTPExchange.Route) async throws {
        let h = try await DownloaderHarness.make({ $0.maxRetries = 0 }, route: route)
        defer { Task { await h.shutdown() } }
        h.server.setFile("c.bin", bytes(100_000))
        try await h.start(.string("short"), h.server.url("/files/c.bin?shortBy=100"))
        try await h.start(.string("reset"), h.server.url("/files/c.bin?resetAfter=30000&chunk=10000&delayMs=5"))
        // No length announced: only the connection's error tells the body is cut.
        try await h.start(.string("chunked"), h.server.url("/files/c.bin?chunked=1&resetAfter=30000&chunk=10000&delayMs=5"))
        guard case .network(.truncated, _)? = try await h.outcome(.string("short")).failure else {
            Issue.record("short: expected truncated, got \(h.events(.string("short")).last.map { "\($0)" } ?? "nothing")")
            return
        }
        for token in ["reset", "chunked"] {
            guard case .network(let reason, _)? = try await h.outcome(.string(token)).failure, reason == .truncated || reason == .reset else {
                Issue.record("\(token): expected a network error, got \(h.events(.string(token)).last.map { "\($0)" } ?? "nothing")")
                continue
            }
        }
    }

    /// Cancelling a token mid-body ends it at once (the held response never completes it), and
    /// the client goes on serving other requests.
    @Test(arguments: routes) func cancellingMidBodyEndsTheRequest(route: HTTPExchange.Route) async throws {
        // Every chunk reported: with the default spacing, chunks that come faster than 100 ms
        // apart before the pause are not, and the test would wait for a progress event that
        // never comes.
        let h = try await DownloaderHarness.make({ $0.progressIntervalMs = 0 }, route: route)
        defer { Task { await h.shutdown() } }
        h.server.setFile("p.bin", bytes(200_000))
        h.server.setFile("after.bin", bytes(5_000))
        try await h.start(.string("held"), h.server.url("/files/p.bin?chunk=5000&pauseAt=50000&gate=held"))
        try await h.until("part of the body") {
            h.events(.string("held")).contains { if case .progress(_, let received, _) = $0 { return received >= 50_000 } else { return false } }
        }
        await h.downloader.cancel(.string("held"))
        #expect(try await h.outcome(.string("held")).isCancelled)
        h.server.openGate("held")
        try await h.start(.string("after"), h.server.url("/files/after.bin"))
        #expect(try await h.outcome(.string("after")).value == 5_000)
        let status = await h.downloader.status()
        #expect(status.runningFetches == 0)
    }

    /// Redirects are followed by the loader (each hop's body read and dropped), and the final
    /// body arrives.
    @Test(arguments: routes) func redirectsArriveAtTheBody(route: HTTPExchange.Route) async throws {
        let h = try await DownloaderHarness.make(route: route)
        defer { Task { await h.shutdown() } }
        h.server.setFile("r.bin", bytes(70_000))
        try await h.start(.string("r"), h.server.url("/redirect/3/r.bin"))
        #expect(try await h.outcome(.string("r")).value == 70_000)
        #expect(h.server.hits("/files/r.bin") == 1)
    }

    /// A client that has been shut down fails a request at once (the delegate API then never
    /// calls its delegate): an error, not a wait for the idle watchdog.
    @Test(arguments: routes) func aShutDownClientFailsAtOnce(route: HTTPExchange.Route) async throws {
        let server = try await TestHTTPServer.start()
        let clients = HTTPClients(logger: Logger(label: "tests-clients"), route: route)
        server.setFile("a.bin", bytes(1_000))
        let client = clients.client(through: nil)
        await clients.shutdown()
        let url = server.url("/files/a.bin")
        let outcome = await withTaskGroup(of: String?.self) { group in
            group.addTask {
                var request = HTTPClientRequest(url: url)
                request.method = .GET
                do {
                    _ = try await HTTPExchange.send(request, on: client, route: route, logger: Logger(label: "tests"))
                    return "a response"
                } catch {
                    return "\(error)"
                }
            }
            group.addTask {
                // A liveness guard, not a timing assertion.
                try? await Task.sleep(for: .seconds(20))
                return nil
            }
            let first = await group.next() ?? nil
            group.cancelAll()
            return first
        }
        #expect(outcome != nil, "still waiting")
        #expect(outcome?.contains("alreadyShutdown") == true, "\(outcome ?? "")")
        await server.shutdown()
    }

    @Test func theDefaultRouteFollowsTheNetworkThreads() {
        #expect(HTTPExchange.Route.forNetwork(loops: 1) == .delegate)
        #expect(HTTPExchange.Route.forNetwork(loops: 2) == .async)
        #expect(HTTPExchange.Route.forNetwork(loops: 4) == .async)
    }
}
