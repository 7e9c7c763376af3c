import ArgumentParser
import Foundation

/// The command lines shown in `image-worker help`, printed as written. ArgumentParser wraps a
/// discussion to the terminal's width, which cut a long example in two: pasted, it was a syntax
/// error. A discussion holds one placeholder line per example, short and without a space, so
/// that wrapping leaves it whole; `expand` puts each example back in its place afterwards.
enum HelpExamples {
    static let serve = "printf '%s\\n' \\\n"
        + "  '{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"download\",\"params\":{\"token\":\"a\",\"url\":\"http://127.0.0.1:8000/a.jpg\"}}' \\\n"
        + "  | image-worker"
    static let get = "image-worker get -o images -j 8 --progressive \\\n"
        + "  https://example.org/a.jpg https://example.org/b.png"
    static let getJSON = "image-worker get --json -o /tmp/images https://example.org/a.jpg \\\n"
        + "  | jq -r 'select(.method == \"download/completed\") | .params | \"\\(.outcome) \\(.path // .error.message)\"'"

    private static let all = [("serve", serve), ("get", get), ("get-json", getJSON)]

    /// The line that stands for example `name` in a discussion (indented as an example is).
    static func placeholder(_ name: String) -> String {
        precondition(all.contains { $0.0 == name }, "no help example \(name)")
        return "  <example:\(name)>"
    }

    /// `help` with every placeholder line replaced by its example, each line indented by two.
    static func expand(_ help: String) -> String {
        var text = help
        for (name, example) in all {
            let indented = example.split(separator: "\n", omittingEmptySubsequences: false).map { "  " + $0 }.joined(separator: "\n")
            text = text.replacingOccurrences(of: placeholder(name), with: indented)
        }
        return text
    }
}

extension ParsableCommand {
    /// `main`, with the help's examples as written: help, `--help`, usage errors and `--version`
    /// go where ArgumentParser sends them (stdout for a clean exit, stderr otherwise).
    static func parseShowingExamples(_ arguments: [String]) -> ParsableCommand {
        do {
            return try parseAsRoot(arguments)
        } catch {
            exitShowingExamples(error)
        }
    }

    static func exitShowingExamples(_ error: Error) -> Never {
        let code = exitCode(for: error)
        let message = HelpExamples.expand(fullMessage(for: error))
        if !message.isEmpty {
            FileHandle(fileDescriptor: code == .success ? STDOUT_FILENO : STDERR_FILENO).write(Data((message + "\n").utf8))
        }
        Foundation.exit(code.rawValue)
    }
}
