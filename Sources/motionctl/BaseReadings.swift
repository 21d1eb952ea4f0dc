import FoundationEssentials
import MotionClientCore
import MotionCore
import Dispatch
import MotionDevices
import MotionFusion
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// A 2-in-1's base accelerometer as the mount wizard reads it: motiond's `HINGE` gives the base's
/// low-passed reading beside the display's (protocol 1.9), taken at each pose the display was held
/// still in. Folded right back into a tablet, the base's frame is the display's (60-sensor.hwdb's note
/// on `ACCEL_LOCATION=base`: shut, both read the same; a whole turn about the hinge later, again), so
/// the base's matrix comes from the same poses by the same solver.
final class BaseReadings: Sendable {
    /// The base's accelerometer, as DEVICES gives it.
    let base: DevicesReply.Device
    private let latest: Latest
    private let taken = Mutex<[Vector3?]>([])
    private let subscription: Subscription

    /// The latest reading, and a signal at the first.
    private final class Latest: Sendable {
        let reading = Mutex<Vector3?>(nil)
        let first = DispatchSemaphore(value: 0)
    }

    /// Starts watching the hinge. motiond sends the base's reading with the hinge's angle, which it
    /// cannot know while the hinge has stood upright since: the wizard starts with the machine lying flat.
    init(client: MotionClient, base: DevicesReply.Device) {
        self.base = base
        let latest = Latest()
        self.latest = latest
        subscription = client.watch([.hinge], interval: 0.05) { result in
            guard case .success(.hinge(let message)) = result, let reading = message.base else { return }
            if latest.reading.withLock({ old in defer { old = reading }; return old == nil }) { latest.first.signal() }
        }
    }

    /// Stops watching the hinge.
    func stop() { subscription.cancel() }

    /// Whether a reading of the base came within `timeout` seconds.
    func waitForFirstReading(timeout: Double) -> Bool {
        latest.reading.withLock { $0 != nil } || latest.first.wait(timeout: .now() + timeout) == .success
    }

    /// Takes the base's latest reading for the pose the display has just been held in (nil where
    /// motiond has sent none: an older daemon, or the hinge upright since the wizard started).
    func takePose() {
        let reading = latest.reading.withLock { $0 }
        taken.withLock { $0.append(reading) }
    }

    /// The base's record where its matrix, derived from the poses (right edge up, upright, screen up,
    /// left edge up), is not the one motiond reads it by now; says which, and why there is none.
    func record(key: SensorHwdbKey, display: SensorHwdbRecord) -> SensorHwdbRecord? {
        let readings = taken.withLock { $0 }
        guard readings.count == 4, let frame = base.frameMatrix.flatMap(CalibrateMount.matrix) else {
            print("\nThe base's accelerometer (\(base.device)) was not read in every pose: its matrix is not checked.")
            return nil
        }
        // HINGE's reading is acceleration in motiond's frame (g, CoreMotion's sign); the chip reads frameᵀ of −it.
        let raw = readings.compactMap { $0.map { frame.transposed * ($0 * -1) } }
        guard raw.count == 4 else {
            print("\nmotiond sent no reading of the base's accelerometer (\(base.device)) in some pose: its matrix is not checked.")
            return nil
        }
        let matrix: Matrix3
        switch MountMatrixSolver.matrix(upright: raw[1], rightEdgeUp: raw[0], screenUp: raw[2]) {
        case .success(let m): matrix = m
        case .failure(let refusal):
            print("\nThe base's accelerometer (\(base.device)) did not turn as the display did (\(refusal)): was the machine folded right back? Its matrix is not checked.")
            return nil
        }
        if let refusal = MountMatrixSolver.check(matrix, leftEdgeUp: raw[3]) {
            print("\nThe base's accelerometer (\(base.device)) did not turn as the display did (\(refusal)): was the machine folded right back? Its matrix is not checked.")
            return nil
        }
        let record = SensorHwdbRecord(key: key, matrix: matrix, location: .base)
        guard (try? DeviceFrame.transform(mountMatrix: matrix).matrix) != frame else {
            print("\nThe base's accelerometer (\(base.device)) agrees with the display's.")
            return nil
        }
        // A key of one that the other's record matches too (a labelled sensor's record carries its plain
        // form) would give both the same entry.
        guard Set(record.matches).isDisjoint(with: display.matches) else {
            print("\nThe base's accelerometer (\(base.device)) disagrees with the display's, but their hwdb keys overlap: report it upstream.")
            return nil
        }
        print("\nThe base's accelerometer (\(base.device)) disagrees with the display's: ACCEL_MOUNT_MATRIX=\(record.matrixValue) for it. Its entry:\n")
        return record
    }
}
