import Foundation
import TestSupport

/// Shared pieces of the end-to-end tests.
enum E2E {
    static var samples: URL { WorkerProcess.repositoryRoot.appendingPathComponent("samples") }

    /// A loopback server with every sample image at `/files/NAME`.
    static func startServer() async throws -> TestHTTPServer {
        let server = try await TestHTTPServer.start()
        for name in try FileManager.default.contentsOfDirectory(atPath: samples.path)
        where [".jpg", ".png", ".gif", ".webp", ".avif"].contains(where: { name.hasSuffix($0) }) {
            server.setFile(name, Array(try Data(contentsOf: samples.appendingPathComponent(name))))
        }
        return server
    }

    static func temporaryDirectory() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("iw-e2e-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url.resolvingSymlinksInPath()
    }

    static func schemas() throws -> JSONSchemaValidator {
        try JSONSchemaValidator(directory: WorkerProcess.repositoryRoot.appendingPathComponent("protocol/schema"))
    }
}
