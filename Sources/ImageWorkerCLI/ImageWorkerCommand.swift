import ArgumentParser
import ImageWorkerServer

@main
struct ImageWorkerCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "image-worker",
        abstract: "Download images for another program (JSON-RPC 2.0 over stdin/stdout), or for a person (get).",
        discussion: """
            Two modes.

            Serving the protocol (the default, with no subcommand, or `serve`): one JSON-RPC 2.0 \
            message per line on stdin (or LSP Content-Length framing, detected from the first byte), \
            events and responses on stdout, logs on stderr. See protocol/SPEC.md. Example:

            \(HelpExamples.placeholder("serve"))

            Downloading for a person (`get`): URLs on the command line, files into a directory, a \
            progress bar per download on a terminal, one result line per URL. Example:

            \(HelpExamples.placeholder("get"))

            `image-worker help serve` and `image-worker help get` list each mode's options.
            """,
        version: WorkerServer.version,
        subcommands: [Serve.self, Get.self],
        defaultSubcommand: Serve.self
    )

    static func main() async {
        CrashReport.install()
        var command = parseShowingExamples(Array(CommandLine.arguments.dropFirst()))
        do {
            if var asynchronous = command as? AsyncParsableCommand {
                try await asynchronous.run()
            } else {
                try command.run()
            }
        } catch {
            exitShowingExamples(error)
        }
    }
}
