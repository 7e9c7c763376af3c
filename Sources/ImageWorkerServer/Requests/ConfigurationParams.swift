import ImageDownloader
import ImageWorkerProtocol

/// The `configure` params, and the configuration as JSON (in `initialize`, `configure` and
/// `status` results).
enum ConfigurationParams {
    static let fields = [
        "maxConcurrentDownloads", "maxConcurrentPerHost", "maxRequestsPerSecondPerHost", "executionOrder", "suspended", "timeoutMs", "headers", "minimumProgressInterval",
        "progressIntervalMs", "maxRetries", "retryBaseDelayMs", "retryMaxDelayMs", "maxBodyBytes", "maxRedirects",
        "failedURLExpiryMs", "hostDownAfter", "hostDownMs", "userAgent", "userAgentToken", "disallowedHeaderDirectives", "maxPixels", "maxProgressiveScans", "maxFrames", "decodeConcurrency", "decodeMemoryBytes", "sharedMaxImages", "sharedMaxBytes", "maxLiveDownloads", "cacheMaxBytes", "proxy", "httpProxy", "httpsProxy", "noProxy", "clearFailedURLs",
    ]

    /// Applies the given fields to `configuration`, all or nothing. Returns whether the failed-URL
    /// list is to be cleared.
    static func apply(
        _ request: RPCRequest, to configuration: inout DownloaderConfiguration, decoding: inout DecodeSettings
    ) throws(RPCError) -> Bool {
        let p = try ParamReader(request, allowed: fields)
        var c = configuration
        var d = decoding
        if let v = try p.integer("maxPixels", in: OptionTable.Configure.maxPixels) { d.maxPixels = UInt64(v) }
        if let v = try p.integer("maxProgressiveScans", in: OptionTable.Configure.maxProgressiveScans) { d.maxProgressiveScans = Int(v) }
        if let v = try p.integer("maxFrames", in: OptionTable.Configure.maxFrames) { d.maxFrames = Int(v) }
        if let v = try p.integer("decodeConcurrency", in: OptionTable.Configure.decodeConcurrency) { d.decodeConcurrency = Int(v) }
        if let v = try p.integer("decodeMemoryBytes", in: OptionTable.Configure.decodeMemoryBytes) { d.decodeMemoryBytes = Int(v) }
        if let v = try p.integer("sharedMaxImages", in: OptionTable.Configure.sharedMaxImages) { d.sharedMaxImages = Int(v) }
        if let v = try p.integer("sharedMaxBytes", in: OptionTable.Configure.sharedMaxBytes) { d.sharedMaxBytes = Int(v) }
        if let v = try p.integer("maxLiveDownloads", in: OptionTable.Configure.maxLiveDownloads) { d.maxLiveDownloads = Int(v) }
        d.sizeDeliveryStage(&c)
        if let v = try p.integer("maxConcurrentDownloads", in: OptionTable.Configure.maxConcurrentDownloads) { c.maxConcurrentDownloads = Int(v) }
        if let v = try p.integer("maxConcurrentPerHost", in: OptionTable.Configure.maxConcurrentPerHost) { c.maxConcurrentPerHost = Int(v) }
        if let v = try p.number("maxRequestsPerSecondPerHost", in: OptionTable.Configure.maxRequestsPerSecondPerHost) { c.maxRequestsPerSecondPerHost = v > 0 ? v : nil }
        if let v = try p.oneOf("executionOrder", ExecutionOrder.allCases.map(\.rawValue)) { c.executionOrder = ExecutionOrder(rawValue: v)! }
        if let v = try p.bool("suspended") { c.suspended = v }
        if let v = try p.integer("timeoutMs", in: OptionTable.Configure.timeoutMs) { c.timeoutMs = v }
        if let o = try p.object("headers") {
            var headers: [String: String] = [:]
            for (name, value) in try HeaderValidation.headers(o, field: "headers") { headers[name] = value }
            c.headers = headers
        }
        if let v = try p.number("minimumProgressInterval", in: OptionTable.Configure.minimumProgressInterval) { c.minimumProgressInterval = v }
        if let v = try p.integer("progressIntervalMs", in: OptionTable.Configure.progressIntervalMs) { c.progressIntervalMs = v }
        if let v = try p.integer("maxRetries", in: OptionTable.Configure.maxRetries) { c.maxRetries = Int(v) }
        if let v = try p.integer("retryBaseDelayMs", in: OptionTable.Configure.retryBaseDelayMs) { c.retryBaseDelayMs = v }
        if let v = try p.integer("retryMaxDelayMs", in: OptionTable.Configure.retryMaxDelayMs) { c.retryMaxDelayMs = v }
        if let v = try p.integer("maxBodyBytes", in: OptionTable.Configure.maxBodyBytes) { c.maxBodyBytes = v }
        if let v = try p.integer("maxRedirects", in: OptionTable.Configure.maxRedirects) { c.maxRedirects = Int(v) }
        if let v = try p.integer("failedURLExpiryMs", in: OptionTable.Configure.failedURLExpiryMs) { c.failedURLExpiryMs = v }
        if let v = try p.integer("hostDownAfter", in: OptionTable.Configure.hostDownAfter) { c.hostDownAfter = Int(v) }
        if let v = try p.integer("hostDownMs", in: OptionTable.Configure.hostDownMs) { c.hostDownMs = v }
        if let v = try p.string("userAgent") {
            guard !v.isEmpty, !v.utf8.contains(where: { $0 == 0x0D || $0 == 0x0A || $0 == 0 }) else {
                throw .invalidParams("\"userAgent\" must be a non-empty string without CR, LF or NUL")
            }
            c.userAgent = v
        }
        if let v = try p.string("userAgentToken") {
            guard !v.isEmpty, !v.utf8.contains(where: { $0 == 0x0D || $0 == 0x0A || $0 == 0 || $0 == 0x28 || $0 == 0x29 }) else {
                throw .invalidParams("\"userAgentToken\" must be a non-empty string without CR, LF, NUL or parentheses")
            }
            c.userAgentToken = v
        }
        if let v = try p.strings("disallowedHeaderDirectives") { c.disallowedHeaderDirectives = v.map { $0.lowercased() } }
        if let v = try p.integer("cacheMaxBytes", in: OptionTable.Configure.cacheMaxBytes) { c.cacheMaxBytes = v }
        if let v = try p.string("proxy") { c.proxies.useForBoth(try proxy(v, "proxy")) }
        if let v = try p.string("httpProxy") { c.proxies.httpProxy = try proxy(v, "httpProxy") }
        if let v = try p.string("httpsProxy") { c.proxies.httpsProxy = try proxy(v, "httpsProxy") }
        if let v = try p.string("noProxy") { c.proxies.setNoProxy(v) }
        let clear = try p.bool("clearFailedURLs") ?? false
        configuration = c
        decoding = d
        return clear
    }

    /// A proxy setting: a URL, or "" for none (connect directly).
    static func proxy(_ text: String, _ field: String) throws(RPCError) -> ProxySettings.Proxy? {
        if text.trimmingCharacters(in: .whitespaces).isEmpty { return nil }
        do {
            return try ProxySettings.Proxy.parse(text)
        } catch {
            throw .invalidParams("\"\(field)\": \(error.reason)")
        }
    }

    static func json(_ c: DownloaderConfiguration, _ d: DecodeSettings) -> JSONValue {
        var headers = JSONObject()
        for (name, value) in c.headers.sorted(by: { $0.key < $1.key }) { headers[name] = .string(value) }
        return [
            "maxConcurrentDownloads": JSONValue(c.maxConcurrentDownloads),
            "maxConcurrentPerHost": JSONValue(c.maxConcurrentPerHost),
            "maxRequestsPerSecondPerHost": .double(c.maxRequestsPerSecondPerHost ?? 0),
            "executionOrder": .string(c.executionOrder.rawValue),
            "suspended": .bool(c.suspended),
            "timeoutMs": .int(c.timeoutMs),
            "headers": .object(headers),
            "minimumProgressInterval": .double(c.minimumProgressInterval),
            "progressIntervalMs": .int(c.progressIntervalMs),
            "maxRetries": JSONValue(c.maxRetries),
            "retryBaseDelayMs": .int(c.retryBaseDelayMs),
            "retryMaxDelayMs": .int(c.retryMaxDelayMs),
            "maxBodyBytes": .int(c.maxBodyBytes),
            "maxRedirects": JSONValue(c.maxRedirects),
            "failedURLExpiryMs": .int(c.failedURLExpiryMs),
            "hostDownAfter": JSONValue(c.hostDownAfter),
            "hostDownMs": .int(c.hostDownMs),
            "userAgent": .string(c.userAgent),
            "userAgentToken": c.userAgentToken.map { .string($0) } ?? .null,
            "disallowedHeaderDirectives": .array(c.disallowedHeaderDirectives.map { .string($0) }),
            "maxPixels": .int(Int64(clamping: d.maxPixels)),
            "maxProgressiveScans": JSONValue(d.maxProgressiveScans),
            "maxFrames": JSONValue(d.maxFrames),
            "decodeConcurrency": JSONValue(d.decodeConcurrency),
            "decodeMemoryBytes": JSONValue(d.decodeMemoryBytes),
            "sharedMaxImages": JSONValue(d.sharedMaxImages),
            "sharedMaxBytes": JSONValue(d.sharedMaxBytes),
            "maxLiveDownloads": JSONValue(d.maxLiveDownloads),
            "cacheMaxBytes": .int(c.cacheMaxBytes),
            // Shown without passwords.
            "httpProxy": c.proxies.httpProxy.map { .string($0.description) } ?? .null,
            "httpsProxy": c.proxies.httpsProxy.map { .string($0.description) } ?? .null,
            "noProxy": .string(c.proxies.noProxy),
        ]
    }
}
