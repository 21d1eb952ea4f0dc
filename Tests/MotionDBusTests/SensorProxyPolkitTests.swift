import Foundation
import TestSupport
import Testing

@testable import MotionDBus

/// Which claims ask polkit, and for what, against iio-sensor-proxy 3.7 (gitlab.freedesktop.org/hadess/
/// iio-sensor-proxy, tag 3.7, src/iio-sensor-proxy.c): `check_claim_permission` (lines 452–476) asks
/// for `net.hadess.SensorProxy.claim-sensor`, for the caller's bus name (`polkit_system_bus_name_new`),
/// without interaction (`POLKIT_CHECK_AUTHORIZATION_FLAGS_NONE`, 0), before `ClaimAccelerometer`,
/// `ClaimLight` and `ClaimProximity` (line 578, since 3.5) and `ClaimCompass` (line 651, since 3.7:
/// commit ff71a7f, "check claim-permission for compass too"), and refuses with
/// `org.freedesktop.DBus.Error.AccessDenied` what polkit does not grant. Checked on a private bus
/// against a stand-in for polkit's authority (`polkit-stand-in.py`) that refuses everything and says
/// what it was asked; `PolkitTests` keeps the check with the real polkitd.
@Suite(.serialized, .onOwnThreads) struct SensorProxyPolkitTests {
    static let standIn =
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../TestSupport/Fixtures/polkit-stand-in.py").standardized.path

    /// Every `Claim…` (upstream's four, motiond's posture and presence) asks for the one action, for the caller,
    /// with no interaction, and is refused as polkit refuses it; the sensor is not claimed.
    @Test func everyClaimAsksPolkitForClaimSensorAndIsRefusedWhenRefused() throws {
        let bus = try PrivateSystemBus()
        let polkit = try Peer("/usr/bin/python3", arguments: [Self.standIn], bus: bus)
        try waitUntil(seconds: 20) { polkit.output.contains("Owned") }
        var values = SensorProxyInterface.Properties()
        (values.hasAccelerometer, values.hasAmbientLight, values.hasProximity, values.hasCompass, values.hasPosture) = (true, true, true, true, true)
        values.hasPresence = true
        let service = try SensorProxyServiceTests.serving(values, on: bus)
        defer { service.stop() }
        let client = try BusClient(address: bus.address)
        let claims: [(method: String, path: String, interface: String, sensor: ClaimBook.Sensor)] = [
            ("ClaimAccelerometer", "/net/hadess/SensorProxy", "net.hadess.SensorProxy", .accelerometer),
            ("ClaimLight", "/net/hadess/SensorProxy", "net.hadess.SensorProxy", .light),
            ("ClaimProximity", "/net/hadess/SensorProxy", "net.hadess.SensorProxy", .proximity),
            ("ClaimCompass", BusClient.compassPath, BusClient.compassInterface, .compass),
            ("ClaimPosture", "/net/hadess/SensorProxy", BusClient.postureInterface, .posture),
            ("ClaimPresence", "/net/hadess/SensorProxy", BusClient.presenceInterface, .presence),
        ]
        for claim in claims {
            #expect {
                try client.call(claim.method, path: claim.path, interface: claim.interface)
            } throws: { error in
                (error as? BusClient.CallError)?.name == "org.freedesktop.DBus.Error.AccessDenied"
            }
            #expect(service.claimants(of: claim.sensor).isEmpty, "\(claim.method) refused, yet counted")
        }
        let checks = polkit.output.split(separator: "\n").filter { $0.hasPrefix("Check ") }.map(String.init)
        let asked = "Check net.hadess.SensorProxy.claim-sensor system-bus-name \(client.uniqueName) flags=0"
        #expect(checks == Array(repeating: asked, count: claims.count), "\(polkit.output)")
    }
}
