import ImageDownloader

/// Which waiting decodes may run, as a value (an event in, the tickets to wake out; tested
/// without I/O): the delivery stage's own concurrency (`decodeConcurrency`) and memory budget
/// (`decodeMemoryBytes`, the bitmaps of the decodes in flight by their headers' sizes).
///
/// Waiters are served by priority (a token's priority when it asked, changed by `setPriority`),
/// then in arrival order, strictly from the head: a large image waiting for the budget is not
/// overtaken by smaller ones behind it, so it cannot starve. One decode larger than the whole
/// budget runs when nothing else does.
///
/// A progressive decode (fed while its body arrives, for as long as the download lasts) holds
/// memory without a slot: `reserve` takes its bytes from the same budget at once or not at all
/// (never ahead of a waiter), and the caller then decodes the image whole, as a waiter, instead.
struct DecodeAdmission: Sendable {
    typealias Ticket = UInt64

    struct Waiter: Sendable, Equatable {
        var ticket: Ticket
        var token: DownloadToken
        var priority: DownloadPriority
        var cost: Int
    }

    private(set) var limit: Int
    private(set) var budget: Int
    private(set) var running: [Ticket: Int] = [:]
    /// Memory held by progressive decodes (`reserve`), counted in `bytesInFlight`.
    private(set) var held: [Ticket: Int] = [:]
    /// Memory of results still to be handed over (`hold`), counted in `bytesInFlight`.
    private(set) var handingOver: [Ticket: Int] = [:]
    private(set) var bytesInFlight = 0
    /// In service order: highest priority first, then first come.
    private(set) var waiting: [Waiter] = []

    init(limit: Int, budget: Int) {
        self.limit = max(1, limit)
        self.budget = max(1, budget)
    }

    /// A decode of `cost` bytes asks to run. True: it runs now; false: it waits for `release`.
    mutating func request(_ waiter: Waiter) -> Bool {
        if waiting.isEmpty, fits(waiter.cost) {
            admit(waiter)
            return true
        }
        insert(waiter)
        return false
    }

    /// A progressive decode asks for `cost` bytes of the budget, now: true when nobody waits and
    /// they fit (or nothing at all runs or is held), and they are then held until `release`.
    mutating func reserve(_ ticket: Ticket, cost: Int) -> Bool {
        guard waiting.isEmpty, nothingHeld || bytesInFlight + cost <= budget else { return false }
        held[ticket] = cost
        bytesInFlight += cost
        return true
    }

    /// A decode's result of `cost` bytes waits to be handed over (room in shared memory, a reader
    /// of inline output): its memory stays counted, whatever the budget, until `release`; no
    /// decode is let in past the budget meanwhile (not even one alone).
    mutating func hold(_ ticket: Ticket, cost: Int) {
        handingOver[ticket] = cost
        bytesInFlight += cost
    }

    /// A running decode is over (or gave its place back early), or a progressive decode gave its
    /// memory back: the waiters it lets in.
    mutating func release(_ ticket: Ticket) -> [Ticket] {
        guard let cost = running.removeValue(forKey: ticket) ?? held.removeValue(forKey: ticket) ?? handingOver.removeValue(forKey: ticket)
        else { return [] }
        bytesInFlight -= cost
        return admitFromHead()
    }

    /// A waiter gave up (its token was cancelled): removed; those behind it may fit now.
    mutating func cancel(_ ticket: Ticket) -> [Ticket] {
        guard let index = waiting.firstIndex(where: { $0.ticket == ticket }) else { return [] }
        waiting.remove(at: index)
        return admitFromHead()
    }

    /// A token's priority changed: its waiters move to their new place.
    mutating func setPriority(_ token: DownloadToken, _ priority: DownloadPriority) -> [Ticket] {
        let moved = waiting.filter { $0.token == token }
        guard !moved.isEmpty else { return [] }
        waiting.removeAll { $0.token == token }
        for var waiter in moved {
            waiter.priority = priority
            insert(waiter)
        }
        return admitFromHead()
    }

    mutating func setLimits(limit: Int, budget: Int) -> [Ticket] {
        self.limit = max(1, limit)
        self.budget = max(1, budget)
        return admitFromHead()
    }

    private func fits(_ cost: Int) -> Bool {
        running.count < limit && (nothingHeld || bytesInFlight + cost <= budget)
    }

    /// No decode runs and no memory is held: one decode larger than the budget may run.
    private var nothingHeld: Bool { running.isEmpty && held.isEmpty && handingOver.isEmpty }

    private mutating func admit(_ waiter: Waiter) {
        running[waiter.ticket] = waiter.cost
        bytesInFlight += waiter.cost
    }

    private mutating func admitFromHead() -> [Ticket] {
        var admitted: [Ticket] = []
        while let head = waiting.first, fits(head.cost) {
            waiting.removeFirst()
            admit(head)
            admitted.append(head.ticket)
        }
        return admitted
    }

    /// After every waiter of higher or equal priority (first come among equals).
    private mutating func insert(_ waiter: Waiter) {
        let index = waiting.lastIndex { $0.priority >= waiter.priority }.map { $0 + 1 } ?? 0
        waiting.insert(waiter, at: index)
    }
}
