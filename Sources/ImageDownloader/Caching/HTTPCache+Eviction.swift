import Foundation
import Logging
import NIOConcurrencyHelpers

/// Eviction and start-up cleanup: what the cache removes, only ever regular files found under its
/// own real folders, never through a link.
extension HTTPCache {
    struct Found {
        var shard: String
        var name: String
        var bytes: Int64
        var used: Double
    }

    /// The regular files under `entries/`'s real shard folders (a planted link to a folder is
    /// not a shard: it is not read, and nothing through it is ever removed).
    func scan() -> [Found] {
        var found: [Found] = []
        let entriesFD = openDirectory(["v1", "entries"])
        guard entriesFD >= 0 else { return [] }
        defer { close(entriesFD) }
        for shard in DirectoryListing.names(in: entriesFD) {
            let shardFD = openat(entriesFD, shard, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
            guard shardFD >= 0 else { continue }
            defer { close(shardFD) }
            for name in DirectoryListing.names(in: shardFD) {
                var info = stat()
                guard fstatat(shardFD, name, &info, AT_SYMLINK_NOFOLLOW) == 0, info.st_mode & S_IFMT == S_IFREG else { continue }
                found.append(
                    Found(shard: shard, name: name, bytes: Int64(info.st_size), used: Double(info.st_mtim.tv_sec) + Double(info.st_mtim.tv_nsec) / 1e9))
            }
        }
        return found
    }

    /// Removes least recently used entries until the directory (every worker's entries) fits.
    func evict() {
        var all = scan()
        var total = all.reduce(0) { $0 + $1.bytes }
        let limit = maxBytes
        if total > limit {
            all.sort { $0.used < $1.used }
            var removed = 0
            for entry in all where total > limit {
                let shardFD = openDirectory(["v1", "entries", entry.shard])
                guard shardFD >= 0 else { continue }
                if unlinkat(shardFD, entry.name, 0) == 0 || errno == ENOENT {
                    total -= entry.bytes
                    removed += 1
                }
                close(shardFD)
            }
            logger.debug("cache eviction", metadata: ["removed": "\(removed)", "bytes": "\(total)"])
        }
        state.withLockedValue { $0.knownBytes = total }
    }

    /// Temporary files of workers that died, removed at start: only regular files directly in a
    /// real `v1/tmp` (a `tmp` that is a link is not followed: nothing is removed).
    func removeStaleTemporaryFiles() {
        let now = Date().timeIntervalSince1970
        let tmpFD = openDirectory(["v1", "tmp"])
        guard tmpFD >= 0 else {
            logger.warning("the cache's tmp folder is not a directory of its own: not cleaned", metadata: ["directory": "\(directory)"])
            return
        }
        defer { close(tmpFD) }
        for name in DirectoryListing.names(in: tmpFD) {
            var info = stat()
            guard fstatat(tmpFD, name, &info, AT_SYMLINK_NOFOLLOW) == 0, info.st_mode & S_IFMT == S_IFREG,
                now - Double(info.st_mtim.tv_sec) > HTTPCache.staleTemporarySeconds
            else { continue }
            unlinkat(tmpFD, name, 0)
        }
    }
}
