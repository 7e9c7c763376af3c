/// A fetch's live tokens in the order they joined, with their priorities. Nearly every fetch has
/// one token, kept inline: a queued fetch then needs no array of its own (one heap block less per
/// queued download). More tokens go to an array.
public struct FetchTokens: RandomAccessCollection, MutableCollection, ExpressibleByArrayLiteral, Sendable {
    public typealias Element = (token: DownloadToken, priority: DownloadPriority)

    private enum Storage: Sendable {
        case none
        case one(DownloadToken, DownloadPriority)
        case many([Element])
    }

    private var storage: Storage

    public init(_ elements: some Sequence<Element>) {
        let all = Array(elements)
        switch all.count {
        case 0: storage = .none
        case 1: storage = .one(all[0].token, all[0].priority)
        default: storage = .many(all)
        }
    }

    public init(arrayLiteral elements: Element...) {
        self.init(elements)
    }

    public var startIndex: Int { 0 }
    public var endIndex: Int {
        switch storage {
        case .none: return 0
        case .one: return 1
        case .many(let all): return all.count
        }
    }

    public subscript(position: Int) -> Element {
        get {
            switch storage {
            case .one(let token, let priority) where position == 0: return (token, priority)
            case .many(let all): return all[position]
            default: preconditionFailure("token index \(position) out of range")
            }
        }
        set {
            switch storage {
            case .one where position == 0: storage = .one(newValue.token, newValue.priority)
            case .many(var all):
                storage = .none  // the array alone holds its buffer while it changes
                all[position] = newValue
                storage = .many(all)
            default: preconditionFailure("token index \(position) out of range")
            }
        }
    }

    public mutating func append(_ element: Element) {
        switch storage {
        case .none: storage = .one(element.token, element.priority)
        case .one(let token, let priority): storage = .many([(token, priority), element])
        case .many(var all):
            storage = .none
            all.append(element)
            storage = .many(all)
        }
    }

    public mutating func remove(at position: Int) {
        var all = Array(self)
        all.remove(at: position)
        self = FetchTokens(all)
    }

    public mutating func removeAll(where shouldBeRemoved: (Element) throws -> Bool) rethrows {
        let kept = try filter { try !shouldBeRemoved($0) }
        if kept.count != count { self = FetchTokens(kept) }
    }

    public mutating func removeAll() {
        storage = .none
    }
}
