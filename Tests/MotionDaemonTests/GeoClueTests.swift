import Foundation
import MotionFusion
import MotionWire
import TestSupport
import Testing

/// `motiond --dbus` asks GeoClue where the machine is, only while a client watches motion in
/// `xTrueNorthZVertical`: against a stand-in serving GeoClue 2's documented D-Bus interface on a
/// private system bus (`geoclue-stand-in.py`), with the bundled recording (BROAD's 9D IMU) replayed.
@Suite(.onOwnThreads) struct GeoClueTests {
    /// The stand-in script.
    static var standIn: String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../TestSupport/Fixtures/geoclue-stand-in.py").standardized.path
    }

    /// A private bus with the stand-in on it (giving `place`, with `--refuse` among `options` to refuse
    /// motiond), and motiond on it with `arguments`. The bus stops when released: keep it.
    static func start(place: [String] = ["52.52", "13.40", "34"], options: [String] = [], arguments: [String] = []) throws -> (PrivateSystemBus, Peer, ReplayDaemon) {
        let bus = try PrivateSystemBus()
        let standIn = try Peer("/usr/bin/python3", arguments: [Self.standIn] + place + options, bus: bus)
        // The bus's grant of the name, as the stand-in hears it (GDBus's name-acquired callback).
        try waitUntil(seconds: 20) { standIn.output.contains("Owned org.freedesktop.GeoClue2") }
        let daemon = try ReplayDaemon(arguments: ["--loop", "--dbus"] + arguments, environment: ["DBUS_SYSTEM_BUS_ADDRESS": bus.address])
        return (bus, standIn, daemon)
    }

    /// Now on CLOCK_MONOTONIC, s: the stand-in's clock for its `GetClient` lines.
    static func monotonicNow() -> Double {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return Double(now.tv_sec) + Double(now.tv_nsec) * 1e-9
    }

    /// When the stand-in got its first `GetClient` (CLOCK_MONOTONIC, s), if it did.
    static func firstGetClient(_ standIn: Peer) -> Double? {
        guard let line = standIn.output.split(separator: "\n").first(where: { $0.hasPrefix("GetClient") }) else { return nil }
        let words = line.split(separator: " ")
        return words.firstIndex(of: "at").flatMap { Double(words[$0 + 1]) }
    }

    static func status(_ client: TestClient) throws -> StatusReply {
        try client.send(#"{"class":"STATUS"}"#)
        return try client.decode(StatusReply.self, try client.next("STATUS"))
    }

    /// Nobody watching true north: GeoClue is not asked (the first `GetClient` came after the magnetic
    /// watch was served and the true-north one sent). A watch in that frame: motiond asks for a
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
        let served = Self.monotonicNow()

        try client.send(#"{"class":"WATCH","streams":["motion"],"interval":0.1,"frame":"xTrueNorthZVertical"}"#)
        try waitUntil(seconds: 10) { standIn.output.contains("Start motiond 4 5000") }
        #expect(try #require(Self.firstGetClient(standIn)) > served, "asked with nobody watching true north: \(standIn.output)")
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

    /// Issue 63 (four threads at rest): nobody watching true north, motiond keeps no GeoClue thread
    /// (nor its connection); a true-north watch makes one, which tells GeoClue to stop as soon as the
    /// watch ends and lingers `GeoClueFrontEnd.linger` (60 s) for a watch to come back. The threads
    /// are the daemon's /proc/PID/task/*/comm (proc(5)).
    @Test func noGeoClueThreadWhileNobodyWantsAPlace() throws {
        let (bus, standIn, daemon) = try Self.start()
        defer { withExtendedLifetime(bus) {} }
        let client = try TestClient.greeted(path: daemon.socket)
        try client.send(#"{"class":"WATCH","streams":["motion"],"interval":0.1,"frame":"xMagneticNorthZVertical"}"#)
        _ = try client.next("MOTION")
        #expect(!daemon.threadNames.contains("geoclue"), "\(daemon.threadNames)")
        try client.send(#"{"class":"WATCH","streams":["motion"],"interval":0.1,"frame":"xTrueNorthZVertical"}"#)
        try waitUntil(seconds: 10) { standIn.output.contains("Start motiond 4 5000") }
        #expect(daemon.threadNames.contains("geoclue"), "\(daemon.threadNames)")
        try client.send(#"{"class":"WATCH","streams":["motion"],"enable":false}"#)
        try waitUntil(seconds: 10) { standIn.output.contains("Stop motiond") }
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

    /// A `NameOwnerChanged` saying GeoClue started again, sent to motiond's GeoClue connection by a
    /// peer rather than by the bus (any local user may send a signal to a unique name on the system
    /// bus; issue 60, defect 7), does not make motiond forget the client it started: when the last
    /// true-north watch ends, `Stop` reaches GeoClue, in every trial. The peer pings motiond after the
    /// forgery on the same connection, and the bus keeps one sender's messages in order, so motiond
    /// has handled the forgery before the watch ends; the stand-in answers `GetClient` 1 s late, so
    /// that a client asked for again because of the forgery is not there yet when the watch ends.
    @Test func aForgedNameOwnerChangedDoesNotKeepGeoClueLocating() throws {
        let (bus, standIn, daemon) = try Self.start(options: ["--answer-after=1"])
        defer { withExtendedLifetime(bus) {} }
        let client = try TestClient.greeted(path: daemon.socket)
        func count(_ line: String) -> Int { standIn.output.split(separator: "\n").filter { $0.hasPrefix(line) }.count }
        let trials = 5
        for trial in 1...trials {
            try client.send(#"{"class":"WATCH","streams":["motion"],"interval":0.1,"frame":"xTrueNorthZVertical"}"#)
            do {
                try waitUntil(seconds: 10) { count("Start motiond 4 5000") >= trial }
            } catch {
                Issue.record("trial \(trial) of \(trials): GeoClue was not started\n\(standIn.output)\n\(daemon.log)")
                throw error
            }
            let motiond = try #require(standIn.output.split(separator: "\n").last { $0.hasPrefix("GetClient") }?.split(separator: " ").last.map(String.init))
            let forged = try Self.forgeNameOwnerChanged(to: motiond, on: bus)
            #expect(forged.isEmpty, "\(forged)")
            try client.send(#"{"class":"WATCH","streams":["motion"],"enable":false}"#)
            do {
                try waitUntil(seconds: 10) { count("Stop motiond") == trial }
            } catch {
                Issue.record("trial \(trial) of \(trials): no Stop reached GeoClue after a forged NameOwnerChanged\n\(standIn.output)")
                throw error
            }
        }
    }

    /// Sends `destination` a `NameOwnerChanged` that says GeoClue's name moved to a new owner, from a
    /// connection of its own (not the bus driver), then pings `destination` on that connection and
    /// waits for the answer; what went wrong (its standard error carries the details), or nothing.
    static func forgeNameOwnerChanged(to destination: String, on bus: PrivateSystemBus) throws -> String {
        let script = """
            import sys
            from gi.repository import Gio, GLib
            bus = Gio.DBusConnection.new_for_address_sync(sys.argv[1],
                Gio.DBusConnectionFlags.AUTHENTICATION_CLIENT | Gio.DBusConnectionFlags.MESSAGE_BUS_CONNECTION, None, None)
            owner = bus.call_sync("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "GetNameOwner",
                GLib.Variant("(s)", ("org.freedesktop.GeoClue2",)), None, 0, 5000, None).unpack()[0]
            bus.emit_signal(sys.argv[2], "/org/freedesktop/DBus", "org.freedesktop.DBus", "NameOwnerChanged",
                GLib.Variant("(sss)", ("org.freedesktop.GeoClue2", owner, ":1.9999")))
            bus.call_sync(sys.argv[2], "/", "org.freedesktop.DBus.Peer", "Ping", None, None, 0, 5000, None)
            """
        let forger = Process()
        forger.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        forger.arguments = ["-c", script, bus.address, destination]
        try forger.runWithSteadyEnvironment()
        forger.waitUntilExit()
        return forger.terminationStatus == 0 ? "" : "forging failed: python3 exited \(forger.terminationStatus)"
    }

    /// A `LocationUpdated` sent to motiond's GeoClue connection by another connection (any local user
    /// may send a signal to a unique name on the system bus), naming GeoClue's client and a location
    /// GeoClue serves but never announced: ignored. GeoClue's own next one is taken. motiond handles
    /// the two in the order they came, so had it taken the forged one, its read of the decoy would
    /// have reached the stand-in before the read of the genuine one.
    @Test func aLocationUpdatedFromAnotherConnectionIsIgnored() throws {
        let (bus, standIn, daemon) = try Self.start(options: ["--then=48.85,2.35"])
        defer { withExtendedLifetime(bus) {} }
        let client = try TestClient.greeted(path: daemon.socket)
        try client.send(#"{"class":"WATCH","streams":["motion"],"interval":0.1,"frame":"xTrueNorthZVertical"}"#)
        let clientPath = "/org/freedesktop/GeoClue2/Client/1"
        try waitUntil(seconds: 10) { standIn.output.contains("Read \(clientPath)/Location/0") }
        let motiond = try #require(standIn.output.split(separator: "\n").first { $0.hasPrefix("GetClient") }?.split(separator: " ").last.map(String.init))
        let forged = try bus.gdbus([
            "emit", "--dest", motiond, "--object-path", clientPath, "--signal", "org.freedesktop.GeoClue2.Client.LocationUpdated",
            "objectpath '\(clientPath)/Location/0'", "objectpath '\(clientPath)/Location/99'",
        ])
        #expect(!forged.contains("Error"), "\(forged)")
        standIn.signal(SIGUSR1)
        do {
            try waitUntil(seconds: 10) { standIn.output.contains("Read \(clientPath)/Location/1") }
        } catch {
            Issue.record("no read of GeoClue's next location: \(standIn.output)\n\(daemon.log)")
            throw error
        }
        #expect(!standIn.output.contains("Location/99"), "\(standIn.output)")
        let paris = WorldMagneticModel.wmm2025.field(
            latitude: 48.85, longitude: 2.35, altitude: 0, decimalYear: WorldMagneticModel.decimalYear(unixTime: Date().timeIntervalSince1970))
        try waitUntil(seconds: 10) { abs(((try? Self.status(client).geomagnetic?.declination) ?? .nan) - paris.declination) < 1e-3 }
    }

    /// An altitude GeoClue gives out of any plausible range (1,000 km up): the latitude and longitude
    /// are taken, at sea level, and the journal says so once (issue 60, 14c: the whole place was
    /// dropped, and the frame stayed magnetic).
    @Test func anImplausibleAltitudeKeepsTheLatitudeAndLongitude() throws {
        let (bus, standIn, daemon) = try Self.start(place: ["52.52", "13.40", "1000000"])
        defer { withExtendedLifetime(bus) {} }
        let client = try TestClient.greeted(path: daemon.socket)
        try client.send(#"{"class":"WATCH","streams":["motion"],"interval":0.1,"frame":"xTrueNorthZVertical"}"#)
        let expected = WorldMagneticModel.wmm2025.field(
            latitude: 52.52, longitude: 13.40, altitude: 0, decimalYear: WorldMagneticModel.decimalYear(unixTime: Date().timeIntervalSince1970))
        do {
            try waitUntil(seconds: 10) { abs(((try? Self.status(client).geomagnetic?.declination) ?? .nan) - expected.declination) < 1e-3 }
        } catch {
            Issue.record("no declination from GeoClue's place: \(daemon.log)\n\(standIn.output)")
            throw error
        }
        // The journal's line is written by the log writer's thread, after the place reached the hub: waited for.
        try waitUntil(seconds: 10) { daemon.log.contains("implausible altitude") }
        #expect(daemon.log.split(separator: "\n").filter { $0.contains("implausible altitude") }.count == 1, "one warning of the altitude: \(daemon.log)")
    }

    /// 2,000 `LocationUpdated` from GeoClue naming locations that are not its client's, as fast as it
    /// can send them: at most 3 warnings of them go to the journal, and, at motiond's stop, how many
    /// more there were (issue 60, 14d: 3,600–6,400 warnings a second). The genuine location sent after
    /// them is read, so motiond has handled the flood.
    @Test func aFloodOfLocationUpdatedIsWarnedOfAFewTimes() throws {
        let (bus, standIn, daemon) = try Self.start(options: ["--flood=2000", "--then=48.85,2.35"])
        defer { withExtendedLifetime(bus) {} }
        let client = try TestClient.greeted(path: daemon.socket)
        try client.send(#"{"class":"WATCH","streams":["motion"],"interval":0.1,"frame":"xTrueNorthZVertical"}"#)
        try waitUntil(seconds: 10) { standIn.output.contains("Read /org/freedesktop/GeoClue2/Client/1/Location/0") }
        standIn.signal(SIGUSR2)
        try waitUntil(seconds: 20) { standIn.output.contains("Flooded 2000") }
        standIn.signal(SIGUSR1)
        try waitUntil(seconds: 20) { standIn.output.contains("Read /org/freedesktop/GeoClue2/Client/1/Location/1") }
        #expect(daemon.stop())
        let warned = daemon.log.split(separator: "\n").filter { $0.contains("GeoClue named a location that is not its client's") && !$0.contains("more") }.count
        #expect(warned <= 3, "\(warned) warnings of the flood")
        #expect(daemon.log.contains("1997 more"), "the count of those left out: \(daemon.log.suffix(2000))")
    }

    /// A place in motiond.conf wins: GeoClue is not asked while it stands, and STATUS says where the
    /// place came from. The place taken out of motiond.conf (a reload): GeoClue is asked then, and
    /// only then (its first `GetClient` came after the reload).
    @Test func aConfiguredPlaceIsNotAskedOfGeoClue() throws {
        let configuration = NSTemporaryDirectory() + "geoclue-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).conf"
        defer { try? FileManager.default.removeItem(atPath: configuration) }
        try "location: \"48.85, 2.35\"\n".write(toFile: configuration, atomically: true, encoding: .utf8)
        let (bus, standIn, daemon) = try Self.start(arguments: ["--config", configuration])
        defer { withExtendedLifetime(bus) {} }
        let client = try TestClient.greeted(path: daemon.socket)
        try client.send(#"{"class":"WATCH","streams":["motion"],"interval":0.1,"frame":"xTrueNorthZVertical"}"#)
        _ = try client.next("WATCHING")
        _ = try client.next("MOTION")
        #expect(try Self.status(client).geomagnetic?.source == .configuration)
        let served = Self.monotonicNow()
        try "log_level: info\n".write(toFile: configuration, atomically: true, encoding: .utf8)
        kill(daemon.process.processIdentifier, SIGHUP)
        try waitUntil(seconds: 10) { standIn.output.contains("Start motiond 4 5000") }
        #expect(try #require(Self.firstGetClient(standIn)) > served, "asked while motiond.conf gave the place: \(standIn.output)")
        try waitUntil(seconds: 10) { (try? Self.status(client).geomagnetic?.source) == .geoclue }
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
