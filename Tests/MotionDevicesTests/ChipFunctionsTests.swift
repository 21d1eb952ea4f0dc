import Foundation
import MotionCore
import MotionSystem
import CLibIIO
import TestSupport
import Testing

@testable import MotionDevices

#if canImport(Glibc)
import Glibc
#endif

// The fixtures, attribute by attribute, as the kernel's drivers make them (Linux 6.12.118 where the
// code is there: /tmp/ks/x/usr/src/linux-source-6.12; newer code by commit or patch):
//
// wrist-bma400-steps (drivers/iio/accel/bma400_core.c, 6.12):
//   name "bma400": the bus id's name (1726; bma400_i2c.c:27,31). in_accel_{x,y,z}_raw, shared
//   in_accel_scale, in_accel_sampling_frequency, in_accel_oversampling_ratio (BMA400_ACC_CHANNEL,
//   353–375: RAW separate, SAMP_FREQ | SCALE | OVERSAMPLING_RATIO shared by type); in_mount_matrix
//   (IIO_SHARED_BY_DIR, 208–211); scan elements accel 0–2 le:s12/16>>0 (365–371), temp 3 le:s8/8>>0
//   (390–401), timestamp 4 (413); in_steps_input and in_steps_en, scan_index -1 (402–408); in_activity_
//   {still,walking,running}_input, scan_index -1 (376–384, 410–412); events/in_steps_change_en
//   (213–217: CHANGE, NONE, separate), events/in_activity_change_en (219–223: shared by type), the
//   accel's mag and gesture events (225–257); trigger "%s-dev%d" (1734). 16777210: a 24-bit count
//   (get_unaligned_le24, 797–812) near its top.
// handheld-bmi270-steps (drivers/iio/imu/bmi270/bmi270_core.c of a 2025 mainline mirror,
//   /work/notes/kernel/bmi270_core.c@9b44fff, Kingxukai/linux 9b44fff6): accel and anglvel raw with
//   shared scale and sampling frequency, scan 0–5 le:s16/16>>0, timestamp 6 (942–1002); in_temp_raw/
//   scale/offset, scan_index -1 (987–993); in_steps_en, in_steps_input, scan_index -1 (994–1000);
//   events/in_steps_change_en and _value, shared by type (926–930); trigger "%s-trig-%d" (1091).
//   -32536: what `sign_extend32(le16, 15)` gives for 33000 steps (398–410).
// chromebook-cros-ec-activity (cros_ec_activity.c, torvalds/linux 34120f7f, Message-Id
//   20250604053903.1376465-1-gwendal@google.com): name "cros-ec-activity" (DRV_NAME, line 27);
//   in_proximity_raw, 0 for a body near (body detection, RAW); events/in_activity_still_change_falling_en
//   (single shot, 40–47) and events/in_proximity_change_either_en (49–55). No buffer files: the
//   channels' scan_type is left zero (data comes as events only).
// laptop-human-presence (hid-sensor-prox.c after 4eba4d92906c, /work/notes/kernel/hid-sensor-prox.c@9b44fff):
//   name "prox"; PROX_CHANNEL (49–61): in_proximity0_* (presence), in_proximity1_* (distance), raw,
//   and in_attention_input (PROCESSED, not indexed), each with separate offset, scale, sampling
//   frequency and hysteresis; every channel a scan element at its position (252), s<size×8>/32
//   (prox_adjust_channel_bit_mask, 71–79); attention ×100 in sysfs and buffer alike (112–114, 211–216).
// laptop-human-presence-6.12 (drivers/iio/light/hid-sensor-prox.c, 6.12): one channel, not indexed,
//   RAW separate, OFFSET | SCALE | SAMP_FREQ | HYSTERESIS shared by type (34–44): in_proximity_raw,
//   in_proximity_scale, _offset, _sampling_frequency, _hysteresis; s8/32 (48–55); name "prox" (241, 282).

/// `_IOR('i', 0x90, int)` (include/uapi/linux/iio/events.h:27, Linux 6.12).
private let getEventDescriptor: UInt = 0x8004_6990

/// `IIO_EVENT_CODE(chan_type, diff 0, modifier, direction, type, chan, chan1 0, chan2 0)`
/// (include/linux/iio/events.h:24–28, Linux 6.12), as the drivers' `IIO_MOD_EVENT_CODE` (41) and
/// `IIO_UNMOD_EVENT_CODE` (53, modifier 0) make it.
private func eventCode(chanType: UInt64, modifier: UInt64 = 0, type: UInt64, direction: UInt64, channel: UInt64 = 0) -> UInt64 {
    type << 56 | direction << 48 | modifier << 40 | chanType << 32 | channel
}

// Enum values from include/uapi/linux/iio/types.h (Linux 6.12), counted from 0 at each enum's start.
private let iioProximity: UInt64 = 8  // line 23 (IIO_VOLTAGE at 15)
private let iioActivity: UInt64 = 19  // line 34
private let iioSteps: UInt64 = 20  // line 35
private let iioAccel: UInt64 = 3  // line 18
private let modRunning: UInt64 = 27, modWalking: UInt64 = 29, modStill: UInt64 = 30  // lines 84, 86, 87 (IIO_NO_MOD at 57)
private let modXOrYOrZ: UInt64 = 11  // line 68
private let typeRoc: UInt64 = 2, typeChange: UInt64 = 5  // lines 115, 118 (IIO_EV_TYPE_THRESH at 113)
private let dirEither: UInt64 = 0, dirRising: UInt64 = 1, dirFalling: UInt64 = 2, dirNone: UInt64 = 3  // lines 124–127

/// A device's events as a test gives them: the testbed answers `IIO_GET_EVENT_FD_IOCTL` with the
/// read end of a FIFO this process holds (umockdev cannot hand a descriptor over), and the test
/// writes the driver's 16-byte `iio_event_data` records to its write end.
private final class EventFeed {
    let handler: IoctlHandler
    let reader: Int32
    let writer: Int32
    /// Whether the read end stays the test's (no descriptor was handed out).
    private let keepsReader: Bool

    init(testbed: Testbed, refusing code: Int32? = nil) throws {
        let fifo = NSTemporaryDirectory() + "motiond-chip-events-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        guard mkfifo(fifo, 0o600) == 0 else { throw TestbedError("mkfifo: errno \(errno)") }
        defer { unlink(fifo) }
        reader = open(fifo, O_RDWR | O_NONBLOCK | O_CLOEXEC)
        writer = open(fifo, O_WRONLY | O_NONBLOCK | O_CLOEXEC)
        guard reader >= 0, writer >= 0 else { throw TestbedError("open \(fifo): errno \(errno)") }
        let descriptor = reader
        keepsReader = code != nil
        handler = try testbed.handleIoctls(on: "/dev/iio:device0") { request in
            if let code { return .failure(code) }
            return request == getEventDescriptor ? .integer(descriptor) : .failure(ENOTTY)
        }
    }

    deinit {
        close(writer)
        if keepsReader { close(reader) }  // else the code under test owns it
    }

    /// Writes one record, as the driver's `iio_push_event` queues it.
    func push(_ id: UInt64, at timestamp: Int64) throws {
        let record = withUnsafeBytes(of: id, Array.init) + withUnsafeBytes(of: timestamp, Array.init)
        guard write(writer, record, record.count) == record.count else { throw TestbedError("write to the event FIFO: errno \(errno)") }
    }
}

/// The next record on `descriptor` (the FIFO holds it already: it was written before).
private func nextRecord(_ descriptor: borrowing OwnedDescriptor) throws -> IIOEventRecord {
    var bytes = [UInt8](repeating: 0, count: IIOEventRecord.size)
    let count = bytes.withUnsafeMutableBytes { read(descriptor.rawValue, $0.baseAddress, $0.count) }
    guard count == IIOEventRecord.size else { throw TestbedError("read of the event descriptor gave \(count), errno \(errno)") }
    return try #require(bytes.withUnsafeBytes { IIOEventRecord($0) })
}

/// The chip's event descriptor, taken.
private func eventDescriptor(_ chip: ChipFunctions) throws -> OwnedDescriptor {
    guard let descriptor = chip.takeEventDescriptor() else { throw TestbedError("no event descriptor: \(String(describing: chip.eventsProblem))") }
    return descriptor
}

/// Whether the chip has no event descriptor (left) to take.
private func hasNoEventDescriptor(_ chip: ChipFunctions) -> Bool {
    guard let _ = chip.takeEventDescriptor() else { return true }
    return false
}

private func openChip(_ kinds: Set<SensorKind>) throws -> ChipFunctions {
    try ChipFunctions(device: "iio:device0", kinds: kinds, sysfs: Sysfs(), deviceNodeDirectory: "/dev")
}

private func readChip(_ chip: ChipFunctions) throws -> [SensorKind: Vector3] {
    var samples: [SensorSample] = []
    try chip.read(into: &samples)
    #expect(samples.allSatisfy { $0.device == DeviceNumber(0) })
    return Dictionary(samples.map { ($0.kind, $0.vector) }, uniquingKeysWith: { a, _ in a })
}

extension Hardware {
    /// How the devices with chip functions are described: which kinds, which channels, which mode.
    @Suite struct ChipDeviceDescriptions {
        @Test func bma400KeepsItsAccelerometerBufferedBesideItsStepCounterAndActivityClasses() throws {
            let testbed = try Testbed()
            try testbed.add(fixture: "wrist-bma400-steps")
            let listing = try DeviceDiscovery().listDevices()
            let device = try #require(listing.devices.first)
            #expect(device.kinds == [.accelerometer, .stepCounter, .activityRecognizer])
            // The steps and activity channels are not scan elements (scan_index -1): the accelerometer stays buffered.
            #expect(device.captureMode == .buffered)
            #expect(device.problems.isEmpty)
            #expect(device.trigger == "bma400-dev0")
            #expect(device.sensor(.accelerometer)?.channels.map(\.scanIndex) == [0, 1, 2])
            let steps = try #require(device.sensor(.stepCounter)?.channels)
            #expect(steps.map(\.valueAttribute) == ["in_steps_input"])
            #expect(steps.map(\.scanIndex) == [nil])
            let activity = try #require(device.sensor(.activityRecognizer)?.channels)
            #expect(activity.map(\.axis) == [.x, .y, .z])
            #expect(activity.map(\.valueAttribute) == ["in_activity_still_input", "in_activity_walking_input", "in_activity_running_input"])
            #expect(activity.allSatisfy { $0.scanIndex == nil && $0.isProcessed })
        }

        @Test func bmi270IsABufferedImuWithAStepCounter() throws {
            let testbed = try Testbed()
            try testbed.add(fixture: "handheld-bmi270-steps")
            let device = try #require(try DeviceDiscovery().listDevices().devices.first)
            #expect(device.kinds == [.accelerometer, .gyroscope, .stepCounter])
            #expect(device.captureMode == .buffered)
            #expect(device.trigger == "bmi270-trig-1")
            #expect(device.sensor(.stepCounter)?.channels.map(\.valueAttribute) == ["in_steps_input"])
        }

        @Test func crosEcActivityIsSignificantMotionAndOnBodyNotProximity() throws {
            let testbed = try Testbed()
            try testbed.add(fixture: "chromebook-cros-ec-activity")
            let device = try #require(try DeviceDiscovery().listDevices().devices.first)
            #expect(device.kinds == [.significantMotion, .onBody])
            #expect(device.sensor(.significantMotion)?.channels.map(\.valueAttribute) == ["events/in_activity_still_change_falling_en"])
            #expect(device.sensor(.onBody)?.channels.map(\.valueAttribute) == ["in_proximity_raw"])
        }

        @Test func hidPresenceSensorIsHumanPresenceWithPresenceDistanceAndAttentionBuffered() throws {
            let testbed = try Testbed()
            try testbed.add(fixture: "laptop-human-presence")
            let device = try #require(try DeviceDiscovery().listDevices().devices.first)
            #expect(device.kinds == [.humanPresence], "not proximity")
            #expect(device.captureMode == .buffered)
            #expect(device.problems.isEmpty)
            let channels = try #require(device.sensor(.humanPresence)?.channels)
            #expect(channels.map(\.id) == ["proximity0", "proximity1", "attention"])
            #expect(channels.map(\.axis) == [.x, .y, .z])
            #expect(channels.map(\.scanIndex) == [0, 1, 2])
            #expect(channels.map(\.scale) == [1, 0.01, 1])
            // libiio 0.24's `enum iio_chan_type` ends at IIO_MASSCONCENTRATION (/usr/include/iio.h):
            // IIO_ATTENTION (39, Linux 6.13) is unknown to it, and the channel is matched by its id.
            let context = try IIOContext()  // alive while its channels are used
            let attention = try #require(context.device(sysname: "iio:device0")?.channels.first { $0.id == "attention" })
            #expect(attention.type == IIO_CHAN_TYPE_UNKNOWN)
            #expect(attention.isScanElement)
            withExtendedLifetime(context) {}
            // Polled: presence 1; 65 × 0.01 = 0.65 m; attention 100 % as the driver gives it.
            expectClose(try readOnce(device, .humanPresence), Vector3(x: 1, y: 0.65, z: 100))
            // Buffered: the scan as hid-sensor-prox pushes it, each channel in 32 bits (s8, s16, s8),
            // then the timestamp.
            var decoder = try ScanDecoder(device: device, layout: [(.humanPresence, [0, 4, 8])], timestampOffset: 16)
            var scan: [UInt8] = withUnsafeBytes(of: Int32(1).littleEndian, Array.init) + withUnsafeBytes(of: Int32(120).littleEndian, Array.init)
                + withUnsafeBytes(of: Int32(0).littleEndian, Array.init) + [0, 0, 0, 0] + withUnsafeBytes(of: Int64(7).littleEndian, Array.init)
            var decoded: [SensorSample] = []
            scan.withUnsafeMutableBytes { bytes in decoder.decode(scan: bytes.baseAddress!, fallbackTimestamp: 0) { decoded.append($0) } }
            #expect(decoded.count == 1)
            expectClose(try #require(decoded.first).vector, Vector3(x: 1, y: 1.2, z: 0))
            #expect(decoded.first?.timestamp == 7)
        }

        /// Where libiio cannot make a context, the devices are described from their sysfs file names
        /// (`SysfsChannel`), to the same kinds, read polled.
        @Test func withoutLibiioTheChipDevicesAreDescribedFromTheirFiles() throws {
            try Self.describedFromFiles("wrist-bma400-steps") { bma400 in
                #expect(bma400.kinds == [.accelerometer, .stepCounter, .activityRecognizer])
                #expect(bma400.captureMode == .polled)
                #expect(bma400.sensor(.activityRecognizer)?.channels.map(\.valueAttribute)
                    == ["in_activity_still_input", "in_activity_walking_input", "in_activity_running_input"])
            }
            try Self.describedFromFiles("laptop-human-presence") { presence in
                #expect(presence.kinds == [.humanPresence])
                #expect(presence.sensor(.humanPresence)?.channels.map(\.valueAttribute) == ["in_proximity0_raw", "in_proximity1_raw", "in_attention_input"])
                expectClose(try readOnce(presence, .humanPresence), Vector3(x: 1, y: 0.65, z: 100))
            }
        }

        /// `fixture`'s iio:device0 as `DeviceDiscovery` describes it when libiio fails (EFBIG: one
        /// device's context too large for it), handed to `check` while the testbed lives.
        static func describedFromFiles(_ fixture: String, _ check: (DeviceDescriptor) throws -> Void) throws {
            let testbed = try Testbed()
            try testbed.add(fixture: fixture)
            let name = try testbed.attribute("iio:device0", "name").trimmingCharacters(in: .whitespacesAndNewlines)
            try check(try DeviceInspector(sysfs: Sysfs(), properties: [:]).describe(
                sysname: "iio:device0", name: name, channels: SysfsChannel.channels(of: "iio:device0", in: Sysfs()), syspath: "",
                triggers: nil, problems: [.describedWithoutLibiio(device: "iio:device0", errno: EFBIG)]))
        }

        @Test func linux612PresenceSensorHasPresenceOnlyAndTheRestIsNaN() throws {
            let testbed = try Testbed()
            try testbed.add(fixture: "laptop-human-presence-6.12")
            let device = try #require(try DeviceDiscovery().listDevices().devices.first)
            #expect(device.kinds == [.humanPresence])
            #expect(device.captureMode == .buffered)
            #expect(device.sensor(.humanPresence)?.channels.map(\.id) == ["proximity"])
            let sample = try readOnce(device, .humanPresence)
            #expect(sample.x == 1)
            #expect(sample.y.isNaN && sample.z.isNaN, "no distance, no attention channel: \(sample)")
            // An absent person: 0, the others still NaN, and not dropped as implausible.
            try testbed.setAttribute("iio:device0", "in_proximity_raw", "0\n")
            let absent = try readOnce(device, .humanPresence)
            #expect(absent.x == 0 && absent.y.isNaN && absent.z.isNaN)
        }
    }

    /// `ChipFunctions` on the fixtures: what opening writes, what closing restores, what reads give,
    /// how events decode.
    @Suite struct ChipFunctionsOnFixtures {
        @Test func bma400StepsAndActivityAreEnabledReadAndTheirEventsDecoded() throws {
            let testbed = try Testbed()
            try testbed.add(fixture: "wrist-bma400-steps")
            let feed = try EventFeed(testbed: testbed)
            let chip = try openChip([.stepCounter, .activityRecognizer])
            #expect(chip.eventsProblem == nil)
            #expect(chip.eventKinds == [.stepCounter, .activityRecognizer])
            #expect(chip.stepCounterWidth == .unsigned24)
            #expect(try testbed.attribute("iio:device0", "in_steps_en") == "1\n")
            #expect(try testbed.attribute("iio:device0", "events/in_steps_change_en") == "1\n")
            #expect(try testbed.attribute("iio:device0", "events/in_activity_change_en") == "1\n")
            #expect(try testbed.attribute("iio:device0", "events/in_accel_mag_rising_en") == "0\n", "the accelerometer's are MotionEvents'")
            #expect(feed.handler.requests == [getEventDescriptor])

            let values = try readChip(chip)
            #expect(values[.stepCounter] == Vector3(x: 16_777_210, y: 16_777_216, z: 0), "the 24-bit count as read, beside 2^24")
            #expect(values[.activityRecognizer] == Vector3(x: 0, y: 100, z: 0), "walking")

            // bma400_interrupt (1666–1684): a step, then the activity, modified by its class.
            let descriptor = try eventDescriptor(chip)
            #expect(hasNoEventDescriptor(chip))
            try feed.push(eventCode(chanType: iioSteps, type: typeChange, direction: dirNone), at: 1)
            try feed.push(eventCode(chanType: iioActivity, modifier: modRunning, type: typeChange, direction: dirNone), at: 2)
            let step = try nextRecord(descriptor)
            #expect(step.id == 0x0503_0014_0000_0000 && step.timestamp == 1)
            #expect(ChipFunctions.kind(of: step) == .stepCounter)
            #expect(ChipFunctions.sample(of: step, device: DeviceNumber(0), at: 5) == nil, "a step event says read me")
            #expect(ChipFunctions.kind(of: try nextRecord(descriptor)) == .activityRecognizer)

            // A walk under way turns the step events off; closing puts both back, and leaves counting on.
            try chip.setEvents(of: .stepCounter, enabled: false)
            #expect(try testbed.attribute("iio:device0", "events/in_steps_change_en") == "0\n")
            try chip.setEvents(of: .stepCounter, enabled: true)
            #expect(try testbed.attribute("iio:device0", "events/in_steps_change_en") == "1\n")
            chip.close()
            #expect(try testbed.attribute("iio:device0", "events/in_steps_change_en") == "0\n")
            #expect(try testbed.attribute("iio:device0", "events/in_activity_change_en") == "0\n")
            #expect(try testbed.attribute("iio:device0", "in_steps_en") == "1\n", "never 0: the count must survive")
            chip.close()  // idempotent
            #expect(try testbed.attribute("iio:device0", "in_steps_en") == "1\n")
        }

        @Test func bmi270GetsItsSmallestWatermarkAndItsNegativeCountAsRead() throws {
            let testbed = try Testbed()
            try testbed.add(fixture: "handheld-bmi270-steps")
            let feed = try EventFeed(testbed: testbed)
            let chip = try openChip([.stepCounter])
            #expect(chip.eventsProblem == nil)
            #expect(chip.stepCounterWidth == .signed16)
            #expect(try testbed.attribute("iio:device0", "in_steps_en") == "1\n")
            // BMI270_STEP_COUNTER_FACTOR: the watermark is kept in twenties; 20 is the smallest but 0.
            #expect(try testbed.attribute("iio:device0", "events/in_steps_change_value") == "20\n")
            #expect(try testbed.attribute("iio:device0", "events/in_steps_change_en") == "1\n")
            // −32,536 as the driver sign-extends it is 33,000 of the counter's 2^16.
            #expect(try readChip(chip)[.stepCounter] == Vector3(x: 33_000, y: 65_536, z: 0))

            // bmi270_irq_thread_handler: IIO_UNMOD_EVENT_CODE(IIO_STEPS, 0, CHANGE, NONE).
            let descriptor = try eventDescriptor(chip)
            try feed.push(eventCode(chanType: iioSteps, type: typeChange, direction: dirNone), at: 9)
            #expect(ChipFunctions.kind(of: try nextRecord(descriptor)) == .stepCounter)
            chip.close()
            #expect(try testbed.attribute("iio:device0", "events/in_steps_change_en") == "0\n")
            #expect(try testbed.attribute("iio:device0", "events/in_steps_change_value") == "0\n")
            #expect(try testbed.attribute("iio:device0", "in_steps_en") == "1\n")
        }

        @Test func eventsHeldElsewhereLeaveTheChipReadableAndNothingEnabled() throws {
            let testbed = try Testbed()
            try testbed.add(fixture: "handheld-bmi270-steps")
            // EBUSY: the accelerometer's MotionEvents took the device's one event descriptor first.
            let feed = try EventFeed(testbed: testbed, refusing: EBUSY)
            let chip = try openChip([.stepCounter])
            #expect(chip.eventsProblem == .eventsRefused(device: "iio:device0", operation: "IIO_GET_EVENT_FD_IOCTL", errno: EBUSY))
            #expect(chip.eventKinds.isEmpty)
            #expect(hasNoEventDescriptor(chip))
            #expect(feed.handler.requests == [getEventDescriptor])
            #expect(try testbed.attribute("iio:device0", "events/in_steps_change_en") == "0\n", "put back at once")
            #expect(try testbed.attribute("iio:device0", "in_steps_en") == "1\n")
            try chip.setEvents(of: .stepCounter, enabled: true)  // nothing to turn on
            #expect(try testbed.attribute("iio:device0", "events/in_steps_change_en") == "0\n")
            #expect(try readChip(chip)[.stepCounter]?.x == 33_000)
        }

        @Test func crosEcSignificantMotionAndBodyDetection() throws {
            let testbed = try Testbed()
            try testbed.add(fixture: "chromebook-cros-ec-activity")
            let feed = try EventFeed(testbed: testbed)
            let chip = try openChip([.significantMotion, .onBody])
            #expect(chip.eventsProblem == nil)
            #expect(chip.stepCounterWidth == nil)
            #expect(try testbed.attribute("iio:device0", "events/in_activity_still_change_falling_en") == "1\n")
            #expect(try testbed.attribute("iio:device0", "events/in_proximity_change_either_en") == "1\n")
            // in_proximity_raw 0: the body near, so on the body (1); significant motion has no value.
            #expect(try readChip(chip) == [.onBody: Vector3(x: 1, y: 0, z: 0)])
            try testbed.setAttribute("iio:device0", "in_proximity_raw", "1\n")
            #expect(try readChip(chip)[.onBody]?.x == 0)

            // cros_ec_activity_push_data: IIO_UNMOD_EVENT_CODE(chan->type, index, CHANGE, dir), the
            // channel's scan index as its number: significant motion FALLING, the body FALLING near,
            // RISING far.
            let descriptor = try eventDescriptor(chip)
            try feed.push(eventCode(chanType: iioActivity, type: typeChange, direction: dirFalling, channel: 0), at: 1)
            try feed.push(eventCode(chanType: iioProximity, type: typeChange, direction: dirFalling, channel: 1), at: 2)
            try feed.push(eventCode(chanType: iioProximity, type: typeChange, direction: dirRising, channel: 1), at: 3)
            let motion = try nextRecord(descriptor)
            #expect(motion.id == 0x0502_0013_0000_0000)
            #expect(ChipFunctions.kind(of: motion) == .significantMotion)
            #expect(ChipFunctions.sample(of: motion, device: DeviceNumber(0), at: 11)
                == SensorSample(kind: .significantMotion, device: DeviceNumber(0), timestamp: 11, vector: Vector3(x: 1, y: 0, z: 0)))
            let near = try nextRecord(descriptor)
            #expect(near.id == 0x0502_0008_0000_0001)
            #expect(ChipFunctions.sample(of: near, device: DeviceNumber(0), at: 12)?.vector.x == 1)
            let far = try nextRecord(descriptor)
            #expect(ChipFunctions.kind(of: far) == .onBody)
            #expect(ChipFunctions.sample(of: far, device: DeviceNumber(0), at: 13)?.vector.x == 0)

            // Significant motion is armed only while watched.
            try chip.setEvents(of: .significantMotion, enabled: false)
            #expect(try testbed.attribute("iio:device0", "events/in_activity_still_change_falling_en") == "0\n")
            chip.close()
            #expect(try testbed.attribute("iio:device0", "events/in_proximity_change_either_en") == "0\n")
        }

        @Test func aChipWithoutEventsSaysSoAndStillReads() throws {
            let testbed = try Testbed()
            try testbed.add(Self.bma400WithoutEvents)
            let chip = try openChip([.stepCounter, .activityRecognizer])
            #expect(chip.eventsProblem == .noChipEvents(device: "iio:device0"))
            #expect(hasNoEventDescriptor(chip))
            #expect(try testbed.attribute("iio:device0", "in_steps_en") == "1\n")
            let values = try readChip(chip)
            #expect(values[.stepCounter]?.x == 4242)
            #expect(values[.activityRecognizer] == Vector3(x: 100, y: 0, z: 0))
        }

        @Test func aGarbageOrVanishedCountIsADeviceError() throws {
            let testbed = try Testbed()
            try testbed.add(Self.bma400WithoutEvents)
            let chip = try openChip([.stepCounter])
            for garbage in ["abc\n", "", "12.5\n"] {
                try testbed.setAttribute("iio:device0", "in_steps_input", garbage)
                #expect(throws: DeviceError.attributeMalformed(device: "iio:device0", attribute: "in_steps_input", value: garbage, expected: "an integer")) {
                    try readChip(chip)
                }
            }
            testbed.remove(syspath: "/sys/devices/platform/soc/i2c-1/1-0014/iio:device0")
            #expect(throws: DeviceError.deviceVanished(device: "iio:device0")) { try readChip(chip) }
            #expect(throws: DeviceError.deviceVanished(device: "iio:device0")) { try openChip([.stepCounter]) }
        }

        @Test func anEventThatCannotBeEnabledLeavesTheOthers() throws {
            let testbed = try Testbed()
            try testbed.add(fixture: "wrist-bma400-steps")
            // The activity event's file unreadable and unwritable (a directory in its place: EISDIR).
            let activity = "\(testbed.root)/sys/bus/iio/devices/iio:device0/events/in_activity_change_en"
            try FileManager.default.removeItem(atPath: activity)
            try FileManager.default.createDirectory(atPath: activity, withIntermediateDirectories: false)
            let feed = try EventFeed(testbed: testbed)
            let chip = try openChip([.stepCounter, .activityRecognizer])
            #expect(chip.eventsProblem == nil)
            #expect(chip.eventKinds == [.stepCounter])
            #expect(try testbed.attribute("iio:device0", "events/in_steps_change_en") == "1\n")
            #expect(feed.handler.requests == [getEventDescriptor])
            try chip.setEvents(of: .activityRecognizer, enabled: false)  // it has none: nothing to do
            #expect(throws: DeviceError.kindUnavailable(device: "iio:device0", kind: "on-body")) {
                try chip.setEvents(of: .onBody, enabled: true)
            }
            #expect(try readChip(chip)[.activityRecognizer] == Vector3(x: 0, y: 100, z: 0))
        }

        @Test func aKindTheDeviceLacksIsRefused() throws {
            let testbed = try Testbed()
            try testbed.add(fixture: "handheld-bmi270-steps")
            #expect(throws: DeviceError.kindUnavailable(device: "iio:device0", kind: "activity-recognizer")) {
                try openChip([.stepCounter, .activityRecognizer])
            }
            #expect(try testbed.attribute("iio:device0", "in_steps_en") == "0\n", "refused before anything is written")
        }

        /// A bma400 whose `events/` the kernel did not make (no IRQ: bma400_core.c registers its events
        /// whatever the IRQ, so this stands for an older driver or a sysfs without them).
        static let bma400WithoutEvents = """
            P: /devices/platform/soc/i2c-1/1-0014/iio:device0
            N: iio:device0
            E: SUBSYSTEM=iio
            E: DEVTYPE=iio_device
            E: DEVNAME=/dev/iio:device0
            A: name=bma400\\n
            A: in_accel_x_raw=0\\n
            A: in_accel_y_raw=0\\n
            A: in_accel_z_raw=512\\n
            A: in_accel_scale=0.019154\\n
            A: in_steps_input=4242\\n
            A: in_steps_en=0\\n
            A: in_activity_still_input=100\\n
            A: in_activity_walking_input=0\\n
            A: in_activity_running_input=0\\n
            """
    }
}

/// Which chip function an event is about, for every code the drivers push and some they do not.
@Suite struct ChipEventCodes {
    @Test func chipEventCodesDecodeToTheirKinds() {
        func kind(_ id: UInt64) -> SensorKind? { ChipFunctions.kind(of: IIOEventRecord(id: id, timestamp: 0)) }
        #expect(kind(eventCode(chanType: iioSteps, type: typeChange, direction: dirNone)) == .stepCounter)
        for modifier in [modStill, modWalking, modRunning, 0] {
            #expect(kind(eventCode(chanType: iioActivity, modifier: modifier, type: typeChange, direction: dirNone)) == .activityRecognizer)
        }
        #expect(kind(eventCode(chanType: iioActivity, type: typeChange, direction: dirFalling, channel: 3)) == .significantMotion)
        #expect(kind(eventCode(chanType: iioProximity, type: typeChange, direction: dirEither)) == nil, "the EC pushes near or far, never either")
        // An accelerometer's wake-on-motion (inv_mpu_trigger.c:286–288) and a proximity threshold are none of a chip function's.
        #expect(kind(eventCode(chanType: iioAccel, modifier: modXOrYOrZ, type: typeRoc, direction: dirRising)) == nil)
        #expect(kind(eventCode(chanType: iioProximity, type: 0, direction: dirRising)) == nil)
    }
}
