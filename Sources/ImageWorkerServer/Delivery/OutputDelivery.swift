import Foundation
import ImageDecoding
import ImageDownloader
import ImageWorkerProtocol
import NIOCore

/// Turns a fetched resource into what a token's `output` asked for, and describes the result
/// for its `download/completed` event.
enum OutputDelivery {
    static func deliver(
        _ resource: FetchedResource, token: DownloadToken, spec: OutputSpec, decodes: SharedDecodes,
        progressive: ProgressiveDecodes, settings: DecodeSettings, outputCapacity: @Sendable () async -> Void
    ) async throws(DownloadFailure) -> JSONObject {
        let source = ImageFormat.detect(resource.body.readableBytesView)
        // Every consumer of the fetch takes from the progressive session once (none: nil).
        let progressiveResult = await progressive.take(resource)
        var result: JSONObject = [
            "byteLength": JSONValue(resource.byteCount),
            "url": .string(resource.response.finalURL),
            "status": JSONValue(resource.response.status),
        ]
        let payload: ByteBuffer
        let mime: String?
        let fileExtension: String?
        if spec.format.needsDecoding {
            let image: DecodedImage
            if case .success(let frame)? = progressiveResult, let fitted = fitted(frame, spec: spec) {
                await decodes.finished(resource.fetchID)
                image = fitted
            } else if case .failure(let error)? = progressiveResult {
                await decodes.finished(resource.fetchID)
                throw failure(error, settings: settings)
            } else {
                // No progressive decode, or one scaled for other tokens below what this one asks
                // (a token that joined the fetch after its decode began): decoded whole.
                image = try await decode(resource, spec: spec, decodes: decodes, settings: settings)
            }
            let rendered = try await render(image, spec: spec)
            for (key, value) in rendered.fields { result[key] = value }
            payload = rendered.payload
            mime = rendered.mimeType
            fileExtension = rendered.fileExtension
        } else {
            await decodes.finished(resource.fetchID)
            payload = resource.body
            mime = source?.mimeType ?? resource.response.mimeType
            fileExtension = nil
            result["mimeType"] = JSONValue(mime)
            if let source { result["sourceFormat"] = .string(source.rawValue) }
        }
        let reserved = progressive.reservedPath(token)
        switch spec.delivery {
        case .none:
            break
        case .inline:
            // No new inline payload while the reader is behind: memory stays bounded.
            await outputCapacity()
            result["data"] = .string(Data(payload.readableBytesView).base64EncodedString())
        case .file:
            let url = resource.response.finalURL
            let path = try await BlockingWork.run { () throws(DownloadFailure) -> String in
                // A progressive token's partial images went to a path chosen then: the final
                // image replaces the last of them there.
                if let reserved { return try write(payload, to: reserved) }
                switch spec.target! {
                case .path(let path):
                    return try write(payload, to: absolute(path))
                case .directory(let dir):
                    let name = fileName(for: url, token: token, source: source, forcedExtension: fileExtension)
                    return try write(payload, into: absolute(dir), name: name, overwrite: spec.overwrite)
                }
            }
            result["path"] = .string(path)
            result["uri"] = .string(URL(fileURLWithPath: path).absoluteString)
        }
        return result
    }

    /// What a decoded image is delivered as: the event's fields, the bytes, their type.
    struct Rendered: Sendable {
        var fields: JSONObject
        var payload: ByteBuffer
        var mimeType: String
        var fileExtension: String
    }

    /// A progressive decode's image at what the token asked of the file's image, or nil when the
    /// decode holds fewer pixels than that (it was scaled for the fetch's other tokens).
    static func fitted(_ frame: ProgressiveDecodes.Frame, spec: OutputSpec) -> DecodedImage? {
        let target = ImageResampler.fittedSize(
            width: frame.source.width, height: frame.source.height, maxPixelSize: spec.maxPixelSize, maxPixelCount: spec.maxPixelCount)
        guard frame.image.width >= target.width, frame.image.height >= target.height else { return nil }
        return resized(frame.image, to: target, spec: spec)
    }

    /// In the token's layout, at `target`.
    static func resized(_ image: DecodedImage, to target: (width: Int, height: Int), spec: OutputSpec) -> DecodedImage {
        ImageResampler.resize(image.converted(to: spec.format.layout), width: target.width, height: target.height)
    }

    /// Orientation applied if asked, then PNG-encoded or raw, with the fields that describe it
    /// (encoding on the blocking pool).
    static func render(_ image: DecodedImage, spec: OutputSpec) async throws(DownloadFailure) -> Rendered {
        try await BlockingWork.run { () throws(DownloadFailure) -> Rendered in try renderNow(image, spec: spec) }
    }

    /// A partial image as PNG, encoded from the decoder's frame where it lies (full size, upright
    /// as stored): the fields `renderNow` gives.
    static func renderPartialPNG(_ frame: BorrowedPixels, orientation: Int, source: ImageFormat) throws(DownloadFailure) -> Rendered {
        let png: [UInt8]
        do throws(DecodeError) { png = try ImageDecoders.encodePNG(frame, fast: true) } catch {
            throw .output(error.description, path: nil)
        }
        let fields: JSONObject = [
            "width": JSONValue(frame.width), "height": JSONValue(frame.height), "sourceFormat": .string(source.rawValue),
            "orientation": JSONValue(orientation), "mimeType": "image/png",
        ]
        return Rendered(fields: fields, payload: ByteBuffer(bytes: png), mimeType: "image/png", fileExtension: "png")
    }

    /// `render`, on the calling thread (already off the network and cooperative threads). Partial
    /// images (`partial`) are compressed less: the next one replaces them.
    static func renderNow(_ image: DecodedImage, spec: OutputSpec, partial: Bool = false) throws(DownloadFailure) -> Rendered {
        let upright = spec.applyOrientation ? image.applyingOrientation() : image
        var fields: JSONObject = [
            "width": JSONValue(upright.width), "height": JSONValue(upright.height),
            "sourceFormat": .string(image.format.rawValue), "orientation": JSONValue(image.orientation),
        ]
        if spec.format == .png {
            let png: [UInt8]
            do throws(DecodeError) { png = try ImageDecoders.encodePNG(upright, fast: partial) } catch {
                throw .output(error.description, path: nil)
            }
            fields["mimeType"] = "image/png"
            return Rendered(fields: fields, payload: ByteBuffer(bytes: png), mimeType: "image/png", fileExtension: "png")
        }
        fields["pixelFormat"] = .string(spec.format.rawValue)
        fields["stride"] = JSONValue(upright.stride)
        fields["mimeType"] = "application/octet-stream"
        return Rendered(
            fields: fields, payload: ByteBuffer(bytes: upright.pixels), mimeType: "application/octet-stream",
            fileExtension: spec.format.rawValue)
    }

    /// The decoded image this token asked for, decoded once for every token of the fetch that
    /// asked the same.
    static func decode(
        _ resource: FetchedResource, spec: OutputSpec, decodes: SharedDecodes, settings: DecodeSettings
    ) async throws(DownloadFailure) -> DecodedImage {
        let key = SharedDecodes.Key(
            fetchID: resource.fetchID, format: spec.format, maxPixelSize: spec.maxPixelSize, maxPixelCount: spec.maxPixelCount)
        let body = resource.body
        let result = await decodes.image(for: resource, key: key) { () throws(DecodeError) -> DecodedImage in
            var options = DecodeOptions()
            options.layout = spec.format.layout
            options.maxPixels = settings.maxPixels
            options.maxScans = settings.maxProgressiveScans
            return try ImageDecoders.decode(
                Array(body.readableBytesView), options: options, maxPixelSize: spec.maxPixelSize, maxPixelCount: spec.maxPixelCount)
        }
        switch result {
        case .success(let image): return image
        case .failure(let error): throw failure(error, settings: settings)
        }
    }

    static func failure(_ error: DecodeError, settings: DecodeSettings) -> DownloadFailure {
        switch error {
        case .corrupt(let message): return .badData("Image data cannot be decoded: \(message)")
        case .truncated(let message): return .badData("Image data is truncated: \(message)")
        case .unsupported(let message): return .unsupportedFormat(message)
        case .limit(let message, let width, let height):
            if message.contains("scans") { return .limitExceeded(.scans, limit: Int64(settings.maxProgressiveScans), actual: nil) }
            return .imageTooLarge(width: width, height: height, maxPixels: settings.maxPixels)
        case .outOfMemory(let message): return .badData("Image could not be decoded: \(message)")
        }
    }

    static func absolute(_ path: String) -> String {
        let expanded = (path as NSString).expandingTildeInPath
        if expanded.hasPrefix("/") { return (expanded as NSString).standardizingPath }
        return ((FileManager.default.currentDirectoryPath as NSString).appendingPathComponent(expanded) as NSString).standardizingPath
    }

    /// A safe ASCII file name from the URL's last path component (or the token), with an
    /// extension that matches the bytes (or the decoded format's), never one the server chose:
    /// a name's own extension stays only when it is one of the sniffed format's (`a.jpeg` for
    /// JPEG bytes), and bytes of no known image format get `.bin`.
    static func fileName(for url: String, token: DownloadToken, source: ImageFormat?, forcedExtension: String? = nil) -> String {
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
        let stem = (safe as NSString).deletingPathExtension
        let named = (stem.isEmpty ? "image" : stem)
        if let forcedExtension { return named + "." + forcedExtension }
        guard let source else { return named + ".bin" }
        if source.fileExtensions.contains((safe as NSString).pathExtension.lowercased()) { return safe }
        return named + "." + source.fileExtension
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
