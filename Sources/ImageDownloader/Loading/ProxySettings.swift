import Foundation
import InputValidation

/// Which proxy, if any, a URL goes through: as curl, Python's `requests` and Node's tools read
/// `http_proxy`/`HTTP_PROXY`, `https_proxy`/`HTTPS_PROXY`, `all_proxy`/`ALL_PROXY` and
/// `no_proxy`/`NO_PROXY` (lower case first), unless a `proxy` setting replaces the first three.
/// A value; `route(for:)` is what the loader asks for every hop.
public struct ProxySettings: Sendable, Equatable {
    /// One proxy server.
    public struct Proxy: Sendable, Hashable, CustomStringConvertible {
        public enum Kind: String, Sendable { case http, socks5 }
        public var kind: Kind
        public var host: String
        public var port: Int
        public var user: String?
        public var password: String?

        /// `host:port` as a URL's authority (an IPv6 address in brackets).
        public var authority: String { (host.contains(":") ? "[\(host)]" : host) + ":\(port)" }

        /// `Proxy-Authorization` for its credentials, if it has any.
        public var authorization: String? {
            user.map { "Basic " + Data("\($0):\(password ?? "")".utf8).base64EncodedString() }
        }

        /// The proxy as shown in logs, events and the configuration: never its password.
        public var description: String {
            let who = user.map { "\($0)@" } ?? ""
            let shownHost = host.contains(":") ? "[\(host)]" : host
            return "\(kind.rawValue)://\(who)\(shownHost):\(port)"
        }

        /// A proxy value as it may appear in a message: everything before its last `@` (the user
        /// information, whatever characters the password holds, with or without a scheme) is
        /// replaced by `…`. Never the password, even of a value that does not parse.
        public static func shown(_ text: String) -> String {
            guard let at = text.lastIndex(of: "@") else { return text }
            let scheme = text.range(of: "://").map { String(text[..<$0.upperBound]) } ?? ""
            return scheme + "…@" + text[text.index(after: at)...]
        }

        /// Parses `http://[user:pass@]host[:port]`, `socks5://host[:port]` (also `socks5h`, and a
        /// bare `host:port`, taken as http, as curl does).
        public static func parse(_ text: String) throws(DownloadURL.Invalid) -> Proxy {
            let trimmed = text.trimmingCharacters(in: .whitespaces)
            let withScheme = trimmed.contains("://") ? trimmed : "http://" + trimmed
            guard let url = URL(string: withScheme), let scheme = url.scheme?.lowercased(), let host = url.host, !host.isEmpty else {
                throw DownloadURL.Invalid(reason: "cannot parse the proxy \"\(Proxy.shown(text))\"")
            }
            let kind: Kind
            switch scheme {
            case "http": kind = .http
            case "socks5", "socks5h": kind = .socks5
            case "https":
                throw DownloadURL.Invalid(reason: "a TLS connection to the proxy itself (https://) is not supported; use http:// (https URLs still tunnel through it with CONNECT)")
            default:
                throw DownloadURL.Invalid(reason: "unsupported proxy scheme \"\(scheme)\" (http and socks5 are supported)")
            }
            let port = url.port ?? (kind == .http ? 80 : 1080)
            guard DownloadURL.portRange.contains(port) else {
                throw DownloadURL.Invalid(reason: "the proxy's port \(port) is out of range (1-65535)")
            }
            var proxy = Proxy(kind: kind, host: host, port: port)
            if let user = url.user(percentEncoded: false), !user.isEmpty {
                guard kind == .http else {
                    throw DownloadURL.Invalid(reason: "SOCKS proxies with credentials are not supported (AsyncHTTPClient has no SOCKS authentication)")
                }
                proxy.user = user
                proxy.password = url.password(percentEncoded: false) ?? ""
            }
            return proxy
        }

        public init(kind: Kind, host: String, port: Int, user: String? = nil, password: String? = nil) {
            self.kind = kind
            self.host = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
            self.port = port
            self.user = user
            self.password = password
        }
    }

    /// One `no_proxy` entry: `*`, a host name (and its subdomains; a leading dot is allowed), an
    /// IP address, or an IP range in CIDR notation; with `:port`, that port only.
    public struct Bypass: Sendable, Equatable {
        enum Pattern: Sendable, Equatable {
            case everything
            case domain(String)
            case network(address: [UInt8], prefix: Int)
        }
        var pattern: Pattern
        var port: Int?

        static func parse(_ entry: Substring) -> Bypass? {
            var text = entry.trimmingCharacters(in: .whitespaces).lowercased()
            guard !text.isEmpty else { return nil }
            if text == "*" { return Bypass(pattern: .everything, port: nil) }
            var port: Int? = nil
            // host:port or [v6]:port; a bare IPv6 address has several colons and no port.
            if text.hasPrefix("["), let close = text.firstIndex(of: "]") {
                let rest = text[text.index(after: close)...]
                if rest.hasPrefix(":") { port = Int(rest.dropFirst()) }
                text = String(text[text.index(after: text.startIndex)..<close])
            } else if text.filter({ $0 == ":" }).count == 1, let colon = text.firstIndex(of: ":") {
                port = Int(text[text.index(after: colon)...])
                text = String(text[..<colon])
            }
            if let slash = text.firstIndex(of: "/"), let bits = Int(text[text.index(after: slash)...]),
                let address = ProxySettings.ipBytes(String(text[..<slash])), (0...address.count * 8).contains(bits)
            {
                return Bypass(pattern: .network(address: address, prefix: bits), port: port)
            }
            if let address = ProxySettings.ipBytes(text) {
                return Bypass(pattern: .network(address: address, prefix: address.count * 8), port: port)
            }
            while text.hasPrefix(".") || text.hasPrefix("*.") { text.removeFirst(text.hasPrefix(".") ? 1 : 2) }
            while text.hasSuffix(".") { text.removeLast() }
            guard !text.isEmpty else { return nil }
            return Bypass(pattern: .domain(text), port: port)
        }

        func matches(host: String, port: Int) -> Bool {
            if let own = self.port, own != port { return false }
            switch pattern {
            case .everything:
                return true
            case .domain(let domain):
                let name = host.hasSuffix(".") ? String(host.dropLast()) : host
                return name == domain || name.hasSuffix("." + domain)
            case .network(let network, let prefix):
                guard let address = ProxySettings.ipBytes(host), address.count == network.count else { return false }
                var remaining = prefix
                for (a, b) in zip(address, network) where remaining > 0 {
                    let bits = min(8, remaining)
                    let mask = UInt8(truncatingIfNeeded: 0xFF << (8 - bits))
                    if a & mask != b & mask { return false }
                    remaining -= bits
                }
                return true
            }
        }
    }

    public var httpProxy: Proxy?
    public var httpsProxy: Proxy?
    public var bypass: [Bypass] = []
    /// The `no_proxy` text as given (shown in the configuration).
    public private(set) var noProxy: String = ""

    public init(httpProxy: Proxy? = nil, httpsProxy: Proxy? = nil, noProxy: String = "") {
        self.httpProxy = httpProxy
        self.httpsProxy = httpsProxy
        setNoProxy(noProxy)
    }

    /// The same proxy (or none) for http and https URLs.
    public mutating func useForBoth(_ proxy: Proxy?) {
        httpProxy = proxy
        httpsProxy = proxy
    }

    public mutating func setNoProxy(_ text: String) {
        noProxy = text
        bypass = text.split(separator: ",").compactMap { Bypass.parse($0) }
    }

    /// From the environment, as curl reads it (lower case first; `ALL_PROXY` where the scheme's
    /// own is unset). An unusable value is skipped with the reason in `problems`, so that a typo
    /// in a shell profile cannot stop the worker; the log says so.
    public static func fromEnvironment(_ environment: [String: String]) -> (settings: ProxySettings, problems: [String]) {
        var problems: [String] = []
        // An empty variable counts as unset (the other case is read).
        func value(_ name: String) -> String? {
            [environment[name.lowercased()], environment[name.uppercased()]].compactMap { $0 }
                .first { !$0.trimmingCharacters(in: .whitespaces).isEmpty }
        }
        func proxy(_ name: String) -> Proxy? {
            guard let text = value(name) ?? value("all_proxy") else { return nil }
            do {
                return try Proxy.parse(text)
            } catch {
                problems.append("\(name): \(error.reason); not used")
                return nil
            }
        }
        let settings = ProxySettings(httpProxy: proxy("http_proxy"), httpsProxy: proxy("https_proxy"), noProxy: value("no_proxy") ?? "")
        return (settings, problems)
    }

    /// The proxy for `url`, or nil to connect directly. As curl: every host goes through the
    /// proxy unless `no_proxy` names it, the loopback host too (`no_proxy=localhost,127.0.0.1`
    /// keeps it direct).
    public func route(for url: URL) -> Proxy? {
        let scheme = url.scheme?.lowercased()
        guard let proxy = scheme == "https" ? httpsProxy : scheme == "http" ? httpProxy : nil else { return nil }
        let host = (url.host ?? "").lowercased()
        let port = url.port ?? (scheme == "https" ? 443 : 80)
        let bare = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        if bypass.contains(where: { $0.matches(host: bare, port: port) }) { return nil }
        return proxy
    }

    /// The bytes of an IPv4 or IPv6 address in text, nil for anything else.
    static func ipBytes(_ text: String) -> [UInt8]? {
        var v4 = in_addr()
        if inet_pton(AF_INET, text, &v4) == 1 {
            return withUnsafeBytes(of: &v4) { Array($0) }
        }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, text, &v6) == 1 {
            return withUnsafeBytes(of: &v6) { Array($0) }
        }
        return nil
    }
}
