import MotionCore
import MotionSystem

/// Reads sensors by their sysfs value attributes (`_raw` or `_input`).
///
/// Each attribute file is opened once and re-read from offset 0 (sysfs regenerates the value on
/// every such read) into one scratch buffer, so a reading makes a few `pread`s and allocates nothing.
/// libiio names the files (`DeviceInspector`); its own attribute read is not used here because it
/// opens a `FILE` (and allocates) on every call.
public final class PolledReader {
    private struct Sensor {
        var converter: SampleConverter
        /// The channels' value files, closed when the sensor goes.
        var files: OwnedDescriptors
        /// A magnetometer's: when its readings were taken (`ChangeInstant`). An accelerometer or a
        /// gyroscope read by polling is stamped at the read: its repeats (a device at rest whose counts
        /// hold) are samples the rate-bound detectors need.
        var changes: ChangeInstant?
    }

    private let sysfs: Sysfs
    private let device: String
    private var sensors: [Sensor] = []
    private let scratch = UnsafeMutableRawBufferPointer.allocate(byteCount: 64, alignment: 8)
    /// Readings dropped so far as beyond what a sensor can measure (`SensorKind.plausibleMagnitude`).
    public private(set) var rejectedReadings = 0

    /// Opens the value attributes of `kinds` on `device`, under `sysfsRoot` (the directory that
    /// stands for `/sys`).
    public convenience init(device: DeviceDescriptor, kinds: [SensorKind], sysfsRoot: String = "/sys") throws(DeviceError) {
        try self.init(device: device, kinds: kinds, sysfs: Sysfs(root: sysfsRoot))
    }

    init(device: DeviceDescriptor, kinds: [SensorKind], sysfs: Sysfs) throws(DeviceError) {
        self.sysfs = sysfs
        self.device = device.number.sysname
        do throws(DeviceError) {
            for kind in kinds {
                guard let sensor = device.sensor(kind) else {
                    throw DeviceError.kindUnavailable(device: self.device, kind: kind.rawValue)
                }
                let files = OwnedDescriptors()
                // Another machine's attributes are read through iiod, by name, at each reading.
                for channel in sensor.channels where sysfs.network == nil {
                    let path = "\(sysfs.deviceDirectory(self.device))/\(channel.valueAttribute)"
                    do {
                        files.append(try Syscall.openReadOnly(path))
                    } catch {
                        throw DeviceError.attributeUnreadable(device: self.device, attribute: channel.valueAttribute, errno: error.rawValue)
                    }
                }
                sensors.append(Sensor(
                    converter: SampleConverter(sensor: sensor, device: device.number), files: files,
                    changes: kind == .magnetometer ? ChangeInstant() : nil))
            }
        } catch {
            close()
            throw error
        }
    }

    deinit {
        close()
        scratch.deallocate()
    }

    func close() {
        sensors.removeAll()  // and their files close
    }

    /// Reads every open sensor once, stamping the samples with `timestamp` (ns, CLOCK_MONOTONIC; a
    /// magnetometer's with the instant its value changed, a repeat of its previous measurement marked
    /// as such: `ChangeInstant`), and hands each sample to `emit`.
    public func read(timestamp: Int64, emit: (SensorSample) -> Void) throws(DeviceError) {
        for s in sensors.indices {
            var raw = Vector3.zero
            if sysfs.network != nil {
                for (c, channel) in sensors[s].converter.channels.enumerated() { raw[Axis(rawValue: c)!] = try networkValue(channel.valueAttribute) }
            }
            for (c, fd) in sensors[s].files.rawValues.enumerated() {
                raw[Axis(rawValue: c)!] = try value(fd, attribute: sensors[s].converter.channels[c].valueAttribute)
            }
            var instant = (timestamp: timestamp, isRepeat: false)
            if sensors[s].changes != nil { instant = sensors[s].changes!.instant(of: raw, readAt: timestamp) }
            if var sample = sensors[s].converter.sample(raw: raw, timestamp: instant.timestamp) {
                sample.isRepeat = instant.isRepeat
                emit(sample)
            } else {
                rejectedReadings += 1
            }
        }
    }

    @inline(__always)
    private func networkValue(_ attribute: String) throws(DeviceError) -> Double {
        let text = try sysfs.read(device: device, attribute: attribute).get()
        guard let v = text.utf8.withContiguousStorageIfAvailable({ AttributeParser.number(UnsafeRawBufferPointer($0)) }) ?? nil else {
            throw .attributeMalformed(device: device, attribute: attribute, value: text, expected: "a number")
        }
        return v
    }

    private func value(_ fd: Int32, attribute: @autoclosure () -> String) throws(DeviceError) -> Double {
        switch Syscall.readFromStart(fd, into: scratch) {
        case .failure(let e):
            throw .attributeUnreadable(device: device, attribute: attribute(), errno: e.rawValue)
        case .success(let n):
            guard let v = AttributeParser.number(UnsafeRawBufferPointer(rebasing: scratch[0..<n])) else {
                let text = String(decoding: scratch[0..<n], as: UTF8.self)
                throw .attributeMalformed(device: device, attribute: attribute(), value: text, expected: "a number")
            }
            return v
        }
    }
}
