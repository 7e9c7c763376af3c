/// Splits the input byte stream into messages. The framing is chosen from the input's start: a
/// first line that is a header (`Name: value`, any header, so `Content-Type` may come before
/// `Content-Length`) means LSP's `Content-Length` framing; anything else (`{`, `[`, …) NDJSON.
/// A message over `maximumMessageBytes` is skipped whole and reported once, and reading goes on.
/// After a header block it cannot use, the framer resynchronises at the next `Content-Length`
/// header, so one bad block costs one error, not the rest of the stream.
public struct InputFramer: Sendable {
    public enum Item: Sendable, Equatable {
        case message([UInt8])
        /// A message longer than the limit was skipped.
        case tooLarge(limit: Int)
        /// The header block of a Content-Length message could not be understood, or the input
        /// ended inside a message.
        case badHeader(String)
    }

    public private(set) var framing: Framing?
    public let maximumMessageBytes: Int

    private var buffer: [UInt8] = []
    private var start = 0  // first unconsumed byte of `buffer`
    /// NDJSON: discarding the rest of an over-long line. Content-Length: bytes still to skip.
    private var discarding = false
    private var bytesToSkip = 0
    private var expectedBody: Int?
    /// After a bad header block: looking for the next `Content-Length` header.
    private var resynchronising = false
    /// NDJSON: how far the line at `start` has been searched for its newline (a long line that
    /// comes in many pieces is scanned once, not once a piece).
    private var scannedTo = 0

    public init(maximumMessageBytes: Int = 16 << 20) {
        self.maximumMessageBytes = maximumMessageBytes
    }

    public mutating func append(_ bytes: some Collection<UInt8>) -> [Item] {
        buffer.append(contentsOf: bytes)
        var items: [Item] = []
        process(into: &items, atEOF: false)
        compact()
        return items
    }

    /// End of input: a last line without its newline is still a message; a Content-Length
    /// message or header block cut off by the end is reported (never dropped silently).
    public mutating func finish() -> [Item] {
        var items: [Item] = []
        process(into: &items, atEOF: true)
        if framing == .contentLength, !resynchronising {
            if let length = expectedBody {
                items.append(.badHeader("input ended after \(buffer.count - start) of the \(length) bytes of a message"))
            } else if bytesToSkip > 0 {
                // An over-long message, already reported, was cut off: nothing more to say.
            } else if buffer[start...].contains(where: { !isBlank($0) }) {
                items.append(.badHeader("input ended inside a header block"))
            }
        }
        buffer.removeAll()
        start = 0
        scannedTo = 0
        return items
    }

    /// True while a Content-Length body has begun but not all its declared bytes have come.
    public var isAwaitingBody: Bool { expectedBody != nil }

    /// The input has been quiet for a while (the reader's timeout) with a body still short of
    /// its declared length. When the bytes that came already form a complete JSON object or
    /// array (which only blanks could follow), the header declared too much: the message is taken
    /// now rather than when bytes the client, waiting for its answer, will never send have come.
    /// Only called on silence, so what `append` and `finish` produce never depends on how the
    /// input was split into reads.
    public mutating func idle() -> [Item] {
        guard framing == .contentLength, let length = expectedBody, buffer.count - start < length,
            let end = completeValueEnd(start..<buffer.count)
        else { return [] }
        var items: [Item] = [
            .badHeader("Content-Length \(length) is longer than its message (\(end - start) bytes)"),
            .message(Array(buffer[start..<end])),
        ]
        start = end
        expectedBody = nil
        process(into: &items, atEOF: false)
        compact()
        return items
    }

    private mutating func compact() {
        if start > 0 && (start == buffer.count || start > 65536) {
            buffer.removeFirst(start)
            scannedTo = max(0, scannedTo - start)
            start = 0
        }
    }

    private mutating func process(into items: inout [Item], atEOF: Bool) {
        if framing == nil {
            while start < buffer.count, isBlank(buffer[start]) { start += 1 }
            guard start < buffer.count else { return }
            if buffer[start] == UInt8(ascii: "{") || buffer[start] == UInt8(ascii: "[") {
                framing = .ndjson
            } else if let newline = buffer[start...].firstIndex(of: 0x0A) {
                framing = isHeaderLine(start..<newline) ? .contentLength : .ndjson
            } else if atEOF || buffer.count - start > 8192 {
                framing = isHeaderLine(start..<buffer.count) ? .contentLength : .ndjson
            } else {
                return  // the first line decides: wait for its end
            }
        }
        switch framing! {
        case .ndjson: processLines(into: &items, atEOF: atEOF)
        case .contentLength: processHeaders(into: &items, atEOF: atEOF)
        }
    }

    /// `Name: value`: an HTTP field name (RFC 9110 token characters) and a colon.
    private func isHeaderLine(_ range: Range<Int>) -> Bool {
        var i = range.lowerBound
        while i < range.upperBound, Self.isTokenByte(buffer[i]) { i += 1 }
        return i > range.lowerBound && i < range.upperBound && buffer[i] == UInt8(ascii: ":")
    }

    private static func isTokenByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            return true
        default:
            return Array("!#$%&'*+-.^_`|~".utf8).contains(byte)
        }
    }

    private func isBlank(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D
    }

    private mutating func processLines(into items: inout [Item], atEOF: Bool) {
        while start < buffer.count {
            guard let newline = buffer[max(start, scannedTo)...].firstIndex(of: 0x0A) else {
                scannedTo = buffer.count
                let pending = buffer.count - start
                if discarding {
                    start = buffer.count
                } else if pending > maximumMessageBytes {
                    items.append(.tooLarge(limit: maximumMessageBytes))
                    discarding = true
                    start = buffer.count
                } else if atEOF {
                    emitLine(start..<buffer.count, into: &items)
                    start = buffer.count
                }
                return
            }
            let range = start..<newline
            start = newline + 1
            if discarding {
                discarding = false
                continue
            }
            if range.count > maximumMessageBytes + 1 {
                items.append(.tooLarge(limit: maximumMessageBytes))
                continue
            }
            emitLine(range, into: &items)
        }
    }

    private func emitLine(_ range: Range<Int>, into items: inout [Item]) {
        var end = range.upperBound
        if end > range.lowerBound, buffer[end - 1] == 0x0D { end -= 1 }
        let line = buffer[range.lowerBound..<end]
        if line.allSatisfy(isBlank) { return }
        if line.count > maximumMessageBytes {
            items.append(.tooLarge(limit: maximumMessageBytes))
            return
        }
        items.append(.message(Array(line)))
    }

    private mutating func processHeaders(into items: inout [Item], atEOF: Bool) {
        while true {
            if bytesToSkip > 0 {
                let n = min(bytesToSkip, buffer.count - start)
                start += n
                bytesToSkip -= n
                if bytesToSkip > 0 { return }
            }
            if let length = expectedBody {
                guard buffer.count - start >= length else { return }
                let body = start..<start + length
                expectedBody = nil
                if let next = overrun(in: body) {
                    // The declared length ran into the next message's header block: that block is
                    // read again, so the message after a bad length is not lost.
                    items.append(.badHeader("Content-Length \(length) runs into the next message's header"))
                    items.append(.message(Array(buffer[start..<next])))
                    start = next
                    continue
                }
                items.append(.message(Array(buffer[body])))
                start += length
                continue
            }
            if resynchronising {
                guard resynchronise() else { return }
            }
            while start < buffer.count, isBlank(buffer[start]) { start += 1 }
            guard start < buffer.count else { return }
            // Find the blank line that ends the header block (CRLF CRLF, or LF LF from lax clients).
            guard let (headerEnd, bodyStart) = findHeaderEnd() else {
                if buffer.count - start > 8192 {
                    items.append(.badHeader("header block longer than 8192 bytes"))
                    start += 1
                    resynchronising = true
                    continue
                }
                return
            }
            let headerText = String(decoding: buffer[start..<headerEnd], as: UTF8.self)
            let blockStart = start
            start = bodyStart
            var length: Int?
            for line in headerText.split(whereSeparator: { $0 == "\r\n" || $0 == "\n" || $0 == "\r" }) {
                let parts = line.split(separator: ":", maxSplits: 1)
                guard parts.count == 2 else { continue }
                if parts[0].trimmingSpaces.lowercased() == "content-length" {
                    length = Int(parts[1].trimmingSpaces)
                }
            }
            guard let length, length >= 0 else {
                // What follows may be this block's body, of unknown length: skip to the next
                // header block rather than read the body as one.
                items.append(.badHeader("missing or invalid Content-Length header"))
                // The block may be the tail of a body whose length was declared too short, with
                // the next message's header at its end: look for it from inside the block.
                start = blockStart + 1
                resynchronising = true
                continue
            }
            if length > maximumMessageBytes {
                items.append(.tooLarge(limit: maximumMessageBytes))
                bytesToSkip = length
                continue
            }
            expectedBody = length
        }
    }

    /// Moves `start` to the next `Content-Length` (any case) and returns true; without one in
    /// the buffer, drops all but a tail that may begin it, and returns false.
    private mutating func resynchronise() -> Bool {
        let needle = Array("content-length".utf8)
        var i = start
        while i + needle.count <= buffer.count {
            var matched = true
            for (k, byte) in needle.enumerated() where asciiLowercased(buffer[i + k]) != byte {
                matched = false
                break
            }
            if matched {
                start = i
                resynchronising = false
                return true
            }
            i += 1
        }
        start = max(start, buffer.count - (needle.count - 1))
        return false
    }

    /// When `body` does not end as a JSON object or array does but begins with one that is
    /// complete and valid, where that one ends: the declared length took in bytes of what
    /// follows (the next header block), which are read again. A body that ends with `}` or `]`
    /// is taken as it is, without a scan.
    private func overrun(in body: Range<Int>) -> Int? {
        var last = body.upperBound
        while last > body.lowerBound, isBlank(buffer[last - 1]) { last -= 1 }
        guard last > body.lowerBound, buffer[last - 1] != UInt8(ascii: "}"), buffer[last - 1] != UInt8(ascii: "]"),
            let end = firstValueEnd(body), end < last, (try? JSONParser.parse(buffer[body.lowerBound..<end])) != nil
        else { return nil }
        return end
    }

    /// The end of the object or array that `range` starts with (brackets matched outside strings),
    /// or nil when it does not start with one or does not close it.
    private func firstValueEnd(_ range: Range<Int>) -> Int? {
        guard let first = range.first, buffer[first] == UInt8(ascii: "{") || buffer[first] == UInt8(ascii: "[") else { return nil }
        return JSONParser.valueEnd(in: buffer[range], from: first)
    }

    /// The end of the complete JSON object or array that `range` holds, when its last non-blank
    /// byte closes one and it parses.
    private func completeValueEnd(_ range: Range<Int>) -> Int? {
        var end = range.upperBound
        while end > range.lowerBound, isBlank(buffer[end - 1]) { end -= 1 }
        // The bracket scan first (cheap): the parse runs only when the value closes right there.
        guard end > range.lowerBound, buffer[end - 1] == UInt8(ascii: "}") || buffer[end - 1] == UInt8(ascii: "]"),
            firstValueEnd(range.lowerBound..<end) == end, (try? JSONParser.parse(buffer[range.lowerBound..<end])) != nil
        else { return nil }
        return end
    }

    private func asciiLowercased(_ byte: UInt8) -> UInt8 {
        byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z") ? byte + 32 : byte
    }

    private func findHeaderEnd() -> (Int, Int)? {
        var i = start
        while i < buffer.count {
            if buffer[i] == 0x0A {
                if i + 1 < buffer.count, buffer[i + 1] == 0x0A { return (i, i + 2) }
                if i + 2 < buffer.count, buffer[i + 1] == 0x0D, buffer[i + 2] == 0x0A { return (i, i + 3) }
            }
            i += 1
        }
        return nil
    }
}

extension Substring {
    fileprivate var trimmingSpaces: Substring {
        var s = self
        while let f = s.first, f == " " || f == "\t" { s.removeFirst() }
        while let l = s.last, l == " " || l == "\t" { s.removeLast() }
        return s
    }
}
