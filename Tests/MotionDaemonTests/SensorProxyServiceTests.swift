import Foundation
import Testing

@testable import MotionDaemon

/// The D-Bus service checked with GLib's `gdbus`, a D-Bus client that shares no code with sd-bus, on
/// a private bus of its own (`dbus-daemon`), so no system bus is touched.
@Suite(.serialized) struct SensorProxyServiceTests {
    static let object = ["--dest", "net.hadess.SensorProxy", "--object-path", "/net/hadess/SensorProxy"]

    @Test func gdbusReadsThePropertiesUpstreamDefines() throws {
        let bus = try PrivateSystemBus()
        let service = try SensorProxyService(address: bus.address)
        var values = SensorProxyService.Properties()
        values.hasAccelerometer = true
        values.accelerometerOrientation = "left-up"
        values.lightLevel = 312.5
        service.publish(values)
        service.start()
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
    }

    /// `gdbus introspect` lists upstream's members (Debian 12's iio-sensor-proxy 3.0 reference, and
    /// `AccelerometerTilt` from 3.6), each with its type.
    @Test func introspectionListsUpstreamsMembers() throws {
        let bus = try PrivateSystemBus()
        let service = try SensorProxyService(address: bus.address)
        service.start()
        defer { service.stop() }
        let text = try bus.gdbus(["introspect"] + Self.object)
        for member in [
            "readonly b HasAccelerometer", "readonly s AccelerometerOrientation", "readonly s AccelerometerTilt",
            "readonly b HasAmbientLight", "readonly s LightLevelUnit", "readonly d LightLevel", "readonly b HasProximity",
            "readonly b ProximityNear", "ClaimAccelerometer();", "ReleaseAccelerometer();", "ClaimLight();", "ReleaseLight();",
            "ClaimProximity();", "ReleaseProximity();",
        ] {
            #expect(text.contains(member), "\(member) in \(text)")
        }
    }
}

extension PrivateSystemBus {
    /// Runs `gdbus` with `arguments` on this bus; its standard output.
    func gdbus(_ arguments: [String]) throws -> String {
        let gdbus = Process()
        gdbus.executableURL = URL(fileURLWithPath: "/usr/bin/gdbus")
        gdbus.arguments = [arguments[0], "--address", address] + arguments.dropFirst()
        let output = Pipe()
        gdbus.standardOutput = output
        try gdbus.run()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        gdbus.waitUntilExit()
        return text
    }
}
