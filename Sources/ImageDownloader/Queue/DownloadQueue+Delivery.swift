/// The delivery stage as the queue sees it: operations whose bodies are in and whose tokens are
/// being processed (decoded, written) hold no running slot, but while the stage is full nothing
/// new starts: `maxFetches` of them, or `minFetches` holding `maxBytes`. So the bodies in memory
/// stay bounded however many downloads are queued, and the network goes on while they decode.
extension DownloadQueue {
    /// Operations in the delivery stage.
    public var deliveringCount: Int { delivering.count }

    /// Whether the delivery stage holds new starts back.
    var deliveryFull: Bool {
        delivering.count >= deliveryLimits.maxFetches
            || (delivering.count >= deliveryLimits.minFetches && deliveringBytes >= deliveryLimits.maxBytes)
    }

    /// A running operation's body is in (`bytes` of it): its running slot goes back and it counts
    /// in the delivery stage until `leaveDelivery`. Counted first: the slot given back starts
    /// another operation only if the stage has room. Returns what starts.
    public mutating func enterDelivery(_ id: ID, bytes: Int64, now: UInt64 = 0) -> [ID] {
        if let earlier = delivering.updateValue(bytes, forKey: id) { deliveringBytes -= earlier }
        deliveringBytes += bytes
        return remove(id, now: now)
    }

    /// The operation's delivery ended (or it ended without one: nothing happens). Returns what starts.
    public mutating func leaveDelivery(_ id: ID, now: UInt64 = 0) -> [ID] {
        guard let bytes = delivering.removeValue(forKey: id) else { return [] }
        deliveringBytes -= bytes
        advance(now)
        return startAsMany()
    }

    public mutating func setDeliveryLimits(_ limits: DeliveryStageLimits, now: UInt64 = 0) -> [ID] {
        advance(now)
        deliveryLimits = limits
        return startAsMany()
    }
}

/// When the delivery stage is full: `maxFetches` operations in it, or `minFetches` holding
/// `maxBytes` of bodies.
public struct DeliveryStageLimits: Sendable, Equatable {
    public var maxFetches: Int
    public var minFetches: Int
    public var maxBytes: Int64

    public init(maxFetches: Int, minFetches: Int, maxBytes: Int64) {
        (self.maxFetches, self.minFetches, self.maxBytes) = (maxFetches, minFetches, maxBytes)
    }

    /// No limit.
    public static let none = DeliveryStageLimits(maxFetches: .max, minFetches: .max, maxBytes: .max)
}
