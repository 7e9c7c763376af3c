import Foundation

/// Whole files written so that no reader ever sees a part of one: the bytes go to a file without
/// a name (Linux's `O_TMPFILE`) or to a hidden temporary one, and only a complete file gets its
/// name.
///
/// A new file costs one change to its directory (`linkat` of the unnamed file) where a named
/// temporary costs three (create, `link`, `unlink`), each under the directory's lock: with
/// several writers in one folder they queued on it. A file system without `O_TMPFILE`, or a
/// system without `/proc`, takes the temporary way.
enum AtomicFile {
    /// Where a payload went; `skipped`: the file was there already (`skipExisting`) and was kept.
    struct Written: Sendable {
        var path: String
        var skipped = false
    }

    /// Writes `body` at `path`, replacing what is there.
    static func replace(_ body: Payload, at path: String) throws(DeliveryFailure) -> String {
        let dir = (path as NSString).deletingLastPathComponent
        let temp = try writeTemporary(body, in: dir, for: path)
        guard rename(temp, path) == 0 else {
            let reason = errnoText()
            unlink(temp)
            throw .output("cannot write \(path): \(reason)", path: path)
        }
        return path
    }

    /// Writes under the first of `names` that does not exist (all in one directory); never
    /// replaces another file by accident. `keepExisting`: when the first exists, nothing is
    /// written and it is reported as kept. The names after the first are made only on a
    /// collision (`FreeNames`). `unnamed: false` takes the temporary way (for tests).
    static func create(
        _ body: Payload, at names: FreeNames, keepExisting: Bool, unnamed: Bool = true
    ) throws(DeliveryFailure) -> Written {
        let first = names.first
        let dir = (first as NSString).deletingLastPathComponent
        if unnamed, let fd = try openUnnamed(in: dir, for: first) {
            guard body.write(to: fd) else {
                let reason = errnoText()
                close(fd)
                throw .output("cannot write \(first): \(reason)", path: first)
            }
            let source = "/proc/self/fd/\(fd)"
            let written: Written
            do throws(DeliveryFailure) {
                written = try takeFreeName(names, keepExisting: keepExisting) { linkat(AT_FDCWD, source, AT_FDCWD, $0, AT_SYMLINK_FOLLOW) }
            } catch {
                close(fd)
                throw error
            }
            guard close(fd) == 0 else {
                let reason = errnoText()
                if !written.skipped { unlink(written.path) }
                throw .output("cannot write \(written.path): \(reason)", path: written.path)
            }
            return written
        }
        let temp = try writeTemporary(body, in: dir, for: first)
        defer { unlink(temp) }
        return try takeFreeName(names, keepExisting: keepExisting) { link(temp, $0) }
    }

    /// Gives the written file the first free name of `names` with `link` (which fails on an
    /// existing name, never replacing it).
    private static func takeFreeName(
        _ names: FreeNames, keepExisting: Bool, _ link: (String) -> Int32
    ) throws(DeliveryFailure) -> Written {
        for candidate in names {
            let path = candidate.path
            if link(path) == 0 {
                names.taken(candidate)
                return Written(path: path)
            }
            if errno != EEXIST { throw .output("cannot write \(path): \(errnoText())", path: path) }
            if keepExisting { return Written(path: path, skipped: true) }
        }
        let first = names.first
        throw .output(
            "no free file name for \((first as NSString).lastPathComponent) in \((first as NSString).deletingLastPathComponent)", path: first)
    }

    /// Linux's `O_TMPFILE` (`__O_TMPFILE | O_DIRECTORY`), which Swift's Glibc module leaves out.
    private static let unnamedFlag = 0o20_000_000 | O_DIRECTORY

    /// Whether a file without a name can be linked by its `/proc/self/fd` path.
    private static let canLinkUnnamed = access("/proc/self/fd", X_OK) == 0

    /// A file without a name in `dir` (made when missing), or nil when this system or file
    /// system has none.
    private static func openUnnamed(in dir: String, for path: String) throws(DeliveryFailure) -> Int32? {
        guard canLinkUnnamed else { return nil }
        var fd = open(dir, O_WRONLY | O_CLOEXEC | unnamedFlag, 0o644)
        if fd < 0 && (errno == ENOENT || errno == ENOTDIR) {  // made, or said what is in the way
            try makeDirectory(dir, for: path)
            fd = open(dir, O_WRONLY | O_CLOEXEC | unnamedFlag, 0o644)
        }
        if fd >= 0 { return fd }
        switch errno {
        case EOPNOTSUPP, EISDIR, EINVAL: return nil  // no O_TMPFILE here: a named temporary instead
        default: throw .output("cannot write \(path): \(errnoText())", path: path)
        }
    }

    private static func makeDirectory(_ dir: String, for path: String) throws(DeliveryFailure) {
        if let problem = Folders.make(dir) { throw .output("cannot create directory \(dir): \(problem)", path: path) }
    }

    private static func writeTemporary(_ body: Payload, in dir: String, for path: String) throws(DeliveryFailure) -> String {
        let suffix = String(UInt64.random(in: 0...UInt64.max), radix: 36)
        let temp = (dir as NSString).appendingPathComponent(".image-worker-\(suffix).tmp")
        var fd = open(temp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        if fd < 0 && (errno == ENOENT || errno == ENOTDIR) {
            // The directory is made only when missing (or said what is in the way): one `open` is
            // all a usual write costs.
            try makeDirectory(dir, for: path)
            fd = open(temp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        }
        guard fd >= 0 else { throw .output("cannot write \(path): \(errnoText())", path: path) }
        let ok = body.write(to: fd)
        let reason = ok ? "" : errnoText()
        if close(fd) != 0 || !ok {
            unlink(temp)
            throw .output("cannot write \(path): \(ok ? errnoText() : reason)", path: path)
        }
        return temp
    }

    static func errnoText() -> String { String(cString: strerror(errno)) }
}
