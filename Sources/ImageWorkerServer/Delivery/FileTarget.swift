import Foundation
import ImageDecoding
import ImageDownloader
import ImageWorkerProtocol

/// Where a `file` token's bytes go: its path made absolute, its name in its folder, the file a
/// `skipExisting` token finds there already.
enum FileTarget {
    /// `path` made absolute (against the working directory, `~` expanded), without empty or `.`
    /// components. Lexically, without touching the file system: symbolic links stay as named. A
    /// path with `..` is resolved by Foundation (links and all), as `..` after a link means the
    /// link target's parent.
    static func absolute(_ path: String) -> String {
        let expanded = path.hasPrefix("~") ? (path as NSString).expandingTildeInPath : path
        let rooted = expanded.hasPrefix("/") ? expanded : FileManager.default.currentDirectoryPath + "/" + expanded
        let components = rooted.split(separator: "/", omittingEmptySubsequences: true)
        if components.contains("..") { return (rooted as NSString).standardizingPath }
        let kept = components.filter { $0 != "." }
        return kept.isEmpty ? "/" : "/" + kept.joined(separator: "/")
    }

    /// Writes a `file` token's payload where it asked: the path its partial images went to
    /// (`reserved`), its `path`, or its name (`FileNameTemplate`) in its `dir`.
    static func write(
        _ payload: Payload, spec: OutputSpec, reserved: String?, url: String, token: DownloadToken, source: ImageFormat?,
        fileExtension: String?, sha256: String? = nil
    ) throws(DeliveryFailure) -> AtomicFile.Written {
        if let reserved { return AtomicFile.Written(path: try AtomicFile.replace(payload, at: reserved)) }
        switch spec.target {
        case .path(let path):
            let full = absolute(path)
            if spec.skipExisting { return try AtomicFile.create(payload, at: FreeNames(full, alternatives: false), keepExisting: true) }
            return AtomicFile.Written(path: try AtomicFile.replace(payload, at: full))
        case .directory(let dir):
            let values = FileNameTemplate.values(url: url, token: token, source: source, forcedExtension: fileExtension, sha256: sha256)
            let first = absolute(dir + "/" + (spec.fileName ?? .urlName).render(values))
            if spec.overwrite { return AtomicFile.Written(path: try AtomicFile.replace(payload, at: first)) }
            return try AtomicFile.create(payload, at: FreeNames(first), keepExisting: spec.skipExisting)
        case nil:
            throw .output("no path or directory to write to", path: nil)
        }
    }

    /// The path a `skipExisting` token would write that exists already, looked up before the
    /// download: every name the bytes could give it (`original` files take their extension from
    /// the bytes). Nil when there is none, or the name is not known before the bytes.
    static func existing(spec: OutputSpec, url: String, token: DownloadToken) -> String? {
        guard spec.skipExisting, spec.delivery == .file else { return nil }
        var candidates: [String] = []
        switch spec.target {
        case .path(let path):
            candidates = [absolute(path)]
        case .directory(let dir):
            let template = spec.fileName ?? .urlName
            guard !template.needsDigest else { return nil }
            let forced: String? = spec.format.needsDecoding ? spec.format.fileExtension : nil
            let extensions = forced.map { [$0] } ?? (template.usesExtension ? FileNameTemplate.possibleExtensions(url: url, token: token) : ["bin"])
            for ext in extensions {
                let values = FileNameTemplate.values(url: url, token: token, source: nil, forcedExtension: ext, sha256: nil)
                let path = absolute(dir + "/" + template.render(values))
                if !candidates.contains(path) { candidates.append(path) }
            }
        case nil:
            return nil
        }
        return candidates.first { path in
            var info = stat()
            return stat(path, &info) == 0 && (info.st_mode & S_IFMT) == S_IFREG
        }
    }

    /// The completed event's fields for a file kept by `skipExisting`: its size, what its header
    /// says (an `original` token's `sourceFormat`), its digest when asked.
    static func describeExisting(_ path: String, spec: OutputSpec, url: String) throws(DeliveryFailure) -> JSONObject {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw .output("cannot read \(path): \(AtomicFile.errnoText())", path: path)
        }
        let bytes = [UInt8](data)
        var result: JSONObject = [
            "url": .string(url), "skipped": true, "byteLength": JSONValue(bytes.count), "path": .string(path),
            "uri": .string(URL(fileURLWithPath: path, isDirectory: false).absoluteString),
        ]
        if case .success(let header) = ImageHeader.read(bytes) {
            result["width"] = JSONValue(header.width)
            result["height"] = JSONValue(header.height)
            result["mimeType"] = .string(header.format.mimeType)
            if !spec.format.needsDecoding { result["sourceFormat"] = .string(header.format.rawValue) }
        } else if spec.format.needsDecoding, !spec.format.isEncoded {
            result["mimeType"] = "application/octet-stream"
            result["pixelFormat"] = .string(spec.format.rawValue)
        }
        if spec.needsDigest { result["sha256"] = .string(SHA256.hex(bytes)) }
        return result
    }
}
