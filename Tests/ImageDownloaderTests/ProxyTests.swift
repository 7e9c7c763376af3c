import AsyncHTTPClient
import Foundation
@testable import ImageDownloader
import InputValidation
import Testing
import TestSupport

/// Which route a URL takes, without I/O.
@Suite struct ProxySettingsTests {
    func url(_ s: String) -> URL { URL(string: s)! }

    /// A value that does not parse is named in the error without its password, whatever the
    /// password holds (`/`, `#`, `?` once cut the user information short) and with no scheme.
    @Test func anUnparsableProxyIsNeverEchoedWithItsPassword() {
        for value in ["http://user:s3cr/et@", "user:s3cret@:bad port", "http://u:s3c#ret@[::1", "socks5://a:s3cret?x@ bad host"] {
            do {
                _ = try ProxySettings.Proxy.parse(value)
                Issue.record("\(value) parsed")
            } catch {
                #expect(!error.reason.contains("s3c"), "\(error.reason)")
            }
            let (_, problems) = ProxySettings.fromEnvironment(["http_proxy": value])
            #expect(!problems.isEmpty && problems.allSatisfy { !$0.contains("s3c") }, "\(problems)")
        }
        #expect(ProxySettings.Proxy.shown("http://user:pw@host:8080") == "http://…@host:8080")
        #expect(ProxySettings.Proxy.shown("host:8080") == "host:8080")
    }

    @Test func theEnvironmentIsReadAsCurlReadsIt() {
        let (s, problems) = ProxySettings.fromEnvironment([
            "http_proxy": "http://lower:1", "HTTP_PROXY": "http://upper:2", "HTTPS_PROXY": "socks5://s:1080",
            "NO_PROXY": "example.org, .internal,10.0.0.0/8",
        ])
        #expect(problems.isEmpty)
        #expect(s.httpProxy?.host == "lower", "lower case first")
        #expect(s.httpsProxy == ProxySettings.Proxy(kind: .socks5, host: "s", port: 1080))
        #expect(s.route(for: url("http://a.example.org/x")) == nil, "subdomains bypass too")
        #expect(s.route(for: url("http://notexample.org/x"))?.host == "lower")
        #expect(s.route(for: url("https://db.internal/x")) == nil)
        #expect(s.route(for: url("http://10.2.3.4/x")) == nil)
        #expect(s.route(for: url("http://11.2.3.4/x"))?.host == "lower")
        #expect(s.route(for: url("https://images.test/x"))?.kind == .socks5)
    }

    @Test func anEmptyVariableCountsAsUnset() {
        let (s, _) = ProxySettings.fromEnvironment(["http_proxy": "", "HTTP_PROXY": "http://upper:2", "no_proxy": " "])
        #expect(s.httpProxy?.host == "upper")
        #expect(s.bypass.isEmpty)
    }

    @Test func allProxyFillsInAndBadValuesAreReportedNotUsed() {
        let (s, problems) = ProxySettings.fromEnvironment(["ALL_PROXY": "http://all:3128", "https_proxy": "ftp://x"])
        #expect(s.httpProxy?.host == "all")
        #expect(s.httpsProxy == nil)
        #expect(problems.count == 1 && problems[0].contains("ftp"))
    }

    @Test func noProxyEntries() {
        var s = ProxySettings(httpProxy: .init(kind: .http, host: "p", port: 8080))
        s.setNoProxy("*")
        #expect(s.route(for: url("http://anything/x")) == nil)
        s.setNoProxy("images.test:8080,[2001:db8::1],192.168.1.7")
        #expect(s.route(for: url("http://images.test:8080/x")) == nil)
        #expect(s.route(for: url("http://images.test:9090/x")) != nil, "another port is proxied")
        #expect(s.route(for: url("http://[2001:db8::1]/x")) == nil)
        #expect(s.route(for: url("http://192.168.1.7/x")) == nil)
        #expect(s.route(for: url("http://192.168.1.8/x")) != nil)
        #expect(s.route(for: url("http://localhost:1/x")) != nil, "as curl: loopback too, unless no_proxy names it")
        s.setNoProxy("localhost,127.0.0.0/8,::1")
        #expect(s.route(for: url("http://localhost:1/x")) == nil)
        #expect(s.route(for: url("http://127.0.0.5/x")) == nil)
        #expect(s.route(for: url("http://[::1]/x")) == nil)
    }

    @Test func aForwardedRequestGoesToTheProxyWithTheURLAsItsRequestLine() throws {
        for (proxy, expected) in [("http://u:p@proxy.corp:3128", "http://proxy.corp:3128/a%20b/c?x=1&y=%2F"), ("http://[::1]:3128", "http://[::1]:3128/a%20b/c?x=1&y=%2F")] {
            var request = HTTPClientRequest(url: "http://images.test:8080/a%20b/c?x=1&y=%2F")
            HTTPLoader.forward(&request, to: try ProxySettings.Proxy.parse(proxy), url: URL(string: "http://images.test:8080/a%20b/c?x=1&y=%2F#f")!)
            #expect(request.url == expected)
            #expect(request.headers.first(name: "Host") == "images.test:8080")
            #expect(request.headers.first(name: "x-image-worker-absolute-form") == "http://images.test:8080/a%20b/c?x=1&y=%2F")
            #expect((request.headers.first(name: "Proxy-Authorization") != nil) == proxy.contains("u:p@"))
        }
    }

    @Test func proxyURLs() throws {
        let p = try ProxySettings.Proxy.parse("http://me:s%40cret@proxy.corp:3128")
        #expect(p.user == "me" && p.password == "s@cret" && p.port == 3128)
        #expect(p.description == "http://me@proxy.corp:3128", "never the password")
        #expect(try ProxySettings.Proxy.parse("proxy.corp:8080") == .init(kind: .http, host: "proxy.corp", port: 8080))
        #expect(try ProxySettings.Proxy.parse("socks5h://s").port == 1080)
        #expect(throws: DownloadURL.Invalid.self) { try ProxySettings.Proxy.parse("socks5://u:p@s:1080") }
        #expect(throws: DownloadURL.Invalid.self) { try ProxySettings.Proxy.parse("https://p:443") }
        #expect(throws: DownloadURL.Invalid.self) { try ProxySettings.Proxy.parse("http://p:99999") }
    }
}

/// Downloads through real proxies on loopback. The proxies resolve `images.test` themselves, so a
/// URL naming it is fetched through the proxy or not at all.
@Suite struct ProxyTests {
    func harness(_ proxy: String, noProxy: String = "") async throws -> DownloaderHarness {
        let chosen = try ProxySettings.Proxy.parse(proxy)
        return try await DownloaderHarness.make {
            $0.proxies = ProxySettings(httpProxy: chosen, httpsProxy: chosen, noProxy: noProxy)
            $0.maxRetries = 0
        }
    }

    @Test func plainHTTPIsForwardedWithTheProxysCredentials() async throws {
        let proxy = try await TestProxyServer.start(.http, credentials: "me:s3cret")
        defer { Task { await proxy.shutdown() } }
        let h = try await harness(proxy.url)
        defer { Task { await h.shutdown() } }
        h.server.setFile("a", bytes(40_000))
        try await h.start(.string("a"), "http://images.test:\(h.server.port)/files/a?x=1#frag")
        #expect(try await h.outcome(.string("a")).value == 40_000)
        // As curl: the URL in absolute form to the proxy, no CONNECT for plain http.
        #expect(proxy.forwarded == ["http://images.test:\(h.server.port)/files/a?x=1"])
        #expect(proxy.tunnels.isEmpty)
        #expect(proxy.authorizations == ["Basic " + Data("me:s3cret".utf8).base64EncodedString()])
        #expect(h.server.lastHeaders("/files/a").contains { $0.0.lowercased() == "host" && $0.1 == "images.test:\(h.server.port)" })
        #expect(!h.server.lastHeaders("/files/a").contains { $0.0.lowercased().hasPrefix("x-image-worker") }, "no private header leaves")
        // Loopback goes through the proxy too (as curl), unless no_proxy names it.
        try await h.start(.string("loopback"), h.server.url("/files/a"))
        #expect(try await h.outcome(.string("loopback")).value == 40_000)
        #expect(h.server.connections == 1, "the only connection the server saw was the proxy's")
    }

    @Test func wrongCredentialsFailWithReasonProxy() async throws {
        let proxy = try await TestProxyServer.start(.http, credentials: "me:s3cret")
        defer { Task { await proxy.shutdown() } }
        let h = try await harness("http://me:wrong@127.0.0.1:\(proxy.port)")
        defer { Task { await h.shutdown() } }
        h.server.setFile("a", bytes(100))
        try await h.start(.string("a"), "http://images.test:\(h.server.port)/files/a")
        let failure = try await h.outcome(.string("a")).failure
        guard case .network(.proxy, let detail)? = failure?.last else {
            Issue.record("expected a proxy failure, got \(String(describing: failure))")
            return
        }
        #expect(proxy.refused == 1)
        #expect(!detail.contains("wrong"), "no password in the message: \(detail)")
    }

    @Test func httpsTunnelsThroughConnect() async throws {
        let proxy = try await TestProxyServer.start(.http)
        defer { Task { await proxy.shutdown() } }
        let tls = try await TestHTTPServer.startTLS(http2: true)
        defer { Task { await tls.shutdown() } }
        let h = try await harness(proxy.url)
        defer { Task { await h.shutdown() } }
        tls.setFile("b", bytes(90_000))
        try await h.start(.string("b"), "https://images.test:\(tls.port)/files/b") { $0.allowInvalidCertificates = true }
        #expect(try await h.outcome(.string("b")).value == 90_000)
        #expect(proxy.tunnels == ["images.test:\(tls.port)"])
    }

    @Test func socks5() async throws {
        let proxy = try await TestProxyServer.start(.socks5)
        defer { Task { await proxy.shutdown() } }
        let h = try await harness(proxy.url)
        defer { Task { await h.shutdown() } }
        h.server.setFile("c", bytes(25_000))
        try await h.start(.string("c"), "http://images.test:\(h.server.port)/files/c")
        #expect(try await h.outcome(.string("c")).value == 25_000)
        #expect(proxy.tunnels == ["images.test:\(h.server.port)"])
    }

    @Test func noProxyHostsGoDirect() async throws {
        let proxy = try await TestProxyServer.start(.http)
        defer { Task { await proxy.shutdown() } }
        let h = try await harness(proxy.url, noProxy: "other.example, .test")
        defer { Task { await h.shutdown() } }
        h.server.setFile("a", bytes(100))
        try await h.start(.string("a"), "http://images.test:\(h.server.port)/files/a")
        // Direct, the name does not resolve (.test is reserved): the download fails, untunnelled.
        let failure = try await h.outcome(.string("a")).failure
        #expect(failure != nil)
        #expect(proxy.tunnels.isEmpty)
    }

    @Test func aDeadProxyFailsItsDownloadsNotTheWorker() async throws {
        let h = try await harness("http://127.0.0.1:1")
        defer { Task { await h.shutdown() } }
        try await h.start(.string("a"), "http://images.test:8080/files/a")
        guard case .network(.connection, let detail)? = try await h.outcome(.string("a")).failure?.last else {
            Issue.record("expected a connection failure")
            return
        }
        #expect(detail.contains("proxy"), "\(detail)")
    }
}
