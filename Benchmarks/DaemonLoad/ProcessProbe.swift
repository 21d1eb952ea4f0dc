import Foundation

/// CPU time, scheduling count and memory of a running process, from /proc (all its threads).
struct ProcessProbe {
    let pid: Int32

    struct Reading {
        /// CPU time of all threads, ns (schedstat).
        var cpu: Int64
        /// Times any thread was put on a CPU: wake-ups plus preemptions (schedstat).
        var runs: Int64
        /// Wall clock, ns.
        var time: Int64
    }

    func read() -> Reading {
        var cpu: Int64 = 0, runs: Int64 = 0
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
        for task in tasks {
            guard let text = try? String(contentsOfFile: "/proc/\(pid)/task/\(task)/schedstat", encoding: .utf8) else { continue }
            let fields = text.split(separator: " ").compactMap { Int64($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
            guard fields.count == 3 else { continue }
            cpu += fields[0]
            runs += fields[2]
        }
        return Reading(cpu: cpu, runs: runs, time: Feeder.now())
    }

    /// A /proc/PID/status field in kB (VmRSS: resident now; VmHWM: the peak).
    func status(_ field: String) -> Int {
        let text = (try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)) ?? ""
        for line in text.split(separator: "\n") where line.hasPrefix(field + ":") {
            return Int(line.dropFirst(field.count + 1).trimmingCharacters(in: .whitespaces).split(separator: " ").first ?? "") ?? 0
        }
        return 0
    }

    /// What the process did between two readings.
    struct Usage: CustomStringConvertible {
        /// Percent of one core.
        var cpuPercent: Double
        /// Times scheduled per second.
        var runsPerSecond: Double

        var description: String { String(format: "CPU %.2f %% of one core, %.1f wake-ups/s", cpuPercent, runsPerSecond) }
    }

    static func usage(from a: Reading, to b: Reading) -> Usage {
        let seconds = Double(b.time - a.time) * 1e-9
        return Usage(cpuPercent: Double(b.cpu - a.cpu) * 1e-9 / seconds * 100, runsPerSecond: Double(b.runs - a.runs) / seconds)
    }
}
