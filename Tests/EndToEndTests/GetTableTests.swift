import Foundation
import ImageWorkerProtocol
import Testing
import TestSupport

/// `get -i TABLE`: a csv, tsv or jsonl table read by its columns (`--url-col`, `--caption-col`,
/// `--save-columns`), one result line and one manifest record a row (a row without a URL too),
/// its caption and kept columns in the record; `--continue` finds the rows done.
@Suite struct GetTableTests {
    @Test func aCSVTablesRowsGoIntoTheManifest() async throws {
        let server = try await E2E.startServer()
        defer { Task { await server.shutdown() } }
        let dir = try E2E.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let table = dir.appendingPathComponent("captions.csv")
        let rows = [
            "key,image_url,text,license",
            "k1,\(server.url("/files/testorig.jpg")),\"a photo, of a boat\",cc-by",
            "k2,,\"no URL\",cc0",
            "k3,\(server.url("/files/basn2c08.png")),\"two\nlines\",",
        ]
        try Data((rows.joined(separator: "\r\n") + "\r\n").utf8).write(to: table)
        let manifest = dir.appendingPathComponent("job.jsonl")
        let out = dir.appendingPathComponent("images").path
        let arguments = ["get", "-i", table.path, "--url-col", "image_url", "--caption-col", "text", "--save-columns", "key,license",
                         "-o", out, "--manifest", manifest.path]
        let run = try await GetCommandTests.run(arguments)
        #expect(run.status == 1, "one row has no URL: \(run)")
        #expect(run.lines.count == 3, "\(run.lines)")
        let records = try GetCommandTests.manifest(manifest).sorted { ($0["index"]?.integerValue ?? 0) < ($1["index"]?.integerValue ?? 0) }
        #expect(records.map { $0["index"]?.integerValue } == [0, 1, 2])
        #expect(records.map { $0["outcome"]?.stringValue } == ["ok", "failed", "ok"])
        #expect(records.map { $0["caption"]?.stringValue } == ["a photo, of a boat", "no URL", "two\nlines"])
        #expect(records.map { $0["columns"] } == [["key": "k1", "license": "cc-by"], ["key": "k2", "license": "cc0"], ["key": "k3", "license": ""]])
        #expect(records[1]["error"]?["name"] == "InvalidURL", "\(records[1])")
        #expect(FileManager.default.fileExists(atPath: out + "/testorig.jpg") && FileManager.default.fileExists(atPath: out + "/basn2c08.png"))
        // Run again: the rows done are skipped, the one without a URL fails again.
        let again = try await GetCommandTests.run(arguments + ["--continue"])
        #expect(again.status == 1 && server.hits("/files/testorig.jpg") == 1, "\(again)")
    }

    /// jsonl (by extension) with its own column names; a header without the URL column stops
    /// `get` before anything is fetched, naming the columns it has.
    @Test func jsonlAndAMissingColumn() async throws {
        let server = try await E2E.startServer()
        defer { Task { await server.shutdown() } }
        let dir = try E2E.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let jsonl = dir.appendingPathComponent("rows.jsonl")
        try Data("{\"URL\": \"\(server.url("/files/testorig.jpg"))\", \"TEXT\": \"boat\", \"score\": 0.91}\n".utf8).write(to: jsonl)
        let manifest = dir.appendingPathComponent("m.jsonl")
        let run = try await GetCommandTests.run(
            ["get", "-i", jsonl.path, "--url-col", "URL", "--caption-col", "TEXT", "--save-columns", "score", "-o", dir.path, "--manifest", manifest.path])
        #expect(run.status == 0, "\(run)")
        let record = try #require(try GetCommandTests.manifest(manifest).first)
        #expect(record["caption"] == "boat" && record["columns"] == ["score": .double(0.91)], "\(record)")
        let csv = dir.appendingPathComponent("t.csv")
        try Data("link,text\nhttp://127.0.0.1:9/a.jpg,x\n".utf8).write(to: csv)
        let missing = try await GetCommandTests.run(["get", "-i", csv.path, "-o", dir.path])
        #expect(missing.status == 64 && missing.stderr.contains("no column \"url\" (--url-col) in the header: link, text"), "\(missing)")
        #expect(missing.stderr.hasPrefix("image-worker get: ") && !missing.stderr.contains("Usage:"), "the table's problem, not the flags'")
        let absent = try await GetCommandTests.run(["get", "-i", dir.appendingPathComponent("absent.csv").path, "-o", dir.path])
        #expect(absent.status == 64 && absent.stderr.hasPrefix("image-worker get: cannot read ") && !absent.stderr.contains("Usage:"), "\(absent)")
        // A caption with loose files and no manifest would go nowhere.
        let nowhere = try await GetCommandTests.run(["get", "-i", csv.path, "--url-col", "link", "--caption-col", "text", "-o", dir.path])
        #expect(nowhere.status == 64 && nowhere.stderr.contains("kept in a manifest's records or in shards"), "\(nowhere)")
        let bad = try await GetCommandTests.run(["get", "-i", csv.path, "--input-format", "xlsx", "-o", dir.path])
        #expect(bad.status == 64 && bad.stderr.contains("--input-format must be one of txt, csv, tsv, jsonl"), "\(bad)")
    }

    /// `--verify-hash-col`: a row whose bytes have another SHA-256 than its table says fails with
    /// HashMismatch and leaves no file (nor a sample in a shard); case does not matter.
    @Test func rowsWhoseBytesAreNotTheTablesFail() async throws {
        let server = try await E2E.startServer()
        defer { Task { await server.shutdown() } }
        let dir = try E2E.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let photo = SHA256Hex.of(Array(try Data(contentsOf: E2E.samples.appendingPathComponent("testorig.jpg"))))
        let table = dir.appendingPathComponent("rows.csv")
        let rows = [
            "url,sha256",
            "\(server.url("/files/testorig.jpg")),\(photo.uppercased())",
            "\(server.url("/files/basn2c08.png")),\(photo)",
            "\(server.url("/files/test.webp")),",
        ]
        try Data((rows.joined(separator: "\n") + "\n").utf8).write(to: table)
        let out = dir.appendingPathComponent("files")
        let manifest = dir.appendingPathComponent("m.jsonl")
        let run = try await GetCommandTests.run(["get", "-i", table.path, "--verify-hash-col", "sha256", "-o", out.path, "--manifest", manifest.path])
        #expect(run.status == 1, "\(run)")
        #expect(run.lines.contains { $0.hasPrefix("failed  \(server.url("/files/basn2c08.png")): HashMismatch: the bytes' SHA-256 is ") }, "\(run.lines)")
        let kept = try FileManager.default.contentsOfDirectory(atPath: out.path).sorted()
        #expect(kept == ["test.webp", "testorig.jpg"], "an empty cell checks nothing: \(kept)")
        let records = try GetCommandTests.manifest(manifest).sorted { ($0["index"]?.integerValue ?? 0) < ($1["index"]?.integerValue ?? 0) }
        #expect(records.map { $0["outcome"]?.stringValue } == ["ok", "failed", "ok"] && records[1]["error"]?["name"] == "HashMismatch")
        let shards = dir.appendingPathComponent("shards")
        _ = try await GetCommandTests.run(["get", "-i", table.path, "--verify-hash-col", "sha256", "--output-format", "webdataset", "-o", shards.path])
        let stats = try JSONParser.parse(Array(try Data(contentsOf: shards.appendingPathComponent("00000_stats.json"))))
        #expect(stats["successes"] == 2 && stats["failed_to_download"] == 1 && stats["errors"]?["HashMismatch"] == 1, "\(stats)")
    }
}
