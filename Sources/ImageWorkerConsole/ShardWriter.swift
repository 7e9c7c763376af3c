import Foundation
import ImageWorkerProtocol
import NIOConcurrencyHelpers

/// `get --output-format webdataset|parquet|files --shard-size N`: img2dataset's shards. The rows
/// are cut into shards of `size`; each image was written by the worker into a staging folder and
/// goes into its shard in row order, whatever order downloads end in; the key is the shard's
/// number and the row's place in it. `webdataset`: `00000.tar` holds `KEY.EXT`, `KEY.txt` (its
/// caption, when the table has one) and `KEY.json` (its metadata, in img2dataset's field names),
/// and `00000.parquet` beside it holds every row's metadata, a failed row's too; `folders`
/// (img2dataset's `files`): the same three files a sample in the folder `00000/`; `parquet`: the
/// image's bytes are a column of `00000.parquet`. Every row is counted in `00000_stats.json`.
/// A shard's files are written under temporary names and renamed when its last row is in, its
/// stats last: a shard with its stats is complete, and `--continue` skips it; anything else is
/// written again. Fed the manifest records `GetSession` makes, from the event reader's thread.
public final class ShardWriter: Sendable {
    private struct Open {
        /// The archive (`webdataset`).
        var tar: Int32?
        /// The folder, under its temporary name (`folders`).
        var folder: String?
        var parquetFD: Int32
        var table: ParquetWriter
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
    let layout: GetOptions.OutputLayout
    let naming: Naming
    var size: Int { naming.size }
    /// How many rows the input has.
    let rows: Int
    let captioned: Bool
    /// The table's columns kept beside each row (`--save-columns`).
    let saved: [String]
    /// The Parquet column of the image's bytes (`parquet`): named for the format, as img2dataset's.
    let imageColumn: String?
    let parquetColumns: [ParquetWriter.Column]
    /// The shards complete when the run began.
    let complete: Set<Int>
    private let state = NIOLockedValueBox(State())

    /// Where the worker writes each image before it goes into its shard (`GetOptions` asks it
    /// to): a folder of the run's own, named by its first shard, as runs of other parts of the
    /// table (`--first-shard`) may share `directory`.
    public static func staging(in directory: String, naming: Naming) -> String { directory + "/.staging-" + naming.name(0) }
    var staging: String { Self.staging(in: directory, naming: naming) }
    var shardCount: Int { naming.shards(rows: rows) }

    /// Scans `directory` for complete shards (with `resume`; else every shard is written again)
    /// and drops what an interrupted run left.
    /// `format`: the output format asked (its extension names the image column of `parquet`).
    public init(
        directory: String, layout: GetOptions.OutputLayout, naming: Naming, rows: Int, captioned: Bool, saved: [String] = [],
        format: String, resume: Bool
    ) throws {
        (self.directory, self.layout, self.naming, self.rows, self.captioned, self.saved) = (directory, layout, naming, rows, captioned, saved)
        let size = naming.size
        let imageColumn = layout == .parquet ? (format == "original" ? "image" : format == "jpeg" ? "jpg" : format) : nil
        self.imageColumn = imageColumn
        parquetColumns = Self.parquetColumns(captioned: captioned, saved: saved, imageColumn: imageColumn)
        var complete = Set<Int>()
        if resume {
            let files = [layout.shardFile, ".parquet", "_stats.json"].compactMap { $0 }
            let shards = naming.shards(rows: rows)
            for shard in 0..<shards where files.allSatisfy({ FileManager.default.fileExists(atPath: naming.path(shard, in: directory) + $0) }) {
                // A shard is complete for this run when it holds the rows this run would put in it:
                // cut at the same size, and as many (the last of a table that grew is written again).
                let stats = naming.path(shard, in: directory) + "_stats.json"
                let written = try? JSONParser.parse(Array(FileManager.default.contents(atPath: stats) ?? Data()))
                let (counted, cut) = (written?["count"]?.integerValue, written?["shard_size"]?.integerValue)
                let expected = min(size, rows - shard * size)
                if cut.map({ $0 != size }) ?? (counted != Int64(expected) && shard < shards - 1) {
                    throw Mismatch(
                        description: "\(stats): " + (cut.map { "shards of \($0) rows" } ?? "\(counted.map(String.init) ?? "no") rows")
                            + " where this run's hold \(cut == nil ? expected : size): --continue with the --shard-size of the run that "
                            + "wrote it, or into another folder")
                }
                if counted == Int64(expected) { complete.insert(shard) }
            }
        }
        self.complete = complete
        try? FileManager.default.removeItem(atPath: staging)
        try FileManager.default.createDirectory(atPath: staging, withIntermediateDirectories: true)
    }

    /// How shards and samples are named: shards are numbered from `first` (a distributed run
    /// gives each task its own), `size` rows each; a key is its shard's number and the row's place
    /// in it, zero-padded.
    public struct Naming: Sendable {
        public let size: Int
        public let first: Int

        public init(size: Int, first: Int = 0) { (self.size, self.first) = (size, first) }

        /// The file name (without extension) of the run's shard `shard` (counted from 0).
        func name(_ shard: Int) -> String { String(format: "%05d", first + shard) }

        /// The shard's path in `directory` (without extension).
        func path(_ shard: Int, in directory: String) -> String { directory + "/" + name(shard) }

        /// How many shards `rows` rows make.
        func shards(rows: Int) -> Int { (rows + size - 1) / size }

        /// The key of the row at `index`.
        func key(_ index: Int) -> String {
            let digits = max(1, String(size - 1).count)
            let place = String(index % size)
            return name(index / size) + String(repeating: "0", count: digits - place.count) + place
        }

        /// Where the row's image goes: `00000.tar:000000.jpg` (`webdataset`), `00000/000000.jpg`
        /// (`folders`), `00000.parquet:000000`.
        public func place(index: Int, ext: String, layout: GetOptions.OutputLayout) -> String {
            let file = "\(key(index)).\(ext.isEmpty ? "bin" : ext)"
            switch layout {
            case .parquet: return "\(name(index / size)).parquet:\(key(index))"
            case .folders: return "\(name(index / size))/\(file)"
            default: return "\(name(index / size)).tar:\(file)"
            }
        }
    }

    /// Rows in shards complete before this run (not fetched again).
    public var rowsDone: Int { complete.reduce(0) { $0 + min(size, rows - $1 * size) } }

    public func skips(index: Int) -> Bool { complete.contains(index / size) }

    /// Where the row at `index`, staged at `staged`, is kept: its shard's file (its own in `folders`).
    public func shardPath(_ index: Int, staged: String) -> String {
        layout == .folders
            ? directory + "/" + naming.place(index: index, ext: (staged as NSString).pathExtension, layout: layout)
            : naming.path(index / size, in: directory) + (layout.shardFile ?? ".parquet")
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
                if let open = s.open.removeValue(forKey: shard) { drop(shard, open) }
                return
            }
            // (Taken out of the table while it changes: a copy left there would make every append
            // copy the shard's buffered rows.)
            var shardState: Open
            if let open = s.open.removeValue(forKey: shard) {
                shardState = open
            } else {
                do throws(WriteProblem) {
                    shardState = try start(shard)
                } catch {
                    s.failure = s.failure ?? error.message
                    return
                }
            }
            shardState.waiting[index] = record
            while let next = shardState.waiting.removeValue(forKey: shardState.next) {
                if let problem = write(next, into: &shardState) { s.failure = s.failure ?? problem }
                shardState.next += 1
            }
            if shardState.next == shardState.end {
                if let problem = finish(shard, &shardState) { s.failure = s.failure ?? problem }
            } else {
                s.open[shard] = shardState
            }
        }
    }

    /// The run ended: shards not complete are dropped (a rerun with `--continue` writes them), and
    /// so is the staging folder. The first write that failed, if any.
    public func close() -> String? {
        state.withLockedValue { s in
            for (shard, open) in s.open { drop(shard, open) }
            s.open = [:]
            try? FileManager.default.removeItem(atPath: staging)
            return s.failure
        }
    }

    /// `--continue` over shards another shard size (or table) wrote.
    public struct Mismatch: Error, CustomStringConvertible {
        public let description: String
    }

    private struct WriteProblem: Error {
        let message: String
    }

    /// A shard's first row ended: its files are opened under their temporary names.
    private func start(_ shard: Int) throws(WriteProblem) -> Open {
        func create(_ path: String) throws(WriteProblem) -> Int32 {
            let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0o644)
            guard fd >= 0 else { throw WriteProblem(message: "cannot write \(path): \(String(cString: strerror(errno)))") }
            return fd
        }
        let parquetFD = try create(partial(shard, ".parquet"))
        var tar: Int32?
        var folder: String?
        do throws(WriteProblem) {
            if layout == .webdataset { tar = try create(partial(shard, ".tar")) }
            if layout == .folders {
                let path = partial(shard, "")
                try? FileManager.default.removeItem(atPath: path)  // (a killed run may have left one)
                guard mkdir(path, 0o755) == 0 else { throw WriteProblem(message: "cannot make \(path): \(String(cString: strerror(errno)))") }
                folder = path
            }
        } catch {
            Foundation.close(parquetFD)
            throw error
        }
        return Open(
            tar: tar, folder: folder, parquetFD: parquetFD, table: ParquetWriter(fd: parquetFD, columns: parquetColumns),
            next: shard * size, end: min(rows, (shard + 1) * size), started: Date())
    }

    /// A shard not finished in this run: its temporary files go.
    private func drop(_ shard: Int, _ open: Open) {
        Foundation.close(open.parquetFD)
        unlink(partial(shard, ".parquet"))
        if let tar = open.tar {
            Foundation.close(tar)
            unlink(partial(shard, ".tar"))
        }
        if let folder = open.folder { try? FileManager.default.removeItem(atPath: folder) }
    }

    private func partial(_ shard: Int, _ ext: String) -> String { naming.path(shard, in: directory) + ext + ".partial" }

    private func write(_ record: JSONObject, into shard: inout Open) -> String? {
        let status = Self.status(record)
        shard.counts[status, default: 0] += 1
        if let name = record["error"]?["name"]?.stringValue { shard.errors[name, default: 0] += 1 }
        let key = naming.key(shard.next)
        var image: (bytes: [UInt8], ext: String, size: Int)?
        if status == "success", let path = record["path"]?.stringValue {
            let ext = (path as NSString).pathExtension.isEmpty ? "bin" : (path as NSString).pathExtension
            if let folder = shard.folder {
                // The staged file is the sample's: it takes its name in the shard's folder.
                var info = stat()
                guard stat(path, &info) == 0, rename(path, "\(folder)/\(key).\(ext)") == 0 else {
                    let problem = "cannot move \(path) into \(folder): \(String(cString: strerror(errno)))"
                    unlink(path)
                    return problem
                }
                image = ([], ext, Int(info.st_size))
            } else {
                defer { unlink(path) }
                guard let bytes = FileManager.default.contents(atPath: path) else { return "cannot read \(path)" }
                image = (Array(bytes), ext, bytes.count)
            }
        }
        let meta = Self.metadata(record, key: key, status: status, imageBytes: image?.size, captioned: captioned)
        if let image, let problem = addSample(key, image, caption: record["caption"]?.stringValue, meta: meta, to: shard) { return problem }
        var row = parquetColumns.map { column in Self.parquetValue(meta[column.name], as: column.type) }
        if imageColumn != nil { row[row.count - 1] = image.map { .bytes($0.bytes) } }
        return shard.table.append(row) ? nil : "cannot write \(naming.name(shard.next / size)).parquet: \(String(cString: strerror(errno)))"
    }

    /// A sample's image (`webdataset`; in `folders` it is there already), caption and metadata.
    private func addSample(_ key: String, _ image: (bytes: [UInt8], ext: String, size: Int), caption: String?, meta: JSONObject, to shard: Open) -> String? {
        var files = [(name: String, bytes: [UInt8])]()
        if shard.tar != nil { files.append(("\(key).\(image.ext)", image.bytes)) }
        if captioned { files.append(("\(key).txt", Array((caption ?? "").utf8))) }
        files.append(("\(key).json", JSONWriter.encode(.object(meta))))
        let written: Bool
        if let tar = shard.tar {
            let writer = TarWriter(fd: tar)
            written = files.allSatisfy { writer.add($0.name, $0.bytes) }
        } else if let folder = shard.folder {
            written = files.allSatisfy { FileManager.default.createFile(atPath: "\(folder)/\($0.name)", contents: Data($0.bytes)) }
        } else {
            return nil
        }
        return written ? nil : "cannot write shard \(key): \(String(cString: strerror(errno)))"
    }

    /// The shard's last row is in: its files end and take their names, and its stats are written.
    private func finish(_ shard: Int, _ open: inout Open) -> String? {
        let name = naming.path(shard, in: directory)
        var ended = open.table.finish() && fsync(open.parquetFD) == 0
        Foundation.close(open.parquetFD)
        if let tar = open.tar {
            ended = ended && TarWriter(fd: tar).finish() && fsync(tar) == 0
            Foundation.close(tar)
        }
        if open.folder != nil {
            // (A folder of this name from an earlier run, complete but without its stats, goes.)
            try? FileManager.default.removeItem(atPath: name)
        }
        for ext in [".parquet", layout.shardFile].compactMap({ $0 }) where ended {
            ended = rename(partial(shard, ext), name + ext) == 0
        }
        guard ended else { return "cannot finish shard \(name): \(String(cString: strerror(errno)))" }
        let end = Date()
        var stats: JSONObject = [
            "count": JSONValue(open.end - shard * size), "successes": JSONValue(open.counts["success"] ?? 0),
            "shard_size": JSONValue(size),
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

extension GetOptions.OutputLayout {
    /// What a shard has beside its Parquet table and stats: an archive, a folder (named as the
    /// shard), or nothing.
    var shardFile: String? {
        switch self {
        case .webdataset: return ".tar"
        case .folders: return ""
        case .files, .parquet: return nil
        }
    }
}
