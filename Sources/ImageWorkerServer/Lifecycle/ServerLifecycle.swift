import ImageWorkerProtocol

/// The worker process's life as a value state machine: running → shuttingDown → shutDown (LSP's
/// `shutdown`), and from any of them one stop (stdin's end, `exit`, SIGTERM, a vanished reader)
/// → stopping. Each event returns what to do; `WorkerServer` does it. Every way out goes through
/// `stop(_:)`, which plans the stop once; a later cause is ignored, except that termination or a
/// vanished reader cuts short a stop that was still letting work finish (stdin's end with
/// `drain`, or waiting without a bound).
struct ServerLifecycle: Sendable, Equatable {
    enum State: Sendable, Equatable {
        case running
        /// `shutdown` arrived; in-flight work finishes (or is cancelled) before its answer.
        case shuttingDown
        /// `shutdown` was answered: only `exit` is accepted.
        case shutDown
        /// Stopping for good; `afterShutdown` keeps refusing what a shut-down worker refuses.
        case stopping(StopPlan, afterShutdown: Bool)
    }

    /// Why the worker stops.
    enum StopCause: Sendable, Equatable {
        /// stdin ended: in-flight work is cancelled (`--on-eof cancel`) or finishes (`drain`)
        /// while it moves: once nothing has moved for `grace` (when there is one), what is left
        /// is cancelled.
        case inputEnded(cancelInFlight: Bool, grace: Duration? = nil)
        /// SIGTERM, SIGINT or `requestTermination()`.
        case terminated
        /// stdout was closed: nobody reads the answers.
        case clientGone
        /// The `exit` notification.
        case exit
    }

    /// How to stop: what becomes of in-flight work, how long to wait for it and for the output to
    /// drain (nil: as long as it takes), and the exit status.
    struct StopPlan: Sendable, Equatable {
        var cancelInFlight: Bool
        var idleWait: Duration?
        var flushWait: Duration?
        /// While in-flight work finishes (no `idleWait`): what is left once nothing has moved
        /// (no head, no body bytes, no decode) for this long is cancelled.
        var quietLimit: Duration? = nil
        var exitCode: Int32
        var reason: String
    }

    private(set) var state: State = .running

    /// Whether `status` reports the worker as shutting down.
    var isShuttingDown: Bool {
        switch state {
        case .running: return false
        case .shuttingDown, .shutDown: return true
        case .stopping(_, let afterShutdown): return afterShutdown
        }
    }

    /// Why a request for `method` is refused now (nil: accepted).
    func refusal(of method: String) -> String? {
        let shutDown: Bool
        switch state {
        case .running:
            return nil
        case .shuttingDown, .shutDown:
            shutDown = true
        case .stopping(_, let afterShutdown):
            if method == WorkerMethod.download { return "the worker is stopping" }
            shutDown = afterShutdown
        }
        if shutDown, method != WorkerMethod.exit {
            return "the worker is shutting down: only the exit notification is accepted"
        }
        return nil
    }

    /// `shutdown` arrived (the gate lets it through only while running).
    mutating func shutdownRequested() {
        if case .running = state { state = .shuttingDown }
    }

    /// Every live token has ended: `shutdown` is answered.
    mutating func shutdownCompleted() {
        if case .shuttingDown = state { state = .shutDown }
    }

    /// Plans the stop for `cause`, or nil when the worker is already stopping (and `cause` does
    /// not cut that stop short).
    mutating func stop(_ cause: StopCause) -> StopPlan? {
        let afterShutdown: Bool
        let wasShutDown: Bool
        switch state {
        case .stopping(let current, let shutdown):
            let urgent = cause == .terminated || cause == .clientGone
            guard urgent, !current.cancelInFlight || current.idleWait == nil else { return nil }
            (afterShutdown, wasShutDown) = (shutdown, false)
        case .running: (afterShutdown, wasShutDown) = (false, false)
        case .shuttingDown: (afterShutdown, wasShutDown) = (true, false)
        case .shutDown: (afterShutdown, wasShutDown) = (true, true)
        }
        let plan: StopPlan
        switch cause {
        case .inputEnded(let cancel, let grace):
            plan = StopPlan(
                cancelInFlight: cancel, idleWait: nil, flushWait: nil, quietLimit: cancel ? nil : grace, exitCode: 0,
                reason: cancel ? "stdin closed: cancelling what is in flight" : "stdin closed: finishing what is in flight")
        case .terminated:
            plan = StopPlan(cancelInFlight: true, idleWait: .milliseconds(500), flushWait: .milliseconds(500), exitCode: 0, reason: "termination requested")
        case .clientGone:
            plan = StopPlan(
                cancelInFlight: true, idleWait: .milliseconds(500), flushWait: .milliseconds(500), exitCode: 0,
                reason: "stdout closed: the client is gone")
        case .exit:
            // LSP: status 0 after a completed shutdown; 1 otherwise, and then in-flight work is
            // cancelled first (every token still gets its terminal event).
            plan = wasShutDown
                ? StopPlan(cancelInFlight: false, idleWait: .zero, flushWait: .seconds(2), exitCode: 0, reason: "exit after shutdown")
                : StopPlan(cancelInFlight: true, idleWait: .seconds(1), flushWait: .seconds(2), exitCode: 1, reason: "exit without shutdown")
        }
        state = .stopping(plan, afterShutdown: afterShutdown)
        return plan
    }
}
