/// One fetch's delivery to the tokens that share it, as a value state machine: open until each of
/// its consumers (the tokens whose processors received the fetched resource, each exactly once)
/// has finished its delivery, whatever the outcome; then released, and the fetch's shared decodes
/// and progressive decoder go with it. (One count for both: they used to keep one each.)
struct DeliverySession: Sendable, Equatable {
    enum State: Sendable, Equatable {
        case open(remaining: Int)
        case released
    }

    enum Action: Sendable, Equatable {
        case none
        /// The last consumer finished: drop the fetch's shared state.
        case release
    }

    private(set) var state: State

    init(consumers: Int) {
        state = .open(remaining: max(1, consumers))
    }

    mutating func tokenFinished() -> Action {
        guard case .open(let remaining) = state else { return .none }
        if remaining <= 1 {
            state = .released
            return .release
        }
        state = .open(remaining: remaining - 1)
        return .none
    }
}
