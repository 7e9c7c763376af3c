import Foundation
import ImageWorkerProtocol

/// One URL of a `get` run: from an argument or a line of `-i FILE` (`URL` or `URL<TAB>NAME`).
public struct GetEntry: Sendable, Equatable {
    public var url: String
    /// The position in the whole input, from 0: `{index}` in names, the manifest's `index`.
    public var index: Int
    /// The file name the line gave (`output.name`); nil: `--name-template` or the URL's name.
    public var name: String?
    /// A table's row: its caption (`--caption-col`) and the columns kept (`--save-columns`), in
    /// the manifest's record.
    public var caption: String?
    public var columns = JSONObject()
    /// The SHA-256 (lowercase hex) its table says the bytes have (`--verify-hash-col`).
    public var expectedSHA256: String?

    public init(url: String, index: Int, name: String? = nil) {
        self.url = url
        self.index = index
        self.name = name
    }

    /// The entries of an input list, numbered from `firstIndex`: one URL per line, optionally a
    /// tab and the file name; blank lines and lines starting with `#` are skipped (no index).
    public static func parse(lines text: String, firstIndex: Int) -> [GetEntry] {
        var entries: [GetEntry] = []
        for raw in text.split(omittingEmptySubsequences: false, whereSeparator: { $0 == "\n" || $0 == "\r\n" }) {
            if let entry = parse(line: String(raw), index: firstIndex + entries.count) { entries.append(entry) }
        }
        return entries
    }

    /// One line of a list (without its `\n`), or nil for a blank or `#` line.
    public static func parse(line raw: String, index: Int) -> GetEntry? {
        var line = Substring(raw)
        if line.hasSuffix("\r") { line = line.dropLast() }
        let trimmed = line.drop { $0 == " " }
        if trimmed.isEmpty || trimmed.hasPrefix("#") { return nil }
        let tab = trimmed.firstIndex(of: "\t")
        let url = String(blanksTrimmed(tab.map { trimmed[..<$0] } ?? trimmed))
        let name = tab.map { String(blanksTrimmed(trimmed[trimmed.index(after: $0)...])) } ?? ""
        return GetEntry(url: url, index: index, name: name.isEmpty ? nil : name)
    }

    /// Without leading and trailing spaces and tabs (as `.whitespaces` trims, for ASCII: a list
    /// of millions of lines is parsed twice, and Foundation's trimming took a third of it).
    private static func blanksTrimmed(_ text: Substring) -> Substring {
        func isBlank(_ c: Character) -> Bool { c == " " || c == "\t" || c == "\u{A0}" || c == "\u{3000}" }
        var text = text
        while let first = text.first, isBlank(first) { text.removeFirst() }
        while let last = text.last, isBlank(last) { text.removeLast() }
        return text
    }
}

/// What `image-worker get` was asked to do.
public struct GetOptions: Sendable {
    /// The URLs, read as they are fed (a list of millions is never held).
    public var input: GetInput
    /// Where the files go (created when missing).
    public var directory: String
    /// `output.format`: `original` (the bytes as downloaded) or one of the decoded formats of
    /// `OutputSpec.Format`.
    public var format = "original"
    public var progressive = false
    public var priority = "normal"
    public var concurrency = 6
    /// The threads the process's network was given (`WorkerOptions.networkThreads`).
    public var networkThreads = 1
    /// Downloads running at once for one host, and started per second for one host (nil: any).
    public var perHost = 6
    public var perHostRate: Double?
    /// `configure`'s `hostDownAfter` and `hostDownMs` (nil: the worker's defaults).
    public var hostDownAfter: Int?
    public var hostDownMs: Int64?
    /// `configure`'s `userAgentToken`, and its `disallowedHeaderDirectives` as the flag gives
    /// them: comma-separated, "" for none (nil: the worker's default, none).
    public var userAgentToken: String?
    public var disallowedHeaderDirectives: String?
    /// A proxy URL for every download ("" for none; nil: the environment's), and the hosts that
    /// bypass it (nil: the environment's).
    public var proxy: String?
    public var noProxy: String?
    /// NDJSON events on stdout instead of result lines.
    public var json = false
    /// Progress bars on stderr (the caller decides: a terminal, and not `--json`).
    public var progressBars = false
    public var overwrite = false
    /// Images refused from their header's size, before any decode (`minImageSize`,
    /// `maxImageArea`, `maxAspectRatio`: img2dataset's filters).
    public var minImageSize: Int?
    public var maxImageArea: Int64?
    public var maxAspectRatio: Double?
    public var maxPixelSize: Int?
    /// Decoded formats: a box (`width`, `height`) and how the image fits it (`fit`, `position`,
    /// `background`, `withoutEnlargement`: sharp's resize).
    public var width: Int?
    public var height: Int?
    public var fit: String?
    public var position: String?
    public var background: String?
    public var withoutEnlargement = false
    /// Decoded formats: turned upright by the file's EXIF orientation (`applyOrientation`).
    public var applyOrientation = false
    /// Decoded formats: `srgb` (the worker's default) or `keep` (`colorProfile`).
    public var colorProfile: String?
    /// `first` (the worker's default) or `all`: every frame of an animation (`frames`).
    public var frames: String?
    /// With `progressive`: partial images at most this many pixels on their longest side.
    public var partialMaxPixelSize: Int?
    /// `--format jpeg` or `webp`: quality 1–100.
    public var quality: Int?
    /// `--format webp`: lossless.
    public var lossless = false
    public var timeoutMs: Int64?
    /// Each download's wall-clock limit over every attempt (`deadlineMs`).
    public var deadlineMs: Int64?
    /// The HTTP cache's directory (nil: none) and each download's `cachePolicy` (nil: default).
    public var cacheDirectory: String?
    public var cachePolicy: String?
    public var maxRetries: Int?
    /// Each download's first retry delay (`retryDelayMs`).
    public var retryDelayMs: Int64?
    /// Names for entries without their own: `output.nameTemplate` after `{index}` is filled.
    public var nameTemplate: String?
    /// Keep files that exist (`output.skipExisting`).
    public var skipExisting = false
    /// How originals are checked before they are saved (`output.verify`).
    public enum Verification: String, Sendable {
        /// Their header: what is not an image is refused.
        case header
        /// Every pixel decoded (nothing more written): a truncated or corrupt image is refused.
        case full
        case none
    }

    public var verify = Verification.header
    /// How the images are laid out: loose files in `directory` (the default), or shards of
    /// `shardSize` rows there (`ShardWriter`): folders of files, WebDataset archives, or Parquet
    /// tables holding the images' bytes.
    public enum OutputLayout: Sendable, CaseIterable {
        /// Each image its own file, named from its URL (or as asked), with an optional manifest.
        case files
        /// img2dataset's `files`: a folder a shard, `00000/KEY.EXT` with `KEY.txt` and `KEY.json`.
        case folders
        case webdataset, parquet

        public var sharded: Bool { self != .files }

        /// `--output-format NAME`: `files` names two layouts, as img2dataset's users know it when
        /// they ask for shards (`sharded`: a shard size or first shard is given) and as `get`'s
        /// loose files otherwise.
        public init?(flag: String, sharded: Bool) {
            switch flag {
            case "files": self = sharded ? .folders : .files
            case "webdataset": self = .webdataset
            case "parquet": self = .parquet
            default: return nil
            }
        }
    }

    public var outputLayout = OutputLayout.files
    /// Rows a shard unless told (img2dataset's number_sample_per_shard).
    public static let defaultShardSize = 10_000
    public var shardSize = defaultShardSize
    /// The number of the first shard (a distributed run gives each task its own).
    public var firstShard = 0
    var shardNaming: ShardWriter.Naming { ShardWriter.Naming(size: shardSize, first: firstShard) }
    /// JSON Lines of every URL's result, appended as each ends.
    public var manifest: String?
    /// With `manifest`: fetch only what it does not show as done.
    public var resume = false
    /// A progress line every few seconds on stderr (when it is not a terminal).
    public var progressLines = false
    public var progressInterval = Duration.seconds(5)

    /// Downloads ask for their `completed` event alone (`quiet`) when nothing shows their progress:
    /// no bars, no `--json` (every event is passed on), no manifest (its `ms` is timed from
    /// `download/started`), no partial images. Each event skipped is an encode, a write and a
    /// parse saved; the progress lines then count what has ended.
    public var quietEvents: Bool { !progressBars && !json && manifest == nil && !progressive }

    public init(urls: [String], directory: String) {
        self.init(input: GetInput(urls.map { .url($0) }), directory: directory)
    }

    public init(input: GetInput, directory: String) {
        self.input = input
        self.directory = directory
    }

    /// `--disallowed-header-directives`' list: comma-separated, lowercased, blanks dropped.
    public static func directives(_ list: String) -> [String] {
        list.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces).lowercased() }.filter { !$0.isEmpty }
    }

    /// The token of the URL at `index`: `"1"`, `"2"`, … in input order.
    public static func token(_ index: Int) -> String { String(index + 1) }

    /// The `download` request for one entry.
    public func downloadRequest(_ entry: GetEntry) -> JSONValue {
        var output: JSONObject = ["delivery": "file", "dir": .string(directory), "format": .string(format)]
        if overwrite { output["overwrite"] = true }
        if skipExisting { output["skipExisting"] = true }  // with overwrite: refused by `get`'s checks (OptionRule)
        if format == "original", verify != .none { output["verify"] = verify == .full ? "full" : true }
        if manifest != nil || outputLayout.sharded || entry.expectedSHA256 != nil { output["sha256"] = true }
        if outputLayout.sharded {
            // Into the shards' staging folder, named by the row (the shard takes it from there).
            output["dir"] = .string(ShardWriter.staging(in: directory, naming: shardNaming))
            output["nameTemplate"] = "{index}.{ext}"
            output["index"] = JSONValue(entry.index)
            output["overwrite"] = true
            output["skipExisting"] = nil
        } else if let name = entry.name {
            output["name"] = .string(name)
        } else if let nameTemplate {
            output["nameTemplate"] = .string(nameTemplate)
            output["index"] = JSONValue(entry.index)  // {index}, {index:N}
        }
        if let minImageSize { output["minImageSize"] = JSONValue(minImageSize) }
        if let maxImageArea { output["maxImageArea"] = .int(maxImageArea) }
        if let maxAspectRatio { output["maxAspectRatio"] = .double(maxAspectRatio) }
        if let maxPixelSize { output["maxPixelSize"] = JSONValue(maxPixelSize) }
        if let width { output["width"] = JSONValue(width) }
        if let height { output["height"] = JSONValue(height) }
        if let fit { output["fit"] = .string(fit) }
        if let position { output["position"] = .string(position) }
        if let background { output["background"] = .string(background) }
        if withoutEnlargement { output["withoutEnlargement"] = true }
        if applyOrientation { output["applyOrientation"] = true }
        if let colorProfile { output["colorProfile"] = .string(colorProfile) }
        if let frames { output["frames"] = .string(frames) }
        if progressive, let partialMaxPixelSize { output["partialMaxPixelSize"] = JSONValue(partialMaxPixelSize) }
        if let quality { output["quality"] = JSONValue(quality) }
        if lossless { output["lossless"] = true }
        var params: JSONObject = [
            "token": .string(GetOptions.token(entry.index)), "url": .string(entry.url), "priority": .string(priority),
            "output": .object(output),
        ]
        if progressive { params["progressive"] = true }
        if quietEvents { params["quiet"] = true }
        if let timeoutMs { params["timeoutMs"] = .int(timeoutMs) }
        if let deadlineMs { params["deadlineMs"] = .int(deadlineMs) }
        if let cachePolicy { params["cachePolicy"] = .string(cachePolicy) }
        if let retryDelayMs { params["retryDelayMs"] = .int(retryDelayMs) }
        return ["jsonrpc": "2.0", "id": JSONValue(entry.index + 1), "method": "download", "params": .object(params)]
    }
}
