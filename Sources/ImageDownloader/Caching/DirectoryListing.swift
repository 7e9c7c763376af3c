import Foundation

/// The names in a directory opened as a descriptor (not `.` and `..`), read through a duplicate
/// of it: for the folders the worker treats as untrusted (the HTTP cache, the shared-memory
/// root), which it reaches only through descriptors opened with `O_NOFOLLOW`. From the start each
/// time (the duplicate shares the descriptor's offset), so one descriptor can be listed again.
public enum DirectoryListing {
    public static func names(in fd: Int32) -> [String] {
        let copy = dup(fd)
        guard copy >= 0, let dir = fdopendir(copy) else {
            if copy >= 0 { close(copy) }
            return []
        }
        defer { closedir(dir) }
        rewinddir(dir)
        var names: [String] = []
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in String(cString: raw.bindMemory(to: CChar.self).baseAddress!) }
            if name != ".", name != ".." { names.append(name) }
        }
        return names
    }
}
