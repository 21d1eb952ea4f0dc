import Foundation
import MotionFusion
import MotionWire
import TestSupport
import Testing

/// `xTrueNorthZVertical` with a configured place: the bundled recording (BROAD's 9D IMU) watched in
/// both north frames at once, the headings of the same samples compared. Their difference is the
/// declination in use; the World Magnetic Model's at the place is checked against NOAA's own test
/// values and an independent implementation in WorldMagneticModelTests.
@Suite struct TrueNorthTests {
    /// Berlin, at 34 m.
    static let place = (latitude: 52.52, longitude: 13.40, altitude: 34.0)

    /// The headings (degrees) of the first `count` samples both watchers got, true minus magnetic,
    /// and STATUS's account of the field, from a daemon started with `arguments`.
    static func headingDifferences(arguments: [String], count: Int = 50) throws -> (differences: [Double], status: StatusReply) {
        let daemon = try ReplayDaemon(arguments: ["--loop"] + arguments)
        let magnetic = try TestClient.greeted(path: daemon.socket)
        let trueNorth = try TestClient.greeted(path: daemon.socket)
        try magnetic.send(#"{"class":"WATCH","streams":["motion"],"interval":0.001,"frame":"xMagneticNorthZVertical"}"#)
        try trueNorth.send(#"{"class":"WATCH","streams":["motion"],"interval":0.001,"frame":"xTrueNorthZVertical"}"#)
        _ = try magnetic.next("WATCHING")
        _ = try trueNorth.next("WATCHING")
        // Both watchers take every sample (the interval is shorter than the IMU's 3.5 ms) and read in
        // turn; the headings of the samples both got are compared.
        var magneticHeadings: [Int64: Double] = [:]
        var trueHeadings: [Int64: Double] = [:]
        var differences: [Double] = []
        var received = (pairsOfLines: 0, magneticHeadings: 0, trueHeadings: 0)
        // The deadline only bounds a hang: at the full suite's start on two cores a run of 20 s
        // ended with no pair (the test alone takes about a second).
        let deadline = Date().addingTimeInterval(60)
        while differences.count < count, Date() < deadline {
            let m = try magnetic.decode(MotionMessage.self, try magnetic.next("MOTION"))
            let t = try trueNorth.decode(MotionMessage.self, try trueNorth.next("MOTION"))
            received.pairsOfLines += 1
            if let heading = m.heading { magneticHeadings[m.timestamp] = heading; received.magneticHeadings += 1 }
            if let heading = t.heading { trueHeadings[t.timestamp] = heading; received.trueHeadings += 1 }
            for stamp in [m.timestamp, t.timestamp] {
                if let a = trueHeadings.removeValue(forKey: stamp), let b = magneticHeadings.removeValue(forKey: stamp) {
                    differences.append(remainder(a - b, 360))
                }
            }
        }
        #expect(differences.count == count, "samples both watchers got with a heading; received \(received)")
        try magnetic.send(#"{"class":"STATUS"}"#)
        let status = try magnetic.decode(StatusReply.self, try magnetic.next("STATUS"))
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
