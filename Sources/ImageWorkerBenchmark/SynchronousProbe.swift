import Foundation

/// A client with no threads of its own: write a request, then block reading lines.
enum SynchronousProbe {
    static func run(worker: String, base: String, count: Int) -> (responses: [Double], started: [Double]) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: worker)
        let stdin = Pipe()
        let stdout = Pipe()
        process.standardInput = stdin
        process.standardOutput = stdout
        process.standardError = FileHandle.nullDevice
        guard (try? process.run()) != nil else { return ([0], [0]) }
        let out = stdout.fileHandleForReading.fileDescriptor
        let input = stdin.fileHandleForWriting.fileDescriptor
        var pending: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        func nextLine() -> String? {
            while true {
                if let newline = pending.firstIndex(of: 0x0A) {
                    let line = String(decoding: pending[..<newline], as: UTF8.self)
                    pending.removeFirst(newline + 1)
                    return line
                }
                let n = buffer.withUnsafeMutableBytes { read(out, $0.baseAddress, $0.count) }
                if n <= 0 { return nil }
                pending.append(contentsOf: buffer[0..<n])
            }
        }
        var responses: [Double] = []
        var started: [Double] = []
        for i in 0..<count {
            let request = Array(#"{"jsonrpc":"2.0","id":\#(i),"method":"download","params":{"token":"l\#(i)","url":"\#(base)/f\#(i % 50).jpg?l=\#(i)"}}"#.utf8) + [0x0A]
            let sent = DispatchTime.now().uptimeNanoseconds
            _ = request.withUnsafeBytes { write(input, $0.baseAddress, $0.count) }
            while let line = nextLine() {
                let elapsed = Double(DispatchTime.now().uptimeNanoseconds - sent) / 1e6
                if line.contains(#""id":\#(i),"result""#) { responses.append(elapsed) }
                if line.contains(#""method":"download/started""#) { started.append(elapsed) }
                if line.contains(#""method":"download/completed""#) { break }
            }
        }
        close(input)
        process.waitUntilExit()
        return (responses, started)
    }
}
