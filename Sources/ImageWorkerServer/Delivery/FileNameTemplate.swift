import Foundation
import ImageDecoding
import ImageDownloader
import ImageWorkerProtocol

/// A `file` token's name inside its `dir`: `output.name` (fixed), `output.nameTemplate`
/// (`{token}`, `{name}`, `{ext}`, `{host}`, `{sha256}`, `{sha256:N}`, `{index}` and `{index:N}`
/// from `output.index`, filled as the template is read; `{{` and `}}` for braces), or,
/// with neither, the URL's name (`{name}.{ext}`). A relative path: `/` makes subdirectories; no
/// component is empty, `.` or `..`, and every value put in is a safe name (letters and digits of
/// any script, `.`, `-`, `_`, never starting with a dot), so no URL or token can lead outside `dir`.
struct FileNameTemplate: Sendable, Equatable {
    enum Part: Sendable, Equatable {
        case literal(String)
        case token, name, ext, host
        /// The delivered bytes' SHA-256, its first `digits` hexadecimal digits.
        case sha256(digits: Int)
    }

    let parts: [Part]

    static let placeholders = ["token", "name", "ext", "host", "sha256", "sha256:N", "index", "index:N"]

    /// The default: the URL's name and the extension of what is written.
    static let urlName = FileNameTemplate(parts: [.name, .literal("."), .ext])

    private init(parts: [Part]) { self.parts = parts }

    /// A fixed name (`output.name`): braces are themselves.
    static func fixed(_ name: String, field: String = "output.name") throws(RPCError) -> FileNameTemplate {
        let template = FileNameTemplate(parts: [.literal(name)])
        try template.checkShape(field: field, text: name)
        return template
    }

    /// Parses `output.nameTemplate`, with `index` (`output.index`) for `{index}` and `{index:N}`.
    init(parsing text: String, index: Int64? = nil, field: String = "output.nameTemplate") throws(RPCError) {
        var parts: [Part] = []
        var literal = ""
        var rest = Substring(text)
        while let c = rest.first {
            rest.removeFirst()
            if c == "}" {
                guard rest.first == "}" else { throw .invalidParams("\(field): a lone \"}\" (write \"}}\" for a brace)") }
                rest.removeFirst()
                literal.append("}")
                continue
            }
            guard c == "{" else {
                literal.append(c)
                continue
            }
            if rest.first == "{" {
                rest.removeFirst()
                literal.append("{")
                continue
            }
            guard let close = rest.firstIndex(of: "}") else { throw .invalidParams("\(field): \"{\" without its \"}\"") }
            let name = String(rest[..<close])
            rest = rest[rest.index(after: close)...]
            if !literal.isEmpty { parts.append(.literal(literal)) }
            literal = ""
            switch name {
            case "token": parts.append(.token)
            case "name": parts.append(.name)
            case "ext": parts.append(.ext)
            case "host": parts.append(.host)
            case "sha256": parts.append(.sha256(digits: 64))
            case _ where name.hasPrefix("sha256:"):
                guard let n = Int(name.dropFirst("sha256:".count)), (1...64).contains(n) else {
                    throw .invalidParams("\(field): {\(name)} needs a digit count from 1 to 64, as in {sha256:8}")
                }
                parts.append(.sha256(digits: n))
            case _ where name == "index" || name.hasPrefix("index:"):
                var width = 1
                if name != "index" {
                    guard let n = Int(name.dropFirst("index:".count)), (1...20).contains(n) else {
                        throw .invalidParams("\(field): {\(name)} needs a width from 1 to 20, as in {index:5}")
                    }
                    width = n
                }
                guard let index else {
                    throw .invalidParams("\(field): {\(name)} needs output.index, the entry's position in a list (from 0)")
                }
                let digits = String(index)
                literal += String(repeating: "0", count: max(0, width - digits.count)) + digits
            default:
                throw .invalidParams(
                    "\(field): unknown placeholder {\(name)}; known: " + FileNameTemplate.placeholders.map { "{\($0)}" }.joined(separator: ", "))
            }
        }
        if !literal.isEmpty { parts.append(.literal(literal)) }
        self.parts = parts
        try checkShape(field: field, text: text)
    }

    /// Whether the name depends on the written bytes (known only once they are made).
    var needsDigest: Bool { parts.contains { if case .sha256 = $0 { true } else { false } } }

    /// Whether the name holds the extension of what is written (for `original`, known from the bytes).
    var usesExtension: Bool { parts.contains(.ext) }

    /// The values a name is made of.
    struct Values: Sendable {
        var token: String
        var name: String
        var ext: String
        var host: String
        var sha256: String?
    }

    /// The relative path for `values` (every value already safe).
    func render(_ values: Values) -> String {
        var text = ""
        for part in parts {
            switch part {
            case .literal(let s): text += s
            case .token: text += values.token
            case .name: text += values.name
            case .ext: text += values.ext
            case .host: text += values.host
            case .sha256(let digits): text += String((values.sha256 ?? "").prefix(digits))
            }
        }
        return text
    }

    /// A name with every placeholder filled by a one-character value must be a relative path of
    /// proper components; values never add a `/` or start a component with a dot, so every real
    /// name is one too.
    private func checkShape(field: String, text: String) throws(RPCError) {
        guard !text.isEmpty else { throw .invalidParams("\(field) must not be empty") }
        guard text.utf8.count <= 1024, !text.contains("\0") else { throw .invalidParams("\(field) is too long or holds a NUL") }
        let sample = render(Values(token: "t", name: "n", ext: "e", host: "h", sha256: String(repeating: "0", count: 64)))
        guard !sample.hasPrefix("/") else { throw .invalidParams("\(field) must be relative to output.dir") }
        for component in sample.split(separator: "/", omittingEmptySubsequences: false) {
            guard !component.isEmpty, component != ".", component != ".." else {
                throw .invalidParams("\(field) \"\(text)\" has an empty, \".\" or \"..\" path component")
            }
            guard component.utf8.count <= 255 else { throw .invalidParams("\(field) has a component over 255 bytes") }
        }
    }

    // MARK: Values

    /// The values for a token's URL: `{name}` from the URL's last path component (or the token),
    /// `{ext}` matching the bytes or the decoded format (`forcedExtension`), never one the server
    /// chose: the name's own extension stays only when it is one of the sniffed format's (`a.jpeg`
    /// for JPEG bytes); bytes of no known image format get `bin`.
    static func values(url: String, token: DownloadToken, source: ImageFormat?, forcedExtension: String?, sha256: String?) -> Values {
        let (stem, own) = urlName(url, token: token)
        let ext: String
        if let forcedExtension {
            ext = forcedExtension
        } else if let source {
            ext = own.map { source.fileExtensions.contains($0.lowercased()) } == true ? own! : source.fileExtension
        } else {
            ext = "bin"
        }
        return Values(token: safe(token.description, limit: 64) ?? "download", name: stem, ext: ext, host: host(url), sha256: sha256)
    }

    /// Every `{ext}` an `original` token's file may get, for `skipExisting`'s check before the
    /// bytes are known: the URL's own extension when it names an image format, each format's, `bin`.
    static func possibleExtensions(url: String, token: DownloadToken) -> [String] {
        var all: [String] = []
        if let own = urlName(url, token: token).ext,
            ImageFormat.allCases.contains(where: { $0.fileExtensions.contains(own.lowercased()) })
        {
            all.append(own)
        }
        for format in ImageFormat.allCases where !all.contains(format.fileExtension) { all.append(format.fileExtension) }
        all.append("bin")
        return all
    }

    /// The URL's last path component made safe, split into stem and extension.
    private static func urlName(_ url: String, token: DownloadToken) -> (stem: String, ext: String?) {
        var base = URL(string: url)?.lastPathComponent ?? ""
        if base == "/" { base = "" }
        let name = safe(base, limit: 120) ?? safe(token.description, limit: 64) ?? "download"
        let stem = (name as NSString).deletingPathExtension
        let ext = (name as NSString).pathExtension
        return (stem.isEmpty ? "image" : stem, ext.isEmpty ? nil : ext)
    }

    private static func host(_ url: String) -> String {
        safe(URL(string: url)?.host ?? "", limit: 120) ?? "localhost"
    }

    /// Letters, combining marks and digits of any script, `.`, `-`, `_`; anything else (spaces,
    /// punctuation, symbols, controls, invisible characters such as bidi overrides) becomes `_`. In
    /// NFC, so one name has one spelling on disk; no leading dot; at most `limit` UTF-8 bytes (the
    /// end kept: it holds the extension), cut between characters; nil when nothing is left.
    static func safe(_ text: String, limit: Int) -> String? {
        let ascii = text.utf8.allSatisfy { $0 < 0x80 }
        var scalars = String.UnicodeScalarView()
        for scalar in (ascii ? text : text.precomposedStringWithCanonicalMapping).unicodeScalars {
            scalars.append(isKept(scalar) ? scalar : "_")
        }
        var safe = Substring(String(scalars))
        while safe.hasPrefix(".") { safe.removeFirst() }
        var bytes = safe.utf8.count
        while bytes > limit, let first = safe.first {
            bytes -= first.utf8.count
            safe.removeFirst()
        }
        while safe.hasPrefix(".") { safe.removeFirst() }
        return safe.isEmpty ? nil : String(safe)
    }

    /// Whether `safe` keeps `scalar` (else it becomes `_`).
    static func isKept(_ scalar: Unicode.Scalar) -> Bool {
        if scalar.isASCII {
            switch scalar {
            case "a"..."z", "A"..."Z", "0"..."9", ".", "-", "_": return true
            default: return false
            }
        }
        // (Invisible ones, such as variation selectors, which are marks, are not kept.)
        guard !scalar.properties.isDefaultIgnorableCodePoint else { return false }
        switch scalar.properties.generalCategory {
        case .uppercaseLetter, .lowercaseLetter, .titlecaseLetter, .modifierLetter, .otherLetter,
            .nonspacingMark, .spacingMark, .decimalNumber, .letterNumber, .otherNumber:
            return true
        default:
            return false
        }
    }
}
