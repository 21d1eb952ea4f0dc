import MotionCore
import MotionDevices
import MotionWire

/// Which sensors to run, on which devices, at what rate, for what the clients watch right now.
///
/// A sensor runs only while some stream needs it (no watcher: nothing open, no wake-ups), at the
/// fastest rate any client asks for; event streams sample at `eventRate`. `motion` needs the
/// accelerometer, and uses the gyroscope and the magnetometer where there are (else a sensor hub's
/// compass, for the heading); `orientation` needs the accelerometer. Where one device carries several
/// of the kinds needed (an IMU), it is preferred, so that their samples share timestamps. A chip's own
/// functions (a bma400's step counter, a ChromeOS EC's significant motion) stand in for the sensors a
/// stream requires where the stream prefers them (`StreamKind.Descriptor.preferred`): they have no
/// rate, only an interval (`Capture.chipInterval`), and are read by a `ChipWatch`.
struct CapturePlan: Sendable, Hashable {
    /// One capture: some kinds of one device at one rate.
    struct Capture: Sendable, Hashable {
        var device: DeviceNumber
        var kinds: Set<SensorKind>
        /// Hz, as asked (the capture rounds it up to what the device offers).
        var rate: Double
        /// Seconds a sample may wait before it is read, so that the device delivers its scans in
        /// batches: as long as the most impatient client of its sensors lets wait (0: each at once).
        var latency = 0.0
        /// Whether only event streams read it (an accelerometer for orientation and tilt): polled, it
        /// is read more slowly while it lies still.
        var restsWhenStill = false
        /// Seconds between reads of its chip functions (`SensorKind.isChipFunction`) while they change
        /// or where their events cannot be had (`ChipWatch`); nil: it reads none.
        var chipInterval: Double?
    }

    /// What the plan may use beside the clients' demands.
    struct Options: Sendable, Hashable {
        /// Whether a chip's own functions (its step counter, activity, significant motion, on-body) may
        /// stand in for the sensors a stream requires (motiond.conf's `chip_functions`).
        var chipFunctions = true
        /// Whether the step history is kept across restarts: a chip's step counter (and activity) is
        /// then read even while no one watches, every `historyChipInterval`.
        var keepsStepHistory = false
    }

    /// What clients watch: a stream, its interval (seconds; ignored for event streams) and the
    /// longest a sample may wait before it is sent (seconds; 0: at once).
    struct Demand: Sendable, Hashable {
        var stream: StreamKind
        var interval: Double
        var latency = 0.0
    }

    /// Scans read at once at most, whatever the latency allows: the kernel's buffer holds four times
    /// as many (`ScanBuffer.lengthPerWatermark`).
    static let largestBatch = 1024

    /// The rate at which event streams (orientation, tilt, proximity, light) sample, Hz: the lowest
    /// that reports a turn within 300 ms (a quarter second between readings, plus the reading), so
    /// that a desktop's screen rotation costs a few wake-ups a second. No fusion runs for them.
    static let eventRate = 4.0
    /// How long an event stream's sample may wait, s: a buffered accelerometer, which runs at the
    /// lowest rate it offers (often 12.5 or 25 Hz), is then read in batches, about as often as a
    /// polled one at `eventRate`.
    static let eventLatency = 0.2
    /// The rate an `immediate` stream (presence) samples at, Hz: a change read within 100 ms where
    /// the sensor is polled (an HID hub's buffer reports each change as it comes).
    static let immediateRate = 10.0
    /// The rate the step detector runs at, Hz (`StepDetector.Parameters.internalRate`): `pedometer`
    /// and `activity` sample the accelerometer at it.
    static let gaitRate = 25.0
    /// How long their samples may wait, s: steps are counted seconds late anyway (a walk is confirmed
    /// after six), so the accelerometer is read in batches, once a second.
    static let gaitLatency = 1.0
    /// The shortest interval a chip's step counter or activity is read at while a walk goes on, s:
    /// a client asking for a faster one gets each count as the chip's interval brings it.
    static let shortestChipInterval = 1.0
    /// The interval a chip's step counter is read at while only the kept step history needs it, s.
    static let historyChipInterval = 60.0
    /// The interval for chip functions that only their events tell of (significant motion, on-body),
    /// s: the heartbeat read of a chip whose events never come.
    static let eventChipInterval = AdaptivePolling.heartbeat

    /// The interval (s) at which `demand`'s chip `kind` is read: the client's own, at least
    /// `shortestChipInterval`, for the counter and the activity; for a function whose events carry
    /// their value, the heartbeat.
    static func chipInterval(of kind: SensorKind, for demand: Demand) -> Double {
        switch kind {
        case .stepCounter, .activityRecognizer: max(shortestChipInterval, demand.interval)
        default: eventChipInterval
        }
    }

    /// The sensors `stream` reads on a machine with `available`: the first of its `preferred`
    /// sources there (one of a chip's functions only where `chipFunctions` allows), else `required`;
    /// nil where neither is there.
    static func source(of stream: StreamKind, available: Set<SensorKind>, chipFunctions: Bool) -> Set<SensorKind>? {
        let descriptor = stream.descriptor
        let preferred = descriptor.preferred.first { source in
            source.isSubset(of: available) && (chipFunctions || !source.contains(where: \.isChipFunction))
        }
        return preferred ?? (descriptor.required.isSubset(of: available) ? descriptor.required : nil)
    }

    /// The rate (Hz) a demand samples its sensors at and how long its samples may wait (s): the
    /// client's own for periodic streams; for event streams the event rate, waiting little (an event
    /// is worth something only when it is fresh); for the step detector's streams its rate, in
    /// batches.
    static func sampling(of demand: Demand) -> (rate: Double, latency: Double) {
        switch demand.stream.descriptor.sampling {
        case .asked: (1 / demand.interval, demand.latency)
        case .events: (eventRate, eventLatency)
        case .gait: (gaitRate, gaitLatency)
        case .moments: (gaitRate, eventLatency)
        case .immediate: (immediateRate, 0)
        }
    }

    /// The captures, by device number.
    private(set) var captures: [Capture] = []
    /// Streams no device can give.
    private(set) var unavailable: Set<StreamKind> = []
    /// The sensors each demanded stream cannot go without on this machine: one of its preferred
    /// sources (a chip's step counter for `pedometer`), else its required ones.
    private(set) var sources: [StreamKind: Set<SensorKind>] = [:]
    /// The base's accelerometer, opened for the hinge only (its samples feed nothing else).
    private(set) var baseAccelerometer: DeviceNumber?

    /// Whether `device`'s capture feeds `stream` with a sensor it cannot go without, so that the stream
    /// ends when the device goes. The stream table names kinds, not devices; the plan gives each kind
    /// one device, but for the base's accelerometer, which feeds the hinge only (a 2-in-1's screen
    /// orientation and tilt come from the display's).
    func feeds(_ stream: StreamKind, from device: DeviceNumber) -> Bool {
        guard var kinds = captures.first(where: { $0.device == device })?.kinds else { return false }
        if device == baseAccelerometer {
            if stream == .hinge { return true }
            kinds.remove(.accelerometer)
        }
        return !kinds.isDisjoint(with: sources[stream] ?? stream.descriptor.required)
    }

    /// The device whose chip function `kind` the plan reads, if any.
    func device(readingChip kind: SensorKind) -> DeviceNumber? {
        captures.first { $0.kinds.contains(kind) }?.device
    }

    /// Why the streams in `unavailable` cannot be had, one sentence each: "motion needs a sensor this
    /// machine does not have: accelerometer"; a stream with preferred sources names each as an
    /// alternative: "presence needs a sensor this machine does not have: human-presence or proximity".
    static func reasons(for streams: Set<StreamKind>, devices: [DeviceDescriptor], options: Options = Options()) -> String {
        let available = Set(devices.flatMap(\.kinds))
        return streams.sorted { $0.rawValue < $1.rawValue }.map { stream in
            if stream == .hinge && available.contains(.accelerometer) {
                return "hinge needs two accelerometers, one in the display and one in the base"
            }
            let missing = stream.descriptor.required.subtracting(available).map(\.rawValue).sorted()
            let alternatives = stream.descriptor.preferred
                .filter { options.chipFunctions || !$0.contains(where: \.isChipFunction) }
                .map { $0.map(\.rawValue).sorted().joined(separator: ", ") }
            return "\(stream.rawValue) needs a sensor this machine does not have: \((alternatives + [missing.joined(separator: ", ")]).joined(separator: " or "))"
        }.joined(separator: "; ")
    }

    /// What `devices` cannot give, each with its reason (`nil`: everything can be had).
    static func unavailable(on devices: [DeviceDescriptor], options: Options = Options()) -> StatusReply.Unavailable? {
        var streams: [String: String] = [:]
        for stream in StreamKind.allCases {
            let plan = CapturePlan(demands: [Demand(stream: stream, interval: Request.Watch.defaultInterval)], devices: devices, options: options)
            if plan.unavailable.contains(stream) { streams[stream.rawValue] = reasons(for: [stream], devices: devices, options: options) }
        }
        let kinds = Set(devices.flatMap(\.kinds))
        var motion = kinds.contains(.accelerometer)
            ? UnavailableOutputs.missing(gyroscope: kinds.contains(.gyroscope), magnetometer: kinds.contains(.magnetometer)) : []
        if kinds.contains(.compass) { motion.remove(.heading) }
        return streams.isEmpty && motion.isEmpty ? nil : StatusReply.Unavailable(streams: streams, motion: motion)
    }

    /// The plan for `demands` on `devices`. A stream's first preferred source the machine has (and
    /// `options` allows) replaces its required sensors: a chip's step counter is read in place of
    /// the accelerometer, which then opens for no one. Chip functions have no rate: they are read at
    /// their events and at the capture's `chipInterval`.
    init(demands: [Demand], devices: [DeviceDescriptor], options: Options = Options()) {
        var rates: [SensorKind: Double] = [:]
        let available = Set(devices.flatMap(\.kinds))
        // Many clients ask for few streams: the fastest rate per stream is all that matters.
        var fastest: [StreamKind: Double] = [:]
        var patience: [StreamKind: Double] = [:]
        // The chip functions' intervals, s: the shortest any demand asks for.
        var chipIntervals: [SensorKind: Double] = [:]
        for demand in demands {
            let sampling = Self.sampling(of: demand)
            fastest[demand.stream] = max(fastest[demand.stream] ?? 0, sampling.rate)
            patience[demand.stream] = min(patience[demand.stream] ?? .infinity, sampling.latency)
        }
        var latencies: [SensorKind: Double] = [:]
        // Kinds some stream other than an event stream reads: they keep their rate at rest.
        var sampled: Set<SensorKind> = []
        for (stream, rate) in fastest {
            guard let source = Self.source(of: stream, available: available, chipFunctions: options.chipFunctions) else {
                unavailable.insert(stream)
                continue
            }
            sources[stream] = source
            var used = source.union(stream.descriptor.optional.intersection(available))
            if !options.chipFunctions { used = used.filter { !$0.isChipFunction } }
            if used.contains(.magnetometer) { used.remove(.compass) }
            for kind in used where kind.isChipFunction {
                for demand in demands where demand.stream == stream {
                    chipIntervals[kind] = min(chipIntervals[kind] ?? .infinity, Self.chipInterval(of: kind, for: demand))
                }
            }
            used = used.filter { !$0.isChipFunction }
            if stream.descriptor.sampling != .events { sampled.formUnion(used) }
            for kind in used {
                // The pedometer's floors need the pressure a few times a second, not at the steps' rate.
                let kindRate = stream == .pedometer && kind == .pressure ? min(rate, Self.eventRate) : rate
                rates[kind] = max(rates[kind] ?? 0, kindRate)
                latencies[kind] = min(latencies[kind] ?? .infinity, patience[stream]!)
            }
        }
        // The kept history counts steps whenever it can: a chip's counter (and its activity) costs
        // nothing between walks, so it is read even while no one watches.
        if options.keepsStepHistory && options.chipFunctions {
            for kind in [SensorKind.stepCounter, .activityRecognizer] where available.contains(kind) {
                chipIntervals[kind] = min(chipIntervals[kind] ?? .infinity, Self.historyChipInterval)
            }
        }
        // Assign each kind to a device: the one carrying the most of the needed kinds, then the lowest number.
        let needed = Set(rates.keys).union(chipIntervals.keys)
        var byDevice: [DeviceNumber: Set<SensorKind>] = [:]
        for kind in needed.sorted(by: { $0.rawValue < $1.rawValue }) {
            let candidates = devices.filter { $0.kinds.contains(kind) }
            // A 2-in-1's base accelerometer says nothing of the screen: the display's is preferred.
            guard let best = candidates.max(by: { a, b in
                if a.location != b.location { return a.location == .base }
                let sa = needed.intersection(a.kinds).count, sb = needed.intersection(b.kinds).count
                return sa != sb ? sa < sb : a.number > b.number
            }) else { continue }
            byDevice[best.number, default: []].insert(kind)
        }
        // The hinge needs the base's accelerometer too, beside the display's chosen above.
        if let hingeRate = fastest[.hinge] {
            let accelerometers = devices.filter { $0.kinds.contains(.accelerometer) }
            if let base = accelerometers.first(where: { $0.location == .base }),
                accelerometers.contains(where: { $0.location == .display })
            {
                byDevice[base.number, default: []].insert(.accelerometer)
                baseAccelerometer = base.number
                rates[.accelerometer] = max(rates[.accelerometer] ?? 0, hingeRate)
            } else {
                unavailable.insert(.hinge)
            }
        }
        captures = byDevice.map { number, kinds in
            let sampledKinds = kinds.filter { !$0.isChipFunction }
            let chipInterval = kinds.compactMap { chipIntervals[$0] }.min()
            // A chip read alone runs at its interval's rate; beside sampled sensors, at theirs.
            let rate = sampledKinds.compactMap { rates[$0] }.max() ?? 1 / chipInterval!
            return Capture(
                device: number, kinds: kinds, rate: rate, latency: sampledKinds.map { latencies[$0] ?? 0 }.min() ?? 0,
                restsWhenStill: sampledKinds == [.accelerometer] && sampled.isDisjoint(with: sampledKinds) && number != baseAccelerometer,
                chipInterval: chipInterval)
        }.sorted { $0.device < $1.device }
    }
}
