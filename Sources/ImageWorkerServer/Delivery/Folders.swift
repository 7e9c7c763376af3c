import Foundation

/// Folders made as `mkdir -p` makes them, with the system's reason when one cannot be: which part
/// of the path is in the way, and why (Foundation's own sentence, "The operation could not be
/// completed. The file doesn't exist.", names neither).
public enum Folders {
    /// Makes `path` and its missing parents; nil when the folder is there, else why it is not:
    /// `"/a/b is a file, not a folder"`, `"cannot make /a/b: permission denied"`.
    public static func make(_ path: String) -> String? {
        var prefix = path.hasPrefix("/") ? "" : nil as String?
        for component in path.split(separator: "/") {
            let current = prefix.map { $0 + "/" + component } ?? String(component)
            prefix = current
            var info = stat()
            if stat(current, &info) != 0 {
                var failed = errno
                guard failed == ENOENT else { return "\(current): \(reason(failed))" }
                // EEXIST: made meanwhile by another process (a file made meanwhile is still in the way).
                if mkdir(current, 0o777) != 0 {
                    failed = errno
                    guard failed == EEXIST else { return "cannot make \(current): \(reason(failed))" }
                }
                if stat(current, &info) != 0 {
                    failed = errno
                    return "\(current): \(reason(failed))"
                }
            }
            if info.st_mode & S_IFMT != S_IFDIR { return "\(current) is a file, not a folder" }
        }
        return nil
    }

    private static func reason(_ code: Int32) -> String { String(cString: strerror(code)).lowercased() }
}
