import Foundation
@testable import ImageDownloader
import TestSupport
import Testing

/// Status lines no HTTP server should send, by both ways the loader sends requests: every status
/// from 0 to 199, with a body announced by its length, chunked, empty, or running to the close.
/// Before `ResponseStatusGuard`, `HTTP/1.1 000` (or 001, 099 …) followed by a body stopped the
/// whole process inside AsyncHTTPClient; now each is one failed download and nothing else.
@Suite struct InvalidStatusTests {
    enum Body: String, CaseIterable, Sendable {
        case length, chunked, empty, untilClose
    }

    static func answer(status: Int, body: Body) -> RawHTTPServer.Answer {
        let code = String(status).count < 3 ? String(repeating: "0", count: 3 - String(status).count) + String(status) : String(status)
        let payload = "not an image"
        switch body {
        case .length:
            return .init("HTTP/1.1 \(code) Odd\r\nContent-Length: \(payload.utf8.count)\r\n\r\n\(payload)")
        case .chunked:
            let size = String(payload.utf8.count, radix: 16)
            return .init("HTTP/1.1 \(code) Odd\r\nTransfer-Encoding: chunked\r\n\r\n\(size)\r\n\(payload)\r\n0\r\n\r\n")
        case .empty:
            return .init("HTTP/1.1 \(code) Odd\r\nContent-Length: 0\r\n\r\n")
        case .untilClose:
            return .init("HTTP/1.1 \(code) Odd\r\n\r\n\(payload)", after: .close)
        }
    }

    /// The request's path names the status and the body's kind: `/S/KIND`.
    static func server() async throws -> RawHTTPServer {
        try await RawHTTPServer.start { head, _ in
            let path = head.split(separator: " ").dropFirst().first.map(String.init) ?? "/"
            let parts = path.split(separator: "/").map(String.init)
            guard parts.count == 2, let status = Int(parts[0]), let body = Body(rawValue: parts[1]) else {
                return .init("HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")
            }
            return answer(status: status, body: body)
        }
    }

    /// Below 100: refused at the head as an invalid status carrying the code, in any framing.
    @Test(arguments: HTTPExchangeTests.routes) func everyStatusBelow100IsRefusedAsAnInvalidStatus(route: HTTPExchange.Route) async throws {
        try await expectEachFailsOnce(statuses: Array(0..<100), route: route, timeoutMs: 15_000) { status, body, failure in
            guard case .statusCode(let code, _) = failure.last, code == status else {
                Issue.record("status \(status), \(body): expected the status refused, got \(failure)")
                return
            }
        }
    }

    /// 100–199 but 101: informational heads with no answer after them (or a body the parser then
    /// takes for the next answer): each fails its download, by a protocol error or, when nothing
    /// more comes, by the idle timeout.
    @Test(arguments: HTTPExchangeTests.routes) func informationalHeadsWithoutAnAnswerFailOnlyTheirDownload(route: HTTPExchange.Route) async throws {
        try await expectEachFailsOnce(statuses: (100..<200).filter { $0 != 101 }, route: route, timeoutMs: 2_000) { _, _, _ in }
    }

    func expectEachFailsOnce(
        statuses: [Int], route: HTTPExchange.Route, timeoutMs: Int64, _ check: (Int, Body, DownloadFailure) -> Void
    ) async throws {
        let raw = try await Self.server()
        let h = try await DownloaderHarness.make(
            { $0.maxRetries = 0; $0.maxConcurrentDownloads = 64; $0.maxConcurrentPerHost = 64; $0.timeoutMs = timeoutMs }, route: route)
        defer { Task { await h.shutdown(); await raw.shutdown() } }
        h.server.setFile("good.bin", bytes(5_000))
        var tokens: [(String, Int, Body)] = []
        for status in statuses {
            for body in Body.allCases {
                let token = "s\(status)-\(body.rawValue)"
                tokens.append((token, status, body))
                try await h.start(.string(token), raw.url("/\(status)/\(body.rawValue)"))
            }
        }
        // A good download beside them finishes as usual: the process and its client live on.
        try await h.start(.string("good"), h.server.url("/files/good.bin"))
        for (token, status, body) in tokens {
            let outcome = try await h.outcome(.string(token))
            guard let failure = outcome.failure else {
                Issue.record("\(token): expected a failure, got \(outcome)")
                continue
            }
            check(status, body, failure)
            let completed = h.events(.string(token)).filter { if case .completed = $0 { return true } else { return false } }
            #expect(completed.count == 1, "\(token): one terminal event")
        }
        #expect(try await h.outcome(.string("good")).value == 5_000)
    }

    /// An informational head followed by the real answer is no failure (the client skips 1xx heads).
    @Test(arguments: HTTPExchangeTests.routes) func informationalHeadsBeforeTheAnswerAreSkipped(route: HTTPExchange.Route) async throws {
        let body = bytes(3_000)
        let raw = try await RawHTTPServer.start { _, _ in
            .init(Array("HTTP/1.1 103 Early Hints\r\nLink: </a.css>; rel=preload\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: \(body.count)\r\n\r\n".utf8) + body)
        }
        let h = try await DownloaderHarness.make({ $0.maxRetries = 0 }, route: route)
        defer { Task { await h.shutdown(); await raw.shutdown() } }
        try await h.start(.string("hints"), raw.url("/a"))
        #expect(try await h.outcome(.string("hints")).value == body.count)
    }

    /// Random answers, a new seed each run (a small fuzz run in every test run; the seed is in
    /// any failure's message): any status from 0 to 999 in any framing, and connections closed
    /// after some answers without a word: every download ends once, and the process goes on.
    @Test(arguments: HTTPExchangeTests.routes) func randomStatusesAndClosesEndEveryDownloadOnce(route: HTTPExchange.Route) async throws {
        let seed = UInt64.random(in: 0...UInt64.max)
        let raw = try await RawHTTPServer.start { head, _ in
            let path = head.split(separator: " ").dropFirst().first.map(String.init) ?? "/"
            var generator = SplitMix(seed: seed ^ (UInt64(path.dropFirst().prefix { $0.isNumber }) ?? 1))
            let status = Int(generator.next() % 1000)
            var answer = Self.answer(status: status, body: Body.allCases[Int(generator.next() % 4)])
            if generator.next() % 3 == 0 { answer.after = .close }
            return answer
        }
        let h = try await DownloaderHarness.make(
            { $0.maxRetries = 1; $0.retryBaseDelayMs = 1; $0.maxConcurrentDownloads = 32; $0.maxConcurrentPerHost = 32; $0.timeoutMs = 2_000 }, route: route)
        defer { Task { await h.shutdown(); await raw.shutdown() } }
        for n in 0..<300 { try await h.start(.string("r\(n)"), raw.url("/\(n * 7_919 + 13)")) }
        for n in 0..<300 {
            do { _ = try await h.outcome(.string("r\(n)")) } catch {
                Issue.record("r\(n), seed \(seed): \(error)")
                continue
            }
            let ends = h.events(.string("r\(n)")).filter { if case .completed = $0 { return true } else { return false } }
            #expect(ends.count == 1, "r\(n), seed \(seed)")
        }
    }
}
