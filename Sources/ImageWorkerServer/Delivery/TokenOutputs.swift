import ImageDownloader

/// What live tokens have on their way out, as a value: each progressive token's target (its spec
/// and URL, how many partial images it was sent and when the last, and the path its partial
/// images went to: the final image replaces the last of them there), and each inline result's
/// claim on the wire (the bytes its line will take, counted by the writer from the moment the
/// result was let through). `FetchDeliveries` keeps it under one lock, under which a token's
/// partial images and its terminal event are sent: the target is dropped and the claim settled
/// with the terminal event, so no partial image can follow it and no claim outlives it. Tested
/// without I/O (`TokenOutputsTests`).
struct TokenOutputs: Sendable {
    struct Target: Sendable {
        var spec: OutputSpec
        /// The URL the token asked for, which names its file in a `dir`.
        var url: String
        /// Tells a token apart from a later one with the same name.
        var instance: UInt64
        var sequence = 0
        var lastPartialAt: UInt64 = 0
        var reservedPath: String?
    }

    private(set) var targets: [DownloadToken: Target] = [:]
    private var lastInstance: UInt64 = 0
    /// Bytes claimed on the wire by each token whose inline result was let through.
    private(set) var claims: [DownloadToken: Int] = [:]

    /// A progressive download was accepted for `token`.
    mutating func register(_ token: DownloadToken, spec: OutputSpec, url: String) {
        lastInstance += 1
        targets[token] = Target(spec: spec, url: url, instance: lastInstance)
    }

    /// The token's terminal event is being sent: no partial image after it. The bytes it had
    /// claimed on the wire (0: none), which its event's line settles.
    mutating func tokenEnded(_ token: DownloadToken) -> Int {
        targets.removeValue(forKey: token)
        return claims.removeValue(forKey: token) ?? 0
    }

    /// The token's inline result was let through with `bytes` claimed on the wire.
    mutating func claimed(_ token: DownloadToken, bytes: Int) {
        claims[token, default: 0] += bytes
    }

    subscript(_ token: DownloadToken) -> Target? { targets[token] }

    /// The progressive tokens among `tokens` whose next partial image is due at `now` (their
    /// first, or `partialIntervalMs` after their last).
    func due(_ tokens: [DownloadToken], now: UInt64) -> [(DownloadToken, Target)] {
        tokens.compactMap { token -> (DownloadToken, Target)? in
            guard let target = targets[token] else { return nil }
            let interval = UInt64(max(0, target.spec.partialIntervalMs)) * 1_000_000
            return target.sequence == 0 || now &- target.lastPartialAt >= interval ? (token, target) : nil
        }
    }

    /// A partial image for `target` (as `due` gave it) is ready, written to `path` if a file:
    /// true, and counted, when the token is still the one it was made for (then its event is
    /// sent, under the same lock).
    mutating func partialReady(_ token: DownloadToken, of target: Target, path: String?, now: UInt64) -> Bool {
        guard var current = targets[token], current.instance == target.instance else { return false }
        current.sequence += 1
        current.lastPartialAt = now
        current.reservedPath = path
        targets[token] = current
        return true
    }
}
