import ImageWorkerProtocol
import Testing

@testable import ImageWorkerConsole

/// What a row's manifest record becomes in a shard's stats and Parquet row: img2dataset's status
/// names, by the error's name and, for a limit, by which limit (the body's is the download's, the
/// pixels' the decode's); kept columns as text whatever JSON they were.
@Suite struct ShardStatusTests {
    func failed(_ name: String, limit: String? = nil) -> JSONObject {
        var error: JSONObject = ["name": .string(name), "message": "a body of 9 MB is over the limit of 8 pixels"]
        if let limit { error["limit"] = .string(limit) }
        return ["index": 0, "outcome": "failed", "error": .object(error)]
    }

    @Test func statusesAreImg2datasetsNames() {
        #expect(ShardWriter.status(["outcome": "ok"]) == "success" && ShardWriter.status(["outcome": "skipped"]) == "success")
        #expect(ShardWriter.status(["outcome": "cancelled"]) == "cancelled")
        #expect(ShardWriter.status(failed("OptedOut")) == "opted_out" && ShardWriter.status(failed("Filtered")) == "filtered")
        #expect(ShardWriter.status(failed("BadImageData")) == "failed_to_resize")
        #expect(ShardWriter.status(failed("OutputFailed")) == "failed_to_write")
        #expect(ShardWriter.status(failed("InvalidDownloadStatusCode")) == "failed_to_download")
        // By the limit's name, not the message's words.
        #expect(ShardWriter.status(failed("LimitExceeded", limit: "bodyBytes")) == "failed_to_download")
        #expect(ShardWriter.status(failed("LimitExceeded", limit: "pixels")) == "failed_to_resize")
        #expect(ShardWriter.status(failed("LimitExceeded", limit: "frames")) == "failed_to_resize")
    }

    @Test func parquetValuesFollowTheirColumnsType() {
        #expect(ShardWriter.parquetValue(.int(7), as: .string).map { "\($0)" } == "\(ParquetWriter.Value.bytes(Array("7".utf8)))")
        #expect(ShardWriter.parquetValue(.string("x"), as: .string).map { "\($0)" } == "\(ParquetWriter.Value.string("x"))")
        #expect(ShardWriter.parquetValue(.double(3), as: .int32).map { "\($0)" } == "\(ParquetWriter.Value.int(3))")
        #expect(ShardWriter.parquetValue(.string("3"), as: .int64) == nil)
        #expect(ShardWriter.parquetValue(.null, as: .string) == nil && ShardWriter.parquetValue(nil, as: .int32) == nil)
    }
}
