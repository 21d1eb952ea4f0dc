import MotionCore
import MotionSystem
import NIOCore
import Synchronization

@testable import MotionDevices
@testable import MotionHub

/// Devices whose sensors give what the test says, on the hub's loop:
///
/// - a polled device (`CaptureMode.polled`) is read by the loop's clock at its capture's rate, the
///   first read one period after opening (a polled capture's first timer), each read giving what the
///   test set last: raw counts (`counts`, turned into SI in the device frame by the device layer's own
///   converter with the descriptor's scale, offset and mount matrix), else a reading in SI
///   (`readings`), else for an accelerometer `pose`;
/// - a buffered device (`CaptureMode.buffered`) gives only what the test feeds it (`feed`, or
///   `ScriptedHub.feed`): a sequence, a recording's samples, each with its own timestamp.
///
/// A device's chip functions (`SensorKind.isChipFunction`) are read by the hub's own `ChipWatch`
/// over a scripted chip (`ScriptedChip`): each read gives the kind's `readings` (a step counter's
/// count in x, the activity's still, walking and running percentages, on-body's 1 or 0), its events
/// come when the test pushes one (`push`), and it records its reads and its events' enables.
///
/// Each opening is recorded (`openings`) with the kinds, rate and latency the hub asked for.
package final class ScriptedSource: SensorSource {
    package let devices: [DeviceDescriptor]
    /// Each device's accelerometer reading, specific force in m/s² (device frame).
    package let pose = Mutex<[DeviceNumber: Vector3]>([:])
    /// Each other kind's reading, in its unit (a gyroscope's rate, rad/s; a magnetometer's field, µT;
    /// a barometer's pressure in x, kPa; a light's illuminance in x); the accelerometer's `pose` where none is set.
    package let readings = Mutex<[SensorKind: Vector3]>([:])
    /// Each device's raw counts by kind (x, y, z; a scalar channel's in x), as its sysfs attributes
    /// would read: these win over `readings` and `pose`.
    package let counts = Mutex<[DeviceNumber: [SensorKind: Vector3]]>([:])
    /// The timestamps (ns) each device stamps its next reads with, first first, in place of the loop's
    /// clock: a device's own clock, which may say anything (then the loop's again).
    package let stamps = Mutex<[DeviceNumber: [Int64]]>([:])
    /// What the hub asked of each opening, first first.
    package let openings = Mutex<[Opening]>([])
    /// Each device's latest opening, while it runs.
    private let streams = Mutex<[DeviceNumber: Stream]>([:])
    /// Each device's latest chip watch and its chip, while it runs.
    private let chips = Mutex<[DeviceNumber: (watch: ChipWatch, chip: ScriptedChip)]>([:])
    /// Why a device's chip events cannot be had (the chip is then read at its interval only).
    package let chipEventsProblem = Mutex<[DeviceNumber: DeviceError]>([:])
    /// Whether chip functions may be used (motiond.conf's `chip_functions`).
    package let usesChipFunctions: Bool

    /// One opening of a device: what the hub asked for.
    package struct Opening: Sendable, Hashable {
        package var device: DeviceNumber
        package var kinds: Set<SensorKind>
        /// Hz, as asked.
        package var rate: Double
        /// Hz, as the device runs: the lowest it offers at or above `rate` (`DeviceDescriptor.captureRate`).
        package var deviceRate: Double
        /// Seconds a sample may wait before it is read.
        package var latency: Double
        package var restsWhenStill: Bool
        /// Seconds between reads of its chip functions while they change (nil: none).
        package var chipInterval: Double? = nil
    }

    /// `usesChipFunctions`: motiond.conf's `chip_functions`.
    package init(devices: [DeviceDescriptor], usesChipFunctions: Bool = true) {
        self.devices = devices
        self.usesChipFunctions = usesChipFunctions
    }

    package func listDevices() throws -> DeviceListing { DeviceListing(devices: devices, problems: []) }

    /// As the hardware's: sampled kinds scripted, chip functions read by a `ChipWatch` over a
    /// `ScriptedChip` (events pushed by the test), both a `CompositeStream`.
    package func open(
        _ device: DeviceDescriptor, kinds: [SensorKind], rate: Double, latency: Double, restsWhenStill: Bool, chipInterval: Double?,
        eventLoop: any EventLoop
    ) throws -> any SensorStream {
        let deviceRate = device.captureRate(for: rate, in: device.captureMode)
        openings.withLock {
            $0.append(Opening(
                device: device.number, kinds: Set(kinds), rate: rate, deviceRate: deviceRate, latency: latency, restsWhenStill: restsWhenStill,
                chipInterval: chipInterval))
        }
        let chipKinds = Set(kinds.filter(\.isChipFunction))
        let sampledKinds = kinds.filter { !$0.isChipFunction }
        var watch: ChipWatch?
        if !chipKinds.isEmpty {
            let chip = ScriptedChip(source: self, device: device, kinds: chipKinds, eventLoop: eventLoop)
            let made = ChipWatch(
                device: device.number, kinds: chipKinds, interval: chipInterval ?? CapturePlan.eventChipInterval, eventLoop: eventLoop,
                delivery: .injected, opensOffLoop: false, deviceExists: { [weak chip] in chip?.vanished == false }, open: { chip })
            chips.withLock { $0[device.number] = (made, chip) }
            watch = made
        }
        guard !sampledKinds.isEmpty else { return watch! }
        let stream = Stream(source: self, device: device, kinds: sampledKinds, rate: deviceRate, eventLoop: eventLoop)
        streams.withLock { $0[device.number] = stream }
        return watch.map { CompositeStream(sampled: stream, chip: $0) } ?? stream
    }

    /// `device`'s chip, as last opened (open or closed since).
    package func chip(_ device: DeviceNumber) -> ScriptedChip? { chips.withLock { $0[device]?.chip } }

    /// `device`'s chip watch, as last opened.
    package func chipWatch(_ device: DeviceNumber) -> ChipWatch? { chips.withLock { $0[device]?.watch } }

    /// `device`'s chip says `kind` happened (an IIO event), on the loop: its sample (`value` at
    /// `timestamp`) where the event carries its value (significant motion, on-body), else a read now.
    /// Returns whether the chip was open with its events enabled for `kind` (a disabled event never comes).
    @discardableResult
    package func push(_ kind: SensorKind, value: Double? = nil, at timestamp: Int64, to device: DeviceNumber) -> Bool {
        guard let (watch, chip) = chips.withLock({ $0[device] }), chip.isOpen, chip.eventsEnabled(kind) else { return false }
        let sample = value.map { SensorSample(kind: kind, device: device, timestamp: timestamp, vector: Vector3(x: $0, y: 0, z: 0)) }
        watch.take([ChipEvent(kind: kind, sample: sample)])
        return true
    }

    /// How many times `device` was opened.
    package func openingCount(of device: DeviceNumber) -> Int { openings.withLock { $0.count { $0.device == device } } }

    /// `device`'s latest opening, if it is running now.
    package func running(_ device: DeviceNumber) -> Opening? {
        guard streams.withLock({ $0[device]?.isRunning }) == true || chips.withLock({ $0[device]?.chip.isOpen }) == true else { return nil }
        return openings.withLock { $0.last { $0.device == device } }
    }

    /// Hands `reads` to `device`'s capture, each read's samples of the kinds it was opened for, then the
    /// end of the read; on the loop. Returns whether it runs (a closed device takes nothing).
    package func feed(_ reads: [[SensorSample]], to device: DeviceNumber) -> Bool {
        // A device of chip functions alone: each read's samples are events that carry their value.
        if let (watch, chip) = chips.withLock({ $0[device] }), chip.isOpen, streams.withLock({ $0[device]?.isRunning }) != true {
            for read in reads { watch.take(read.filter { $0.device == device }.map { ChipEvent(kind: $0.kind, sample: $0) }) }
            return true
        }
        guard let stream = streams.withLock({ $0[device] }), stream.isRunning else { return false }
        for read in reads { stream.deliver(read) }
        return true
    }

    /// `device`'s capture ends as one does when its device is unplugged (before udev's listing says so).
    package func vanish(_ device: DeviceNumber) { streams.withLock { $0[device] }?.end(.deviceVanished(device: device.sysname)) }

    /// `device`'s capture tells the hub `event` (a re-arm, a change of mode), as a capture read on the loop does.
    package func tell(_ event: SensorEvent, from device: DeviceNumber) { streams.withLock { $0[device] }?.tell(event) }

    /// `device`'s capture ends with `error` (its reads kept failing), on the loop.
    package func fail(_ device: DeviceNumber, with error: DeviceError) { streams.withLock { $0[device] }?.end(error) }

    /// No: the test lists the devices itself (`ScriptedHub.list`). A hub part over this source in the
    /// test process would otherwise start a udev monitor, which umockdev's preload puts inside the
    /// testbed of whichever Hardware test runs beside it: that testbed's teardown then aborts the whole
    /// test process ("umockdev-utils.vala:16: cannot remove /tmp/umockdev.E509Z3: Directory not empty",
    /// a CI run of this stop, beside ConnectionTests' in-process server with its "udev monitor" thread).
    package var followsHotPlug: Bool { false }

    /// The devices the hub asked to rebind (`SensorSource.rebind`), in order.
    package let rebound = Mutex<[DeviceNumber]>([])

    package func rebind(_ device: DeviceDescriptor) throws(DeviceError) -> String? {
        rebound.withLock { $0.append(device.number) }
        return "\(device.name) on its driver"
    }

    package func readingMode(of device: DeviceDescriptor) -> ReadingMode {
        !device.kinds.isEmpty && device.kinds.allSatisfy(\.isChipFunction) ? .events : ReadingMode(device.captureMode)
    }

    /// What a polled read of `kind` on `device` gives now, or nil for a reading no sensor of its kind
    /// can produce (the device layer drops it).
    func reading(_ kind: SensorKind, of device: DeviceDescriptor, at timestamp: Int64) -> SensorSample? {
        if let raw = counts.withLock({ $0[device.number]?[kind] }) {
            return device.sample(kind, counts: raw, at: timestamp)
        }
        let force = pose.withLock { $0[device.number] } ?? Vector3(x: 0, y: 0, z: Units.standardGravity)
        let value = kind == .accelerometer ? force : readings.withLock { $0[kind] } ?? force
        return SensorSample(kind: kind, device: device.number, timestamp: timestamp, vector: value)
    }

    /// One opening of a device: a repeated read on the loop (polled), or what the test feeds (buffered).
    final class Stream: SensorStream {
        let rate: Double
        let readingMode: ReadingMode
        private let source: ScriptedSource
        private let device: DeviceDescriptor
        private let kinds: [SensorKind]
        private let eventLoop: any EventLoop
        private let reads = Mutex<RepeatedTask?>(nil)
        private let handler = Mutex<(@Sendable (SensorEvent) -> Void)?>(nil)

        init(source: ScriptedSource, device: DeviceDescriptor, kinds: [SensorKind], rate: Double, eventLoop: any EventLoop) {
            (self.source, self.device, self.kinds, self.rate, self.eventLoop) = (source, device, kinds, rate, eventLoop)
            readingMode = ReadingMode(device.captureMode)
        }

        var isRunning: Bool { handler.withLock { $0 != nil } }

        func start(handler: @escaping @Sendable (SensorEvent) -> Void) {
            self.handler.withLock { $0 = handler }
            guard device.captureMode == .polled else { return }
            let period = TimeAmount.nanoseconds(Int64(1e9 / rate))
            let (source, device, kinds, eventLoop) = (source, device, kinds, eventLoop)
            let task = eventLoop.scheduleRepeatedTask(initialDelay: period, delay: period) { _ in
                let scripted = source.stamps.withLock { $0[device.number]?.isEmpty == false ? $0[device.number]!.removeFirst() : nil }
                let t = scripted ?? Int64(eventLoop.now.uptimeNanoseconds)
                for kind in kinds {
                    if let sample = source.reading(kind, of: device, at: t) { handler(.sample(sample)) }
                }
                handler(.readComplete)
            }
            reads.withLock { $0 = task }
        }

        /// Hands one read's samples of this opening's kinds to the hub, then the end of the read.
        func deliver(_ read: [SensorSample]) {
            guard let handler = handler.withLock({ $0 }) else { return }
            for sample in read where kinds.contains(sample.kind) && sample.device == device.number { handler(.sample(sample)) }
            handler(.readComplete)
        }

        func stop() {
            reads.withLock { $0?.cancel() }
            handler.withLock { $0 = nil }
        }

        func tell(_ event: SensorEvent) { handler.withLock { $0 }?(event) }

        /// Stops reading and says why the capture ended (on the loop, as a capture read there does).
        func end(_ error: DeviceError) {
            let handler = handler.withLock { $0 }
            stop()
            handler?(.ended(error))
        }
    }
}

/// A chip's functions as the test scripts them: each read gives the source's `readings` of its
/// kinds, stamped with the loop's clock; it records its reads and each change of its events.
package final class ScriptedChip: ChipDevice, @unchecked Sendable {
    // @unchecked: touched on the hub's loop, read by the test between its turns.
    package let kinds: Set<SensorKind>
    package var eventsProblem: DeviceError? { source.chipEventsProblem.withLock { $0[device.number] } }
    private let source: ScriptedSource
    private let device: DeviceDescriptor
    private let eventLoop: any EventLoop
    /// The loop's times of each read, ns.
    package private(set) var reads: [Int64] = []
    /// Each change of an event's enable, in order (the opening's enables not included).
    package private(set) var switches: [(kind: SensorKind, enabled: Bool)] = []
    /// The kinds whose events are enabled now.
    private var enabled: Set<SensorKind>
    package private(set) var isOpen = true
    /// Set by the test: the device is gone (reads fail, and the watch ends).
    package var vanished = false
    /// Set by the test: reads fail with this error.
    package var failure: DeviceError?

    init(source: ScriptedSource, device: DeviceDescriptor, kinds: Set<SensorKind>, eventLoop: any EventLoop) {
        (self.source, self.device, self.kinds, self.eventLoop) = (source, device, kinds, eventLoop)
        enabled = kinds
    }

    /// Whether `kind`'s events are enabled now (never where they cannot be had).
    package func eventsEnabled(_ kind: SensorKind) -> Bool { isOpen && eventsProblem == nil && enabled.contains(kind) }

    package func takeEventDescriptor() -> OwnedDescriptor? { nil }

    package func read(into samples: inout [SensorSample]) throws(DeviceError) {
        let t = Int64(eventLoop.now.uptimeNanoseconds)
        reads.append(t)
        if vanished { throw .deviceVanished(device: device.number.sysname) }
        if let failure { throw failure }
        // Significant motion has no value to read: only its event says it.
        for kind in kinds.sorted(by: { $0.rawValue < $1.rawValue }) where kind != .significantMotion {
            guard let value = source.readings.withLock({ $0[kind] }) else { continue }
            samples.append(SensorSample(kind: kind, device: device.number, timestamp: t, vector: value))
        }
    }

    package func setEvents(of kind: SensorKind, enabled on: Bool) throws(DeviceError) {
        switches.append((kind, on))
        if on { enabled.insert(kind) } else { enabled.remove(kind) }
    }

    /// None: the test pushes decoded events (`ScriptedSource.push`).
    package func event(_ record: IIOEventRecord, device: DeviceNumber, at t: Int64) -> ChipEvent? { nil }

    package func close() { isOpen = false }
}
