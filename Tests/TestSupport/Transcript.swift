import Foundation
import ImageWorkerProtocol

/// A session from `protocol/transcripts/` (format in its README.md).
public struct Transcript: Sendable, CustomStringConvertible {
    public enum Action: Sendable {
        case send(String, deliberatelyInvalid: Bool)
        case eof
    }

    public struct Step: Sendable {
        public var action: Action
        public var expected: [JSONValue] = []
    }

    public var name: String
    public var arguments: [String] = []
    public var steps: [Step] = []
    public var optional: [JSONValue] = []
    public var exitStatus: Int32?
    /// `!framing content-length`: each message is sent as an LSP frame, its `Content-Type` header
    /// first (and answered in `Content-Length` frames).
    public var contentLengthFraming = false

    /// `text` as the transcript's framing sends it.
    public func framed(_ text: String) -> String {
        guard contentLengthFraming else { return text + "\n" }
        return "Content-Type: application/vscode-jsonrpc; charset=utf-8\r\nContent-Length: \(text.utf8.count)\r\n\r\n\(text)"
    }

    public var description: String { name }

    public static var directory: URL { WorkerProcess.repositoryRoot.appendingPathComponent("protocol/transcripts") }

    public static func all() throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.hasSuffix(".txt") }.sorted()
    }

    public struct FormatError: Error, CustomStringConvertible {
        public var description: String
    }

    public static func load(_ name: String, substitutions: [String: String]) throws -> Transcript {
        var text = try String(contentsOf: directory.appendingPathComponent(name), encoding: .utf8)
        for (key, value) in substitutions { text = text.replacingOccurrences(of: "{{\(key)}}", with: value) }
        var transcript = Transcript(name: name)
        for (number, rawLine) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = String(rawLine)
            func json(_ body: Substring) throws -> JSONValue {
                do { return try JSONParser.parse(String(body)) } catch {
                    throw FormatError(description: "\(name):\(number + 1): \(error)")
                }
            }
            if line.isEmpty || line.hasPrefix("#") { continue }
            if line.hasPrefix("!args ") {
                transcript.arguments += line.dropFirst(6).split(separator: " ").map(String.init)
            } else if line.hasPrefix("-->! ") {
                transcript.steps.append(Step(action: .send(String(line.dropFirst(5)), deliberatelyInvalid: true)))
            } else if line.hasPrefix("--> ") {
                transcript.steps.append(Step(action: .send(String(line.dropFirst(4)), deliberatelyInvalid: false)))
            } else if line == "!framing content-length" {
                transcript.contentLengthFraming = true
            } else if line == "!eof" {
                transcript.steps.append(Step(action: .eof))
            } else if line.hasPrefix("<-- ") {
                guard !transcript.steps.isEmpty else { throw FormatError(description: "\(name):\(number + 1): <-- before any -->") }
                transcript.steps[transcript.steps.count - 1].expected.append(try json(line.dropFirst(4)))
            } else if line.hasPrefix("<~~ ") {
                transcript.optional.append(try json(line.dropFirst(4)))
            } else if line.hasPrefix("!exit ") {
                transcript.exitStatus = Int32(line.dropFirst(6).trimmingCharacters(in: .whitespaces))
            } else {
                throw FormatError(description: "\(name):\(number + 1): unknown line \(line)")
            }
        }
        return transcript
    }

    /// Whether `value` has everything `pattern` names ("*" matches any value).
    public static func matches(_ pattern: JSONValue, _ value: JSONValue) -> Bool {
        switch pattern {
        case .string("*"):
            return true
        case .object(let p):
            guard case .object(let v) = value else { return false }
            return p.allSatisfy { key, sub in v[key].map { matches(sub, $0) } ?? false }
        case .array(let p):
            guard case .array(let v) = value, v.count == p.count else { return false }
            // Batch answers come in any order: each pattern element must match a distinct element.
            var unused = Array(v.indices)
            for sub in p {
                guard let i = unused.firstIndex(where: { matches(sub, v[$0]) }) else { return false }
                unused.remove(at: i)
            }
            return true
        case .int, .double, .rawNumber:
            return pattern.numberValue == value.numberValue && value.numberValue != nil
        default:
            return pattern == value
        }
    }

    /// The ordering key of a message or pattern: its token for events, its id for responses.
    public static func orderKey(_ message: JSONValue) -> String {
        if let token = message["params"]?["token"] { return "token:" + JSONWriter.encodeString(token) }
        if let id = message["id"] { return "id:" + JSONWriter.encodeString(id) }
        return "global"
    }
}
