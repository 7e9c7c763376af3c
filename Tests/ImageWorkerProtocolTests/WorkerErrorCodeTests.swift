import Foundation
import ImageWorkerProtocol
import TestSupport
import Testing

/// The error codes and names a failed download carries are the ones the schema lists (the clients'
/// error classes are checked against the same lists in their own tests).
struct WorkerErrorCodeTests {
    @Test func theCodesAndNamesAreTheSchemas() throws {
        let text = try String(contentsOf: WorkerProcess.repositoryRoot.appendingPathComponent("protocol/schema/common.schema.json"), encoding: .utf8)
        let error = try JSONParser.parse(text)["$defs"]?["downloadError"]?["properties"]
        let codes = try #require(error?["code"]?["enum"]?.arrayValue).compactMap(\.integerValue)
        let names = try #require(error?["data"]?["properties"]?["name"]?["enum"]?.arrayValue).compactMap(\.stringValue)
        #expect(WorkerErrorCode.allCases.map { Int64($0.rawValue) } == codes)
        #expect(WorkerErrorCode.allCases.map(\.name) == names)
        #expect(WorkerErrorCode.invalidURL.name == "InvalidURL" && WorkerErrorCode.cancelled.name == "Cancelled")
    }
}
