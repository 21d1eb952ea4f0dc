import Foundation
import MotionFusion
import MotionWire
import TestSupport
import Testing

/// `motiond --dbus` asks GeoClue where the machine is, only while a client watches motion in
/// `xTrueNorthZVertical`: against a stand-in serving GeoClue 2's documented D-Bus interface on a
/// private system bus (`geoclue-stand-in.py`), with the bundled recording (BROAD's 9D IMU) replayed.
@Suite struct GeoClueTests {
    /// The stand-in script.
    static var standIn: String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../TestSupport/Fixtures/geoclue-stand-in.py").standardized.path
    }

    /// A private bus with the stand-in on it (giving `place`, with `--refuse` among `options` to refuse
    /// motiond), and motiond on it with `arguments`. The bus stops when released: keep it.
    static func start(place: [String] = ["52.52", "13.40", "34"], options: [String] = [], arguments: [String] = []) throws -> (PrivateSystemBus, Peer, ReplayDaemon) {
        let bus = try PrivateSystemBus()
        let standIn = try Peer("/usr/bin/python3", arguments: [Self.standIn] + place + options, bus: bus)
        try waitUntil(seconds: 20) { bus.hasOwner("org.freedesktop.GeoClue2") }
        let daemon = try ReplayDaemon(arguments: ["--loop", "--dbus"] + arguments, environment: ["DBUS_SYSTEM_BUS_ADDRESS": bus.address])
        return (bus, standIn, daemon)
    }

    static func status(_ client: TestClient) throws -> StatusReply {
        try client.send(#"{"class":"STATUS"}"#)
        return try client.decode(StatusReply.self, try client.next("STATUS"))
    }

    /// Nobody watching true north: GeoClue is not asked. A watch in that frame: motiond asks for a
    /// client, names itself, asks for a city's accuracy and a new place after 5 km, and starts it;
    /// the place it gives turns the frame by the World Magnetic Model's declination there (the model
    /// is checked against NOAA's test values in WorldMagneticModelTests); the watch's end stops it.
    /// An unknown altitude (GeoClue's −DBL_MAX) is taken as sea level.
    @Test(arguments: ["34", "unknown"])
    func aTrueNorthWatchAsksGeoClueWhileItLasts(altitude: String) throws {
        let (bus, standIn, daemon) = try Self.start(place: ["52.52", "13.40", altitude])
        defer { withExtendedLifetime(bus) {} }
        let client = try TestClient.greeted(path: daemon.socket)
        try client.send(#"{"class":"WATCH","streams":["motion"],"interval":0.1,"frame":"xMagneticNorthZVertical"}"#)
        _ = try client.next("WATCHING")
        _ = try client.next("MOTION")
        #expect(try Self.status(client).geomagnetic == nil)
        #expect(!standIn.output.contains("GetClient"), "asked with nobody watching true north: \(standIn.output)")

        try client.send(#"{"class":"WATCH","streams":["motion"],"interval":0.1,"frame":"xTrueNorthZVertical"}"#)
        try waitUntil(seconds: 10) { standIn.output.contains("Start motiond 4 5000") }
        var geomagnetic: StatusReply.Geomagnetic?
        try waitUntil(seconds: 10) {
            geomagnetic = try? Self.status(client).geomagnetic
            return geomagnetic != nil
        }
        let expected = WorldMagneticModel.wmm2025.field(
            latitude: 52.52, longitude: 13.40, altitude: altitude == "unknown" ? 0 : 34,
            decimalYear: WorldMagneticModel.decimalYear(unixTime: Date().timeIntervalSince1970))
        #expect(geomagnetic?.source == .geoclue && geomagnetic?.applied == true)
        #expect(abs((geomagnetic?.declination ?? .nan) - expected.declination) < 1e-3, "\(String(describing: geomagnetic)) against \(expected.declination)")
        #expect(abs((geomagnetic?.field ?? .nan) - expected.totalIntensityInMicrotesla) < 1e-3)

        try client.send(#"{"class":"WATCH","streams":["motion"],"enable":false}"#)
        try waitUntil(seconds: 10) { standIn.output.contains("Stop motiond") }
        #expect(standIn.output.components(separatedBy: "GetClient").count == 2, "one client: \(standIn.output)")
    }

    /// GeoClue started again while a client watches true north (its clients went with it): motiond
    /// asks the new one for a client and starts it.
    @Test func aGeoClueStartedAgainIsAskedAgain() throws {
        let (bus, standIn, daemon) = try Self.start()
        defer { withExtendedLifetime(bus) {} }
        let client = try TestClient.greeted(path: daemon.socket)
        try client.send(#"{"class":"WATCH","streams":["motion"],"interval":0.1,"frame":"xTrueNorthZVertical"}"#)
        try waitUntil(seconds: 10) { standIn.output.contains("Start motiond 4 5000") }
        standIn.stop()
        try waitUntil(seconds: 10) { !bus.hasOwner("org.freedesktop.GeoClue2") }
        let again = try Peer("/usr/bin/python3", arguments: [Self.standIn, "48.85", "2.35", "35"], bus: bus)
        try waitUntil(seconds: 20) { again.output.contains("Start motiond 4 5000") }
        let paris = WorldMagneticModel.wmm2025.field(
            latitude: 48.85, longitude: 2.35, altitude: 35, decimalYear: WorldMagneticModel.decimalYear(unixTime: Date().timeIntervalSince1970))
        // The new GeoClue's place (Paris), not the first one's (Berlin), turns the frame.
        try waitUntil(seconds: 10) { abs(((try? Self.status(client).geomagnetic?.declination) ?? .nan) - paris.declination) < 1e-3 }
    }

    /// A place in motiond.conf wins: GeoClue is never asked, and STATUS says where the place came from.
    @Test func aConfiguredPlaceIsNotAskedOfGeoClue() throws {
        let (bus, standIn, daemon) = try Self.start(arguments: ["--location", "48.85, 2.35"])
        defer { withExtendedLifetime(bus) {} }
        let client = try TestClient.greeted(path: daemon.socket)
        try client.send(#"{"class":"WATCH","streams":["motion"],"interval":0.1,"frame":"xTrueNorthZVertical"}"#)
        _ = try client.next("WATCHING")
        _ = try client.next("MOTION")
        #expect(try Self.status(client).geomagnetic?.source == .configuration)
        // motiond had its chance to ask: it answered a request after the watch began.
        #expect(!standIn.output.contains("GetClient"), "\(standIn.output)")
    }

    /// A GeoClue that refuses motiond (not listed in its configuration): the journal says what to do,
    /// the frame goes on as magnetic north, and the daemon serves on.
    @Test func aGeoClueThatRefusesMotiondIsSaidInTheJournal() throws {
        let (bus, standIn, daemon) = try Self.start(options: ["--refuse"])
        defer { withExtendedLifetime(bus) {} }
        let client = try TestClient.greeted(path: daemon.socket)
        try client.send(#"{"class":"WATCH","streams":["motion"],"interval":0.1,"frame":"xTrueNorthZVertical"}"#)
        _ = try client.next("WATCHING")
        try waitUntil(seconds: 10) { daemon.log.contains("GeoClue refused Start: list motiond in its configuration") }
        #expect(standIn.output.contains("Start motiond"))
        #expect(try Self.status(client).geomagnetic == nil)
        _ = try client.next("MOTION")
    }
}
