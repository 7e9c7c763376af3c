/// Decides whether a progress event goes out now: only when at least `minimumFraction` of the
/// expected size (SDWebImage's `minimumProgressInterval`) and at least `minimumIntervalNanos`
/// have passed since the last one. The first bytes and the last are always reported.
public struct ProgressThrottle: Sendable, Equatable {
    public var minimumFraction: Double
    public var minimumIntervalNanos: UInt64

    public init(minimumFraction: Double, minimumIntervalNanos: UInt64) {
        self.minimumFraction = minimumFraction
        self.minimumIntervalNanos = minimumIntervalNanos
    }

    public init(_ configuration: DownloaderConfiguration) {
        self.init(
            minimumFraction: configuration.minimumProgressInterval,
            minimumIntervalNanos: UInt64(max(0, configuration.progressIntervalMs)) * 1_000_000)
    }

    public func shouldReport(
        received: Int64, expected: Int64?, lastReportedBytes: Int64, lastReportedAt: UInt64, now: UInt64
    ) -> Bool {
        guard received > lastReportedBytes else { return false }
        if let expected, received >= expected { return true }  // the last
        if lastReportedBytes == 0 { return true }  // the first bytes
        guard now &- lastReportedAt >= minimumIntervalNanos else { return false }
        guard let expected, expected > 0 else { return true }
        return Double(received - lastReportedBytes) / Double(expected) >= minimumFraction
    }
}
