import Foundation

/// A URL the worker may fetch, checked where it enters: a request's URL and every redirect target.
///
/// - The scheme is `http` or `https` (or `file` where the worker allows it), an http(s) URL names
///   a host, and a port, when given, is 1…65535 (a larger one would reach the socket layer, which
///   cannot represent it).
/// - User information (`http://user:password@host/`) never travels with the URL: it is removed
///   from the URL that is fetched and logged, and returned as basic-auth `credentials`, which, like
///   a request's own, go to the URL's origin only. `redacted` removes it from any URL text that is
///   shown (events, logs).
public struct DownloadURL: Sendable, Equatable {
    /// The URL to fetch, without user information.
    public let url: URL
    /// From the URL's user information, percent-decoded; nil when it had none.
    public let credentials: Credentials?

    public static let portRange = 1...65535

    /// `file` URLs pass (the `FileURLPolicy` decides about them); `fileURLsEnabled` only says
    /// whether an unsupported scheme's message lists them.
    public static func parse(_ string: String, fileURLsEnabled: Bool) throws(DownloadFailure) -> DownloadURL {
        let trimmed = string.trimmingCharacters(in: .whitespaces)
        guard !trimmed.isEmpty else { throw .invalidURL("the URL is empty") }
        guard let parsed = URL(string: trimmed), let scheme = parsed.scheme?.lowercased() else {
            throw .invalidURL("cannot parse \"\(redacted(string))\"")
        }
        switch scheme {
        case "http", "https":
            guard let host = parsed.host, !host.isEmpty else { throw .invalidURL("no host in \"\(redacted(string))\"") }
        case "file":
            break
        default:
            let supported = fileURLsEnabled ? "http, https and file are supported" : "http and https are supported"
            throw .invalidURL("unsupported scheme \"\(scheme)\" (\(supported))")
        }
        if let port = parsed.port, !portRange.contains(port) {
            throw .invalidURL("port \(port) is out of range (1-65535) in \"\(redacted(string))\"")
        }
        if hasEmptyOrUnparsedPort(trimmed), parsed.port == nil, scheme != "file" {
            // Foundation drops a port it cannot represent rather than failing.
            throw .invalidURL("invalid port in \"\(redacted(string))\"")
        }
        guard parsed.user != nil || parsed.password != nil else { return DownloadURL(url: parsed, credentials: nil) }
        guard var components = URLComponents(url: parsed, resolvingAgainstBaseURL: false) else {
            throw .invalidURL("cannot parse \"\(redacted(string))\"")
        }
        let credentials = Credentials(user: components.user ?? "", password: components.password ?? "")
        components.user = nil
        components.password = nil
        guard let stripped = components.url else { throw .invalidURL("cannot parse \"\(redacted(string))\"") }
        return DownloadURL(url: stripped, credentials: credentials)
    }

    /// `string` with any user information in its authority removed, and nothing else changed.
    public static func redacted(_ string: String) -> String {
        guard let schemeEnd = string.range(of: "://") else { return string }
        let authorityStart = schemeEnd.upperBound
        let rest = string[authorityStart...]
        let authorityEnd = rest.firstIndex { $0 == "/" || $0 == "?" || $0 == "#" } ?? string.endIndex
        guard let at = string[authorityStart..<authorityEnd].lastIndex(of: "@") else { return string }
        return String(string[..<authorityStart]) + String(string[string.index(after: at)...])
    }

    /// Whether the authority ends in `:` followed by something (digits or not) that should be a
    /// port: Foundation returns nil for a port that overflows, which must not read as "no port".
    private static func hasEmptyOrUnparsedPort(_ string: String) -> Bool {
        guard let schemeEnd = string.range(of: "://") else { return false }
        let rest = string[schemeEnd.upperBound...]
        let authority = rest.prefix { $0 != "/" && $0 != "?" && $0 != "#" }
        let hostPort = authority.split(separator: "@", omittingEmptySubsequences: false).last ?? authority[...]
        // An IPv6 literal's colons are inside the brackets.
        let afterHost: Substring
        if hostPort.hasPrefix("["), let close = hostPort.firstIndex(of: "]") {
            afterHost = hostPort[hostPort.index(after: close)...]
        } else if let colon = hostPort.firstIndex(of: ":") {
            afterHost = hostPort[colon...]
        } else {
            return false
        }
        guard afterHost.hasPrefix(":") else { return false }
        return afterHost.count > 1
    }
}
