import ImageWorkerProtocol
import TestSupport
import Testing

@Suite struct JSONParserTests {
    @Test func parsesEveryKindOfValue() throws {
        let value = try JSONParser.parse(#"{"a":[1,-2,3.5,1e3,true,false,null,"x\n\u00e9\ud83d\ude00"],"b":{}}"#)
        #expect(value["a"] == [1, -2, 3.5, .rawNumber("1e3"), true, false, nil, "x\né😀"])
        #expect(value["a"]?.arrayValue?[3].integerValue == 1000)
        #expect(value["b"] == .object(JSONObject()))
    }

    /// An object keeps its keys' first order, the last value of a key, and equality without order,
    /// small (pairs searched) and large (indexed), through removals.
    @Test func objectsKeepOrderAndTheLastValue() throws {
        for size in [3, 16, 16 + 1, 200] {
            var object = JSONObject()
            for i in 0..<size { object["k\(i)"] = .int(Int64(i)) }
            object["k0"] = "again"
            #expect(object.keys == (0..<size).map { "k\($0)" } && object["k0"] == "again" && object.count == size)
            object["k1"] = nil
            object["k1"] = nil
            #expect(object["k1"] == nil && object.count == size - 1 && object.keys.first(where: { $0 == "k1" }) == nil)
            object["k1"] = true
            #expect(object.keys.last == "k1" && object["k1"] == true && object["k2"] == 2)
            var reversed = JSONObject()
            for (key, value) in object.reversed() { reversed[key] = value }
            #expect(reversed == object && reversed.keys != object.keys)
            reversed["k2"] = 3
            #expect(reversed != object)
            reversed["k2"] = 2
            reversed["extra"] = nil
            #expect(reversed == object)
            reversed["extra"] = 1
            #expect(reversed != object)
        }
        // Parsed: a duplicate key's last value at its first place; a large object whole.
        let parsed = try JSONParser.parse(#"{"a":1,"b":2,"a":3}"#)
        #expect(parsed.objectValue?.keys == ["a", "b"] && parsed["a"] == 3)
        let many = (0..<5000).map { "\"\($0 % 2500)\":\($0)" }.joined(separator: ",")
        let large = try #require(try JSONParser.parse("{" + many + "}").objectValue)
        #expect(large.count == 2500 && large["0"] == 2500 && large["2499"] == 4999 && large.keys.first == "0")
        #expect(JSONWriter.encode(.object(large)).count == JSONWriter.encode(try JSONParser.parse(JSONWriter.encode(.object(large)))).count)
    }

    /// A value's extent, found without parsing it (the framer's and the manifest index's scan).
    @Test func aValuesEndIsFoundWithoutParsingIt() {
        func end(_ text: String, from start: Int = 0) -> Int? { JSONParser.valueEnd(in: Array(text.utf8)[...], from: start) }
        #expect(end(#"{"a": "}\"]", "b": [1, {"c": ","}]} tail"#) == 35)
        #expect(end(#""x\"y", 2"#) == 6)
        #expect(end("12 , 3") == 3, "a scalar runs to the comma at its level")
        #expect(end("[1, 2]]", from: 4) == 5, "a closing bracket of the level above ends a scalar")
        #expect(end("true") == 4)
        #expect(end(#"{"a": [1, 2"#) == nil, "still open")
        #expect(end(#""abc"#) == nil)
        #expect(end("", from: 0) == nil)
    }

    @Test func keepsIntegersAndTheirType() throws {
        #expect(try JSONParser.parse("1") == .int(1))
        #expect(try JSONParser.parse("1.0") == .double(1))
        #expect(try JSONParser.parse("9223372036854775807") == .int(Int64.max))
        // Beyond Int64: the number as its text, not a failure and not a rounded double.
        #expect(try JSONParser.parse("92233720368547758080") == .rawNumber("92233720368547758080"))
        #expect(try JSONParser.parse("92233720368547758080").numberValue == 92233720368547758080)
    }

    /// What `.int` or `.double` would not write back byte for byte stays text, so that an id is
    /// echoed exactly as sent.
    @Test(arguments: ["-0", "1e2", "1E+2", "-0.00", "1.50", "18446744073709551615", "-9223372036854775809", "0.1e-5"])
    func numbersTheWriterWouldChangeKeepTheirText(_ text: String) throws {
        let value = try JSONParser.parse(text)
        #expect(value == .rawNumber(text))
        #expect(JSONWriter.encodeString(value) == text)
    }

    @Test(arguments: ["0", "-1", "9223372036854775807", "-9223372036854775808", "1.5", "0.25", "-2.5"])
    func everyNumberIsWrittenBackAsItCame(_ text: String) throws {
        #expect(JSONWriter.encodeString(try JSONParser.parse(text)) == text)
    }

    @Test(arguments: [
        "", " ", "{", "[1,]", "{\"a\":1,}", "01", "1.", ".5", "+1", "NaN", "Infinity", "'x'", "[1 2]", "{\"a\" 1}",
        "\"\u{01}\"", "\"\\x\"", "\"\\u12\"", "tru", "nul", "{} {}", "// c\n{}", "[1]x", "{\"a\":1}}",
    ])
    func rejectsInvalidJSON(_ text: String) {
        #expect(throws: JSONParser.Error.self) { try JSONParser.parse(text) }
    }

    @Test func rejectsInvalidUTF8() throws {
        #expect(throws: JSONParser.Error.self) { try JSONParser.parse([0x22, 0xC3, 0x28, 0x22]) }
        #expect(throws: JSONParser.Error.self) { try JSONParser.parse([0x22, 0xFF, 0x22]) }
        #expect(throws: JSONParser.Error.self) { try JSONParser.parse([0x22, 0x5C, 0x6E, 0xED, 0xA0, 0x80, 0x22]) }  // encoded surrogate
        // Each entry point (an array, a slice of a line, any collection), on ASCII, valid and
        // invalid UTF-8 without escapes.
        let line = Array(#"x["ab", "é😀"]y"#.utf8)
        let valid = line[1..<line.count - 1]
        #expect(try JSONParser.parse(valid) == ["ab", "é😀"])
        #expect(try JSONParser.parse(Array(valid)) == ["ab", "é😀"])
        #expect(try JSONParser.parse(valid.reversed().reversed()) == ["ab", "é😀"])
        let invalid: [UInt8] = Array(#"x["ab", ""#.utf8) + [0xC3, 0x28, 0x22, 0x5D]
        #expect(throws: JSONParser.Error.self) { try JSONParser.parse(invalid[1...]) }
        #expect(throws: JSONParser.Error.self) { try JSONParser.parse(Array(invalid[1...])) }
    }

    @Test func limitsNestingDepth() throws {
        let deep = String(repeating: "[", count: 10_000) + String(repeating: "]", count: 10_000)
        #expect(throws: JSONParser.Error.self) { try JSONParser.parse(deep) }
        let fine = String(repeating: "[", count: 100) + String(repeating: "]", count: 100)
        _ = try JSONParser.parse(fine)
    }

    @Test func loneSurrogateEscapesBecomeReplacementCharacters() throws {
        #expect(try JSONParser.parse(#""\ud800x""#) == "\u{FFFD}x")
        #expect(try JSONParser.parse(#""\udc00""#) == "\u{FFFD}")
    }

    @Test func duplicateKeysKeepTheLastValue() throws {
        #expect(try JSONParser.parse(#"{"a":1,"a":2}"#)["a"] == 2)
    }
}

@Suite struct JSONWriterTests {
    @Test func writesCompactJSONInInsertionOrder() {
        let value: JSONValue = ["jsonrpc": "2.0", "id": 1, "result": ["b": [true, nil], "a": 1.5]]
        #expect(JSONWriter.encodeString(value) == #"{"jsonrpc":"2.0","id":1,"result":{"b":[true,null],"a":1.5}}"#)
    }

    @Test func escapesLineBreakersThatSplitlinesWouldSplitOn() {
        let text = JSONWriter.encodeString(.string("a\u{2028}b\u{2029}c\u{85}d\ne\r\u{1}\"\\é"))
        #expect(text == #""a\u2028b\u2029c\u0085d\ne\r\u0001\"\\é""#)
        // Python's splitlines() would split on these: the line must not contain them raw.
        #expect(!text.contains("\u{2028}") && !text.contains("\u{2029}") && !text.contains("\u{85}"))
    }

    @Test func nonFiniteNumbersBecomeNull() {
        #expect(JSONWriter.encodeString([.double(.nan), .double(.infinity)]) == "[null,null]")
    }

    @Test func roundTripsThroughTheParser() throws {
        let value: JSONValue = ["s": "x\u{2028}y😀\u{0}", "n": [.int(-5), .double(0.25), .int(Int64.min)], "o": ["k": nil]]
        #expect(try JSONParser.parse(JSONWriter.encode(value)) == value)
    }
}
