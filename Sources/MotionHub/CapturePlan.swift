import MotionCore
import MotionDevices
import MotionWire

/// Which sensors to run, on which devices, at what rate, for what the clients watch right now.
///
/// A sensor runs only while some stream needs it (no watcher: nothing open, no wake-ups), at the
/// fastest rate any client asks for; event streams sample at `eventRate`. `motion` needs the
/// accelerometer, and uses the gyroscope and the magnetometer where there are (else a sensor hub's
/// compass, for the heading); `orientation` needs the accelerometer. Where one device carries several
/// of the kinds needed (an IMU), it is preferred, so that their samples share timestamps.
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
        return !kinds.isDisjoint(with: stream.descriptor.required)
    }

    /// Why the streams in `unavailable` cannot be had, one sentence each: "motion needs an
    /// accelerometer, and this machine has none".
    static func reasons(for streams: Set<StreamKind>, devices: [DeviceDescriptor]) -> String {
        let available = Set(devices.flatMap(\.kinds))
        return streams.sorted { $0.rawValue < $1.rawValue }.map { stream in
            if stream == .hinge && available.contains(.accelerometer) {
                return "hinge needs two accelerometers, one in the display and one in the base"
            }
            let missing = stream.descriptor.required.subtracting(available).map(\.rawValue).sorted()
            return "\(stream.rawValue) needs a sensor this machine does not have: \(missing.joined(separator: ", "))"
        }.joined(separator: "; ")
    }

    /// What `devices` cannot give, each with its reason (`nil`: everything can be had).
    static func unavailable(on devices: [DeviceDescriptor]) -> StatusReply.Unavailable? {
        var streams: [String: String] = [:]
        for stream in StreamKind.allCases {
            let plan = CapturePlan(demands: [Demand(stream: stream, interval: Request.Watch.defaultInterval)], devices: devices)
            if plan.unavailable.contains(stream) { streams[stream.rawValue] = reasons(for: [stream], devices: devices) }
        }
        let kinds = Set(devices.flatMap(\.kinds))
        var motion = kinds.contains(.accelerometer)
            ? UnavailableOutputs.missing(gyroscope: kinds.contains(.gyroscope), magnetometer: kinds.contains(.magnetometer)) : []
        if kinds.contains(.compass) { motion.remove(.heading) }
        return streams.isEmpty && motion.isEmpty ? nil : StatusReply.Unavailable(streams: streams, motion: motion)
    }

    init(demands: [Demand], devices: [DeviceDescriptor]) {
        var rates: [SensorKind: Double] = [:]
        let available = Set(devices.flatMap(\.kinds))
        // Many clients ask for few streams: the fastest rate per stream is all that matters.
        var fastest: [StreamKind: Double] = [:]
        var patience: [StreamKind: Double] = [:]
        for demand in demands {
            let sampling = Self.sampling(of: demand)
            fastest[demand.stream] = max(fastest[demand.stream] ?? 0, sampling.rate)
            patience[demand.stream] = min(patience[demand.stream] ?? .infinity, sampling.latency)
        }
        var latencies: [SensorKind: Double] = [:]
        // Kinds some stream other than an event stream reads: they keep their rate at rest.
        var sampled: Set<SensorKind> = []
        for (stream, rate) in fastest {
            let (required, optional) = (stream.descriptor.required, stream.descriptor.optional)
            guard required.isSubset(of: available) else {
                unavailable.insert(stream)
                continue
            }
            var used = required.union(optional.intersection(available))
            if used.contains(.magnetometer) { used.remove(.compass) }
            if stream.descriptor.sampling != .events { sampled.formUnion(used) }
            for kind in used {
                // The pedometer's floors need the pressure a few times a second, not at the steps' rate.
                let kindRate = stream == .pedometer && kind == .pressure ? min(rate, Self.eventRate) : rate
                rates[kind] = max(rates[kind] ?? 0, kindRate)
                latencies[kind] = min(latencies[kind] ?? .infinity, patience[stream]!)
            }
        }
        // Assign each kind to a device: the one carrying the most of the needed kinds, then the lowest number.
        let needed = Set(rates.keys)
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
            Capture(
                device: number, kinds: kinds, rate: kinds.map { rates[$0]! }.max()!, latency: kinds.map { latencies[$0] ?? 0 }.min()!,
                restsWhenStill: kinds == [.accelerometer] && sampled.isDisjoint(with: kinds) && number != baseAccelerometer)
        }.sorted { $0.device < $1.device }
    }
}
