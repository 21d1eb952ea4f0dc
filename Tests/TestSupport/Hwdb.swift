import Foundation

/// Systemd's hwdb as tests use it: records of Debian 12's own 60-sensor.hwdb, and lookups through
/// the real `systemd-hwdb` under a root of the test's own.
public enum Hwdb {
    /// The record shipped in Debian's 60-sensor.hwdb whose first match line is `line`.
    public static func shippedRecord(startingWith line: String) throws -> String {
        let hwdb = try String(contentsOfFile: "/usr/lib/udev/hwdb.d/60-sensor.hwdb", encoding: .utf8)
        let lines = hwdb.components(separatedBy: "\n")
        guard let start = lines.firstIndex(of: line) else { throw TestbedError("60-sensor.hwdb has no line \(line)") }
        let end = lines[start...].firstIndex(of: "") ?? lines.endIndex
        return lines[start..<end].joined(separator: "\n") + "\n"
    }

    /// Compiles `files` (name under `lib/udev/hwdb.d` or `etc/udev/hwdb.d` → text) with the real
    /// systemd-hwdb under a root of its own and looks `key` up: its properties, and what `update`
    /// said (its exit status and its warnings).
    public static func lookUp(_ key: String, in files: [String: String]) async throws -> (properties: String, updateStatus: Int32, warnings: String) {
        let root = NSTemporaryDirectory() + "hwdb-root-\(UInt32.random(in: 0...UInt32.max))"
        defer { try? FileManager.default.removeItem(atPath: root) }
        for (path, text) in files {
            let url = URL(fileURLWithPath: root + "/" + path)
            try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
            try text.write(to: url, atomically: true, encoding: .utf8)
        }
        let update = try await runProgram("systemd-hwdb", ["--root", root, "update", "--strict"])
        let query = try await runProgram("systemd-hwdb", ["--root", root, "query", key])
        return (query.output, update.status, update.errors)
    }
}
