import Foundation

/// The names a new file may take beside `first`: `first`, then `name-1.ext`, `name-2.ext`…, each
/// made only when the one before it was taken (a `Sequence` read lazily).
///
/// A job that writes many files of one name (every URL ending in `image.jpg`) would otherwise
/// probe `-1`, `-2`… from the start for each file: the k-th file costs k `link` calls. The suffix
/// last taken for each first name is remembered in the process (`hints`) and the search after a
/// collision starts there; the file system still decides (every name is tried with `link`, which
/// fails on an existing file). Where the hint is missing or stale (a folder filled by an earlier
/// run, or another writer), the search tries the next `linearTries` suffixes, then gallops
/// (suffixes 64, 128, 256… past the start), so however many files of that name the folder holds,
/// a free name is found in at most about a hundred tries. Suffixes have no upper bound; names a
/// gallop skipped (or files deleted below the hint) are not filled in.
struct FreeNames: Sequence, Sendable {
    /// A name to try and its suffix (0: `first`).
    struct Candidate {
        var suffix: Int
        var path: String
    }

    /// Suffixes tried one by one after the start before the search gallops.
    static let linearTries = 32
    /// The last gallop's distance from the start (2^50): beyond any folder.
    static let maxDistance = 1 << 50

    let first: String
    /// Whether names after `first` may be tried (false: `first` only, as for a fixed `path`).
    let alternatives: Bool

    init(_ first: String, alternatives: Bool = true) {
        self.first = first
        self.alternatives = alternatives
    }

    /// The name for suffix `n` (0: `first`).
    func name(_ n: Int) -> String {
        if n == 0 { return first }
        let slash = first.lastIndex(of: "/").map { first.index(after: $0) } ?? first.startIndex
        let base = first[slash...]
        // The extension starts at the last dot that is not the name's first character.
        if let dot = base.lastIndex(of: "."), dot != base.startIndex, base.index(after: dot) != base.endIndex {
            return "\(first[..<dot])-\(n)\(first[dot...])"
        }
        return "\(first)-\(n)"
    }

    /// Records that `candidate` was written: the next search for this first name starts after it.
    func taken(_ candidate: Candidate) {
        guard alternatives, candidate.suffix > 0 else { return }
        let n = candidate.suffix
        FreeNames.hints.withLock { hints in
            // Bounded: a job of many distinct colliding names forgets its old hints.
            if hints.count >= 4_096 { hints.removeAll(keepingCapacity: true) }
            hints[first] = n
        }
    }

    func makeIterator() -> Iterator {
        let hint = alternatives ? FreeNames.hints.withLock { $0[first] } ?? 0 : 0
        return Iterator(names: self, start: hint)
    }

    /// `first`; then the `linearTries` suffixes after the start; then the start plus 64, 128,
    /// 256… up to `maxDistance`.
    struct Iterator: IteratorProtocol {
        let names: FreeNames
        let start: Int
        /// The distance from `start` of the last suffix handed out (-1: none, not even `first`).
        private var distance = -1

        init(names: FreeNames, start: Int) {
            self.names = names
            self.start = Swift.min(Swift.max(start, 0), FreeNames.maxDistance)
        }

        mutating func next() -> Candidate? {
            if distance < 0 {
                distance = 0
                return Candidate(suffix: 0, path: names.first)
            }
            guard names.alternatives else { return nil }
            distance = distance < FreeNames.linearTries ? distance + 1 : distance * 2
            guard distance <= FreeNames.maxDistance else { return nil }
            let n = start + distance
            return Candidate(suffix: n, path: names.name(n))
        }
    }

    private static let hints = LockedState<[String: Int]>([:])
}
