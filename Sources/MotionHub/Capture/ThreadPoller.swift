import MotionCore
import MotionDevices
import MotionSystem

/// Polls a capture's device on a thread of its own, at rates too fast for the loop (a sysfs read can
/// block for a bus transfer): each round reports to the capture's lifecycle as `PollTicker`'s on the
/// loop do (`LoopCapture.poll`), and its events go to the handler from this thread. It opens the
/// device there too (sysfs writes), and puts it back as the thread ends.
final class ThreadPoller: CaptureReader, @unchecked Sendable {
    // @unchecked: `capture` is weak and set once; the thread is Sendable.
    private weak var capture: LoopCapture?
    private let thread: WakeableThread

    init(capture: LoopCapture) throws(DeviceError) {
        do {
            thread = try WakeableThread(name: capture.device.number.sysname)
        } catch {
            throw .bufferFailed(device: capture.device.number.sysname, operation: "eventfd", errno: error.rawValue)
        }
        self.capture = capture
    }

    func start() {
        guard let failure = thread.start({ [self] in run() }), let capture else { return }
        capture.openFailedLater(
            .bufferFailed(device: capture.device.number.sysname, operation: "start a reader thread", errno: failure.rawValue))
    }

    private func run() {
        // A stop that came before the thread ran: the device is not touched.
        guard !thread.isStopping, let poller = open() else { return }
        defer { poller.close() }
        guard !thread.isStopping else { return }
        for problem in poller.problems { capture?.handler(.readFailed(problem)) }
        capture?.lifecycle { $0.opened() }
        var rejections = RejectionReport(device: poller.device.number.sysname, kinds: poller.kinds)
        let period = PlausibleRate.period(poller.rate)
        var deadline = Syscall.monotonicNanoseconds()
        while !thread.isStopping, let capture {
            capture.poll(poller, rejections: &rejections) { _ in }
            deadline += period
            let now = Syscall.monotonicNanoseconds()
            if deadline < now { deadline = now }  // fell behind: skip, don't burst
            thread.sleep(untilMonotonic: deadline)
        }
    }

    /// Opens the capture's device, holding the capture only meanwhile (the thread holds it one round
    /// at a time, so a capture let go without a stop ends its thread); nil if it is gone or the open
    /// failed (told to it).
    private func open() -> PolledSensors? {
        guard let capture else { return nil }
        do {
            return try PolledSensors(device: capture.device, kinds: capture.kinds, rate: capture.rate)
        } catch {
            capture.follow(capture.lifecycle { $0.openFailed(error, deviceExists: !error.isVanished) })
            return nil
        }
    }

    /// Whether its thread ran and returned (a poller closed without waiting need not be joined then).
    var hasEnded: Bool { thread.hasFinished }

    /// Ends the thread (`waiting`: joins it, the device put back; else it ends by itself, as it must
    /// when the capture ends from the thread).
    func close(waiting: Bool) {
        if waiting { thread.stop() } else { thread.requestStop() }
    }
}
