import Foundation
import ImageWorkerProtocol
import Testing
import TestSupport

/// The delivery stage's default concurrency as the real binary reports it (`configure` with no
/// params): one decode per CPU the worker may use, under `taskset` and under a cgroup CPU quota
/// (when this machine lets the test make a cgroup), not one per CPU of the machine.
@Suite struct DecodeConcurrencyTests {
    static func decodeConcurrency(_ worker: WorkerProcess) async throws -> Int64? {
        worker.request(1, "configure", [:])
        let answer = try await worker.response(1)
        worker.closeStdin()
        #expect(try await worker.waitForExit() == 0)
        guard case .int(let n)? = answer["result"]?["configuration"]?["decodeConcurrency"] else { return nil }
        return n
    }

    static var nproc: Int64 {
        guard let run = try? ChildExit.output(of: "/usr/bin/nproc", []) else { return 0 }
        return Int64(String(decoding: run.stdout, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0
    }

    @Test func oneDecodePerCPUOfTheAffinityMask() async throws {
        let all = try await Self.decodeConcurrency(try WorkerProcess())
        #expect(all != nil && all! >= 1 && all! <= Self.nproc, "\(String(describing: all)) against nproc \(Self.nproc)")
        let pinned = try await Self.decodeConcurrency(try WorkerProcess(shell: #"exec taskset -c 0 "$IMAGE_WORKER""#))
        #expect(pinned == 1)
    }

    /// A v1 `cpu` hierarchy or a v2 one with the cpu controller, where this process may make a
    /// child cgroup; nil otherwise (not root, or a read-only or delegated-away hierarchy).
    static let cgroupParent: (folder: String, version2: Bool)? = {
        let candidates: [(String, Bool)] = [("/sys/fs/cgroup/cpu", false), ("/sys/fs/cgroup/cpu,cpuacct", false), ("/sys/fs/cgroup", true)]
        for (folder, version2) in candidates {
            if version2 {
                guard let controllers = try? String(contentsOfFile: folder + "/cgroup.controllers", encoding: .utf8),
                    controllers.split(separator: " ").contains(where: { $0.trimmingCharacters(in: .whitespacesAndNewlines) == "cpu" })
                else { continue }
            } else if !FileManager.default.fileExists(atPath: folder + "/cpu.cfs_quota_us") {
                continue
            }
            let probe = folder + "/image-worker-probe-\(getpid())"
            guard mkdir(probe, 0o755) == 0 else { continue }
            let writable = version2
                ? FileManager.default.isWritableFile(atPath: probe + "/cpu.max")
                : FileManager.default.isWritableFile(atPath: probe + "/cpu.cfs_quota_us")
            rmdir(probe)
            if writable { return (folder, version2) }
        }
        return nil
    }()

    @Test(.enabled(if: cgroupParent != nil, "no cgroup this test may make"))
    func oneDecodeUnderAOneCPUQuota() async throws {
        let parent = try #require(Self.cgroupParent)
        let folder = parent.folder + "/image-worker-test-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        #expect(mkdir(folder, 0o755) == 0)
        defer { rmdir(folder) }
        // 1.5 CPUs' worth of time per period: rounded up, 2; 1 CPU: 1.
        for (quota, expected) in [(100_000, Int64(1)), (150_000, min(2, Self.nproc))] {
            let setting = parent.version2 ? ("cpu.max", "\(quota) 100000") : ("cpu.cfs_quota_us", "\(quota)")
            try setting.1.write(toFile: folder + "/" + setting.0, atomically: false, encoding: .utf8)
            let worker = try WorkerProcess(shell: #"echo $$ > "$CGROUP/cgroup.procs" && exec "$IMAGE_WORKER""#, environment: ["CGROUP": folder])
            #expect(try await Self.decodeConcurrency(worker) == expected, "quota \(quota) in \(folder)")
        }
    }
}
