import Foundation
import Testing
import TestSupport

/// `image-worker help`, as a person reads it and pastes from it.
@Suite struct HelpTests {
    /// The example blocks of a help text: the lines indented by two spaces above USAGE (the
    /// discussion's prose is not indented), joined, each with the line that follows it.
    static func examples(_ help: String) -> [(block: String, next: String?)] {
        let lines = help.components(separatedBy: "\n")
        let end = lines.firstIndex { $0.hasPrefix("USAGE:") } ?? lines.count
        var found: [(String, String?)] = []
        var i = 0
        while i < end {
            guard lines[i].hasPrefix("  ") else {
                i += 1
                continue
            }
            var block: [String] = []
            while i < end, lines[i].hasPrefix("  ") {
                block.append(String(lines[i].dropFirst(2)))
                i += 1
            }
            found.append((block.joined(separator: "\n"), i < end ? lines[i] : nil))
        }
        return found
    }

    /// Whatever the terminal's width, every example is whole (nothing of it wrapped onto an
    /// unindented line: the line after it is blank) and bash parses it as it is pasted.
    @Test(arguments: ["40", "80", "200"])
    func everyExamplePastesIntoBash(columns: String) async throws {
        var seen: [String] = []
        for arguments in [["help"], ["--help"], ["help", "get"], ["get", "--help"], ["help", "serve"]] {
            let run = try await GetCommandTests.run(["COLUMNS=\(columns)", WorkerProcess.binaryPath] + arguments, executable: "/usr/bin/env")
            #expect(run.status == 0, "\(arguments): \(run.stderr)")
            #expect(!run.stdout.contains("<example:"), "a placeholder left in \(arguments)")
            for (block, next) in Self.examples(run.stdout) {
                #expect(next == nil || next == "", "the example wraps at \(columns) columns in \(arguments):\n\(block)\n\(next ?? "")")
                let check = try await GetCommandTests.run(["bash", "-n", "-c", block], executable: "/usr/bin/env")
                #expect(check.status == 0, "bash -n: \(check.stderr)\n\(block)")
                seen.append(block)
            }
        }
        #expect(seen.contains { $0.hasPrefix("printf '%s\\n'") && $0.hasSuffix("| image-worker") }, "\(seen)")
        #expect(seen.contains { $0.hasPrefix("image-worker get -o images") })
        #expect(seen.contains { $0.hasPrefix("image-worker get --json") && $0.contains("| jq -r") })
    }

    /// The protocol example does what it says: its request, piped into the worker, is answered.
    @Test func theProtocolExampleIsAnswered() async throws {
        let help = try await GetCommandTests.run(["help"])
        let example = try #require(Self.examples(help.stdout).first { $0.block.hasPrefix("printf") }?.block)
        let run = try await GetCommandTests.run(
            ["bash", "-c", example.replacingOccurrences(of: "| image-worker", with: "| \"$0\""), WorkerProcess.binaryPath],
            executable: "/usr/bin/env")
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stdout.contains(#""id":1,"result":{"token":"a"}"#), "\(run.stdout)")
        #expect(run.stdout.contains("download/completed"), "the download ended (refused connection)")
    }
}
