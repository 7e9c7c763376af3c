import ArgumentParser
import Foundation

/// The CPU scheduling policy of the worker's threads (Linux; `--scheduling`).
///
/// - `batch` (the default): `SCHED_BATCH`. A woken thread of the worker (the wire writer handed a
///   line, a pool thread handed a job, a network thread handed a request) waits for the running
///   thread's turn to end or for an idle CPU, instead of preempting it at once. A download hands
///   work between threads several times, so with every CPU busy each hand-off cost a context
///   switch; its share of the CPU and its priority (`nice`) are unchanged. Other programs' woken
///   threads still preempt the worker's, which keeps it out of an editor's way.
/// - `normal`: `SCHED_OTHER`, the kernel's default: the lowest latency from a hand-off to its
///   running while every CPU is busy.
enum ThreadScheduling: String, Sendable, CaseIterable {
    case batch, normal

    /// Sets the policy of every thread of the process; a thread made later inherits its maker's
    /// (`PTHREAD_INHERIT_SCHED`, the default). Called before the worker starts its own threads.
    /// Returns the reason when the kernel refused (the policy then stays as it was), else nil.
    func apply() -> String? {
        #if os(Linux)
        // Linux's values (not exported by the Glibc module): SCHED_OTHER 0, SCHED_BATCH 3.
        let policy: Int32 = self == .batch ? 3 : 0
        var parameters = sched_param()
        let threads = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
        for thread in threads.compactMap({ Int32($0) }) {
            // ESRCH: the thread ended meanwhile.
            if sched_setscheduler(thread, policy, &parameters) != 0, errno != ESRCH {
                return "cannot set the \(rawValue) scheduling policy: \(String(cString: strerror(errno)))"
            }
        }
        return nil
        #else
        return self == .normal ? nil : "the batch scheduling policy is Linux's"
        #endif
    }

    static let help = ArgumentHelp(
        "CPU scheduling of the worker's threads: batch (a woken thread does not preempt a running one: fewer context switches when every CPU is busy) or normal (the kernel's default).")

    static func validate(_ value: String) throws {
        guard ThreadScheduling(rawValue: value) != nil else {
            throw ValidationError("--scheduling must be \(allCases.map(\.rawValue).joined(separator: " or "))")
        }
    }
}
