import MotionCore
import MotionDevices
import MotionSystem
import NIOCore
import NIOPosix

/// Runs an `HysteresisTrial` on a resting accelerometer's buffer, on the loop: counts its reports,
/// raises the hub's sensitivity when the trial says, and reports the verdict to the capture's
/// lifecycle (honoured: it rests so; ignored: it is polled). The sensitivity is written off the loop
/// (a feature report to the hub), and put back when the hub ignores it (else when the buffer closes).
final class HysteresisProbe: @unchecked Sendable {
    // @unchecked: used on the capture's event loop only, but for the writes it sends off it.
    /// The reader that holds it, and through it the capture.
    private weak var reader: ScanReader?
    private let buffer: ScanBuffer
    private var trial: HysteresisTrial?

    init(reader: ScanReader) {
        self.reader = reader
        buffer = reader.buffer
    }

    private var capture: LoopCapture? { reader?.capture }

    /// Counts a report; the first starts the trial.
    func observe(_ sample: SensorSample) {
        guard sample.kind == .accelerometer else { return }
        if trial == nil {
            trial = HysteresisTrial(startingAt: Syscall.monotonicNanoseconds())
            schedule(at: trial!.phaseEnd)
        }
        trial?.report(sample.vector, at: Syscall.monotonicNanoseconds())
    }

    private func schedule(at t: Int64) {
        guard let loop = capture?.eventLoop else { return }
        loop.scheduleTask(in: .nanoseconds(max(0, t - Syscall.monotonicNanoseconds()))) { [self] in advance() }
    }

    /// Whether the capture still reads the buffer (not stopped, not fallen back to polling).
    private var reading: Bool {
        guard let reader, let capture = reader.capture else { return false }
        return capture.reads(reader)
    }

    private func advance() {
        guard let capture, trial != nil, reading else { return }
        switch trial!.step(at: Syscall.monotonicNanoseconds()) {
        case .wait(let t): schedule(at: t)
        case .raise(let t):
            write(HysteresisTrial.sensitivity, on: capture) { [self] error in
                if let error { return capture.follow(capture.lifecycle { $0.hysteresisNotHonoured(because: error) }) }
                schedule(at: t)
            }
        case .verdict(let honoured, let before, let after):
            trial = nil
            if honoured { return capture.follow(capture.lifecycle { $0.hysteresisHonoured() }) }
            let ignored = DeviceError.hysteresisIgnored(device: buffer.device.number.sysname, before: before, after: after)
            write(0, on: capture) { _ in capture.follow(capture.lifecycle { $0.hysteresisNotHonoured(because: ignored) }) }
        }
    }

    /// Sets the sensitivity off the loop, then calls `done` on it with the failure, if any.
    private func write(_ value: Double, on capture: LoopCapture, done: @escaping @Sendable (DeviceError?) -> Void) {
        let buffer = buffer
        capture.eventLoop.runOnThreadOfItsOwn(named: "hysteresis") { () throws -> Void in
            try buffer.setAccelerometerHysteresis(value)
        }.whenComplete { [self] result in
            // Stopped while it wrote: the close has put the attributes back already, so this one too.
            guard reading else {
                _ = capture.eventLoop.runOnThreadOfItsOwn(named: "hysteresis") { buffer.close() }
                return
            }
            if case .failure(let error) = result {
                done(error as? DeviceError ?? .attributeUnwritable(device: buffer.device.number.sysname, attribute: "in_accel_hysteresis", errno: ErrnoValue.invalidArgument))
            } else {
                done(nil)
            }
        }
    }
}
