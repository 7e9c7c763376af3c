import ImageWorkerProtocol

/// The input side of the wire: whatever bytes arrive on stdin. The input is framed twice (as
/// sent, and split at points taken from its own bytes), and each message is parsed, validated as
/// JSON-RPC and written back. Checked: the two framings agree, no message is over the limit, and
/// what the writer writes parses back to the same value.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzProtocol(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    let limit = 4096
    var whole = InputFramer(maximumMessageBytes: limit)
    let items = whole.append(bytes) + whole.finish()
    var split = InputFramer(maximumMessageBytes: limit)
    var pieces: [InputFramer.Item] = []
    var offset = 0
    var step = 1
    while offset < bytes.count {
        let end = min(bytes.count, offset + step)
        pieces += split.append(bytes[offset..<end])
        step = Int(bytes[offset]) % 61 + 1
        offset = end
    }
    pieces += split.finish()
    precondition(items == pieces, "framing depends on how the bytes were split")
    // The reader's quiet-input path, at a point taken from the input.
    var quiet = InputFramer(maximumMessageBytes: limit)
    let pause = bytes.isEmpty ? 0 : Int(bytes[0]) * bytes.count / 256
    var afterPause = quiet.append(bytes[..<pause]) + quiet.idle()
    afterPause += quiet.append(bytes[pause...]) + quiet.idle() + quiet.finish()
    for item in afterPause {
        if case .message(let message) = item { precondition(message.count <= limit + 1, "a message over the limit was delivered") }
    }
    for item in items {
        guard case .message(let message) = item else { continue }
        precondition(message.count <= limit + 1, "a message over the limit was delivered")
        guard let value = try? JSONParser.parse(message) else { continue }
        let written = JSONWriter.encode(value)
        let reparsed = try? JSONParser.parse(written)
        precondition(reparsed == value, "written JSON does not parse back to the same value")
        if case .array(let elements) = value {
            for element in elements { _ = RPCRequest.validate(element) }
        } else {
            _ = RPCRequest.validate(value)
        }
    }
    return 0
}
