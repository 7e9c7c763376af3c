import Foundation

/// Which `file://` URLs may be read: none unless a root directory was given at start-up, and then
/// only regular files whose real path (symlinks resolved) lies below the root's real path, so
/// neither `..` nor a symlink can lead out of it.
public struct FileURLPolicy: Sendable, Equatable {
    /// The root's real path, or nil when file URLs are refused.
    public let root: String?

    public init(root: String?) {
        if let root, let real = FileURLPolicy.realPath(root) {
            self.root = real
        } else {
            self.root = nil
        }
    }

    /// The real path to read for `url`, or the refusal.
    public func resolve(_ url: URL) throws(DownloadFailure) -> String {
        guard let root else {
            throw .invalidOperation("file:// URLs are refused: the worker was started without --file-root")
        }
        if let host = url.host, !host.isEmpty, host != "localhost" {
            throw .invalidURL("file:// URLs must not name a host (\(host))")
        }
        let path = url.path
        guard !path.isEmpty else { throw .invalidURL("file:// URL without a path") }
        guard let real = FileURLPolicy.realPath(path) else {
            // Check the lexical path first so a missing file outside the root is still "outside".
            let standardized = (path as NSString).standardizingPath
            guard FileURLPolicy.isInside(standardized, root: root) else {
                throw .invalidOperation("file:// URL is outside the allowed root \(root)")
            }
            throw .network(.io, "no such file: \(path)")
        }
        guard FileURLPolicy.isInside(real, root: root) else {
            throw .invalidOperation("file:// URL is outside the allowed root \(root)")
        }
        return real
    }

    static func isInside(_ path: String, root: String) -> Bool {
        root == "/" || path == root || path.hasPrefix(root.hasSuffix("/") ? root : root + "/")
    }

    static func realPath(_ path: String) -> String? {
        guard let resolved = realpath(path, nil) else { return nil }
        defer { free(resolved) }
        return String(cString: resolved)
    }
}
