import Foundation
import ImageDecoding
import ImageWorkerProtocol
import Testing
import TestSupport

/// `delivery: "shared"` through the binary: files in the worker's folder in /dev/shm, taken by
/// the client; bounded when the client does not take them; nothing left after an exit, a killed
/// client's worker or a killed worker (its folder swept by the next).
/// Serialized: any worker that uses shared memory sweeps the folders of dead ones, the killed
/// worker's of the last test among them.
@Suite(.serialized) struct SharedMemoryTests {
    static let root = FileManager.default.fileExists(atPath: "/dev/shm") ? "/dev/shm" : NSTemporaryDirectory()

    func folders(of pid: Int32) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: Self.root)) ?? []).filter { $0.hasPrefix("image-worker-\(pid)-") }
    }

    func mode(_ path: String) -> mode_t {
        var info = stat()
        return lstat(path, &info) == 0 ? info.st_mode & 0o777 : 0
    }

    func rgba(_ worker: WorkerProcess, _ id: Int, _ token: String, _ url: String) {
        worker.request(id, "download", ["url": .string(url), "token": .string(token), "output": ["format": "rgba", "delivery": "shared"]])
    }

    @Test func aLargeResultIsAFileInSharedMemoryAndASmallOneComesInline() async throws {
        let server = try await E2E.startServer()
        defer { Task { await server.shutdown() } }
        let worker = try WorkerProcess()
        rgba(worker, 1, "big", server.url("/files/testimgp.jpg"))
        rgba(worker, 2, "small", server.url("/files/basn2c08.png"))
        let big = try #require(try await worker.completion("big")["params"])
        let small = try #require(try await worker.completion("small")["params"])
        #expect(big["shared"] == true && big["data"] == nil)
        let path = try #require(big["path"]?.stringValue)
        let folder = (path as NSString).deletingLastPathComponent
        #expect((folder as NSString).lastPathComponent.hasPrefix("image-worker-\(worker.process.processIdentifier)-"))
        #expect(mode(folder) == 0o700 && mode(path) == 0o600, "private to the worker's user")
        let bytes = Array(try Data(contentsOf: URL(fileURLWithPath: path)))
        let reference = try ImageDecoders.decode(Array(try Data(contentsOf: E2E.samples.appendingPathComponent("testimgp.jpg"))))
        #expect(bytes.count == 227 * 149 * 4)
        #expect(bytes == reference.pixels, "the decoded pixels, byte for byte")
        #expect(small["shared"] == nil && small["path"] == nil, "32 × 32 × 4 bytes: inline")
        #expect(Data(base64Encoded: small["data"]?.stringValue ?? "")?.count == 32 * 32 * 4)
        unlink(path)  // taken
        worker.closeStdin()
        #expect(try await worker.waitForExit() == 0)
        #expect(folders(of: worker.process.processIdentifier).isEmpty, "the folder goes with the worker")
    }

    /// `sha256` of a result in shared memory (written on the thread that decoded it, when the
    /// client has room) is the digest of the file's bytes: the same as a file written to a path.
    @Test func aSharedResultsDigestIsThatOfItsBytes() async throws {
        let server = try await E2E.startServer()
        defer { Task { await server.shutdown() } }
        let out = try E2E.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: out) }
        let worker = try WorkerProcess()
        worker.request(
            1, "download",
            ["url": .string(server.url("/files/testimgp.jpg")), "token": "shared", "output": ["format": "rgba", "delivery": "shared", "sha256": true]])
        worker.request(
            2, "download",
            [
                "url": .string(server.url("/files/testimgp.jpg?copy")), "token": "file",
                "output": ["format": "rgba", "delivery": "file", "path": .string(out.path + "/pixels.rgba"), "sha256": true],
            ])
        let shared = try #require(try await worker.completion("shared")["params"])
        let file = try #require(try await worker.completion("file")["params"])
        let path = try #require(shared["path"]?.stringValue)
        #expect(shared["shared"] == true)
        #expect(shared["sha256"]?.stringValue?.count == 64)
        #expect(shared["sha256"] == file["sha256"])
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == Data(contentsOf: out.appendingPathComponent("pixels.rgba")))
        unlink(path)
        worker.closeStdin()
        #expect(try await worker.waitForExit() == 0)
    }

    @Test func aClientThatDoesNotTakeItsFilesHoldsTheWorkerAtTheLimit() async throws {
        let server = try await E2E.startServer()
        defer { Task { await server.shutdown() } }
        let worker = try WorkerProcess()
        worker.request(0, "configure", ["sharedMaxImages": 2])
        _ = try await worker.response(0)
        for i in 1...5 { rgba(worker, i, "t\(i)", server.url("/files/testimgp.jpg?n=\(i)")) }
        func completed() -> [JSONValue] { worker.received.filter { $0["method"] == .string(WorkerEvent.completed) } }
        let deadline = ContinuousClock.now + .seconds(30)
        while completed().count < 2, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(10)) }
        try await Task.sleep(for: .milliseconds(500))
        #expect(completed().count == 2, "two files not taken: the others wait")
        // Taking the files lets the others through, as many as are taken.
        var taken = Set<String>()
        while taken.count < 5, ContinuousClock.now < deadline {
            for event in completed() {
                guard let path = event["params"]?["path"]?.stringValue, !taken.contains(path) else { continue }
                #expect(event["params"]?["outcome"] == "success")
                unlink(path)
                taken.insert(path)
            }
            try await Task.sleep(for: .milliseconds(10))
        }
        #expect(taken.count == 5)
        worker.closeStdin()
        #expect(try await worker.waitForExit() == 0)
        #expect(folders(of: worker.process.processIdentifier).isEmpty)
    }

    @Test func filesNobodyTookAreRemovedAtTheExit() async throws {
        let server = try await E2E.startServer()
        defer { Task { await server.shutdown() } }
        let worker = try WorkerProcess()
        rgba(worker, 1, "left", server.url("/files/testimgp.jpg"))
        let path = try #require(try await worker.completion("left")["params"]?["path"]?.stringValue)
        #expect(FileManager.default.fileExists(atPath: path))
        worker.closeStdin()
        #expect(try await worker.waitForExit() == 0)
        #expect(!FileManager.default.fileExists(atPath: path))
        #expect(folders(of: worker.process.processIdentifier).isEmpty)
    }

    /// A worker killed with SIGKILL cannot clean; the next worker that uses shared memory removes
    /// its folder, and no other: not one whose lock is held, not what a planted link points to.
    @Test func theNextWorkerSweepsAKilledWorkersFolderAndNothingElse() async throws {
        let server = try await E2E.startServer()
        defer { Task { await server.shutdown() } }
        let killed = try WorkerProcess()
        rgba(killed, 1, "k", server.url("/files/testimgp.jpg"))
        let taken = try #require(try await killed.completion("k")["params"]?["path"]?.stringValue)
        // Taken by a client that gives files back: held (still mapped) when the worker dies.
        let folder = (taken as NSString).deletingLastPathComponent
        let left = folder + "/held/" + (taken as NSString).lastPathComponent
        #expect(rename(taken, left) == 0)
        killed.signal(SIGKILL)
        _ = try? await killed.waitForExit()
        #expect(FileManager.default.fileExists(atPath: left), "SIGKILL: nothing could clean")
        // Planted beside it: a link to a folder of someone's files, one to a file in `free/`, and a
        // live worker's folder.
        let victim = try E2E.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: victim) }
        #expect(FileManager.default.createFile(atPath: victim.path + "/precious", contents: Data("keep".utf8)))
        #expect(symlink(victim.path + "/precious", folder + "/free/planted") == 0)
        let link = Self.root + "/image-worker-1-planted\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: victim.path)
        defer { unlink(link) }
        let live = Self.root + "/image-worker-2-live\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: live, withIntermediateDirectories: false)
        defer { try? FileManager.default.removeItem(atPath: live) }
        let lockFD = open(live + "/.lock", O_RDWR | O_CREAT, 0o600)
        #expect(lockFD >= 0 && flock(lockFD, LOCK_EX) == 0)
        defer { close(lockFD) }
        #expect(FileManager.default.createFile(atPath: live + "/7.rgba", contents: Data([1, 2, 3])))

        let next = try WorkerProcess()
        rgba(next, 1, "n", server.url("/files/testimgp.jpg?next"))
        let path = try #require(try await next.completion("n")["params"]?["path"]?.stringValue)
        unlink(path)
        #expect(folders(of: killed.process.processIdentifier).isEmpty, "the killed worker's folder was swept")
        #expect(try String(contentsOfFile: victim.path + "/precious", encoding: .utf8) == "keep", "a link is not followed")
        #expect(FileManager.default.fileExists(atPath: live + "/7.rgba"), "a folder whose lock is held is another worker's")
        next.closeStdin()
        #expect(try await next.waitForExit() == 0)
    }
}
