@testable import ImageDownloader
import Testing

/// `X-Robots-Tag` read as img2dataset reads it (and as Google documents the header): directives
/// for every crawler or for one named before a colon, case-insensitive; and the fetch machine
/// refusing a head that says one, before any body.
@Suite struct RobotsTagPolicyTests {
    let policy = RobotsTagPolicy(disallowed: RobotsTagPolicy.datasetDirectives, agents: ["image-worker", "MyBot"])

    func said(_ values: [String], _ policy: RobotsTagPolicy? = nil) -> [String]? {
        (policy ?? self.policy).refusal(values)?.directives
    }

    @Test func directivesForEveryCrawler() {
        #expect(said(["noai"]) == ["noai"])
        #expect(said(["noindex, nofollow"]) == ["noindex"])
        #expect(said(["NoImageAI"]) == ["noimageai"])
        #expect(said(["none"]) == ["none"])
        #expect(said(["nofollow", "noarchive"]) == nil)
        #expect(said([]) == nil)
        #expect(said(["noai, noimageai", "noai"]) == ["noai", "noimageai"], "each once")
        #expect(policy.refusal(["nofollow", "noimageai"])?.header == "noimageai", "the header that said it")
    }

    @Test func directivesForOneCrawler() {
        #expect(said(["googlebot: noai"]) == nil, "not this worker")
        #expect(said(["image-worker: noai"]) == ["noai"], "the User-Agent's product")
        #expect(said(["mybot: noindex, nofollow"]) == ["noindex"], "the token, whatever its case")
        #expect(said(["googlebot: noindex", "noimageindex"]) == ["noimageindex"])
    }

    /// A colon after a directive that takes a value is not a crawler's name; its value is not a
    /// directive (`max-image-preview: none` does not say `none`).
    @Test func valuedDirectivesAreNotCrawlers() {
        #expect(said(["unavailable_after: 25 Jun 2010 15:00:00 PST"]) == nil)
        #expect(said(["max-image-preview: none"]) == nil)
        #expect(said(["noindex, max-snippet: 20"]) == ["noindex"])
        #expect(said(["max-snippet: 20, noai"]) == ["noai"])
    }

    @Test func anEmptyListRefusesNothing() {
        #expect(said(["noai"], RobotsTagPolicy(agents: ["image-worker"])) == nil)
        #expect(said(["noai"], RobotsTagPolicy(disallowed: ["NOINDEX"])) == nil)
        #expect(said(["noindex"], RobotsTagPolicy(disallowed: ["NOINDEX"])) == ["noindex"])
        #expect(RobotsTagPolicy.product(of: "image-worker/0.1.0 (compatible; x)") == "image-worker")
        #expect(RobotsTagPolicy.product(of: "Mozilla/5.0 (X11)") == "mozilla")
    }

    /// The machine refuses the head (no body is taken), and a refusal is neither retried nor
    /// puts the URL on the failed-URL list; without the header, the same head is taken.
    @Test func theFetchMachineRefusesTheHead() {
        let token = DownloadToken.string("a")
        var op = FetchOperation(token: token, priority: .normal)
        _ = op.start()
        let began = op.attemptBegan(1, now: 0)
        #expect(began)
        var head = MachineDriver.head()
        head.robotsTags = ["googlebot: noindex", "noai"]
        let refusal = DownloadFailure.optedOut(directives: ["noai"], header: "noai")
        let action = op.headReceived(1, head, maxBodyBytes: 1 << 30, robots: policy, now: 0)
        #expect(action == .refuse(refusal))
        #expect(!refusal.isTransient && !refusal.blocksURL)
        #expect(refusal.description.contains("X-Robots-Tag \"noai\"") && refusal.description.contains("disallowedHeaderDirectives"))
        var taken = FetchOperation(token: token, priority: .normal)
        _ = taken.start()
        let alsoBegan = taken.attemptBegan(1, now: 0)
        #expect(alsoBegan)
        let accepted = taken.headReceived(1, head, maxBodyBytes: 1 << 30, now: 0)
        if case .accept = accepted {} else { Issue.record("no policy: taken") }
    }
}
