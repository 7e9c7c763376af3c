import Foundation
import ImageWorkerProtocol
import InputValidation
import ImageWorkerServer

/// A bulk job's manifest: JSON Lines, one record per input URL, appended as each URL ends, so that
/// an interrupted job keeps what finished and `--continue` fetches only the rest. The same records
/// as the Python and Node clients', as `protocol/schema/manifest-record.schema.json` defines them
/// (the tests of all three check what they write against it; GUIDE.md, "Manifests"), absent
/// fields omitted (`name`: the file name the input line gave).
public enum Manifest {
    /// The record of the URL at `index` (with its own `name` when the input gave one) from its
    /// `download/completed` params; `format`: the `output.format` asked (`original`: the bytes'
    /// format is recorded); `ms`: from its `download/started` to its end, when it started.
    /// `row`: a table row's caption and kept columns.
    public static func record(
        index: Int, url: String, name: String? = nil, row: (caption: String?, columns: JSONObject) = (nil, [:]), completed params: JSONValue,
        format: String, ms: Int64?
    ) -> JSONObject {
        // The URL without its user information: a manifest is shared, logged, uploaded.
        var record: JSONObject = ["index": JSONValue(index), "url": .string(DownloadURL.redacted(url))]
        if let name { record["name"] = .string(name) }
        add(row, to: &record)
        switch params["outcome"]?.stringValue {
        case "success":
            record["outcome"] = params["skipped"]?.boolValue == true ? "skipped" : "ok"
            if let path = params["path"] { record["path"] = path }
            if let bytes = params["byteLength"] { record["bytes"] = bytes }
            if let written = format == "original" ? params["sourceFormat"]?.stringValue : format { record["format"] = .string(written) }
            for key in ["width", "height", "sha256", "sourceSha256", "sourceWidth", "sourceHeight", "orientation"] { if let value = params[key] { record[key] = value } }
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
    public static func refused(
        index: Int, url: String, name: String? = nil, row: (caption: String?, columns: JSONObject) = (nil, [:]), error: JSONValue?
    ) -> JSONObject {
        var record: JSONObject = ["index": JSONValue(index), "url": .string(DownloadURL.redacted(url)), "outcome": "failed", "error": errorSummary(error, name: "InvalidRequest")]
        if let name { record["name"] = .string(name) }
        add(row, to: &record)
        return record
    }

    /// A table row's caption and kept columns, in a record.
    private static func add(_ row: (caption: String?, columns: JSONObject), to record: inout JSONObject) {
        if let caption = row.caption { record["caption"] = .string(caption) }
        if !row.columns.isEmpty { record["columns"] = .object(row.columns) }
    }

    private static func errorSummary(_ error: JSONValue?, name fallback: String = "Error") -> JSONValue {
        var summary: JSONObject = [
            "name": .string(error?["data"]?["name"]?.stringValue ?? fallback),
            "message": .string(error?["message"]?.stringValue ?? "failed"),
        ]
        if let code = error?["code"] { summary["code"] = code }
        if let attempts = error?["data"]?["attempts"] { summary["attempts"] = attempts }
        if let limit = error?["data"]?["limit"] { summary["limit"] = limit }
        return .object(summary)
    }

    /// The key of an input line: its URL as recorded (without user information), and its own
    /// name when it gave one.
    public static func key(url: String, name: String?) -> String {
        let shown = DownloadURL.redacted(url)
        return name.map { shown + "\t" + $0 } ?? shown
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
    private let path: String
    private let temporary: String

    /// Starts the new manifest in a temporary file beside `path`: the records `--continue`
    /// carries over go in first (`carry`), then `commit` renames it into place, so a crash never
    /// leaves half of them, and the earlier manifest is read while this one is written. The
    /// temporary file is made new (`O_EXCL`, no link followed) under a name nobody can guess, so
    /// nothing planted beside the manifest is written through; records go on to the same file
    /// once it has the manifest's name.
    public init(path: String) throws {
        self.path = path
        var made: (name: String, fd: Int32)?
        for _ in 0..<16 {
            let name = path + ".tmp-" + String(UInt64.random(in: 0...UInt64.max), radix: 36)
            let fd = open(name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_APPEND | O_CLOEXEC, 0o644)
            if fd >= 0 {
                made = (name, fd)
                break
            }
            guard errno == EEXIST else { break }
        }
        guard let made else { throw ManifestError(message: "cannot write \(path): \(String(cString: strerror(errno)))") }
        (temporary, fd) = made
    }

    /// A record carried over, as its line (ending in a newline).
    public func carry(_ line: [UInt8]) throws {
        guard FileDescriptorOutput.writeAll(fd, line) else {
            throw ManifestError(message: "cannot write \(path): \(String(cString: strerror(errno)))")
        }
    }

    /// The run stops before `commit` (the earlier manifest could not be read): the temporary file
    /// goes, and the earlier manifest stays as it was.
    public func discard() {
        unlink(temporary)
    }

    /// The carried records are all in: the file takes the manifest's name.
    public func commit() throws {
        guard rename(temporary, path) == 0 else {
            let reason = String(cString: strerror(errno))
            unlink(temporary)
            throw ManifestError(message: "cannot write \(path): \(reason)")
        }
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
