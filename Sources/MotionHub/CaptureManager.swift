import Logging
import MotionCore
import MotionDevices
import MotionWire
import NIOCore
import NIOPosix

/// The captures that run, one per device of the plan: opened, reopened and closed to follow it, and
/// their events handed to the loop a read at a time. Confined to the hub's event loop.
final class CaptureManager: @unchecked Sendable {
    // @unchecked: confined to the hub's event loop, as the closures it schedules there are.
    /// How long a sensor keeps its rate after clients ask for a lower one.
    static let rateSettling = TimeAmount.seconds(1)

    struct Running {
        var plan: CapturePlan.Capture
        var capture: any SensorStream
        /// Which opening of the device this is: events still in flight from an earlier one are dropped.
        var generation: Int
        var samples = 0
        var firstTimestamp: Int64?
        var lastTimestamp: Int64?
        /// The last timestamp per kind (by `SensorKind.allCases` order), to measure each sensor's real
        /// sample interval: an array, as a dictionary would hash the kind's name at every sample.
        var lastByKind = [Int64?](repeating: nil, count: SensorKind.allCases.count)
        /// When a lower rate that clients now ask for will be applied (the sensor runs faster until then).
        var lowerRateAfter: NIODeadline?

        /// Counts a sample, and returns the interval since the previous one of its kind, ns (the
        /// device's period for the first; at most four periods, so a gap is not one huge step).
        mutating func count(_ sample: SensorSample) -> Int64 {
            samples += 1
            if firstTimestamp == nil { firstTimestamp = sample.timestamp }
            lastTimestamp = sample.timestamp
            let planned = Int64(1e9 / capture.rate)
            let kind = sample.kind.index
            defer { lastByKind[kind] = sample.timestamp }
            guard let last = lastByKind[kind], sample.timestamp > last else { return planned }
            // Where a device's timestamp enters the hub: any Int64, so saturated (`TimestampArithmetic`).
            return min(sample.timestamp.nanoseconds(since: last), 4 * planned)
        }

        /// Samples per second per kind, measured over the capture's life.
        var measuredRate: Double? {
            guard let first = firstTimestamp, let last = lastTimestamp, last > first, samples > 1 else { return nil }
            let perScan = Double(max(1, plan.kinds.count))
            return (Double(samples) / perScan - 1) / last.seconds(since: first)
        }
    }

    let source: any SensorSource
    /// Samples read since start, by `SensorKind.index`, over every capture.
    private(set) var samplesRead = [Int](repeating: 0, count: SensorKind.allCases.count)
    private let eventLoop: any EventLoop
    private let logger: Logger
    /// Gets each read's events on the loop, in order.
    var received: (_ events: [SensorEvent], _ device: DeviceNumber) -> Void = { _, _ in }
    /// Called when the plan is to be made anew: a capture's rate may drop, or a device that was
    /// being stopped can be opened again.
    var changed: () -> Void = {}
    private(set) var running: [DeviceNumber: Running] = [:]
    /// The rate `device`'s capture runs at, Hz: the offered rate it was set to, which may be above the
    /// one planned (a client asking for 1 kHz of a 285.7 Hz IMU gets 285.7); nil if it is not running.
    func rate(of device: DeviceNumber) -> Double? { running[device]?.capture.rate }
    /// Devices whose capture is being stopped off the loop: not opened again until it has.
    private var stopping: Set<DeviceNumber> = []
    /// The devices with a capture running or being stopped.
    var runningOrStopping: [DeviceNumber] { Array(running.keys) + stopping.subtracting(running.keys) }
    /// Where stops run, for shutdown to wait for.
    private let offLoop: OffLoopWork
    private var generations = 0
    /// Set while the machine sleeps (`sleep()` to `wake()`): every capture is closed, none opens.
    private(set) var asleep = false
    /// Told once every capture has closed for the machine's sleep.
    private var quiet: [EventLoopPromise<Void>] = []
    /// Scratch space for a mailbox's events, reused.
    private var drained: [SensorEvent] = []

    init(source: any SensorSource, eventLoop: any EventLoop, offLoop: OffLoopWork, logger: Logger) {
        self.source = source
        self.eventLoop = eventLoop
        self.offLoop = offLoop
        self.logger = logger
    }

    /// Makes the running captures those of `plan`, on `devices`. A rate that drops is kept for
    /// `rateSettling`: a client switching back and forth between two intervals would otherwise close
    /// and reopen the sensor each time, and every other client's stream with it. So are chip functions
    /// no longer wanted (a significant-motion trigger disarmed, on-body unwatched): a client arming and
    /// disarming a trigger in a loop would otherwise reopen the chip, sysfs writes and ioctl, each time.
    /// Raising the rate, or another set of sensors, reopens at once.
    func follow(_ plan: CapturePlan, on devices: [DeviceDescriptor]) {
        let now = eventLoop.now
        let wanted = Dictionary(uniqueKeysWithValues: plan.captures.map { ($0.device, $0) })
        for (number, current) in running where wanted[number] != current.plan {
            if Self.settles(from: current.plan, to: wanted[number]) {
                if current.lowerRateAfter == nil {
                    running[number]!.lowerRateAfter = now + Self.rateSettling
                    eventLoop.scheduleTask(deadline: now + Self.rateSettling) { [self] in changed() }
                }
                if now < running[number]!.lowerRateAfter! { continue }
            }
            stop(number)
            logger.info("sensor closed", metadata: ["device": "\(number)"])
        }
        for (number, entry) in wanted where running[number]?.plan == entry { running[number]!.lowerRateAfter = nil }
        for (number, entry) in wanted where running[number] == nil && !stopping.contains(number) && !asleep {
            guard let device = devices.first(where: { $0.number == number }) else { continue }
            open(device, entry)
        }
    }

    /// Whether going from `current` to `want` waits `rateSettling`: the same sensors at a lower rate,
    /// or the same sampled sensors with fewer chip functions (none gained, the rate not raised).
    /// A chip read for its functions alone and no longer wanted at all settles too.
    private static func settles(from current: CapturePlan.Capture, to want: CapturePlan.Capture?) -> Bool {
        guard let want else { return current.kinds.allSatisfy(\.isChipFunction) }
        if want.kinds == current.kinds { return want.rate < current.rate }
        let dropped = current.kinds.subtracting(want.kinds)
        return want.kinds.isSubset(of: current.kinds) && dropped.allSatisfy(\.isChipFunction) && want.rate <= current.rate
    }

    private func open(_ device: DeviceDescriptor, _ entry: CapturePlan.Capture) {
        let number = device.number
        do {
            let capture = try source.open(
                device, kinds: entry.kinds.sorted { $0.rawValue < $1.rawValue }, rate: entry.rate, latency: entry.latency,
                restsWhenStill: entry.restsWhenStill, chipInterval: entry.chipInterval, eventLoop: eventLoop)
            generations += 1
            let generation = generations
            running[number] = Running(plan: entry, capture: capture, generation: generation)
            let mailbox = EventMailbox()
            let eventLoop = eventLoop
            capture.start { [weak self] event in
                guard let self else { return }
                // A capture read on the loop hands its events over there and then, a read at a time.
                if eventLoop.inEventLoop { return self.take(event, from: number, generation: generation) }
                guard mailbox.post(event) else { return }
                eventLoop.execute { self.handOn(mailbox, from: number, generation: generation) }
            }
            logger.info("sensor opened", metadata: [
                "device": "\(number)", "kinds": "\(entry.kinds.map(\.rawValue).sorted())", "rate": "\(capture.rate)",
                "mode": "\(capture.readingMode.rawValue)"])
        } catch {
            logger.error("cannot open sensor", metadata: ["device": "\(number)", "error": "\(error)"])
        }
    }

    /// Collects the events of a capture read on the loop, and hands on each read's at its end (or an
    /// event that is not a sample at once).
    private func take(_ event: SensorEvent, from number: DeviceNumber, generation: Int) {
        if case .readComplete = event {} else { drained.append(event) }
        if case .sample = event { return }
        handOn(from: number, generation: generation)
    }

    /// Hands on what a capture's reader thread posted since the last drain (`mailbox`), or what the
    /// loop collected, unless it comes from an opening since closed.
    private func handOn(_ mailbox: EventMailbox? = nil, from number: DeviceNumber, generation: Int) {
        mailbox?.take(into: &drained)
        if running[number]?.generation == generation { received(drained, number) }
        drained.removeAll(keepingCapacity: true)
    }

    /// Stops a capture off the loop (joining its reader thread can wait for a slow read); its
    /// device is opened again only once that is done.
    private func stop(_ number: DeviceNumber) {
        guard let capture = running.removeValue(forKey: number)?.capture else { return }
        stopping.insert(number)
        offLoop.run(named: "stop \(number)", { capture.stop() }, then: { [self] _ in
            stopping.remove(number)
            if stopping.isEmpty { tellQuiet() }
            changed()
        })
    }

    /// Counts a sample of a running capture; `nil` for one in flight from a capture since closed.
    /// Returns the sample's period, ns.
    func count(_ sample: SensorSample, from number: DeviceNumber) -> Int64? {
        guard let period = running[number]?.count(sample) else { return nil }
        samplesRead[sample.kind.index] += 1
        return period
    }

    /// Forgets a capture that ended by itself (it let its thread go); returns what it captured.
    func ended(_ number: DeviceNumber) -> CapturePlan.Capture? {
        running.removeValue(forKey: number)?.plan
    }

    /// Stops the captures of devices not in `present`; returns what each captured.
    func stop(absentFrom present: Set<DeviceNumber>) -> [CapturePlan.Capture] {
        let absent = running.values.map(\.plan).filter { !present.contains($0.device) }
        for plan in absent { stop(plan.device) }
        return absent
    }

    /// Stops every capture off the loop, as any other stop; shutdown then waits for them (the hub's
    /// `offLoop`: a buffer left enabled would stay so after the daemon exits). Off the loop also
    /// because a capture still being opened can only be waited for there.
    func stopAll() {
        for number in Array(running.keys) { stop(number) }
    }

    /// Closes every capture for the machine's sleep (their buffers and motion events disabled, as at
    /// any stop, so that the resume's opening writes each enable afresh: a driver that forgot its chip's
    /// state is set up again only by a change of the enable), and opens none until `wake`. The future
    /// succeeds once all are closed.
    func sleep() -> EventLoopFuture<Void> {
        asleep = true
        stopAll()
        let promise = eventLoop.makePromise(of: Void.self)
        quiet.append(promise)
        if stopping.isEmpty { tellQuiet() }
        return promise.futureResult
    }

    /// The machine resumed: the plan's captures open again, as at start (`changed`).
    func wake() {
        guard asleep else { return }
        asleep = false
        changed()
    }

    private func tellQuiet() {
        let waiting = quiet
        quiet = []
        for promise in waiting { promise.succeed() }
    }
}
