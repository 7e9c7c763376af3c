import ImageDownloader

/// The one stop path: every way out (stdin's end, `shutdown` then `exit`, SIGTERM, a vanished
/// reader) is planned by `ServerLifecycle` and performed here: in-flight work cancelled or
/// drained, then the output flushed.
extension WorkerServer {
    /// The one way out: plans the stop in the lifecycle (nil when another cause is already
    /// stopping the worker) and performs it.
    func stop(_ cause: ServerLifecycle.StopCause) async -> Int32? {
        guard let plan = session.withLock({ $0.lifecycle.stop(cause) }) else { return nil }
        return await perform(plan)
    }

    private func perform(_ plan: ServerLifecycle.StopPlan) async -> Int32 {
        await settle(plan)
        return await flush(plan)
    }

    /// In-flight work cancelled or finished, waited for as the plan says.
    func settle(_ plan: ServerLifecycle.StopPlan) async {
        logger.info("stopping", metadata: ["reason": "\(plan.reason)"])
        // From now on no result waits for the client to take shared-memory files: it goes inline.
        shared.stopWaiting()
        if plan.cancelInFlight { await downloader.cancelAll() } else { await downloader.resumeToDrain() }
        if let limit = plan.idleWait {
            await withTimeLimit(limit) { await self.downloader.waitUntilIdle() }
        } else if let quiet = plan.quietLimit {
            await drainWhileMoving(quietLimit: quiet)
        } else {
            await downloader.waitUntilIdle()
        }
    }

    /// Lets in-flight work finish while it moves; once nothing has moved for `quietLimit` (a
    /// download whose host never answers, after stdin's end), what is left is cancelled, and
    /// still gets its terminal event. A list's downloads that keep arriving all finish.
    private func drainWhileMoving(quietLimit: Duration) async {
        // The drain's start counts as movement: a download asked a moment before stdin's end has
        // its grace, whether or not its attempt has begun.
        let began = ContinuousClock.now
        while await downloader.liveTokenCount > 0 {
            let quiet = min(Duration.nanoseconds(Int64(clamping: await downloader.quietForNs)), ContinuousClock.now - began)
            if quiet >= quietLimit {
                logger.info("nothing moved after stdin's end: cancelling what is left", metadata: ["quiet": "\(quiet)"])
                await downloader.cancelAll()
                await downloader.waitUntilIdle()
                return
            }
            // Until the quiet spell could reach the limit (at least 50 ms: no busy loop).
            await withTimeLimit(max(quietLimit - quiet, .milliseconds(50))) { await self.downloader.waitUntilIdle() }
        }
    }

    /// The output drained as the plan says; its exit status.
    func flush(_ plan: ServerLifecycle.StopPlan) async -> Int32 {
        if let limit = plan.flushWait { await writer.flush(timeout: limit) } else { await writer.flush() }
        // Shared-memory files: taken by a reader still there (a short grace), else removed.
        await shared.finish(readerGone: writer.readerGone)
        return plan.exitCode
    }
}
