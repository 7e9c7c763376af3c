import Foundation
import Testing

@testable import ImageWorkerServer

/// `SharedOutput` in a temporary root: files written, bounded until taken, a result nobody will
/// be told of removed, everything removed at the end.
@Suite struct SharedOutputTests {
    private func root() throws -> String {
        let dir = NSTemporaryDirectory() + "shared-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        return dir
    }

    @Test func writesWaitForTheClientToTakeFilesAndDiscardedOnesGo() async throws {
        let root = try root()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let shared = SharedOutput(root: root)
        shared.setLimits(.init(maxImages: 2, maxBytes: 1 << 20))
        let a = try await shared.write(Payload(Array(repeating: 1, count: 100)), fileExtension: "rgba")
        let b = try await shared.write(Payload(Array(repeating: 2, count: 100)), fileExtension: "rgba")
        #expect(try Data(contentsOf: URL(fileURLWithPath: a)) == Data(repeating: 1, count: 100))
        #expect(shared.pending.files == 2 && shared.pending.bytes == 200)
        // A third waits until one is taken (unlinked by the client).
        let third = Task { try await shared.write(Payload(Array(repeating: 3, count: 100)), fileExtension: "rgba") }
        try await Task.sleep(for: .milliseconds(100))
        #expect(shared.pending.files == 2, "held at the limit")
        unlink(a)
        let c = try await third.value
        #expect(FileManager.default.fileExists(atPath: c))
        // A result whose event is never sent: removed, and its place freed.
        shared.discard(b)
        #expect(!FileManager.default.fileExists(atPath: b))
        shared.discard("/etc/passwd")  // not one of its files: nothing happens
        #expect(FileManager.default.fileExists(atPath: "/etc/passwd"))
        let folder = try #require(shared.folderPath)
        await shared.finish(readerGone: true)
        #expect(!FileManager.default.fileExists(atPath: folder), "the folder goes at the end")
        await #expect(throws: DeliveryFailure.self) {
            _ = try await shared.write(Payload([1]), fileExtension: "bin")
        }
    }

    @Test func aCancelledWaiterWritesNothing() async throws {
        let root = try root()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let shared = SharedOutput(root: root)
        shared.setLimits(.init(maxImages: 1, maxBytes: 1 << 20))
        _ = try await shared.write(Payload([1, 2, 3]), fileExtension: "bin")
        let waiting = Task { try await shared.write(Payload([4, 5, 6]), fileExtension: "bin") }
        try await Task.sleep(for: .milliseconds(50))
        waiting.cancel()
        await #expect(throws: DeliveryFailure.self) { _ = try await waiting.value }
        #expect(shared.pending.files == 1)
        await shared.finish(readerGone: true)
    }
}
