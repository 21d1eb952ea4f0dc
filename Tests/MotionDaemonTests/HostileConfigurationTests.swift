import Foundation
import TestSupport
import Testing

/// A configuration that is refused costs nothing that stays (issue 25, defect 11).
@Suite(.onOwnThreads) struct HostileConfigurationTests {
    @Test func reloadingADeeplyNestedConfigurationIsRefusedAndLeavesNoMemoryBehind() throws {
        let path = NSTemporaryDirectory() + "motiond-deep-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).conf"
        try "declination: 1\n".write(toFile: path, atomically: true, encoding: .utf8)
        let daemon = try ReplayDaemon(arguments: ["--loop", "--config", path])
        usleep(500_000)  // stays: the start's allocations settle before the baseline; nothing says when
        let before = daemon.process.residentMegabytes
        try ("declination: " + String(repeating: "[", count: 9990) + String(repeating: "]", count: 9990) + "\n")
            .write(toFile: path, atomically: true, encoding: .utf8)
        for reload in 1...3 {
            kill(daemon.process.processIdentifier, SIGHUP)
            try waitUntil(seconds: 5) {
                daemon.log.components(separatedBy: "configuration not reloaded").count - 1 >= reload
            }
        }
        let grown = daemon.process.residentMegabytes - before
        #expect(grown < 2, "RSS grew \(grown) MB over three refused reloads")
        #expect(daemon.log.contains("nests lists and mappings more than 32 deep"), "\(daemon.log)")
        print("deeply nested configuration: refused three times, RSS +\(grown) MB")
    }
}
