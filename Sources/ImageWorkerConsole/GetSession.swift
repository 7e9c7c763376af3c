import Foundation
import ImageWorkerProtocol
import InputValidation

/// The state of a `get` run, fed with the worker's messages: a value with no I/O, so what it
/// prints is tested without a terminal. Tokens are `"1"`, `"2"`, … by input position.
public struct GetSession: Sendable {
    public enum Phase: Sendable, Equatable {
        case waiting, connecting, receiving, finishing, ended
    }

    public enum Outcome: Sendable, Equatable {
        case success(path: String?, detail: String)
        /// `skipExisting` found the file: kept, not fetched.
        case kept(path: String?, detail: String)
        case failed(name: String, message: String)
        case cancelled
    }

    public struct Item: Sendable, Equatable {
        public var url: String
        /// The URL as shown and recorded: without its user information (a password).
        public var shownURL: String { DownloadURL.redacted(url) }
        /// The URL's position in the input (0-based); its token is `index + 1`.
        public var index: Int
        /// The file name its input line gave.
        public var name: String?
        /// Its table row's caption and kept columns (the manifest's record), and the SHA-256 its
        /// bytes must have.
        public var caption: String?
        public var columns = JSONObject()
        public var expectedSHA256: String?
        /// When its `download/started` came (seconds on the caller's clock).
        public var startedAt: Double?
        public var phase: Phase = .waiting
        public var receivedBytes: Int64 = 0
        public var expectedBytes: Int64?
        public var partialImages = 0
        public var outcome: Outcome?
    }

    /// What `timingSummary` takes of a download's `metrics`: a few numbers, not the event's JSON
    /// (a run of a million URLs keeps one per URL).
    struct Timing: Sendable {
        /// The phases: the metrics key each is read from, and its label in the summary.
        static let phases = [
            ("queuedMs", "queued"), ("connectMs", "connect"), ("ttfbMs", "ttfb"), ("transferMs", "transfer"), ("decodeMs", "decode"),
            ("writeMs", "write"),
        ]
        /// Milliseconds of each phase, in `phases` order (NaN: it did not happen): a vector, so
        /// that no timing allocates.
        private var milliseconds = SIMD8<Float>(repeating: .nan)
        let attempts: Int32
        let fromCache: Bool
        let http2: Bool

        init(_ metrics: JSONValue) {
            for (i, (key, _)) in Self.phases.enumerated() {
                if let value = metrics[key]?.numberValue { milliseconds[i] = Float(value) }
            }
            attempts = Int32(clamping: metrics["attempts"]?.integerValue ?? 0)
            fromCache = metrics["fromCache"]?.boolValue == true
            http2 = metrics["httpVersion"]?.stringValue == "2"
        }

        func phase(_ i: Int) -> Float? {
            milliseconds[i].isNaN ? nil : milliseconds[i]
        }
    }

    /// What `timingSummary` counts of every timing, sampled or not.
    struct TimingCounts: Sendable {
        private(set) var count = 0
        /// Downloads that went through each phase, in `Timing.phases` order.
        private(set) var phases = [Int](repeating: 0, count: Timing.phases.count)
        private(set) var cached = 0
        private(set) var http2 = 0
        private(set) var retried = 0

        mutating func add(_ timing: Timing) {
            count += 1
            for i in phases.indices where timing.phase(i) != nil { phases[i] += 1 }
            if timing.fromCache { cached += 1 }
            if timing.http2 { http2 += 1 }
            if timing.attempts > 1 { retried += 1 }
        }
    }

    /// What the caller should do after a message.
    public enum Output: Sendable, Equatable {
        /// One result line for a URL that ended (stdout, human mode).
        case result(String)
        /// The progress board changed.
        case redraw
        /// A URL ended: its manifest record (only when `recordFormat` is set).
        case record(JSONObject)
        /// A file written for a URL that then failed (its bytes are not the table's): to remove.
        case remove(String)
    }

    /// The URLs fed and not ended, by token number (`index + 1`, also the request id). An ended
    /// URL leaves only its counts and timing: a run of millions holds what is under way.
    private var live: [Int: Item] = [:]
    /// URLs fed so far, and ended so far.
    public private(set) var registered = 0
    public private(set) var ended = 0
    /// How many URLs the run has, once known (nil: still being read).
    public var total: Int?
    public private(set) var succeeded = 0
    public private(set) var kept = 0
    public private(set) var failed = 0
    public private(set) var cancelled = 0
    /// Of `cancelled`: those cancelled before they started.
    public private(set) var cancelledWaiting = 0
    /// The run was interrupted (Ctrl-C, SIGTERM): requests refused from then on are not
    /// failures, only not done, and the summary says so.
    public var interrupted = false
    /// Originals saved without every pixel decoded: how they were checked (`header`, `none`);
    /// nil when each was decoded (`--verify full`, or a decoded format).
    public var originalCheck: GetOptions.Verification?
    private var endedBytes: Int64 = 0
    /// The downloads' timings for the medians: the first `timingSample`, then a uniform sample of
    /// that many (reservoir sampling), so a run of millions holds what one of 100,000 does;
    /// `timed` counts every one.
    private(set) var timings: [Timing] = []
    private(set) var timed = TimingCounts()
    var timingSample = 100_000
    /// The `output.format` asked, when the caller keeps a manifest: each end gives a `.record`.
    public var recordFormat: String?
    /// `--output-format webdataset|parquet`: rows a shard and the layout (a result line names the
    /// sample's shard and key).
    public var shards: (naming: ShardWriter.Naming, layout: GetOptions.OutputLayout)?

    /// Items for every URL, tokens `"1"`, `"2"`, … in order.
    public init(urls: [String]) {
        self.init(entries: urls.enumerated().map { GetEntry(url: $1, index: $0) })
    }

    /// Items for these input lines (tokens from their indexes: a resumed run keeps them).
    public init(entries: [GetEntry]) {
        for entry in entries { register(entry) }
        total = entries.count
    }

    /// No URL yet: they come with `register` as they are fed.
    public init() {}

    /// A URL about to be requested (before any message of its token can arrive).
    public mutating func register(_ entry: GetEntry) {
        guard live[entry.index + 1] == nil else { return }
        live[entry.index + 1] = Item(
            url: entry.url, index: entry.index, name: entry.name, caption: entry.caption, columns: entry.columns, expectedSHA256: entry.expectedSHA256)
        registered += 1
    }

    /// The URLs under way or waiting, in input order.
    public var items: [Item] { live.values.sorted { $0.index < $1.index } }
    /// The URLs of the run: all of them when known, else those fed so far.
    public var count: Int { total ?? registered }
    /// Under way: started and not ended (nil when the downloads are quiet: no event says so).
    public var running: Int? { quiet ? nil : live.values.count { $0.phase != .waiting } }
    /// The downloads were asked for their `completed` event alone (`GetOptions.quietEvents`).
    public var quiet = false

    public var receivedBytes: Int64 { live.values.reduce(endedBytes) { $0 + $1.receivedBytes } }
    /// Every URL downloaded or kept.
    public var allDone: Bool { succeeded + kept == count && live.isEmpty }

    /// For `--json`: a refused `download`'s error response with the request's URL added to its
    /// `data` (so that every failure names its URL); nil for any other message (written as is).
    public func withURL(_ message: JSONValue) -> JSONValue? {
        guard case .object(var response) = message, case .object(var error)? = response["error"],
            let id = response["id"]?.integerValue, let item = live[Int(id)]
        else { return nil }
        var data: JSONObject
        switch error["data"] {
        case nil, .null?: data = [:]
        case .object(let object)?: data = object
        default: return nil
        }
        data["url"] = .string(DownloadURL.redacted(item.url))
        error["data"] = .object(data)
        response["error"] = .object(error)
        return .object(response)
    }

    private func number(of token: JSONValue?) -> Int? {
        guard let text = token?.stringValue, let n = Int(text), live[n] != nil else { return nil }
        return n
    }

    /// Takes one message from the worker; `now`: seconds on any clock, for the manifest's `ms`.
    public mutating func handle(_ message: JSONValue, now: Double? = nil) -> [Output] {
        if let id = message["id"], let error = message["error"] {
            // A refused `download` request (the URL's token never existed).
            guard let n = id.integerValue.map(Int.init), let item = live[n] else { return [] }
            if interrupted {
                // Sent as the run was being stopped: not a failure, and not recorded (a
                // `--continue` fetches it); the summary counts it not done.
                live[n] = nil
                return [.redraw]
            }
            var outputs = end(n, .failed(name: "InvalidRequest", message: error["message"]?.stringValue ?? "refused"))
            if recordFormat != nil {
                outputs.append(.record(Manifest.refused(index: item.index, url: item.url, name: item.name, row: (item.caption, item.columns), error: error)))
            }
            return outputs
        }
        guard let method = message["method"]?.stringValue, let params = message["params"], let n = number(of: params["token"]) else { return [] }
        switch method {
        case WorkerEvent.started:
            live[n]!.phase = .connecting
            live[n]!.startedAt = now
        case WorkerEvent.response:
            live[n]!.phase = .receiving
            live[n]!.expectedBytes = params["expectedBytes"]?.integerValue
        case WorkerEvent.progress:
            live[n]!.phase = .receiving
            live[n]!.receivedBytes = params["receivedBytes"]?.integerValue ?? live[n]!.receivedBytes
            if let expected = params["expectedBytes"]?.integerValue { live[n]!.expectedBytes = expected }
            if let expected = live[n]!.expectedBytes, live[n]!.receivedBytes >= expected { live[n]!.phase = .finishing }
        case WorkerEvent.partialImage:
            live[n]!.partialImages = Int(params["sequence"]?.integerValue ?? Int64(live[n]!.partialImages + 1))
        case WorkerEvent.completed:
            if let metrics = params["metrics"] {
                let timing = Timing(metrics)
                // The downloads that reached the network or the cache (not those cancelled in the queue).
                if timing.attempts > 0 || timing.fromCache {
                    timed.add(timing)
                    if timings.count < timingSample {
                        timings.append(timing)
                    } else if case let slot = Int.random(in: 0..<timed.count), slot < timingSample {
                        timings[slot] = timing
                    }
                    // A quiet download's first event: it did start.
                    if live[n]!.phase == .waiting { live[n]!.phase = .finishing }
                }
            }
            // A quiet download's bytes received, which no progress event gave (a kept file's were not).
            if quiet, params["outcome"]?.stringValue == "success", params["skipped"]?.boolValue != true,
                let bytes = params["byteLength"]?.integerValue
            {
                live[n]!.receivedBytes = bytes
            }
            let item = live[n]!
            var outputs: [Output] = []
            var params = params
            // The table's SHA-256 for the row (`--verify-hash-col`): bytes that differ fail it, and
            // the file written goes.
            if let expected = item.expectedSHA256, params["outcome"]?.stringValue == "success",
                let actual = (params["sourceSha256"] ?? params["sha256"])?.stringValue, actual != expected
            {
                if let path = params["path"]?.stringValue { outputs.append(.remove(path)) }
                params = Self.failed(params, name: "HashMismatch", message: "the bytes' SHA-256 is \(actual), the table says \(expected)")
            }
            var outcome = Self.outcome(params)
            if let shards, case .success(let path?, let detail) = outcome {
                // (Written into the staging folder, on its way into its shard: where it ends up.)
                let ext = (path as NSString).pathExtension
                outcome = .success(path: shards.naming.place(index: item.index, ext: ext, layout: shards.layout), detail: detail)
            }
            outputs += end(n, outcome)
            if let recordFormat {
                let ms = now.flatMap { now in item.startedAt.map { Int64(((now - $0) * 1000).rounded()) } }
                outputs.append(
                    .record(
                        Manifest.record(
                            index: item.index, url: item.url, name: item.name, row: (item.caption, item.columns), completed: params,
                            format: recordFormat, ms: ms)))
            }
            return outputs
        default:
            return []
        }
        return [.redraw]
    }

    /// The URL of token `n` ended: counted, and no longer held.
    private mutating func end(_ n: Int, _ outcome: Outcome) -> [Output] {
        guard var item = live.removeValue(forKey: n) else { return [] }
        let started = item.phase != .waiting
        item.phase = .ended
        item.outcome = outcome
        ended += 1
        endedBytes += item.receivedBytes
        switch outcome {
        case .success: succeeded += 1
        case .kept: kept += 1
        case .failed: failed += 1
        case .cancelled:
            cancelled += 1
            // Cancelled before it started (Ctrl-C with hundreds queued): counted in the summary,
            // not a line each.
            if !started {
                cancelledWaiting += 1
                return [.redraw]
            }
        }
        return [.result(Self.resultLine(item)), .redraw]
    }

    /// A success's params turned into a failure's, with the get's own error `name`.
    static func failed(_ params: JSONValue, name: String, message: String) -> JSONValue {
        var object = params.objectValue ?? [:]
        object["outcome"] = "error"
        object["error"] = ["message": .string(message), "data": ["name": .string(name)]]
        return .object(object)
    }

    static func outcome(_ params: JSONValue) -> Outcome {
        switch params["outcome"]?.stringValue {
        case "success":
            var parts: [String] = []
            if let w = params["width"]?.integerValue, let h = params["height"]?.integerValue { parts.append("\(w)x\(h)") }
            if let frames = params["frames"]?.integerValue, frames > 1 { parts.append("\(frames) frames") }
            if let source = params["sourceFormat"]?.stringValue { parts.append(source) }
            else if let mime = params["mimeType"]?.stringValue { parts.append(mime) }
            if let bytes = params["byteLength"]?.integerValue { parts.append(ByteCount.format(bytes)) }
            if params["skipped"]?.boolValue == true {
                return .kept(path: params["path"]?.stringValue, detail: (["exists"] + parts).joined(separator: ", "))
            }
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
