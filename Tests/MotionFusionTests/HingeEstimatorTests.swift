import Foundation
import MotionCore
import Testing

@testable import MotionFusion

/// The hinge from two accelerometers. Frames as systemd's hwdb defines them for a base sensor: shut,
/// both read the same. With the base flat and its keyboard up, its specific force is (0, 0, −g) (its
/// z points into the keyboard, as the shut display's screen does), and the display opened by α about
/// the hinge reads (0, g sin α, −g cos α): α = 90° upright (0, g, 0), 180° flat face up (0, 0, g).
@Suite struct HingeEstimatorTests {
    static let g = Units.standardGravity

    static func settle(_ estimator: inout HingeEstimator, display: Vector3, base: Vector3) {
        for _ in 0..<50 {
            estimator.update(base: base)
            estimator.update(display: display)
        }
    }

    static func opened(_ degrees: Double) -> Vector3 {
        let a = degrees * .pi / 180
        return Vector3(x: 0, y: g * sin(a), z: -g * cos(a))
    }

    @Test(arguments: [(5.0, HingeMode.closed), (90, .laptop), (120, .laptop), (180, .laptop), (270, .tent), (340, .tablet)])
    func anOpenedLidGivesItsAngleAndMode(degrees: Double, mode: HingeMode) throws {
        var estimator = HingeEstimator(rate: 50)
        Self.settle(&estimator, display: Self.opened(degrees), base: Vector3(x: 0, y: 0, z: -Self.g))
        #expect(abs(try #require(estimator.angle) - degrees) < 0.01)
        #expect(estimator.mode == mode)
    }

    /// docs/protocol.md's HINGE example holds together: its `display` and `base` readings (acceleration,
    /// g, CoreMotion's sign: minus the specific force) give its angle, to its rounding, and its mode.
    @Test func theProtocolsHingeExampleGivesItsOwnAngle() throws {
        let docs = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../docs/protocol.md")
        let line = try #require(try String(contentsOf: docs, encoding: .utf8).split(separator: "\n").first { $0.hasPrefix(#"{"class":"HINGE""#) })
        let example = try JSONSerialization.jsonObject(with: Data(line.utf8)) as! [String: Any]
        func reading(_ key: String) throws -> Vector3 {
            let v = try #require(example[key] as? [String: Double])
            return Vector3(x: v["x"]!, y: v["y"]!, z: v["z"]!) * -Self.g
        }
        var estimator = HingeEstimator(rate: 50)
        Self.settle(&estimator, display: try reading("display"), base: try reading("base"))
        #expect(abs(try #require(estimator.angle) - (example["angle"] as! Double)) < 0.5)
        #expect(estimator.mode?.rawValue == example["mode"] as? String)
    }

    /// With no side yet, the base's keyboard facing up says shut and facing down folded back.
    @Test func shutAndFoldedBackAreToldApartByTheKeyboard() {
        var shut = HingeEstimator(rate: 50)
        Self.settle(&shut, display: Vector3(x: 0, y: 0, z: -Self.g), base: Vector3(x: 0, y: 0, z: -Self.g))
        #expect(shut.angle == 0 && shut.mode == .closed)
        // Folded right back and laid on the table screen up: the whole device turned over.
        var tablet = HingeEstimator(rate: 50)
        Self.settle(&tablet, display: Vector3(x: 0, y: 0, z: Self.g), base: Vector3(x: 0, y: 0, z: Self.g))
        #expect(tablet.angle == 360 && tablet.mode == .tablet)
    }

    /// The halves parallel keep the side the hinge came from, not the keyboard's: shut from a laptop
    /// and turned over (carried keyboard down) it stays shut at 0°; folded back from a tent and laid
    /// screen down (keyboard up) it stays a tablet at 360°.
    @Test func parallelHalvesKeepTheSideTheHingeCameFrom() {
        let keyboardUp = Vector3(x: 0, y: 0, z: -Self.g)
        var shut = HingeEstimator(rate: 50)
        Self.settle(&shut, display: Self.opened(90), base: keyboardUp)
        Self.settle(&shut, display: keyboardUp, base: keyboardUp)
        // Turned over about the hinge, 10° a step.
        for step in 1...18 {
            let a = Double(step) * 10 * .pi / 180
            let force = Vector3(x: 0, y: Self.g * sin(a), z: -Self.g * cos(a))
            Self.settle(&shut, display: force, base: force)
        }
        #expect(shut.angle == 0 && shut.mode == .closed)
        var folded = HingeEstimator(rate: 50)
        Self.settle(&folded, display: Self.opened(270), base: keyboardUp)
        Self.settle(&folded, display: keyboardUp, base: keyboardUp)
        #expect(folded.angle == 360 && folded.mode == .tablet)
    }

    /// The first estimate with the halves parallel and the base on edge (its keyboard facing the
    /// horizon, within `keyboardLimit`): nothing tells shut from folded back, and no angle is given
    /// until the keyboard faces clearly down (then folded back) or the hinge opens.
    @Test func parallelHalvesOnEdgeGiveNoFirstAngle() {
        var estimator = HingeEstimator(rate: 50)
        let upright = Vector3(x: 0, y: Self.g * cos(0.3), z: Self.g * sin(0.3))  // 17° off vertical
        Self.settle(&estimator, display: upright, base: upright)
        #expect(estimator.angle == nil && estimator.mode == nil)
        let screenUp = Vector3(x: 0, y: Self.g * cos(1.0), z: Self.g * sin(1.0))  // 57°
        Self.settle(&estimator, display: screenUp, base: screenUp)
        #expect(estimator.angle == 360 && estimator.mode == .tablet)
    }

    /// A hinge moved while its axis was vertical (no estimate) is taken where it is read, though the
    /// step from the last angle crosses 0°/360°: folded back at 350°, stood on its side, closed to a
    /// laptop at 60° and laid down reads 60° (the nearer side, 420°, is too far past 360° for error).
    @Test func aHingeMovedWhileVerticalIsTakenWhereItIsRead() throws {
        var estimator = HingeEstimator(rate: 50)
        let keyboardUp = Vector3(x: 0, y: 0, z: -Self.g)
        for degrees in stride(from: 90.0, through: 350, by: 10) { Self.settle(&estimator, display: Self.opened(degrees), base: keyboardUp) }
        #expect(abs(try #require(estimator.angle) - 350) < 0.5)
        Self.settle(&estimator, display: Vector3(x: Self.g, y: 0, z: 0), base: Vector3(x: Self.g, y: 0, z: 0))
        Self.settle(&estimator, display: Self.opened(60), base: keyboardUp)
        #expect(abs(try #require(estimator.angle) - 60) < 0.01)
        #expect(estimator.mode == .laptop)
    }

    @Test func aVerticalHingeKeepsTheLastAngle() {
        var estimator = HingeEstimator(rate: 50)
        Self.settle(&estimator, display: Self.opened(110), base: Vector3(x: 0, y: 0, z: -Self.g))
        // Stood on its side: gravity along the hinge in both halves.
        Self.settle(&estimator, display: Vector3(x: Self.g, y: 0, z: 0), base: Vector3(x: Self.g, y: 0, z: 0))
        #expect(abs((estimator.angle ?? 0) - 110) < 0.01)
    }
}
