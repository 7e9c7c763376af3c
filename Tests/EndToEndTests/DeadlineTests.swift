import Foundation
import ImageWorkerProtocol
import Testing
import TestSupport

/// Per-download deadlines and retries through the binary: what a bulk job needs to be bounded.
@Suite struct DeadlineTests {
    /// Four URLs that never answer, with a deadline each, end at their deadlines (not after the
    /// idle timeout and its retries), with `NetworkError`/`deadline` and the attempts made; a URL
    /// that keeps failing with 503 reports every attempt. Every event matches the schemas.
    @Test func deadlinesBoundURLsThatNeverAnswerAndFailuresListTheirAttempts() async throws {
        let server = try await E2E.startServer()
        defer { Task { await server.shutdown() } }
        let worker = try WorkerProcess()
        let schemas = try E2E.schemas()
        let started = ContinuousClock.now
        for i in 0..<4 {
            worker.request(i + 1, "download", [
                "url": .string(server.url("/files/testorig.jpg?gate=never\(i)")), "token": .string("hang\(i)"), "deadlineMs": 300,
                "timeoutMs": 60_000,
            ])
        }
        worker.request(5, "download", ["url": .string(server.url("/status/503")), "token": "busy", "maxRetries": 2, "retryDelayMs": 1])
        for i in 0..<4 {
            let completed = try await worker.completion(.string("hang\(i)"), timeout: .seconds(20))
            #expect(schemas.validate(completed, against: JSONSchemaValidator.schemaName(forOutgoing: completed, requestMethod: nil) ?? "?").isEmpty, "\(completed)")
            let data = completed["params"]?["error"]?["data"]
            #expect(data?["name"] == "NetworkError" && data?["reason"] == "deadline", "\(completed)")
            #expect(data?["attempts"] == 1 && data?["earlierAttempts"] == .array([]), "\(completed)")
        }
        #expect(ContinuousClock.now - started < .seconds(20), "not the idle timeout (60 s)")
        let busy = try await worker.completion("busy")
        #expect(schemas.validate(busy, against: JSONSchemaValidator.schemaName(forOutgoing: busy, requestMethod: nil) ?? "?").isEmpty, "\(busy)")
        let error = busy["params"]?["error"]
        #expect(error?["data"]?["statusCode"] == 503 && error?["data"]?["attempts"] == 3, "\(busy)")
        guard case .array(let earlier)? = error?["data"]?["earlierAttempts"] else {
            Issue.record("no earlierAttempts in \(busy)")
            return
        }
        #expect(earlier.count == 2 && earlier.allSatisfy { $0["data"]?["statusCode"] == 503 })
        #expect(error?["message"]?.stringValue?.contains("after 3 attempts") == true)
        #expect(server.hits("/status/503") == 3)
        // Out of range: a clear invalid-params error, nothing started.
        worker.request(6, "download", ["url": .string(server.url("/files/testorig.jpg")), "deadlineMs": 0])
        #expect(try await worker.response(6)["error"]?["code"] == -32602)
        worker.closeStdin()
        #expect(try await worker.waitForExit() == 0)
    }
}
