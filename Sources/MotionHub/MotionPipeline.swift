import MotionCore
import MotionDevices
import MotionFusion
import MotionWire

/// Samples in, messages out: puts the captures' samples in one time order and hands each to the
/// stages that make the streams (`FusionStage`, `EventStage`, `GaitStage`), then what they make to
/// the fanout; answers polls and new watchers from the stages' latest values. A detector runs only
/// while a stream it makes is wanted (watched, or polled lately; the screen's orientation and tilt
/// while either is), and the step detector also while the step history is kept across restarts.
/// Confined to the hub's event loop.
final class MotionPipeline {
    private let fanout: StreamFanout
    /// The IMU's raw streams and `motion`.
    let fusion: FusionStage
    /// Orientation, tilt, gestures, the hinge, proximity and light.
    var events = EventStage()
    /// Steps, activity, floors and altitude, and their history.
    var gait: GaitStage
    /// Called after each sample is taken: a waiting poll may be answerable now.
    var sampleFused: () -> Void = {}
    /// Called when the instant a held presence change is due changes (ns, the samples' clock, which is
    /// CLOCK_MONOTONIC's; nil: none held): the hub sets one timer for it that calls
    /// `releaseHeldPresence(at:)`, since a sensor reporting only changes sends no reading to let it out.
    var presenceHeldUntil: (Int64?) -> Void = { _ in }
    /// The instant told `presenceHeldUntil` last: it is told again only when it changes.
    private var toldPresenceDue: Int64?
    private var merger = SampleMerger()
    /// Samples the merger let through, reused.
    private var merged: [SampleMerger.Entry] = []
    /// Whether `fuseMerged` is running (it is not entered twice).
    private var fusingMerged = false
    /// Whether the step history is kept across restarts (`StateSaver.keepsHistory`): its steps then
    /// count whenever the accelerometer runs, whether or not anyone watches them.
    private let keepsHistory: Bool

    init(fanout: StreamFanout, calibration: SavedState<SensorFusion.Calibration>, history: GaitHistory, keepsHistory: Bool) {
        self.fanout = fanout
        self.keepsHistory = keepsHistory
        fusion = FusionStage(calibration: calibration)
        gait = GaitStage(history: history)
    }

    /// Follows a new capture plan and the streams `wanted` (watched, or polled lately): which capture
    /// paces the output, the hinge, the detectors those streams need, and a fusion that uses the
    /// sensors there are while motion is wanted, at the rates their devices run at (`deviceRate`, Hz;
    /// the planned rate where it gives none).
    func follow(_ plan: CapturePlan, wanted: Set<StreamKind>, deviceRate: (DeviceNumber) -> Double?) {
        let pace = plan.captures.first { $0.kinds.contains(.gyroscope) }?.device
            ?? plan.captures.first { $0.kinds.contains(.accelerometer) && $0.device != plan.baseAccelerometer }?.device
        if pace != merger.pace {
            merger.releaseAll(into: &merged)
            merger.pace = pace
            fuseMerged()
        }
        func rate(of device: DeviceNumber) -> Double? { deviceRate(device) ?? plan.captures.first { $0.device == device }?.rate }
        events.followHinge(base: plan.baseAccelerometer, rate: plan.baseAccelerometer.flatMap(rate(of:)) ?? CapturePlan.eventRate)
        // The base's accelerometer feeds the hinge only: it keeps no screen orientation going.
        events.follow(running: Set(plan.captures.flatMap { $0.device == plan.baseAccelerometer ? $0.kinds.subtracting([.accelerometer]) : $0.kinds }))
        events.follow(wanted: wanted)
        tellPresenceDue()
        // What the chip counts or tells (its own step counter, its activity classes) needs no detector.
        let chip = Set(plan.captures.flatMap(\.kinds))
        gait.follow(chipSteps: chip.contains(.stepCounter), chipActivity: chip.contains(.activityRecognizer))
        var detectingFor = wanted.intersection(GaitStage.streamsDetecting)
        if chip.contains(.stepCounter) { detectingFor.remove(.pedometer) }
        if chip.contains(.activityRecognizer) { detectingFor.remove(.activity) }
        if chip.contains(.significantMotion) { detectingFor.remove(.significantMotion) }
        gait.follow(detecting: (keepsHistory && !chip.contains(.stepCounter)) || !detectingFor.isEmpty)
        if plan.captures.isEmpty {
            fusion.sensorsStopped()
            gait.sensorsStopped()
        }
        fusion.follow(motionNeeded: wanted.contains(.motion)) { kind in plan.captures.first { $0.kinds.contains(kind) }.flatMap { rate(of: $0.device) } }
    }

    /// Takes a sample of capture `device`, `period` ns after the previous one of its kind. Its
    /// timestamp is the device's, any Int64: every stage compares timestamps or saturates their
    /// arithmetic (MotionCore's `TimestampArithmetic`), and a step back or a jump is a gap to them.
    func add(_ sample: SensorSample, period: Int64, from device: DeviceNumber) {
        if Self.isOrderedWithMotion(sample.kind) {
            merger.add(.init(sample: sample, period: period), from: device, into: &merged)
        } else {
            // No fusion takes it: held behind a pace that gives nothing for a while (a buffer between
            // batches, an accelerometer resting on its motion events), a presence would wait for it.
            merged.append(.init(sample: sample, period: period))
        }
        fuseMerged()
    }

    /// Whether samples of `kind` go to the fusion or the floors, which take them in time order with
    /// the IMU's (`SampleMerger`); an event stream's sensor and a chip's functions need no order.
    private static func isOrderedWithMotion(_ kind: SensorKind) -> Bool {
        switch kind {
        case .accelerometer, .gyroscope, .magnetometer, .compass, .pressure: true
        case .proximity, .light, .humanPresence, .stepCounter, .activityRecognizer, .significantMotion, .onBody: false
        }
    }

    /// Fuses what the merger let through. Re-entrant: fusing can answer a poll, which can replan and
    /// release held samples into `merged`; the loop running already takes them, in order, and none is
    /// fused twice (a `for … in merged` over a copy did both). Walking by index also keeps the
    /// array's storage unshared, so nothing is copied.
    private func fuseMerged() {
        guard !fusingMerged else { return }
        fusingMerged = true
        var next = 0
        while next < merged.count {
            let entry = merged[next]
            next += 1
            fuse(entry.sample, period: entry.period)
        }
        merged.removeAll(keepingCapacity: true)
        fusingMerged = false
    }

    private func fuse(_ sample: SensorSample, period: Int64) {
        let t = sample.timestamp
        // A later sample is about to be taken: the pending motion goes out first, stamped as it was.
        if let pending = fusion.pendingMotion, t > pending.timestamp { deliverPendingMotion() }
        func send(_ message: AnyServerMessage) {
            guard let stream = message.stream else { return }
            if stream.isEventStream {
                fanout.deliverEvent(stream, message)
            } else {
                fanout.deliver(stream, timestamp: t, period: period) { _ in message }
            }
        }
        switch sample.kind {
        case .accelerometer where sample.device == events.baseAccelerometer:
            events.take(sample, isWalking: false, emit: send)
        case .accelerometer:
            send(fusion.take(sample, period: period)!)
            let (pedometer, activity) = gait.update(specificForce: sample.vector, at: t)
            if let pedometer { send(.pedometer(pedometer)) }
            if let activity { send(.activity(activity)) }
            events.take(sample, isWalking: gait.isWalking, emit: send)
        case .gyroscope, .magnetometer, .compass:
            if let raw = fusion.take(sample, period: period) { send(raw) }
        case .proximity, .light, .humanPresence, .significantMotion, .onBody:
            events.take(sample, isWalking: gait.isWalking, emit: send)
            tellPresenceDue()
        case .stepCounter, .activityRecognizer:
            let (pedometer, activity) = gait.update(chip: sample)
            if let pedometer { send(.pedometer(pedometer)) }
            if let activity { send(.activity(activity)) }
        case .pressure:
            let (altitude, pedometer) = gait.update(pressure: sample.vector.x, at: t)
            if let pedometer { send(.pedometer(pedometer)) }
            if let altitude { send(.altitude(altitude)) }
        }
        sampleFused()
    }

    /// Sends the held presence change if it is due at `t` (ns, the samples' clock): the hub's timer at
    /// the instant `presenceHeldUntil` told, fired with no reading having let it out.
    func releaseHeldPresence(at t: Int64) {
        events.releaseHeldPresence(at: t) { message in
            if let stream = message.stream { fanout.deliverEvent(stream, message) }
        }
        tellPresenceDue()
    }

    /// Tells `presenceHeldUntil` the due instant if it changed: a comparison per sample, a call (and a
    /// timer set) only at a change.
    private func tellPresenceDue() {
        let due = events.presenceDue
        guard due != toldPresenceDue else { return }
        toldPresenceDue = due
        presenceHeldUntil(due)
    }

    /// Sends the motion of the last pacing sample, if not yet sent (each frame encoded once).
    func deliverPendingMotion() {
        guard let due = fusion.takePendingMotion() else { return }
        fanout.deliver(.motion, timestamp: due.timestamp, period: due.period) { frame in .motion(fusion.motion(due, in: frame)) }
    }

    /// The latest value of `stream` (`motion` in `frame`), from the stage that makes it: a poll's
    /// answer, or the state a new watcher of a stream that `startsWithState` gets first.
    func latest(_ stream: StreamKind, frame: AttitudeReferenceFrame = .xArbitraryZVertical) -> AnyServerMessage? {
        fusion.latest(stream, frame: frame) ?? events.latest(stream) ?? gait.latest(stream)
    }

    /// The snapshot for a poll, if every stream asked for has a value from a running sensor. Asked with
    /// every sample while a poll waits: the answer nil allocates nothing.
    func snapshot(for poll: Request.Poll) -> Snapshot? {
        Snapshot(id: poll.id, streams: poll.streams) { latest($0, frame: poll.frame ?? .xArbitraryZVertical) }
    }
}
