import ArgumentParser
import ImageWorkerServer

extension ThreadScheduling {
    static let help = ArgumentHelp(
        "CPU scheduling of the worker's threads: batch (a woken thread does not preempt a running one: fewer context switches when every CPU is busy) or normal (the kernel's default).")

    static func validate(_ value: String) throws {
        guard ThreadScheduling(rawValue: value) != nil else {
            throw ValidationError("--scheduling must be \(allCases.map(\.rawValue).joined(separator: " or "))")
        }
    }
}
