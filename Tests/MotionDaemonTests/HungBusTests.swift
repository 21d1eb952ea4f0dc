import Foundation
import TestSupport
import Testing

/// A system bus that accepts motiond's connections and never answers (a bus daemon stuck, or
/// something else on its socket) must neither hold motiond's start nor its SIGTERM (issue 60, defect 9:
/// the D-Bus parts' synchronous sd-bus calls in `start()` made SIGTERM take 88 s, then exit 1, and
/// systemd's stop timeout is 90 s).
@Suite(.onOwnThreads) struct HungBusTests {
    /// `motiond --dbus` (the sensor-proxy drop-in and the GeoClue client) on a bus that never answers:
    /// it serves its socket, and SIGTERM ends it within 3 s (systemd's stop timeout is 90 s), with
    /// status 0: sent while the drop-in's start waits for its name, or once that wait gave up (10 s)
    /// and GeoClue's client has connected too (it connects only while a true-north watch wants a
    /// place: issue 63).
    @Test(arguments: [false, true])
    func sigtermEndsMotiondPromptlyWhileTheBusNeverAnswers(afterGeoClueConnected: Bool) throws {
        let bus = try SilentBus()
        let daemon = try ReplayDaemon(arguments: ["--loop", "--dbus"], environment: ["DBUS_SYSTEM_BUS_ADDRESS": bus.address])
        // The connections in start order: logind's sleeps (always), the drop-in, GeoClue's client.
        try waitUntil(seconds: 10) { bus.connections >= 2 }
        if afterGeoClueConnected {
            let client = try TestClient.greeted(path: daemon.socket)
            try client.send(#"{"class":"WATCH","streams":["motion"],"interval":0.1,"frame":"xTrueNorthZVertical"}"#)
            try waitUntil(seconds: 20) { bus.connections >= 3 }
            #expect(daemon.log.contains("the system bus has not answered in 10 s"), "\(daemon.log)")
        }
        let sent = Date()
        kill(daemon.process.processIdentifier, SIGTERM)
        let ended = daemon.process.waitUntilExit(seconds: 30)
        let seconds = Date().timeIntervalSince(sent)
        #expect(ended && seconds < 3, "SIGTERM took \(seconds) s\(ended ? "" : " (killed after 30 s)"): \(daemon.log)")
        #expect(!ended || daemon.process.terminationStatus == 0, "exit status \(daemon.process.terminationStatus): \(daemon.log)")
    }

    /// A bus that answers only after the drop-in's start stopped waiting (10 s), and then refuses the
    /// name (another motiond, as iio-sensor-proxy would, owns `net.hadess.SensorProxy`): motiond ends
    /// with an error and a non-zero status, as when the refusal comes within the wait, rather than run
    /// on without D-Bus.
    @Test func aNameRefusedAfterTheWaitEndsMotiond() throws {
        let system = try PrivateSystemBus()
        let holder = try ReplayDaemon(arguments: ["--loop", "--dbus"], environment: ["DBUS_SYSTEM_BUS_ADDRESS": system.address])
        try waitUntil(seconds: 10) { system.hasOwner("net.hadess.SensorProxy") }
        let bus = try SilentBus(wakingInto: system)
        let daemon = try ReplayDaemon(arguments: ["--loop", "--dbus"], environment: ["DBUS_SYSTEM_BUS_ADDRESS": bus.address])
        try waitUntil(seconds: 20) { daemon.log.contains("the system bus has not answered in 10 s") }
        bus.wake()
        let ended = daemon.process.waitUntilExit(seconds: 10)
        #expect(ended, "motiond still runs 10 s after the bus refused its name: \(daemon.log)")
        #expect(!ended || daemon.process.terminationStatus != 0, "exit status 0: \(daemon.log)")
        #expect(daemon.log.contains("Error: net.hadess.SensorProxy is owned by another program"), "\(daemon.log)")
        withExtendedLifetime(holder) {}
    }
}
