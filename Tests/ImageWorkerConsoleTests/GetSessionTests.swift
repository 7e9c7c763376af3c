import Foundation
import ImageWorkerProtocol
import Testing

@testable import ImageWorkerConsole

@Suite struct GetSessionTests {
    static func event(_ method: String, _ params: JSONObject) -> JSONValue {
        ["jsonrpc": "2.0", "method": .string(method), "params": .object(params)]
    }

    @Test func followsATokenToItsResultLine() throws {
        var session = GetSession(urls: ["http://h/a.jpg", "http://h/b.png"])
        #expect(session.handle(Self.event("download/started", ["token": "1", "url": "http://h/a.jpg"])) == [.redraw])
        #expect(session.items[0].phase == .connecting)
        _ = session.handle(Self.event("download/response", ["token": "1", "status": 200, "expectedBytes": 2000]))
        _ = session.handle(Self.event("download/progress", ["token": "1", "receivedBytes": 500, "expectedBytes": 2000]))
        #expect(session.items[0].receivedBytes == 500 && session.items[0].phase == .receiving)
        _ = session.handle(Self.event("download/partialImage", ["token": "1", "sequence": 2]))
        #expect(session.items[0].partialImages == 2)
        _ = session.handle(Self.event("download/progress", ["token": "1", "receivedBytes": 2000, "expectedBytes": 2000]))
        #expect(session.items[0].phase == .finishing)
        let outputs = session.handle(Self.event("download/completed", [
            "token": "1", "outcome": "success", "byteLength": 2000, "width": 227, "height": 149, "sourceFormat": "jpeg",
            "path": "/out/a.png",
        ]))
        #expect(outputs == [.result("ok      http://h/a.jpg -> /out/a.png (227x149, jpeg, 2.0 kB)"), .redraw])
        #expect(!(session.items.isEmpty && session.ended == session.count))
        // A second terminal event for an ended token changes nothing.
        #expect(session.handle(Self.event("download/completed", ["token": "1", "outcome": "cancelled"])).isEmpty)

        let failed = session.handle(Self.event("download/completed", [
            "token": "2", "outcome": "error",
            "error": ["code": 1005, "message": "HTTP status 404", "data": ["name": "InvalidDownloadStatusCode", "statusCode": 404]],
        ]))
        #expect(failed.first == .result("failed  http://h/b.png: InvalidDownloadStatusCode: HTTP status 404"))
        #expect((session.items.isEmpty && session.ended == session.count) && session.succeeded == 1 && session.failed == 1)
        #expect(session.summary(seconds: 1.25) == "1 downloaded, 1 failed, 2.0 kB in 1.2 s")
    }

    /// An animation's every frame delivered (`frames: "all"`): the result line counts them.
    @Test func aResultLineCountsTheFramesDelivered() throws {
        var session = GetSession(urls: ["http://h/a.gif"])
        _ = session.handle(Self.event("download/started", ["token": "1", "url": "http://h/a.gif"]))
        let outputs = session.handle(Self.event("download/completed", [
            "token": "1", "outcome": "success", "byteLength": 98, "width": 64, "height": 64, "sourceFormat": "gif",
            "frames": 4, "delaysMs": [100, 100, 100, 100], "path": "/out/a.webp",
        ]))
        #expect(outputs.first == .result("ok      http://h/a.gif -> /out/a.webp (64x64, 4 frames, gif, 98 B)"))
    }

    @Test func theTimingLineGivesEachPhasesMedian() {
        var session = GetSession(urls: ["http://h/1", "http://h/2", "http://h/3"])
        #expect(session.timingSummary() == nil)
        let metrics: [JSONObject] = [
            ["queuedMs": 1, "connectMs": 4, "ttfbMs": 10, "transferMs": 30, "decodeMs": 5, "httpVersion": "2", "attempts": 1],
            ["queuedMs": 3, "ttfbMs": 20, "transferMs": 10, "decodeMs": 7, "httpVersion": "2", "attempts": 3],
            ["queuedMs": 2, "fromCache": true, "attempts": 1],
        ]
        for (i, m) in metrics.enumerated() {
            _ = session.handle(Self.event("download/completed", ["token": .string("\(i + 1)"), "outcome": "success", "metrics": .object(m)]))
        }
        #expect(
            session.timingSummary()
                == "timings (median of 3): queued 2.0 ms, connect 4.0 ms (1 new connection), ttfb 15.0 ms, transfer 20.0 ms, decode 6.0 ms; "
                + "1 from the cache, 2 over HTTP/2, 1 retried")
    }

    @Test func aRefusedRequestFailsItsURLAndUnknownTokensAreIgnored() {
        var session = GetSession(urls: ["x"])
        #expect(session.handle(Self.event("download/started", ["token": "7"])).isEmpty)
        #expect(session.handle(Self.event("download/started", ["token": 1])).isEmpty)
        #expect(session.handle(["jsonrpc": "2.0", "id": 1, "result": ["token": "1"]]).isEmpty)
        let refusal: JSONValue = ["jsonrpc": "2.0", "id": 1, "error": ["code": -32602, "message": "bad url"]]
        #expect(session.withURL(refusal)?["error"]?["data"]?["url"] == "x", "--json names the refused request's URL")
        #expect(session.withURL(["jsonrpc": "2.0", "id": 9, "error": ["code": -32602, "message": "?"]]) == nil)
        let outputs = session.handle(refusal)
        #expect(outputs.first == .result("failed  x: InvalidRequest: bad url"))
        #expect((session.items.isEmpty && session.ended == session.count) && session.failed == 1)
    }

    @Test func cancelledAndOriginalBytes() {
        var session = GetSession(urls: ["http://h/a", "http://h/b"])
        let ok = session.handle(Self.event("download/completed", [
            "token": "1", "outcome": "success", "byteLength": 1_234_567, "mimeType": "image/gif", "path": "/o/a.gif",
        ]))
        #expect(ok.first == .result("ok      http://h/a -> /o/a.gif (image/gif, 1.2 MB)"))
        _ = session.handle(Self.event("download/started", ["token": "2"]))
        let cancelled = session.handle(Self.event("download/completed", ["token": "2", "outcome": "cancelled"]))
        #expect(cancelled.first == .result("cancelled http://h/b"))
        #expect(session.summary(seconds: 0).hasPrefix("1 downloaded, 1 cancelled,"), "cancelled is counted apart from failed")
        #expect(session.failed == 0 && session.cancelled == 1 && !session.allDone)
    }

    /// Ctrl-C with most URLs still queued: those get no line each, the summary counts them, and the
    /// timings are the medians of the downloads that ran.
    @Test func urlsCancelledInTheQueueAreSummedUpNotListed() {
        var session = GetSession(urls: (0..<5).map { "http://h/\($0).jpg" })
        _ = session.handle(Self.event("download/started", ["token": "1"]))
        _ = session.handle(Self.event("download/completed", [
            "token": "1", "outcome": "success", "byteLength": 10, "path": "/o/0.jpg",
            "metrics": ["queuedMs": 1, "ttfbMs": 4, "attempts": 1],
        ]))
        _ = session.handle(Self.event("download/started", ["token": "2"]))
        let running = session.handle(Self.event("download/completed", ["token": "2", "outcome": "cancelled", "metrics": ["queuedMs": 1, "attempts": 1]]))
        #expect(running.first == .result("cancelled http://h/1.jpg"), "it had started: a line")
        for token in ["3", "4", "5"] {
            let queued = session.handle(Self.event("download/completed", ["token": .string(token), "outcome": "cancelled", "metrics": ["queuedMs": 900, "attempts": 0]]))
            #expect(queued == [.redraw], "cancelled in the queue: no line")
        }
        #expect(session.summary(seconds: 1).hasPrefix("1 downloaded, 4 cancelled (3 before they started),"), "\(session.summary(seconds: 1))")
        #expect(session.timingSummary()?.hasPrefix("timings (median of 2): queued 1.0 ms") == true, "\(session.timingSummary() ?? "")")
    }

    /// Past `timingSample` downloads the medians come from a sample of that many (a run of
    /// millions holds no more), while the counts stay exact: every download, every new connection.
    @Test func timingsAreSampledPastTheirBoundAndCountedExactly() {
        var session = GetSession(urls: (0..<1000).map { "http://h/\($0).jpg" })
        session.timingSample = 50
        for n in 1...1000 {
            var metrics: JSONObject = ["queuedMs": 2, "ttfbMs": 7, "attempts": n % 10 == 0 ? 2 : 1]
            if n % 4 == 0 { metrics["connectMs"] = 3 }
            _ = session.handle(Self.event("download/completed", [
                "token": .string(String(n)), "outcome": "failed", "error": ["code": 1005, "message": "404"], "metrics": .object(metrics),
            ]))
        }
        #expect(session.timings.count == 50)
        #expect(session.timingSummary() == "timings (median of 1000): queued 2.0 ms, connect 3.0 ms (250 new connections), ttfb 7.0 ms; 100 retried",
                "\(session.timingSummary() ?? "")")
    }

    /// A kept file (`skipExisting`) is a result of its own, and counts as done.
    @Test func keptFilesAndManifestRecords() {
        var session = GetSession(entries: [GetEntry(url: "http://h/a.jpg", index: 4, name: "x.jpg"), GetEntry(url: "http://h/b", index: 7)])
        session.recordFormat = "original"
        _ = session.handle(Self.event("download/started", ["token": "8", "url": "http://h/b"]), now: 10)
        let kept = session.handle(Self.event("download/completed", [
            "token": "5", "url": "http://h/a.jpg", "outcome": "success", "skipped": true, "byteLength": 2000, "path": "/o/x.jpg",
            "sourceFormat": "jpeg", "width": 3, "height": 2, "sha256": "ab",
        ]), now: 11)
        #expect(kept.first == .result("kept    http://h/a.jpg -> /o/x.jpg (exists, 3x2, jpeg, 2.0 kB)"))
        #expect(kept.last == .record([
            "index": 4, "url": "http://h/a.jpg", "name": "x.jpg", "outcome": "skipped", "path": "/o/x.jpg", "bytes": 2000, "format": "jpeg",
            "width": 3, "height": 2, "sha256": "ab",
        ]))
        let failed = session.handle(Self.event("download/completed", [
            "token": "8", "url": "http://h/b", "outcome": "error",
            "error": ["code": 1003, "message": "gave up", "data": ["name": "NetworkError", "reason": "deadline", "attempts": 3]],
        ]), now: 10.25)
        #expect(failed.last == .record([
            "index": 7, "url": "http://h/b", "outcome": "failed", "ms": 250,
            "error": ["name": "NetworkError", "message": "gave up", "code": 1003, "attempts": 3],
        ]))
        #expect(session.kept == 1 && session.failed == 1 && session.summary(seconds: 1).hasPrefix("0 downloaded, 1 kept, 1 failed"))
        #expect(ProgressBoard.statusLine(session, seconds: 3) == "2/2 done, 1 kept, 1 failed, 0 B, 3 s")
    }

    /// A list is read as it is fed: a file in pieces (lines cut across reads, CRLF, comments, a
    /// last line without its newline), stdin's text, arguments; numbered in that order; a walk
    /// can stop early.
    @Test func inputIsReadAsItIsWalked() throws {
        let file = NSTemporaryDirectory() + "list-\(UUID().uuidString).txt"
        defer { unlink(file) }
        var text = "# urls\r\n\r\n"
        for i in 0..<30_000 { text += "http://h/\(i).jpg" + (i % 7 == 0 ? "\tn\(i).jpg" : "") + (i % 3 == 0 ? "\r\n" : "\n") }
        text += "http://h/last.jpg"
        try Data(text.utf8).write(to: URL(fileURLWithPath: file))
        let input = GetInput([.url("http://h/arg.jpg"), .file(file), .text(Array("http://h/stdin.jpg\n\n".utf8))])
        var seen: [GetEntry] = []
        try input.forEach { seen.append($0); return true }
        #expect(seen.count == 30_003)
        #expect(try input.count() == 30_003)
        #expect(seen[0] == GetEntry(url: "http://h/arg.jpg", index: 0))
        #expect(seen[1] == GetEntry(url: "http://h/0.jpg", index: 1, name: "n0.jpg"))
        #expect(seen[25_001] == GetEntry(url: "http://h/25000.jpg", index: 25_001))
        #expect(seen[30_001] == GetEntry(url: "http://h/last.jpg", index: 30_001))
        #expect(seen[30_002] == GetEntry(url: "http://h/stdin.jpg", index: 30_002))
        #expect(seen.allSatisfy { !$0.url.contains("\r") && !$0.url.contains("\n") })
        var first: [GetEntry] = []
        try input.forEach { first.append($0); return first.count < 3 }
        #expect(first.map(\.index) == [0, 1, 2])
        #expect(throws: GetInputError.self) { try GetInput([.file("/nonexistent/list.txt")]).count() }
    }

    /// The session holds only what is under way: a URL is registered as it is fed and forgotten
    /// (but counted) once it ends.
    @Test func aStreamedSessionHoldsOnlyWhatIsUnderWay() {
        var session = GetSession()
        session.total = 3
        session.register(GetEntry(url: "http://h/a", index: 0))
        session.register(GetEntry(url: "http://h/b", index: 1))
        _ = session.handle(Self.event("download/started", ["token": "1"]))
        #expect(session.items.map(\.index) == [0, 1] && session.running == 1)
        _ = session.handle(Self.event("download/completed", ["token": "1", "outcome": "success", "byteLength": 5, "path": "/o/a"]))
        #expect(session.items.map(\.index) == [1] && session.ended == 1 && !(session.items.isEmpty && session.ended == session.count))
        #expect(session.handle(Self.event("download/started", ["token": "3"])).isEmpty, "not fed yet: unknown")
        session.register(GetEntry(url: "http://h/c", index: 2))
        _ = session.handle(Self.event("download/completed", ["token": "2", "outcome": "cancelled"]))
        _ = session.handle(Self.event("download/completed", ["token": "3", "outcome": "success", "path": "/o/c"]))
        #expect(session.items.isEmpty && (session.items.isEmpty && session.ended == session.count) && session.succeeded == 2 && session.cancelledWaiting == 1)
        #expect(ProgressBoard.statusLine(session, seconds: 1) == "3/3 done, 1 cancelled, 0 B, 1 s")
    }

    /// Quiet downloads (nothing shows their progress): `completed` alone tells that a URL had
    /// started and how many bytes came; the progress line does not claim to know what is running.
    @Test func aQuietSessionLearnsEverythingFromCompleted() {
        var session = GetSession(urls: ["http://h/a", "http://h/b", "http://h/c", "http://h/d"])
        session.quiet = true
        _ = session.handle(Self.event("download/completed", [
            "token": "1", "outcome": "success", "byteLength": 1500, "path": "/o/a", "metrics": ["queuedMs": 1, "attempts": 1],
        ]))
        _ = session.handle(Self.event("download/completed", [
            "token": "2", "outcome": "success", "skipped": true, "byteLength": 7000, "path": "/o/b", "metrics": ["queuedMs": 1, "attempts": 0],
        ]))
        let started = session.handle(Self.event("download/completed", ["token": "3", "outcome": "cancelled", "metrics": ["queuedMs": 1, "attempts": 1]]))
        #expect(started.first == .result("cancelled http://h/c"), "it had started: a line")
        #expect(session.running == nil)
        #expect(ProgressBoard.statusLine(session, seconds: 2) == "3/4 done, 1 kept, 1 cancelled, 1.5 kB, 2 s", "the kept file's bytes did not come")
        let queued = session.handle(Self.event("download/completed", ["token": "4", "outcome": "cancelled", "metrics": ["queuedMs": 9, "attempts": 0]]))
        #expect(queued == [.redraw])
        #expect(session.summary(seconds: 2).hasPrefix("1 downloaded, 1 kept, 2 cancelled (1 before they started), 1.5 kB"), "\(session.summary(seconds: 2))")
    }

    /// `get` asks for quiet downloads only when nothing would show their other events.
    @Test func quietWhenNothingShowsProgress() {
        var options = GetOptions(urls: ["http://h/a"], directory: "/o")
        let entry = GetEntry(url: "http://h/a", index: 0)
        #expect(options.downloadRequest(entry)["params"]?["quiet"] == true)
        options.progressLines = true
        #expect(options.downloadRequest(entry)["params"]?["quiet"] == true, "lines count what ended")
        for change: (inout GetOptions) -> Void in [{ $0.progressBars = true }, { $0.json = true }, { $0.manifest = "/m" }, { $0.progressive = true }] {
            var other = options
            change(&other)
            #expect(other.downloadRequest(entry)["params"]?["quiet"] == nil)
        }
    }

    @Test func inputListsAndIndexPlaceholders() {
        let text = "http://h/a.jpg\n\n# a comment\n  http://h/b.jpg\tb name.jpg\r\nhttp://h/c.jpg\t\n"
        #expect(GetEntry.parse(lines: text, firstIndex: 2) == [
            GetEntry(url: "http://h/a.jpg", index: 2), GetEntry(url: "http://h/b.jpg", index: 3, name: "b name.jpg"),
            GetEntry(url: "http://h/c.jpg", index: 4),
        ])
        var options = GetOptions(urls: [], directory: "/tmp")
        options.nameTemplate = "p{index:3}.{ext}"
        let output = options.downloadRequest(GetEntry(url: "http://h/a.jpg", index: 42))["params"]?["output"]
        #expect(output?["nameTemplate"] == "p{index:3}.{ext}" && output?["index"] == 42, "the worker fills {index} from output.index")
    }

    @Test func theManifestShowsWhatIsDone() throws {
        let file = NSTemporaryDirectory() + "manifest-\(UUID().uuidString).jsonl"
        defer { unlink(file) }
        let records: [JSONObject] = [
            ["index": 0, "url": "u0", "outcome": "ok", "path": .string(file)],
            ["index": 1, "url": "u1", "outcome": "failed"],
            ["index": 2, "url": "u2", "outcome": "ok", "path": "/nonexistent/file.jpg"],
            ["index": 3, "url": "u3", "outcome": "skipped", "name": "n3"],
            ["index": 4, "url": "u4", "outcome": "ok"],
            ["index": 4, "url": "u4", "outcome": "cancelled"],
        ]
        let writer = try ManifestWriter(path: file)
        for record in records.prefix(3) { try writer.carry(Manifest.line(record)) }
        try writer.commit()
        for record in records.dropFirst(3) { #expect(writer.append(record)) }
        let cut = try FileHandle(forWritingTo: URL(fileURLWithPath: file))
        cut.seekToEndOfFile()
        cut.write(Data("{\"index\": 5, \"url\": \"u5\", \"outc".utf8))  // a line cut by a kill
        try cut.close()
        let done = try ManifestIndex(path: file)
        defer { done.close() }
        #expect(done.records == 6)
        #expect(done.take(url: "u0", name: nil, index: 0) == Manifest.line(records[0]), "carried over byte for byte")
        let moved = try #require(done.take(url: "u0", name: nil, index: 9))
        var renumbered = records[0]
        renumbered["index"] = 9
        #expect(moved == Manifest.line(renumbered), "the same URL elsewhere in the list")
        #expect(done.contains(url: "u3", name: "n3", index: 3))
        #expect(!done.contains(url: "u3", name: nil, index: 3), "its own name is part of the key")
        #expect(done.take(url: "u4", name: nil, index: 4) == nil, "a later record of the index replaces the earlier")
        #expect(done.take(url: "u1", name: nil, index: 1) == nil)
        #expect(done.take(url: "u2", name: nil, index: 2) == nil)
    }

    /// A manifest is read a line at a time, in pieces that cut lines anywhere: every record of a
    /// file much larger than one read is found.
    @Test func aLargeManifestIsReadAcrossItsReads() throws {
        let file = NSTemporaryDirectory() + "manifest-\(UUID().uuidString).jsonl"
        defer { unlink(file) }
        var text = ""
        for i in 0..<20_000 {
            text += #"{"index":\#(i),"url":"https://example.org/images/a-fairly-long-path/photo-\#(i).jpg","outcome":"ok","bytes":123456,"format":"jpeg","width":1024,"height":768,"sha256":"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef","ms":12}"# + "\n"
        }
        try Data(text.utf8).write(to: URL(fileURLWithPath: file))
        let done = try ManifestIndex(path: file)
        defer { done.close() }
        #expect(done.records == 20_000)
        let found = (0..<20_000).count { done.contains(url: "https://example.org/images/a-fairly-long-path/photo-\($0).jpg", name: nil, index: $0) }
        #expect(found == 20_000)
        for i in [0, 4_321, 19_999] {
            let line = try #require(done.take(url: "https://example.org/images/a-fairly-long-path/photo-\(i).jpg", name: nil, index: i))
            #expect((try JSONParser.parse(line.dropLast()))["index"] == .int(Int64(i)))
        }
    }

    /// The index reads only what it needs of a record, without parsing all of it: strings with
    /// escapes, nested values, other keys and a cut line.
    @Test func manifestFieldsAreScannedNotParsedWhole() {
        func fields(_ text: String) -> (Int64, String, String?, String?, String?)? {
            ManifestIndex.fields(Array(text.utf8)[...]).map { ($0.index, $0.url, $0.name, $0.outcome, $0.path) }
        }
        let f = fields(#" { "error": {"message": "a \"}\" b", "list": [1, {"x": ","}]}, "index" : 12 , "url": "http:\/\/h\/\u00e9?a=1", "outcome": "ok", "path": "/o/é.jpg", "name": null } "#)
        #expect(f?.0 == 12)
        #expect(f?.1 == "http://h/é?a=1")
        #expect(f?.2 == nil)
        #expect(f?.3 == "ok")
        #expect(f?.4 == "/o/é.jpg")
        #expect(fields(#"{"index": 5, "url": "u5", "outc"#) == nil, "a line cut by a kill")
        #expect(fields(#"{"url": "u"}"#) == nil, "no index")
        #expect(fields(#"["index", 1]"#) == nil)
        #expect(fields(#"{"index": 1.5, "url": "u"}"#) == nil)
    }

    @Test func byteCounts() {
        #expect(ByteCount.format(0) == "0 B")
        #expect(ByteCount.format(999) == "999 B")
        #expect(ByteCount.format(1000) == "1.0 kB")
        #expect(ByteCount.format(5_600_000) == "5.6 MB")
        #expect(ByteCount.format(2_500_000_000) == "2.50 GB")
    }
}

@Suite struct ProgressBoardTests {
    @Test func oneBarPerRunningDownloadThenTotals() {
        var session = GetSession(urls: ["http://h/path/a.jpg?x=1", "http://h/b.png", "http://h/c.png", "http://h/d"])
        _ = session.handle(GetSessionTests.event("download/started", ["token": "1"]))
        _ = session.handle(GetSessionTests.event("download/progress", ["token": "1", "receivedBytes": 1000, "expectedBytes": 4000]))
        _ = session.handle(GetSessionTests.event("download/started", ["token": "2"]))
        _ = session.handle(GetSessionTests.event("download/progress", ["token": "2", "receivedBytes": 300, "expectedBytes": .null]))
        _ = session.handle(GetSessionTests.event("download/completed", ["token": "4", "outcome": "error", "error": ["code": 1001, "message": "bad", "data": ["name": "InvalidURL"]]]))
        let lines = ProgressBoard.render(session, width: 100, maxBars: 10)
        #expect(lines == [
            "[#####---------------]  25%  1.0 kB/4.0 kB  a.jpg",
            "[     receiving      ]       300 B  b.png",
            "1/4 done, 1 failed, 1 waiting, 1.3 kB",
        ])
        // Fewer bars than downloads: the rest are counted; nothing is wider than the terminal.
        let narrow = ProgressBoard.render(session, width: 30, maxBars: 1)
        #expect(narrow.count == 2)
        #expect(narrow.allSatisfy { $0.count < 30 })
        #expect(narrow.last!.hasPrefix("1/4 done, 1 failed, 1 more"))
    }

    @Test func partialImagesAndDecodingShow() {
        var session = GetSession(urls: ["http://h/p.jpg"])
        _ = session.handle(GetSessionTests.event("download/progress", ["token": "1", "receivedBytes": 10, "expectedBytes": 10]))
        _ = session.handle(GetSessionTests.event("download/partialImage", ["token": "1", "sequence": 3]))
        #expect(ProgressBoard.render(session, width: 100, maxBars: 5).first
            == "[####################] 100%  10 B/10 B  finishing  partial 3  p.jpg")
    }
}
