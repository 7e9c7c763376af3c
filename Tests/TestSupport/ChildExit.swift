import Foundation
import Synchronization

/// A child's exit status without waiting for Foundation to notice the exit. Foundation's `Process`
/// learns of it when a socket it shares with the child closes, and it makes that socket without
/// close-on-exec: a child spawned meanwhile by a test running in parallel can inherit it, and the
/// exit is then seen only once that other child ends too (minutes, for a long test; a full run
/// once "timed out waiting for exit" of a worker that had exited). Children are started one at a
/// time (`run`), and a child that has ended is reaped here if Foundation has not noticed yet
/// (`waitpid`, `WNOHANG`); Foundation's own `waitpid` then finds nothing.
public enum ChildExit {
    private static let starting = Mutex(())

    /// Starts `process` while no other start is under way in this test process. Foundation lists
    /// the descriptors a child must close when it starts it: a socket another thread makes for
    /// its own child in the meantime is not on that list, and this child inherits it (with the
    /// other child's exit then unseen until this one ends). Every child of the tests starts here.
    public static func run(_ process: Process) throws {
        try starting.withLock { _ in try process.run() }
    }

    /// Runs `executable ARGS` to its end (started by `run`, stderr discarded): its exit status and
    /// what it wrote on stdout, through a pipe whose write end no other child inherits.
    public static func output(of executable: String, _ arguments: [String]) throws -> (status: Int32, stdout: [UInt8]) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        let out = try WorkerProcess.pipeClosedOnExec()
        process.standardOutput = out.write
        process.standardError = FileHandle.nullDevice
        try run(process)
        try out.write.close()
        let data = Array(out.read.readDataToEndOfFile())
        process.waitUntilExit()
        return (process.terminationStatus, data)
    }

    /// Waits for `process` to end and returns its status; past `limit`, it is sent SIGTERM (every
    /// 20 ms, until it ends).
    public static func wait(for process: Process, terminatingAfter limit: Duration? = nil) async throws -> Int32 {
        let deadline = limit.map { ContinuousClock.now + $0 }
        while true {
            if let status = status(of: process) { return status }
            if let deadline, ContinuousClock.now >= deadline { process.terminate() }
            try await Task.sleep(for: .milliseconds(20))
        }
    }

    /// The status of `process` once it has ended, as Foundation reports it (the exit code, or the
    /// signal that ended it); nil while it runs.
    public static func status(of process: Process) -> Int32? {
        if !process.isRunning { return process.terminationStatus }
        var status: Int32 = 0
        guard waitpid(process.processIdentifier, &status, WNOHANG) == process.processIdentifier else { return nil }
        return status & 0x7F == 0 ? (status >> 8) & 0xFF : status & 0x7F
    }
}
