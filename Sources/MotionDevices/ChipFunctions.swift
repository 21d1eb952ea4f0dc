import MotionCore
import MotionSystem

// API as design65.md §1 has it, with two additions: `eventKinds` (the kinds whose events were
// enabled, so that a watcher knows which to read by interval only) and `StepCounterWidth` as the
// counter's width. `setEvents` does nothing when the events could not be had (`eventsProblem`).
// A step-counter sample is the count modulo the counter's width as x and that modulus as y
// (`SensorKind.stepCounter`), not the raw signed reading the design first said.

/// A step counter's width as its driver reports it, for the caller to widen the count across
/// wrap-arounds.
public enum StepCounterWidth: Sendable, Hashable {
    /// bma400: 3 bytes read with `get_unaligned_le24`, 0 to 16 777 215 (bma400_core.c:797–812, Linux 6.12).
    case unsigned24
    /// bmi270/bmi260: `sign_extend32(le16, 15)`, −32 768 to 32 767, negative past 32 767
    /// (`bmi270_read_steps`, Linux 6.17's bmi270_core.c).
    case signed16

    /// Bits of the counter.
    public var bits: Int {
        switch self {
        case .unsigned24: 24
        case .signed16: 16
        }
    }

    /// Whether the driver reports it sign-extended.
    public var isSigned: Bool { self == .signed16 }

    /// The width of the counter of the driver named `name` (the IIO `name` attribute), nil when not known.
    public static func of(driver name: String) -> StepCounterWidth? {
        switch name {
        case "bma400": .unsigned24
        case "bmi270", "bmi260": .signed16
        default: nil
        }
    }
}

/// A chip's own functions on one device, read from sysfs: its step counter, its activity classes, its
/// significant motion and its on-body detection (`SensorKind.isChipFunction`). Modelled on
/// `MotionEvents`: opening turns them on and enables their IIO events, closing puts the events back.
///
/// The chip's events share the device's one event descriptor with the accelerometer's motion events
/// (`MotionEvents`): the kernel hands it out once (`iio_event_getfd`, industrialio-event.c:205–206,
/// Linux 6.12), so whichever opens second gets `EBUSY` and does without (here: `eventsProblem`, and
/// the caller reads at an interval; there: adaptive polling).
///
/// Opened off the event loop (sysfs writes and the character device block), then used and closed on
/// one thread at a time.
public final class ChipFunctions: @unchecked Sendable {
    // @unchecked: opened off the loop, then used and closed on the loop only (as `MotionEvents`).
    /// `iio:deviceN`.
    public let device: String
    /// The chip functions opened (a subset of the device's).
    public let kinds: Set<SensorKind>
    /// The kinds whose events were enabled at open (empty when `eventsProblem` says why not).
    public let eventKinds: Set<SensorKind>
    /// The step counter's width where the driver is known (bma400, bmi270/bmi260); nil otherwise
    /// or without a step counter.
    public let stepCounterWidth: StepCounterWidth?
    /// Why the events cannot be had (`noChipEvents`, `attributeUnwritable`, `eventsRefused`), nil when
    /// they can: then every kind is read at an interval only.
    public private(set) var eventsProblem: DeviceError?

    private let sysfs: Sysfs
    private let number: DeviceNumber
    private var restorer: AttributeRestorer
    private var descriptor: OwnedDescriptor?

    /// The value attributes of each readable kind, x, y, z (`nil`: the chip has no such channel).
    private static let valueAttributes: [(SensorKind, [[String]])] = [
        (.stepCounter, [["in_steps_input"]]),
        // bma400 names still, walking, running (bma400_core.c:410–412, Linux 6.12); jogging is running.
        (.activityRecognizer, [["in_activity_still_input"], ["in_activity_walking_input"],
            ["in_activity_running_input", "in_activity_jogging_input"]]),
        (.onBody, [["in_proximity_raw"]]),
    ]

    /// The enable attribute of each kind's event: `in_<type>[_<modifier>]_<event type>[_<direction>]_en`,
    /// no direction for `IIO_EV_DIR_NONE` (industrialio-event.c:399–407, Linux 6.12).
    /// - steps, CHANGE/NONE, separate: bma400_core.c:213–217 (6.12); bmi270's shared by type, the same name.
    /// - activity, CHANGE/NONE, shared by type: bma400_core.c:219–223 (6.12).
    /// - activity still, CHANGE/FALLING, separate: cros_ec_activity.c:40–47 (torvalds/linux 34120f7f).
    /// - proximity, CHANGE/EITHER, separate: cros_ec_activity.c:49–55 (34120f7f).
    static let eventEnables: [(SensorKind, String)] = [
        (.stepCounter, "events/in_steps_change_en"),
        (.activityRecognizer, "events/in_activity_change_en"),
        (.significantMotion, SignificantMotionDriver.enableAttribute),
        (.onBody, "events/in_proximity_change_either_en"),
    ]

    /// bmi270's step watermark, in steps: the smallest it takes (`BMI270_STEP_COUNTER_FACTOR`, 20; a
    /// write is stored divided by 20) — an event every 20 steps.
    static let stepWatermark = 20

    /// Opens `kinds` (chip functions of `device`): writes `in_steps_en` = 1 for the step counter
    /// (never 0 again: the count must survive, and bmi270 ignores 0 once counting), enables each
    /// kind's event (bmi270: with `events/in_steps_change_value` = 20) and takes the event descriptor
    /// (`IIO_GET_EVENT_FD_IOCTL` on `/dev/iio:deviceN`). Blocks: call it off an event loop.
    ///
    /// Events that cannot be had are no error: `eventsProblem` says why.
    ///
    /// - Throws: `kindUnavailable` for a kind that is no chip function of the device;
    ///   `attributeUnwritable` when the step counter cannot be turned on; `deviceVanished`.
    public convenience init(device: DeviceDescriptor, kinds: Set<SensorKind>) throws(DeviceError) {
        try self.init(device: device.number.sysname, kinds: kinds, sysfs: Sysfs(), deviceNodeDirectory: "/dev", name: device.name)
    }

    /// Opens under `sysfs`'s root and `deviceNodeDirectory` (tests); `name` is the driver's, read from
    /// the `name` attribute when not given.
    init(device: String, kinds: Set<SensorKind>, sysfs: Sysfs, deviceNodeDirectory: String, name: String? = nil) throws(DeviceError) {
        self.device = device
        self.kinds = kinds
        self.sysfs = sysfs
        number = DeviceNumber(sysname: device) ?? DeviceNumber(-1)
        restorer = AttributeRestorer(sysfs: sysfs, device: device)
        guard sysfs.deviceExists(device) else { throw .deviceVanished(device: device) }
        for kind in kinds.sorted(by: { $0.index < $1.index }) where !Self.has(kind, device: device, sysfs: sysfs) {
            throw .kindUnavailable(device: device, kind: kind.rawValue)
        }
        let driverName = name ?? (try? sysfs.readIfPresent(device: device, attribute: "name").get())?.map { String($0.trimmingWhitespace) } ?? ""
        stepCounterWidth = kinds.contains(.stepCounter) ? StepCounterWidth.of(driver: driverName) : nil

        var eventKinds: Set<SensorKind> = []
        // A counter without an enable (none in Linux 6.12 has none) counts already.
        if kinds.contains(.stepCounter), let enabled = try sysfs.readIfPresent(device: device, attribute: "in_steps_en").get(),
            enabled.trimmingWhitespace != "1"
        {
            try sysfs.write(device: device, attribute: "in_steps_en", value: "1").get()
        }
        var firstFailure: DeviceError?
        if kinds.contains(.stepCounter), sysfs.exists(device: device, attribute: "events/in_steps_change_value") {
            do throws(DeviceError) {
                try restorer.set("events/in_steps_change_value", to: "\(Self.stepWatermark)")
            } catch {
                firstFailure = error
            }
        }
        // In this order: bmi270 refuses its watermark's enable before counting is on (above).
        for (kind, attribute) in Self.eventEnables where kinds.contains(kind) && sysfs.exists(device: device, attribute: attribute) {
            do throws(DeviceError) {
                try restorer.set(attribute, to: "1")
                eventKinds.insert(kind)
            } catch {
                firstFailure = firstFailure ?? error
            }
        }
        if eventKinds.isEmpty {
            eventsProblem = firstFailure ?? .noChipEvents(device: device)
        } else {
            do throws(DeviceError) {
                descriptor = try MotionEvents.eventDescriptor(of: device, deviceNodeDirectory: deviceNodeDirectory)
            } catch {
                eventsProblem = error
            }
            if eventsProblem != nil {
                restorer.restoreAll()
                eventKinds = []
            }
        }
        self.eventKinds = eventKinds
    }

    deinit { close() }

    /// Whether `device` has `kind` as a chip function: its value file, or significant motion's event.
    private static func has(_ kind: SensorKind, device: String, sysfs: Sysfs) -> Bool {
        if kind == .significantMotion { return sysfs.exists(device: device, attribute: SignificantMotionDriver.enableAttribute) }
        guard let attributes = valueAttributes.first(where: { $0.0 == kind })?.1 else { return false }
        return attributes.joined().contains { sysfs.exists(device: device, attribute: $0) }
    }

    /// Hands the event descriptor to its reader (an event loop's channel); nil once taken, or when
    /// `eventsProblem` says why there is none.
    public func takeEventDescriptor() -> OwnedDescriptor? {
        descriptor.take()
    }

    /// Appends the current value of each opened readable kind to `samples`, stamped with
    /// `Syscall.monotonicNanoseconds()` at the read: the step counter's count in [0, 2^bits) as x and
    /// 2^bits as y (`SensorKind.stepCounter`; bmi270's signed 16 bits taken mod 2^16; y 0 where the
    /// width is not known), the
    /// activity classes' percentages (x still, y walking, z running; a class the chip does not tell
    /// reads 0), on-body as 1 on the body and 0 off (1 − `in_proximity_raw`). Significant motion has no
    /// value: only its event.
    ///
    /// - Throws: `attributeMalformed` for a value that is no integer (`abc`, empty); `deviceVanished`
    ///   when the device is gone; `attributeUnreadable` for a read that failed otherwise.
    public func read(into samples: inout [SensorSample]) throws(DeviceError) {
        let now = Syscall.monotonicNanoseconds()
        for (kind, components) in Self.valueAttributes where kinds.contains(kind) {
            var vector = Vector3.zero
            for (c, candidates) in components.enumerated() {
                var value: Double? = nil
                for attribute in candidates {
                    guard let v = try readIfPresent(attribute) else { continue }
                    value = max(value ?? v, v)
                }
                // The one value of a step counter or a body detector must be there; an activity
                // class may be missing.
                if value == nil, kind != .activityRecognizer {
                    throw .attributeUnreadable(device: device, attribute: candidates[0], errno: ErrnoValue.noSuchFile)
                }
                vector[Axis(rawValue: c)!] = value ?? 0
            }
            if kind == .onBody { vector.x = vector.x == 0 ? 1 : 0 }
            if kind == .stepCounter {
                // The count in [0, modulus) beside its modulus (`SensorKind.stepCounter`): the gait
                // stage tells a wrap from a reset by it; bmi270's signed reading is taken mod 2^16.
                let modulus = stepCounterWidth.map { Double(1 << $0.bits) } ?? 0
                if modulus > 0 { vector.x -= modulus * (vector.x / modulus).rounded(.down) }
                vector.y = modulus
            }
            samples.append(SensorSample(kind: kind, device: number, timestamp: now, vector: vector))
        }
    }

    /// The integer in `attribute`, nil when the file is not there (a channel the chip lacks). Read
    /// into a stack buffer: a file opened, read from its start and closed, allocating nothing.
    private func readIfPresent(_ attribute: String) throws(DeviceError) -> Double? {
        if sysfs.network != nil {
            guard sysfs.exists(device: device, attribute: attribute) else { return nil }
            return try integer(sysfs.read(device: device, attribute: attribute).get(), attribute: attribute)
        }
        let path = "\(sysfs.deviceDirectory(device))/\(attribute)"
        let read = withUnsafeTemporaryAllocation(byteCount: 64, alignment: 8) { buffer -> Result<Double?, DeviceError> in
            let count: Int
            do throws(Errno) {
                let file = try Syscall.openReadOnly(path)
                count = try Syscall.readFromStart(file.rawValue, into: buffer).get()
            } catch {
                if !sysfs.deviceExists(device) { return .failure(.deviceVanished(device: device)) }
                if error.rawValue == ErrnoValue.noSuchFile { return .success(nil) }
                return .failure(.attributeUnreadable(device: device, attribute: attribute, errno: error.rawValue))
            }
            guard let v = AttributeParser.number(UnsafeRawBufferPointer(rebasing: buffer[0..<count])), v == v.rounded() else {
                return .failure(.attributeMalformed(
                    device: device, attribute: attribute, value: String(decoding: buffer[0..<count], as: UTF8.self), expected: "an integer"))
            }
            return .success(v)
        }
        return try read.get()
    }

    private func integer(_ text: String, attribute: String) throws(DeviceError) -> Double {
        guard let v = AttributeParser.number(text), v == v.rounded() else {
            throw .attributeMalformed(device: device, attribute: attribute, value: text, expected: "an integer")
        }
        return v
    }

    /// Turns `kind`'s event on or off (a walk under way turns the step events off so that the daemon
    /// is not woken per step; significant motion is armed only while watched). The value it had at
    /// open is put back at `close`. Nothing when the events could not be had (`eventsProblem`) or the
    /// kind has none.
    ///
    /// - Throws: `kindUnavailable` for a kind not opened; `attributeUnwritable` when the write fails.
    public func setEvents(of kind: SensorKind, enabled: Bool) throws(DeviceError) {
        guard kinds.contains(kind) else { throw .kindUnavailable(device: device, kind: kind.rawValue) }
        guard eventsProblem == nil, eventKinds.contains(kind), let attribute = Self.eventEnables.first(where: { $0.0 == kind })?.1 else { return }
        try restorer.set(attribute, to: enabled ? "1" : "0")
    }

    /// `enum iio_chan_type` (include/uapi/linux/iio/types.h:15–35, Linux 6.12; IIO_VOLTAGE = 0).
    enum ChannelType {
        static let proximity: UInt8 = 8  // types.h:23
        static let activity: UInt8 = 19  // types.h:34
        static let steps: UInt8 = 20  // types.h:35
    }

    /// `enum iio_event_type` and `enum iio_event_direction` (types.h:112–130, Linux 6.12).
    enum Event {
        static let change: UInt8 = 5  // IIO_EV_TYPE_CHANGE, types.h:118
        static let rising: UInt8 = 1  // IIO_EV_DIR_RISING, types.h:125
        static let falling: UInt8 = 2  // IIO_EV_DIR_FALLING, types.h:126
        static let none: UInt8 = 3  // IIO_EV_DIR_NONE, types.h:127
    }

    /// Which chip function an event record is about, nil for none (an accelerometer's motion, a tap).
    /// By the codes the drivers push:
    /// - steps CHANGE/NONE: bma400_core.c:1667–1671 (6.12), `IIO_MOD_EVENT_CODE(IIO_STEPS, 0,
    ///   IIO_NO_MOD, …)`; bmi270 `bmi270_irq_thread_handler`, `IIO_UNMOD_EVENT_CODE(IIO_STEPS, 0, …)`.
    /// - activity CHANGE/NONE, modified by the class (bma400_act_to_mod, 846–858; IIO_NO_MOD when unknown): bma400_core.c:1679–1684 (6.12).
    /// - activity CHANGE/FALLING, unmodified: significant motion, cros_ec_activity.c
    ///   `cros_ec_activity_push_data` (34120f7f).
    /// - proximity CHANGE/FALLING (near) or RISING (far): on-body, the same function.
    public static func kind(of record: IIOEventRecord) -> SensorKind? {
        guard record.type == Event.change else { return nil }
        switch (record.channelType, record.direction) {
        case (ChannelType.steps, Event.none): return .stepCounter
        case (ChannelType.activity, Event.none): return .activityRecognizer
        case (ChannelType.activity, Event.falling): return .significantMotion
        case (ChannelType.proximity, Event.falling), (ChannelType.proximity, Event.rising): return .onBody
        default: return nil
        }
    }

    /// The sample an event means by itself, stamped `t` (the caller's choice: the read time, or the
    /// event's own converted to CLOCK_MONOTONIC): significant motion 1; on-body 1 for FALLING (the
    /// body near), 0 for RISING (far). Nil for an event that only says "read me" (steps, activity).
    public static func sample(of record: IIOEventRecord, device: DeviceNumber, at t: Int64) -> SensorSample? {
        switch kind(of: record) {
        case .significantMotion?:
            return SensorSample(kind: .significantMotion, device: device, timestamp: t, vector: Vector3(x: 1, y: 0, z: 0))
        case .onBody?:
            return SensorSample(kind: .onBody, device: device, timestamp: t, vector: Vector3(x: record.direction == Event.falling ? 1 : 0, y: 0, z: 0))
        default:
            return nil
        }
    }

    /// Puts back the event enables it changed (not `in_steps_en`: the count must go on) and closes
    /// the descriptor if nobody took it. Idempotent.
    public func close() {
        descriptor = nil
        restorer.restoreAll()
    }
}
