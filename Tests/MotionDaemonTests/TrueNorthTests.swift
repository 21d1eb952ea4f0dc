import Foundation
import MotionFusion
import MotionWire
import TestSupport
import Testing

/// `xTrueNorthZVertical` with a configured place: the bundled recording (BROAD's 9D IMU) polled in
/// both north frames at once, the headings of the same samples compared. Their difference is the
/// declination in use; the World Magnetic Model's at the place is checked against NOAA's own test
/// values and an independent implementation in WorldMagneticModelTests.
@Suite(.onOwnThreads) struct TrueNorthTests {
    /// Berlin, at 34 m.
    static let place = (latitude: 52.52, longitude: 13.40, altitude: 34.0)

    /// The headings (degrees) of `count` samples polled in both frames, true minus magnetic, and
    /// STATUS's account of the field, from a daemon started with `arguments`.
    ///
    /// Polled, not watched: two watchers of one daemon need not get the same samples (a watcher whose
    /// socket is full is sent the newest sample when it has room), and in two runs of the full suite
    /// on two cores two watchers read 17,143 lines each with not one stamp in common. Two polls sent
    /// together are answered from the same latest sample unless a new one comes between them; pairs
    /// with different stamps are skipped.
    static func headingDifferences(arguments: [String], count: Int = 50) throws -> (differences: [Double], status: StatusReply) {
        let daemon = try ReplayDaemon(arguments: ["--loop"] + arguments)
        let client = try TestClient.greeted(path: daemon.socket)
        var differences: [Double] = []
        var polls = 0
        // The deadline only bounds a hang: alone, the test takes about a second.
        let deadline = Date().addingTimeInterval(60)
        while differences.count < count, Date() < deadline {
            try client.send(
                #"{"class":"POLL","streams":["motion"],"frame":"xMagneticNorthZVertical"}"# + "\n"
                    + #"{"class":"POLL","streams":["motion"],"frame":"xTrueNorthZVertical"}"#)
            let m = try #require(try client.decode(Snapshot.self, try client.next("SNAPSHOT")).motion)
            let t = try #require(try client.decode(Snapshot.self, try client.next("SNAPSHOT")).motion)
            polls += 1
            #expect(m.frame == .xMagneticNorthZVertical && t.frame == .xTrueNorthZVertical)
            guard m.timestamp == t.timestamp, let a = t.heading, let b = m.heading else { continue }
            differences.append(remainder(a - b, 360))
        }
        #expect(differences.count == count, "pairs of polls answered from the same sample: \(differences.count) of \(polls)")
        try client.send(#"{"class":"STATUS"}"#)
        let status = try client.decode(StatusReply.self, try client.next("STATUS"))
        return (differences, status)
    }

    static var modelNow: GeomagneticField {
        WorldMagneticModel.wmm2025.field(
            latitude: place.latitude, longitude: place.longitude, altitude: place.altitude,
            decimalYear: WorldMagneticModel.decimalYear(unixTime: Date().timeIntervalSince1970))
    }

    @Test func aConfiguredPlaceTurnsTrueNorthByTheModelsDeclinationThere() throws {
        let (differences, status) = try Self.headingDifferences(arguments: ["--location", "52.52, 13.40, 34"])
        let expected = Self.modelNow.declination
        // Berlin's declination is a few degrees east (WMM2025: about +5° in 2026).
        #expect(expected > 3 && expected < 8)
        #expect(differences.allSatisfy { abs($0 - expected) < 0.01 }, "\(differences.prefix(5)) against \(expected)")
        let geomagnetic = try #require(status.geomagnetic)
        #expect(geomagnetic.model == "WMM-2025" && geomagnetic.valid && geomagnetic.zone == "normal" && geomagnetic.applied)
        #expect(abs(geomagnetic.declination - expected) < 1e-6)
        #expect(abs(geomagnetic.inclination - Self.modelNow.inclination) < 1e-6 && abs(geomagnetic.field - Self.modelNow.totalIntensityInMicrotesla) < 1e-6)
    }

    /// A declination set by hand wins over the model's; STATUS says the model's is not applied.
    @Test func aDeclinationSetByHandWinsOverThePlaces() throws {
        let (differences, status) = try Self.headingDifferences(arguments: ["--location", "52.52, 13.40", "--declination=-2"], count: 20)
        #expect(differences.allSatisfy { abs($0 + 2) < 0.01 }, "\(differences.prefix(5))")
        #expect(status.geomagnetic?.applied == false)
    }

    /// Without a place, nothing is said of the field and true north is magnetic north.
    @Test func withoutAPlaceTrueNorthIsMagneticNorth() throws {
        let (differences, status) = try Self.headingDifferences(arguments: [], count: 20)
        #expect(differences.allSatisfy { abs($0) < 0.01 }, "\(differences.prefix(5))")
        #expect(status.geomagnetic == nil)
    }
}
