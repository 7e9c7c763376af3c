extension Downloader {
    /// The fetch each `FetchKey` now joins, held by reference: the table keeps one pointer per
    /// fetch (8 bytes a slot) rather than a copy of its key beside its id (48), as there is one
    /// entry per queued download.
    struct FetchesByKey {
        private enum Entry: Hashable {
            case fetch(Fetch)
            /// What a lookup compares with.
            case probe(Probe)

            var key: FetchKey {
                switch self {
                case .fetch(let fetch): return fetch.key
                case .probe(let probe): return probe.key
                }
            }
            static func == (a: Entry, b: Entry) -> Bool { a.key == b.key }
            func hash(into hasher: inout Hasher) { hasher.combine(key) }
        }

        private final class Probe {
            let key: FetchKey
            init(_ key: FetchKey) { self.key = key }
        }

        private var entries: Set<Entry> = []

        /// The fetch requests with `key` join now, if any.
        subscript(key: FetchKey) -> Fetch? {
            guard let index = entries.firstIndex(of: .probe(Probe(key))), case .fetch(let fetch) = entries[index] else { return nil }
            return fetch
        }

        /// Makes `fetch` the one its key's requests join (in place of an earlier one that no longer
        /// takes tokens).
        mutating func insert(_ fetch: Fetch) {
            entries.update(with: .fetch(fetch))
        }

        /// Forgets `fetch`, unless another fetch of its key has taken its place.
        mutating func remove(_ fetch: Fetch) {
            guard let index = entries.firstIndex(of: .fetch(fetch)), case .fetch(let found) = entries[index], found === fetch else { return }
            entries.remove(at: index)
        }
    }
}
