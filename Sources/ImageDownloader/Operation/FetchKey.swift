import Foundation

/// What makes two requests the same fetch. Two requests coalesce when everything that can change
/// the response is equal: the URL (as parsed, fragment dropped), the effective headers (defaults
/// merged with the request's, names compared case-insensitively), the credentials, certificate
/// checking, cookie handling and the cache policy. Priority, timeout and output do not count: the fetch uses the
/// timeout of the request that created it.
public struct FetchKey: Hashable, Sendable {
    public let url: String
    public let headers: [String]
    /// Boxed (as few requests carry any, the key stays 24 bytes smaller in every fetch and in
    /// the table of fetches by key).
    public var credentials: Credentials? { credentialsBox?.value }
    private let credentialsBox: CredentialsBox?
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
        self.credentialsBox = credentials.map(CredentialsBox.init)
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
        let text = url.absoluteString
        guard let canonical = components.string else { return text }
        // Usually the same text: the key then shares the URL's storage instead of a copy.
        return canonical == text ? text : canonical
    }
}

/// Credentials held by reference, compared and hashed by value.
private final class CredentialsBox: Hashable, Sendable {
    let value: Credentials
    init(_ value: Credentials) { self.value = value }
    static func == (a: CredentialsBox, b: CredentialsBox) -> Bool { a.value == b.value }
    func hash(into hasher: inout Hasher) { hasher.combine(value) }
}
