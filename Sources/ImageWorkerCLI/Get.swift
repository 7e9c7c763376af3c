import ArgumentParser
import Foundation
import ImageDecoding
import ImageDownloader
import ImageWorkerConsole
import ImageWorkerServer
import Logging

struct Get: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        // (Named here: else ArgumentParser derives it from the type's name by reflection at each start.)
        commandName: "get",
        abstract: "Download URLs into a directory, for people: progress bars, one result line per URL.",
        discussion: """
            The same engine as the protocol, run in this process. Each URL's result goes to stdout as \
            one line ("ok URL -> PATH (…)", "failed URL: Name: message" or "cancelled URL"), progress \
            bars to stderr when it is a terminal, a summary line to stderr at the end. The exit status \
            is 0 when every URL was downloaded, 1 when any failed, 130 after Ctrl-C.

            With --json, stdout carries the worker's events instead (NDJSON, as in protocol/SPEC.md; \
            tokens are "1", "2", … in the order of the URLs) and stderr stays quiet. Example:

            \(HelpExamples.placeholder("get-json"))
            """)

    @Argument(help: "The URLs to download (http, https); - reads the list from stdin, as -i -.")
    var urls: [String] = []

    @Option(name: [.short, .customLong("input")], help: "Read URLs from FILE (- for stdin): one per line, optionally a tab and the file name, blank and # lines skipped; or a table (--input-format).")
    var input: String?

    @Option(help: "How -i FILE is read: txt (a URL a line), csv or tsv (a header row, then a row per URL; RFC 4180 quotes), jsonl (a JSON object a line), parquet (flat columns, any encoding and codec but LZO; a row group's pages one at a time); default: from the file's extension (.csv, .tsv, .jsonl, .ndjson, .parquet, .pq), else txt.")
    var inputFormat: String?

    @Option(help: "Tables: the column of the URLs.")
    var urlCol: String = "url"

    @Option(help: "Tables: the column of each image's caption, recorded in the manifest.")
    var captionCol: String?

    @Option(help: "Tables: columns to keep beside each image, comma-separated (in the manifest's record, under columns).")
    var saveColumns: String?

    @Option(help: "Tables: the column of each row's SHA-256 (hex) of the original bytes; bytes that differ fail the row with HashMismatch, and nothing of them is kept (img2dataset's verify_hash).")
    var verifyHashCol: String?

    @Option(help: "How the images are laid out in --output: files (each its own file, the default; with --shard-size or --first-shard, img2dataset's files: a folder a shard, 00000/KEY.EXT with KEY.txt, its caption, and KEY.json, its metadata), webdataset (img2dataset's shards: 00000.tar, ... of --shard-size rows, holding the same three files a sample) or parquet (00000.parquet, ... with the images' bytes in a column named for the format). Each shard has 00000.parquet beside it (a row of metadata per input row) and 00000_stats.json (its rows counted by status); with --continue, complete shards are kept and the others written again. Shards honour sites' X-Robots-Tag opt-outs unless --disallowed-header-directives says otherwise (img2dataset's noai, noimageai, noindex, noimageindex, none).")
    var outputFormat: String?

    @Option(help: "Rows a shard (default \(GetOptions.defaultShardSize); with files, asks for shard folders).")
    var shardSize: Int?

    @Option(help: "The number of the first shard (default 0; its name and its samples' keys), so that the parts of a table run apart (one a machine or a task) make one dataset; with files, asks for shard folders.")
    var firstShard: Int?

    @Option(help: "Write one JSON line per URL to FILE as each ends: url, index, outcome, path, bytes, format, width, height, sha256, error, ms (and a table's caption and columns).")
    var manifest: String?

    @Flag(name: .customLong("continue"), help: "With --manifest: fetch only what the manifest does not show as done (implies --skip-existing); with shards (--shard-size, --output-format webdataset or parquet): keep the complete shards, write the others again.")
    var continueRun = false

    @Option(help: "Originals: header (the default: refuse what is not an image), full (decode every pixel too, without writing them: refuse a truncated or corrupt image) or none.")
    var verify: String?

    @Flag(help: "Save originals without checking they are images (--verify none).")
    var noVerify = false

    @Option(name: [.short, .customLong("output")], help: "Directory to write into (created when missing).")
    var output: String = "."

    @Flag(help: "NDJSON events on stdout instead of result lines; no progress bars.")
    var json = false

    @Flag(help: "No progress bars or progress lines.")
    var noProgress = false

    @Option(help: "Seconds between progress lines when stderr is not a terminal (a log file); each counts the URLs ended and their bytes.")
    var progressInterval: Double = 5

    @OptionGroup var flags: GetProtocolFlags

    @OptionGroup var worker: WorkerFlags

    @OptionGroup var threads: ThreadOptions

    /// The layout asked: `files` (the default) with a shard size or first shard is img2dataset's.
    var layout: GetOptions.OutputLayout? {
        GetOptions.OutputLayout(flag: outputFormat ?? "files", sharded: shardSize != nil || firstShard != nil)
    }

    func validate() throws {
        guard !urls.isEmpty || input != nil else { throw ValidationError("give at least one URL, or -i FILE") }
        if urls.contains("-") && input != nil { throw ValidationError("read stdin with - or -i -, not both") }
        if urls.filter({ $0 == "-" }).count > 1 { throw ValidationError("- may be given once") }
        guard progressInterval > 0 && progressInterval <= 3600 else { throw ValidationError("--progress-interval must be between 0 and 3600 seconds") }
        guard let layout else {
            throw ValidationError("--output-format must be files, webdataset or parquet, not \(outputFormat ?? "")")
        }
        guard (1...1_000_000).contains(shardSize ?? 1) else { throw ValidationError("--shard-size must be between 1 and 1000000") }
        guard (0...9_999_999).contains(firstShard ?? 0) else { throw ValidationError("--first-shard must be between 0 and 9999999") }
        if continueRun && manifest == nil && !layout.sharded {
            throw ValidationError("--continue needs --manifest FILE (or shards: --shard-size, --output-format webdataset or parquet)")
        }
        let shards = outputFormat.map { "--output-format \($0)" } ?? (shardSize != nil ? "--shard-size" : "--first-shard")
        if continueRun && manifest != nil && layout.sharded {
            throw ValidationError("--continue with \(shards) resumes by shard: not with --manifest")
        }
        if layout.sharded && (flags.nameTemplate != nil || flags.skipExisting || flags.overwrite) {
            throw ValidationError("\(shards) names its samples by row: not with --name-template, --skip-existing or --overwrite")
        }
        if (captionCol != nil || saveColumns != nil) && !layout.sharded && manifest == nil {
            // (Loose files keep only the image: the row's other columns would go nowhere.)
            throw ValidationError(
                "--caption-col and --save-columns are kept in a manifest's records or in shards: add --manifest FILE, or --shard-size N")
        }
        if let inputFormat, InputFormat(rawValue: inputFormat) == nil {
            throw ValidationError("--input-format must be one of \(InputFormat.allCases.map(\.rawValue).joined(separator: ", ")), not \(inputFormat)")
        }
        if let verify, GetOptions.Verification(rawValue: verify) == nil { throw ValidationError("--verify must be header, full or none, not \(verify)") }
        if noVerify && verify != nil && verify != "none" { throw ValidationError("--no-verify and --verify \(verify!) contradict each other") }
        if continueRun && flags.overwrite { throw ValidationError("--continue keeps finished files: not with --overwrite") }
        if let nameTemplate = flags.nameTemplate, let problem = OutputSpec.nameProblem(nameTemplate, index: 0) {
            throw ValidationError("--name-template: \(problem.replacingOccurrences(of: "output.nameTemplate: ", with: ""))")
        }
        if flags.partialMaxPixelSize != nil, !flags.progressive {
            throw ValidationError("--partial-max-pixel-size goes with --progressive")
        }
        // The rules between options (the protocol's, which the worker checks too), on the request
        // the flags make, named by their flags.
        let request = options(input: GetInput(entries: [])).downloadRequest(GetEntry(url: "", index: 0))
        if let params = request["params"]?.objectValue, let problem = OptionRule.firstProblem(params, name: Self.flag) {
            throw ValidationError(problem)
        }
    }

    func run() async throws {
        worker.bootstrapLogging()
        // Before the worker starts its threads, which inherit it.
        let networkThreads = threads.apply(logger: Logger(label: "image-worker"))
        BitmapMemory.retainFreedMemory()
        // The URLs are read as they are fed, never all held: a list file is walked (here, to check
        // its names and count them, then when fed), stdin's list kept as its bytes; a Parquet
        // table's footer is checked and counts its rows.
        var sources: [GetInput.Source] = []
        for url in urls {
            if url == "-" {
                sources.append(.text(Array(FileHandle.standardInput.readDataToEndOfFile())))
            } else {
                sources.append(.url(url))
            }
        }
        if let input {
            if input == "-" {
                sources.append(.text(Array(FileHandle.standardInput.readDataToEndOfFile())))
            } else {
                guard access(input, R_OK) == 0 else { throw Self.refused("cannot read \(input): \(String(cString: strerror(errno)))") }
                sources.append(.file(input))
            }
        }
        var list = GetInput(sources)
        list.format = inputFormat.flatMap(InputFormat.init(rawValue:))
        list.columns = InputColumns(
            url: urlCol, caption: captionCol,
            saved: (saveColumns ?? "").split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty },
            hash: verifyHashCol)
        var problem: String?
        do {
            try list.check { entry in
                if let name = entry.name, let reason = OutputSpec.nameProblem(name, fixed: true) {
                    problem = "\(entry.url): the name \"\(name)\": \(reason.replacingOccurrences(of: "output.name ", with: ""))"
                    return false
                }
                return true
            }
        } catch {
            throw Self.refused("\(error)")
        }
        if let problem { throw Self.refused(problem) }
        var options = options(input: list)
        options.networkThreads = networkThreads
        let code = await GetRunner.run(options, logger: Logger(label: "image-worker"))
        if code != 0 { throw ExitCode(code) }
    }

    /// The input itself is refused (a table without the columns asked, a name a list may not
    /// give): said as the run's other problems are, without the flags' usage lines; exit 64.
    static func refused(_ message: String) -> ExitCode {
        FileHandle.standardError.write(Data("image-worker get: \(message)\n".utf8))
        return ExitCode(64)
    }

    /// What the flags ask of every download, the URLs read from `input`.
    func options(input: GetInput) -> GetOptions {
        var options = GetOptions(input: input, directory: output)
        flags.apply(to: &options)
        options.proxy = worker.proxy
        options.noProxy = worker.noProxy
        options.json = json
        options.progressBars = !json && !noProgress && isatty(STDERR_FILENO) == 1
        options.cacheDirectory = worker.cacheDir
        options.manifest = manifest
        options.resume = continueRun
        options.outputLayout = layout ?? .files
        options.shardSize = shardSize ?? options.shardSize
        options.firstShard = firstShard ?? 0
        options.skipExisting = options.outputLayout == .files && (flags.skipExisting || continueRun)
        // A dataset honours sites' opt-outs unless told otherwise (img2dataset's list).
        if options.outputLayout.sharded, options.disallowedHeaderDirectives == nil {
            options.disallowedHeaderDirectives = RobotsTagPolicy.datasetDirectives.joined(separator: ",")
        }
        options.verify = noVerify ? .none : verify.flatMap(GetOptions.Verification.init(rawValue:)) ?? .header
        options.progressLines = !json && !noProgress && isatty(STDERR_FILENO) != 1
        options.progressInterval = .milliseconds(Int64(progressInterval * 1000))
        return options
    }

    /// The flag of an option's wire path: `output.skipExisting` is `--skip-existing`.
    private static func flag(_ path: String) -> String {
        let name = path.hasPrefix("output.") ? String(path.dropFirst("output.".count)) : path
        return "--" + name.reduce(into: "") { text, c in text += c.isUppercase ? "-" + c.lowercased() : String(c) }
    }
}
