import ImageDownloader
import Testing

@testable import ImageWorkerServer

/// One fetch's pipeline state without I/O: `String` stands for a progressive decoder, `Int` for
/// a shared decode's task.
@Suite struct FetchPipelineStateTests {
    typealias State = FetchPipelineState<String, Int>
    let a = DownloadToken.string("a")
    let b = DownloadToken.string("b")
    let c = DownloadToken.string("c")
    let png = State.DecodeKey(format: .png, geometry: OutputGeometry())
    let thumb = State.DecodeKey(format: .png, geometry: OutputGeometry(maxPixelSize: 64))

    /// One progressive decoder per fetch: made with the first bytes, fed after; a body that
    /// starts over drops it (a new one starts with the next bytes); once the body is complete
    /// the decoder stays for the tokens, and no late byte reaches it.
    @Test func oneDecoderUntilTheBodyStartsOverThenItsImageWaits() {
        var state = State()
        guard case .start = state.chunk() else { Issue.record("no decoder was asked for"); return }
        state.streamStarted("decoder 1")
        guard case .feed("decoder 1") = state.chunk() else { Issue.record("the decoder was not reused"); return }
        #expect(state.restarted() == "decoder 1")
        #expect(state.stream == nil, "a restarted body leaves no decoder behind")
        #expect(state.restarted() == nil)
        guard case .start = state.chunk() else { Issue.record("no new decoder after the restart"); return }
        state.streamStarted("decoder 2")
        #expect(state.complete() == "decoder 2", "the decoder is told the body is complete")
        #expect(state.stream == "decoder 2", "its image waits for the tokens")
        guard case .ignore = state.chunk() else { Issue.record("a byte after the end was fed"); return }
        #expect(state.complete() == nil && state.restarted() == nil, "told once")
    }

    /// A fetch that ends without a body gives its decoder up, once; nothing starts after.
    @Test func aFetchThatEndsGivesItsDecoderUp() {
        var state = State()
        state.streamStarted("decoder")
        #expect(state.ended() == "decoder")
        #expect(state.stream == nil && state.ended() == nil)
        guard case .ignore = state.chunk() else { Issue.record("a decoder started after the end"); return }
        var quiet = State()
        #expect(quiet.complete() == nil && quiet.stream == nil, "a body nobody streamed")
    }

    /// The tokens of a fetch that ask for the same decode share one; another request is another.
    @Test func decodesAreSharedByKey() {
        var state = State()
        guard case .start = state.decode(png) else { Issue.record("no decode started"); return }
        state.decodeStarted(png, 10)
        guard case .join(10) = state.decode(png) else { Issue.record("the decode was not shared"); return }
        guard case .start = state.decode(thumb) else { Issue.record("another size shared a decode"); return }
    }

    /// The last consumer of a fetch releases everything it shared (its decodes, its progressive
    /// decoder), whatever each consumer's outcome; a resource always has the one that reports.
    @Test func theLastConsumerReleasesTheFetch() {
        var state = State()
        state.streamStarted("decoder")
        _ = state.complete()
        state.decodeStarted(.init(format: .rgba, geometry: OutputGeometry()), 1)
        guard case .none = state.delivered(a, consumers: 3), case .none = state.delivered(b, consumers: 3) else {
            Issue.record("released before the last consumer")
            return
        }
        #expect(state.remaining == 1)
        guard case .release("decoder") = state.delivered(c, consumers: 3) else { Issue.record("not released"); return }
        #expect(state.stream == nil && state.decodes.isEmpty)
        var lone = State()
        guard case .release(nil) = lone.delivered(a, consumers: 0) else { Issue.record("a lone consumer did not release"); return }
    }

    /// A fetch's decodes are let go once every consumer is done with them (its decode's hook ran,
    /// or it finished), not before, and a consumer done twice counts once; its progressive
    /// decoder stays until the last consumer finishes.
    @Test func decodesGoOnceEveryConsumerIsDoneWithThem() {
        var state = State()
        state.streamStarted("decoder")
        _ = state.complete()
        state.decodeStarted(png, 1)
        state.doneDecoding(a, consumers: 3)
        state.doneDecoding(a, consumers: 3)
        state.decodeStarted(thumb, 2)
        // b takes no decode (an original) and finishes.
        guard case .none = state.delivered(b, consumers: 3) else { Issue.record("released before the last consumer"); return }
        guard case .join(2) = state.decode(thumb), case .join(1) = state.decode(png) else {
            Issue.record("a decode went while a consumer could still join it")
            return
        }
        state.doneDecoding(c, consumers: 3)
        #expect(state.decodes.isEmpty)
        #expect(state.stream == "decoder")
        guard case .none = state.delivered(a, consumers: 3), case .release("decoder") = state.delivered(c, consumers: 3) else {
            Issue.record("the fetch was not released by its last consumer")
            return
        }
        // A lone consumer lets its decode go as soon as its hook ran.
        var lone = State()
        lone.decodeStarted(png, 3)
        lone.doneDecoding(a, consumers: 1)
        #expect(lone.decodes.isEmpty)
    }
}
