import Foundation
import ImageDecoding
import LoopbackFixtures

/// `image-worker-bench progressive FILE [--rounds N]`: what partial images cost end to end, through
/// the worker, for one (large, progressive) JPEG served from loopback in 64 KiB chunks, 2 ms
/// apart. Three runs per round, in turns: the whole decode (`progressive: false`), every partial
/// image at full size, and every partial image at `partialMaxPixelSize: 512`; all `format: rgba`,
/// `delivery: none`, `partialIntervalMs: 0`. Prints the medians of the worker's CPU seconds, the
/// number of partial images, the medians of each round's ratio to the whole decode and of the peak
/// RSS, and the whole decode's peak RSS against its bitmap (beyond an idle worker's).
enum ProgressiveBenchmark {
    struct Case {
        var name: String
        var progressive: Bool
        var partialMaxPixelSize: Int?
    }

    static let cases = [
        Case(name: "whole decode", progressive: false),
        Case(name: "partials, full size", progressive: true),
        Case(name: "partials at 512", progressive: true, partialMaxPixelSize: 512),
    ]

    static func run(worker: String, file: String, rounds: Int) async throws {
        let bytes = Array(try Data(contentsOf: URL(fileURLWithPath: file)))
        guard let (width, height) = ImageDecoders.probeSize(bytes) else {
            print("\(file): not a JPEG or PNG with a readable size")
            exit(2)
        }
        let server = try await TestHTTPServer.start()
        server.setFile("p.jpg", bytes)
        let bitmapMB = Double(width * height * 4) / 1_048_576
        print("image-worker progressive benchmark — worker \(worker)")
        print(String(format: "%@: %dx%d, %.1f MB, RGBA bitmap %.1f MB; 64 KiB chunks 2 ms apart; %d rounds, cases in turns\n",
                     (file as NSString).lastPathComponent, width, height, Double(bytes.count) / 1e6, bitmapMB, rounds))
        let idle = try await idleRSS(worker: worker)
        var cpu: [[Double]] = Array(repeating: [], count: cases.count)
        var partials: [[Int]] = Array(repeating: [], count: cases.count)
        var peaks: [[Double]] = Array(repeating: [], count: cases.count)
        var ratios: [[Double]] = Array(repeating: [], count: cases.count)
        for round in 0..<rounds {
            var this = Array(repeating: 0.0, count: cases.count)
            // Turns: the order rotates, so no case always runs on a cooler machine.
            for k in 0..<cases.count {
                let index = (k + round) % cases.count
                let result = try await measure(cases[index], worker: worker, url: server.url("/files/p.jpg?chunk=65536&delayMs=2&r=\(round)"))
                this[index] = result.cpu
                cpu[index].append(result.cpu)
                partials[index].append(result.partials)
                peaks[index].append(result.peakMB)
            }
            for index in cases.indices { ratios[index].append(this[index] / max(this[0], 0.001)) }
        }
        await server.shutdown()
        print("case                    worker CPU s   partial images   ÷ whole decode (median of rounds)   peak RSS MB")
        let median = DecodeBenchmark.median
        for index in cases.indices {
            let name = cases[index].name.padding(toLength: 22, withPad: " ", startingAt: 0)
            print(name + String(format: " %13.3f %16d %12.2f %32.1f", median(cpu[index]), Int(median(partials[index].map(Double.init))),
                                median(ratios[index]), median(peaks[index])))
        }
        let peak = median(peaks[0])
        print(String(format: "\nwhole decode: peak RSS %.1f MB, idle worker %.1f MB: (peak − idle) ÷ bitmap = %.2f", peak, idle,
                     (peak - idle) / bitmapMB))
    }

    static func measure(_ c: Case, worker: String, url: String) async throws -> (cpu: Double, partials: Int, peakMB: Double) {
        let client = try BenchClient(worker: worker)
        var output = #""format":"rgba","delivery":"none","partialIntervalMs":0"#
        if let size = c.partialMaxPixelSize { output += #","partialMaxPixelSize":\#(size)"# }
        client.send(#"{"jsonrpc":"2.0","method":"download","params":{"token":"p","url":"\#(url)","progressive":\#(c.progressive),"output":{\#(output)}}}"#)
        _ = try await client.waitFor("\"method\":\"download/completed\"")
        let usage = client.usage()
        let count = client.count(of: "\"method\":\"download/partialImage\"")
        if client.count(of: "\"outcome\":\"success\"") != 1 { print("  (\(c.name): the download did not succeed)") }
        _ = try await client.finish()
        return (usage.cpuSeconds, count, usage.peakRSSMB)
    }

    /// A worker's peak RSS after start-up and one answered request.
    static func idleRSS(worker: String) async throws -> Double {
        let client = try BenchClient(worker: worker)
        client.send(#"{"jsonrpc":"2.0","id":1,"method":"status"}"#)
        _ = try await client.waitFor("\"id\":1")
        let rss = client.usage().peakRSSMB
        _ = try await client.finish()
        return rss
    }
}
