/// Which hosts are down, as a value: a host whose connections failed `failuresInARow` times in a
/// row (attempts that never reached a connection: refused, unreachable, no DNS answer, the connect
/// timeout) is down for `downNs`. Its attempts meanwhile end at once with a `hostDown` failure
/// instead of each spending a connect timeout and a slot (with the defaults, six such attempts
/// held every slot and every other host's downloads waited). When the time is up, one attempt
/// goes through as a probe while the host's others still end at once; the probe reaching the host
/// brings it back, failing to starts another `downNs`. Any attempt that reaches the host resets its
/// count. Hosts are the queue's keys (scheme, host and port of the URL as requested).
///
/// Every method takes an event and a clock reading and answers what to do, so it is tested
/// without I/O; the downloader calls it for its http(s) attempts (`Downloader+Attempts.swift`).
public struct HostHealth<ID: Hashable & Sendable>: Sendable {
    public struct Settings: Sendable, Equatable {
        /// Connection failures in a row that make a host down; 0: never.
        public var failuresInARow: Int
        /// How long a down host stays down before a probe.
        public var downNs: UInt64

        public init(failuresInARow: Int, downNs: UInt64) {
            self.failuresInARow = failuresInARow
            self.downNs = downNs
        }
    }

    /// What becomes of an attempt about to start.
    public enum Admission: Sendable, Equatable {
        /// It goes (the host is up, or not down yet).
        case go
        /// It goes as the host's probe: its outcome says whether the host is back.
        case probe
        /// It ends at once with this failure.
        case refuse(DownloadFailure)
    }

    /// How an attempt ended, as far as its host is concerned.
    public enum Outcome: Sendable, Equatable {
        /// A request went out on a connection to the host (whatever the answer).
        case reached
        /// It never reached a connection (`failure` says why).
        case notReached(DownloadFailure)
        /// It ended before either was known (cancelled).
        case abandoned
    }

    private enum State: Sendable {
        /// Up, with this many connection failures in a row (≥ 1) and the last one.
        case failing(count: Int, last: DownloadFailure)
        /// Down until `until`; `count` failures in a row so far.
        case down(until: UInt64, count: Int, last: DownloadFailure)
        /// Down, with `probe` trying whether it is back.
        case probing(ID, count: Int, last: DownloadFailure)
    }

    private var hosts: [String: State] = [:]

    public init() {}

    /// No host has failed lately: every attempt goes, and only a failure needs reporting.
    public var isEmpty: Bool { hosts.isEmpty }

    /// Hosts down (probing included), by key, for `status`.
    public var downHosts: [String] {
        hosts.compactMap { host, state in
            switch state {
            case .failing: return nil
            case .down, .probing: return host
            }
        }.sorted()
    }

    /// Attempt `id` of `host` is about to start at `now`.
    public mutating func admit(_ id: ID, host: String, now: UInt64, settings: Settings) -> Admission {
        guard settings.failuresInARow > 0, let state = hosts[host] else { return .go }
        switch state {
        case .failing:
            return .go
        case .down(let until, let count, let last):
            if now >= until {
                hosts[host] = .probing(id, count: count, last: last)
                return .probe
            }
            return .refuse(Self.refusal(host: host, count: count, last: last, remainingNs: until - now))
        case .probing(let probe, let count, let last):
            if probe == id { return .probe }
            return .refuse(Self.refusal(host: host, count: count, last: last, remainingNs: nil))
        }
    }

    /// Attempt `id` of `host` (admitted, not refused) ended at `now`. Returns true when this made
    /// the host down (for a log line).
    @discardableResult
    public mutating func ended(_ id: ID, host: String, _ outcome: Outcome, now: UInt64, settings: Settings) -> Bool {
        switch outcome {
        case .reached:
            hosts[host] = nil
            return false
        case .abandoned:
            // A probe that ended without an answer: the next attempt probes again.
            if case .probing(let probe, let count, let last) = hosts[host], probe == id {
                hosts[host] = .down(until: now, count: count, last: last)
            }
            return false
        case .notReached(let failure):
            guard settings.failuresInARow > 0 else {
                hosts[host] = nil
                return false
            }
            switch hosts[host] {
            case nil:
                return fail(host, count: 1, failure, now: now, settings: settings)
            case .failing(let count, _):
                return fail(host, count: count + 1, failure, now: now, settings: settings)
            case .down(let until, let count, _):
                // An attempt that started before the host went down: it stays down as long.
                hosts[host] = .down(until: until, count: count + 1, last: failure)
                return false
            case .probing(let probe, let count, let last):
                if probe == id {
                    hosts[host] = .down(until: now &+ settings.downNs, count: count + 1, last: failure)
                    return true
                }
                hosts[host] = .probing(probe, count: count + 1, last: last)
                return false
            }
        }
    }

    /// Forgets every host (a `configure` that turns the rule off, or changes it).
    public mutating func removeAll() { hosts.removeAll() }

    private mutating func fail(_ host: String, count: Int, _ failure: DownloadFailure, now: UInt64, settings: Settings) -> Bool {
        if count >= settings.failuresInARow {
            hosts[host] = .down(until: now &+ settings.downNs, count: count, last: failure)
            return true
        }
        hosts[host] = .failing(count: count, last: failure)
        // Bounded: a host that fails once in a while and is never reached again would stay here.
        if hosts.count > 10_000 { hosts = hosts.filter { if case .failing = $0.value { return false } else { return true } } }
        return false
    }

    /// The failure of an attempt refused because its host is down (`hostDown`: not retried, as a
    /// retry within the host's down time would end the same way), saying why.
    static func refusal(host: String, count: Int, last: DownloadFailure, remainingNs: UInt64?) -> DownloadFailure {
        let reason: String
        if case .network(_, let detail) = last.last { reason = detail } else { reason = last.description }
        let when =
            remainingNs.map { "not tried again for \(max(1, ($0 + 999_999_999) / 1_000_000_000)) s" }
            ?? "one attempt is trying whether it is back"
        return .network(
            .hostDown, "\(host) is down: \(count) connection attempt\(count == 1 ? "" : "s") in a row failed (the last: \(reason)); \(when) (hostDownAfter, hostDownMs)")
    }
}

extension DownloadFailure {
    /// A failure that says the host could not be reached at all, when its request never reached
    /// a connection: refused, unreachable, no DNS answer, a timeout while connecting.
    var isConnectionFailure: Bool {
        guard case .network(let reason, _) = last else { return false }
        switch reason {
        case .timeout, .connection, .dns, .reset: return true
        case .deadline, .truncated, .tls, .redirect, .protocolError, .io, .proxy, .notCached, .hostDown: return false
        }
    }
}
