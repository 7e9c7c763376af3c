import Foundation
import ImageDecoding
import ImageDownloader
import ImageWorkerProtocol

/// Where a token's image goes, partial or final: the one path from an image's bytes to the
/// fields that say where it went (`data`, or `path` and `uri`). A partial image's event is
/// `EventEncoder.partialImage`, the final one's `download/completed`.
enum FrameDelivery {
    /// The token an image is for, and where its images go.
    struct Target: Sendable {
        var token: DownloadToken
        /// The URL the token asked for (as sent), which names its file in a `dir`: not where
        /// redirects led, so that the name `skipExisting` looks for before the download is the
        /// one written.
        var url: String
        var spec: OutputSpec
        /// Where its partial images went: a later image replaces the last there.
        var reservedPath: String?
    }

    enum Placed: Sendable {
        /// The fields to add to the event; `path` where the file now is.
        case delivered(JSONObject, path: String?)
        /// A `skipExisting` file appeared while the token downloaded: kept as it was, at this path.
        case keptExisting(String)
        /// Shared memory had no room for it after all: to be sent inline.
        case sharedFull
    }

    /// Room reserved in shared memory for a final image (`SharedOutput.reserve`, `tryReserve`).
    struct SharedFile: Sendable {
        var reservation: SharedOutput.Reservation
        var output: SharedOutput
    }

    /// Puts `payload` where the target asks, on the calling thread (off the network and
    /// cooperative threads; the file is written atomically, `AtomicFile`). A final image carries
    /// its SHA-256 when the spec wants one (a name template with `{sha256}`, `output.sha256`).
    /// `shared` delivery puts images inline here (partial images always: a replaced, never sent
    /// partial event must leave no file nobody will take), or into the shared-memory file
    /// reserved for a final one (`sharedFile`: `OutputDelivery` reserves it, waiting for room;
    /// a small one goes inline).
    static func deliver(
        _ payload: Payload, fileExtension: String?, source: ImageFormat?, to target: Target, final: Bool,
        sharedFile: SharedFile? = nil
    ) throws(DeliveryFailure) -> Placed {
        let spec = target.spec
        let digest = final && wantsDigest(spec) ? payload.sha256() : nil
        var fields: JSONObject = [:]
        if let digest { fields["sha256"] = .string(digest) }
        switch spec.delivery {
        case .none:
            return .delivered(fields, path: nil)
        case .shared where sharedFile != nil:
            guard let sharedFile, let path = sharedFile.output.write(payload, into: sharedFile.reservation) else { return .sharedFull }
            fields["path"] = .string(path)
            fields["shared"] = true
            return .delivered(fields, path: path)
        case .inline, .shared:
            fields["data"] = .string(payload.base64())
            return .delivered(fields, path: nil)
        case .file:
            let written = try FileTarget.write(
                payload, spec: spec, reserved: target.reservedPath, url: target.url, token: target.token, source: source,
                fileExtension: fileExtension, sha256: digest)
            if written.skipped { return .keptExisting(written.path) }
            fields["path"] = .string(written.path)
            fields["uri"] = .string(URL(fileURLWithPath: written.path, isDirectory: false).absoluteString)
            return .delivered(fields, path: written.path)
        }
    }

    /// Whether a final image's event says its SHA-256: asked for, and there are bytes to hash
    /// (a decoded image delivered nowhere is never made).
    static func wantsDigest(_ spec: OutputSpec) -> Bool {
        spec.needsDigest && (spec.delivery != .none || !spec.format.needsDecoding)
    }
}
