import Foundation

/// CPU time, scheduling count and memory of a running process, from /proc (all its threads).
struct ProcessProbe {
    let pid: Int32

    struct Reading {
        /// Per thread: CPU time, ns, and times put on a CPU (wake-ups plus preemptions), from schedstat.
        var threads: [String: (name: String, cpu: Int64, runs: Int64)] = [:]
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
            let name = (try? String(contentsOfFile: "/proc/\(pid)/task/\(task)/comm", encoding: .utf8))?.trimmingCharacters(in: .whitespacesAndNewlines) ?? task
            reading.threads[task] = (name, fields[0], fields[2])
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

    /// Resident memory by what is mapped (a file, or `anonymous`), largest first, from /proc/PID/smaps.
    func residentByMapping() -> [(name: String, kilobytes: Int)] {
        // Read to the end: /proc files report a size of 0, which a whole-file read may trust.
        let data = FileHandle(forReadingAtPath: "/proc/\(pid)/smaps")?.readDataToEndOfFile() ?? Data()
        let text = String(decoding: data, as: UTF8.self)
        var sizes: [String: Int] = [:]
        var current = "anonymous"
        for line in text.split(separator: "\n") {
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            if let first = fields.first, first.contains("-"), first.allSatisfy({ $0.isHexDigit || $0 == "-" }) {
                current = fields.count >= 6 ? String(fields[5].split(separator: "/").last ?? fields[5]) : "anonymous"
            } else if fields.first == "Rss:", fields.count >= 2, let kilobytes = Int(fields[1]) {
                sizes[current, default: 0] += kilobytes
            }
        }
        return sizes.map { (name: $0.key, kilobytes: $0.value) }.sorted { $0.kilobytes > $1.kilobytes }
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
        /// Wake-ups per second by thread name (threads of one name summed), busiest first.
        var runsPerSecondByThread: [(name: String, runsPerSecond: Double)] = []

        var description: String { String(format: "CPU %.2f %% of one core, %.1f wake-ups/s", cpuPercent, runsPerSecond) }

        /// Where the wake-ups happen: `NIO-ELT-0-#0 100.0/s, …`.
        var byThread: String {
            runsPerSecondByThread.filter { $0.runsPerSecond >= 0.05 }.map { String(format: "%@ %.1f/s", $0.name, $0.runsPerSecond) }.joined(separator: ", ")
        }
    }

    /// Threads that ended between the readings are not counted (the daemon's threads live as long as a sensor runs).
    static func usage(from a: Reading, to b: Reading) -> Usage {
        let seconds = Double(b.time - a.time) * 1e-9
        var cpu: Int64 = 0, runs: Int64 = 0
        var byName: [String: Int64] = [:]
        for (thread, end) in b.threads {
            let start = a.threads[thread] ?? (end.name, 0, 0)
            cpu += end.cpu - start.cpu
            runs += end.runs - start.runs
            byName[end.name, default: 0] += end.runs - start.runs
        }
        let byThread = byName.map { (name: $0.key, runsPerSecond: Double($0.value) / seconds) }.sorted { $0.runsPerSecond > $1.runsPerSecond }
        return Usage(cpuPercent: Double(cpu) * 1e-9 / seconds * 100, runsPerSecond: Double(runs) / seconds, runsPerSecondByThread: byThread)
    }
}
