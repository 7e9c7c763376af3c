import Foundation

/// What makes two requests the same fetch. Two requests coalesce when everything that can change
/// the response is equal: the URL (as parsed, fragment dropped), the effective headers (defaults
/// merged with the request's, names compared case-insensitively), the credentials, certificate
/// checking, cookie handling and the cache policy. Priority, timeout and output do not count: the fetch uses the
/// timeout of the request that created it.
public struct FetchKey: Hashable, Sendable {
    public let url: String
    public let headers: [String]
    public let credentials: Credentials?
    public let allowInvalidCertificates: Bool
    public let handleCookies: Bool
    public let cachePolicy: CachePolicy

    public init(
        url: URL, headers: [(String, String)], credentials: Credentials?, allowInvalidCertificates: Bool, handleCookies: Bool,
        cachePolicy: CachePolicy = .default
    ) {
        self.init(
            url: url, keyHeaders: FetchKey.keyForm(headers), credentials: credentials, allowInvalidCertificates: allowInvalidCertificates,
            handleCookies: handleCookies, cachePolicy: cachePolicy)
    }

    /// With the headers already in `keyForm` (shared by requests that use the defaults).
    init(
        url: URL, keyHeaders: [String], credentials: Credentials?, allowInvalidCertificates: Bool, handleCookies: Bool,
        cachePolicy: CachePolicy = .default
    ) {
        self.url = FetchKey.canonical(url)
        self.headers = keyHeaders
        self.credentials = credentials
        self.allowInvalidCertificates = allowInvalidCertificates
        self.handleCookies = handleCookies
        self.cachePolicy = cachePolicy
    }

    /// Headers as the key compares them: `name:value`, names lowercased, sorted.
    static func keyForm(_ headers: [(String, String)]) -> [String] {
        headers.map { "\($0.0.lowercased()):\($0.1)" }.sorted()
    }

    static func canonical(_ url: URL) -> String {
        guard var components = URLComponents(url: url, resolvingAgainstBaseURL: false) else { return url.absoluteString }
        components.fragment = nil
        components.scheme = components.scheme?.lowercased()
        components.host = components.host?.lowercased()
        if (components.scheme == "http" && components.port == 80) || (components.scheme == "https" && components.port == 443) {
            components.port = nil
        }
        if components.path.isEmpty && components.host != nil { components.path = "/" }
        return components.string ?? url.absoluteString
    }
}
