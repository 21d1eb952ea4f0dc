import Foundation
import MotionDevices
import MotionWire
import TestSupport
import Testing

@testable import MotionDaemon

extension Hardware {
    /// Ambient light, read from IIO illuminance channels. The kernel's IIO ABI
    /// (Documentation/ABI/testing/sysfs-bus-iio, `in_illuminance_raw`): "units after application of
    /// scale and offset are lux"; a driver without a scale gives counts, iio-sensor-proxy's "vendor" unit.
    @Suite struct AmbientLight {
        @Test func lightIsInLuxWhereTheDriverGivesAScaleAndInVendorUnitsWhereNot() throws {
            let testbed = try Testbed()
            try testbed.add(fixture: "ambient-light")
            let devices = try DeviceDiscovery().listDevices().devices
            #expect(devices.map(\.kinds) == [[.light], [.light]])
            #expect(devices.map { $0.sensors.first?.readsVendorUnits } == [false, true])
        }

        @Test func aWatcherGetsTheLightNowThenEachChangeInLux() async throws {
            let testbed = try Testbed()
            try testbed.add(fixture: "ambient-light")
            let server = MotionServer(socketPath: NSTemporaryDirectory() + "motiond-light-\(getpid()).sock")
            try await server.start()
            try await server.whileServing {
                let client = try TestClient.greeted(path: server.socketPath)
                try client.send(#"{"class":"WATCH","streams":["light"]}"#)
                _ = try client.next("WATCHING")
                let first = try client.decode(LightMessage.self, try client.next("LIGHT"))
                #expect(first.illuminance == 50 && first.unit == .lux, "100 counts × 0.5 lux: \(first)")
                try testbed.setAttribute("iio:device0", "in_illuminance0_raw", "300\n")
                let changed = try client.decode(LightMessage.self, try client.next("LIGHT"))
                #expect(changed.illuminance == 150 && changed.unit == .lux, "\(changed)")
                try client.send(#"{"class":"POLL","streams":["light"]}"#)
                #expect(try client.decode(Snapshot.self, try client.next("SNAPSHOT")).light?.illuminance == 150)
            }
        }
    }
}
