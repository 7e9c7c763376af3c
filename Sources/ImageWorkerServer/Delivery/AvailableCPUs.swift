import Foundation

/// How many CPUs this process may use: the delivery stage's default concurrency.
///
/// The CPUs of its affinity mask (`taskset`, a cpuset, a scheduler that pins it), capped by
/// a CPU quota (`docker --cpus`, a Kubernetes limit: cgroup v2 `cpu.max` or v1
/// `cpu.cfs_quota_us`, on the process's cgroup or any above it), rounded up; at least 1.
/// `ProcessInfo.activeProcessorCount` counts the machine's online CPUs: under `taskset -c 0` on a
/// 16-core machine it says 16, and 16 decodes would then take turns on one core.
enum AvailableCPUs {
    /// `decodeConcurrency`'s largest value.
    static let maximum = Int(OptionTable.Configure.decodeConcurrency.upperBound)

    static func count() -> Int {
        let online = max(1, sysconf(Int32(_SC_NPROCESSORS_ONLN)))
        let affinity = affinityCount() ?? online
        let quota = quotaCPUs(
            cgroups: read("/proc/self/cgroup") ?? "", mounts: read("/proc/self/mountinfo") ?? "", read: read)
        return max(1, min(affinity, quota ?? Int.max, maximum))
    }

    /// The CPUs in this thread's affinity mask (as `sched_getaffinity`, which Swift's Glibc module
    /// does not export, from `/proc`'s `Cpus_allowed_list`); nil where it cannot be read.
    static func affinityCount() -> Int? {
        guard let status = read("/proc/thread-self/status") ?? read("/proc/self/status") else { return nil }
        for line in status.split(separator: "\n") where line.hasPrefix("Cpus_allowed_list:") {
            return cpuListCount(line.dropFirst("Cpus_allowed_list:".count))
        }
        return nil
    }

    /// How many CPUs a list such as "0-3,8,10-11" names; nil when it is not one.
    static func cpuListCount(_ list: Substring) -> Int? {
        var count = 0
        for range in list.trimmingCharacters(in: .whitespacesAndNewlines).split(separator: ",") {
            let ends = range.split(separator: "-", omittingEmptySubsequences: false)
            guard (1...2).contains(ends.count), let first = Int(ends[0]), let last = Int(ends[ends.count - 1]),
                first >= 0, last >= first
            else { return nil }
            count += last - first + 1
        }
        return count > 0 ? count : nil
    }

    /// The smallest CPU quota, in whole CPUs rounded up, set on the process's cgroups or their
    /// ancestors that the mounts show; nil when there is none.
    /// - Parameters:
    ///   - cgroups: `/proc/self/cgroup` (`ID:CONTROLLERS:PATH` per line; `0::PATH` is cgroup v2).
    ///   - mounts: `/proc/self/mountinfo`: where each hierarchy is mounted, and from which of its
    ///     folders (a container sees its own cgroup as the mount's root).
    ///   - read: a file's text, or nil.
    static func quotaCPUs(cgroups: String, mounts: String, read: (String) -> String?) -> Int? {
        var smallest: Int?
        func consider(_ cpus: Int?) {
            if let cpus { smallest = min(smallest ?? cpus, cpus) }
        }
        for line in cgroups.split(separator: "\n") {
            let fields = line.split(separator: ":", maxSplits: 2, omittingEmptySubsequences: false)
            guard fields.count == 3 else { continue }
            let controllers = fields[1].split(separator: ",")
            let version2 = fields[0] == "0" && fields[1].isEmpty
            guard version2 || controllers.contains("cpu") else { continue }
            for mount in cgroupMounts(mounts, version2: version2) {
                for folder in folders(of: String(fields[2]), in: mount) {
                    if version2 {
                        consider(read(folder + "/cpu.max").flatMap(cpuMax))
                    } else if let quota = read(folder + "/cpu.cfs_quota_us").flatMap(integer),
                        let period = read(folder + "/cpu.cfs_period_us").flatMap(integer)
                    {
                        consider(cpus(quota: quota, period: period))
                    }
                }
            }
        }
        return smallest
    }

    /// cgroup v2's `cpu.max`: "QUOTA PERIOD" in microseconds, or "max PERIOD" for none.
    static func cpuMax(_ text: String) -> Int? {
        let fields = text.split(whereSeparator: \.isWhitespace)
        guard fields.count == 2, let quota = Int(fields[0]), let period = Int(fields[1]) else { return nil }
        return cpus(quota: quota, period: period)
    }

    /// A quota of `quota` µs of CPU time per `period` µs, in whole CPUs rounded up; nil for none
    /// (v1 writes -1).
    static func cpus(quota: Int, period: Int) -> Int? {
        guard quota > 0, period > 0 else { return nil }
        return max(1, (quota + period - 1) / period)
    }

    /// A cgroup hierarchy mounted: its folder in the hierarchy, and where it is mounted.
    struct Mount: Equatable {
        var root: String
        var point: String
    }

    /// The mounts of the v2 hierarchy, or of the v1 hierarchy that has the `cpu` controller.
    static func cgroupMounts(_ mountinfo: String, version2: Bool) -> [Mount] {
        mountinfo.split(separator: "\n").compactMap { line in
            // ID PARENT MAJOR:MINOR ROOT POINT OPTIONS [OPTIONAL...] - TYPE SOURCE SUPER-OPTIONS
            let halves = line.components(separatedBy: " - ")
            guard halves.count == 2 else { return nil }
            let left = halves[0].split(separator: " ")
            let right = halves[1].split(separator: " ")
            guard left.count >= 5, right.count >= 3 else { return nil }
            if version2 {
                guard right[0] == "cgroup2" else { return nil }
            } else {
                guard right[0] == "cgroup", right[2].split(separator: ",").contains("cpu") else { return nil }
            }
            return Mount(root: unescape(left[3]), point: unescape(left[4]))
        }
    }

    /// The folders of the cgroup at `path` and of each one above it, down to the mount's own
    /// root, as they appear under the mount (none when the cgroup is outside what it shows).
    static func folders(of path: String, in mount: Mount) -> [String] {
        let root = mount.root == "/" ? "" : mount.root
        guard path == mount.root || path.hasPrefix(root + "/") || root.isEmpty else { return [] }
        var relative = String(path.dropFirst(root.count))
        var found: [String] = []
        while true {
            found.append(mount.point + (relative == "/" ? "" : relative))
            guard let slash = relative.lastIndex(of: "/"), !relative.isEmpty, relative != "/" else { break }
            relative = slash == relative.startIndex ? "/" : String(relative[..<slash])
        }
        return found
    }

    private static func integer(_ text: String) -> Int? {
        Int(text.trimmingCharacters(in: .whitespacesAndNewlines))
    }

    /// mountinfo writes a space, tab, newline or backslash in a path as an octal escape.
    private static func unescape(_ field: Substring) -> String {
        guard field.contains("\\") else { return String(field) }
        var bytes: [UInt8] = []
        var index = field.utf8.startIndex
        let utf8 = field.utf8
        while index < utf8.endIndex {
            let byte = utf8[index]
            if byte == UInt8(ascii: "\\"), let end = utf8.index(index, offsetBy: 4, limitedBy: utf8.endIndex),
                let value = UInt8(String(field[utf8.index(after: index)..<end]), radix: 8)
            {
                bytes.append(value)
                index = end
            } else {
                bytes.append(byte)
                index = utf8.index(after: index)
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    private static func read(_ path: String) -> String? {
        try? String(contentsOfFile: path, encoding: .utf8)
    }
}
