import Foundation
import ImageWorkerProtocol
import Testing
import TestSupport

/// Replays every `protocol/transcripts/*.txt` against the built binary, and checks every message
/// in both directions against `protocol/schema/`.
@Suite struct TranscriptTests {
    @Test func thereAreTranscripts() throws {
        #expect(try Transcript.all().count >= 8)
    }

    @Test(arguments: try Transcript.all())
    func replay(_ name: String) async throws {
        let server = try await E2E.startServer()
        defer { Task { await server.shutdown() } }
        let out = try E2E.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: out) }
        let transcript = try Transcript.load(name, substitutions: [
            "BASE": server.baseURL, "OUT": out.path, "SAMPLES": E2E.samples.path,
        ])
        let schemas = try E2E.schemas()
        let worker = try WorkerProcess(arguments: transcript.arguments)
        var matched = Set<Int>()
        var lastIndex: [String: Int] = [:]
        var methodsById: [String: String] = [:]

        for step in transcript.steps {
            switch step.action {
            case .send(let text, let invalid):
                if let sent = try? JSONParser.parse(text) {
                    for element in sent.arrayValue ?? [sent] {
                        if let id = element["id"], let method = element["method"]?.stringValue {
                            methodsById[JSONWriter.encodeString(id)] = method
                        }
                        if !invalid {
                            let schema = JSONSchemaValidator.schemaName(forIncoming: element) ?? "none"
                            let problems = schemas.validate(element, against: schema)
                            #expect(problems.isEmpty, "\(name): request \(text) against \(schema): \(problems)")
                        }
                    }
                } else {
                    #expect(invalid, "\(name): \(text) is not JSON but not marked -->!")
                }
                worker.send(transcript.framed(text))
            case .eof:
                worker.closeStdin()
            }
            for pattern in step.expected {
                let key = Transcript.orderKey(pattern)
                let after = lastIndex[key] ?? -1
                let deadline = ContinuousClock.now + .seconds(30)
                let index: Int
                while true {
                    let messages = worker.received
                    if let i = messages.indices.first(where: { i in
                        i > after && !matched.contains(i) && Transcript.matches(pattern, messages[i])
                    }) {
                        index = i
                        break
                    }
                    guard ContinuousClock.now < deadline else {
                        Issue.record("\(name): never received \(JSONWriter.encodeString(pattern))\nreceived:\n\(messages.map { JSONWriter.encodeString($0) }.joined(separator: "\n"))\nstderr:\n\(worker.stderr)")
                        return
                    }
                    try await Task.sleep(for: .milliseconds(5))
                }
                matched.insert(index)
                lastIndex[key] = index
            }
        }
        if transcript.exitStatus == nil { worker.closeStdin() }
        let status = try await worker.waitForExit()
        if let expected = transcript.exitStatus { #expect(status == expected, "\(name): exit status") }

        let messages = worker.received
        for (i, message) in messages.enumerated() where !matched.contains(i) {
            let allowed = message["method"] == .string(WorkerEvent.progress)
                || transcript.optional.contains { Transcript.matches($0, message) }
            #expect(allowed, "\(name): unexpected message \(JSONWriter.encodeString(message))")
        }
        for message in messages {
            for element in message.arrayValue ?? [message] {
                let method = element["id"].flatMap { methodsById[JSONWriter.encodeString($0)] }
                guard let schema = JSONSchemaValidator.schemaName(forOutgoing: element, requestMethod: method) else {
                    Issue.record("\(name): no schema for \(JSONWriter.encodeString(element))")
                    continue
                }
                let problems = schemas.validate(element, against: schema)
                #expect(problems.isEmpty, "\(name): \(JSONWriter.encodeString(element)) against \(schema): \(problems)")
            }
        }
    }
}
