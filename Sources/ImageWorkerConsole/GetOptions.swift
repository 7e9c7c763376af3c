import ImageWorkerProtocol

/// What `image-worker get` was asked to do.
public struct GetOptions: Sendable {
    public var urls: [String]
    /// Where the files go (created when missing).
    public var directory: String
    /// `original` (the bytes as downloaded), `png`, `rgba`, `rgb` or `gray`.
    public var format = "original"
    public var progressive = false
    public var priority = "normal"
    public var concurrency = 6
    /// NDJSON events on stdout instead of result lines.
    public var json = false
    /// Progress bars on stderr (the caller decides: a terminal, and not `--json`).
    public var progressBars = false
    public var overwrite = false
    public var maxPixelSize: Int?
    /// With `progressive`: partial images at most this many pixels on their longest side.
    public var partialMaxPixelSize: Int?
    public var timeoutMs: Int64?
    /// Each download's wall-clock limit over every attempt (`deadlineMs`).
    public var deadlineMs: Int64?
    public var maxRetries: Int?
    /// Each download's first retry delay (`retryDelayMs`).
    public var retryDelayMs: Int64?

    public init(urls: [String], directory: String) {
        self.urls = urls
        self.directory = directory
    }

    /// The token of the URL at `index`: `"1"`, `"2"`, … in argument order.
    public static func token(_ index: Int) -> String { String(index + 1) }

    /// The `download` request for the URL at `index`.
    public func downloadRequest(index: Int) -> JSONValue {
        var output: JSONObject = [
            "delivery": "file", "dir": .string(directory), "format": .string(format), "overwrite": .bool(overwrite),
        ]
        if let maxPixelSize { output["maxPixelSize"] = JSONValue(maxPixelSize) }
        if progressive, let partialMaxPixelSize { output["partialMaxPixelSize"] = JSONValue(partialMaxPixelSize) }
        var params: JSONObject = [
            "token": .string(GetOptions.token(index)), "url": .string(urls[index]), "priority": .string(priority),
            "output": .object(output),
        ]
        if progressive { params["progressive"] = true }
        if let timeoutMs { params["timeoutMs"] = .int(timeoutMs) }
        if let deadlineMs { params["deadlineMs"] = .int(deadlineMs) }
        if let retryDelayMs { params["retryDelayMs"] = .int(retryDelayMs) }
        return ["jsonrpc": "2.0", "id": JSONValue(index + 1), "method": "download", "params": .object(params)]
    }
}
