import Dispatch
import Foundation

extension WorkerServer {
    /// SIGTERM and SIGINT ask the worker to stop (every live token is cancelled and still gets
    /// its terminal event); a second signal while stopping exits at once with 128 + the signal.
    /// Keep the returned sources alive for as long as the handling should last.
    public func handleTerminationSignals(onSignal: @escaping @Sendable (Int32) -> Void = { _ in }) -> [any DispatchSourceSignal] {
        [SIGTERM, SIGINT].map { number -> any DispatchSourceSignal in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            let received = LockedState(false)
            source.setEventHandler { [self] in
                let again = received.withLock { old in defer { old = true }; return old }
                if again { _exit(128 + number) }
                onSignal(number)
                requestTermination()
            }
            source.resume()
            return source
        }
    }
}
