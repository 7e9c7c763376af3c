import Foundation

/// What the process does when it crashes (a trap such as a failed precondition, or a bad memory
/// access): the Swift runtime's message (`Fatal error: …`) is already on stderr; then one line
/// saying so, and the process ends by the same signal at once, so whoever started it sees the
/// crash straight away. Swift's own backtracer, left in place, spent ~20 s symbolicating before
/// the process ended, while the client waited on a worker that could do nothing more.
/// With `SWIFT_BACKTRACE` set (e.g. `enable=yes`) the runtime's backtracer is left to do its work.
enum CrashReport {
    static let signals: [Int32] = [SIGILL, SIGTRAP, SIGSEGV, SIGBUS, SIGFPE, SIGABRT]

    static func install() {
        guard ProcessInfo.processInfo.environment["SWIFT_BACKTRACE"] == nil else { return }
        for signal in signals {
            var action = sigaction()
            action.__sigaction_handler.sa_handler = { number in
                // Async-signal-safe only: write(2), signal(2), raise(3); a static string.
                let message: StaticString = "image-worker: crashed (a fatal signal; the line above, if any, says why). Set SWIFT_BACKTRACE=enable=yes for a backtrace.\n"
                _ = write(STDERR_FILENO, message.utf8Start, message.utf8CodeUnitCount)
                Glibc.signal(number, SIG_DFL)
                raise(number)
            }
            sigemptyset(&action.sa_mask)
            action.sa_flags = Int32(SA_NODEFER) | Int32(bitPattern: UInt32(SA_RESETHAND))
            sigaction(signal, &action, nil)
        }
    }
}
