import Foundation
import NIOConcurrencyHelpers

/// An in-memory cookie store for requests that set `handleCookies` (RFC 6265, the parts a client
/// needs: Domain, Path, Max-Age, Expires, Secure; host-only cookies; replacement by name, domain
/// and path). Shared by the whole worker, never written to disk.
public final class CookieJar: Sendable {
    struct Cookie: Sendable, Equatable {
        var name: String
        var value: String
        var domain: String
        var hostOnly: Bool
        var path: String
        var secure: Bool
        var expires: Date?
    }

    private let cookies = NIOLockedValueBox<[Cookie]>([])

    public init() {}

    /// Stores the `Set-Cookie` values of a response from `url`.
    public func store(setCookieHeaders: [String], from url: URL, now: Date = Date()) {
        guard let host = url.host?.lowercased(), !setCookieHeaders.isEmpty else { return }
        let parsed = setCookieHeaders.compactMap { CookieJar.parse($0, host: host, requestPath: url.path, now: now) }
        cookies.withLockedValue { jar in
            for cookie in parsed {
                jar.removeAll { $0.name == cookie.name && $0.domain == cookie.domain && $0.path == cookie.path }
                if let expires = cookie.expires, expires <= now { continue }  // a deletion
                jar.append(cookie)
            }
        }
    }

    /// The `Cookie` header value for a request to `url`, or nil.
    public func header(for url: URL, now: Date = Date()) -> String? {
        guard let host = url.host?.lowercased() else { return nil }
        let path = url.path.isEmpty ? "/" : url.path
        let secure = url.scheme?.lowercased() == "https"
        let matching = cookies.withLockedValue { jar -> [Cookie] in
            jar.removeAll { $0.expires.map { $0 <= now } ?? false }
            return jar.filter { cookie in
                let domainOK = cookie.hostOnly ? host == cookie.domain : CookieJar.domainMatches(host, cookie.domain)
                return domainOK && CookieJar.pathMatches(path, cookie.path) && (!cookie.secure || secure)
            }
        }
        guard !matching.isEmpty else { return nil }
        return matching.sorted { $0.path.count > $1.path.count }.map { "\($0.name)=\($0.value)" }.joined(separator: "; ")
    }

    static func domainMatches(_ host: String, _ domain: String) -> Bool {
        host == domain || (host.hasSuffix("." + domain) && !host.allSatisfy { $0.isNumber || $0 == "." })
    }

    static func pathMatches(_ requestPath: String, _ cookiePath: String) -> Bool {
        if requestPath == cookiePath { return true }
        guard requestPath.hasPrefix(cookiePath) else { return false }
        return cookiePath.hasSuffix("/") || requestPath.dropFirst(cookiePath.count).first == "/"
    }

    static func defaultPath(_ requestPath: String) -> String {
        guard requestPath.hasPrefix("/"), let slash = requestPath.lastIndex(of: "/"), slash != requestPath.startIndex else {
            return "/"
        }
        return String(requestPath[..<slash])
    }

    static func parse(_ header: String, host: String, requestPath: String, now: Date) -> Cookie? {
        let parts = header.split(separator: ";", omittingEmptySubsequences: false).map {
            $0.trimmingCharacters(in: .whitespaces)
        }
        guard let first = parts.first, let eq = first.firstIndex(of: "=") else { return nil }
        let name = first[..<eq].trimmingCharacters(in: .whitespaces)
        let value = first[first.index(after: eq)...].trimmingCharacters(in: .whitespaces)
        guard !name.isEmpty else { return nil }
        var cookie = Cookie(
            name: name, value: value, domain: host, hostOnly: true, path: defaultPath(requestPath), secure: false,
            expires: nil)
        var maxAgeSeen = false
        for attribute in parts.dropFirst() {
            let pieces = attribute.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            let key = pieces[0].lowercased()
            let argument = pieces.count > 1 ? pieces[1] : ""
            switch key {
            case "domain":
                var domain = argument.lowercased()
                if domain.hasPrefix(".") { domain.removeFirst() }
                guard !domain.isEmpty else { continue }
                guard domainMatches(host, domain) else { return nil }  // a cookie for another site
                cookie.domain = domain
                cookie.hostOnly = false
            case "path":
                if argument.hasPrefix("/") { cookie.path = argument }
            case "secure":
                cookie.secure = true
            case "max-age":
                if let seconds = Int(argument) {
                    maxAgeSeen = true
                    cookie.expires = now.addingTimeInterval(TimeInterval(max(seconds, 0) == 0 ? -1 : seconds))
                }
            case "expires":
                if !maxAgeSeen, let date = HTTPDate.parse(argument) { cookie.expires = date }
            default:
                break
            }
        }
        return cookie
    }
}
