import AsyncHTTPClient
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1

/// `image-worker-bench http-floor URLS [--concurrency N] [--rounds N]`: what AsyncHTTPClient alone
/// costs per file, with the worker's client settings and nothing else (no queue, no events, no
/// delivery), through its two APIs:
/// - `async`: `execute` and the body as an `AsyncSequence`, as the worker's `HTTPLoader` reads it;
/// - `delegate`: an `HTTPClientResponseDelegate`, whose callbacks run on the connection's event loop.
///
/// It prints files/s and CPU ms per file for each (rounds interleaved), the floor that the worker's
/// plumbing job (`scripts/pipeline-bench.sh --jobs plumbing`) can be set beside.
enum HTTPFloor {
    static func run(urls: [String], concurrency: Int, rounds: Int) async throws {
        var configuration = HTTPClient.Configuration(
            redirectConfiguration: .disallow, timeout: .init(connect: .seconds(10), read: nil), decompression: .disabled)
        configuration.connectionPool.retryConnectionEstablishment = false
        configuration.httpVersion = .automatic
        configuration.tracing.tracer = nil
        let client = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
        print("AsyncHTTPClient alone: \(urls.count) URLs, concurrency \(concurrency), \(ProcessInfo.processInfo.activeProcessorCount) cores")
        print("api        files/s   CPU ms/file   files/s per busy core   bytes")
        for _ in 0..<rounds {
            for api in ["async", "delegate"] {
                let cpu0 = cpuSeconds()
                let start = DispatchTime.now().uptimeNanoseconds
                let bytes = try await withThrowingTaskGroup(of: Int.self) { group in
                    var next = 0
                    var total = 0
                    func add() {
                        guard next < urls.count else { return }
                        let url = urls[next]
                        next += 1
                        group.addTask { api == "async" ? try await fetchAsync(client, url) : try await fetchDelegate(client, url) }
                    }
                    for _ in 0..<concurrency { add() }
                    while let n = try await group.next() {
                        total += n
                        add()
                    }
                    return total
                }
                let wall = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
                let cpu = cpuSeconds() - cpu0
                print(
                    String(
                        format: "%-9@ %8.0f   %11.3f   %21.0f   %d", api as NSString, Double(urls.count) / wall, cpu * 1000 / Double(urls.count),
                        Double(urls.count) / cpu, bytes))
            }
        }
        try await client.shutdown()
    }

    static func fetchAsync(_ client: HTTPClient, _ url: String) async throws -> Int {
        let response = try await client.execute(HTTPClientRequest(url: url), deadline: .now() + .seconds(30))
        var n = 0
        for try await chunk in response.body { n += chunk.readableBytes }
        return n
    }

    static func fetchDelegate(_ client: HTTPClient, _ url: String) async throws -> Int {
        try await client.execute(request: try HTTPClient.Request(url: url), delegate: Counter()).futureResult.get()
    }

    /// Counts the body's bytes on the event loop.
    final class Counter: HTTPClientResponseDelegate {
        let count = NIOLockedValueBox(0)
        func didReceiveBodyPart(task: HTTPClient.Task<Int>, _ buffer: ByteBuffer) -> EventLoopFuture<Void> {
            count.withLockedValue { $0 += buffer.readableBytes }
            return task.eventLoop.makeSucceededVoidFuture()
        }
        func didFinishRequest(task: HTTPClient.Task<Int>) throws -> Int { count.withLockedValue { $0 } }
    }

    static func cpuSeconds() -> Double {
        var usage = rusage()
        getrusage(__rusage_who_t(RUSAGE_SELF.rawValue), &usage)
        return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
    }
}
