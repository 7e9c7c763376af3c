#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import Synchronization

/// A port on 127.0.0.1 where connecting hangs, as with a host that is down behind a firewall that
/// drops packets: a listening socket that never accepts, its accept queue filled by a connection
/// of its own, so that Linux drops every further SYN and a client's connect waits for its timeout.
/// `RefusingPort` is the other kind of dead host: a port where connecting is refused at once.
public final class SilentHost: Sendable {
    public let port: Int
    private let sockets: [Int32]
    /// Closed once: a descriptor closed twice may by then be another test's.
    private let closed = Atomic<Bool>(false)

    public var baseURL: String { "http://127.0.0.1:\(port)" }

    public init() throws {
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard listener >= 0 else { throw Failure(what: "socket") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, length) == 0 && getsockname(listener, $0, &length) == 0 }
        }
        // Backlog 0: the accept queue holds one connection.
        guard bound, listen(listener, 0) == 0 else {
            _ = Glibc.close(listener)
            throw Failure(what: "bind or listen")
        }
        let port = Int(UInt16(bigEndian: address.sin_port))
        // Fill the queue: connections that complete and are never accepted. (Two: the queue takes
        // backlog + 1.) Non-blocking, so that one whose SYN is dropped does not hold this up.
        var fillers: [Int32] = []
        for _ in 0..<2 {
            let s = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
            guard s >= 0 else { continue }
            var target = address
            _ = withUnsafePointer(to: &target) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(s, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            fillers.append(s)
        }
        // Give the handshakes a moment to land in the queue.
        usleep(100_000)
        self.port = port
        self.sockets = [listener] + fillers
    }

    public func close() {
        guard !closed.exchange(true, ordering: .relaxed) else { return }
        for s in sockets { _ = Glibc.close(s) }
    }

    deinit { close() }

    public struct Failure: Error, CustomStringConvertible {
        public let what: String
        public var description: String { "SilentHost: \(what) failed (errno \(errno))" }
    }
}

/// A port on 127.0.0.1 where connecting is refused at once: bound, never listening, so that no
/// other test's server is given it meanwhile. `close()` frees it (for a server to start there).
public final class RefusingPort: Sendable {
    public let port: Int
    private let socket: Int32
    private let closed = Atomic<Bool>(false)

    public var baseURL: String { "http://127.0.0.1:\(port)" }

    public init() throws {
        let s = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard s >= 0 else { throw SilentHost.Failure(what: "socket") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let ok = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(s, $0, length) == 0 && getsockname(s, $0, &length) == 0 }
        }
        guard ok else {
            _ = Glibc.close(s)
            throw SilentHost.Failure(what: "bind")
        }
        self.socket = s
        self.port = Int(UInt16(bigEndian: address.sin_port))
    }

    public func close() {
        guard !closed.exchange(true, ordering: .relaxed) else { return }
        _ = Glibc.close(socket)
    }

    deinit { close() }
}
