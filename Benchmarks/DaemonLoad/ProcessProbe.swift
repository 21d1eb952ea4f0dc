import Foundation

/// CPU time, scheduling count and memory of a running process, from /proc (all its threads).
struct ProcessProbe {
    let pid: Int32

    struct Reading {
        /// Per thread: CPU time, ns, and times put on a CPU (wake-ups plus preemptions), from schedstat.
        var threads: [String: (cpu: Int64, runs: Int64)] = [:]
        /// Wall clock, ns.
        var time: Int64 = 0
    }

    func read() -> Reading {
        var reading = Reading()
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
        for task in tasks {
            guard let text = try? String(contentsOfFile: "/proc/\(pid)/task/\(task)/schedstat", encoding: .utf8) else { continue }
            let fields = text.split(separator: " ").compactMap { Int64($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
            guard fields.count == 3 else { continue }
            reading.threads[task] = (fields[0], fields[2])
        }
        reading.time = Feeder.now()
        return reading
    }

    /// A /proc/PID/status field in kB (VmRSS: resident now; VmHWM: the peak).
    func status(_ field: String) -> Int {
        let text = (try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)) ?? ""
        for line in text.split(separator: "\n") where line.hasPrefix(field + ":") {
            return Int(line.dropFirst(field.count + 1).trimmingCharacters(in: .whitespaces).split(separator: " ").first ?? "") ?? 0
        }
        return 0
    }

    /// Threads, open descriptors and resident memory now: what must stay flat under load.
    var footprint: String {
        let threads = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task"))?.count ?? 0
        let descriptors = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd"))?.count ?? 0
        return "\(threads) threads, \(descriptors) fds, RSS \(status("VmRSS")) kB (anonymous \(status("RssAnon")) kB)"
    }

    /// What the process did between two readings.
    struct Usage: CustomStringConvertible {
        /// Percent of one core.
        var cpuPercent: Double
        /// Times scheduled per second.
        var runsPerSecond: Double

        var description: String { String(format: "CPU %.2f %% of one core, %.1f wake-ups/s", cpuPercent, runsPerSecond) }
    }

    /// Threads that ended between the readings are not counted (the daemon's threads live as long as a sensor runs).
    static func usage(from a: Reading, to b: Reading) -> Usage {
        let seconds = Double(b.time - a.time) * 1e-9
        var cpu: Int64 = 0, runs: Int64 = 0
        for (thread, end) in b.threads {
            let start = a.threads[thread] ?? (0, 0)
            cpu += end.cpu - start.cpu
            runs += end.runs - start.runs
        }
        return Usage(cpuPercent: Double(cpu) * 1e-9 / seconds * 100, runsPerSecond: Double(runs) / seconds)
    }
}
