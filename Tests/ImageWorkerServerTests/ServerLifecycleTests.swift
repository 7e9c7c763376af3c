import ImageWorkerProtocol
import Testing

@testable import ImageWorkerServer

/// `ServerLifecycle` without a process: what each state refuses, and the one stop each cause plans.
@Suite struct ServerLifecycleTests {
    private let shuttingDownMessage = "the worker is shutting down: only the exit notification is accepted"

    @Test func runningAcceptsEverything() {
        let lifecycle = ServerLifecycle()
        for method in [WorkerMethod.download, WorkerMethod.status, WorkerMethod.shutdown, WorkerMethod.exit] {
            #expect(lifecycle.refusal(of: method) == nil)
        }
        #expect(!lifecycle.isShuttingDown)
    }

    /// LSP: after `shutdown`, only `exit`; `exit` then ends with 0 and cancels nothing.
    @Test func shutdownThenExit() {
        var lifecycle = ServerLifecycle()
        lifecycle.shutdownRequested()
        #expect(lifecycle.state == .shuttingDown && lifecycle.isShuttingDown)
        #expect(lifecycle.refusal(of: WorkerMethod.status) == shuttingDownMessage)
        #expect(lifecycle.refusal(of: WorkerMethod.download) == shuttingDownMessage)
        #expect(lifecycle.refusal(of: WorkerMethod.exit) == nil)
        lifecycle.shutdownCompleted()
        #expect(lifecycle.state == .shutDown)
        let plan = lifecycle.stop(.exit)
        #expect(plan?.exitCode == 0 && plan?.cancelInFlight == false)
        #expect(lifecycle.refusal(of: WorkerMethod.status) == shuttingDownMessage, "still refused while stopping")
    }

    /// `exit` without a completed `shutdown`: status 1, in-flight work cancelled first.
    @Test func exitWithoutShutdown() {
        var lifecycle = ServerLifecycle()
        let plan = lifecycle.stop(.exit)
        #expect(plan?.exitCode == 1 && plan?.cancelInFlight == true && plan?.idleWait == .seconds(1))
        #expect(lifecycle.refusal(of: WorkerMethod.download) == "the worker is stopping")
        #expect(lifecycle.refusal(of: WorkerMethod.status) == nil, "a stopping worker still answers status")
    }

    @Test func eachCausePlansItsStop() {
        for (cause, cancel, bounded) in [
            (ServerLifecycle.StopCause.inputEnded(cancelInFlight: false), false, false),
            (.inputEnded(cancelInFlight: true), true, false),
            (.terminated, true, true),
            (.clientGone, true, true),
        ] {
            var lifecycle = ServerLifecycle()
            let plan = lifecycle.stop(cause)
            #expect(plan?.exitCode == 0, "\(cause)")
            #expect(plan?.cancelInFlight == cancel, "\(cause)")
            #expect((plan?.idleWait != nil) == bounded && (plan?.flushWait != nil) == bounded, "\(cause): stdin's end waits as long as it takes")
        }
    }

    /// stdin's end with a grace drains while work moves (`quietLimit`), not for a fixed time; with
    /// `--on-eof cancel` the grace means nothing.
    @Test func stdinsEndWithAGraceDrainsWhileWorkMoves() {
        var draining = ServerLifecycle()
        let plan = draining.stop(.inputEnded(cancelInFlight: false, grace: .seconds(2)))
        #expect(plan?.quietLimit == .seconds(2) && plan?.idleWait == nil && plan?.cancelInFlight == false)
        var cancelling = ServerLifecycle()
        let cancelled = cancelling.stop(.inputEnded(cancelInFlight: true, grace: .seconds(2)))
        #expect(cancelled?.quietLimit == nil && cancelled?.cancelInFlight == true)
        // A signal during that drain still cuts it short.
        #expect(draining.stop(.terminated)?.cancelInFlight == true)
    }

    /// One stop at a time: a later cause plans nothing, except that SIGTERM or a vanished reader
    /// cuts short a stop that lets work finish or waits without bound (Ctrl-C during `get`'s
    /// drain at stdin's end must cancel).
    @Test func laterCausesOnlyCutAWaitingStopShort() {
        var draining = ServerLifecycle()
        #expect(draining.stop(.inputEnded(cancelInFlight: false)) != nil)
        #expect(draining.stop(.exit) == nil)
        let cut = draining.stop(.terminated)
        #expect(cut?.cancelInFlight == true && cut?.idleWait == .milliseconds(500))
        #expect(draining.stop(.clientGone) == nil, "a bounded, cancelling stop is not cut again")
        #expect(draining.stop(.terminated) == nil)

        var cancelling = ServerLifecycle()
        #expect(cancelling.stop(.inputEnded(cancelInFlight: true)) != nil)
        #expect(cancelling.stop(.clientGone)?.idleWait == .milliseconds(500), "an unbounded wait is bounded")

        var exiting = ServerLifecycle()
        #expect(exiting.stop(.exit)?.exitCode == 1)
        #expect(exiting.stop(.terminated) == nil, "exit's stop is bounded and cancels")
        exiting.shutdownRequested()
        if case .stopping = exiting.state {} else { Issue.record("shutdown must not leave the stopping state") }
    }
}
