import Foundation
import ImageDecoding
import ImageDownloader
import ImageWorkerProtocol
import TestSupport
import Testing

@testable import ImageWorkerServer

/// The worker takes an option's value by its Swift enum (`DownloadParams`, `ConfigurationParams`);
/// the clients, the docs and `get --help` take the choices from `protocol/schema`. Both must list
/// the same choices, in the same order.
struct OptionChoicesTests {
    static let schemas = WorkerProcess.repositoryRoot.appendingPathComponent("protocol/schema")

    /// The `enum` of the schema `file` at `path`, its strings.
    static func choices(_ file: String, _ path: [String]) throws -> [String] {
        var node: JSONValue? = try JSONParser.parse(String(contentsOf: schemas.appendingPathComponent(file), encoding: .utf8))
        for key in path { node = node?[key] }
        return try #require(node?["enum"]?.arrayValue, "\(file): no enum at \(path)").compactMap(\.stringValue)
    }

    static func download(_ names: String...) throws -> [String] {
        try choices("requests/download.schema.json", names.flatMap { ["properties", $0] })
    }

    @Test func theDownloadsChoicesAreTheSchemas() throws {
        #expect(try Self.download("params", "cachePolicy") == CachePolicy.allCases.map(\.rawValue))
        #expect(try Self.download("params", "output", "delivery") == OutputSpec.Delivery.allCases.map(\.rawValue))
        #expect(try Self.download("params", "output", "format") == OutputSpec.Format.allCases.map(\.rawValue))
        #expect(try Self.download("params", "output", "fit") == FitPlan.Fit.allCases.map(\.rawValue))
        #expect(try Self.download("params", "output", "position") == FitPlan.Position.allCases.map(\.rawValue))
        #expect(try Self.download("params", "output", "colorProfile") == ColorHandling.allCases.map(\.rawValue))
        #expect(try Self.download("params", "output", "frames") == FrameSelection.allCases.map(\.rawValue))
        #expect(try Self.download("params", "output", "chromaSubsampling") == ChromaSubsampling.allCases.map(\.rawValue))
    }

    @Test func theExecutionOrderAndPriorityChoicesAreTheSchemas() throws {
        let order = try Self.choices("requests/configure.schema.json", ["properties", "params", "properties", "executionOrder"])
        #expect(order == ExecutionOrder.allCases.map(\.rawValue))
        #expect(try Self.choices("common.schema.json", ["$defs", "priority"]) == DownloadPriority.allCases.map(\.name))
    }
}
