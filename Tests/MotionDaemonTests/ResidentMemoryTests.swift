import Foundation
import TestSupport
import Testing

/// motiond at rest keeps resident only what rest needs: `MemoryUpkeep.pageOutDelay` (5 s) after its sensors
/// last changed (here: start-up, with none), it gives back the clean pages of its executable and
/// libraries that start-up touched (`ResidentMemory`). Measured on the executable's own mappings
/// (proc(5), `Rss` in /proc/PID/smaps) of a copy of its own: shared pages stay, and the libraries' are
/// shared with this test process, the executable's with the other tests' daemons. The daemon runs
/// without umockdev (so it sees none of another test's testbeds), beside the `Hardware` suite.
@Suite(.onOwnThreads) struct ResidentMemoryAtRest {
    @Test func startUpsFilePagesAreGivenBackAtRest() throws {
        let copy = NSTemporaryDirectory() + "motiond-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try copyExecutable(from: DaemonProcess.executable, to: copy)
        defer { try? FileManager.default.removeItem(atPath: copy) }
        let daemon = try retryingBusyText {
            try DaemonProcess(socket: temporarySocketPath(), environment: ["LD_PRELOAD": "", "UMOCKDEV_DIR": ""], executable: copy)
        }
        let pid = daemon.process.processIdentifier
        func residentFileKilobytes() -> Int? {
            guard let smaps = try? String(contentsOfFile: "/proc/\(pid)/smaps", encoding: .utf8) else { return nil }
            var ofExecutable = false
            var kilobytes = 0
            for line in smaps.split(separator: "\n") {
                let fields = line.split(separator: " ", omittingEmptySubsequences: true)
                if fields.first?.contains("-") == true, fields.count >= 5 {
                    ofExecutable = fields.count >= 6 && fields[5] == copy
                } else if ofExecutable, fields.first == "Rss:", fields.count >= 2 {
                    kilobytes += Int(fields[1]) ?? 0
                }
            }
            return kilobytes
        }
        let afterStart = try #require(residentFileKilobytes())
        var atRest = afterStart
        try? waitUntil(seconds: 15) {
            atRest = residentFileKilobytes() ?? atRest
            return atRest < afterStart / 2
        }
        #expect(atRest < afterStart / 2, "the executable's RSS: \(afterStart) kB after start, \(atRest) kB at rest")
        // What was paged out runs again when it is needed.
        let client = try TestClient.greeted(path: daemon.socket)
        try client.send(#"{"class":"STATUS"}"#)
        _ = try client.next("STATUS")
    }
}
