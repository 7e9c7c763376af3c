import Foundation

/// What Linux's `/proc` says of each thread of a process.
public enum ProcessThreads {
    /// The text of `/proc/PID/task/TID/<file>` for each thread of `pid` there is (`stat`, `comm`…).
    public static func read(_ file: String, of pid: Int32) -> [String] {
        let folder = "/proc/\(pid)/task"
        let threads = (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []
        return threads.compactMap { try? String(contentsOfFile: "\(folder)/\($0)/\(file)", encoding: .utf8) }
    }
}
