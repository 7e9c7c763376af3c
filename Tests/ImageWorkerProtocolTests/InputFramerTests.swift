import ImageWorkerProtocol
import Testing

@Suite struct InputFramerTests {
    func messages(_ items: [InputFramer.Item]) -> [String] {
        items.compactMap { if case .message(let m) = $0 { return String(decoding: m, as: UTF8.self) } else { return nil } }
    }

    @Test func splitsLinesAcceptsCRLFAndSkipsBlankLines() {
        var framer = InputFramer()
        let items = framer.append(Array("{\"a\":1}\r\n\n  \n{\"b\":2}\n{\"c\"".utf8))
        #expect(messages(items) == ["{\"a\":1}", "{\"b\":2}"])
        #expect(framer.framing == .ndjson)
        #expect(messages(framer.append(Array(":3}\n".utf8))) == ["{\"c\":3}"])
    }

    @Test func aLastLineWithoutNewlineCountsAtEOF() {
        var framer = InputFramer()
        #expect(framer.append(Array("{\"a\":1}".utf8)).isEmpty)
        #expect(messages(framer.finish()) == ["{\"a\":1}"])
    }

    @Test func byteAtATimeGivesTheSameMessages() {
        var framer = InputFramer()
        var items: [InputFramer.Item] = []
        for byte in Array("{\"a\":1}\n[1,2]\n".utf8) { items += framer.append([byte]) }
        #expect(messages(items) == ["{\"a\":1}", "[1,2]"])
    }

    @Test func anOverlongLineIsReportedOnceAndSkipped() {
        var framer = InputFramer(maximumMessageBytes: 16)
        var items = framer.append(Array(("{\"x\":\"" + String(repeating: "a", count: 40)).utf8))
        items += framer.append(Array((String(repeating: "b", count: 40) + "\"}\n{\"ok\":1}\n").utf8))
        #expect(items.first == .tooLarge(limit: 16))
        #expect(items.filter { $0 == .tooLarge(limit: 16) }.count == 1)
        #expect(messages(items) == ["{\"ok\":1}"])
    }

    /// LSP allows any header first: a block that opens with `Content-Type` (or any `Name: value`)
    /// is Content-Length framing too, in pieces or whole; a first line that is not a header is
    /// NDJSON (and later a parse error), whatever letter it starts with.
    @Test func detectsContentLengthFramingFromAnyHeader() {
        let body = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"status\"}"
        for first in ["Content-Type: application/vscode-jsonrpc; charset=utf-8", "X-Trace-Id:7", "content-length: \(body.utf8.count)"] {
            let wire = "\(first)\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)"
            for piece in [1, 5, wire.utf8.count] {
                var framer = InputFramer()
                var items: [InputFramer.Item] = []
                let bytes = Array(wire.utf8)
                var i = 0
                while i < bytes.count {
                    items += framer.append(bytes[i..<min(bytes.count, i + piece)])
                    i += piece
                }
                #expect(framer.framing == .contentLength, "\(first), pieces of \(piece)")
                #expect(messages(items) == [body], "\(first), pieces of \(piece)")
            }
        }
        for line in ["Content is not a header", "hello", "C", ": no name", "{\"a\":1}"] {
            var framer = InputFramer()
            let items = framer.append(Array((line + "\n").utf8))
            #expect(framer.framing == .ndjson, "\(line)")
            #expect(messages(items) == [line], "\(line)")
        }
        var undecided = InputFramer()
        #expect(undecided.append(Array("Content-Le".utf8)).isEmpty && undecided.framing == nil, "the first line decides")
        #expect(undecided.finish() == [.message(Array("Content-Le".utf8))], "cut before its colon: a line (a parse error)")
        var cut = InputFramer()
        #expect(cut.append(Array("Content-Length: 10".utf8)).isEmpty)
        #expect(cut.finish() == [.badHeader("input ended inside a header block")])
    }

    @Test func detectsContentLengthFramingFromTheFirstByte() {
        var framer = InputFramer()
        let body1 = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"status\"}"
        let body2 = "[1]"
        let wire = "Content-Length: \(body1.utf8.count)\r\nContent-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n\(body1)"
            + "content-length: \(body2.utf8.count)\r\n\r\n\(body2)"
        var items: [InputFramer.Item] = []
        // In awkward pieces, to prove the reassembly.
        let bytes = Array(wire.utf8)
        var i = 0
        while i < bytes.count {
            let n = min(7, bytes.count - i)
            items += framer.append(bytes[i..<i + n])
            i += n
        }
        #expect(framer.framing == .contentLength)
        #expect(messages(items) == [body1, body2])
    }

    @Test func contentLengthOverTheLimitIsSkipped() {
        var framer = InputFramer(maximumMessageBytes: 10)
        let items = framer.append(Array("Content-Length: 20\r\n\r\n01234567890123456789Content-Length: 2\r\n\r\n{}".utf8))
        #expect(items == [.tooLarge(limit: 10), .message(Array("{}".utf8))])
    }

    @Test func headersWithoutContentLengthAreAnError() {
        var framer = InputFramer()
        let items = framer.append(Array("Content-Type: x\r\n\r\nContent-Length: 2\r\n\r\n{}".utf8))
        #expect(items.count == 2)
        if case .badHeader = items[0] {} else { Issue.record("expected badHeader, got \(items[0])") }
        #expect(items[1] == .message(Array("{}".utf8)))
    }

    /// One bad header block costs one error: the framer does not read that block's body as the
    /// next header block (which refused every later message).
    @Test(arguments: [
        "Content-Length: abc\r\n\r\n{\"a\":1}",
        "Content-Length: -4\r\n\r\n{\"a\":1}\r\n",
        "Content-Type: x\r\n\r\n{\"jsonrpc\":\"2.0\"}\n",
        "Content-Length: 99999999999999999999999\r\n\r\n[1,2,3]",
    ])
    func aBadHeaderBlockResynchronisesAtTheNextOne(_ bad: String) {
        let good = "Content-Length: 2\r\n\r\n{}content-length: 4\r\nContent-Type: y\r\n\r\n[12]"
        let expected: [InputFramer.Item] = [.badHeader(""), .message(Array("{}".utf8)), .message(Array("[12]".utf8))]
        func kinds(_ items: [InputFramer.Item]) -> [InputFramer.Item] {
            items.map { if case .badHeader = $0 { return .badHeader("") } else { return $0 } }
        }
        var whole = InputFramer()
        #expect(kinds(whole.append(Array((bad + good).utf8)) + whole.finish()) == expected)
        var byByte = InputFramer()
        var items: [InputFramer.Item] = []
        for byte in Array((bad + good).utf8) { items += byByte.append([byte]) }
        #expect(kinds(items + byByte.finish()) == expected)
    }

    /// A wrong Content-Length costs at most its own message: too long, the body runs into the next
    /// header block, which is read again; too short, the body's tail and the next header are read
    /// as one block, and the header is found inside it. Whole, and a byte at a time.
    @Test(arguments: [24, 7, -5, -30])
    func aWrongContentLengthLosesNoOtherMessage(_ error: Int) {
        let bodies = [#"{"jsonrpc":"2.0","id":1,"method":"status"}"#, #"{"jsonrpc":"2.0","id":2,"method":"status"}"#, "[3]"]
        var wire = ""
        for (i, body) in bodies.enumerated() {
            wire += "Content-Length: \(body.utf8.count + (i == 0 ? error : 0))\r\n\r\n" + body
        }
        func messages(_ items: [InputFramer.Item]) -> [String] {
            items.compactMap { if case .message(let m) = $0 { return String(decoding: m, as: UTF8.self) } else { return nil } }
        }
        func errors(_ items: [InputFramer.Item]) -> Int { items.filter { if case .badHeader = $0 { true } else { false } }.count }
        var whole = InputFramer()
        let items = whole.append(Array(wire.utf8)) + whole.finish()
        var byByte = InputFramer()
        var bytewise: [InputFramer.Item] = []
        for byte in Array(wire.utf8) { bytewise += byByte.append([byte]) }
        bytewise += byByte.finish()
        for got in [items, bytewise] {
            let texts = messages(got)
            #expect(Array(texts.suffix(2)) == Array(bodies.suffix(2)), "\(got)")
            #expect(errors(got) >= 1, "\(got)")
            if error > 0 { #expect(texts == bodies, "too long: the first message is read up to its end") }
        }
    }

    /// A client that sends one message with too long a Content-Length and waits for its answer is
    /// answered once the input goes quiet: a complete object can only be followed by blanks.
    @Test func aTooLongContentLengthIsAnsweredWhenTheInputGoesQuiet() {
        var framer = InputFramer()
        let body = #"{"jsonrpc":"2.0","id":1,"method":"status"}"#
        #expect(framer.append(Array("Content-Length: \(body.utf8.count + 24)\r\n\r\n\(body)".utf8)) == [])
        #expect(framer.isAwaitingBody)
        let items = framer.idle()
        #expect(items.count == 2)
        if case .badHeader(let reason) = items.first { #expect(reason.contains("longer than its message")) } else { Issue.record("\(items)") }
        #expect(items.last == .message(Array(body.utf8)))
        #expect(!framer.isAwaitingBody)
        // Reading goes on at the next header block, blanks before it skipped.
        let next = #"{"jsonrpc":"2.0","id":2,"method":"status"}"#
        #expect(framer.append(Array("\r\n  Content-Length: \(next.utf8.count)\r\n\r\n\(next)".utf8)) == [.message(Array(next.utf8))])
        // A body that is not yet whole keeps waiting, quiet or not.
        var partial = InputFramer()
        #expect(partial.append(Array("Content-Length: 15\r\n\r\n{\"a\":[1]".utf8)) == [])
        #expect(partial.idle() == [])
        #expect(partial.append(Array(",\"b\":2}".utf8)) == [.message(Array(#"{"a":[1],"b":2}"#.utf8))])
        #expect(partial.idle() == [])
        // Without a pause, a prefix that happens to be whole is not taken early: what `append`
        // yields never depends on how the input was split.
        let wire = Array("Content-Length: 8\r\n\r\n{\"a\":1}}".utf8)
        var whole = InputFramer()
        let wholeItems = whole.append(wire) + whole.finish()
        var split = InputFramer()
        let splitItems = split.append(wire.prefix(wire.count - 1)) + split.append(wire.suffix(1)) + split.finish()
        #expect(wholeItems == splitItems)
        #expect(wholeItems == [.message(Array("{\"a\":1}}".utf8))])
        let quoted = #"{"h":"x\r\nContent-Length: 3","y":1}"#
        var inString = InputFramer()
        #expect(inString.append(Array("Content-Length: \(quoted.utf8.count)\r\n\r\n\(quoted)".utf8)) == [.message(Array(quoted.utf8))])
    }

    @Test func aMessageCutOffByTheEndOfInputIsReported() {
        var framer = InputFramer()
        #expect(framer.append(Array("Content-Length: 2\r\n\r\n{}Content-Length: 10\r\n\r\n{\"a\"".utf8)) == [.message(Array("{}".utf8))])
        #expect(framer.finish() == [.badHeader("input ended after 4 of the 10 bytes of a message")])
        var headerOnly = InputFramer()
        #expect(headerOnly.append(Array("Content-Length: 2\r\n".utf8)) == [])
        #expect(headerOnly.finish() == [.badHeader("input ended inside a header block")])
    }

    @Test func framingWritesWholeMessages() {
        #expect(Framing.ndjson.frame(Array("{}".utf8)) == Array("{}\n".utf8))
        #expect(Framing.contentLength.frame(Array("{}".utf8)) == Array("Content-Length: 2\r\n\r\n{}".utf8))
    }
}
