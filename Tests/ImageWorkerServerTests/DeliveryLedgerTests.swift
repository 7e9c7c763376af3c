import ImageDownloader
import Testing

@testable import ImageWorkerServer

/// The delivery stage's ledger without I/O: `String` stands for a progressive decoder, `Int` for
/// a shared decode's task.
@Suite struct DeliveryLedgerTests {
    typealias Ledger = DeliveryLedger<String, Int>
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
        var ledger = Ledger()
        ledger.register(a, spec: spec(intervalMs: 100), url: "http://x/a.jpg")
        #expect(ledger.due([a, b], now: 0).map(\.0) == [a], "b is not progressive")
        let target = ledger.due([a], now: 0)[0].1
        let sent = ledger.partialReady(a, of: target, path: "/out/a.png", now: 5 * ms)
        #expect(sent)
        #expect(ledger.targets[a]?.sequence == 1 && ledger.targets[a]?.reservedPath == "/out/a.png")
        #expect(ledger.due([a], now: 104 * ms).isEmpty, "within the interval")
        #expect(ledger.due([a], now: 105 * ms).map(\.1.sequence) == [1])
    }

    /// Once the token's terminal event is sent, no partial image of it is: not one rendered
    /// before (its `partialReady` comes late), nor one for a new token of the same name.
    @Test func noPartialImageAfterTheTerminalEvent() {
        var ledger = Ledger()
        ledger.register(a, spec: spec(), url: "u")
        let early = ledger.due([a], now: 0)[0].1
        let (ended, again) = (ledger.tokenEnded(a), ledger.tokenEnded(a))
        #expect(ended && !again, "once")
        let late = ledger.partialReady(a, of: early, path: nil, now: 1)
        #expect(!late)
        ledger.register(a, spec: spec(), url: "u")
        let stale = ledger.partialReady(a, of: early, path: nil, now: 1)
        #expect(!stale, "the earlier token's partial is not the new one's")
        #expect(ledger.targets[a]?.sequence == 0)
    }

    /// One progressive decoder per fetch: made with the first bytes, fed after; a body that
    /// starts over drops it (a new one starts with the next bytes).
    @Test func oneDecoderPerFetchUntilTheBodyStartsOver() {
        var ledger = Ledger()
        guard case .start = ledger.chunk(7) else { Issue.record("no decoder was asked for"); return }
        ledger.streamStarted(7, "decoder 1")
        guard case .feed("decoder 1") = ledger.chunk(7) else { Issue.record("the decoder was not reused"); return }
        #expect(ledger.streamAborted(7) == "decoder 1")
        #expect(ledger.fetches[7] == nil, "an aborted stream leaves nothing behind")
        #expect(ledger.streamAborted(7) == nil)
        guard case .start = ledger.chunk(7) else { Issue.record("no new decoder after the abort"); return }
        ledger.streamStarted(7, "decoder 2")
        #expect(ledger.stream(of: 7) == "decoder 2")
        #expect(ledger.decodesStarted == 2)
    }

    /// The tokens of a fetch that ask for the same decode share one; another request is another.
    @Test func decodesAreSharedByKey() {
        var ledger = Ledger()
        let png = Ledger.DecodeKey(format: .png, geometry: OutputGeometry())
        let thumb = Ledger.DecodeKey(format: .png, geometry: OutputGeometry(maxPixelSize: 64))
        guard case .start = ledger.decode(1, png) else { Issue.record("no decode started"); return }
        ledger.decodeStarted(1, png, 10)
        guard case .join(10) = ledger.decode(1, png) else { Issue.record("the decode was not shared"); return }
        guard case .start = ledger.decode(1, thumb), case .start = ledger.decode(2, png) else {
            Issue.record("another size, or another fetch, shared a decode")
            return
        }
        #expect(ledger.decodesStarted == 1)
    }

    /// The last consumer of a fetch releases everything it shared (its decodes, its progressive
    /// decoder), whatever each consumer's outcome; a resource always has the one that reports.
    @Test func theLastConsumerReleasesTheFetch() {
        var ledger = Ledger()
        ledger.streamStarted(3, "decoder")
        ledger.decodeStarted(3, .init(format: .rgba, geometry: OutputGeometry()), 1)
        guard case .none = ledger.delivered(3, a, consumers: 3), case .none = ledger.delivered(3, b, consumers: 3) else {
            Issue.record("released before the last consumer")
            return
        }
        #expect(ledger.fetches[3]?.remaining == 1)
        guard case .release("decoder") = ledger.delivered(3, .string("c"), consumers: 3) else { Issue.record("not released"); return }
        #expect(ledger.fetches.isEmpty)
        guard case .release(nil) = ledger.delivered(4, a, consumers: 0) else { Issue.record("a lone consumer did not release"); return }
        #expect(ledger.fetches.isEmpty)
    }

    /// A fetch's decodes are let go once every consumer is done with them (its decode's hook ran,
    /// or it finished), not before, and a consumer done twice counts once; its progressive
    /// decoder stays until the last consumer finishes.
    @Test func decodesGoOnceEveryConsumerIsDoneWithThem() {
        var ledger = Ledger()
        let png = Ledger.DecodeKey(format: .png, geometry: OutputGeometry())
        let thumb = Ledger.DecodeKey(format: .png, geometry: OutputGeometry(maxPixelSize: 64))
        let c = DownloadToken.string("c")
        ledger.streamStarted(5, "decoder")
        ledger.decodeStarted(5, png, 1)
        ledger.doneDecoding(5, a, consumers: 3)
        ledger.doneDecoding(5, a, consumers: 3)
        ledger.decodeStarted(5, thumb, 2)
        // b takes no decode (an original) and finishes.
        guard case .none = ledger.delivered(5, b, consumers: 3) else { Issue.record("released before the last consumer"); return }
        guard case .join(2) = ledger.decode(5, thumb), case .join(1) = ledger.decode(5, png) else {
            Issue.record("a decode went while a consumer could still join it")
            return
        }
        ledger.doneDecoding(5, c, consumers: 3)
        #expect(ledger.fetches[5]?.decodes.isEmpty == true)
        #expect(ledger.stream(of: 5) == "decoder")
        guard case .none = ledger.delivered(5, a, consumers: 3), case .release("decoder") = ledger.delivered(5, c, consumers: 3) else {
            Issue.record("the fetch was not released by its last consumer")
            return
        }
        #expect(ledger.fetches.isEmpty)
        // A lone consumer lets its decode go as soon as its hook ran.
        ledger.decodeStarted(6, png, 3)
        ledger.doneDecoding(6, a, consumers: 1)
        #expect(ledger.fetches[6]?.decodes.isEmpty == true)
    }
}
