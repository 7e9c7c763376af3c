import Foundation

/// A URL the worker may fetch, checked where it enters: a request's URL and every redirect target.
/// (Fuzzed: `Fuzz/Sources/FuzzURLs`.)
///
/// - The scheme is `http` or `https` (or `file` where the worker allows it), an http(s) URL names
///   a host, and a port, when given, is 1…65535 (a larger one would reach the socket layer, which
///   cannot represent it).
/// - User information (`http://user:password@host/`) never travels with the URL: it is removed
///   from the URL that is fetched and logged, and returned as `userInfo` (the downloader sends it
///   as basic-auth credentials to the URL's origin only). `redacted` removes it from any URL text
///   that is shown (events, logs).
public struct DownloadURL: Sendable, Equatable {
    public struct UserInfo: Sendable, Equatable {
        public var user: String
        public var password: String

        public init(user: String, password: String) {
            (self.user, self.password) = (user, password)
        }
    }

    /// Why a URL is refused; `reason` names the problem (without any user information).
    public struct Invalid: Error, Sendable, Equatable, CustomStringConvertible {
        public let reason: String
        public var description: String { reason }

        public init(reason: String) { self.reason = reason }
    }

    /// The URL to fetch, without user information.
    public let url: URL
    /// From the URL's user information, percent-decoded; nil when it had none.
    public let userInfo: UserInfo?

    public static let portRange = 1...65535

    /// `file` URLs pass (the `FileURLPolicy` decides about them); `fileURLsEnabled` only says
    /// whether an unsupported scheme's message lists them.
    public static func parse(_ string: String, fileURLsEnabled: Bool) throws(Invalid) -> DownloadURL {
        let trimmed = whatwgSeparators(hasEdgeSpace(string) ? string.trimmingCharacters(in: .whitespaces) : string)
        guard !trimmed.isEmpty else { throw Invalid(reason: "the URL is empty") }
        guard let parsed = URL(string: trimmed), let scheme = parsed.scheme?.lowercased() else {
            throw Invalid(reason: "cannot parse \"\(redacted(string))\"")
        }
        switch scheme {
        case "http", "https":
            guard let host = parsed.host, !host.isEmpty else { throw Invalid(reason: "no host in \"\(redacted(string))\"") }
        case "file":
            break
        default:
            let supported = fileURLsEnabled ? "http, https and file are supported" : "http and https are supported"
            throw Invalid(reason: "unsupported scheme \"\(scheme)\" (\(supported))")
        }
        if let port = parsed.port, !portRange.contains(port) {
            throw Invalid(reason: "port \(port) is out of range (1-65535) in \"\(redacted(string))\"")
        }
        if namesAPort(trimmed), parsed.port == nil, scheme != "file" {
            // Foundation drops a port it cannot represent rather than failing.
            throw Invalid(reason: "invalid port in \"\(redacted(string))\"")
        }
        guard parsed.user != nil || parsed.password != nil else { return DownloadURL(url: parsed, userInfo: nil) }
        guard var components = URLComponents(url: parsed, resolvingAgainstBaseURL: false) else {
            throw Invalid(reason: "cannot parse \"\(redacted(string))\"")
        }
        let userInfo = UserInfo(user: components.user ?? "", password: components.password ?? "")
        components.user = nil
        components.password = nil
        guard let stripped = components.url else { throw Invalid(reason: "cannot parse \"\(redacted(string))\"") }
        return DownloadURL(url: stripped, userInfo: userInfo)
    }

    /// For `http` and `https` (the URL standard's special schemes), what the standard reads the
    /// way RFC 3986 does not: a backslash before the query is a slash (`http://h:1\@evil/` names
    /// host `h`, as a browser or an allow-list in front of the worker reads it, not `evil`), and
    /// tabs and line breaks are removed. Other schemes, and a relative reference (a redirect's
    /// `Location`, `base` its URL's scheme), are returned as they are unless `base` is special.
    public static func whatwgSeparators(_ string: String, base: String? = nil) -> String {
        let scheme: Substring
        if let colon = string.firstIndex(of: ":"), string[..<colon].allSatisfy({ $0.isLetter || $0.isNumber || "+-.".contains($0) }),
            !string[..<colon].isEmpty
        {
            scheme = string[..<colon]
        } else {
            scheme = Substring(base ?? "")
        }
        guard ["http", "https"].contains(scheme.lowercased()) else { return string }
        guard string.utf8.contains(where: { $0 == UInt8(ascii: "\\") || $0 == 0x09 || $0 == 0x0A || $0 == 0x0D }) else { return string }
        var out = ""
        var inQuery = false
        for character in string.unicodeScalars {
            switch character {
            case "\t", "\n", "\r": continue
            case "?", "#": inQuery = true
            case "\\" where !inQuery:
                out.unicodeScalars.append("/")
                continue
            default: break
            }
            out.unicodeScalars.append(character)
        }
        return out
    }

    /// `text` (a log line, a header dump) with the user information of every `scheme://` URL in it
    /// removed: what a library logs about a redirect's `Location` must not carry its password.
    public static func redactedText(_ text: String) -> String {
        guard text.contains("@"), text.contains("://") else { return text }
        var out = ""
        var rest = Substring(text)
        while let schemeEnd = rest.range(of: "://") {
            out += rest[..<schemeEnd.upperBound]
            let after = rest[schemeEnd.upperBound...]
            // Where the authority ends: characters a URL cannot hold unencoded (a password may hold
            // `,;()'` and the other sub-delimiters).
            let authorityEnd = after.firstIndex { "/?#\\ \t\n\r\"<>`{}|^".contains($0) } ?? after.endIndex
            if let at = after[..<authorityEnd].lastIndex(of: "@") {
                rest = after[after.index(after: at)...]
            } else {
                rest = after
            }
        }
        return out + rest
    }

    /// `string` with any user information in its authority removed, and nothing else changed.
    public static func redacted(_ string: String) -> String {
        guard string.utf8.contains(UInt8(ascii: "@")), let schemeEnd = string.range(of: "://") else { return string }
        let authorityStart = schemeEnd.upperBound
        let rest = string[authorityStart...]
        // A backslash ends it too: http URLs read it as a slash (see `whatwgSeparators`).
        let authorityEnd = rest.firstIndex { $0 == "/" || $0 == "?" || $0 == "#" || $0 == "\\" } ?? string.endIndex
        guard let at = string[authorityStart..<authorityEnd].lastIndex(of: "@") else { return string }
        return String(string[..<authorityStart]) + String(string[string.index(after: at)...])
    }

    /// Whether Foundation's trimming could change the string: its first or last scalar is not
    /// a printable ASCII one (the usual URL skips Foundation's Unicode trimming).
    static func hasEdgeSpace(_ string: String) -> Bool {
        guard let first = string.utf8.first, let last = string.utf8.last else { return false }
        return !(0x21...0x7E).contains(first) || !(0x21...0x7E).contains(last)
    }

    /// Whether the authority ends in `:` and at least one character (digits or not) meant as a
    /// port (`host:` alone names none): Foundation returns nil for a port that overflows, which
    /// must not read as "no port".
    private static func namesAPort(_ string: String) -> Bool {
        // On the bytes (Foundation's `range(of:)` showed in the profile of every download).
        let bytes = Array(string.utf8)
        var start = 0
        while start + 2 < bytes.count, !(bytes[start] == UInt8(ascii: ":") && bytes[start + 1] == UInt8(ascii: "/") && bytes[start + 2] == UInt8(ascii: "/")) {
            start += 1
        }
        guard start + 2 < bytes.count else { return false }
        start += 3
        var end = start
        while end < bytes.count, bytes[end] != UInt8(ascii: "/"), bytes[end] != UInt8(ascii: "?"), bytes[end] != UInt8(ascii: "#") { end += 1 }
        // After the user information, if any.
        let host = bytes[start..<end].lastIndex(of: UInt8(ascii: "@")).map { $0 + 1 } ?? start
        // An IPv6 literal's colons are inside the brackets.
        let afterHost: Int
        if host < end, bytes[host] == UInt8(ascii: "["), let close = bytes[host..<end].firstIndex(of: UInt8(ascii: "]")) {
            afterHost = close + 1
        } else if let colon = bytes[host..<end].firstIndex(of: UInt8(ascii: ":")) {
            afterHost = colon
        } else {
            return false
        }
        guard afterHost < end, bytes[afterHost] == UInt8(ascii: ":") else { return false }
        return end - afterHost > 1
    }
}
