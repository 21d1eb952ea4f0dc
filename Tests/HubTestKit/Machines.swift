import Foundation
import MotionCore

@testable import MotionDevices

/// The machines the daemon's tests run on, as the device layer describes them: each built by hand
/// from its umockdev fixture (Tests/TestSupport/Fixtures/<name>.umockdev: the same names, labels,
/// locations, scales, offsets, mount matrices and rates), so that a hub test needs no testbed. Raw
/// counts become samples through the device layer's own converter (`sample(_:counts:at:)`).
package enum Machines {
    /// imu-buffered: a bmi160 read through its buffer, accelerometer 0.000598 m/s² and gyroscope
    /// 0.001065 rad/s per count, no mount matrix, offering 25 to 1,600 Hz.
    package static let imu = device(
        0, "bmi160", "/sys/devices/platform/spi-0/spi0.0/iio:device0",
        sensors: [vector(.accelerometer, "accel", scale: 0.000598), vector(.gyroscope, "anglvel", scale: 0.001065)],
        rates: [25, 50, 100, 200, 400, 800, 1600], rate: 100, mode: .buffered)

    /// laptop-hid-accelerometer: an HID sensor hub's `accel_3d` in the lid, 0.00980665 m/s² per count
    /// with an offset of 2 counts, at 10 Hz; nothing else.
    package static let laptop = device(
        0, "accel_3d", "/sys/devices/pci0000:00/0000:00:12.0/HID-SENSOR-200073.2.auto/iio:device0",
        sensors: [vector(.accelerometer, "accel", scale: 0.00980665, offset: 2)], rate: 10, rateAttribute: "in_accel_sampling_frequency")

    /// convertible-two-accelerometers, the lid's: cros-ec `accel-display`, 0.00980665 m/s² per count, 50 Hz.
    package static let convertibleDisplay = device(
        0, "cros-ec-accel", "/sys/devices/platform/cros-ec-accel.0/iio:device0", label: "accel-display", location: .display,
        sensors: [vector(.accelerometer, "accel", scale: 0.00980665)], rate: 50)
    /// convertible-two-accelerometers, the base's: cros-ec `accel-base`.
    package static let convertibleBase = device(
        1, "cros-ec-accel", "/sys/devices/platform/cros-ec-accel.1/iio:device1", label: "accel-base", location: .base,
        sensors: [vector(.accelerometer, "accel", scale: 0.00980665)], rate: 50)
    /// The convertible's counts for a lid opened to `degrees` over a base lying flat, keyboard up
    /// (Linux userspace's frame, as the fixture's: 120° is the lid's (0, −866, 500), the base's (0, 0, −1000)).
    package static func convertibleCounts(hinge degrees: Double) -> (display: Vector3, base: Vector3) {
        let θ = degrees * .pi / 180
        return (Vector3(x: 0, y: -1000 * sin(θ), z: -1000 * cos(θ)), Vector3(x: 0, y: 0, z: -1000))
    }

    /// tablet-accelerometer-magnetometer's accelerometer: KIOX000A, 0.00980665 m/s² per count, 50 Hz.
    package static let tabletAccelerometer = device(
        0, "KIOX000A:00", "/sys/devices/platform/80860F41:03/i2c-4/i2c-KIOX000A:00/iio:device0",
        sensors: [vector(.accelerometer, "accel", scale: 0.00980665)], rate: 50)
    /// tablet-accelerometer-magnetometer's magnetometer: ak09911, 0.001 G (0.1 µT) per count, 50 Hz.
    package static let tabletMagnetometer = device(
        1, "ak09911", "/sys/devices/platform/80860F41:03/i2c-4/i2c-AK09911:00/iio:device1",
        sensors: [vector(.magnetometer, "magn", scale: 0.001 * Units.microteslaPerGauss)], rate: 50)

    /// phone-buffered-imu-magnetometer's IMU: an mpu6050 read through its buffer (accelerometer
    /// 0.000598 m/s², gyroscope 0.001064724 rad/s per count), its chip turned 90° (`0, 1, 0; -1, 0, 0;
    /// 0, 0, 1`), offering 10 to 500 Hz.
    package static let phoneIMU = device(
        0, "mpu6050", "/sys/devices/platform/soc/1c2b000.i2c/i2c-1/1-0068/iio:device0",
        sensors: [
            vector(.accelerometer, "accel", scale: 0.000598, mountMatrix: [0, 1, 0, -1, 0, 0, 0, 0, 1]),
            vector(.gyroscope, "anglvel", scale: 0.001064724, mountMatrix: [0, 1, 0, -1, 0, 0, 0, 0, 1]),
        ],
        rates: [10, 20, 50, 100, 200, 500], rate: 100, mode: .buffered)
    /// phone-buffered-imu-magnetometer's magnetometer: an af8133j polled, 0.001 G per count, on the
    /// back (`0, -1, 0; -1, 0, 0; 0, 0, -1`, sun50i-a64-pinephone-1.2b.dts), offering 10 to 100 Hz.
    package static let phoneMagnetometer = device(
        1, "af8133j", "/sys/devices/platform/soc/1c2b000.i2c/i2c-1/1-001c/iio:device1",
        sensors: [vector(.magnetometer, "magn", scale: 0.001 * Units.microteslaPerGauss, mountMatrix: [0, -1, 0, -1, 0, 0, 0, 0, -1])],
        rates: [10, 25, 50, 100], rate: 25)

    /// phone: a bma250e accelerometer (0.038307 m/s² per count, chip turned 90°, 15.62 to 125 Hz), an
    /// l3g4200d gyroscope (0.000152716 rad/s per count), an ak8975 magnetometer (per-axis scales 0.003,
    /// 0.0031, 0.0029 G) and an stk3310 proximity sensor (near at 100), all polled.
    package static let phone: [DeviceDescriptor] = [
        device(
            0, "bma250e", "/sys/devices/platform/i2c-1/1-0018/iio:device0",
            sensors: [vector(.accelerometer, "accel", scale: 0.038307, mountMatrix: [0, 1, 0, -1, 0, 0, 0, 0, 1])],
            rates: [15.62, 31.26, 62.5, 125], rate: 15.62),
        device(
            1, "l3g4200d", "/sys/devices/platform/i2c-1/1-0068/iio:device1", sensors: [vector(.gyroscope, "anglvel", scale: 0.000152716)],
            rates: [100, 200, 400, 800], rate: 100),
        device(
            2, "ak8975", "/sys/devices/platform/i2c-1/1-000c/iio:device2",
            sensors: [vector(.magnetometer, "magn", scales: [0.003, 0.0031, 0.0029].map { $0 * Units.microteslaPerGauss })]),
        device(
            3, "stk3310", "/sys/devices/platform/i2c-1/1-0048/iio:device3",
            sensors: [scalar(.proximity, "proximity", attribute: "in_proximity_raw", nearLevel: 100)]),
    ]

    /// The phone fixture's counts as its attributes read: the accelerometer (10, −20, 256), the
    /// gyroscope (100, −200, 300), the magnetometer (100, −50, −150), the proximity 50 (far).
    package static let phoneCounts: [DeviceNumber: [SensorKind: Vector3]] = [
        DeviceNumber(0): [.accelerometer: Vector3(x: 10, y: -20, z: 256)],
        DeviceNumber(1): [.gyroscope: Vector3(x: 100, y: -200, z: 300)],
        DeviceNumber(2): [.magnetometer: Vector3(x: 100, y: -50, z: -150)],
        DeviceNumber(3): [.proximity: Vector3(x: 50, y: 0, z: 0)],
    ]

    /// pressure-sensors: bmp280 and bme680 (`in_pressure_input`, kPa), lps22hb (`in_pressure_raw`,
    /// 0.000024414 kPa per count, 1 to 75 Hz) and ms5611 (`in_pressure_input`), each alone as device 0.
    package static let barometers: [DeviceDescriptor] = [
        device(0, "bmp280", "/sys/devices/platform/i2c-1/1-0076/iio:device0", sensors: [scalar(.pressure, "pressure", attribute: "in_pressure_input")]),
        device(0, "bme680", "/sys/devices/platform/i2c-1/1-0077/iio:device0", sensors: [scalar(.pressure, "pressure", attribute: "in_pressure_input")]),
        device(
            0, "lps22hb", "/sys/devices/platform/i2c-2/2-005c/iio:device0",
            sensors: [scalar(.pressure, "pressure", attribute: "in_pressure_raw", scale: 0.000024414)], rates: [1, 10, 25, 50, 75], rate: 1),
        device(0, "ms5611", "/sys/devices/platform/spi0/spi0.1/iio:device0", sensors: [scalar(.pressure, "pressure", attribute: "in_pressure_input")]),
    ]

    /// ambient-light: a tsl2563 (0.5 lux per count, 10 Hz) and a driver with no scale (vendor units).
    package static let ambientLight: [DeviceDescriptor] = [
        device(
            0, "tsl2563", "/sys/devices/platform/i2c-3/3-0029/iio:device0",
            sensors: [scalar(.light, "illuminance0", attribute: "in_illuminance0_raw", scale: 0.5, readsVendorUnits: false)], rate: 10),
        device(
            1, "vendor-als", "/sys/devices/platform/i2c-4/4-0044/iio:device1",
            sensors: [scalar(.light, "illuminance", attribute: "in_illuminance_raw", readsVendorUnits: true)]),
    ]

    /// gyroscope-only: an l3g4200d, 0.000152716 rad/s per count, and no accelerometer.
    package static let gyroscopeOnly = device(
        0, "l3g4200d", "/sys/devices/platform/i2c-1/1-0068/iio:device0", sensors: [vector(.gyroscope, "anglvel", scale: 0.000152716)])

    /// tablet-bosch-mirror-matrix: a bmc150_accel whose hwdb matrix is a mirror (`1, 0, 0; 0, -1, 0;
    /// 0, 0, 1`, udev's `ACCEL_MOUNT_MATRIX`), 0.00980665 m/s² per count, 50 Hz.
    package static let boschMirror = device(
        0, "bmc150_accel", "/sys/devices/platform/80860F41:04/i2c-12/i2c-BOSC0200:00/iio:device0",
        sensors: [vector(.accelerometer, "accel", scale: 0.00980665, mountMatrix: [1, 0, 0, 0, -1, 0, 0, 0, 1], source: "udev:ACCEL_MOUNT_MATRIX")],
        rate: 50)

    /// laptop-human-presence: an HID sensor hub's human-presence sensor (`hid-sensor-prox`, IIO name
    /// `prox`, Linux 6.13's channels) read through its buffer at 10 Hz: presence `in_proximity0_raw`
    /// (0 or 1), distance `in_proximity1_raw` (0.01 m per count), attention `in_attention_input` (%).
    /// Its samples: x presence, y distance (m), z attention (%).
    package static let humanPresence = device(
        0, "prox", "/sys/devices/pci0000:00/0000:00:12.0/HID-SENSOR-200011.4.auto/iio:device0",
        sensors: [
            SensorDescriptor(
                kind: .humanPresence,
                channels: [
                    ChannelDescriptor(id: "proximity0", axis: .x, valueAttribute: "in_proximity0_raw", scale: 1),
                    ChannelDescriptor(id: "proximity1", axis: .y, valueAttribute: "in_proximity1_raw", scale: 0.01),
                    ChannelDescriptor(id: "attention", axis: .z, valueAttribute: "in_attention_input", isProcessed: true, scale: 1),
                ])
        ],
        rate: 10, rateAttribute: "in_proximity0_sampling_frequency", mode: .buffered)

    /// The phone fixture's stk3310 alone (device 0, near at 100 counts, polled): a machine whose
    /// presence can come only from a proximity sensor.
    package static let proximityOnly = device(
        0, "stk3310", "/sys/devices/platform/i2c-1/1-0048/iio:device0",
        sensors: [scalar(.proximity, "proximity", attribute: "in_proximity_raw", nearLevel: 100)])

    /// A Chromebook: convertible-two-accelerometers' lid accelerometer (cros-ec `accel-display`, 50 Hz)
    /// and chromebook-cros-ec-activity's `cros-ec-activity` as device 1, its on-body detection
    /// (`in_proximity_raw`, read as 1 on body) and its significant motion (event only: the channel
    /// stands for `events/in_activity_still_change_falling_en`). The chip's readings come only as
    /// the test feeds them, as its events do.
    package static let chromebook: [DeviceDescriptor] = [
        convertibleDisplay,
        device(
            1, "cros-ec-activity", "/sys/devices/platform/GOOG0004:00/cros-ec-dev.1.auto/cros-ec-sensorhub.2.auto/cros-ec-activity.5.auto/iio:device1",
            sensors: [
                scalar(.onBody, "proximity", attribute: "in_proximity_raw"),
                SensorDescriptor(
                    kind: .significantMotion,
                    channels: [
                        ChannelDescriptor(id: "activity_still", axis: nil, valueAttribute: "events/in_activity_still_change_falling_en", isProcessed: true)
                    ]),
            ],
            mode: .buffered),
    ]

    /// wrist-bma400-steps: a bma400 whose accelerometer (0.019154 m/s² per count, 12.5 to 800 Hz,
    /// buffered) counts steps itself (`in_steps_input`, 24 bits) and tells still, walking and running
    /// (`in_activity_*_input`, %), with their events (`events/in_steps_change_en`,
    /// `events/in_activity_change_en`): drivers/iio/accel/bma400_core.c (Linux 6.12). The chip's
    /// readings are the test's (`ScriptedSource.readings`), its events pushed (`ScriptedSource.push`).
    package static let bma400 = device(
        0, "bma400", "/sys/devices/platform/soc/i2c-1/1-0014/iio:device0",
        sensors: [
            vector(.accelerometer, "accel", scale: 0.019154),
            scalar(.stepCounter, "steps", attribute: "in_steps_input"),
            SensorDescriptor(
                kind: .activityRecognizer,
                channels: [
                    ChannelDescriptor(id: "activity_still", axis: .x, valueAttribute: "in_activity_still_input", isProcessed: true, scale: 1),
                    ChannelDescriptor(id: "activity_walking", axis: .y, valueAttribute: "in_activity_walking_input", isProcessed: true, scale: 1),
                    ChannelDescriptor(id: "activity_running", axis: .z, valueAttribute: "in_activity_running_input", isProcessed: true, scale: 1),
                ]),
        ],
        rates: [12.5, 25, 50, 100, 200, 400, 800], rate: 100, rateAttribute: "in_accel_sampling_frequency", mode: .buffered)

    // MARK: Building them

    /// A device numbered `number` (`iio:deviceN`); `rates`: its `sampling_frequency_available`.
    package static func device(
        _ number: Int32, _ name: String, _ syspath: String, label: String? = nil, location: SensorLocation = .display,
        sensors: [SensorDescriptor], rates: [Double]? = nil, rate: Double? = nil, rateAttribute: String? = nil, mode: CaptureMode = .polled
    ) -> DeviceDescriptor {
        DeviceDescriptor(
            number: DeviceNumber(number), name: name, syspath: syspath, label: label, location: location, sensors: sensors,
            availableRates: rates.map { .list($0) }, samplingFrequency: rate,
            samplingFrequencyAttribute: rate == nil ? nil : rateAttribute ?? "sampling_frequency", captureMode: mode)
    }

    /// A three-axis sensor whose channels are `in_<prefix>_{x,y,z}_raw`, `scale` SI units per count,
    /// its mount matrix `mountMatrix` (rows, Linux userspace's frame), turned into the device frame as
    /// the device layer does (`DeviceFrame.transform`).
    package static func vector(
        _ kind: SensorKind, _ prefix: String, scale: Double = 1, scales: [Double]? = nil, offset: Double = 0, mountMatrix: [Double]? = nil,
        source: String = "sysfs:in_mount_matrix"
    ) -> SensorDescriptor {
        let scales = scales ?? [scale, scale, scale]
        let axes: [Axis] = [.x, .y, .z]
        let channels = zip(axes, scales).map { axis, scale in
            ChannelDescriptor(id: "\(prefix)_\(axis)", axis: axis, valueAttribute: "in_\(prefix)_\(axis)_raw", scale: scale, offset: offset)
        }
        let matrix = mountMatrix.map(Matrix3.init(rowMajor:)) ?? .identity
        // Every matrix here is one of the fixtures', each a valid one: a failure is the kit's own mistake.
        let frame = (try? DeviceFrame.transform(mountMatrix: matrix)) ?? .identity
        return SensorDescriptor(
            kind: kind, channels: channels, mountMatrix: matrix, mountMatrixSource: mountMatrix == nil ? "identity" : source, deviceFrame: frame)
    }

    /// A one-channel sensor read from `attribute`, `scale` SI units per count (1: a processed `_input`).
    package static func scalar(
        _ kind: SensorKind, _ id: String, attribute: String, scale: Double = 1, nearLevel: Double? = nil, readsVendorUnits: Bool? = nil
    ) -> SensorDescriptor {
        let channel = ChannelDescriptor(id: id, axis: nil, valueAttribute: attribute, isProcessed: attribute.hasSuffix("_input"), scale: scale)
        return SensorDescriptor(kind: kind, channels: [channel], nearLevel: nearLevel, readsVendorUnits: readsVendorUnits)
    }
}

extension DeviceDescriptor {
    /// The sample the device layer makes of `kind`'s raw `counts` (x, y, z; a scalar's in x) read at
    /// `timestamp` (ns): offset, scale, the mount matrix into the device frame; nil for a reading no
    /// sensor of its kind can produce, which the device layer drops.
    package func sample(_ kind: SensorKind, counts: Vector3, at timestamp: Int64) -> SensorSample? {
        guard let sensor = sensor(kind) else { return nil }
        var converter = SampleConverter(sensor: sensor, device: number)
        return converter.sample(raw: counts, timestamp: timestamp)
    }

    /// One buffered scan of this IMU: its accelerometer's and gyroscope's counts, taken at `timestamp`.
    package func scan(accelerometer: Vector3, gyroscope: Vector3 = .zero, at timestamp: Int64) -> [SensorSample] {
        [sample(.accelerometer, counts: accelerometer, at: timestamp), sample(.gyroscope, counts: gyroscope, at: timestamp)].compactMap { $0 }
    }
}

extension DeviceDescriptor {
    /// A recording's accelerometer rows (specific force in m/s², device frame, own timestamps) as this
    /// device's reads, one sample each, first first.
    package func reads(of rows: [AccelerometerTable.Row]) -> [[SensorSample]] {
        rows.map { [SensorSample(kind: .accelerometer, device: number, timestamp: $0.timestamp, vector: $0.specificForce)] }
    }
}
