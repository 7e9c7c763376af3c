import Crypto
import Foundation

/// A stored response's head and the times around it, with RFC 9111's rules for what images need:
/// whether a response may be stored, how long it stays fresh, how old it is, how to revalidate it,
/// and how a 304 refreshes it. A value, tested without I/O; `HTTPCache` keeps it beside the body.
public struct CachedResponse: Codable, Sendable, Equatable {
    /// The URL it answered (no fragment).
    public var url: String
    public var status: Int
    public var headers: [[String]]
    /// Clock readings (seconds since 1970) when the request was sent and the response head arrived.
    public var requestTime: Double
    public var responseTime: Double
    /// The request's values of the headers the response varies on (nil: the request had none).
    public var vary: [String: String?]
    public var httpVersion: String?
    public var bodyBytes: Int64

    public init(
        url: String, status: Int, headers: [(String, String)], requestTime: Double, responseTime: Double, vary: [String: String?],
        httpVersion: String?, bodyBytes: Int64
    ) {
        self.url = url
        self.status = status
        self.headers = headers.map { [$0.0, $0.1] }
        self.requestTime = requestTime
        self.responseTime = responseTime
        self.vary = vary
        self.httpVersion = httpVersion
        self.bodyBytes = bodyBytes
    }

    public var headerPairs: [(String, String)] { headers.compactMap { $0.count == 2 ? ($0[0], $0[1]) : nil } }

    public func header(_ name: String) -> String? {
        headers.first { $0.count == 2 && LoadedHead.sameName($0[0], name) }?[1]
    }

    /// Every value of a header, comma-joined (RFC 9110 §5.3).
    static func joined(_ headers: [(String, String)], _ name: String) -> String? {
        let values = headers.filter { LoadedHead.sameName($0.0, name) }.map(\.1)
        return values.isEmpty ? nil : values.joined(separator: ", ")
    }

    // MARK: Storing (RFC 9111 §3)

    /// Whether a complete response may be stored: a 200 to a GET without `no-store` on either side,
    /// without `Vary: *`; to a request with credentials, only when the response says `public` (and
    /// never `private`).
    public static func isStorable(status: Int, responseHeaders: [(String, String)], requestHeaders: [(String, String)], hasCredentials: Bool)
        -> Bool
    {
        guard status == 200 else { return false }
        let response = CacheControl(joined(responseHeaders, "Cache-Control"))
        let request = CacheControl(joined(requestHeaders, "Cache-Control"))
        if response.noStore || request.noStore { return false }
        if let vary = joined(responseHeaders, "Vary"), vary.split(separator: ",").contains(where: { $0.trimmingCharacters(in: .whitespaces) == "*" }) {
            return false
        }
        if hasCredentials || joined(requestHeaders, "Authorization") != nil {
            return response.isPublic && !response.isPrivate
        }
        return true
    }

    /// The request's values of the headers named by the response's `Vary`, each as a digest
    /// (`varyDigest`): a `Vary: Authorization, Cookie` must not write bearer tokens and session
    /// cookies into a folder several workers share.
    public static func varyValues(responseHeaders: [(String, String)], requestHeaders: [(String, String)]) -> [String: String?] {
        guard let vary = joined(responseHeaders, "Vary") else { return [:] }
        var values: [String: String?] = [:]
        for name in vary.split(separator: ",") {
            let key = name.trimmingCharacters(in: .whitespaces).lowercased()
            guard !key.isEmpty else { continue }
            values[key] = .some(joined(requestHeaders, key).map(varyDigest))
        }
        return values
    }

    /// What an entry keeps of a request header's value: its SHA-256, never the value.
    static func varyDigest(_ value: String) -> String {
        "sha256:" + SHA256.hash(data: Data(value.utf8)).map { String(format: "%02x", $0) }.joined()
    }

    /// Whether this response may answer a request with these headers (its `Vary` headers match).
    public func matches(requestHeaders: [(String, String)]) -> Bool {
        vary.allSatisfy { name, value in CachedResponse.joined(requestHeaders, name).map(CachedResponse.varyDigest) == value }
    }

    // MARK: Freshness (RFC 9111 §4.2)

    private var cacheControl: CacheControl { CacheControl(header("Cache-Control")) }

    private var dateValue: Double { header("Date").flatMap { HTTPDate.parse($0) }?.timeIntervalSince1970 ?? responseTime }

    /// Seconds the response stays fresh: `max-age`, else `Expires` − `Date`, else a tenth of the
    /// time since `Last-Modified` (at most a week), else 0.
    public var freshnessLifetime: Double {
        let control = cacheControl
        if let maxAge = control.maxAge { return Double(maxAge) }
        if let expires = header("Expires") {
            // An invalid date (often "0" or "-1") means already expired.
            guard let date = HTTPDate.parse(expires) else { return 0 }
            return max(0, date.timeIntervalSince1970 - dateValue)
        }
        if let lastModified = header("Last-Modified").flatMap({ HTTPDate.parse($0) }) {
            return min(7 * 86_400, max(0, (dateValue - lastModified.timeIntervalSince1970) / 10))
        }
        return 0
    }

    /// The response's age at `now`.
    public func currentAge(now: Double) -> Double {
        let ageValue = header("Age").flatMap { Double($0.trimmingCharacters(in: .whitespaces)) } ?? 0
        let apparentAge = max(0, responseTime - dateValue)
        let correctedAgeValue = ageValue + max(0, responseTime - requestTime)
        return max(apparentAge, correctedAgeValue) + max(0, now - responseTime)
    }

    /// Whether it may be served without asking the server, to a request with these headers.
    public func isFresh(now: Double, requestHeaders: [(String, String)]) -> Bool {
        let control = cacheControl
        if control.noCache { return false }
        let request = CacheControl(CachedResponse.joined(requestHeaders, "Cache-Control"))
        if request.noCache || CachedResponse.joined(requestHeaders, "Pragma")?.lowercased().contains("no-cache") == true { return false }
        let age = currentAge(now: now)
        if let maxAge = request.maxAge, age > Double(maxAge) { return false }
        return freshnessLifetime > age
    }

    /// The headers that ask the server whether this is still current; empty without validators.
    public var conditionalHeaders: [(String, String)] {
        var result: [(String, String)] = []
        if let etag = header("ETag") { result.append(("If-None-Match", etag)) }
        if let lastModified = header("Last-Modified") { result.append(("If-Modified-Since", lastModified)) }
        return result
    }

    /// After a 304: its headers replace the stored ones of the same names (RFC 9111 §3.2), and
    /// the times restart.
    public func refreshed(with notModified: [(String, String)], requestTime: Double, responseTime: Double) -> CachedResponse {
        let kept: Set<String> = ["content-length", "content-encoding", "transfer-encoding", "content-range", "connection", "keep-alive"]
        var updated = self
        let replacing = Set(notModified.map { $0.0.lowercased() }).subtracting(kept)
        var headers = headerPairs.filter { !replacing.contains($0.0.lowercased()) }
        headers += notModified.filter { replacing.contains($0.0.lowercased()) }
        updated.headers = headers.map { [$0.0, $0.1] }
        updated.requestTime = requestTime
        updated.responseTime = responseTime
        return updated
    }
}

/// The directives of a `Cache-Control` field that matter here.
struct CacheControl: Equatable {
    var noStore = false
    var noCache = false
    var isPrivate = false
    var isPublic = false
    var maxAge: Int?

    init(_ value: String?) {
        guard let value else { return }
        for part in value.split(separator: ",") {
            let pieces = part.split(separator: "=", maxSplits: 1)
            let name = pieces[0].trimmingCharacters(in: .whitespaces).lowercased()
            let argument = pieces.count > 1 ? pieces[1].trimmingCharacters(in: .whitespaces).trimmingCharacters(in: CharacterSet(charactersIn: "\"")) : nil
            switch name {
            case "no-store": noStore = true
            // `no-cache="field"` restricts only those fields; treated as plain no-cache (stricter).
            case "no-cache": noCache = true
            case "private": isPrivate = true
            case "public": isPublic = true
            case "max-age":
                // A duplicate or invalid max-age makes the response stale (RFC 9111 §4.2.1).
                if let argument, let seconds = Int(argument), seconds >= 0, maxAge == nil { maxAge = seconds } else { maxAge = 0 }
            default: break
            }
        }
    }
}
