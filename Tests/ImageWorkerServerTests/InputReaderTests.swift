import Foundation
import Testing
import TestSupport

@testable import ImageWorkerServer

/// The input thread on a real pipe.
@Suite struct InputReaderTests {
    /// A reader dropped while items it handed out were never acknowledged (the server stopped
    /// taking them: `exit`, a closed output) ends cleanly when its input ends. Its read-ahead
    /// semaphore was made with a count of 8, and libdispatch traps (SIGILL) when one is freed
    /// below its initial count: the whole process died as its input thread went away.
    @Test func aReaderWhoseItemsWereNotAllHandledEndsCleanly() async throws {
        let (readEnd, writeEnd) = try WorkerProcess.pipeDescriptorsClosedOnExec()
        var reader: InputReader? = InputReader(fd: readEnd, maximumMessageBytes: 1 << 20)
        let lines = Array(#"{"jsonrpc":"2.0","method":"status","id":1}"#.utf8 + [0x0A])
        for _ in 0..<3 { _ = FileDescriptorOutput.writeAll(writeEnd, lines) }
        close(writeEnd)
        var seen = 0
        for await item in reader!.items {
            if case .end = item { break }
            seen += 1  // and never `itemHandled()`
        }
        #expect(seen == 3)
        reader = nil
        // The thread lets go of its semaphore as it ends, just after `.end`: give it time to.
        try await Task.sleep(for: .milliseconds(300))
        close(readEnd)
    }
}
