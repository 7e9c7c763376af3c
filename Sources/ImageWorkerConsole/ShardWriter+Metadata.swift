import ImageWorkerProtocol

/// What a shard says of each row, in img2dataset's words: its status, its metadata (`KEY.json`
/// and a row of the shard's Parquet table) and that table's columns.
extension ShardWriter {
    /// A row's status, as img2dataset's `status` (and what the stats count).
    static func status(_ record: JSONObject) -> String {
        switch record["outcome"]?.stringValue {
        case "ok", "skipped": return "success"
        case "cancelled": return "cancelled"
        default: break
        }
        switch record["error"]?["name"]?.stringValue {
        case "OptedOut": return "opted_out"
        case "Filtered": return "filtered"
        case "BadImageData", "UnsupportedFormat": return "failed_to_resize"
        case "LimitExceeded": return record["error"]?["limit"] == "bodyBytes" ? "failed_to_download" : "failed_to_resize"
        case "OutputFailed": return "failed_to_write"
        default: return "failed_to_download"
        }
    }

    /// The shard's Parquet columns: the table's (url, caption, kept columns), img2dataset's
    /// per-sample fields, then the image (`parquet`).
    static func parquetColumns(captioned: Bool, saved: [String], imageColumn: String?) -> [ParquetWriter.Column] {
        var columns = [ParquetWriter.Column(name: "url", type: .string)]
        if captioned { columns.append(.init(name: "caption", type: .string)) }
        let taken = Set(["url", "caption"] + Self.fields.map(\.name))
        columns += saved.filter { !taken.contains($0) }.map { .init(name: $0, type: .string) }
        columns += Self.fields.map { .init(name: $0.name, type: $0.type) }
        if let imageColumn { columns.append(.init(name: imageColumn, type: .binary)) }
        return columns
    }

    /// img2dataset's per-sample fields and this one's (`orientation`, the image's `format` and
    /// `bytes`, the original's `original_bytes`), as `metadata` fills them.
    static let fields: [(name: String, type: ParquetWriter.ColumnType)] = [
        ("key", .string), ("status", .string), ("error_message", .string), ("width", .int32), ("height", .int32),
        ("original_width", .int32), ("original_height", .int32), ("orientation", .int32), ("sha256", .string),
        ("format", .string), ("bytes", .int64), ("original_bytes", .int64),
    ]

    /// A metadata value in its Parquet column: a number in a number's, text as it is in a text
    /// column and other JSON as its text (a kept column of a JSON Lines table may hold anything).
    static func parquetValue(_ value: JSONValue?, as type: ParquetWriter.ColumnType) -> ParquetWriter.Value? {
        guard let value, value != .null else { return nil }
        switch (type, value) {
        case (.int32, _), (.int64, _): return value.integerValue.map { .int($0) }
        case (_, .string(let text)): return .string(text)
        default: return .bytes(JSONWriter.encode(value))
        }
    }

    /// A sample's metadata in img2dataset's field names (its readers keep working), then the
    /// table's kept columns. `captioned`: the table has a caption column, so every sample says
    /// `caption`, null where its row has none (as img2dataset's).
    static func metadata(_ record: JSONObject, key: String, status: String, imageBytes: Int?, captioned: Bool) -> JSONObject {
        var meta: JSONObject = [
            "url": record["url"] ?? .null, "key": .string(key), "status": .string(status),
            "error_message": record["error"]?["message"] ?? .null,
        ]
        if captioned { meta["caption"] = record["caption"] ?? .null }
        meta["width"] = record["width"] ?? .null
        meta["height"] = record["height"] ?? .null
        meta["original_width"] = record["sourceWidth"] ?? record["width"] ?? .null
        meta["original_height"] = record["sourceHeight"] ?? record["height"] ?? .null
        meta["orientation"] = record["orientation"] ?? .null
        meta["sha256"] = record["sourceSha256"] ?? record["sha256"] ?? .null
        meta["format"] = record["format"] ?? .null
        meta["bytes"] = imageBytes.map { JSONValue($0) } ?? .null
        meta["original_bytes"] = record["bytes"] ?? .null
        for (name, value) in record["columns"]?.objectValue ?? [:] where meta[name] == nil { meta[name] = value }
        return meta
    }
}
