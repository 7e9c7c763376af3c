import Foundation
import ImageWorkerProtocol
import InputValidation
import ImageWorkerServer

/// A bulk job's manifest: JSON Lines, one record per input URL, appended as each URL ends, so that
/// an interrupted job keeps what finished and `--continue` fetches only the rest. The same records
/// as the Python and Node clients' (README, "Manifests"):
/// `{"index", "url", "name", "outcome": "ok"|"skipped"|"failed"|"cancelled", "path", "bytes",
/// "format", "width", "height", "sha256", "error": {"name", "message", "code", "attempts"}, "ms"}`,
/// absent fields omitted (`name`: the file name the input line gave).
public enum Manifest {
    /// The record of the URL at `index` (with its own `name` when the input gave one) from its
    /// `download/completed` params; `format`: the `output.format` asked (`original`: the bytes'
    /// format is recorded); `ms`: from its `download/started` to its end, when it started.
    public static func record(index: Int, url: String, name: String? = nil, completed params: JSONValue, format: String, ms: Int64?) -> JSONObject {
        // The URL without its user information: a manifest is shared, logged, uploaded.
        var record: JSONObject = ["index": JSONValue(index), "url": .string(DownloadURL.redacted(url))]
        if let name { record["name"] = .string(name) }
        switch params["outcome"]?.stringValue {
        case "success":
            record["outcome"] = params["skipped"]?.boolValue == true ? "skipped" : "ok"
            if let path = params["path"] { record["path"] = path }
            if let bytes = params["byteLength"] { record["bytes"] = bytes }
            if let written = format == "original" ? params["sourceFormat"]?.stringValue : format { record["format"] = .string(written) }
            for key in ["width", "height", "sha256"] { if let value = params[key] { record[key] = value } }
        case "cancelled":
            record["outcome"] = "cancelled"
        default:
            record["outcome"] = "failed"
            record["error"] = errorSummary(params["error"])
        }
        if let ms { record["ms"] = .int(ms) }
        return record
    }

    /// A refused `download` request's record.
    public static func refused(index: Int, url: String, name: String? = nil, error: JSONValue?) -> JSONObject {
        var record: JSONObject = ["index": JSONValue(index), "url": .string(DownloadURL.redacted(url)), "outcome": "failed", "error": errorSummary(error, name: "InvalidRequest")]
        if let name { record["name"] = .string(name) }
        return record
    }

    private static func errorSummary(_ error: JSONValue?, name fallback: String = "Error") -> JSONValue {
        var summary: JSONObject = [
            "name": .string(error?["data"]?["name"]?.stringValue ?? fallback),
            "message": .string(error?["message"]?.stringValue ?? "failed"),
        ]
        if let code = error?["code"] { summary["code"] = code }
        if let attempts = error?["data"]?["attempts"] { summary["attempts"] = attempts }
        return .object(summary)
    }

    /// The records of a manifest file; lines that do not parse (one cut by a kill) are left out.
    public static func read(_ path: String) throws -> [JSONObject] {
        let data = try Data(contentsOf: URL(fileURLWithPath: path))
        return data.split(separator: UInt8(ascii: "\n")).compactMap { line in
            guard case .object(let record)? = try? JSONParser.parse(Array(line)), record["url"]?.stringValue != nil else { return nil }
            return record
        }
    }

    /// The key of an input line: its URL as recorded (without user information), and its own
    /// name when it gave one.
    public static func key(url: String, name: String?) -> String {
        let shown = DownloadURL.redacted(url)
        return name.map { shown + "\t" + $0 } ?? shown
    }

    /// The records that show their URL as done: `ok` or `skipped`, with the file still there (or
    /// no file asked), by `key`; a key has one per index (an input may list a URL twice), a later
    /// record of a key and index replacing an earlier one.
    public static func done(_ records: [JSONObject]) -> [String: [JSONObject]] {
        var done: [String: [JSONObject]] = [:]
        for record in records {
            guard let url = record["url"]?.stringValue else { continue }
            let key = key(url: url, name: record["name"]?.stringValue)
            var kept = (done[key] ?? []).filter { $0["index"] != record["index"] }
            let outcome = record["outcome"]?.stringValue
            let fileThere = record["path"]?.stringValue.map { FileManager.default.fileExists(atPath: $0) } ?? true
            if outcome == "ok" || outcome == "skipped", fileThere { kept.append(record) }
            done[key] = kept.isEmpty ? nil : kept
        }
        return done
    }

    /// The done record for an input line: the one of its index, else another of its URL (the list
    /// changed), under this index.
    public static func take(_ done: [String: [JSONObject]], url: String, name: String?, index: Int) -> JSONObject? {
        guard let records = done[key(url: url, name: name)], var record = records.first else { return nil }
        if let same = records.first(where: { $0["index"]?.integerValue == Int64(index) }) { return same }
        record["index"] = JSONValue(index)
        return record
    }

    /// One line of the file.
    public static func line(_ record: JSONObject) -> [UInt8] {
        var bytes = JSONWriter.encode(.object(record))
        bytes.append(UInt8(ascii: "\n"))
        return bytes
    }
}

/// Appends records to a manifest file as URLs end (each line written whole, at once).
public final class ManifestWriter: Sendable {
    private let fd: Int32

    /// Opens `path`: emptied, then `kept` written first (the records `--continue` carries over),
    /// through a temporary file renamed into place so a crash never leaves half of them.
    public init(path: String, kept: [JSONObject]) throws {
        let temp = path + ".tmp-\(getpid())"
        var bytes: [UInt8] = []
        for record in kept { bytes += Manifest.line(record) }
        try Data(bytes).write(to: URL(fileURLWithPath: temp))
        guard rename(temp, path) == 0 else {
            let reason = String(cString: strerror(errno))
            unlink(temp)
            throw ManifestError(message: "cannot write \(path): \(reason)")
        }
        fd = open(path, O_WRONLY | O_APPEND | O_CLOEXEC)
        guard fd >= 0 else { throw ManifestError(message: "cannot open \(path): \(String(cString: strerror(errno)))") }
    }

    /// False when the write failed (a full disk).
    @discardableResult
    public func append(_ record: JSONObject) -> Bool {
        FileDescriptorOutput.writeAll(fd, Manifest.line(record))
    }

    deinit { close(fd) }
}

public struct ManifestError: Error, CustomStringConvertible {
    public var message: String
    public var description: String { message }
}
