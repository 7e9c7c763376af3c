import Foundation
import Testing
import TestSupport

@testable import ImageWorkerServer

/// The delivery stage's default concurrency: the CPUs of the affinity mask, capped by a cgroup
/// CPU quota. The parsing and the cgroup walk from fixtures; the affinity against `nproc`.
@Suite struct AvailableCPUsTests {
    @Test func cpuLists() {
        #expect(AvailableCPUs.cpuListCount("0-3,8,10-11") == 7)
        #expect(AvailableCPUs.cpuListCount("\t0\n") == 1)
        #expect(AvailableCPUs.cpuListCount("0-1") == 2)
        #expect(AvailableCPUs.cpuListCount("") == nil)
        #expect(AvailableCPUs.cpuListCount("3-1") == nil)
        #expect(AvailableCPUs.cpuListCount("0-") == nil)
        #expect(AvailableCPUs.cpuListCount("cpu0") == nil)
    }

    @Test func quotas() {
        #expect(AvailableCPUs.cpuMax("200000 100000\n") == 2)
        #expect(AvailableCPUs.cpuMax("150000 100000") == 2)  // 1.5 CPUs: rounded up
        #expect(AvailableCPUs.cpuMax("10000 100000") == 1)
        #expect(AvailableCPUs.cpuMax("max 100000") == nil)
        #expect(AvailableCPUs.cpuMax("") == nil)
        #expect(AvailableCPUs.cpus(quota: -1, period: 100_000) == nil)  // v1: no quota
        #expect(AvailableCPUs.cpus(quota: 400_000, period: 0) == nil)
    }

    /// A mountinfo line for a cgroup hierarchy.
    private func mount(_ root: String, _ point: String, v1 options: String? = nil) -> String {
        if let options { return "32 31 0:29 \(root) \(point) rw,relatime shared:9 - cgroup cgroup rw,\(options)" }
        return "41 31 0:38 \(root) \(point) rw,nosuid,nodev,noexec,relatime - cgroup2 cgroup2 rw,nsdelegate"
    }

    private func quota(_ cgroups: String, _ mounts: [String], _ files: [String: String]) -> Int? {
        AvailableCPUs.quotaCPUs(cgroups: cgroups, mounts: mounts.joined(separator: "\n") + "\n") { files[$0] }
    }

    @Test func cgroupV2InAContainer() {
        let mounts = [mount("/", "/sys/fs/cgroup")]
        #expect(quota("0::/\n", mounts, ["/sys/fs/cgroup/cpu.max": "300000 100000\n"]) == 3)
        #expect(quota("0::/\n", mounts, ["/sys/fs/cgroup/cpu.max": "max 100000\n"]) == nil)
        #expect(quota("0::/\n", mounts, [:]) == nil)
    }

    @Test func cgroupV2QuotaOnAnAncestorCounts() {
        let mounts = [mount("/", "/sys/fs/cgroup")]
        let files = [
            "/sys/fs/cgroup/system.slice/worker.scope/cpu.max": "max 100000",
            "/sys/fs/cgroup/system.slice/cpu.max": "250000 100000",
            "/sys/fs/cgroup/cpu.max": "800000 100000",
        ]
        #expect(quota("0::/system.slice/worker.scope\n", mounts, files) == 3)
    }

    @Test func cgroupV1CPUController() {
        // As on a hybrid machine: v1 controllers, and a v2 hierarchy without the cpu controller.
        let mounts = [
            mount("/", "/sys/fs/cgroup/cpu", v1: "cpu"), mount("/", "/sys/fs/cgroup/cpuacct", v1: "cpuacct"),
            mount("/", "/sys/fs/cgroup/unified"),
        ]
        let cgroups = "2:cpuacct:/\n1:cpu:/jobs/one\n0::/\n"
        var files = [
            "/sys/fs/cgroup/cpu/cpu.cfs_quota_us": "-1\n", "/sys/fs/cgroup/cpu/cpu.cfs_period_us": "100000\n",
            "/sys/fs/cgroup/cpu/jobs/one/cpu.cfs_quota_us": "150000\n",
            "/sys/fs/cgroup/cpu/jobs/one/cpu.cfs_period_us": "100000\n",
        ]
        #expect(quota(cgroups, mounts, files) == 2)
        files["/sys/fs/cgroup/cpu/jobs/one/cpu.cfs_quota_us"] = "-1\n"
        #expect(quota(cgroups, mounts, files) == nil)
        // A controller named like another (cpuacct, cpuset) is not cpu.
        #expect(quota("3:cpuset:/jobs/one\n", mounts, files) == nil)
    }

    @Test func cgroupV1MountedFromTheContainersOwnFolder() {
        // Docker on cgroup v1: the container sees its cgroup as the mount's root.
        let mounts = [mount("/docker/abc", "/sys/fs/cgroup/cpu,cpuacct", v1: "cpu,cpuacct")]
        let files = [
            "/sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us": "200000", "/sys/fs/cgroup/cpu,cpuacct/cpu.cfs_period_us": "100000",
        ]
        #expect(quota("4:cpu,cpuacct:/docker/abc\n", mounts, files) == 2)
        // A cgroup outside what the mount shows is not looked for under it.
        #expect(quota("4:cpu,cpuacct:/docker/abcdef\n", mounts, files) == nil)
    }

    @Test func theSmallestQuotaWins() {
        let mounts = [mount("/", "/sys/fs/cgroup/cpu", v1: "cpu"), mount("/", "/sys/fs/cgroup/unified")]
        let files = [
            "/sys/fs/cgroup/cpu/cpu.cfs_quota_us": "400000", "/sys/fs/cgroup/cpu/cpu.cfs_period_us": "100000",
            "/sys/fs/cgroup/unified/cpu.max": "100000 100000",
        ]
        #expect(quota("1:cpu:/\n0::/\n", mounts, files) == 1)
    }

    @Test func foldersUpToTheMountsRoot() {
        let whole = AvailableCPUs.Mount(root: "/", point: "/c")
        #expect(AvailableCPUs.folders(of: "/a/b", in: whole) == ["/c/a/b", "/c/a", "/c"])
        #expect(AvailableCPUs.folders(of: "/", in: whole) == ["/c"])
        let part = AvailableCPUs.Mount(root: "/a", point: "/c")
        #expect(AvailableCPUs.folders(of: "/a/b", in: part) == ["/c/b", "/c"])
        #expect(AvailableCPUs.folders(of: "/a", in: part) == ["/c"])
        #expect(AvailableCPUs.folders(of: "/ab", in: part) == [])
    }

    @Test func mountPointsWithEscapedSpaces() {
        let line = #"41 31 0:38 / /sys/fs/cgroup/my\040tree rw - cgroup2 cgroup2 rw"#
        #expect(AvailableCPUs.cgroupMounts(line, version2: true) == [.init(root: "/", point: "/sys/fs/cgroup/my tree")])
        #expect(AvailableCPUs.cgroupMounts(line, version2: false) == [])
    }

    /// coreutils' `nproc` counts the affinity mask too; under `taskset -c 0`, one CPU.
    @Test func theAffinityMaskIsNprocs() throws {
        let nproc = String(decoding: try ChildExit.output(of: "/usr/bin/nproc", []).stdout, as: UTF8.self)
        #expect(AvailableCPUs.affinityCount() == Int(nproc.trimmingCharacters(in: .whitespacesAndNewlines)))
    }
}
