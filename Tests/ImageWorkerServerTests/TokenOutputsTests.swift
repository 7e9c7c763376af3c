import ImageDownloader
import Testing

@testable import ImageWorkerServer

/// What live tokens have on their way out, without I/O.
@Suite struct TokenOutputsTests {
    let a = DownloadToken.string("a")
    let b = DownloadToken.string("b")
    let ms: UInt64 = 1_000_000

    func spec(intervalMs: Int64 = 100) -> OutputSpec {
        var spec = OutputSpec()
        spec.format = .png
        spec.delivery = .file
        spec.partialIntervalMs = intervalMs
        return spec
    }

    /// A progressive token's partial images: the first at once, the next after its interval;
    /// each counted, with the path it went to (the final image replaces the last there).
    @Test func partialImagesComeAtTheTokensIntervalAndRememberTheirPath() {
        var ledger = TokenOutputs()
        ledger.register(a, spec: spec(intervalMs: 100), url: "http://x/a.jpg")
        #expect(ledger.due([a, b], now: 0).map(\.0) == [a], "b is not progressive")
        let target = ledger.due([a], now: 0)[0].1
        let sent = ledger.partialReady(a, of: target, path: "/out/a.png", now: 5 * ms)
        #expect(sent)
        #expect(ledger[a]?.sequence == 1 && ledger[a]?.reservedPath == "/out/a.png")
        #expect(ledger.due([a], now: 104 * ms).isEmpty, "within the interval")
        #expect(ledger.due([a], now: 105 * ms).map(\.1.sequence) == [1])
    }

    /// Once the token's terminal event is sent, no partial image of it is: not one rendered
    /// before (its `partialReady` comes late), nor one for a new token of the same name.
    @Test func noPartialImageAfterTheTerminalEvent() {
        var ledger = TokenOutputs()
        ledger.register(a, spec: spec(), url: "u")
        let early = ledger.due([a], now: 0)[0].1
        _ = ledger.tokenEnded(a)
        #expect(ledger[a] == nil)
        let late = ledger.partialReady(a, of: early, path: nil, now: 1)
        #expect(!late)
        ledger.register(a, spec: spec(), url: "u")
        let stale = ledger.partialReady(a, of: early, path: nil, now: 1)
        #expect(!stale, "the earlier token's partial is not the new one's")
        #expect(ledger[a]?.sequence == 0)
    }

    /// An inline result's claim on the wire is settled by its token's terminal event, once, and
    /// a token without one settles nothing.
    @Test func aClaimIsSettledByItsTokensTerminalEvent() {
        var ledger = TokenOutputs()
        ledger.claimed(a, bytes: 300)
        #expect(ledger.claims[a] == 300)
        #expect(ledger.tokenEnded(b) == 0, "b claimed nothing")
        #expect(ledger.tokenEnded(a) == 300)
        #expect(ledger.tokenEnded(a) == 0, "settled once")
        #expect(ledger.claims.isEmpty)
    }
}
