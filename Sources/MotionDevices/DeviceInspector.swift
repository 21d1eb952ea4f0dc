import CLibIIO
import MotionCore
import MotionSystem

/// Builds a `DeviceDescriptor` from what libiio parsed of a device and what udev says of it.
struct DeviceInspector {
    var sysfs: Sysfs
    /// The device's udev properties (`ACCEL_MOUNT_MATRIX`, `PROXIMITY_NEAR_LEVEL`, …).
    var properties: [String: String]
    /// Mount matrices from motiond.conf, which win over udev's and sysfs's.
    var overrides: [MountMatrixOverride] = []
    /// Where device nodes live (`/dev`).
    var deviceNodeDirectory = "/dev"

    func describe(_ device: IIODevice, syspath: String, context: IIOContext) throws(DeviceError) -> DeviceDescriptor {
        try describe(
            sysname: device.id, name: device.name, channels: device.channels, syspath: syspath,
            triggers: context.devices.filter(\.isTrigger).map(\.name))
    }

    /// Describes a device from its channels; `triggers` are the names of the machine's IIO triggers,
    /// `nil` when libiio could not list them: then the device is read polled.
    func describe(
        sysname: String, name: String, channels allChannels: [any ChannelInfo], syspath: String, triggers: [String]?,
        problems known: [DeviceError] = []
    ) throws(DeviceError) -> DeviceDescriptor {
        guard let number = DeviceNumber(sysname: sysname) else { throw .noMotionChannels(device: sysname) }
        guard sysfs.deviceExists(sysname) else { throw .deviceVanished(device: sysname) }
        var problems = known
        let channels = allChannels.filter { !$0.isOutput }
        // A label or location that cannot be read is a problem of that attribute, not of the device.
        var label: String? = nil
        switch sysfs.readIfPresent(device: sysname, attribute: "label") {
        case .success(let text): label = text.map { String($0.trimmingWhitespace) }
        case .failure(let error): problems.append(error)
        }
        let identity = MountMatrixOverride.Identity(name: name, label: label, syspath: syspath)

        var sensors: [SensorDescriptor] = []
        for driver in SensorDrivers.all {
            let ofKind = driver.channels(among: channels, deviceName: name)
            if ofKind.isEmpty, let channel = driver.eventOnlyChannel(device: sysname, sysfs: sysfs) {
                sensors.append(SensorDescriptor(kind: driver.kind, channels: [channel]))
                continue
            }
            guard !ofKind.isEmpty else { continue }
            do {
                sensors.append(try sensor(driver, channels: ofKind, device: sysname, identity: identity, problems: &problems))
            } catch {
                problems.append(error)
            }
        }
        guard !sensors.isEmpty else { throw problems.first ?? .noMotionChannels(device: sysname) }

        var availableRates: AvailableRates? = nil
        if case .success(let text?) = sysfs.readIfPresent(device: sysname, attribute: "sampling_frequency_available") {
            availableRates = AttributeParser.availableRates(text)
            if availableRates == nil {
                problems.append(.attributeMalformed(
                    device: sysname, attribute: "sampling_frequency_available", value: text,
                    expected: "rates from \(Self.plausibleRates) Hz separated by spaces, or [min step max]"))
            }
        }
        let samplingFrequencyAttribute = (["sampling_frequency"] + sensors.flatMap {
            SensorDrivers.driver(for: $0.kind).sysfsNames.map { "in_\($0)_sampling_frequency" }
        }).first { sysfs.exists(device: sysname, attribute: $0) }
        var samplingFrequency: Double? = nil
        if let samplingFrequencyAttribute,
            case .success(let text) = sysfs.read(device: sysname, attribute: samplingFrequencyAttribute)
        {
            samplingFrequency = AttributeParser.rate(text)
            if samplingFrequency == nil {
                problems.append(.attributeMalformed(
                    device: sysname, attribute: samplingFrequencyAttribute, value: text, expected: "a rate from \(Self.plausibleRates) Hz"))
            }
        }

        var timestampScan: TimestampScan? = nil
        if let ts = channels.first(where: { $0.type == IIO_TIMESTAMP && $0.isScanElement }),
            case .success(let text) = sysfs.read(device: sysname, attribute: "scan_elements/in_timestamp_type"),
            let type = AttributeParser.scanType(text)
        {
            timestampScan = TimestampScan(index: ts.scanIndex, scanType: type)
        }

        // Without libiio's context there is no buffer to read through: polled, with the reason known.
        // Another machine's buffer is iiod's to open: it needs only channels that are scan elements.
        let bufferProblem = sysfs.network != nil ? scanElementProblem(sysname: sysname, sensors: sensors)
            : triggers == nil ? known.first : bufferedCaptureProblem(sysname: sysname, sensors: sensors)
        if let bufferProblem, triggers != nil || sysfs.network != nil { problems.append(bufferProblem) }

        return DeviceDescriptor(
            number: number, name: name, syspath: syspath, label: label,
            location: location(label: label, device: sysname, problems: &problems), sensors: sensors,
            availableRates: availableRates, samplingFrequency: samplingFrequency,
            samplingFrequencyAttribute: samplingFrequencyAttribute,
            captureMode: bufferProblem == nil ? .buffered : .polled,
            timestampScan: timestampScan,
            trigger: triggers.flatMap { trigger(for: sysname, name: name, triggers: $0) },
            problems: problems)
    }

    /// `PlausibleRate.hertz` as the problems name it: `0.097 to 100000`.
    private static let plausibleRates = "\(PlausibleRate.hertz.lowerBound) to \(Int(PlausibleRate.hertz.upperBound))"

    /// Why the device cannot be captured buffered, or `nil` if it can.
    private func bufferedCaptureProblem(sysname: String, sensors: [SensorDescriptor]) -> DeviceError? {
        if !Syscall.exists("\(deviceNodeDirectory)/\(sysname)") {
            return .attributeUnreadable(device: sysname, attribute: "\(deviceNodeDirectory)/\(sysname)", errno: ErrnoValue.noSuchFile)
        }
        if !sysfs.exists(device: sysname, attribute: "buffer/enable") {
            return .attributeUnreadable(device: sysname, attribute: "buffer/enable", errno: ErrnoValue.noSuchFile)
        }
        return scanElementProblem(sysname: sysname, sensors: sensors)
    }

    /// The first channel of `sensors` that is not a scan element (a buffer cannot carry it), or `nil`.
    /// A chip function's channels are never scan elements (the drivers give them `scan_index` -1:
    /// bma400_core.c:381, 406, Linux 6.12): they are read from sysfs whatever the mode, so they
    /// leave the device's other sensors buffered.
    private func scanElementProblem(sysname: String, sensors: [SensorDescriptor]) -> DeviceError? {
        for sensor in sensors where !sensor.kind.isChipFunction {
            for channel in sensor.channels where channel.scanType == nil || channel.scanIndex == nil {
                return .attributeUnreadable(device: sysname, attribute: "scan_elements/in_\(channel.id)_type", errno: ErrnoValue.noSuchFile)
            }
        }
        return nil
    }

    private func sensor(
        _ driver: any SensorDriver, channels: [any ChannelInfo], device: String, identity: MountMatrixOverride.Identity,
        problems: inout [DeviceError]
    ) throws(DeviceError) -> SensorDescriptor {
        var described: [ChannelDescriptor] = []
        if driver.isVector {
            for (axis, modifier) in [(Axis.x, IIO_MOD_X), (.y, IIO_MOD_Y), (.z, IIO_MOD_Z)] {
                guard let channel = channels.first(where: { $0.modifier == modifier }) else {
                    throw .attributeUnreadable(device: device, attribute: "in_\(driver.sysfsName)_\(axis)_raw", errno: ErrnoValue.noSuchFile)
                }
                described.append(try self.channel(channel, axis: axis, driver: driver, device: device, problems: &problems))
            }
        } else if channels.contains(where: { driver.component(of: $0) != nil }) {
            // Each channel its own component (x still, y walking, z running; x presence, y distance,
            // z attention), in that order; a component without a channel is not described.
            for axis in Axis.allCases {
                guard let channel = channels.first(where: { driver.component(of: $0) == axis }) else { continue }
                described.append(try self.channel(channel, axis: axis, driver: driver, device: device, problems: &problems))
            }
        } else {
            // A proximity or light device may number its channels (in_proximity0_raw); the first one is used.
            let channel = channels.sorted { $0.id < $1.id }.first!
            described.append(try self.channel(channel, axis: nil, driver: driver, device: device, problems: &problems))
        }
        let (matrix, source) = try mountMatrix(driver: driver, device: device, identity: identity)
        let deviceFrame: DeviceFrame.Transform
        do {
            deviceFrame = try DeviceFrame.transform(mountMatrix: matrix)
        } catch {
            throw .attributeMalformed(
                device: device, attribute: String(source.drop { $0 != ":" }.dropFirst()), value: matrix.rowMajor.map { "\($0)" }.joined(separator: ", "),
                expected: "a rotation (\(error))")
        }
        var nearLevel: Double? = nil
        if driver.kind == .proximity {
            nearLevel = try self.nearLevel(channel: channels.sorted { $0.id < $1.id }.first!, device: device)
        }
        // Light without a scale is read in raw counts: iio-sensor-proxy calls that unit "vendor".
        let channel = channels.sorted { $0.id < $1.id }.first!
        let vendorUnits = driver.kind == .light
            ? channel.filename(ofAttribute: "input") == nil && channel.filename(ofAttribute: "scale") == nil : nil
        return SensorDescriptor(
            kind: driver.kind, channels: described, mountMatrix: matrix, mountMatrixSource: source,
            deviceFrame: deviceFrame, nearLevel: nearLevel, readsVendorUnits: vendorUnits)
    }

    /// Kinds whose raw value needs no scale: a count of the driver's own (proximity), a light
    /// sensor's vendor units, a heading, a person's presence or a body's nearness (0 or 1).
    private static let kindsWithoutScale: Set<SensorKind> = [.proximity, .light, .compass, .humanPresence, .onBody]

    private func channel(
        _ channel: any ChannelInfo, axis: Axis?, driver: any SensorDriver, device: String, problems: inout [DeviceError]
    ) throws(DeviceError) -> ChannelDescriptor {
        let valueAttribute: String
        let isProcessed: Bool
        if let raw = channel.filename(ofAttribute: "raw") {
            valueAttribute = raw
            isProcessed = false
        } else if let input = channel.filename(ofAttribute: "input") {
            valueAttribute = input
            isProcessed = true
        } else {
            throw .attributeUnreadable(device: device, attribute: "in_\(channel.id)_raw", errno: ErrnoValue.noSuchFile)
        }
        var scale = 1.0
        var offset = 0.0
        if !isProcessed {
            if let file = channel.filename(ofAttribute: "scale") {
                scale = try number(channel, attribute: "scale", device: device)
                // 0 or a negative scale turns every reading into nonsense, and one so large that a
                // 32-bit count overflows a Double does too: refused here, with the value, instead of
                // streaming zeros.
                guard scale > 0, scale <= Self.largestScale else {
                    throw .attributeMalformed(
                        device: device, attribute: file, value: "\(scale)", expected: "a scale above 0 and at most \(Self.largestScale)")
                }
            } else if !Self.kindsWithoutScale.contains(driver.kind) {
                throw .missingScale(device: device, channel: channel.id)
            }
            if channel.filename(ofAttribute: "offset") != nil {
                offset = try number(channel, attribute: "offset", device: device)
            }
        }
        var scanIndex: Int? = nil
        var scanType: ScanType? = nil
        // A value read processed (`_input`) has no scale for the buffer's counts, which are the
        // driver's own (ms5611 buffers pascals beside an `in_pressure_input` in kPa): such a channel
        // is read polled, in the unit its `_input` is documented in.
        // The exception: an HID presence sensor's attention, which the driver buffers in percent as
        // its `_input` gives it (hid-sensor-prox.c `prox_capture_sample` multiplies both by 100).
        // A chip function's channel is never read from a buffer.
        if channel.isScanElement && !driver.kind.isChipFunction
            && (!isProcessed || (driver.kind == .humanPresence && channel.id == HumanPresenceDriver.attention))
        {
            let attribute = "scan_elements/in_\(channel.id)_type"
            if case .success(let text) = sysfs.read(device: device, attribute: attribute) {
                scanType = AttributeParser.scanType(text)
                if scanType == nil {
                    // Not fatal: the device is still read, polled.
                    problems.append(.unsupportedScanType(device: device, attribute: attribute, value: text))
                }
            }
            scanIndex = scanType == nil ? nil : channel.scanIndex
        }
        return ChannelDescriptor(
            id: channel.id, axis: axis, valueAttribute: valueAttribute, isProcessed: isProcessed,
            scale: scale * driver.unitToSI, offset: offset, scanIndex: scanIndex, scanType: scanType)
    }

    /// The largest `scale` accepted, IIO units per count (the largest in the kernel's drivers is
    /// in the hundreds).
    static let largestScale = 1e6

    private func number(_ channel: any ChannelInfo, attribute: String, device: String) throws(DeviceError) -> Double {
        let file = channel.filename(ofAttribute: attribute) ?? attribute
        // Read the file directly rather than through libiio, which drops the last byte of every value.
        let text = try sysfs.read(device: device, attribute: file).get()
        guard let value = AttributeParser.number(text) else {
            throw .attributeMalformed(device: device, attribute: file, value: text, expected: "a decimal number")
        }
        return value
    }

    private func mountMatrix(
        driver: any SensorDriver, device: String, identity: MountMatrixOverride.Identity
    ) throws(DeviceError) -> (Matrix3, String) {
        if let override = overrides.first(where: { $0.matches(identity) }) {
            return (override.matrix, "config:\(override.match)")
        }
        if let text = properties["ACCEL_MOUNT_MATRIX"] {
            guard let m = AttributeParser.mountMatrix(text) else {
                throw .attributeMalformed(
                    device: device, attribute: "ACCEL_MOUNT_MATRIX", value: text,
                    expected: "a 3×3 matrix \"x1, y1, z1; x2, y2, z2; x3, y3, z3\"")
            }
            return (m, "udev:ACCEL_MOUNT_MATRIX")
        }
        for attribute in driver.mountMatrixAttributes {
            guard let text = try sysfs.readIfPresent(device: device, attribute: attribute).get() else { continue }
            guard let m = AttributeParser.mountMatrix(text) else {
                throw .attributeMalformed(
                    device: device, attribute: attribute, value: text,
                    expected: "a 3×3 matrix \"x1, y1, z1; x2, y2, z2; x3, y3, z3\"")
            }
            return (m, "sysfs:\(attribute)")
        }
        return (.identity, "identity")
    }

    /// udev's `ACCEL_LOCATION` (systemd hwdb), else the `label` (`accel-base`, `accel-display`), else
    /// sysfs `location` (cros-ec's `base`/`lid`), else the display. A value it cannot parse is a
    /// problem and counts as the display, as iio-sensor-proxy falls back ("Failed to parse location").
    private func location(label: String?, device: String, problems: inout [DeviceError]) -> SensorLocation {
        if let text = properties["ACCEL_LOCATION"] {
            if let location = SensorLocation(rawValue: String(text.trimmingWhitespace)) { return location }
            problems.append(.attributeMalformed(device: device, attribute: "ACCEL_LOCATION", value: text, expected: "base or display"))
            return .display
        }
        switch label {
        case "accel-base": return .base
        case "accel-display": return .display
        default: break
        }
        switch sysfs.readIfPresent(device: device, attribute: "location") {
        case .success(let text?):
            switch text.trimmingWhitespace {
            case "base": return .base
            case "lid", "display": return .display
            default:
                problems.append(.attributeMalformed(device: device, attribute: "location", value: text, expected: "base, lid or display"))
            }
        case .success(nil): break
        case .failure(let error): problems.append(error)
        }
        return .display
    }

    private func nearLevel(channel: any ChannelInfo, device: String) throws(DeviceError) -> Double? {
        if let text = properties["PROXIMITY_NEAR_LEVEL"] {
            guard let v = AttributeParser.number(text), v >= 0 else {
                throw .attributeMalformed(device: device, attribute: "PROXIMITY_NEAR_LEVEL", value: text, expected: "a number ≥ 0")
            }
            return v
        }
        guard channel.filename(ofAttribute: "nearlevel") != nil else { return nil }
        let v = try number(channel, attribute: "nearlevel", device: device)
        guard v >= 0 else {
            throw .attributeMalformed(device: device, attribute: "in_proximity_nearlevel", value: "\(v)", expected: "a number ≥ 0")
        }
        return v
    }

    /// The trigger for buffered capture: the current one if set, else the device's own
    /// (the kernel names it `<name>-dev<N>`), else none (the device needs none, as HID sensors).
    private func trigger(for sysname: String, name: String, triggers: [String]) -> String? {
        guard sysfs.exists(device: sysname, attribute: "trigger/current_trigger") else { return nil }
        if case .success(let current) = sysfs.read(device: sysname, attribute: "trigger/current_trigger"),
            !current.trimmingWhitespace.isEmpty
        {
            return String(current.trimmingWhitespace)
        }
        let number = DeviceNumber(sysname: sysname)?.rawValue ?? -1
        return triggers.first { $0 == "\(name)-dev\(number)" }
            ?? triggers.first { $0.hasPrefix(name) }
    }
}
