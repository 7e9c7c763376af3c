/// The five priorities of SDWebImage/NSOperation, lowest first.
public enum DownloadPriority: Int, Sendable, Comparable, CaseIterable, CustomStringConvertible {
    case veryLow = 0
    case low
    case normal
    case high
    case veryHigh

    public init?(name: String) {
        guard let match = Self.allCases.first(where: { $0.name == name }) else { return nil }
        self = match
    }

    public var name: String {
        switch self {
        case .veryLow: return "veryLow"
        case .low: return "low"
        case .normal: return "normal"
        case .high: return "high"
        case .veryHigh: return "veryHigh"
        }
    }

    public var description: String { name }

    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }
}

/// Which of the queued operations of equal priority starts first.
public enum ExecutionOrder: String, Sendable, CaseIterable {
    /// First in, first out (SDWebImage's default).
    case fifo
    /// Last in, first out: the newest request starts first.
    case lifo
}
