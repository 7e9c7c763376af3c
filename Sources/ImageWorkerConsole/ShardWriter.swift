import Foundation
import ImageWorkerProtocol
import NIOConcurrencyHelpers

/// `get --output-format webdataset`: img2dataset's WebDataset layout. The rows are cut into
/// shards of `size` (`00000.tar`, `00001.tar`, …); each image was written by the worker into a
/// staging folder and goes into its shard as `KEY.EXT`, with `KEY.txt` (its caption, when the
/// table has one) and `KEY.json` (its metadata, in img2dataset's field names), in row order
/// whatever order downloads end in; the key is the shard's number and the row's place in it.
/// Every row, a failed one too, is counted in the shard's `SSSSS_stats.json`. A shard is written
/// under a temporary name and renamed when its last row is in, its stats last: a shard with its
/// stats is complete, and `--continue` skips it; anything else is written again. Fed the
/// manifest records `GetSession` makes, from the event reader's thread.
public final class ShardWriter: Sendable {
    private struct Open {
        var fd: Int32
        var next: Int
        let end: Int
        var waiting: [Int: JSONObject] = [:]
        var counts: [String: Int] = [:]
        var errors: [String: Int] = [:]
        let started: Date
    }

    private struct State {
        var open: [Int: Open] = [:]
        /// Shards a cancelled row left incomplete: not written in this run.
        var abandoned: Set<Int> = []
        var failure: String?
    }

    let directory: String
    let size: Int
    /// How many rows the input has.
    let rows: Int
    let captioned: Bool
    /// The shards complete when the run began.
    let complete: Set<Int>
    private let state = NIOLockedValueBox(State())

    /// Where the worker writes each image before it goes into its shard (`GetOptions` asks it to).
    public static func staging(in directory: String) -> String { directory + "/.staging" }
    var staging: String { Self.staging(in: directory) }
    var shardCount: Int { (rows + size - 1) / size }

    /// Scans `directory` for complete shards (with `resume`; else every shard is written again)
    /// and drops what an interrupted run left.
    public init(directory: String, size: Int, rows: Int, captioned: Bool, resume: Bool) throws {
        (self.directory, self.size, self.rows, self.captioned) = (directory, size, rows, captioned)
        var complete = Set<Int>()
        if resume {
            for shard in 0..<((rows + size - 1) / size)
            where FileManager.default.fileExists(atPath: directory + "/" + Self.name(shard) + "_stats.json")
                && FileManager.default.fileExists(atPath: directory + "/" + Self.name(shard) + ".tar")
            {
                complete.insert(shard)
            }
        }
        self.complete = complete
        try? FileManager.default.removeItem(atPath: Self.staging(in: directory))
        try FileManager.default.createDirectory(atPath: Self.staging(in: directory), withIntermediateDirectories: true)
    }

    static func name(_ shard: Int) -> String { String(format: "%05d", shard) }

    /// Rows in shards complete before this run (not fetched again).
    public var rowsDone: Int { complete.reduce(0) { $0 + min(size, rows - $1 * size) } }

    public func skips(index: Int) -> Bool { complete.contains(index / size) }

    /// The shard file the row at `index` goes into.
    public func shardPath(_ index: Int) -> String { directory + "/" + Self.name(index / size) + ".tar" }

    /// The key of the row at `index`: its shard's number and its place in it, zero-padded.
    func key(_ index: Int) -> String { Self.key(index, size: size) }

    static func key(_ index: Int, size: Int) -> String {
        let digits = max(1, String(size - 1).count)
        let place = String(index % size)
        return name(index / size) + String(repeating: "0", count: digits - place.count) + place
    }

    /// Where the row's image goes: `00000.tar:000000.jpg`.
    public static func place(index: Int, size: Int, ext: String) -> String {
        "\(name(index / size)).tar:\(key(index, size: size)).\(ext.isEmpty ? "bin" : ext)"
    }

    /// A row ended: its record goes into its shard once every row before it in the shard has.
    public func take(_ record: JSONObject) {
        guard let index = record["index"]?.integerValue.map(Int.init), index >= 0, index < rows else { return }
        let shard = index / size
        state.withLockedValue { s in
            guard !s.abandoned.contains(shard) else {
                if let path = record["path"]?.stringValue { unlink(path) }
                return
            }
            // A cancelled row (the run was interrupted) leaves its shard for the next run.
            if Self.status(record) == "cancelled" {
                s.abandoned.insert(shard)
                if let open = s.open.removeValue(forKey: shard) {
                    Foundation.close(open.fd)
                    unlink(partial(shard))
                }
                return
            }
            if s.open[shard] == nil {
                let path = partial(shard)
                let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0o644)
                guard fd >= 0 else {
                    s.failure = s.failure ?? "cannot write \(path): \(String(cString: strerror(errno)))"
                    return
                }
                s.open[shard] = Open(fd: fd, next: shard * size, end: min(rows, (shard + 1) * size), started: Date())
            }
            guard var shardState = s.open[shard] else { return }
            shardState.waiting[index] = record
            while let next = shardState.waiting.removeValue(forKey: shardState.next) {
                if let problem = write(next, into: &shardState) { s.failure = s.failure ?? problem }
                shardState.next += 1
            }
            if shardState.next == shardState.end {
                if let problem = finish(shard, shardState) { s.failure = s.failure ?? problem }
                s.open[shard] = nil
            } else {
                s.open[shard] = shardState
            }
        }
    }

    /// The run ended: shards not complete are dropped (a rerun with `--continue` writes them), and
    /// so is the staging folder. The first write that failed, if any.
    public func close() -> String? {
        state.withLockedValue { s in
            for (shard, open) in s.open {
                Foundation.close(open.fd)
                unlink(partial(shard))
            }
            s.open = [:]
            try? FileManager.default.removeItem(atPath: staging)
            return s.failure
        }
    }

    private func partial(_ shard: Int) -> String { directory + "/" + Self.name(shard) + ".tar.partial" }

    /// A row's status, as img2dataset's `status` (and what the stats count).
    static func status(_ record: JSONObject) -> String {
        switch record["outcome"]?.stringValue {
        case "ok", "skipped": return "success"
        case "cancelled": return "cancelled"
        default: break
        }
        switch record["error"]?["name"]?.stringValue {
        case "OptedOut": return "opted_out"
        case "Filtered": return "filtered"
        case "BadImageData", "UnsupportedFormat": return "failed_to_resize"
        case "LimitExceeded": return record["error"]?["message"]?.stringValue?.contains("body") == true ? "failed_to_download" : "failed_to_resize"
        case "OutputFailed": return "failed_to_write"
        default: return "failed_to_download"
        }
    }

    private func write(_ record: JSONObject, into shard: inout Open) -> String? {
        let status = Self.status(record)
        shard.counts[status, default: 0] += 1
        if let name = record["error"]?["name"]?.stringValue { shard.errors[name, default: 0] += 1 }
        guard status == "success", let path = record["path"]?.stringValue, let index = record["index"]?.integerValue else { return nil }
        let key = self.key(Int(index))
        defer { unlink(path) }
        guard let bytes = FileManager.default.contents(atPath: path) else { return "cannot read \(path)" }
        let tar = TarWriter(fd: shard.fd)
        let ext = (path as NSString).pathExtension
        var ok = tar.add("\(key).\(ext.isEmpty ? "bin" : ext)", bytes)
        if captioned { ok = ok && tar.add("\(key).txt", Array((record["caption"]?.stringValue ?? "").utf8)) }
        ok = ok && tar.add("\(key).json", JSONWriter.encode(.object(Self.metadata(record, key: key, status: status))))
        return ok ? nil : "cannot write shard \(key): \(String(cString: strerror(errno)))"
    }

    /// A sample's metadata in img2dataset's field names (its readers keep working), then the
    /// table's kept columns.
    static func metadata(_ record: JSONObject, key: String, status: String) -> JSONObject {
        var meta: JSONObject = ["url": record["url"] ?? .null, "key": .string(key), "status": .string(status), "error_message": .null]
        if let caption = record["caption"] { meta["caption"] = caption }
        meta["width"] = record["width"] ?? .null
        meta["height"] = record["height"] ?? .null
        meta["original_width"] = record["sourceWidth"] ?? record["width"] ?? .null
        meta["original_height"] = record["sourceHeight"] ?? record["height"] ?? .null
        meta["orientation"] = record["orientation"] ?? .null
        meta["sha256"] = record["sourceSha256"] ?? record["sha256"] ?? .null
        meta["format"] = record["format"] ?? .null
        meta["bytes"] = record["bytes"] ?? .null
        for (name, value) in record["columns"]?.objectValue ?? [:] where meta[name] == nil { meta[name] = value }
        return meta
    }

    /// The shard's last row is in: the archive ends, takes its name, and its stats are written.
    private func finish(_ shard: Int, _ open: Open) -> String? {
        let name = directory + "/" + Self.name(shard)
        let ended = TarWriter(fd: open.fd).finish() && fsync(open.fd) == 0
        Foundation.close(open.fd)
        guard ended, rename(partial(shard), name + ".tar") == 0 else { return "cannot finish \(name).tar: \(String(cString: strerror(errno)))" }
        let end = Date()
        var stats: JSONObject = [
            "count": JSONValue(open.end - shard * size), "successes": JSONValue(open.counts["success"] ?? 0),
        ]
        for status in ["failed_to_download", "failed_to_resize", "failed_to_write", "opted_out", "filtered"] {
            stats[status] = JSONValue(open.counts[status] ?? 0)
        }
        stats["status_dict"] = .object(JSONObject(open.counts.sorted { $0.key < $1.key }.map { ($0.key, JSONValue($0.value)) }))
        stats["errors"] = .object(JSONObject(open.errors.sorted { $0.key < $1.key }.map { ($0.key, JSONValue($0.value)) }))
        stats["start_time"] = .double(open.started.timeIntervalSince1970)
        stats["end_time"] = .double(end.timeIntervalSince1970)
        stats["duration"] = .double(end.timeIntervalSince(open.started))
        let temporary = name + "_stats.json.partial"
        guard FileManager.default.createFile(atPath: temporary, contents: Data(JSONWriter.encode(.object(stats)) + [0x0A])),
            rename(temporary, name + "_stats.json") == 0
        else { return "cannot write \(name)_stats.json" }
        return nil
    }
}
