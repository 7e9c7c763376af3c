import NIOCore

/// What follows one fetch for its tokens, from its first byte to its tokens' last delivery (the
/// worker's per-fetch delivery pipeline). The downloader makes one when the fetch's first attempt
/// launches (`Downloader.init(followers:)`), tells it what happens to the body, in order, from its
/// actor, and hands it to every token's processor inside the `FetchedResource`: the one way from
/// the network to a token's delivery, with no table keyed by fetch in between.
///
/// The order: `bodyArrived` (only while a token of the fetch streams the body, from offset 0 on;
/// a token that starts streaming a running fetch gets the body so far first), `bodyRestarted`
/// whenever the body starts over (a new attempt that does not resume, a response that replaces
/// the body), then exactly one of `bodyComplete` (its tokens' processors run next) or
/// `fetchEnded` (failed or cancelled: nothing more comes).
public protocol FetchFollower: AnyObject, Sendable {
    /// Bytes of the body at `offset` (a catch-up may overlap what came before); `tokens`: the
    /// fetch's live tokens when they arrived.
    func bodyArrived(offset: Int64, bytes: ByteBuffer, tokens: [DownloadToken])
    /// The body starts over: what was made of the bytes so far is dropped.
    func bodyRestarted()
    /// The body is complete (the attempt succeeded).
    func bodyComplete()
    /// The fetch failed or was cancelled without a complete body.
    func fetchEnded()
}
