import Foundation
import ImageDecoding
import ImageWorkerProtocol
import Testing
import TestSupport

/// Shared memory under pressure, through the binary: a `/dev/shm` that cannot take the worker's
/// folder, a reader that does not take its files or read its output, and stdin's end with files
/// not taken. No token fails for want of shared memory, memory stays within the decode budget,
/// and nothing waits by polling.
@Suite(.serialized) struct SharedMemoryLimitsTests {
    func rgba(_ worker: WorkerProcess, _ id: Int, _ token: String, _ url: String) {
        worker.request(id, "download", ["url": .string(url), "token": .string(token), "output": ["format": "rgba", "delivery": "shared"]])
    }

    func completed(_ worker: WorkerProcess) -> [JSONValue] {
        worker.received.filter { $0["method"] == .string(WorkerEvent.completed) }
    }

    /// A private mount namespace where `/dev/shm` is a new tmpfs mounted with `options`, the
    /// worker started inside it; nil where this user cannot make one (no root, no user namespaces).
    static func workerWithDevShm(_ options: String) throws -> WorkerProcess? {
        let probe = Process()
        probe.executableURL = URL(fileURLWithPath: "/bin/sh")
        probe.arguments = ["-c", "unshare --mount --propagation private true 2>/dev/null || unshare --map-root-user --mount --propagation private true"]
        try probe.run()
        probe.waitUntilExit()
        guard probe.terminationStatus == 0 else { return nil }
        let unshare = "unshare --mount --propagation private"
        let mapped = "unshare --map-root-user --mount --propagation private"
        let inside = "mount -t tmpfs -o \(options) tmpfs /dev/shm && exec \"$IMAGE_WORKER\""
        return try WorkerProcess(shell: "\(unshare) true 2>/dev/null && exec \(unshare) sh -c '\(inside)' || exec \(mapped) sh -c '\(inside)'")
    }

    /// Read-only, out of inodes: the folder cannot be made (or its lock file cannot), so every
    /// result comes inline, each token a success; stderr says why, once.
    @Test(arguments: ["ro", "nr_inodes=2"])
    func aDevShmThatCannotTakeTheFolderSendsResultsInline(options: String) async throws {
        guard let worker = try Self.workerWithDevShm(options) else {
            print("skipped: no mount namespace can be made here")
            return
        }
        let server = try await E2E.startServer()
        defer { Task { await server.shutdown() } }
        for i in 0..<4 { rgba(worker, i, "t\(i)", server.url("/files/testimgp.jpg?n=\(i)")) }
        for i in 0..<4 {
            let params = try #require(try await worker.completion(.string("t\(i)"))["params"])
            #expect(params["outcome"] == "success", "\(options): \(params)")
            #expect(params["path"] == nil && params["shared"] == nil, "\(options): inline")
            #expect(Data(base64Encoded: params["data"]?.stringValue ?? "")?.count == 227 * 149 * 4)
        }
        #expect(worker.stderr.components(separatedBy: "shared memory cannot be used").count == 2, "said once: \(worker.stderr)")
        worker.closeStdin()
        #expect(try await worker.waitForExit() == 0)
    }

    /// The worker's CPU time so far (user and system), in clock ticks.
    static func cpuTicks(_ worker: WorkerProcess) throws -> Int {
        let stat = try String(contentsOfFile: "/proc/\(worker.process.processIdentifier)/stat", encoding: .utf8)
        // The fields after the command's closing parenthesis: state is field 3, utime 14, stime 15.
        let fields = stat[stat.range(of: ")", options: .backwards)!.upperBound...].split(separator: " ")
        return (Int(fields[11]) ?? 0) + (Int(fields[12]) ?? 0)
    }

    /// A client that takes none of its files and then closes stdin (`… | image-worker > events`):
    /// while it waits the worker sleeps (no polling), and at stdin's end what still waits for
    /// room comes inline, every token ends, and the worker exits.
    @Test func atStdinsEndResultsStillWaitingGoInlineAndTheWorkerExits() async throws {
        let server = try await E2E.startServer()
        defer { Task { await server.shutdown() } }
        let worker = try WorkerProcess()
        worker.request(0, "configure", ["sharedMaxImages": 2])
        _ = try await worker.response(0)
        for i in 1...6 { rgba(worker, i, "t\(i)", server.url("/files/testimgp.jpg?n=\(i)")) }
        let deadline = ContinuousClock.now + .seconds(30)
        while completed(worker).count < 2, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(10)) }
        try await Task.sleep(for: .milliseconds(300))
        #expect(completed(worker).count == 2, "two files not taken: the others wait")
        let before = try Self.cpuTicks(worker)
        try await Task.sleep(for: .seconds(1))
        let spent = try Self.cpuTicks(worker) - before
        // (Polling every 2 ms took about 30 ticks a second.)
        #expect(spent <= 5, "\(spent) ticks of CPU in a second of waiting")
        let closed = ContinuousClock.now
        worker.closeStdin()
        #expect(try await worker.waitForExit(timeout: .seconds(20)) == 0)
        #expect(ContinuousClock.now - closed < .seconds(10))
        let ends = completed(worker)
        #expect(ends.count == 6)
        #expect(ends.allSatisfy { $0["params"]?["outcome"] == "success" })
        #expect(ends.filter { $0["params"]?["shared"] == true }.count == 2)
        #expect(ends.filter { $0["params"]?["data"] != nil }.count == 4, "the rest inline")
    }

    /// Solid 2000 × 2000 PNGs: a few KB on the wire, 16 MB each decoded.
    static let side = 2000
    static let solidPNG: [UInt8] = {
        let image = DecodedImage(width: side, height: side, layout: .rgba, pixels: [UInt8](repeating: 90, count: side * side * 4), format: .png)
        return try! ImageDecoders.encodePNG(image, fast: true)
    }()

    /// Results waiting for a reader that does not take its shared files, or does not read its
    /// output at all, keep their bitmaps in the decode budget: 24 images of 64 MB each took the
    /// worker to 1.2 GB (files not taken) and 3.1 GB (output not read) with a budget of 256 MiB.
    /// Here the budget is 32 MiB and 20 (inline: 14) images of 16 MB each wait (the delivery stage
    /// holds 16 bodies at most): over 220 MB more if they escaped it. (Inline, the lines queued for
    /// the reader come on top: each token that passed the writer's capacity check before it
    /// backed up adds its line, base64, a third larger than its bitmap.) Measured on a 2-core
    /// machine: 316 MB (shared) and 813 MB (inline) more before, 25 MB and 162 MB more now.
    @Test(arguments: ["shared", "inline"])
    func resultsWaitingForTheirReaderStayInTheDecodeBudget(delivery: String) async throws {
        let server = try await E2E.startServer()
        defer { Task { await server.shutdown() } }
        server.setFile("solid.png", Self.solidPNG)
        let worker = try WorkerProcess()
        worker.request(0, "configure", ["decodeMemoryBytes": .int(32 << 20), "sharedMaxImages": 2])
        _ = try await worker.response(0)
        let before = try HostileInputTests.peakMB(worker)
        if delivery == "inline" { worker.pauseReading(true) }
        let count = delivery == "inline" ? 14 : 20
        for i in 0..<count {
            worker.request(
                i, "download",
                ["url": .string(server.url("/files/solid.png?n=\(i)")), "token": .int(Int64(i)), "output": ["format": "rgba", "delivery": .string(delivery)]])
        }
        // Until the worker stands still (its CPU time stops growing), or 60 s.
        let deadline = ContinuousClock.now + .seconds(60)
        var last = -1
        while ContinuousClock.now < deadline {
            try await Task.sleep(for: .seconds(1))
            let now = try Self.cpuTicks(worker)
            if now - last <= 2 { break }
            last = now
        }
        let peak = try HostileInputTests.peakMB(worker)
        #expect(peak - before < (delivery == "inline" ? 260 : 120), "\(delivery): \(before) MB before the downloads, \(peak) MB at the peak")
        // Then the reader comes back: every token ends with its image.
        worker.pauseReading(false)
        var taken = Set<String>()
        let end = ContinuousClock.now + .seconds(120)
        while completed(worker).count < count || taken.count < completed(worker).filter({ $0["params"]?["path"] != nil }).count,
            ContinuousClock.now < end
        {
            for event in completed(worker) {
                guard let path = event["params"]?["path"]?.stringValue, !taken.contains(path) else { continue }
                unlink(path)
                taken.insert(path)
            }
            try await Task.sleep(for: .milliseconds(20))
        }
        let ends = completed(worker)
        #expect(ends.count == count)
        #expect(ends.allSatisfy { $0["params"]?["outcome"] == "success" && $0["params"]?["width"] == .int(Int64(Self.side)) })
        worker.closeStdin()
        #expect(try await worker.waitForExit(timeout: .seconds(60)) == 0)
    }
}
