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

    /// The flags that are protocol options print the schema's defaults and refuse what the worker
    /// would (their help, defaults and ranges are generated from `protocol/schema`).
    @Test func protocolFlagsTakeTheSchemasDefaultsAndRanges() async throws {
        let schema = try JSONSerialization.jsonObject(
            with: Data(contentsOf: WorkerProcess.repositoryRoot.appendingPathComponent("protocol/schema/requests/configure.schema.json")))
        let settings = try #require(((schema as? [String: Any])?["properties"] as? [String: Any])?["params"] as? [String: Any])
        let properties = try #require(settings["properties"] as? [String: Any])
        func value(_ name: String, _ key: String) -> Int? { (properties[name] as? [String: Any])?[key] as? Int }
        let getHelp = try await GetCommandTests.run(["COLUMNS=400", WorkerProcess.binaryPath, "get", "--help"], executable: "/usr/bin/env")
        let serveHelp = try await GetCommandTests.run(["COLUMNS=400", WorkerProcess.binaryPath, "serve", "--help"], executable: "/usr/bin/env")
        let jobs = try #require(value("maxConcurrentDownloads", "default"))
        let timeout = try #require(value("timeoutMs", "default"))
        #expect(getHelp.stdout.contains("-j, --jobs <jobs>") && getHelp.stdout.contains("(default: \(jobs))"), "\(getHelp.stdout)")
        #expect(getHelp.stdout.contains("(default \(timeout))") && serveHelp.stdout.contains("(default \(timeout))"))
        let most = try #require(value("maxConcurrentDownloads", "maximum"))
        for arguments in [["get", "-j", String(most + 1), "-o", "/tmp", "http://127.0.0.1:9/a"], ["serve", "--max-concurrent-downloads", "0"]] {
            let run = try await GetCommandTests.run(arguments)
            #expect(run.status == 64 && run.stderr.contains("must be between 1 and \(most)"), "\(arguments): \(run.stderr)")
        }
        let rate = try await GetCommandTests.run(["get", "--per-host-rate", "2000000", "-o", "/tmp", "http://127.0.0.1:9/a"])
        #expect(rate.status == 64 && rate.stderr.contains("--per-host-rate must be between 0 and"), "\(rate.stderr)")
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
