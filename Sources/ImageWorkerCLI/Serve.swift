import ArgumentParser
import Foundation
import ImageDownloader
import ImageDecoding
import ImageWorkerServer
import Logging

struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        // (Named here: else ArgumentParser derives it from the type's name by reflection at each start.)
        commandName: "serve",
        abstract: "Serve the JSON-RPC protocol on stdin/stdout (the default).")

    @Option(help: "At the end of stdin: drain (finish in-flight downloads) or cancel them.")
    var onEOF: String = "drain"

    @Option(help: "With --on-eof drain: after stdin's end, downloads finish while they move; once nothing has moved (no answer, no bytes, no decode) for this many milliseconds, what is left is cancelled (default 2000; none: wait for every download).")
    var eofGraceMs: String = "2000"

    @Option(help: "Allow file:// URLs below this directory (refused otherwise).")
    var fileRoot: String?

    @Option(help: "Largest input message, in bytes; longer ones get a -32700 error (default 16777216).")
    var maxMessageBytes: Int?

    @OptionGroup var settings: ServeProtocolFlags

    @OptionGroup var worker: WorkerFlags

    @OptionGroup var threads: ThreadOptions

    func validate() throws {
        guard EOFPolicy(rawValue: onEOF) != nil else { throw ValidationError("--on-eof must be drain or cancel") }
        if eofGraceMs != "none", !(Int64(eofGraceMs).map { (0...86_400_000).contains($0) } ?? false) {
            throw ValidationError("--eof-grace-ms must be 0 to 86400000, or none")
        }
        if let m = maxMessageBytes, m < 1024 { throw ValidationError("--max-message-bytes must be at least 1024") }
        if let root = fileRoot {
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: root, isDirectory: &isDirectory), isDirectory.boolValue else {
                throw ValidationError("--file-root \(root) is not a directory")
            }
        }
    }

    func run() async throws {
        // The wire gets a private copy of stdout; fd 1 becomes stderr, so a stray print() or a C
        // library's output can never corrupt the protocol.
        signal(SIGPIPE, SIG_IGN)
        let wireFD = dup(STDOUT_FILENO)
        guard wireFD >= 0 else { throw ValidationError("cannot duplicate stdout") }
        _ = fcntl(wireFD, F_SETFD, FD_CLOEXEC)
        dup2(STDERR_FILENO, STDOUT_FILENO)

        worker.bootstrapLogging()
        let logger = Logger(label: "image-worker")
        // Before the server starts its threads, which inherit it.
        let networkThreads = threads.apply(logger: logger)
        BitmapMemory.retainFreedMemory()

        var options = WorkerOptions()
        options.networkThreads = networkThreads
        options.onEOF = EOFPolicy(rawValue: onEOF)!
        options.eofGraceMs = Int64(eofGraceMs)  // (none: nil)
        options.fileRoot = fileRoot
        settings.apply(to: &options)
        if let p = worker.proxy { options.useProxy(p) }  // (checked in validate())
        if let n = worker.noProxy { options.useNoProxy(n) }
        options.cacheDirectory = worker.cacheDir
        if let m = maxMessageBytes { options.maxMessageBytes = m }

        let server = WorkerServer(options: options, wireFD: wireFD, logger: logger)
        let signals = server.handleTerminationSignals()
        let input = InputReader(fd: STDIN_FILENO, maximumMessageBytes: options.maxMessageBytes)
        let code = await server.run(input: input)
        withExtendedLifetime(signals) {}
        Foundation.exit(code)
    }
}
