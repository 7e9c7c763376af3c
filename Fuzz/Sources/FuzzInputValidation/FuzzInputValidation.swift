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
    // A redirect's Location read as the URL standard reads http(s): no backslash before the
    // query, no tab or line break; once is enough.
    let separated = DownloadURL.whatwgSeparators(text, base: "http")
    precondition(DownloadURL.whatwgSeparators(separated, base: "http") == separated, "separators not idempotent")
    // Free text (a log line) keeps no user information of any URL in it.
    let scrubbed = DownloadURL.redactedText(text)
    precondition(DownloadURL.redactedText(scrubbed) == scrubbed, "text redaction is not idempotent")
    // A misbehaving resume server: the bytes as its Content-Range, then an offset, a total and a
    // length drawn from them. Whatever it says, an accepted 206 is exactly the rest of the body.
    fuzzContentRange(text, Array(UnsafeBufferPointer(start: data, count: size)))
    if HTTPHeaderField.isValidValue(text) {
        precondition(!text.utf8.contains(0x0A) && !text.utf8.contains(0x0D), "a line break in an accepted value")
    }
    if HTTPHeaderField.isValidName(text) {
        precondition(!text.isEmpty && text.utf8.allSatisfy { $0 > 0x20 && $0 < 0x7F && $0 != UInt8(ascii: ":") }, "bad accepted name")
    }
    return 0
}

func fuzzContentRange(_ text: String, _ bytes: [UInt8]) {
    if let range = ContentRange.parse(text) {
        precondition(range.first >= 0 && range.first <= range.last, "accepted range \(range)")
        if let total = range.total { precondition(range.last < total, "range past its total") }
    }
    func number(_ at: Int) -> Int64 {
        guard bytes.count >= at + 2 else { return 0 }
        return Int64(bytes[bytes.count - at - 1]) << 8 | Int64(bytes[bytes.count - at - 2])
    }
    let offset = number(0)
    let total: Int64? = bytes.count % 3 == 0 ? nil : offset + number(2)
    let length: Int64? = bytes.count % 5 == 0 ? nil : number(4)
    let status = [206, 206, 200, 416][bytes.count % 4]
    if case .success(let whole) = ContentRange.continuation(status: status, contentRange: text, contentLength: length, offset: offset, total: total) {
        let range = ContentRange.parse(text)!
        precondition(status == 206 && range.first == offset, "accepted a range that does not start where the body stopped")
        if let total { precondition(whole == total, "accepted another whole length") }
        if let whole { precondition(range.last == whole - 1, "accepted a range that is not the rest") }
        if let length { precondition(length == range.last - range.first + 1, "accepted a length that is not the range's") }
    }
}
