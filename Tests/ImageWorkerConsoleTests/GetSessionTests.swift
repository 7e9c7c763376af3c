import ImageWorkerConsole
import ImageWorkerProtocol
import Testing

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
        #expect(!session.allEnded)
        // A second terminal event for an ended token changes nothing.
        #expect(session.handle(Self.event("download/completed", ["token": "1", "outcome": "cancelled"])).isEmpty)

        let failed = session.handle(Self.event("download/completed", [
            "token": "2", "outcome": "error",
            "error": ["code": 1005, "message": "HTTP status 404", "data": ["name": "InvalidDownloadStatusCode", "statusCode": 404]],
        ]))
        #expect(failed.first == .result("failed  http://h/b.png: InvalidDownloadStatusCode: HTTP status 404"))
        #expect(session.allEnded && session.succeeded == 1 && session.failed == 1)
        #expect(session.summary(seconds: 1.25) == "1 downloaded, 1 failed, 2.0 kB in 1.2 s")
    }

    @Test func aRefusedRequestFailsItsURLAndUnknownTokensAreIgnored() {
        var session = GetSession(urls: ["x"])
        #expect(session.handle(Self.event("download/started", ["token": "7"])).isEmpty)
        #expect(session.handle(Self.event("download/started", ["token": 1])).isEmpty)
        #expect(session.handle(["jsonrpc": "2.0", "id": 1, "result": ["token": "1"]]).isEmpty)
        let outputs = session.handle(["jsonrpc": "2.0", "id": 1, "error": ["code": -32602, "message": "bad url"]])
        #expect(outputs.first == .result("failed  x: InvalidRequest: bad url"))
        #expect(session.allEnded && session.failed == 1)
    }

    @Test func cancelledAndOriginalBytes() {
        var session = GetSession(urls: ["http://h/a", "http://h/b"])
        let ok = session.handle(Self.event("download/completed", [
            "token": "1", "outcome": "success", "byteLength": 1_234_567, "mimeType": "image/gif", "path": "/o/a.gif",
        ]))
        #expect(ok.first == .result("ok      http://h/a -> /o/a.gif (image/gif, 1.2 MB)"))
        let cancelled = session.handle(Self.event("download/completed", ["token": "2", "outcome": "cancelled"]))
        #expect(cancelled.first == .result("cancelled http://h/b"))
        #expect(session.summary(seconds: 0).hasPrefix("1 downloaded, 1 failed"))
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
