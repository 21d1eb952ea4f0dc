import Foundation
import HubTestKit
import MotionCore
import MotionWire
import Synchronization
import TestSupport
import Testing

@testable import MotionDBus
@testable import MotionDevices
@testable import MotionHub

#if canImport(Glibc)
import Glibc
#endif

/// Claims a desktop can rely on through sleep, a capture's end and a sensor's late arrival (issue 62),
/// on a hub in this process serving a private bus (`SensorProxyBridgeRules.Served`), checked against
/// iio-sensor-proxy 3.7's own rules (gitlab.freedesktop.org/hadess/iio-sensor-proxy, tag 3.7,
/// src/iio-sensor-proxy.c): a `Claim…` returns once the sensor's first reading is in (3.6, commit
/// da8bee3: `handle_generic_method_call`, lines 515–537, and `maybe_notify_sensor_startup_finished`,
/// 803–821); a sensor that appears while claimed is started and told with its first reading,
/// without a new claim (`sensor_changes`, 1078–1093). The expected readings are the fixtures' of
/// `SensorProxyBridgeRules` (iio-sensor-proxy's own readings of them: `normal`, 50 lux).
// One test at a time: each starts a dbus-daemon and serves on it, with clients of its own; started
// all at once beside the rest of a full run, such suites starved it (a CI run: a motiond did not
// start in 10 s, a test's own clock read 5 s late).
@Suite(.serialized, .onOwnThreads) struct SensorProxyClaims {
    typealias Served = SensorProxyBridgeRules.Served
    static let tablet = SensorProxyBridgeRules.tablet
    static let tabletCounts = SensorProxyBridgeRules.tabletCounts
    /// The tablet's accelerometer counts turned right-up: (0, 1000, 100) through its matrix reads
    /// right-up, as iio-sensor-proxy reads it (`SensorProxyBridge.theOtherClaimantStaysServedWhenOneVanishes`).
    static let rightUp = Vector3(x: 0, y: 1000, z: 100)

    /// A desktop releases its sensors at suspend and claims them again at resume: each claim after a
    /// resume returns with the sensor's first reading after it, within a reading (not after the 3 s a
    /// claim waits at most, `SensorProxyService.claimPatience`), for every `Claim…` (upstream's four
    /// and motiond's posture). Each sensor's reading changes while the machine sleeps, so that a value
    /// from before the sleep cannot pass: the accelerometer turns right-up, the light goes to 150 counts
    /// (75 lux, 0.5 lux a count), something comes near (150 counts over a near level of 100), the
    /// convertible's lid opens from 120° (laptop) to 240° (tent). The compass's heading is the tablet's
    /// top edge east, 90° (`SensorProxyBridgeRules.theCompassHeadingIsTheTopEdgesAzimuth`).
    @Test func everyClaimAfterAResumeReturnsWithItsFirstReadingAfterIt() throws {
        let tablet = try Served(Self.tablet, counts: Self.tabletCounts)
        for (sensor, property, device, turned, expected) in [
            ("Accelerometer", "AccelerometerOrientation", DeviceNumber(0), (SensorKind.accelerometer, Self.rightUp), "right-up"),
            ("Light", "LightLevel", DeviceNumber(1), (.light, Vector3(x: 150, y: 0, z: 0)), "75.0"),
            ("Proximity", "ProximityNear", DeviceNumber(2), (.proximity, Vector3(x: 150, y: 0, z: 0)), "true"),
        ] {
            try Self.claimAfterAResume(tablet, sensor, read: { try $0.property(property) }, turning: { counts in
                counts[device] = [turned.0: turned.1]
            }) { value in #expect(value == expected, "\(property) after the resume") }
        }
        let opened = Machines.convertibleCounts(hinge: 120)
        let convertible = try Served([Machines.convertibleDisplay, Machines.convertibleBase], counts: [
            DeviceNumber(0): [.accelerometer: opened.display], DeviceNumber(1): [.accelerometer: opened.base],
        ])
        try Self.claimAfterAResume(convertible, "Posture", interface: BusClient.postureInterface, read: { try $0.postureProperty("Posture") }, turning: { counts in
            counts[DeviceNumber(0)] = [.accelerometer: Machines.convertibleCounts(hinge: 240).display]
        }) { value in #expect(value == "tent", "the posture after the resume") }
        let compass = try Served([Machines.tabletAccelerometer, Machines.tabletMagnetometer], counts: [
            DeviceNumber(0): [.accelerometer: Vector3(x: 0, y: 0, z: 1000)], DeviceNumber(1): [.magnetometer: Vector3(x: 190, y: 0, z: -460)],
        ])
        try Self.claimAfterAResume(
            compass, "Compass", path: BusClient.compassPath, interface: BusClient.compassInterface, read: { try $0.compassProperty("CompassHeading") }
        ) { value in
            let heading = Double(value)
            #expect(heading.map { abs($0 - 90) < 5 } == true, "heading \(value)° after the resume")
        }
    }

    /// Each `ClaimCompass` returns with the heading (the tablet's top edge east, 90°), claim after
    /// claim: the fusion's first `MOTION` after its sensors start again said 0°, before the
    /// magnetometer's first reading was fused, and the claim returned with it (7 claims of 8 did, the
    /// first being the one that may not).
    @Test func everyCompassClaimReturnsWithTheHeading() throws {
        let served = try Served([Machines.tabletAccelerometer, Machines.tabletMagnetometer], counts: [
            DeviceNumber(0): [.accelerometer: Vector3(x: 0, y: 0, z: 1000)], DeviceNumber(1): [.magnetometer: Vector3(x: 190, y: 0, z: -460)],
        ])
        let client = served.client
        for claim in 1...5 {
            try client.call("ClaimCompass", path: BusClient.compassPath, interface: BusClient.compassInterface)
            let heading = try client.compassProperty("CompassHeading")
            #expect(Double(heading).map { abs($0 - 90) < 2 } == true, "claim \(claim) returned with \(heading)°")
            try client.call("ReleaseCompass", path: BusClient.compassPath, interface: BusClient.compassInterface)
            try waitUntil { served.source.running(DeviceNumber(1)) == nil }
        }
    }

    /// Claims `sensor` (`Claim` + its name) and releases it, sleeps the machine (changing the readings
    /// with `turning` meanwhile), resumes it, claims again and checks the claim's time and the value
    /// `read` right after it.
    static func claimAfterAResume(
        _ served: Served, _ sensor: String, path: String = "/net/hadess/SensorProxy", interface: String = "net.hadess.SensorProxy",
        read: (BusClient) throws -> String, turning: (inout [DeviceNumber: [SensorKind: Vector3]]) -> Void = { _ in },
        check: (String) -> Void
    ) throws {
        let client = served.client
        try client.call("Claim" + sensor, path: path, interface: interface)
        try client.call("Release" + sensor, path: path, interface: interface)
        try served.sleep()
        served.source.counts.withLock { turning(&$0) }
        try served.resume()
        let start = ContinuousClock.now
        try client.call("Claim" + sensor, path: path, interface: interface)
        let took = ContinuousClock.now - start
        check(try read(client))
        #expect(took < .seconds(1), "Claim\(sensor) after a resume took \(took)")
        try client.call("Release" + sensor, path: path, interface: interface)
    }

    /// A claim made while the machine sleeps (between `Hub.prepareForSleep` and `Hub.resumed`, as a
    /// desktop's resume can race logind's `PrepareForSleep(false)`) while `HasAccelerometer` is true is
    /// neither refused nor answered with a value from before: it is answered with the first reading
    /// after the resume, as upstream answers a claim once its sensor's first reading is in.
    @Test func aClaimMadeWhileTheMachineSleepsIsAnsweredWithTheFirstReadingAfterIt() throws {
        let served = try Served(Self.tablet, counts: Self.tabletCounts)
        #expect(try served.client.property("HasAccelerometer") == "true")
        try served.sleep()
        served.source.counts.withLock { $0[DeviceNumber(0)] = [.accelerometer: Self.rightUp] }  // turned while asleep
        let address = served.bus.address
        let answer = Mutex<(result: Result<Void, any Error>, at: ContinuousClock.Instant)?>(nil)
        let claiming = Thread {
            // A client of its own, on this thread alone: the claim blocks it until answered.
            let result = Result { try BusClient(address: address).call("ClaimAccelerometer") }
            answer.withLock { $0 = (result, .now) }
        }
        claiming.start()
        // The claim reached the hub (the bridge watches the orientation), and nothing opened.
        try waitUntil { (try? served.watches(.orientation)) == true }
        #expect(served.source.running(DeviceNumber(0)) == nil, "a capture opened while the machine sleeps")
        let resumedAt = ContinuousClock.now
        try served.resume()
        try waitUntil { answer.withLock { $0 != nil } }
        let (result, at) = try #require(answer.withLock { $0 })
        #expect(throws: Never.self) { try result.get() }
        #expect(at > resumedAt, "the claim was answered before the resume, \(resumedAt - at) early")
        #expect(try served.client.property("AccelerometerOrientation") == "right-up")
    }

    /// A claimed sensor whose capture ends while its device stays (its reads failed) is watched again:
    /// the claim keeps its sensor, and a claim made as the capture opens again waits for its first
    /// reading. iio-sensor-proxy's driver never ends while its device is there (it reopens the buffer
    /// every 700 ms while claimed); motiond's bridge used to drop its watch at the `ENDED` and
    /// answer every later claim at once, with the last value, for good.
    @Test func aClaimedSensorWhoseCaptureEndsIsWatchedAgain() throws {
        let served = try Served(Self.tablet, counts: Self.tabletCounts)
        let (client, source) = (served.client, served.source)
        try client.call("ClaimAccelerometer")
        #expect(try client.property("AccelerometerOrientation") == "normal")
        let openings = source.openingCount(of: DeviceNumber(0))
        try served.onLoop { _ in
            source.counts.withLock { $0[DeviceNumber(0)] = [.accelerometer: Self.rightUp] }
            source.fail(DeviceNumber(0), with: .attributeUnreadable(device: "iio:device0", attribute: "in_accel_x_raw", errno: EIO))
        }
        // Opened again at once (the first attempt), though no client claimed anew.
        try waitUntil { source.openingCount(of: DeviceNumber(0)) > openings && source.running(DeviceNumber(0)) != nil }
        let second = try BusClient(address: served.bus.address)
        try second.call("ClaimAccelerometer")
        #expect(try second.property("AccelerometerOrientation") == "right-up", "the claim returned with the reading from before the capture ended")
    }

    /// A program that claimed the accelerometer before there was one (Debian's monitor-sensor claims
    /// every sensor at its start and never again, as mutter before its fix of #4931 claims only once) is
    /// told `HasAccelerometer` and the orientation once the device is listed, without a new claim; a
    /// program that claims as soon as it hears `HasAccelerometer` turn true (mutter's fix) gets its
    /// claim answered with the first reading, as upstream holds it (3.7's `sensor_changes` delays both
    /// until the first reading), not with `undefined` (the bridge had answered the absent sensor's
    /// claim, and the sensor stayed "ready").
    @Test func aClaimMadeBeforeTheAccelerometerAppearsIsServedWhenItDoes() throws {
        let served = try Served([Self.tablet[1]], counts: Self.tabletCounts)  // the light sensor only
        let monitor = try Peer("/usr/bin/monitor-sensor", bus: served.bus)
        // monitor-sensor prints what there is once its claims returned.
        try waitUntil { monitor.output.contains("=== No accelerometer") }
        let late = try BusClient(address: served.bus.address)
        try served.list(Self.tablet)
        try late.call("ClaimAccelerometer")
        #expect(try late.property("AccelerometerOrientation") == "normal", "the claim returned before the first reading")
        try waitUntil { monitor.output.contains("+++ Accelerometer appeared") && monitor.output.contains("Accelerometer orientation changed: normal") }
    }

    /// After a resume each claimant is told its sensors' values again (`PropertiesChanged`), though
    /// none changed: a compositor that missed a change around the sleep learns the orientation there
    /// is; and the reading after the resume is told when the device turned meanwhile. A listing that
    /// finds the same devices (a board's, every 10 s) tells nothing again. Debian's monitor-sensor
    /// prints each `PropertiesChanged` that has the orientation, in the order they were sent.
    @Test func theClaimantsAreToldTheirValuesAgainAfterAResume() throws {
        let served = try Served(Self.tablet, counts: Self.tabletCounts)
        let monitor = try Peer("/usr/bin/monitor-sensor", bus: served.bus)
        let told = { monitor.output.components(separatedBy: "Accelerometer orientation changed: normal").count - 1 }
        try waitUntil { told() >= 1 || monitor.output.contains("(orientation: normal)") }
        let before = told()
        try served.list(Self.tablet)
        try served.sleep()
        try served.resume()
        try waitUntil { told() > before }
        // Turned while asleep: the first reading after the resume is told.
        try served.sleep()
        served.source.counts.withLock { $0[DeviceNumber(0)] = [.accelerometer: Self.rightUp] }
        try served.resume()
        try waitUntil { monitor.output.contains("Accelerometer orientation changed: right-up") }
        // Everything sent before the turn has arrived: each resume's `normal` (the second's before its
        // first reading), and nothing for the listing.
        #expect(told() == before + 2, "\(monitor.output)")
    }
}

extension SensorProxyBridgeRules.Served {
    /// The machine goes to sleep (logind's `PrepareForSleep(true)`): returns once every capture closed.
    func sleep() throws {
        let hub = hub
        try hub.eventLoop.flatSubmit { hub.prepareForSleep() }.wait()
    }

    /// The machine resumed (logind's `PrepareForSleep(false)`).
    func resume() throws {
        try onLoop { $0.resumed() }
    }

    /// Whether a client of the hub watches `stream`.
    func watches(_ stream: StreamKind) throws -> Bool {
        try onLoop { hub in hub.fanout.demands.contains { $0.stream == stream } }
    }

    /// Runs `body` on the hub's loop, and returns what it returns.
    func onLoop<T: Sendable>(_ body: @escaping @Sendable (Hub) -> T) throws -> T {
        let hub = hub
        return try hub.eventLoop.submit { body(hub) }.wait()
    }
}
