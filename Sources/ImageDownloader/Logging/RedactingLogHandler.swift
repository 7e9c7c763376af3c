import Foundation
import InputValidation
import Logging

/// A log handler that removes secrets from what it passes on, whoever logged it: the user
/// information of URLs (AsyncHTTPClient logs a redirect's response head, `Location` and all, at
/// `trace`) and the values of credential headers in header dumps (`Authorization`, `Cookie`,
/// `Set-Cookie`, `Proxy-Authorization`). Both executables log through it.
public struct RedactingLogHandler: LogHandler {
    private var wrapped: any LogHandler

    public init(_ wrapped: any LogHandler) {
        self.wrapped = wrapped
    }

    public var metadataProvider: Logger.MetadataProvider? {
        get { wrapped.metadataProvider }
        set { wrapped.metadataProvider = newValue }
    }

    public var metadata: Logger.Metadata {
        get { wrapped.metadata }
        set { wrapped.metadata = newValue }
    }

    public var logLevel: Logger.Level {
        get { wrapped.logLevel }
        set { wrapped.logLevel = newValue }
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { wrapped[metadataKey: key] }
        set { wrapped[metadataKey: key] = newValue }
    }

    public func log(event: LogEvent) {
        var event = event
        event.message = Logger.Message(stringLiteral: Self.redacted(event.message.description))
        event.metadata = event.metadata.map { $0.mapValues(Self.redacted) }
        wrapped.log(event: event)
    }

    static func redacted(_ value: Logger.Metadata.Value) -> Logger.Metadata.Value {
        switch value {
        case .string(let text): return .string(redacted(text))
        case .stringConvertible(let item): return .string(redacted(item.description))
        case .array(let items): return .array(items.map(redacted))
        case .dictionary(let items): return .dictionary(items.mapValues(redacted))
        @unknown default: return .string(redacted(value.description))
        }
    }

    /// Header names whose values are secrets wherever they are printed.
    static let credentialHeaders = ["authorization", "proxy-authorization", "cookie", "set-cookie"]

    /// `text` without URL user information, and with the values of credential headers replaced
    /// in both of NIO's descriptions of headers: `Name: value; Name: value` (`HTTPHeaders`) and
    /// `[("Name", "value")]` (an array of pairs).
    public static func redacted(_ text: String) -> String {
        var text = DownloadURL.redactedText(text)
        guard text.range(of: "cookie", options: .caseInsensitive) != nil || text.range(of: "authorization", options: .caseInsensitive) != nil
        else { return text }
        for name in credentialHeaders {
            text = replacingValues(in: text, after: "(\"\(name)\", \"") { text, start in text.range(of: "\")", range: start..<text.endIndex)?.lowerBound }
            text = replacingValues(in: text, after: "\(name): ") { text, start in nextHeaderStart(text, from: start) }
        }
        return text
    }

    /// Replaces with `<redacted>` each value that follows `prefix` (any case; at the start, or
    /// after a byte that cannot be part of a header name) up to where `end` says it stops.
    private static func replacingValues(in text: String, after prefix: String, end: (String, String.Index) -> String.Index?) -> String {
        var text = text
        var searchFrom = text.startIndex
        while let found = text.range(of: prefix, options: .caseInsensitive, range: searchFrom..<text.endIndex) {
            if found.lowerBound > text.startIndex, let before = text[text.index(before: found.lowerBound)].asciiValue,
                HTTPHeaderField.isTokenByte(before)
            {
                searchFrom = found.upperBound
                continue
            }
            let stop = end(text, found.upperBound) ?? text.endIndex
            text.replaceSubrange(found.upperBound..<stop, with: "<redacted>")
            searchFrom = text.index(found.upperBound, offsetBy: "<redacted>".count)
        }
        return text
    }

    /// Where the next `; Name: ` of an `HTTPHeaders` description begins (a cookie's own `; Path=/`
    /// is not one), or the ` }` that closes a head's description.
    private static func nextHeaderStart(_ text: String, from start: String.Index) -> String.Index? {
        var index = start
        while index < text.endIndex {
            if text[index...].hasPrefix(" }") { return index }
            if text[index...].hasPrefix("; ") {
                let name = text[text.index(index, offsetBy: 2)...].prefix { $0.asciiValue.map(HTTPHeaderField.isTokenByte) == true }
                let after = text.index(index, offsetBy: 2 + name.count)
                if !name.isEmpty, text[after...].hasPrefix(": ") { return index }
            }
            index = text.index(after: index)
        }
        return nil
    }
}
