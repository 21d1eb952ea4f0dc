import Foundation
import MotionCore
import TestSupport
import Testing

@testable import MotionDevices

extension Hardware {
    /// Each bad input gives a typed error naming the device and attribute; the device is skipped
    /// (or read polled), the others are unaffected, nothing crashes.
    @Suite struct BadInput {
        /// A phone accelerometer (iio:device0) with one attribute replaced, next to a good gyroscope.
        func accelerometer(_ attributes: [String: String?], properties: [String] = []) -> String {
            var values: [String: String?] = [
                "in_accel_x_raw": "1\\n", "in_accel_y_raw": "2\\n", "in_accel_z_raw": "3\\n",
                "in_accel_scale": "0.5\\n",
            ]
            values.merge(attributes) { _, new in new }
            var text = "P: /devices/platform/acc/iio:device0\nE: SUBSYSTEM=iio\nA: name=acc\\n\n"
            text += properties.map { "E: \($0)\n" }.joined()
            for (name, value) in values.sorted(by: { $0.key < $1.key }) {
                if let value { text += "A: \(name)=\(value)\n" }
            }
            return text + """

                P: /devices/platform/gyr/iio:device1
                E: SUBSYSTEM=iio
                A: name=gyr\\n
                A: in_anglvel_x_raw=1\\n
                A: in_anglvel_y_raw=1\\n
                A: in_anglvel_z_raw=1\\n
                A: in_anglvel_scale=1\\n


                """
        }

        func listing(_ description: String) throws -> (DeviceListing, Testbed) {
            let testbed = try Testbed()
            try testbed.add(description)
            return (try DeviceDiscovery().listDevices(), testbed)
        }

        /// libiio builds one context of all devices, and one attribute it cannot hold (a `name` longer
        /// than its 1,024-byte buffer: EFBIG) fails the whole context, which used to hide every
        /// device. The others are described from their sysfs files and read polled; the odd one is
        /// skipped with its reason.
        @Test func aDeviceLibiioCannotReadIsSkippedAndTheOthersStay() throws {
            // The reference: the same devices as libiio describes them, before the odd one comes.
            let (byLibiio, testbed) = try listing(accelerometer([:]))
            let odd = "P: /devices/platform/odd/iio:device2\nE: SUBSYSTEM=iio\nA: name=\(String(repeating: "n", count: 5000))\\n\nA: in_accel_x_raw=1\\n\n"
            try testbed.add(odd)
            let listing = try DeviceDiscovery().listDevices()
            #expect(listing.devices.map(\.number.sysname) == ["iio:device0", "iio:device1"])
            #expect(listing.problems.map { "\($0)" }.contains { $0.contains("iio:device2") }, "\(listing.problems)")
            #expect(listing.devices.allSatisfy { $0.captureMode == .polled })
            #expect(listing.devices.allSatisfy { $0.problems.contains { "\($0)".contains("libiio cannot read") } })
            #expect(listing.devices.map(\.sensors) == byLibiio.devices.map(\.sensors), "described from sysfs as libiio describes them")
            // And read without libiio, as the reference is.
            func firstSample(_ device: DeviceDescriptor) throws -> Vector3? {
                let capture = try SensorCapture(device: device, kinds: [.accelerometer], rate: 10)
                let events = EventLog()
                capture.start(handler: events.append)
                defer { capture.stop() }
                try events.waitUntil { $0.samples.count >= 1 }
                return events.samples.first?.vector
            }
            #expect(try firstSample(listing.devices[0]) == firstSample(byLibiio.devices[0]))
        }

        /// The same, on every fixture machine: the sensors described from sysfs (scan elements, mount
        /// matrices and all) are those libiio describes.
        @Test(arguments: ["imu-buffered", "phone", "tablet-accelerometer-magnetometer", "convertible-two-accelerometers", "laptop-hid-accelerometer"])
        func sysfsDescribesEveryFixtureAsLibiioDoes(fixture: String) throws {
            let testbed = try Testbed()
            try testbed.add(fixture: fixture)
            let byLibiio = try DeviceDiscovery().listDevices()
            try testbed.add("P: /devices/platform/odd/iio:device9\nE: SUBSYSTEM=iio\nA: name=\(String(repeating: "n", count: 5000))\\n\n")
            let bySysfs = try DeviceDiscovery().listDevices()
            #expect(bySysfs.devices.map(\.number) == byLibiio.devices.map(\.number))
            #expect(bySysfs.devices.map(\.sensors) == byLibiio.devices.map(\.sensors))
            #expect(bySysfs.devices.allSatisfy { $0.captureMode == .polled })
        }

        /// Read from sysfs (libiio failed), a scan index that is no integer (1e300 used to trap its
        /// conversion and take the daemon down) leaves the channel without a scan index.
        @Test func aScanIndexThatIsNoIntegerDescribedFromSysfsIsNone() throws {
            let odd = "P: /devices/platform/odd/iio:device2\nE: SUBSYSTEM=iio\nA: name=\(String(repeating: "n", count: 5000))\\n\n"
            let garbage = ["1e300", "-3", "2.5"]
            var attributes: [String: String?] = [:]
            for (i, axis) in ["x", "y", "z"].enumerated() {
                attributes["scan_elements/in_accel_\(axis)_en"] = "0\\n"
                attributes["scan_elements/in_accel_\(axis)_type"] = "le:s16/16>>0\\n"
                attributes["scan_elements/in_accel_\(axis)_index"] = "\(garbage[i])\\n"
            }
            let (listing, _) = try listing(accelerometer(attributes) + "\n" + odd)
            let accelerometer = try #require(listing.devices.first { $0.number.sysname == "iio:device0" }?.sensors.first)
            #expect(accelerometer.channels.map(\.scanIndex) == [nil, nil, nil])
        }

        /// A scale the device cannot be read with skips the device, with the problem named, the others
        /// unaffected: none, an empty one, one that is no number, and one of 0, below 0, or so large that
        /// a count overflows (those used to be taken as they were and stream zeros, or infinities).
        @Test(arguments: [
            (nil, DeviceError.missingScale(device: "iio:device0", channel: "accel_x")),
            ("\\n", .attributeMalformed(device: "iio:device0", attribute: "in_accel_scale", value: "\n", expected: "a decimal number")),
            ("abc\\n", .attributeMalformed(device: "iio:device0", attribute: "in_accel_scale", value: "abc\n", expected: "a decimal number")),
        ] as [(String?, DeviceError)] + [("0", "0.0"), ("-0.5", "-0.5"), ("1e308", "1e+308")].map { scale, read in
            (scale + "\\n", DeviceError.attributeMalformed(
                device: "iio:device0", attribute: "in_accel_scale", value: read, expected: "a scale above 0 and at most 1000000.0"))
        })
        func aScaleTheDeviceCannotBeReadWithSkipsIt(scale: String?, problem: DeviceError) throws {
            let (listing, _) = try listing(accelerometer(["in_accel_scale": scale]))
            #expect(listing.devices.map(\.name) == ["gyr"])
            #expect(listing.problems == [problem])
        }

        /// A reading no accelerometer can produce (2147483647 counts × 0.5 m/s² ≈ 1e9 m/s², the
        /// register garbage of a bus error) is dropped and counted, never handed on. A capture whose
        /// sensor keeps giving such readings says so at most once a second and goes on: it neither
        /// ends (as ten failed reads would end it) nor floods the log, and the next good reading is
        /// handed on.
        @Test func readingsBeyondWhatASensorCanMeasureAreDroppedAndSaidWithoutEndingTheCapture() throws {
            let (listing, testbed) = try listing(accelerometer(["in_accel_x_raw": "2147483647\\n"]))
            let reader = try PolledReader(device: listing.devices[0], kinds: [.accelerometer], sysfs: Sysfs())
            var samples: [SensorSample] = []
            try reader.read(timestamp: 0) { samples.append($0) }
            #expect(samples.isEmpty && reader.rejectedReadings == 1)

            let capture = try SensorCapture(device: listing.devices[0], kinds: [.accelerometer], rate: 200)
            let events = EventLog()
            capture.start(handler: events.append)
            defer { capture.stop() }
            // 60 reads, all garbage (each read ends with `.readComplete`, samples or not).
            try events.waitUntil { $0.all.count { if case .readComplete = $0 { true } else { false } } >= 60 }
            let said = events.all.compactMap { if case .readFailed(let e) = $0 { e } else { nil } }
            #expect(said.count == 1, "\(said)")
            guard case .implausibleReading("iio:device0", "accelerometer", _) = said.first else {
                Issue.record("\(said)")
                return
            }
            #expect(events.samples.isEmpty)
            try testbed.setAttribute("iio:device0", "in_accel_x_raw", "1\n")
            try events.waitUntil { $0.samples.count >= 1 }
            #expect(!events.all.contains { if case .ended = $0 { true } else { false } })
        }

        @Test func emptyOrNonNumericRawValueFailsTheReadNotTheCapture() throws {
            let (listing, testbed) = try listing(accelerometer([:]))
            let device = listing.devices[0]
            try testbed.setAttribute("iio:device0", "in_accel_y_raw", "\n")
            #expect(throws: DeviceError.attributeMalformed(device: "iio:device0", attribute: "in_accel_y_raw", value: "\n", expected: "a number")) {
                try PolledReader(device: device, kinds: [.accelerometer], sysfs: Sysfs()).read(timestamp: 0) { _ in }
            }
            // A capture reports each failed read, keeps going, and recovers when the value does.
            let capture = try SensorCapture(device: device, kinds: [.accelerometer], rate: 200)
            let events = EventLog()
            capture.start(handler: events.append)
            try events.waitUntil { log in log.all.contains { if case .readFailed = $0 { true } else { false } } }
            try testbed.setAttribute("iio:device0", "in_accel_y_raw", "4\n")
            try events.waitUntil { $0.samples.count >= 2 }
            capture.stop()
            // Then into the device frame: a half turn about z, x and y negated (docs/frames.md).
            expectClose(events.samples[0].vector, Vector3(x: -0.5, y: -2, z: 1.5))
        }

        /// Issue 62: ten failed reads in a row, the device there, re-arm the capture (before, they ended
        /// it): opened again at once, then after a back-off, until the value reads again.
        @Test func aReadThatKeepsFailingIsReArmedUntilItReadsAgain() throws {
            let (listing, testbed) = try listing(accelerometer([:]))
            let capture = try SensorCapture(device: listing.devices[0], kinds: [.accelerometer], rate: 500)
            try testbed.setAttribute("iio:device0", "in_accel_z_raw", "garbage\n")
            let events = EventLog()
            capture.start(handler: events.append)
            try events.waitUntil { log in log.all.contains { if case .rearming = $0 { true } else { false } } }
            let failures = events.all.prefix { if case .rearming = $0 { false } else { true } }.filter { if case .readFailed = $0 { true } else { false } }
            #expect(failures.count == CapturePolicy.failuresThatEnd - 1)
            guard case .rearming(.failingReads, attempt: 1, after: 0) = events.all.first(where: { if case .rearming = $0 { true } else { false } }) else {
                Issue.record("\(events.all)")
                return
            }
            try testbed.setAttribute("iio:device0", "in_accel_z_raw", "4\n")
            try events.waitUntil { $0.samples.count >= 2 }
            capture.stop()
            #expect(!events.all.contains { if case .ended = $0 { true } else { false } })
        }

        @Test func unsupportedScanTypeFallsBackToPolled() throws {
            let testbed = try Testbed()
            try testbed.add(fixture: "imu-buffered")
            try testbed.setAttribute("iio:device0", "scan_elements/in_anglvel_y_type", "le:q16/16>>0\n")
            let imu = try DeviceDiscovery().describe(DeviceNumber(0))
            #expect(imu.captureMode == .polled)
            #expect(imu.problems.contains(.unsupportedScanType(device: "iio:device0", attribute: "scan_elements/in_anglvel_y_type", value: "le:q16/16>>0\n")))
            expectClose(try readOnce(imu, .accelerometer), Vector3(x: 0, y: 0, z: 9.797632))
        }

        /// A mount matrix that is not a 3×3 matrix, or not a rotation, skips the sensor, with the problem
        /// named, whether it comes from sysfs (`in_accel_mount_matrix`) or from udev's hwdb (`ACCEL_MOUNT_MATRIX`).
        @Test(arguments: [
            ("in_accel_mount_matrix", "1, 0, 0; 0, 1, 0", nil), ("in_accel_mount_matrix", "1, 0, 0; 0, 1, 0; 0, 0, x", nil),
            ("in_accel_mount_matrix", "0, 0, 0; 0, 0, 0; 0, 0, 0", "a rotation (its x and y rows are not perpendicular unit vectors, so it is no rotation)"),
            ("in_accel_mount_matrix", "", nil), ("ACCEL_MOUNT_MATRIX", "1, 0, 0; 0, 1", nil),
        ] as [(String, String, String?)])
        func aMalformedMountMatrixSkipsTheSensor(attribute: String, matrix: String, expected: String?) throws {
            let fromUdev = attribute == "ACCEL_MOUNT_MATRIX"
            let (listing, _) = try listing(fromUdev
                ? accelerometer([:], properties: ["ACCEL_MOUNT_MATRIX=\(matrix)"]) : accelerometer([attribute: matrix + "\\n"]))
            #expect(listing.devices.map(\.name) == ["gyr"])
            guard case .attributeMalformed("iio:device0", attribute, _, let said)? = listing.problems.first, listing.problems.count == 1 else {
                Issue.record("\(listing.problems)")
                return
            }
            #expect(said == expected ?? "a 3×3 matrix \"x1, y1, z1; x2, y2, z2; x3, y3, z3\"")
        }

        /// A location that cannot be parsed counts as the display, as iio-sensor-proxy falls back; the
        /// device stays, and the problem is listed with the attribute and the value.
        @Test func anUnparsableLocationIsTheDisplayAndAProblemNotAMissingDevice() throws {
            let (fromSysfs, _) = try listing(accelerometer(["location": "sideways\\n"]))
            #expect(fromSysfs.devices.map(\.name) == ["acc", "gyr"])
            #expect(fromSysfs.devices[0].location == .display)
            #expect(fromSysfs.devices[0].problems.contains(.attributeMalformed(
                device: "iio:device0", attribute: "location", value: "sideways\n", expected: "base, lid or display")))
            let (fromUdev, _) = try listing(accelerometer([:], properties: ["ACCEL_LOCATION=roof"]))
            #expect(fromUdev.devices.map(\.name) == ["acc", "gyr"])
            #expect(fromUdev.devices[0].location == .display)
            #expect(fromUdev.devices[0].problems.contains(.attributeMalformed(
                device: "iio:device0", attribute: "ACCEL_LOCATION", value: "roof", expected: "base or display")))
        }

        @Test func anUnreadableLabelLeavesTheDeviceWithoutALabel() throws {
            let (_, testbed) = try listing(accelerometer(["label": "accel-base\\n"]))
            try testbed.breakAttribute("iio:device0", "label")
            let device = try DeviceDiscovery().describe(DeviceNumber(0))
            #expect(device.label == nil)
            #expect(device.location == .display)
            #expect(device.problems.contains(.attributeUnreadable(device: "iio:device0", attribute: "label", errno: EISDIR)))
        }

        @Test func aDeviceRemovedBetweenEnumerationAndOpenIsReportedNotCrashed() throws {
            let (listing, testbed) = try listing(accelerometer([:]))
            let device = listing.devices[0]
            testbed.remove(syspath: device.syspath)
            #expect(throws: DeviceError.deviceVanished(device: "iio:device0")) { try DeviceDiscovery().describe(device.number) }
            let capture = try SensorCapture(device: device, kinds: [.accelerometer], rate: 10)
            let events = EventLog()
            capture.start(handler: events.append)
            try events.waitUntil { !$0.all.isEmpty }
            capture.stop()
            guard case .ended(.deviceVanished("iio:device0")) = events.all.first else {
                Issue.record("\(events.all)")
                return
            }
        }
    }
}

/// The readers' rules on bad readings, on a sysfs tree in a temporary directory (`PolledReader`'s
/// `sysfsRoot`) and devices described by hand as discovery describes them: no umockdev, so they run
/// beside the `Hardware` suite.
@Suite struct BadReadings {
    /// A directory standing for /sys, removed when the value goes, with iio:device0's `attributes`
    /// (each a file of that content; nil: a directory, whose read fails with EISDIR as a read that
    /// fails in the driver does).
    final class Sysfs {
        let root = NSTemporaryDirectory() + "sysfs-\(UUID().uuidString)"
        var device: String { root + "/bus/iio/devices/iio:device0" }

        init(_ attributes: [String: String?]) throws {
            try FileManager.default.createDirectory(atPath: device, withIntermediateDirectories: true)
            for (name, value) in attributes { try set(name, value) }
        }

        deinit { try? FileManager.default.removeItem(atPath: root) }

        /// Writes `attribute` in place, as the kernel changes a value: a reader that keeps the file open
        /// reads the new value from offset 0 (`Testbed.setAttribute`).
        func set(_ attribute: String, _ value: String?) throws {
            let path = device + "/" + attribute
            guard let value else { return try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false) }
            if !FileManager.default.fileExists(atPath: path), !FileManager.default.createFile(atPath: path, contents: nil) {
                throw TestbedError("cannot create \(path)")
            }
            let handle = try FileHandle(forUpdating: URL(fileURLWithPath: path))
            defer { try? handle.close() }
            try handle.truncate(atOffset: 0)
            try handle.write(contentsOf: Data(value.utf8))
        }
    }

    /// BadInput's phone accelerometer: `acc`, in_accel_{x,y,z}_raw, 0.5 m/s² per count, polled.
    static let accelerometer = DeviceDescriptor(
        number: DeviceNumber(0), name: "acc", syspath: "/sys/devices/platform/acc/iio:device0",
        sensors: [SensorDescriptor(kind: .accelerometer, channels: zip(["x", "y", "z"], [Axis.x, .y, .z]).map { name, axis in
            ChannelDescriptor(id: "accel_\(name)", axis: axis, valueAttribute: "in_accel_\(name)_raw", scale: 0.5)
        })])

    /// The ambient-light fixture's tsl2563: in_illuminance0_raw, 0.5 lux per count.
    static let light = DeviceDescriptor(
        number: DeviceNumber(0), name: "tsl2563", syspath: "/sys/devices/platform/i2c-3/3-0029/iio:device0",
        sensors: [SensorDescriptor(
            kind: .light, channels: [ChannelDescriptor(id: "illuminance0", axis: nil, valueAttribute: "in_illuminance0_raw", scale: 0.5)],
            readsVendorUnits: false)])

    /// A light reading is bounded as the motion sensors' are (`SensorKind.plausibleMagnitude`):
    /// a 32-bit count is a reading, 1e308 counts (register garbage, infinite once scaled) are dropped
    /// and counted, never handed on as a light level.
    @Test func aLightReadingBeyondAnySensorIsDroppedAndCounted() throws {
        let sysfs = try Sysfs(["in_illuminance0_raw": "100\n"])
        let reader = try PolledReader(device: Self.light, kinds: [.light], sysfsRoot: sysfs.root)
        var samples: [SensorSample] = []
        try sysfs.set("in_illuminance0_raw", "4294967295\n")
        try reader.read(timestamp: 0) { samples.append($0) }
        try sysfs.set("in_illuminance0_raw", "1e308\n")
        try reader.read(timestamp: 1) { samples.append($0) }
        #expect(samples.map(\.vector.x) == [4294967295 * 0.5])
        #expect(reader.rejectedReadings == 1)
    }

    @Test func aFailingReadNamesTheAttributeAndErrno() throws {
        let sysfs = try Sysfs(["in_accel_x_raw": nil, "in_accel_y_raw": "2\n", "in_accel_z_raw": "3\n"])
        #expect(throws: DeviceError.attributeUnreadable(device: "iio:device0", attribute: "in_accel_x_raw", errno: EISDIR)) {
            try PolledReader(device: Self.accelerometer, kinds: [.accelerometer], sysfsRoot: sysfs.root).read(timestamp: 0) { _ in }
        }
    }

    @Test func askingForAKindTheDeviceLacksIsATypedError() throws {
        #expect(throws: DeviceError.kindUnavailable(device: "iio:device0", kind: "magnetometer")) {
            try SensorCapture(device: Self.accelerometer, kinds: [.magnetometer], rate: 10)
        }
    }
}
