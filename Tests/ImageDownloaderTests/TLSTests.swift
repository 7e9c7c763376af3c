import Foundation
import ImageDownloader
import Testing
import TestSupport

/// HTTPS against a loopback server with a self-signed certificate, by both of the loader's routes
/// (`HTTPExchange.Route`: a request's own TLS configuration, HTTP/2 streams).
@Suite struct TLSTests {
    @Test(arguments: HTTPExchangeTests.routes)
    func certificatesAreCheckedUnlessTheRequestAllowsInvalidOnes(route: HTTPExchange.Route) async throws {
        let h = try await DownloaderHarness.make(route: route)
        defer { Task { await h.shutdown() } }
        let tls = try await TestHTTPServer.startTLS(http2: false)
        defer { Task { await tls.shutdown() } }
        tls.setFile("a.bin", bytes(70_000))
        let url = tls.url("/files/a.bin")
        try await h.start(.string("strict"), url)
        guard case .network(.tls, _)? = try await h.outcome(.string("strict")).failure else {
            Issue.record("expected a TLS failure, got \(h.events(.string("strict")))")
            return
        }
        #expect(tls.hits("/files/a.bin") == 0, "no request went over the untrusted connection")
        try await h.start(.string("lax"), url) { $0.allowInvalidCertificates = true }
        #expect(try await h.outcome(.string("lax")).value == 70_000, "a TLS failure does not block the URL")
        let info = h.events(.string("lax")).compactMap { e -> ResponseInfo? in if case .response(_, _, let i) = e { return i } else { return nil } }
        #expect(info.first?.httpVersion == "1.1")
    }

    @Test(arguments: HTTPExchangeTests.routes) func http2IsUsedWhenTheServerOffersIt(route: HTTPExchange.Route) async throws {
        let h = try await DownloaderHarness.make(route: route)
        defer { Task { await h.shutdown() } }
        let tls = try await TestHTTPServer.startTLS(http2: true)
        defer { Task { await tls.shutdown() } }
        tls.setFile("b.bin", bytes(300_000))
        for i in 0..<3 {
            try await h.start(.int(Int64(i)), tls.url("/files/b.bin?chunk=30000&n=\(i)")) { $0.allowInvalidCertificates = true }
        }
        for i in 0..<3 { #expect(try await h.outcome(.int(Int64(i))).value == 300_000) }
        let versions = h.events.compactMap { e -> String? in if case .response(_, _, let i) = e { return i.httpVersion } else { return nil } }
        #expect(versions == ["2", "2", "2"])
    }
}
