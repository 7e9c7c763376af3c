import Foundation
import ImageDownloader
import NIOCore
import Synchronization
import Testing
import TestSupport

/// What a fetch's follower is told, from a real loopback server: the body in order while a token
/// streams it, a restart when the body starts over, then exactly one of complete or ended; and
/// every token's processor gets the same follower with the body.
@Suite struct FetchFollowerTests {
    /// Records a follower's events, one follower per fetch.
    final class Recording: FetchFollower {
        enum Event: Equatable {
            case arrived(offset: Int64, count: Int)
            case restarted, complete, ended
        }

        let fetchID: Int
        private let recorded = Mutex<(events: [Event], bytes: [UInt8])>(([], []))

        init(fetchID: Int) { self.fetchID = fetchID }

        var events: [Event] { recorded.withLock { $0.events } }
        /// The body as the arrivals give it, overlaps taken once (a catch-up starts at 0 again).
        var body: [UInt8] { recorded.withLock { $0.bytes } }

        func bodyArrived(offset: Int64, bytes: ByteBuffer, tokens: [DownloadToken]) {
            recorded.withLock { r in
                r.events.append(.arrived(offset: offset, count: bytes.readableBytes))
                let chunk = Array(bytes.readableBytesView)
                let start = Int(offset)
                if start == 0 { r.bytes = [] }
                if start <= r.bytes.count { r.bytes += chunk.dropFirst(r.bytes.count - start) }
            }
        }
        func bodyRestarted() { recorded.withLock { $0.events.append(.restarted) } }
        func bodyComplete() { recorded.withLock { $0.events.append(.complete) } }
        func fetchEnded() { recorded.withLock { $0.events.append(.ended) } }
    }

    final class Made: Sendable {
        let followers = Mutex<[Recording]>([])
        var all: [Recording] { followers.withLock { $0 } }
        var maker: Downloader<Int, Never>.FollowerMaker {
            { id in
                let made = Recording(fetchID: id)
                self.followers.withLock { $0.append(made) }
                return made
            }
        }
    }

    /// Starts `token`; its processor answers 1 when the resource carries the fetch's follower.
    func start(_ h: DownloaderHarness, _ made: Made, _ token: DownloadToken, _ url: String, streams: Bool) async throws {
        try await h.downloader.reserve(token, url: url, priority: .normal)
        var request = DownloadRequest(token: token, url: url)
        request.streamsBody = streams
        await h.downloader.start(request) { resource, _ in
            made.all.contains { $0 === resource.follower && $0.fetchID == resource.fetchID } ? 1 : 0
        }
    }

    @Test func aStreamingTokensFollowerGetsTheWholeBodyInOrderThenComplete() async throws {
        let made = Made()
        let h = try await DownloaderHarness.make(followers: made.maker)
        defer { Task { await h.shutdown() } }
        let body = bytes(300_000)
        h.server.setFile("s", body)
        try await start(h, made, .string("a"), h.server.url("/files/s?chunk=40000&delayMs=2"), streams: true)
        #expect(try await h.outcome(.string("a")).value == 1, "the processor got the fetch's follower")
        let follower = try #require(made.all.first)
        #expect(made.all.count == 1)
        #expect(follower.body == body)
        let events = follower.events
        #expect(events.last == .complete && events.filter { $0 == .complete }.count == 1)
        #expect(!events.contains(.ended))
        let offsets = events.compactMap { if case .arrived(let offset, _) = $0 { return offset } else { return nil } }
        #expect(offsets == offsets.sorted() && offsets.first == 0)
    }

    /// A streaming token that joins a fetch part-way gets the body so far first (from offset
    /// 0), then the rest as it comes: the follower sees the whole body once.
    @Test func aLateStreamerBringsTheBodySoFarFirst() async throws {
        let made = Made()
        let h = try await DownloaderHarness.make({ $0.progressIntervalMs = 0 }, followers: made.maker)
        defer { Task { await h.shutdown() } }
        let body = bytes(200_000, seed: 9)
        h.server.setFile("l", body)
        let url = h.server.url("/files/l?pauseAt=70000&gate=l")
        try await start(h, made, .string("plain"), url, streams: false)
        try await h.until("the first bytes arrived") {
            h.events(.string("plain")).contains { if case .progress(_, let received, _) = $0 { return received >= 70_000 } else { return false } }
        }
        #expect(made.all.first?.events.contains { if case .arrived = $0 { return true } else { return false } } == false)
        try await start(h, made, .string("streamer"), url, streams: true)
        h.server.openGate("l")
        #expect(try await h.outcome(.string("streamer")).value == 1)
        #expect(try await h.outcome(.string("plain")).value == 1)
        let follower = try #require(made.all.first)
        #expect(made.all.count == 1)
        guard case .arrived(offset: 0, let count)? = follower.events.first(where: { $0 != .restarted }) else {
            Issue.record("no catch-up first: \(follower.events)")
            return
        }
        #expect(count >= 70_000, "the body so far, at once")
        #expect(follower.body == body)
        #expect(follower.events.last == .complete)
    }

    @Test func aFollowerOfABodyNobodyStreamsIsToldOnlyThatItIsComplete() async throws {
        let made = Made()
        let h = try await DownloaderHarness.make(followers: made.maker)
        defer { Task { await h.shutdown() } }
        h.server.setFile("q", bytes(50_000))
        try await start(h, made, .string("q1"), h.server.url("/files/q?gate=q"), streams: false)
        try await start(h, made, .string("q2"), h.server.url("/files/q?gate=q"), streams: false)
        try await h.until("both started") { h.started(.string("q1")) && h.started(.string("q2")) }
        h.server.openGate("q")
        #expect(try await h.outcome(.string("q1")).value == 1)
        #expect(try await h.outcome(.string("q2")).value == 1, "both tokens of the fetch got its one follower")
        #expect(made.all.count == 1)
        #expect(made.all.first?.events.filter { $0 != .restarted } == [.complete])
    }

    @Test func aFailedFetchsFollowerIsToldItEndedOnce() async throws {
        let made = Made()
        let h = try await DownloaderHarness.make({ $0.maxRetries = 0 }, followers: made.maker)
        defer { Task { await h.shutdown() } }
        try await start(h, made, .string("gone"), h.server.url("/status/404"), streams: true)
        guard case .failure = try await h.outcome(.string("gone")) else {
            Issue.record("a 404 did not fail")
            return
        }
        let events = try #require(made.all.first).events
        #expect(events.filter { $0 == .ended }.count == 1 && !events.contains(.complete))
    }

    /// A body cut part-way by a server that ignores ranges starts over: the follower is told
    /// before the new body's first bytes, and ends with the whole body once.
    @Test func aBodyThatStartsOverIsToldBeforeItsNewBytes() async throws {
        let made = Made()
        let h = try await DownloaderHarness.make(
            {
                $0.maxRetries = 4
                $0.retryBaseDelayMs = 1
                $0.retryMaxDelayMs = 5
            }, followers: made.maker)
        defer { Task { await h.shutdown() } }
        let body = bytes(400_000, seed: 3)
        h.server.setFile("r", body)
        try await start(h, made, .string("r"), h.server.url("/files/r?ranges=ignore&drops=1&seed=5"), streams: true)
        #expect(try await h.outcome(.string("r")).value == 1)
        let follower = try #require(made.all.first)
        #expect(made.all.count == 1, "one follower for the fetch, whatever its attempts")
        let events = follower.events
        let restart = try #require(events.lastIndex(of: .restarted), "told the body started over: \(events)")
        let next = events.indices.contains(restart + 1) ? events[restart + 1] : nil
        guard case .arrived(offset: 0, _)? = next else {
            Issue.record("after the restart: \(String(describing: next))")
            return
        }
        #expect(follower.body == body)
        #expect(events.last == .complete)
    }
}
