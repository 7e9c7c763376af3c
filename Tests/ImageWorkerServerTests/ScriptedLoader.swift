import Foundation
import ImageDownloader
import NIOCore
import Synchronization

/// A `ResourceLoader` that plays scripts instead of talking to a network: per URL path, a body in
/// chunks, a status, a stall until cancelled, or a thrown failure. It counts the loads of each
/// path, so tests see how many fetches the worker made.
final class ScriptedLoader: ResourceLoader {
    enum Script: Sendable {
        case body([UInt8], chunk: Int = 1 << 16, contentType: String? = nil)
        case status(Int)
        /// Sends `head` and the first `bytes`, then nothing until the load is cancelled.
        case stall(after: [UInt8])
        case failure(DownloadFailure)
        /// A body held back until the test opens `gate` (so that tokens can join its fetch).
        case gated([UInt8], gate: String)
    }

    private let scripts: [String: Script]
    private let loads = Mutex<[String: Int]>([:])
    private let openGates = Mutex<Set<String>>([])

    func open(_ gate: String) { _ = openGates.withLock { $0.insert(gate) } }

    init(_ scripts: [String: Script]) {
        self.scripts = scripts
    }

    func loadCount(_ path: String) -> Int { loads.withLock { $0[path] ?? 0 } }

    func load(
        _ request: LoadRequest,
        onHead: @Sendable (LoadedHead) async throws -> Void,
        onChunk: @Sendable (ByteBuffer) async throws -> Void
    ) async throws {
        let path = request.url.path
        loads.withLock { $0[path, default: 0] += 1 }
        try await load(request, script: scripts[path] ?? .status(404), onHead: onHead, onChunk: onChunk)
    }

    private func load(
        _ request: LoadRequest, script: Script,
        onHead: @Sendable (LoadedHead) async throws -> Void,
        onChunk: @Sendable (ByteBuffer) async throws -> Void
    ) async throws {
        switch script {
        case .body(let bytes, let chunk, let contentType):
            var headers = [("Content-Length", "\(bytes.count)")]
            if let contentType { headers.append(("Content-Type", contentType)) }
            try await onHead(LoadedHead(status: 200, headers: headers, finalURL: request.url, httpVersion: "1.1"))
            var offset = 0
            while offset < bytes.count {
                let end = min(bytes.count, offset + chunk)
                try await onChunk(ByteBuffer(bytes: bytes[offset..<end]))
                offset = end
            }
        case .status(let status):
            try await onHead(LoadedHead(status: status, headers: [("Content-Length", "0")], finalURL: request.url, httpVersion: "1.1"))
        case .stall(let bytes):
            try await onHead(LoadedHead(status: 200, headers: [], finalURL: request.url, httpVersion: "1.1"))
            if !bytes.isEmpty { try await onChunk(ByteBuffer(bytes: bytes)) }
            while true {
                try Task.checkCancellation()
                try await Task.sleep(for: .milliseconds(5))
            }
        case .failure(let failure):
            throw failure
        case .gated(let bytes, let gate):
            while !openGates.withLock({ $0.contains(gate) }) {
                try Task.checkCancellation()
                try await Task.sleep(for: .milliseconds(2))
            }
            try await load(request, script: .body(bytes), onHead: onHead, onChunk: onChunk)
        }
    }
}
