import Foundation
import ImageWorkerProtocol

/// The state of a `get` run, fed with the worker's messages: a value with no I/O, so what it
/// prints is tested without a terminal. Tokens are `"1"`, `"2"`, … in URL order.
public struct GetSession: Sendable {
    public enum Phase: Sendable, Equatable {
        case waiting, connecting, receiving, finishing, ended
    }

    public enum Outcome: Sendable, Equatable {
        case success(path: String?, detail: String)
        case failed(name: String, message: String)
        case cancelled
    }

    public struct Item: Sendable, Equatable {
        public var url: String
        public var phase: Phase = .waiting
        public var receivedBytes: Int64 = 0
        public var expectedBytes: Int64?
        public var partialImages = 0
        public var outcome: Outcome?
    }

    /// What the caller should do after a message.
    public enum Output: Sendable, Equatable {
        /// One result line for a URL that ended (stdout, human mode).
        case result(String)
        /// The progress board changed.
        case redraw
    }

    public private(set) var items: [Item]

    public init(urls: [String]) {
        items = urls.map { Item(url: $0) }
    }

    public var allEnded: Bool { items.allSatisfy { $0.phase == .ended } }
    public var succeeded: Int { items.filter { if case .success = $0.outcome { true } else { false } }.count }
    public var failed: Int { items.filter { $0.outcome != nil && !isSuccess($0.outcome) }.count }
    public var receivedBytes: Int64 { items.reduce(0) { $0 + $1.receivedBytes } }

    private func isSuccess(_ outcome: Outcome?) -> Bool {
        if case .success = outcome { return true }
        return false
    }

    private func index(of token: JSONValue?) -> Int? {
        guard let text = token?.stringValue, let n = Int(text), n >= 1, n <= items.count else { return nil }
        return n - 1
    }

    /// Takes one message from the worker.
    public mutating func handle(_ message: JSONValue) -> [Output] {
        if let id = message["id"], let error = message["error"] {
            // A refused `download` request (the URL's token never existed).
            guard let n = id.integerValue, n >= 1, n <= items.count, items[Int(n) - 1].phase != .ended else { return [] }
            return end(Int(n) - 1, .failed(name: "InvalidRequest", message: error["message"]?.stringValue ?? "refused"))
        }
        guard let method = message["method"]?.stringValue, let params = message["params"],
            let i = index(of: params["token"]), items[i].phase != .ended
        else { return [] }
        switch method {
        case WorkerEvent.started:
            items[i].phase = .connecting
        case WorkerEvent.response:
            items[i].phase = .receiving
            items[i].expectedBytes = params["expectedBytes"]?.integerValue
        case WorkerEvent.progress:
            items[i].phase = .receiving
            items[i].receivedBytes = params["receivedBytes"]?.integerValue ?? items[i].receivedBytes
            if let expected = params["expectedBytes"]?.integerValue { items[i].expectedBytes = expected }
            if let expected = items[i].expectedBytes, items[i].receivedBytes >= expected { items[i].phase = .finishing }
        case WorkerEvent.partialImage:
            items[i].partialImages = Int(params["sequence"]?.integerValue ?? Int64(items[i].partialImages + 1))
        case WorkerEvent.completed:
            return end(i, Self.outcome(params))
        default:
            return []
        }
        return [.redraw]
    }

    private mutating func end(_ i: Int, _ outcome: Outcome) -> [Output] {
        items[i].phase = .ended
        items[i].outcome = outcome
        return [.result(Self.resultLine(items[i])), .redraw]
    }

    static func outcome(_ params: JSONValue) -> Outcome {
        switch params["outcome"]?.stringValue {
        case "success":
            var parts: [String] = []
            if let w = params["width"]?.integerValue, let h = params["height"]?.integerValue { parts.append("\(w)x\(h)") }
            if let source = params["sourceFormat"]?.stringValue { parts.append(source) }
            else if let mime = params["mimeType"]?.stringValue { parts.append(mime) }
            if let bytes = params["byteLength"]?.integerValue { parts.append(ByteCount.format(bytes)) }
            return .success(path: params["path"]?.stringValue, detail: parts.joined(separator: ", "))
        case "cancelled":
            return .cancelled
        default:
            let error = params["error"]
            return .failed(
                name: error?["data"]?["name"]?.stringValue ?? "Error",
                message: error?["message"]?.stringValue ?? "failed")
        }
    }

    /// `ok      URL -> PATH (227x149, jpeg, 5.6 kB)`, `failed  URL: Name: message`, `cancelled URL`.
    public static func resultLine(_ item: Item) -> String {
        switch item.outcome {
        case .success(let path, let detail)?:
            let target = path.map { " -> \($0)" } ?? ""
            return "ok      \(item.url)\(target) (\(detail))"
        case .failed(let name, let message)?:
            return "failed  \(item.url): \(name): \(message)"
        case .cancelled?:
            return "cancelled \(item.url)"
        case nil:
            return "pending \(item.url)"
        }
    }

    /// `3 downloaded, 1 failed, 1.2 MB in 0.8 s`.
    public func summary(seconds: Double) -> String {
        var text = "\(succeeded) downloaded"
        if failed > 0 { text += ", \(failed) failed" }
        let pending = items.count - succeeded - failed
        if pending > 0 { text += ", \(pending) unfinished" }
        return text + ", \(ByteCount.format(receivedBytes)) in \(String(format: "%.1f", seconds)) s"
    }
}

/// Byte counts for people: `512 B`, `5.6 kB`, `12.3 MB`, `1.02 GB` (powers of 1000, as `ls -h --si`).
public enum ByteCount {
    public static func format(_ bytes: Int64) -> String {
        let b = Double(bytes)
        if bytes < 1000 { return "\(bytes) B" }
        if b < 1e6 { return String(format: "%.1f kB", b / 1e3) }
        if b < 1e9 { return String(format: "%.1f MB", b / 1e6) }
        return String(format: "%.2f GB", b / 1e9)
    }
}
