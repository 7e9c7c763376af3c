import Foundation
import Synchronization
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

    /// At most `readAhead` items are handed over unhandled; a reader stopped there goes on once
    /// half of them are handled (not after each one), and nothing is lost or reordered.
    @Test func readAheadIsBoundedAndResumesAtHalf() async throws {
        let (readEnd, writeEnd) = try WorkerProcess.pipeDescriptorsClosedOnExec()
        defer { close(readEnd) }
        let reader = InputReader(fd: readEnd, maximumMessageBytes: 1 << 20, readAhead: 4)
        var lines: [UInt8] = []
        for n in 0..<10 { lines += Array(#"{"jsonrpc":"2.0","method":"status","id":\#(n)}"#.utf8 + [0x0A]) }
        _ = FileDescriptorOutput.writeAll(writeEnd, lines)
        close(writeEnd)
        let received = Received()
        let consumer = Task {
            for await item in reader.items {
                guard case .message(let bytes, _) = item else { break }
                received.lines.withLock { $0.append(String(decoding: bytes, as: UTF8.self)) }
            }
        }
        func count() async throws -> Int {
            try await Task.sleep(for: .milliseconds(200))
            return received.lines.withLock { $0.count }
        }
        #expect(try await count() == 4)
        reader.itemHandled()
        #expect(try await count() == 4)  // 3 outstanding: more than half of 4
        reader.itemHandled()
        #expect(try await count() == 6)  // woken at 2 outstanding: 2 more, to 4 again
        for _ in 0..<8 { reader.itemHandled() }
        await consumer.value
        let ids = received.lines.withLock { $0 }.map { $0.split(separator: ":").last.map { String($0.dropLast()) } ?? "" }
        #expect(ids == (0..<10).map(String.init))
    }

    private final class Received: Sendable {
        let lines = Mutex<[String]>([])
    }
}
