/// Which hosts are down, as a value. A host whose attempts failed to reach it `failuresInARow`
/// times in a row (never reaching a connection: refused, unreachable, the connect timeout; or
/// connected and answered nothing for the idle timeout, a silent host; not a name that does not
/// resolve, which fails fast and is rarely back in a moment) is down. Its
/// downloads then wait, taking no slot (the queue holds the host: `Change.hold`), instead of each
/// spending a connect timeout and a slot (with the defaults, six such attempts held every slot
/// and every other host's downloads waited), while one attempt at a time probes it, 1, 2, 4… s
/// apart. A probe that reaches the host brings it back (`back`: the waiting downloads go on).
/// Once `downNs` has passed since it went down and a probe fails, the host is given up
/// (`gaveUp`): its downloads waiting, and every new one, end at once, until another `downNs` has
/// passed and a new probe connects or fails. Any attempt that reaches the host resets its count.
/// Hosts are the queue's keys (scheme, host and port of the URL as requested).
///
/// Every method takes an event and a clock reading and answers what to do, so it is tested
/// without I/O; the downloader calls it for its http(s) attempts (`Downloader+Attempts.swift`).
public struct HostHealth<ID: Hashable & Sendable>: Sendable {
    public struct Settings: Sendable, Equatable {
        /// Connection failures in a row that make a host down; 0: never.
        public var failuresInARow: Int
        /// How long a down host's downloads wait for it (probed meanwhile) before they fail; how
        /// long a given-up host's fail before the next probe.
        public var downNs: UInt64
        /// The first probe's wait (at most `downNs`); each later one's doubles.
        public var firstProbeNs: UInt64

        public init(failuresInARow: Int, downNs: UInt64, firstProbeNs: UInt64 = 1_000_000_000) {
            self.failuresInARow = failuresInARow
            self.downNs = downNs
            self.firstProbeNs = firstProbeNs
        }
    }

    /// What becomes of an attempt about to start.
    public enum Admission: Sendable, Equatable {
        /// It goes (the host is up, or not down yet).
        case go
        /// It goes as the host's probe: its outcome says whether the host is back. Until then the
        /// host's other downloads wait (the queue holds it) when `holdsOthers`; a given-up host's
        /// end at once.
        case probe(holdsOthers: Bool)
        /// It ends at once with this failure (`hostDown`).
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

    /// What an attempt's end changes for the host's queue.
    public enum Change: Sendable, Equatable {
        case none
        /// The host is down (or its probe failed within its wait, or was lost): its downloads
        /// wait until then, when one starts as the probe.
        case hold(until: UInt64)
        /// The probe reached it: its downloads go on.
        case back
        /// The probe failed too: its downloads, waiting and new, end at once (`hostDown`). (Also
        /// after a later probe, when nothing waits.)
        case gaveUp
    }

    private struct Down: Sendable {
        var count: Int
        var last: DownloadFailure
        /// A probe failed after `downNs`: downloads end at once rather than wait.
        var gaveUp: Bool
        /// When it went down, and the probes since.
        var since: UInt64
        var probes: Int
    }

    private enum State: Sendable {
        /// Up, with this many connection failures in a row (≥ 1) and the last one.
        case failing(count: Int, last: DownloadFailure)
        /// Down until `until`, then an attempt probes.
        case down(until: UInt64, Down)
        /// Down, with `probe` trying whether it is back.
        case probing(ID, Down)
    }

    private var hosts: [String: State] = [:]

    public init() {}

    /// No host has failed lately: every attempt goes, and only a failure needs reporting.
    public var isEmpty: Bool { hosts.isEmpty }

    /// Whether `host` is down (probing included).
    public func isDown(_ host: String) -> Bool {
        switch hosts[host] {
        case .down, .probing: return true
        case .failing, nil: return false
        }
    }

    /// Hosts down (probing included), by key, for `status`.
    public var downHosts: [String] {
        hosts.compactMap { host, state in
            switch state {
            case .failing: return nil
            case .down, .probing: return host
            }
        }.sorted()
    }

    /// Attempt `id` of `host` is about to start at `now`. (The queue holds a down host, so an
    /// attempt refused here is one that did not wait there: a given-up host's, or a retry that
    /// kept its slot.)
    public mutating func admit(_ id: ID, host: String, now: UInt64, settings: Settings) -> Admission {
        guard settings.failuresInARow > 0, let state = hosts[host] else { return .go }
        switch state {
        case .failing:
            return .go
        case .down(let until, let down):
            if now >= until {
                hosts[host] = .probing(id, down)
                return .probe(holdsOthers: !down.gaveUp)
            }
            return .refuse(Self.refusal(host: host, down, remainingNs: until - now))
        case .probing(let probe, let down):
            if probe == id { return .probe(holdsOthers: !down.gaveUp) }
            return .refuse(Self.refusal(host: host, down, remainingNs: nil))
        }
    }

    /// Attempt `id` of `host` (admitted, not refused) ended at `now`.
    public mutating func ended(_ id: ID, host: String, _ outcome: Outcome, now: UInt64, settings: Settings) -> Change {
        switch outcome {
        case .reached:
            guard let state = hosts.removeValue(forKey: host) else { return .none }
            if case .failing = state { return .none }
            return .back
        case .abandoned:
            // A probe that ended without an answer: the next attempt probes again.
            guard case .probing(let probe, let down) = hosts[host], probe == id else { return .none }
            hosts[host] = .down(until: now, down)
            return down.gaveUp ? .none : .hold(until: now)
        case .notReached(let failure):
            guard settings.failuresInARow > 0 else {
                if hosts.removeValue(forKey: host) == nil { return .none }
                return .back  // (the rule was turned off: nothing waits)
            }
            switch hosts[host] {
            case nil:
                return fail(host, count: 1, failure, now: now, settings: settings)
            case .failing(let count, _):
                return fail(host, count: count + 1, failure, now: now, settings: settings)
            case .down(let until, var down):
                // An attempt that started before the host went down.
                down.count += 1
                down.last = failure
                hosts[host] = .down(until: until, down)
                return .none
            case .probing(let probe, var down):
                down.count += 1
                if probe != id {
                    hosts[host] = .probing(probe, down)
                    return .none
                }
                down.last = failure
                down.probes += 1
                let deadline = down.since &+ settings.downNs
                if !down.gaveUp, now < deadline {
                    // Still within its wait: the downloads go on waiting for the next probe.
                    let wait = min(settings.firstProbeNs << UInt64(min(down.probes, 20)), deadline - now)
                    hosts[host] = .down(until: now &+ wait, down)
                    return .hold(until: now &+ wait)
                }
                down.gaveUp = true
                hosts[host] = .down(until: now &+ settings.downNs, down)
                return .gaveUp
            }
        }
    }

    /// Forgets every host (`clearFailedURLs`). The caller releases the hosts it held.
    public mutating func removeAll() { hosts.removeAll() }

    private mutating func fail(_ host: String, count: Int, _ failure: DownloadFailure, now: UInt64, settings: Settings) -> Change {
        if count >= settings.failuresInARow {
            let until = now &+ min(settings.firstProbeNs, settings.downNs)
            hosts[host] = .down(until: until, Down(count: count, last: failure, gaveUp: false, since: now, probes: 0))
            return .hold(until: until)
        }
        hosts[host] = .failing(count: count, last: failure)
        // Bounded: a host that fails once in a while and is never reached again would stay here.
        if hosts.count > 10_000 { hosts = hosts.filter { if case .failing = $0.value { return false } else { return true } } }
        return .none
    }

    /// The failure of an attempt refused because its host is down (`hostDown`: not retried, as a
    /// retry within the host's down time would end the same way), saying why.
    private static func refusal(host: String, _ down: Down, remainingNs: UInt64?) -> DownloadFailure {
        let reason: String
        if case .network(_, let detail) = down.last.last { reason = detail } else { reason = down.last.description }
        let count = "\(down.count) attempt\(down.count == 1 ? "" : "s") in a row could not connect or got no answer (the last: \(reason))"
        let when =
            remainingNs.map { "not tried again for \(max(1, ($0 + 999_999_999) / 1_000_000_000)) s" }
            ?? "one attempt is trying whether it is back"
        return .network(.hostDown, "\(host) is down: \(count)\(down.gaveUp ? ", and again after a wait" : ""); \(when) (hostDownAfter, hostDownMs)")
    }
}

extension DownloadFailure {
    /// The start of the idle watchdog's failure ("no data for 15000 ms").
    static let idleTimeoutPrefix = "no data for "

    /// The attempt's idle timeout ended it (not a connect or a proxy's handshake timeout).
    var isIdleTimeout: Bool {
        guard case .network(.timeout, let detail) = last else { return false }
        return detail.hasPrefix(Self.idleTimeoutPrefix)
    }

    /// A failure that says the host could not be reached at all, when its request never reached
    /// a connection: refused, unreachable, a timeout while connecting. (Not `dns`: a name that
    /// does not resolve fails each attempt at once, holding no slot for long, and is mostly gone
    /// for good, so holding its downloads for a probe would only make them wait.)
    var isConnectionFailure: Bool {
        guard case .network(let reason, _) = last else { return false }
        switch reason {
        case .timeout, .connection, .reset: return true
        case .dns, .deadline, .truncated, .tls, .redirect, .protocolError, .io, .proxy, .notCached, .hostDown: return false
        }
    }
}
