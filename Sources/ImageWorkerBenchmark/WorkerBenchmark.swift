import Foundation
import ImageDecoding
import ImageWorkerProtocol
import Synchronization
import LoopbackFixtures

/// `image-worker-bench decode [CORPUS [NAME]]` compares the decoders with the C anchors instead (see
/// DecodeBenchmark; NAME: only the corpus files whose names contain it); `image-worker-bench
/// progressive FILE` measures partial images end to end (ProgressiveBenchmark). Otherwise it prints the worker's figures (a benchmark, not a test: nothing
/// here passes or fails):
/// request-to-`started` latency, messages per second through the protocol layer, and files/s,
/// MB/s, CPU seconds and peak RSS for 1,000 small files from a loopback server at concurrency
/// 6 and 32. Run it on the release build:
///
///     swift build -c release && swift run -c release image-worker-bench [--worker PATH] [--files N] [--latency-base URL]
///
/// `--latency-base URL` times the latency against another server holding `f0.jpg`…`f49.jpg`.
@main
struct WorkerBenchmark {
    static func main() async throws {
        var arguments = Array(CommandLine.arguments.dropFirst())
        BitmapMemory.retainFreedMemory()  // as the worker does
        if arguments.first == "decode-once", arguments.count == 2 {
            DecodeBenchmark.decodeOnce(arguments[1])
            return
        }
        if arguments.first == "decode" {
            let here = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            let anchors = here.deletingLastPathComponent().appendingPathComponent("shared/bench").path
            try DecodeBenchmark.run(
                corpus: arguments.count > 1 ? arguments[1] : "/tmp/image-worker-corpus", anchors: anchors,
                only: arguments.count > 2 ? arguments[2] : nil)
            return
        }
        func option(_ name: String) -> String? {
            guard let i = arguments.firstIndex(of: name), i + 1 < arguments.count else { return nil }
            defer { arguments.removeSubrange(i...i + 1) }
            return arguments[i + 1]
        }
        let worker = option("--worker") ?? defaultWorker()
        if arguments.first == "http-floor" {
            let concurrency = max(1, Int(option("--concurrency") ?? "") ?? 6)
            let rounds = max(1, Int(option("--rounds") ?? "") ?? 3)
            guard arguments.count == 2, let list = try? String(contentsOfFile: arguments[1], encoding: .utf8) else {
                print("usage: image-worker-bench http-floor URL-LIST [--concurrency N] [--rounds N]")
                exit(2)
            }
            try await HTTPFloor.run(urls: list.split(whereSeparator: \.isNewline).map(String.init), concurrency: concurrency, rounds: rounds)
            return
        }
        if arguments.first == "progressive" {
            let rounds = max(1, Int(option("--rounds") ?? "") ?? 5)
            guard arguments.count == 2 else {
                print("usage: image-worker-bench progressive FILE [--rounds N] [--worker PATH]")
                exit(2)
            }
            try await ProgressiveBenchmark.run(worker: worker, file: arguments[1], rounds: rounds)
            return
        }
        let fileCount = Int(option("--files") ?? "") ?? 1000
        let latencyBase = option("--latency-base")
        guard FileManager.default.isExecutableFile(atPath: worker) else {
            print("no worker binary at \(worker); build it with `swift build -c release` or pass --worker PATH")
            exit(2)
        }
        print("image-worker benchmark — worker \(worker)")
        print("machine: \(ProcessInfo.processInfo.activeProcessorCount) cores; figures vary between runs, compare ratios within one run\n")

        let server = try await TestHTTPServer.start()
        var corpusBytes = 0
        var rng = SplitMix(seed: 1234)
        for i in 0..<fileCount {
            let size = corpusSize(&rng)
            corpusBytes += size
            server.setFile("f\(i).jpg", [0xFF, 0xD8, 0xFF, 0xE0] + (0..<(size - 4)).map { UInt8(truncatingIfNeeded: $0 &* 131 &+ i) })
        }
        server.setFile("big.bin", [UInt8](repeating: 7, count: 32 << 20))

        try await latency(worker: worker, base: latencyBase ?? server.baseURL + "/files")
        try await protocolThroughput(worker: worker)
        try await progressEvents(worker: worker, server: server)
        print(String(format: "\n%d files, %.1f MB in all (mean %.1f KB), from 127.0.0.1, delivery none:", fileCount,
                     Double(corpusBytes) / 1e6, Double(corpusBytes) / Double(fileCount) / 1e3))
        print("concurrency   files/s      MB/s   wall s   worker CPU s   peak RSS MB")
        for concurrency in [6, 32] {
            try await bulk(worker: worker, server: server, files: fileCount, bytes: corpusBytes, concurrency: concurrency)
        }
        await server.shutdown()
    }

    static func defaultWorker() -> String {
        let beside = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("image-worker").path
        return FileManager.default.isExecutableFile(atPath: beside) ? beside : ".build/release/image-worker"
    }

    /// Sizes like a page of web images: mostly 20–150 KB, a few large ones, mean about 96 KB.
    static func corpusSize(_ rng: inout SplitMix) -> Int {
        let u = Double(rng.next() % 1_000_000) / 1_000_000
        return Int(8_000 + 60_000 * -log(1 - u * 0.999) * 1.45)
    }

    /// Time from writing a `download` request to reading its `{token}` response and its
    /// `download/started` event, one download at a time. Measured by a plain thread that writes and
    /// then blocks reading, so that nothing in this process competes with the worker for the CPU.
    static func latency(worker: String, base: String) async throws {
        let result: (responses: [Double], started: [Double]) = await withCheckedContinuation { continuation in
            let thread = Thread {
                continuation.resume(returning: SynchronousProbe.run(worker: worker, base: base, count: 300))
            }
            thread.start()
        }
        func pct(_ values: [Double], _ p: Double) -> Double {
            let sorted = values.sorted()
            return sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))]
        }
        print(String(format: "request → download/started latency (300 sequential downloads): median %.3f ms, p90 %.3f ms, p99 %.3f ms",
                     pct(result.started, 0.5), pct(result.started, 0.9), pct(result.started, 0.99)))
        print(String(format: "request → {token} response: median %.3f ms, p90 %.3f ms", pct(result.responses, 0.5), pct(result.responses, 0.9)))
    }

    /// Requests in, responses out, as fast as the worker parses, dispatches, encodes and writes.
    static func protocolThroughput(worker: String) async throws {
        let count = 200_000
        let client = try BenchClient(worker: worker)
        let begin = DispatchTime.now().uptimeNanoseconds
        let writer = Thread {
            var batch = ""
            for i in 0..<count {
                batch += #"{"jsonrpc":"2.0","id":\#(i),"method":"cancel","params":{"token":"t\#(i)"}}"# + "\n"
                if batch.utf8.count > 60_000 {
                    client.sendRaw(batch)
                    batch = ""
                }
            }
            client.sendRaw(batch)
        }
        writer.start()
        try await client.waitForLines(count)
        let seconds = Double(DispatchTime.now().uptimeNanoseconds - begin) / 1e9
        let usage = client.usage()
        _ = try await client.finish()
        print(String(format: "protocol layer: %d requests answered in %.2f s = %.0f messages/s each way (worker CPU %.2f s)",
                     count, seconds, Double(count) / seconds, usage.cpuSeconds))
    }

    /// Events of real downloads with progress throttling off: one progress event per body chunk
    /// as it arrives from the socket (TCP and NIO coalesce the server's 1 KB writes).
    static func progressEvents(worker: String, server: TestHTTPServer) async throws {
        let client = try BenchClient(worker: worker)
        client.send(#"{"jsonrpc":"2.0","id":0,"method":"configure","params":{"progressIntervalMs":0}}"#)
        let begin = DispatchTime.now().uptimeNanoseconds
        for i in 0..<4 {
            client.send(#"{"jsonrpc":"2.0","method":"download","params":{"token":"p\#(i)","url":"\#(server.url("/files/big.bin?chunk=1024&p=\(i)"))"}}"#)
        }
        for i in 0..<4 { _ = try await client.waitFor("\"method\":\"download/completed\",\"params\":{\"token\":\"p\(i)\"") }
        let seconds = Double(DispatchTime.now().uptimeNanoseconds - begin) / 1e9
        let lines = client.lineCount
        _ = try await client.finish()
        print(String(format: "download events (progress unthrottled): 4 × 32 MB in %.2f s (%.0f MB/s), %d events = %.0f events/s",
                     seconds, 128 * 1.048576 / seconds, lines, Double(lines) / seconds))
    }

    static func bulk(worker: String, server: TestHTTPServer, files: Int, bytes: Int, concurrency: Int) async throws {
        let client = try BenchClient(worker: worker, arguments: ["--max-concurrent-downloads", String(concurrency)])
        let begin = DispatchTime.now().uptimeNanoseconds
        var batch = ""
        for i in 0..<files {
            batch += #"{"jsonrpc":"2.0","method":"download","params":{"token":"b\#(i)","url":"\#(server.url("/files/f\(i).jpg?c=\(concurrency)"))"}}"# + "\n"
        }
        client.sendRaw(batch)
        try await client.waitForCount(of: "\"method\":\"download/completed\"", files)
        let seconds = Double(DispatchTime.now().uptimeNanoseconds - begin) / 1e9
        let usage = client.usage()
        let failures = client.count(of: "\"outcome\":\"error\"") + client.count(of: "\"outcome\":\"cancelled\"")
        _ = try await client.finish()
        print(String(format: "%11d %9.0f %9.1f %8.2f %14.2f %13.1f%@", concurrency, Double(files) / seconds, Double(bytes) / 1e6 / seconds,
                     seconds, usage.cpuSeconds, usage.peakRSSMB, failures > 0 ? "   (\(failures) failed!)" as NSString : "" as NSString))
    }
}
