import Foundation
import ImageWorkerProtocol
import Logging
import TestSupport

@testable import ImageWorkerServer

/// A `WorkerServer` in this process on two pipes, with a `ScriptedLoader` for its HTTP: requests
/// written as lines, every message read back and parsed. No socket, no child process.
final class ServerHarness: Sendable {
    let server: WorkerServer
    let loader: ScriptedLoader
    private let input: Int32
    private let messages = LockedState<[JSONValue]>([])
    private let exitCode = LockedState<Int32?>(nil)
    private let nextID = LockedState(0)

    init(_ scripts: [String: ScriptedLoader.Script], configure: (inout WorkerOptions) -> Void = { _ in }) {
        // Closed on exec: the end-to-end tests spawn workers from this process at the same time,
        // and a child that inherited the input's write end kept `endInput()` from ending it.
        let inputPipe = try! WorkerProcess.pipeDescriptorsClosedOnExec()
        let outputPipe = try! WorkerProcess.pipeDescriptorsClosedOnExec()
        let inputFDs = [inputPipe.read, inputPipe.write], outputFDs = [outputPipe.read, outputPipe.write]
        var options = WorkerOptions()
        options.configuration.maxRetries = 0
        configure(&options)
        var logger = Logger(label: "server-tests")
        logger.logLevel = .critical
        loader = ScriptedLoader(scripts)
        server = WorkerServer(options: options, wireFD: outputFDs[1], logger: logger, httpLoader: loader)
        input = inputFDs[1]
        let reader = InputReader(fd: inputFDs[0], maximumMessageBytes: options.maxMessageBytes)
        let (server, exitCode, outputWrite, inputRead) = (server, exitCode, outputFDs[1], inputFDs[0])
        Task {
            let code = await server.run(input: reader)
            exitCode.withLock { $0 = code }
            close(outputWrite)
            close(inputRead)
        }
        let (messages, outputRead) = (messages, outputFDs[0])
        let thread = Thread {
            var pending: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 1 << 16)
            while true {
                let n = buffer.withUnsafeMutableBytes { read(outputRead, $0.baseAddress, $0.count) }
                if n < 0 && errno == EINTR { continue }
                if n <= 0 { break }
                pending.append(contentsOf: buffer[0..<n])
                while let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
                    let line = Array(pending[..<newline])
                    pending.removeSubrange(...newline)
                    if let value = try? JSONParser.parse(line) { messages.withLock { $0.append(value) } }
                }
            }
            close(outputRead)
        }
        thread.start()
    }

    /// Sends one request (an id is added unless `notification`); returns its id.
    @discardableResult
    func send(_ method: String, _ params: JSONObject? = nil, notification: Bool = false) -> Int {
        let id = nextID.withLock { $0 += 1; return $0 }
        var message: JSONObject = ["jsonrpc": "2.0", "method": .string(method)]
        if !notification { message["id"] = .int(Int64(id)) }
        if let params { message["params"] = .object(params) }
        var line = JSONWriter.encode(.object(message))
        line.append(UInt8(ascii: "\n"))
        _ = FileDescriptorOutput.writeAll(input, line)
        return id
    }

    func download(_ token: String, _ path: String, output: JSONObject = ["format": "rgba", "delivery": "none"],
                  extra: JSONObject = [:]) {
        var params: JSONObject = ["token": .string(token), "url": .string("http://scripted.test\(path)"), "output": .object(output)]
        for (key, value) in extra { params[key] = value }
        send(WorkerMethod.download, params)
    }

    /// Ends stdin (the worker drains by default).
    func endInput() { close(input) }

    var all: [JSONValue] { messages.withLock { $0 } }

    /// The `download/completed` params of `token`, once it came (a liveness guard, not timing:
    /// 60 s, as this worker shares the test process's two pool threads with every other test,
    /// and on a loaded machine it waited 17–19 s for its turn).
    func completed(_ token: String, within limit: Duration = .seconds(60)) async throws -> JSONValue {
        try await until("\(token) completed", within: limit) {
            all.first { $0["method"]?.stringValue == WorkerEvent.completed && $0["params"]?["token"]?.stringValue == token }?["params"]
        }
    }

    /// The result of request `id`, once answered.
    func reply(_ id: Int, within limit: Duration = .seconds(60)) async throws -> JSONValue {
        try await until("reply \(id)", within: limit) { answer(id) }
    }

    private func answer(_ id: Int) -> JSONValue? {
        all.first { $0["id"]?.integerValue == Int64(id) && $0["method"] == nil }
    }

    func exitStatus(within limit: Duration = .seconds(60)) async throws -> Int32 {
        try await until("exit", within: limit) { exitCode.withLock { $0 } }
    }

    func events(_ token: String) -> [String] {
        all.compactMap { message in
            guard message["params"]?["token"]?.stringValue == token, let method = message["method"]?.stringValue else { return nil }
            return method
        }
    }

    struct Timeout: Error, CustomStringConvertible {
        let what: String
        let messages: [JSONValue]
        let status: JSONValue?
        let stacks: String
        let late: Duration?
        var description: String {
            let status = status.map { String(decoding: JSONWriter.encode($0), as: UTF8.self) } ?? "no answer"
            let late = late.map { "it came \($0) later" } ?? "it had not come 30 s later"
            return "gave up waiting for \(what) (\(late)); messages: \(messages); status: \(status); worker threads:\n\(String(stacks.suffix(40_000)))"
        }
    }

    private func until<T>(_ what: String, within limit: Duration, _ probe: () -> T?) async throws -> T {
        if let value = try await poll(for: limit, probe) { return value }
        // What the worker thinks of its tokens, and where every thread of this process is.
        let id = send(WorkerMethod.status)
        let status = try await poll(for: .seconds(3)) { answer(id)?["result"] }
        // The threads of this process that are in the worker's code (the rest are other tests').
        let stacks = WorkerProcess.stacks(of: getpid(), limit: .max).split(separator: "\nThread ")
            .filter { $0.contains("ImageWorkerServer") || $0.contains("ImageDownloader") }
            .joined(separator: "\nThread ")
        // Late or never: a slow machine, or a lost wake-up.
        let start = ContinuousClock.now
        let late = try await poll(for: .seconds(30), probe).map { _ in ContinuousClock.now - start }
        throw Timeout(what: what, messages: all, status: status, stacks: stacks, late: late)
    }

    /// `probe`'s first value within `limit`, or nil.
    private func poll<T>(for limit: Duration, _ probe: () -> T?) async throws -> T? {
        let deadline = ContinuousClock.now + limit
        while ContinuousClock.now < deadline {
            if let value = probe() { return value }
            try await Task.sleep(for: .milliseconds(2))
        }
        return nil
    }
}
