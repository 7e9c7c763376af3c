import Foundation
@testable import ImageDownloader
import Testing

/// What a person reads when a download fails: each thing said once.
@Suite struct FailureMessageTests {
    @Test func attemptsThatFailedAlikeAreSaidOnce() {
        let dns = DownloadFailure.network(.dns, "cannot resolve nowhere.invalid: name or service not known")
        let text = DownloadFailure.afterAttempts(dns, attempts: 3, earlier: [dns, dns]).description
        #expect(text == "Network error (dns): cannot resolve nowhere.invalid: name or service not known (after 3 attempts, each the same)")
        #expect(text.components(separatedBy: "cannot resolve").count == 2, "said once")
    }

    @Test func differentAttemptsAreListedWithRunsTogether() {
        let reset = DownloadFailure.network(.reset, "connection reset")
        let busy = DownloadFailure.statusCode(503, retryAfterSeconds: nil)
        let text = DownloadFailure.afterAttempts(busy, attempts: 4, earlier: [reset, reset, busy]).description
        #expect(text.hasSuffix("(after 4 attempts; earlier: 1-2: Network error (reset): connection reset; 3: \(busy.description))"), "\(text)")
    }

    @Test func theResolversOwnWords() {
        struct NIOStyle: Error, CustomStringConvertible {
            var description: String { "SocketAddressError.UnknownHost: Name or service not known (error -2) for host h.invalid, port 443" }
        }
        #expect(HTTPLoader.resolverReason(NIOStyle()) == "name or service not known")
        struct Plain: Error, CustomStringConvertible { var description: String { "no address" } }
        #expect(HTTPLoader.resolverReason(Plain()) == "no address")
    }
}
