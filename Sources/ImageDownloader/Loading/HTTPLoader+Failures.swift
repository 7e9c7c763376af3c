import AsyncHTTPClient
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSOCKS
import NIOSSL

/// What AsyncHTTPClient, NIO and BoringSSL throw, as the `DownloadFailure` a client reads.
extension HTTPLoader {
    /// Turns what AsyncHTTPClient, NIO and BoringSSL throw into a `DownloadFailure` with a reason a
    /// client can act on. Cancellation stays cancellation.
    static func classify(_ error: any Error, phase: String) -> any Error {
        if error is CancellationError { return error }
        if let failure = error as? DownloadFailure { return failure }
        if let e = error as? HTTPClientError {
            switch e {
            case .cancelled: return CancellationError()
            case .deadlineExceeded, .connectTimeout, .readTimeout, .writeTimeout, .tlsHandshakeTimeout,
                .getConnectionFromPoolTimeout:
                return DownloadFailure.network(.timeout, "timed out while \(phase)")
            case .remoteConnectionClosed:
                return DownloadFailure.network(phase.hasPrefix("connecting") ? .reset : .truncated, "connection closed by the server while \(phase)")
            case .proxyAuthenticationRequired:
                return DownloadFailure.network(.proxy, "the proxy asks for credentials (407) while \(phase)")
            case .invalidProxyResponse:
                return DownloadFailure.network(.proxy, "the proxy refused the tunnel while \(phase)")
            case .socksHandshakeTimeout, .httpProxyHandshakeTimeout:
                return DownloadFailure.network(.timeout, "the proxy did not answer while \(phase)")
            case .bodyLengthMismatch:
                return DownloadFailure.network(.truncated, "body shorter than its Content-Length")
            case .invalidURL, .emptyHost, .emptyScheme:
                return DownloadFailure.invalidURL(String(describing: e))
            default:
                return DownloadFailure.network(.protocolError, "\(e) while \(phase)")
            }
        }
        if let e = error as? NIOConnectionError {
            if e.connectionErrors.isEmpty, let dns = e.dnsAError ?? e.dnsAAAAError {
                return DownloadFailure.network(.dns, "cannot resolve \(e.host): \(Self.resolverReason(dns))")
            }
            let reasons = Set(e.connectionErrors.compactMap { ($0.error as? IOError).map { String(cString: strerror($0.errnoCode)).lowercased() } })
            return DownloadFailure.network(.connection, "\(reasons.isEmpty ? "cannot connect" : reasons.sorted().joined(separator: ", ")) while \(phase)")
        }
        if error is SOCKSError.ConnectionFailed || error is SOCKSError.InvalidReservedByte || error is SOCKSError.InvalidProtocolVersion
            || error is SOCKSError.InvalidAuthenticationSelection || error is SOCKSError.InvalidAddressType
            || error is SOCKSError.UnexpectedRead || error is SOCKSError.NoValidAuthenticationMethod
        {
            return DownloadFailure.network(.proxy, "the SOCKS proxy failed: \(error) while \(phase)")
        }
        if error is SocketAddressError {
            return DownloadFailure.network(.dns, "cannot resolve host: \(Self.resolverReason(error))")
        }
        if error is NIOSSLError || error is BoringSSLError || error is NIOSSLExtraError {
            return DownloadFailure.network(.tls, "TLS failure: \(error)")
        }
        if let e = error as? IOError {
            switch e.errnoCode {
            case ECONNRESET, EPIPE:
                return DownloadFailure.network(phase.hasPrefix("connecting") ? .reset : .truncated, "connection reset while \(phase)")
            case ECONNREFUSED, EHOSTUNREACH, ENETUNREACH:
                // One sentence: the system's reason, where (NIO's own description repeats itself:
                // "connection reset (error set): Connection refused) (errno: 111)").
                return DownloadFailure.network(.connection, "\(String(cString: strerror(e.errnoCode)).lowercased()) while \(phase)")
            case ETIMEDOUT:
                return DownloadFailure.network(.timeout, "timed out while \(phase)")
            default:
                return DownloadFailure.network(.connection, "\(e) while \(phase)")
            }
        }
        if error is HTTPParserError {
            if case .invalidEOFState = error as! HTTPParserError {
                return DownloadFailure.network(.truncated, "connection closed before the body was complete")
            }
            return DownloadFailure.network(.protocolError, "malformed HTTP response: \(error)")
        }
        if error is ChannelError {
            return DownloadFailure.network(phase.hasPrefix("connecting") ? .connection : .truncated, "\(error) while \(phase)")
        }
        return DownloadFailure.network(.connection, "\(error) while \(phase)")
    }

    /// The resolver's own words: "name or service not known" out of NIO's
    /// "SocketAddressError.UnknownHost: Name or service not known (error -2) for host h, port 443".
    static func resolverReason(_ error: any Error) -> String {
        let text = "\(error)"
        guard let colon = text.range(of: ": "), let code = text.range(of: " (error", range: colon.upperBound..<text.endIndex) else { return text }
        let reason = text[colon.upperBound..<code.lowerBound].trimmingCharacters(in: .whitespaces)
        return reason.isEmpty ? text : reason.prefix(1).lowercased() + reason.dropFirst()
    }
}
