/// What a fetch's attempts went through, for its tokens' `TransferMetrics`.
struct FetchMetrics {
    var attempts = 0
    var resumed = 0
    var attemptBeganAt: UInt64?
    var headAt: UInt64?
    var endedAt: UInt64?
    var wireBytes: Int64 = 0
    var head: (version: String?, connection: ConnectionInfo?, redirects: Int, cache: CacheUse)?

    func fill(_ m: inout TransferMetrics, now: UInt64) {
        func ms(_ from: UInt64, _ to: UInt64) -> Double { to > from ? Double(to - from) / 1e6 : 0 }
        m.attempts = attempts
        m.resumed = resumed
        m.wireBytes = wireBytes
        guard let head else { return }
        m.fromCache = head.cache != .none
        m.revalidated = head.cache == .revalidated
        m.redirects = head.redirects
        guard head.cache != .stored else { return }  // no request was made
        m.httpVersion = head.version
        m.remoteAddress = head.connection?.remoteAddress
        m.connectMs = head.connection?.connectMs
        m.reusedConnection = head.connection?.reused
        if let began = attemptBeganAt, let headAt {
            m.ttfbMs = ms(began, headAt)
            m.transferMs = ms(headAt, endedAt ?? now)
        }
    }
}
