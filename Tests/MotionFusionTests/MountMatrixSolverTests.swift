import MotionCore
import MotionFusion
import Testing

/// The wizard's matrix from still poses, against entries of systemd's 60-sensor.hwdb (Debian 12's
/// copy, line numbers there): the poses are what a right-handed chip reporting specific force (+1 g
/// up, the kernel's ABI) reads on that machine, found from the shipped matrix by iio-sensor-proxy's
/// convention (upright reads (0, −1 g, 0) after the matrix, right edge up (−1 g, 0, 0)): upright
/// raw = −row y, right edge up raw = −row x, screen up = right-edge-up × upright.
@Suite struct MountMatrixSolverTests {
    static let g = Units.standardGravity

    /// The raw poses on a machine whose hwdb matrix is `m`, with `noise` (m/s²) added to each axis.
    static func poses(for m: Matrix3, noise: Vector3 = .zero) -> (upright: Vector3, rightEdgeUp: Vector3, screenUp: Vector3) {
        let upright = m.row1 * -g
        let rightEdgeUp = m.row0 * -g
        let screenUp = rightEdgeUp.cross(upright) * (1 / g)
        return (upright + noise, rightEdgeUp - noise, screenUp + noise)
    }

    static func solve(_ p: (upright: Vector3, rightEdgeUp: Vector3, screenUp: Vector3)) -> Result<Matrix3, MountMatrixSolver.Refusal> {
        MountMatrixSolver.matrix(upright: p.upright, rightEdgeUp: p.rightEdgeUp, screenUp: p.screenUp)
    }

    /// Seven real entries whose z row is the physical one (determinant −1, as 154 of 203 are): the
    /// wizard derives each exactly, with a hand's tremor (0.3 m/s², 2°) on every pose.
    @Test(arguments: [
        ("Chuwi Hi10 Pro, line 298", [0, -1, 0, -1, 0, 0, 0, 0, 1]),
        ("Lenovo Miix 310, bvr1HCN4?WW, line 758", [0, 1, 0, 1, 0, 0, 0, 0, 1]),
        ("Asus T100TA, line 151", [1, 0, 0, 0, -1, 0, 0, 0, 1]),
        ("Lenovo Miix3-830, line 745", [-1, 0, 0, 0, 1, 0, 0, 0, 1]),
        ("Asus T103HAF, line 159", [0, -1, 0, 1, 0, 0, 0, 0, -1]),
        ("Lenovo Yoga 300-11IBR base, line 780", [1, 0, 0, 0, 1, 0, 0, 0, -1]),
        ("Chromebook Eve display, line 557", [-1, 0, 0, 0, -1, 0, 0, 0, -1]),
    ] as [(String, [Double])])
    func theWizardDerivesTheShippedMatrix(machine: String, shipped: [Double]) {
        let m = Matrix3(rowMajor: shipped)
        let poses = Self.poses(for: m, noise: Vector3(x: 0.3, y: -0.2, z: 0.3))
        #expect(Self.solve(poses) == .success(m), "\(machine)")
        // The check pose, the left edge up, agrees; the screen down in its place does not.
        #expect(MountMatrixSolver.check(m, leftEdgeUp: poses.rightEdgeUp * -1) == nil, "\(machine)")
        guard case .checkFailed(let angle) = MountMatrixSolver.check(m, leftEdgeUp: poses.screenUp * -1) else {
            Issue.record("\(machine): the screen down passed for the left edge")
            return
        }
        #expect(abs(angle - 90) < 3, "\(machine): \(angle)°, a quarter turn give or take the tremor")
    }

    /// HP Pro Tablet 408 (line 635) ships `0, 1, 0; -1, 0, 0; 0, 0, 1`, determinant +1: its z row
    /// is the mirror of what a right-handed chip reads screen up (iio-sensor-proxy never reads z).
    /// The x and y rows, which turn the screen, come out as shipped; z as the chip reads it.
    @Test func aShippedZRowThatNoChipReadsComesOutAsTheChipReadsIt() {
        let shipped = Matrix3(rowMajor: [0, 1, 0, -1, 0, 0, 0, 0, 1])
        let derived = try? Self.solve(Self.poses(for: shipped)).get()
        #expect(derived?.row0 == shipped.row0 && derived?.row1 == shipped.row1 && derived?.row2 == shipped.row2 * -1)
    }

    /// The left edge up instead of the right: the poses are a mirror image, and refused.
    @Test func aPoseTakenTheWrongWayRoundIsRefused() {
        let p = Self.poses(for: Matrix3(rowMajor: [0, -1, 0, -1, 0, 0, 0, 0, 1]))
        #expect(Self.solve((p.upright, p.rightEdgeUp * -1, p.screenUp)) == .failure(.mirrored))
    }

    /// Upright twice (the device not turned between two poses) uses one axis twice.
    @Test func aPoseRepeatedIsRefused() {
        let p = Self.poses(for: .identity)
        #expect(Self.solve((p.upright, p.upright, p.screenUp)) == .failure(.axisUsedTwice("right-edge-up", "upright")))
    }

    /// Held at 40° from every axis: no axis is near enough to be the one meant.
    @Test func aSlantedPoseIsRefused() {
        let p = Self.poses(for: .identity)
        let slanted = Vector3(x: 0, y: -Self.g * 0.766, z: Self.g * 0.643)
        guard case .failure(.notAlongAnAxis(pose: "upright", let angle)) = Self.solve((slanted, p.rightEdgeUp, p.screenUp)) else {
            Issue.record("a slanted pose was accepted")
            return
        }
        #expect(abs(angle - 40) < 0.1)
    }
}
