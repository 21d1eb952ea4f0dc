import Foundation
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The whole daemon through a sleep, as a desktop sees it: motiond --dbus on the umockdev tablet,
/// a logind stand-in on the private bus (Fixtures/logind-stand-in.py: `PrepareForSleep(true)` at
/// SIGUSR1, `(false)` at SIGUSR2, as logind emits them), and Debian's unmodified monitor-sensor, which
/// claims once at its start and never again, as mutter does.
extension Hardware.SensorProxyBridge {
    /// The tablet turns right-up while the machine sleeps (nothing reads it then: its capture is
    /// closed); after `PrepareForSleep(false)` monitor-sensor is told the new orientation, on the claim
    /// it made before the sleep. Raw (0, 1000, 100) reads right-up through the fixture's matrix, as
    /// iio-sensor-proxy reads it (`theOtherClaimantStaysServedWhenOneVanishes`).
    @Test func monitorSensorIsToldTheTurnMadeDuringASleep() throws {
        let testbed = try Testbed()
        try testbed.add(fixture: "tablet-iio-sensor-proxy")
        let bus = try PrivateSystemBus()
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("../TestSupport/Fixtures/logind-stand-in.py").standardized.path
        let logind = try Peer("/usr/bin/python3", arguments: [script], bus: bus)
        try waitUntil(seconds: 20) { logind.output.contains("Owned org.freedesktop.login1") }
        let daemon = try Self.daemon(on: bus)
        let monitor = try Peer("/usr/bin/monitor-sensor", bus: bus)
        try waitUntil { monitor.output.contains("orientation changed: normal") || monitor.output.contains("(orientation: normal)") }
        try waitUntil { logind.output.contains("Inhibit ") }  // the daemon holds its delay lock
        logind.signal(SIGUSR1)
        #expect(daemon.waitForLog("the machine goes to sleep"), "\(daemon.finalLog())")
        try testbed.setAttribute("iio:device0", "in_accel_x_raw", "0\n")
        try testbed.setAttribute("iio:device0", "in_accel_y_raw", "1000\n")
        #expect(try testbed.reads(of: "in_accel_y_raw", on: "iio:device0", during: 0.5) == 0, "the accelerometer is read during the sleep")
        #expect(!monitor.output.contains("right-up"))
        logind.signal(SIGUSR2)
        #expect(daemon.waitForLog("the machine resumed"), "\(daemon.finalLog())")
        try? waitUntil { monitor.output.contains("Accelerometer orientation changed: right-up") }
        #expect(monitor.output.contains("Accelerometer orientation changed: right-up"), "\(monitor.output)\n\(daemon.finalLog())")
    }

    /// monitor-sensor starts on a machine without an accelerometer and claims it (and the light and
    /// the proximity) once; the tablet's sensors are then plugged (umockdev's `add` uevents, the
    /// daemon's hot-plug): monitor-sensor is told the accelerometer and its orientation without
    /// claiming again, and a program that claims as soon as `HasAccelerometer` is true gets its claim
    /// answered with the orientation (iio-sensor-proxy 3.7 holds both until the first reading,
    /// src/iio-sensor-proxy.c:1078–1093).
    @Test func aClaimMadeBeforeTheAccelerometerIsPluggedIsServedWhenItIs() throws {
        let testbed = try Testbed()
        let bus = try PrivateSystemBus()
        let daemon = try Self.daemon(on: bus)
        let monitor = try Peer("/usr/bin/monitor-sensor", bus: bus)
        try waitUntil { monitor.output.contains("=== No accelerometer") }  // printed once its claims returned
        let late = try BusClient(address: bus.address)
        try testbed.add(fixture: "tablet-iio-sensor-proxy")
        try waitUntil(seconds: 10) { (try? late.property("HasAccelerometer")) == "true" }
        try late.call("ClaimAccelerometer")
        #expect(try late.property("AccelerometerOrientation") == "normal")
        try? waitUntil { monitor.output.contains("Accelerometer orientation changed: normal") }
        #expect(monitor.output.contains("+++ Accelerometer appeared") && monitor.output.contains("Accelerometer orientation changed: normal"),
                "\(monitor.output)\n\(daemon.finalLog())")
    }
}
