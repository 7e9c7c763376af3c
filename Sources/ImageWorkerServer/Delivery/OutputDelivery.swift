import Foundation
import ImageDownloader
import ImageWorkerProtocol
import NIOCore

/// Turns a fetched resource into what a token's `output` asked for, and describes the result
/// for its `download/completed` event.
enum OutputDelivery {
    static func deliver(_ resource: FetchedResource, token: DownloadToken, spec: OutputSpec) async throws(DownloadFailure) -> JSONObject {
        let sniffed = ImageSignature.mimeType(of: resource.body.readableBytesView)
        let mime = sniffed ?? resource.response.mimeType
        var result: JSONObject = [
            "byteLength": JSONValue(resource.byteCount),
            "mimeType": JSONValue(mime),
            "url": .string(resource.response.finalURL),
            "status": JSONValue(resource.response.status),
        ]
        switch spec.delivery {
        case .none:
            break
        case .inline:
            result["data"] = .string(Data(resource.body.readableBytesView).base64EncodedString())
        case .file:
            let body = resource.body
            let url = resource.response.finalURL
            let path = try await BlockingWork.run { () throws(DownloadFailure) -> String in
                switch spec.target! {
                case .path(let path):
                    return try write(body, to: absolute(path))
                case .directory(let dir):
                    let name = fileName(for: url, token: token, mimeType: mime)
                    return try write(body, into: absolute(dir), name: name, overwrite: spec.overwrite)
                }
            }
            result["path"] = .string(path)
            result["uri"] = .string(URL(fileURLWithPath: path).absoluteString)
        }
        return result
    }

    static func absolute(_ path: String) -> String {
        let expanded = (path as NSString).expandingTildeInPath
        if expanded.hasPrefix("/") { return (expanded as NSString).standardizingPath }
        return ((FileManager.default.currentDirectoryPath as NSString).appendingPathComponent(expanded) as NSString).standardizingPath
    }

    /// A safe ASCII file name from the URL's last path component (or the token), with an
    /// extension that matches the bytes.
    static func fileName(for url: String, token: DownloadToken, mimeType: String?) -> String {
        var base = URL(string: url)?.lastPathComponent ?? ""
        if base == "/" { base = "" }
        var safe = String(base.unicodeScalars.map { scalar -> Character in
            let c = Character(scalar)
            return (scalar.isASCII && (c.isLetter || c.isNumber || c == "." || c == "-" || c == "_")) ? c : "_"
        })
        while safe.hasPrefix(".") { safe.removeFirst() }
        if safe.count > 120 { safe = String(safe.suffix(120)) }
        if safe.isEmpty {
            safe = String(token.description.unicodeScalars.map { $0.isASCII && (Character($0).isLetter || Character($0).isNumber) ? Character($0) : "_" }.prefix(64))
            if safe.isEmpty { safe = "download" }
        }
        if (safe as NSString).pathExtension.isEmpty, let ext = ImageSignature.fileExtension(forMimeType: mimeType) {
            safe += "." + ext
        }
        return safe
    }

    /// Writes to `path`, replacing it atomically.
    static func write(_ body: ByteBuffer, to path: String) throws(DownloadFailure) -> String {
        let dir = (path as NSString).deletingLastPathComponent
        try makeDirectory(dir, for: path)
        let temp = try writeTemporary(body, in: dir, for: path)
        guard rename(temp, path) == 0 else {
            let reason = errnoText()
            unlink(temp)
            throw .output("cannot write \(path): \(reason)", path: path)
        }
        return path
    }

    /// Writes into `dir` under `name`, or, when that exists and `overwrite` is off, under the
    /// first free `name-1.ext`, `name-2.ext`…; never replaces another file by accident.
    static func write(_ body: ByteBuffer, into dir: String, name: String, overwrite: Bool) throws(DownloadFailure) -> String {
        let first = (dir as NSString).appendingPathComponent(name)
        try makeDirectory(dir, for: first)
        if overwrite { return try write(body, to: first) }
        let temp = try writeTemporary(body, in: dir, for: first)
        defer { unlink(temp) }
        let stem = (name as NSString).deletingPathExtension
        let ext = (name as NSString).pathExtension
        for n in 0..<10_000 {
            let candidate = n == 0 ? name : (ext.isEmpty ? "\(stem)-\(n)" : "\(stem)-\(n).\(ext)")
            let path = (dir as NSString).appendingPathComponent(candidate)
            if link(temp, path) == 0 { return path }
            if errno != EEXIST { throw .output("cannot write \(path): \(errnoText())", path: path) }
        }
        throw .output("no free file name for \(name) in \(dir)", path: first)
    }

    private static func makeDirectory(_ dir: String, for path: String) throws(DownloadFailure) {
        do {
            try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        } catch {
            throw .output("cannot create directory \(dir): \(error.localizedDescription)", path: path)
        }
    }

    private static func writeTemporary(_ body: ByteBuffer, in dir: String, for path: String) throws(DownloadFailure) -> String {
        let suffix = String(UInt64.random(in: 0...UInt64.max), radix: 36)
        let temp = (dir as NSString).appendingPathComponent(".image-worker-\(suffix).tmp")
        let fd = open(temp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw .output("cannot write \(path): \(errnoText())", path: path) }
        let ok = body.withUnsafeReadableBytes { raw -> Bool in
            var offset = 0
            while offset < raw.count {
                let n = Foundation.write(fd, raw.baseAddress! + offset, raw.count - offset)
                if n > 0 { offset += n } else if n < 0 && errno == EINTR { continue } else { return false }
            }
            return true
        }
        let reason = ok ? "" : errnoText()
        if close(fd) != 0 || !ok {
            unlink(temp)
            throw .output("cannot write \(path): \(ok ? errnoText() : reason)", path: path)
        }
        return temp
    }

    private static func errnoText() -> String { String(cString: strerror(errno)) }
}
