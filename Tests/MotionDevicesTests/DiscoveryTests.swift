import MotionCore
import TestSupport
import Testing

@testable import MotionDevices

extension Hardware {
    /// Discovery through libudev and libiio of each device shape, checked against the values a
    /// known physical state gives by hand: (raw + offset) × scale × unit, then the mount matrix.
    @Suite struct Discovery {
        @Test func phoneStyleSeparateDevicesAreClassifiedAndConverted() throws {
            let testbed = try Testbed()
            try testbed.add(fixture: "phone")
            let listing = try DeviceDiscovery().listDevices()
            #expect(listing.problems.isEmpty)
            #expect(listing.devices.map(\.name) == ["bma250e", "l3g4200d", "ak8975", "stk3310"])
            #expect(listing.devices.map(\.kinds) == [[.accelerometer], [.gyroscope], [.magnetometer], [.proximity]])
            #expect(listing.devices[3].sensor(.proximity)?.nearLevel == 100, "in_proximity_nearlevel")

            let accelerometer = listing.devices[0]
            #expect(accelerometer.sensor(.accelerometer)?.mountMatrixSource == "sysfs:in_accel_mount_matrix")
            #expect(accelerometer.availableRates == .list([15.62, 31.26, 62.5, 125]))
            #expect(accelerometer.captureMode == .polled)  // no /dev node, no scan elements
            // (10, -20, 256) counts × 0.038307 m/s², then x' = y, y' = -x.
            // Then into the device frame: a half turn about z, x and y negated (docs/frames.md).
            expectClose(try readOnce(accelerometer, .accelerometer), Vector3(x: 0.76614, y: 0.38307, z: 9.806592))
            // 8.75 mdps per count in rad/s.
            // Then into the device frame: a half turn about z, x and y negated (docs/frames.md).
            expectClose(try readOnce(listing.devices[1], .gyroscope), Vector3(x: -0.0152716, y: 0.0305432, z: 0.0458148))
        }

        @Test func magnetometerWithPerAxisScalesConvertsGaussToMicrotesla() throws {
            let testbed = try Testbed()
            try testbed.add(fixture: "phone")
            let magnetometer = try DeviceDiscovery().describe(DeviceNumber(2))
            #expect(magnetometer.sensor(.magnetometer)?.channels.map(\.scale) == [0.3, 0.31, 0.29])  // µT per count
            // (100, -50, -150) counts × (0.003, 0.0031, 0.0029) G × 100 µT/G.
            // Then into the device frame: a half turn about z, x and y negated (docs/frames.md).
            expectClose(try readOnce(magnetometer, .magnetometer), Vector3(x: -30, y: 15.5, z: -43.5))
        }

        @Test func hidSensorHubStyleAppliesSharedOffsetAndScaleAndEachMountMatrixSpelling() throws {
            let testbed = try Testbed()
            try testbed.add(fixture: "hid-sensor-hub")
            let devices = try DeviceDiscovery().listDevices().devices
            // The hub's own `dev_rotation` quaternion is not a motion sensor to motiond (docs/frames.md says why).
            #expect(devices.map(\.name) == ["accel_3d", "gyro_3d", "magn_3d"])
            #expect(devices[0].samplingFrequencyAttribute == "in_accel_sampling_frequency")
            #expect(devices.compactMap { $0.sensors.first?.mountMatrixSource }
                == ["udev:ACCEL_MOUNT_MATRIX", "sysfs:in_mount_matrix", "sysfs:mount_matrix"])
            // (-12 + 2, 34 + 2, -1000 + 2) × 0.00980665, then the hwdb matrix flips x and y.
            // Then into the device frame: a half turn about z, x and y negated (docs/frames.md).
            expectClose(try readOnce(devices[0], .accelerometer), Vector3(x: -0.0980665, y: 0.3530394, z: -9.7870367))
            // (1000, 0, -500) × 0.000174533 rad/s, then x' = -y, y' = x.
            // Then into the device frame: a half turn about z, x and y negated (docs/frames.md).
            expectClose(try readOnce(devices[1], .gyroscope), Vector3(x: 0, y: -0.174533, z: -0.0872665))
            // (250 - 50, -100 - 50, 400 - 50) × 0.001 G × 100.
            // Then into the device frame: a half turn about z, x and y negated (docs/frames.md).
            expectClose(try readOnce(devices[2], .magnetometer), Vector3(x: -20, y: 15, z: 35))
        }

        @Test func imuDeviceCarriesAccelerometerAndGyroscopeAndPrefersBufferedCapture() throws {
            let testbed = try Testbed()
            try testbed.add(fixture: "imu-buffered")
            let listing = try DeviceDiscovery().listDevices()
            #expect(listing.devices.count == 1, "the trigger is not a motion device")
            let imu = try #require(listing.devices.first)
            #expect(imu.kinds == [.accelerometer, .gyroscope])
            #expect(imu.captureMode == .buffered)
            #expect(imu.trigger == "bmi160-dev0")
            #expect(imu.timestampScan == TimestampScan(index: 6, scanType: ScanType(isBigEndian: false, isSigned: true, bits: 64, storageBits: 64, shift: 0)))
            #expect(imu.sensor(.accelerometer)?.channels.map(\.scanIndex) == [0, 1, 2])
            expectClose(try readOnce(imu, .accelerometer), Vector3(x: 0, y: 0, z: 9.797632))
        }

        @Test func proximityNearLevelFromUdevTakesPrecedence() throws {
            let testbed = try Testbed()
            try testbed.add("""
                P: /devices/platform/prox/iio:device0
                E: SUBSYSTEM=iio
                E: PROXIMITY_NEAR_LEVEL=20
                A: name=vcnl4000\\n
                A: in_proximity0_raw=25\\n
                A: in_proximity_nearlevel=100\\n


                """)
            let device = try DeviceDiscovery().describe(DeviceNumber(0))
            #expect(device.sensor(.proximity)?.nearLevel == 20)
            #expect(device.sensor(.proximity)?.channels.first?.valueAttribute == "in_proximity0_raw")
            var near: Bool?
            try PolledReader(device: device, kinds: [.proximity], sysfs: Sysfs()).read(timestamp: 0) { near = $0.isNear }
            #expect(near == true)
        }

        @Test func processedInputChannelsNeedNoScale() throws {
            let testbed = try Testbed()
            try testbed.add("""
                P: /devices/platform/acc/iio:device0
                E: SUBSYSTEM=iio
                A: name=processed\\n
                A: in_accel_x_input=0.5\\n
                A: in_accel_y_input=-0.25\\n
                A: in_accel_z_input=9.80665\\n


                """)
            let device = try DeviceDiscovery().describe(DeviceNumber(0))
            #expect(device.sensor(.accelerometer)?.channels.allSatisfy(\.isProcessed) == true)
            // Then into the device frame: a half turn about z, x and y negated (docs/frames.md).
            expectClose(try readOnce(device, .accelerometer), Vector3(x: -0.5, y: 0.25, z: 9.80665))
        }

        @Test func noIIODevicesAtAllIsAnEmptyListing() throws {
            let testbed = try Testbed()
            _ = testbed
            let listing = try DeviceDiscovery().listDevices()
            #expect(listing.devices.isEmpty)
            #expect(listing.problems.isEmpty)
        }
    }
}

/// The polled reader's rule on proximity, on a sysfs tree in a temporary directory (`BadReadings.Sysfs`)
/// and the phone fixture's proximity sensor described by hand as discovery describes it (whose near
/// level `Discovery.phoneStyleSeparateDevicesAreClassifiedAndConverted` checks): no umockdev, so it
/// runs beside the `Hardware` suite.
@Suite struct ProximityReadings {
    /// The phone fixture's stk3310: in_proximity_raw, 1 per count, near at 100.
    static let proximity = DeviceDescriptor(
        number: DeviceNumber(0), name: "stk3310", syspath: "/sys/devices/platform/stk3310/iio:device0",
        sensors: [SensorDescriptor(
            kind: .proximity, channels: [ChannelDescriptor(id: "proximity", axis: nil, valueAttribute: "in_proximity_raw")], nearLevel: 100)])

    @Test func proximityIsNearAtTheNearLevelWithHysteresis() throws {
        let sysfs = try BadReadings.Sysfs(["in_proximity_raw": "50\n"])
        let reader = try PolledReader(device: Self.proximity, kinds: [.proximity], sysfsRoot: sysfs.root)
        var states: [Bool] = []
        for raw in ["50", "120", "95", "91", "85", "99", "100"] {
            try sysfs.set("in_proximity_raw", raw + "\n")
            try reader.read(timestamp: 0) { sample in
                #expect(sample.vector.x == Double(raw))
                states.append(sample.isNear)
            }
        }
        // Near at ≥ 100; far again only below 90.
        #expect(states == [false, true, true, true, false, false, true])
    }
}

/// One polled reading of one sensor.
func readOnce(_ device: DeviceDescriptor, _ kind: SensorKind) throws -> Vector3 {
    let reader = try PolledReader(device: device, kinds: [kind], sysfs: Sysfs())
    var result: SensorSample?
    try reader.read(timestamp: 42) { result = $0 }
    let sample = try #require(result)
    #expect(sample.kind == kind)
    #expect(sample.device == device.number)
    #expect(sample.timestamp == 42)
    return sample.vector
}
