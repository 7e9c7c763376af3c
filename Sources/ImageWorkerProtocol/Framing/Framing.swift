/// How messages are delimited on the wire. The worker answers in the framing the client used.
public enum Framing: String, Sendable {
    /// One JSON message per line, `\n`-terminated (JSON Lines / MCP stdio). The default.
    case ndjson
    /// LSP's base protocol: `Content-Length: N\r\n\r\n` then N bytes of JSON.
    case contentLength = "content-length"

    /// Frames one encoded message for output.
    public func frame(_ json: [UInt8]) -> [UInt8] {
        switch self {
        case .ndjson:
            var out = json
            out.append(0x0A)
            return out
        case .contentLength:
            var out = Array("Content-Length: \(json.count)\r\n\r\n".utf8)
            out.append(contentsOf: json)
            return out
        }
    }
}
