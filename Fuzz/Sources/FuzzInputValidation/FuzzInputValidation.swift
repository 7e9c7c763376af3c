import Foundation
import InputValidation

/// URLs and header fields as a client or a server's Location header gives them. Checked: an
/// accepted URL has an http(s) or file scheme, a host when http(s), a port in range and no user
/// information left; its text parses again to the same URL; redaction leaves no user information
/// and is idempotent; an accepted header can carry no line break.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzInputValidation(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let text = String(decoding: UnsafeBufferPointer(start: data, count: size), as: UTF8.self)
    let redacted = DownloadURL.redacted(text)
    precondition(DownloadURL.redacted(redacted) == redacted, "redaction is not idempotent")
    if let parsed = try? DownloadURL.parse(text, fileURLsEnabled: true) {
        let url = parsed.url
        let scheme = url.scheme?.lowercased() ?? ""
        precondition(["http", "https", "file"].contains(scheme), "accepted scheme \(scheme)")
        if scheme != "file" { precondition(!(url.host ?? "").isEmpty, "accepted an http(s) URL without a host") }
        if let port = url.port { precondition(DownloadURL.portRange.contains(port), "accepted port \(port)") }
        precondition(url.user == nil && url.password == nil, "user information left in the URL")
        if let again = try? DownloadURL.parse(url.absoluteString, fileURLsEnabled: true) {
            precondition(again.url == url && again.userInfo == nil, "the accepted URL does not parse to itself")
        } else {
            preconditionFailure("the accepted URL's text is refused")
        }
    }
    if HTTPHeaderField.isValidValue(text) {
        precondition(!text.utf8.contains(0x0A) && !text.utf8.contains(0x0D), "a line break in an accepted value")
    }
    if HTTPHeaderField.isValidName(text) {
        precondition(!text.isEmpty && text.utf8.allSatisfy { $0 > 0x20 && $0 < 0x7F && $0 != UInt8(ascii: ":") }, "bad accepted name")
    }
    return 0
}
