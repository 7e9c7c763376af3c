import Foundation
import ImageDecoding
import ImageWorkerConsole
import ImageWorkerProtocol
import Testing
import TestSupport

/// `get --output-format webdataset|parquet|files --shard-size N`: img2dataset's shards from a
/// table, read back with `tar`, the file system and a Parquet reader; every row counted in its shard's stats and given a row of its
/// Parquet table (failed, filtered and opted-out rows too); the same bytes from a rerun, and from
/// a run interrupted by SIGINT then `--continue`d.
@Suite struct GetShardTests {
    /// `tar`'s listing of a shard, and a member's bytes.
    static func tar(_ arguments: [String]) throws -> Data {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["tar"] + arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0, "tar \(arguments)")
        return data
    }

    static func members(_ shard: URL) throws -> [String] {
        String(decoding: try tar(["-tf", shard.path]), as: UTF8.self).split(separator: "\n").map(String.init)
    }

    static func json(_ url: URL) throws -> JSONValue { try JSONParser.parse(Array(try Data(contentsOf: url))) }

    /// A table of 7 rows in shards of 3 (keys: the shard's 5 digits and the row's place in it, one
    /// digit for 3): images, captions and metadata in row order; a 404, two filtered images (the
    /// PNGs are 32 x 32) and an opted-out one (img2dataset's directives are honoured by default)
    /// only in the stats.
    func table(_ server: TestHTTPServer, _ dir: URL, gate: String? = nil) throws -> URL {
        let held = gate.map { "?gate=\($0)" } ?? ""
        let rows = [
            "url,caption,license",
            "\(server.url("/files/testorig.jpg")),\"a boat, at sea\",cc-by",
            "\(server.url("/status/404")),gone,cc0",
            "\(server.url("/files/basn2c08.png")),\"a tiny\ntile\",",
            "\(server.url("/files/testorig.jpg?robots=noai")),opted out,cc-by",
            "\(server.url("/files/test.webp")),a webp,mit",
            "\(server.url("/files/basi6a08.png?tiny=1")),filtered,x",
            "\(server.url("/files/testimgp.jpg\(held)")),progressive,y",
        ]
        let url = dir.appendingPathComponent("rows.csv")
        try Data((rows.joined(separator: "\n") + "\n").utf8).write(to: url)
        return url
    }

    func arguments(_ table: URL, _ out: URL, layout: String = "webdataset") -> [String] {
        ["get", "-i", table.path, "--caption-col", "caption", "--save-columns", "license", "--output-format", layout, "--shard-size", "3",
         "-o", out.path, "--width", "48", "--height", "48", "--format", "jpeg", "--min-image-size", "33"]
    }

    /// `get` over the table into `shards` in a folder of its own, which `body` looks at (with
    /// `manifest`, `shards.jsonl` beside it).
    func shards(layout: String, manifest: Bool = false, _ body: (_ server: TestHTTPServer, _ run: GetCommandTests.Run, _ out: URL) throws -> Void) async throws {
        let server = try await E2E.startServer()
        defer { Task { await server.shutdown() } }
        server.setFile("basi6a08.png", Array(try Data(contentsOf: E2E.samples.appendingPathComponent("basi6a08.png"))))
        let dir = try E2E.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let out = dir.appendingPathComponent("shards")
        let run = try await GetCommandTests.run(
            arguments(try table(server, dir), out, layout: layout) + (manifest ? ["--manifest", out.appendingPathExtension("jsonl").path] : []))
        #expect(run.status == 1, "\(run)")
        try body(server, run, out)
    }

    @Test func shardsHoldTheRowsInOrderAndTheStatsCountThemAll() async throws {
        try await shards(layout: "webdataset") { server, run, out in
            #expect(run.lines.contains { $0.contains("-> 00000.tar:000000.jpg") }, "\(run.lines)")
            let names = try FileManager.default.contentsOfDirectory(atPath: out.path).sorted()
            let expected = (0..<3).flatMap { n in [".parquet", ".tar", "_stats.json"].map { String(format: "%05d", n) + $0 } }
            #expect(names == expected, "\(names)")
            #expect(try Self.members(out.appendingPathComponent("00000.tar")) == ["000000.jpg", "000000.txt", "000000.json"])
            #expect(try Self.members(out.appendingPathComponent("00001.tar")) == ["000011.jpg", "000011.txt", "000011.json"])
            #expect(try Self.members(out.appendingPathComponent("00002.tar")) == ["000020.jpg", "000020.txt", "000020.json"])
            let caption = try Self.tar(["-xOf", out.appendingPathComponent("00000.tar").path, "000000.txt"])
            #expect(String(decoding: caption, as: UTF8.self) == "a boat, at sea")
            let meta = try JSONParser.parse(Array(try Self.tar(["-xOf", out.appendingPathComponent("00000.tar").path, "000000.json"])))
            #expect(meta["key"] == "000000" && meta["status"] == "success" && meta["caption"] == "a boat, at sea" && meta["license"] == "cc-by")
            #expect(meta["width"] == 48 && meta["height"] == 48 && meta["original_width"] == 227 && meta["original_height"] == 149)
            let photo = Array(try Data(contentsOf: E2E.samples.appendingPathComponent("testorig.jpg")))
            #expect(meta["sha256"] == .string(SHA256Hex.of(photo)) && meta["url"] == .string(server.url("/files/testorig.jpg")))
            let image = try Self.tar(["-xOf", out.appendingPathComponent("00000.tar").path, "000000.jpg"])
            #expect(image.prefix(3) == Data([0xFF, 0xD8, 0xFF]))
            // Every row counted, by what became of it.
            let stats = try (0..<3).map { try Self.json(out.appendingPathComponent(String(format: "%05d_stats.json", $0))) }
            #expect(stats.map { $0["count"] } == [3, 3, 1])
            #expect(stats.map { $0["successes"] } == [1, 1, 1])
            #expect(stats[0]["failed_to_download"] == 1 && stats[0]["filtered"] == 1 && stats[0]["errors"]?["InvalidDownloadStatusCode"] == 1)
            #expect(stats[1]["opted_out"] == 1 && stats[1]["filtered"] == 1 && stats[1]["errors"]?["OptedOut"] == 1, "\(stats[1])")
            // A Parquet row for every input row, in order, with img2dataset's fields.
            let tables = try (0..<3).map { try ParquetReader.table(path: out.appendingPathComponent(String(format: "%05d.parquet", $0)).path) }
            #expect(tables[0].names.prefix(6) == ["url", "caption", "license", "key", "status", "error_message"], "\(tables[0].names)")
            let statuses = tables.flatMap { $0.columns["status"] ?? [] }.map { $0.text }
            #expect(statuses == ["success", "failed_to_download", "filtered", "opted_out", "success", "filtered", "success"])
            #expect(tables.flatMap { $0.columns["key"] ?? [] }.map { $0.text } == ["000000", "000001", "000002", "000010", "000011", "000012", "000020"])
            #expect(tables[0].columns["error_message"]?[1].text?.contains("404") == true)
            #expect(tables[0].columns["width"]?[0] == .int(48) && tables[0].columns["original_bytes"]?[0] == .int(Int64(photo.count)))
            #expect(tables[0].columns["bytes"]?[0] == .int(Int64(image.count)) && tables[0].columns["caption"]?[2].text == "a tiny\ntile")
        }
    }

    /// `--output-format files` with a shard size: img2dataset's `files`, a folder a shard holding
    /// what the archive would (the image, its caption and metadata a sample, in row order's keys),
    /// with the same Parquet table and stats beside it; the manifest names each sample's file.
    @Test func folderShardsHoldTheSamplesFiles() async throws {
        try await shards(layout: "files", manifest: true) { _, run, out in
            #expect(run.lines.contains { $0.contains("-> 00000/000000.jpg") }, "\(run)")
            let names = try FileManager.default.contentsOfDirectory(atPath: out.path).sorted()
            #expect(names == (0..<3).flatMap { n in ["", ".parquet", "_stats.json"].map { String(format: "%05d", n) + $0 } }, "\(names)")
            let samples = try (0..<3).map { try FileManager.default.contentsOfDirectory(atPath: out.appendingPathComponent(String(format: "%05d", $0)).path).sorted() }
            #expect(samples == [["000000.jpg", "000000.json", "000000.txt"], ["000011.jpg", "000011.json", "000011.txt"], ["000020.jpg", "000020.json", "000020.txt"]])
            let sample = out.appendingPathComponent("00000/000000")
            #expect(try String(contentsOf: sample.appendingPathExtension("txt"), encoding: .utf8) == "a boat, at sea")
            let meta = try Self.json(sample.appendingPathExtension("json"))
            let image = try Data(contentsOf: sample.appendingPathExtension("jpg"))
            #expect(meta["key"] == "000000" && meta["status"] == "success" && meta["license"] == "cc-by" && meta["bytes"] == .int(Int64(image.count)))
            #expect(try ImageDecoders.decode(Array(image)).width == 48)
            let tables = try (0..<3).map { try ParquetReader.table(path: out.appendingPathComponent(String(format: "%05d.parquet", $0)).path) }
            #expect(tables.flatMap { $0.columns["status"] ?? [] }.map { $0.text } == ["success", "failed_to_download", "filtered", "opted_out", "success", "filtered", "success"])
            #expect(try Self.json(out.appendingPathComponent("00001_stats.json"))["opted_out"] == 1)
            let records = try String(contentsOf: out.appendingPathExtension("jsonl"), encoding: .utf8).split(separator: "\n").map { try JSONParser.parse(Array($0.utf8)) }
            #expect(records.first { $0["index"] == 0 }?["path"] == .string(sample.appendingPathExtension("jpg").path), "\(records)")
            #expect(!FileManager.default.fileExists(atPath: out.appendingPathComponent(".staging-00000").path))
        }
    }

    /// `--output-format parquet`: the images' bytes in the `jpg` column of each shard's table,
    /// beside the same metadata; no archives.
    @Test func parquetShardsHoldTheImages() async throws {
        try await shards(layout: "parquet") { _, run, out in
            #expect(run.lines.contains { $0.contains("-> 00000.parquet:000000") }, "\(run.lines)")
            let names = try FileManager.default.contentsOfDirectory(atPath: out.path).sorted()
            #expect(names == (0..<3).flatMap { n in [".parquet", "_stats.json"].map { String(format: "%05d", n) + $0 } }, "\(names)")
            let tables = try (0..<3).map { try ParquetReader.table(path: out.appendingPathComponent(String(format: "%05d.parquet", $0)).path) }
            #expect(tables[0].names.last == "jpg" && tables.map(\.rows) == [3, 3, 1])
            let images = tables.flatMap { $0.columns["jpg"] ?? [] }
            let present = images.map { image -> Bool in
                guard case .bytes(let bytes) = image else { return false }
                return bytes.prefix(3) == [0xFF, 0xD8, 0xFF]
        }
        #expect(present == [true, false, false, false, true, false, true])
        #expect(tables[1].columns["status"]?.map { $0.text } == ["opted_out", "success", "filtered"])
        }
    }

    /// Interrupted while a row of the last shard hangs: the shards complete are kept whole, the
    /// last is not left under its name; `--continue` writes only it, and every shard is the same,
    /// byte for byte, as an uninterrupted run's.
    @Test(arguments: ["webdataset", "parquet", "files"]) func anInterruptedRunContinuesToTheSameShards(layout: String) async throws {
        let server = try await E2E.startServer()
        defer { Task { await server.shutdown() } }
        server.setFile("basi6a08.png", Array(try Data(contentsOf: E2E.samples.appendingPathComponent("basi6a08.png"))))
        let dir = try E2E.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let table = try table(server, dir, gate: "last")
        let whole = dir.appendingPathComponent("whole")
        let cut = dir.appendingPathComponent("cut")
        let interrupted = try await GetCommandTests.run(arguments(table, cut, layout: layout), interruptWhen: {
            FileManager.default.fileExists(atPath: cut.appendingPathComponent("00001_stats.json").path)
        })
        #expect(interrupted.status == 130, "\(interrupted)")
        let left = try FileManager.default.contentsOfDirectory(atPath: cut.path).sorted()
        let files = ["parquet": [".parquet", "_stats.json"], "files": ["", ".parquet", "_stats.json"]][layout] ?? [".parquet", ".tar", "_stats.json"]
        #expect(left == (0..<2).flatMap { n in files.map { String(format: "%05d", n) + $0 } }, "\(left)")
        server.openGate("last")
        let continued = try await GetCommandTests.run(arguments(table, cut, layout: layout) + ["--continue"])
        #expect(continued.status == 0 && continued.stderr.contains("2 of 3 shards already complete"), "\(continued)")
        #expect(server.hits("/files/test.webp") == 1, "a complete shard's rows are not fetched again")
        _ = try await GetCommandTests.run(arguments(table, whole, layout: layout))
        for shard in (0..<3).flatMap({ n in files.dropLast().map { String(format: "%05d", n) + $0 } }) {
            // (A shard folder's files, one by one.)
            let kept = (try? FileManager.default.contentsOfDirectory(atPath: whole.appendingPathComponent(shard).path).sorted()).map { $0.map { shard + "/" + $0 } }
            #expect(kept.map { $0.count } != 0, "\(shard)")
            for file in kept ?? [shard] {
                #expect(try Data(contentsOf: cut.appendingPathComponent(file)) == Data(contentsOf: whole.appendingPathComponent(file)), "\(file)")
            }
            if let kept { #expect(try FileManager.default.contentsOfDirectory(atPath: cut.appendingPathComponent(shard).path).count == kept.count) }
        }
        // (Apart from its times, the same stats.)
        var a = try Self.json(cut.appendingPathComponent("00002_stats.json")).objectValue!
        var b = try Self.json(whole.appendingPathComponent("00002_stats.json")).objectValue!
        for key in ["start_time", "end_time", "duration"] { (a[key], b[key]) = (nil, nil) }
        #expect(a == b)
    }

    /// `--continue` keeps a shard only when it holds the rows this run would put in it: another
    /// shard size is refused before anything is fetched (its shards would mix with the new ones);
    /// a table that grew has its last shard written again.
    @Test func continuingChecksTheShardsHoldThisRunsRows() async throws {
        let server = try await E2E.startServer()
        defer { Task { await server.shutdown() } }
        let dir = try E2E.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let table = dir.appendingPathComponent("rows.txt")
        let urls = (0..<5).map { server.url("/files/test.webp?row=\($0)") }
        try Data(urls.joined(separator: "\n").utf8).write(to: table)
        let out = dir.appendingPathComponent("shards")
        let base = ["get", "-i", table.path, "--output-format", "webdataset", "-o", out.path, "--no-progress"]
        let first = try await GetCommandTests.run(base + ["--shard-size", "2"])
        #expect(first.status == 0, "\(first)")
        let other = try await GetCommandTests.run(base + ["--shard-size", "3", "--continue"])
        #expect(other.status == 64 && other.stderr.contains("00000_stats.json: shards of 2 rows where this run's hold 3"), "\(other)")
        #expect(server.hits("/files/test.webp") == 5, "refused before anything is fetched")
        try Data((urls + [server.url("/files/test.webp?row=5")]).joined(separator: "\n").utf8).write(to: table)
        let grown = try await GetCommandTests.run(base + ["--shard-size", "2", "--continue"])
        #expect(grown.status == 0 && grown.stderr.contains("2 of 3 shards already complete"), "\(grown)")
        #expect(try Self.json(out.appendingPathComponent("00002_stats.json"))["count"] == 2)
        #expect(try Self.members(out.appendingPathComponent("00002.tar")) == ["000020.webp", "000020.json", "000021.webp", "000021.json"])
    }

    /// With a caption column, every sample's metadata says `caption`, null where the row has none
    /// (a JSON null, or no such key), and its caption file is empty, as img2dataset's readers expect.
    @Test func aSampleWithoutACaptionSaysSo() async throws {
        let server = try await E2E.startServer()
        defer { Task { await server.shutdown() } }
        let dir = try E2E.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let table = dir.appendingPathComponent("rows.jsonl")
        let rows = [#"{"url":"\#(server.url("/files/test.webp?a"))","caption":"said"}"#,
                    #"{"url":"\#(server.url("/files/test.webp?b"))","caption":null}"#,
                    #"{"url":"\#(server.url("/files/test.webp?c"))"}"#]
        try Data(rows.joined(separator: "\n").utf8).write(to: table)
        let out = dir.appendingPathComponent("shards")
        let run = try await GetCommandTests.run(
            ["get", "-i", table.path, "--caption-col", "caption", "--output-format", "files", "--shard-size", "3", "-o", out.path, "--no-progress"])
        #expect(run.status == 0, "\(run)")
        let metas = try ["0", "1", "2"].map { try Self.json(out.appendingPathComponent("00000/00000\($0).json")) }
        #expect(metas.map { $0["caption"] } == [.string("said"), .null, .null], "\(metas)")
        let captions = try ["0", "1", "2"].map { try String(contentsOf: out.appendingPathComponent("00000/00000\($0).txt"), encoding: .utf8) }
        #expect(captions == ["said", "", ""])
    }

    @Test func shardFlagsAreChecked() async throws {
        let dir = try E2E.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let base = ["get", "-o", dir.path, "--output-format", "webdataset", "http://127.0.0.1:9/a.jpg"]
        let bad = try await GetCommandTests.run(["get", "-o", dir.path, "--output-format", "tfrecord", "http://127.0.0.1:9/a.jpg"])
        #expect(bad.status == 64 && bad.stderr.contains("--output-format must be files, webdataset or parquet"), "\(bad)")
        let size = try await GetCommandTests.run(base + ["--shard-size", "0"])
        #expect(size.status == 64 && size.stderr.contains("--shard-size must be between 1 and"), "\(size)")
        let named = try await GetCommandTests.run(base + ["--name-template", "{index}.{ext}"])
        #expect(named.status == 64 && named.stderr.contains("names its samples by row"), "\(named)")
        let both = try await GetCommandTests.run(base + ["--continue", "--manifest", dir.appendingPathComponent("m.jsonl").path])
        #expect(both.status == 64 && both.stderr.contains("resumes by shard"), "\(both)")
        // `files` with a shard size is img2dataset's shard folders, with the same rules.
        let folders = ["get", "-o", dir.path, "--shard-size", "5", "http://127.0.0.1:9/a.jpg"]
        let folderNamed = try await GetCommandTests.run(folders + ["--skip-existing"])
        #expect(folderNamed.status == 64 && folderNamed.stderr.contains("--shard-size names its samples by row"), "\(folderNamed)")
        let firstAlone = try await GetCommandTests.run(["get", "-o", dir.path, "--output-format", "files", "--first-shard=-1", "http://127.0.0.1:9/a.jpg"])
        #expect(firstAlone.status == 64 && firstAlone.stderr.contains("--first-shard must be between"), "\(firstAlone)")
    }
}
