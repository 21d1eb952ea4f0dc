import Foundation
import Logging
import Synchronization
import TestSupport
import Testing

@testable import MotionDBus

/// The D-Bus service checked with GLib's `gdbus`, a D-Bus client that shares no code with sd-bus, on
/// a private bus of its own (`dbus-daemon`), so no system bus is touched.
@Suite(.serialized, .onOwnThreads) struct SensorProxyServiceTests {
    static let object = ["--dest", "net.hadess.SensorProxy", "--object-path", "/net/hadess/SensorProxy"]

    /// A service on `bus` serving `values`, started; a sensor claimed is ready at once (its values
    /// are `values`), unless `ready` is false.
    static func serving(
        _ values: SensorProxyInterface.Properties, on bus: PrivateSystemBus, ready: Bool = true,
        logger: Logger = Logger(label: "motiond.dbus"), demand: @escaping @Sendable (ClaimBook.Sensor, Bool) -> Void = { _, _ in }
    ) throws -> SensorProxyService {
        let served = Mutex<SensorProxyService?>(nil)
        let service = try SensorProxyService(address: bus.address, logger: logger, demand: { sensor, claimed in
            demand(sensor, claimed)
            if claimed && ready { served.withLock { $0 }?.markReady(sensor) }
        })
        served.withLock { $0 = service }
        service.publish(values)
        service.start()
        try #require(try service.waitUntilNamed(seconds: 10), "the bus gave no answer to the name's request")
        return service
    }

    /// A claim is held until the owner says the sensor's first value is there, and no longer; a
    /// sensor that never gives one holds it `claimPatience` (3 s) at most.
    @Test func aClaimIsHeldUntilTheSensorIsReady() throws {
        let bus = try PrivateSystemBus()
        let service = try Self.serving(SensorProxyInterface.Properties(), on: bus, ready: false)
        defer { service.stop() }
        let client = try BusClient(address: bus.address)
        var started = Date()
        try client.call("ClaimLight")
        let patience = Date().timeIntervalSince(started)
        #expect(patience > 2.9 && patience < 4, "\(patience) s")
        try client.call("ReleaseLight")
        // Claimed anew: held again until ready, which comes half a second later.
        DispatchQueue.global().asyncAfter(deadline: .now() + 0.5) { service.markReady(.light) }
        started = Date()
        try client.call("ClaimLight")
        let held = Date().timeIntervalSince(started)
        #expect(held > 0.45 && held < 1.5, "\(held) s")
    }

    @Test func gdbusReadsThePropertiesUpstreamDefines() throws {
        let bus = try PrivateSystemBus()
        var values = SensorProxyInterface.Properties()
        values.hasAccelerometer = true
        values.accelerometerOrientation = "left-up"
        values.lightLevel = 312.5
        let service = try Self.serving(values, on: bus)
        defer { service.stop() }
        let all = try bus.gdbus(["call"] + Self.object + ["--method", "org.freedesktop.DBus.Properties.GetAll", "net.hadess.SensorProxy"])
        #expect(all.contains("'HasAccelerometer': <true>"), "\(all)")
        #expect(all.contains("'AccelerometerOrientation': <'left-up'>"), "\(all)")
        #expect(all.contains("'LightLevel': <312.5>"), "\(all)")
        #expect(all.contains("'HasProximity': <false>"), "\(all)")
        let one = try bus.gdbus(["call"] + Self.object + ["--method", "org.freedesktop.DBus.Properties.Get", "net.hadess.SensorProxy", "LightLevelUnit"])
        #expect(one.trimmingCharacters(in: .whitespacesAndNewlines) == "(<'lux'>,)")
        let claimed = try bus.gdbus(["call"] + Self.object + ["--method", "net.hadess.SensorProxy.ClaimAccelerometer"])
        #expect(claimed.trimmingCharacters(in: .whitespacesAndNewlines) == "()")
        // A property the interface does not have is an error, as any D-Bus service's is.
        let unknown = try bus.gdbus(["call"] + Self.object + ["--method", "org.freedesktop.DBus.Properties.Get", "net.hadess.SensorProxy", "Nope"])
        #expect(unknown.contains("org.freedesktop.DBus.Error.UnknownProperty"), "\(unknown)")
    }

    /// motiond's own interface (`io.github.motiond.Posture`) on the main object, beside upstream's:
    /// its properties are its own (upstream's `GetAll` has none of them); a claim, made with gdbus
    /// (a connection of its own that leaves the bus as gdbus exits), starts the posture's watch and
    /// its leaving stops it, as for upstream's sensors.
    @Test func gdbusReadsAndClaimsThePostureBesideUpstreamsInterface() throws {
        let bus = try PrivateSystemBus()
        var values = SensorProxyInterface.Properties()
        values.hasPosture = true
        values.posture = "tent"
        values.hingeAngle = 250
        let demands = Demands()
        let service = try Self.serving(values, on: bus) { sensor, on in demands.add(sensor, on) }
        defer { service.stop() }
        let getAll = ["call"] + Self.object + ["--method", "org.freedesktop.DBus.Properties.GetAll"]
        let posture = try bus.gdbus(getAll + ["io.github.motiond.Posture"])
        #expect(posture.trimmingCharacters(in: .whitespacesAndNewlines) == "({'HasPosture': <true>, 'Posture': <'tent'>, 'HingeAngle': <250.0>},)", "\(posture)")
        let upstreams = try bus.gdbus(getAll + ["net.hadess.SensorProxy"])
        #expect(upstreams.contains("'HasAccelerometer'") && !upstreams.contains("Posture") && !upstreams.contains("Hinge"), "\(upstreams)")
        let claimed = try bus.gdbus(["call"] + Self.object + ["--method", "io.github.motiond.Posture.ClaimPosture"])
        #expect(claimed.trimmingCharacters(in: .whitespacesAndNewlines) == "()", "\(claimed)")
        try waitUntil { demands.seen == ["posture on", "posture off"] }
        // Upstream's interface has no such method, and motiond's none of upstream's.
        let wrong = try bus.gdbus(["call"] + Self.object + ["--method", "net.hadess.SensorProxy.ClaimPosture"])
        #expect(wrong.contains("org.freedesktop.DBus.Error.UnknownMethod"), "\(wrong)")
        let crossed = try bus.gdbus(["call"] + Self.object + ["--method", "io.github.motiond.Posture.ClaimAccelerometer"])
        #expect(crossed.contains("org.freedesktop.DBus.Error.UnknownMethod"), "\(crossed)")
        #expect(service.claimants(of: .accelerometer).isEmpty)
    }

    /// What a service asked of its owner (`accelerometer on`, `light off`…), or what it logged.
    final class Demands: Sendable {
        private let list = Mutex<[String]>([])
        var seen: [String] { list.withLock { $0 } }
        func add(_ sensor: ClaimBook.Sensor, _ on: Bool) { add("\(sensor.rawValue) \(on ? "on" : "off")") }
        func add(_ line: String) { list.withLock { $0.append(line) } }
    }

    /// A service with an accelerometer, ready at once, whose demands are recorded.
    static func servingAnAccelerometer(
        on bus: PrivateSystemBus, demands: Demands, logger: Logger = Logger(label: "motiond.dbus")
    ) throws -> SensorProxyService {
        var values = SensorProxyInterface.Properties()
        values.hasAccelerometer = true
        return try serving(values, on: bus, logger: logger) { sensor, on in demands.add(sensor, on) }
    }

    /// A logger whose messages (without their metadata) are added to `said`, for a test to wait on
    /// what the service did.
    static func logger(into said: Demands) -> Logger {
        struct Handler: LogHandler {
            let said: Demands
            var logLevel = Logger.Level.trace
            var metadata: Logger.Metadata = [:]
            subscript(metadataKey key: String) -> Logger.Metadata.Value? { get { metadata[key] } set { metadata[key] = newValue } }
            func log(event: LogEvent) { said.add("\(event.message)") }
        }
        return Logger(label: "test") { _ in Handler(said: said) }
    }

    /// Debian's unmodified `monitor-sensor` claims the sensors; its claims are counted under its bus
    /// name, and released when it is killed (it never releases them itself), as upstream's are.
    @Test func aClaimantThatLeavesTheBusReleasesItsClaim() throws {
        let bus = try PrivateSystemBus()
        let demands = Demands()
        let service = try Self.servingAnAccelerometer(on: bus, demands: demands)
        defer { service.stop() }
        let monitor = Process()
        monitor.executableURL = URL(fileURLWithPath: "/usr/bin/monitor-sensor")
        monitor.environment = ["DBUS_SYSTEM_BUS_ADDRESS": bus.address]
        monitor.standardOutput = FileHandle.nullDevice
        try monitor.runWithSteadyEnvironment()
        // monitor-sensor claims every sensor, present or not, as upstream allows.
        let sensors: [ClaimBook.Sensor] = [.accelerometer, .light, .proximity]
        try waitUntil { sensors.allSatisfy { service.claimants(of: $0).count == 1 } }
        kill(monitor.processIdentifier, SIGKILL)
        monitor.waitUntilExit()
        try waitUntil { sensors.allSatisfy { service.claimants(of: $0).isEmpty } }
        // The owner is told after the claims are dropped: the three `off`s come a moment later.
        _ = try? waitUntil { demands.seen.count >= 6 }
        let seen = demands.seen
        #expect(Set(seen.prefix(3)) == ["accelerometer on", "light on", "proximity on"], "\(seen)")
        #expect(Set(seen.dropFirst(3)) == ["accelerometer off", "light off", "proximity off"], "\(seen)")
        #expect(seen.count == 6)
    }

    /// Issue 25, defect 5: a claim is recorded when polkit answers (here the bus itself, that no polkit
    /// is there), a round trip after the call; a caller that sent the claim and left at once had left
    /// by then, the bus had said so already, and the claim stayed for good: the sensor powered, the
    /// claim book one entry longer per such caller.
    @Test func aClaimWhoseCallerLeftBeforeTheAnswerIsNotKept() throws {
        let bus = try PrivateSystemBus()
        let demands = Demands()
        let said = Demands()
        let service = try Self.servingAnAccelerometer(on: bus, demands: demands, logger: Self.logger(into: said))
        defer { service.stop() }
        for _ in 0..<20 {
            // dbus-send without --print-reply sends the call and exits without waiting for the answer.
            _ = try bus.dbusSend([
                "--type=method_call", "--dest=net.hadess.SensorProxy", "/net/hadess/SensorProxy", "net.hadess.SensorProxy.ClaimAccelerometer",
            ])
        }
        // Each claim ends in a line logged: its caller had left when polkit (here the bus) answered, or
        // the claim was kept and dropped as its caller left. An empty claim book before all 20 have
        // ended says nothing: the claims may not have arrived.
        let ended = { said.seen.count { $0.hasPrefix("D-Bus claimant left") } }
        let allEnded = (try? waitUntil { ended() == 20 }) != nil
        #expect(service.claimants(of: .accelerometer).isEmpty, "\(service.claimants(of: .accelerometer).count) departed callers hold a claim")
        #expect(allEnded, "claims seen to end: \(ended()) of 20")
        let seen = demands.seen
        #expect(seen.last == nil || seen.last == "accelerometer off", "the accelerometer is not left on: \(seen)")
    }

    /// A change reaches the clients that claimed the sensor, as `PropertiesChanged` sent to each (Debian's
    /// monitor-sensor prints it, as it does iio-sensor-proxy's), and no other client.
    @Test func aClaimantHearsEachChangeOfItsSensor() throws {
        let bus = try PrivateSystemBus()
        var values = SensorProxyInterface.Properties()
        values.hasAccelerometer = true
        values.accelerometerOrientation = "normal"
        let service = try Self.serving(values, on: bus)
        defer { service.stop() }
        // A listener that claims nothing: it must hear what everyone hears (a `Has…` change), and
        // nothing of the accelerometer's values.
        let listener = try Peer("/usr/bin/gdbus", arguments: ["monitor", "--system", "--dest", SensorProxyInterface.busName], bus: bus)
        try waitUntil { listener.output.contains("is owned by") }
        let monitor = try Peer("/usr/bin/monitor-sensor", bus: bus)
        try waitUntil { service.claimants(of: .accelerometer).count == 1 }
        for orientation in ["left-up", "bottom-up", "right-up"] {
            values.accelerometerOrientation = orientation
            service.publish(values)
            try waitUntil { monitor.output.contains("Accelerometer orientation changed: \(orientation)") }
        }
        values.hasProximity = true
        service.publish(values)
        try waitUntil { listener.output.contains("HasProximity") }
        #expect(!listener.output.contains("AccelerometerOrientation"), "\(listener.output)")
    }

    /// `gdbus introspect` lists upstream's members (Debian 12's iio-sensor-proxy 3.0 reference, and
    /// `AccelerometerTilt` from 3.6), each with its type, and motiond's posture interface beside them.
    @Test func introspectionListsUpstreamsMembers() throws {
        let bus = try PrivateSystemBus()
        let service = try Self.serving(SensorProxyInterface.Properties(), on: bus)
        defer { service.stop() }
        let text = try bus.gdbus(["introspect"] + Self.object)
        for member in [
            "readonly b HasAccelerometer", "readonly s AccelerometerOrientation", "readonly s AccelerometerTilt",
            "readonly b HasAmbientLight", "readonly s LightLevelUnit", "readonly d LightLevel", "readonly b HasProximity",
            "readonly b ProximityNear", "ClaimAccelerometer();", "ReleaseAccelerometer();", "ClaimLight();", "ReleaseLight();",
            "ClaimProximity();", "ReleaseProximity();",
            // motiond's own, in an interface of its own.
            "interface io.github.motiond.Posture", "readonly b HasPosture", "readonly s Posture", "readonly d HingeAngle",
            "ClaimPosture();", "ReleasePosture();",
        ] {
            #expect(text.contains(member), "\(member) in \(text)")
        }
    }
}

/// The typed sd-bus layer's failures, as a client or a second owner meets them.
@Suite(.serialized, .onOwnThreads) struct BusFailureTests {
    /// A call short of an argument is answered `InvalidArgs` in GDBus's words (upstream's), and the
    /// service goes on serving (it used to be left to sd-bus, which answered "unknown method").
    @Test func aMalformedCallIsAnsweredWithAnErrorAndServingGoesOn() throws {
        let bus = try PrivateSystemBus()
        var values = SensorProxyInterface.Properties()
        values.lightLevel = 7
        let service = try SensorProxyServiceTests.serving(values, on: bus)
        defer { service.stop() }
        let get = SensorProxyServiceTests.object + ["--method", "org.freedesktop.DBus.Properties.Get"]
        let short = try bus.gdbus(["call"] + get + ["net.hadess.SensorProxy"])
        #expect(short.contains("org.freedesktop.DBus.Error.InvalidArgs: Type of message, “(s)”, does not match expected type “(ss)”"), "\(short)")
        let served = try bus.gdbus(["call"] + get + ["net.hadess.SensorProxy", "LightLevel"])
        #expect(served.trimmingCharacters(in: .whitespacesAndNewlines) == "(<7.0>,)", "\(served)")
    }

    /// A second owner of the name fails at the call that failed, with the errno it returned, and says
    /// who is likely to hold the name.
    @Test func aTakenNameSaysWhichCallFailed() throws {
        let bus = try PrivateSystemBus()
        let first = try SensorProxyServiceTests.serving(SensorProxyInterface.Properties(), on: bus)
        defer { first.stop() }
        let second = try SensorProxyService(address: bus.address)
        second.start()
        defer { second.stop() }
        #expect {
            _ = try second.waitUntilNamed(seconds: 10)
        } throws: { error in
            guard let error = error as? BusError else { return false }
            return error.call == "sd_bus_request_name net.hadess.SensorProxy" && error.code == EEXIST
                && "\(error)".contains("owned by another program")
        }
    }

    /// `ClaimAccelerometer("x")` and `Introspect("x")` are refused with `InvalidArgs`, as GDBus
    /// (iio-sensor-proxy's) refuses them, and the claim is not counted; both used to succeed (issue 25,
    /// defect 10). Sent with dbus-send, which, unlike gdbus, sends the arguments it is given.
    @Test func aCallWithArgumentsItsMethodDoesNotTakeIsRefused() throws {
        let bus = try PrivateSystemBus()
        let service = try SensorProxyServiceTests.serving(SensorProxyInterface.Properties(), on: bus)
        defer { service.stop() }
        func send(_ member: String) throws -> String {
            try bus.dbusSend(["--print-reply", "--dest=net.hadess.SensorProxy", "/net/hadess/SensorProxy", member, "string:x"])
        }
        let claimed = try send("net.hadess.SensorProxy.ClaimAccelerometer")
        #expect(claimed.contains("org.freedesktop.DBus.Error.InvalidArgs") && claimed.contains("does not match expected type “()”"), "\(claimed)")
        #expect(service.claimants(of: .accelerometer).isEmpty)
        let introspected = try send("org.freedesktop.DBus.Introspectable.Introspect")
        #expect(introspected.contains("org.freedesktop.DBus.Error.InvalidArgs"), "\(introspected)")
    }
}
