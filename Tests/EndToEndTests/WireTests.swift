import Foundation
import ImageWorkerProtocol
import Testing
import TestSupport

/// Framing, escaping, limits and ordering on the real binary's pipes.
@Suite struct WireTests {
    @Test func lspContentLengthFramingIsDetectedAndAnsweredInKind() async throws {
        let worker = try WorkerProcess()
        let body = #"{"jsonrpc":"2.0","id":1,"method":"status","params":{}}"#
        worker.send("Content-Length: \(body.utf8.count)\r\n\r\n\(body)")
        let body2 = #"{"jsonrpc":"2.0","id":2,"method":"cancel","params":{"token":"é\u2028"}}"#
        worker.send("Content-Length: \(body2.utf8.count)\r\nContent-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n\(body2)")
        worker.closeStdin()
        #expect(try await worker.waitForExit() == 0)
        // Read the raw stream: exactly two framed messages, nothing else.
        var rest = worker.rawOutput[...]
        var bodies: [String] = []
        while !rest.isEmpty {
            let header = Array("Content-Length: ".utf8)
            #expect(rest.starts(with: header), "a frame starts with its header")
            guard rest.starts(with: header), let end = rest.firstRange(of: Array("\r\n\r\n".utf8)) else { break }
            let length = try #require(Int(String(decoding: rest[rest.startIndex + header.count..<end.lowerBound], as: UTF8.self)))
            let body = rest[end.upperBound..<min(end.upperBound + length, rest.endIndex)]
            #expect(body.count == length)
            bodies.append(String(decoding: body, as: UTF8.self))
            rest = rest[body.endIndex...]
        }
        #expect(bodies.count == 2)
        for body in bodies { #expect(try JSONParser.parse(body)["jsonrpc"] == "2.0") }
        let raw = String(decoding: worker.rawOutput, as: UTF8.self)
        #expect(raw.contains(#""token":"é\u2028""#), "U+2028 is escaped on the wire")
    }

    @Test func lineBreakingCharactersAreEscapedSoEachLineIsOneMessage() async throws {
        let worker = try WorkerProcess()
        worker.request(1, "cancel", ["token": "a\u{2028}b\u{2029}c\u{85}d"])
        worker.closeStdin()
        #expect(try await worker.waitForExit() == 0)
        let line = String(decoding: try #require(worker.rawLines.first), as: UTF8.self)
        #expect(line.contains(#"a\u2028b\u2029c\u0085d"#))
        #expect(line.split(whereSeparator: \.isNewline).count == 1, "Python's splitlines() sees one line")
    }

    @Test func anOverlongLineGetsAParseErrorAndTheWorkerGoesOn() async throws {
        let worker = try WorkerProcess(arguments: ["--max-message-bytes", "4096"])
        worker.send(#"{"jsonrpc":"2.0","id":1,"method":"download","params":{"url":""# + String(repeating: "x", count: 100_000) + "\"}}\n")
        worker.request(2, "status")
        let error = try await worker.waitFor("parse error") { $0["error"]?["code"] == -32700 }
        #expect(error["id"] == .null)
        #expect(try await worker.response(2)["result"] != nil)
        worker.closeStdin()
        #expect(try await worker.waitForExit() == 0)
    }

    @Test func invalidUTF8IsAParseError() async throws {
        let worker = try WorkerProcess()
        var bytes = Array(#"{"jsonrpc":"2.0","id":1,"method":"cancel","params":{"token":""#.utf8)
        bytes += [0xC3, 0x28]
        bytes += Array("\"}}\n".utf8)
        worker.sendBytes(bytes)
        worker.request(2, "status")
        #expect(try await worker.waitFor("parse error") { $0["error"]?["code"] == -32700 }["id"] == .null)
        _ = try await worker.response(2)
        worker.closeStdin()
        #expect(try await worker.waitForExit() == 0)
    }

    @Test func theDownloadResponseComesBeforeAnyEventOfItsToken() async throws {
        let server = try await E2E.startServer()
        defer { Task { await server.shutdown() } }
        let worker = try WorkerProcess()
        var batch: [JSONValue] = []
        for i in 0..<20 {
            batch.append(["jsonrpc": "2.0", "id": .int(Int64(i)), "method": "download",
                          "params": ["url": .string(server.url("/files/basn2c08.png")), "token": .int(Int64(i))]])
        }
        worker.sendLine(.array(batch))  // in a batch: the reply array is written last
        for i in 20..<40 {
            worker.request(i, "download", ["url": .string(server.url("/files/testorig.jpg?n=\(i % 3)")), "token": .int(Int64(i))])
        }
        worker.closeStdin()
        #expect(try await worker.waitForExit() == 0)
        let messages = worker.received
        for i in 0..<40 {
            let token = JSONValue.int(Int64(i))
            let responseIndex = try #require(messages.firstIndex { m in
                (m.arrayValue ?? [m]).contains { $0["id"] == token && $0["result"]?["token"] == token }
            })
            let firstEvent = try #require(messages.firstIndex { $0["params"]?["token"] == token })
            #expect(responseIndex < firstEvent, "token \(i)")
            #expect(worker.events(token).last?["params"]?["outcome"] == "success")
        }
    }

    @Test func credentialsNeverReachLogsOrEvents() async throws {
        let server = try await E2E.startServer()
        defer { Task { await server.shutdown() } }
        server.setFile("secret.png", Array(try Data(contentsOf: E2E.samples.appendingPathComponent("basn2c08.png"))))
        let worker = try WorkerProcess(arguments: ["--log-level", "trace"])
        worker.request(1, "download", [
            "url": .string(server.url("/auth/secret.png")), "token": "s",
            "credentials": ["user": "user", "password": "pass"],
        ])
        #expect(try await worker.completion("s")["params"]?["outcome"] == "success")
        worker.request(2, "status")
        _ = try await worker.response(2)
        worker.closeStdin()
        _ = try await worker.waitForExit()
        let everything = worker.stderr + worker.rawLines.map { String(decoding: $0, as: UTF8.self) }.joined()
        #expect(!everything.contains("pass\""), "the password")
        #expect(!everything.contains("dXNlcjpwYXNz"), "the Authorization value")
    }

    @Test func fileURLsWithARoot() async throws {
        let root = try E2E.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: root) }
        try FileManager.default.copyItem(at: E2E.samples.appendingPathComponent("testorig.jpg"), to: root.appendingPathComponent("a.jpg"))
        let worker = try WorkerProcess(arguments: ["--file-root", root.path])
        worker.request(1, "download", ["url": .string(root.appendingPathComponent("a.jpg").absoluteString), "token": "in"])
        worker.request(2, "download", ["url": .string("file://" + root.path + "/../../etc/passwd"), "token": "out"])
        let inside = try await worker.completion("in")
        #expect(inside["params"]?["outcome"] == "success")
        #expect(inside["params"]?["byteLength"] == 5770)
        #expect(inside["params"]?["mimeType"] == "image/jpeg")
        #expect(try await worker.completion("out")["params"]?["error"]?["data"]?["name"] == "InvalidDownloadOperation")
        worker.closeStdin()
        #expect(try await worker.waitForExit() == 0)
    }
}
