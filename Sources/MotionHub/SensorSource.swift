import MotionCore
import MotionDevices
import MotionSystem
import NIOCore

/// Where the hub's sensors come from: this machine's IIO devices, or a recording.
public protocol SensorSource: Sendable {
    /// This machine's devices now (or the recording's): listed at start, before clients are served.
    func listDevices() throws -> DeviceListing
    /// Other machines' devices, each listed on a thread of its own off the start path, now and every
    /// `relistInterval` (a board may answer slowly, or never).
    var remotes: [NetworkDiscovery] { get }
    /// Prepares reading `kinds` of `device` at `rate` Hz or faster, its samples waiting up to `latency`
    /// seconds to be read together where the device can hold them; a stream may read on `eventLoop`
    /// (the hub's) instead of a thread of its own. `restsWhenStill`: only event streams need it, so
    /// a polled accelerometer may be read more slowly while it lies still (`AdaptivePolling`).
    func open(
        _ device: DeviceDescriptor, kinds: [SensorKind], rate: Double, latency: Double, restsWhenStill: Bool, eventLoop: any EventLoop
    ) throws -> any SensorStream
    /// As `open(_:kinds:rate:latency:restsWhenStill:eventLoop:)`, `kinds` holding chip functions
    /// (`SensorKind.isChipFunction`) read at their events and every `chipInterval` seconds while they
    /// change (nil: none is read). A source implements one of the two; the default of this one opens
    /// chip functions as any other kind (a recording's samples).
    func open(
        _ device: DeviceDescriptor, kinds: [SensorKind], rate: Double, latency: Double, restsWhenStill: Bool, chipInterval: Double?,
        eventLoop: any EventLoop
    ) throws -> any SensorStream
    /// Whether a chip's own functions may stand in for the sensors a stream requires (motiond.conf's
    /// `chip_functions`; default true).
    var usesChipFunctions: Bool { get }
    /// Whether devices come and go (then udev's hot-plug events are followed).
    var followsHotPlug: Bool { get }
    /// How the device's sensors are read.
    func readingMode(of device: DeviceDescriptor) -> ReadingMode
    /// Seconds between listings of each remote's devices (no udev tells of them).
    var relistInterval: Double { get }
    /// The last resort for `device`, which no re-arm woke: its driver unbound and bound again
    /// (`DriverRebind`), where the source may; returns what was rebound, for the log, or nil where it
    /// may not (the default: the configuration did not allow it, or the device is not this machine's).
    /// Blocks: off the loop.
    func rebind(_ device: DeviceDescriptor) throws(DeviceError) -> String?
}

extension SensorStream {
    public var restMode: (mode: RestMode, note: DeviceError?)? { nil }
    public var readingNote: DeviceError? { restMode?.note }
}

extension SensorSource {
    // Each source implements one of the two `open`s: the other forwards to it.
    public func open(
        _ device: DeviceDescriptor, kinds: [SensorKind], rate: Double, latency: Double, restsWhenStill: Bool, chipInterval: Double?,
        eventLoop: any EventLoop
    ) throws -> any SensorStream {
        try open(device, kinds: kinds, rate: rate, latency: latency, restsWhenStill: restsWhenStill, eventLoop: eventLoop)
    }
    public func open(
        _ device: DeviceDescriptor, kinds: [SensorKind], rate: Double, latency: Double, restsWhenStill: Bool, eventLoop: any EventLoop
    ) throws -> any SensorStream {
        try open(device, kinds: kinds, rate: rate, latency: latency, restsWhenStill: restsWhenStill, chipInterval: nil, eventLoop: eventLoop)
    }
    public var usesChipFunctions: Bool { true }
    public var remotes: [NetworkDiscovery] { [] }
    public var relistInterval: Double { 10 }
    public func rebind(_ device: DeviceDescriptor) throws(DeviceError) -> String? { nil }
}

/// Where devices are listed from; listings of one origin replace only that origin's devices.
public enum DeviceOrigin: Hashable, Comparable, Sendable {
    /// This machine (udev and sysfs), or the recording.
    case thisMachine
    /// The remote at this index of `SensorSource.remotes`.
    case remote(Int)
}

/// How a device's sensors are read, as DEVICES and STATUS name it (`rawValue`).
public enum ReadingMode: String, Sendable, Hashable, CaseIterable {
    /// From its IIO buffer.
    case buffered
    /// By reading sysfs at the rate.
    case polled
    /// Another machine's, through its iiod.
    case network
    /// From a recording.
    case replayed
    /// A chip's functions, read when its events say something changed (and at an interval).
    case events

    /// A capture's mode.
    public init(_ mode: CaptureMode) {
        switch mode {
        case .buffered: self = .buffered
        case .polled: self = .polled
        }
    }
}

/// Some sensors of one device, being read.
public protocol SensorStream: AnyObject, Sendable {
    /// The rate it runs at, Hz.
    var rate: Double { get }
    /// How it reads now: `buffered`, `polled`, `replayed`, or `events` (a chip's functions).
    var readingMode: ReadingMode { get }
    /// For an accelerometer that only event streams read: how it learns of a move while it rests,
    /// and why a better way was refused or given up (nil: it does not rest).
    var restMode: (mode: RestMode, note: DeviceError?)? { get }
    /// Why it reads in a poorer way than it might (STATUS' `rest_note`): the rest's note, or why a
    /// chip's events could not be had (nil: none).
    var readingNote: DeviceError? { get }
    /// Starts reading; `handler` gets every event, in order, on a thread of the stream's or on the
    /// event loop it was opened with. After each read's samples comes `.readComplete`: the hub hands
    /// samples on only then.
    func start(handler: @escaping @Sendable (SensorEvent) -> Void)
    /// Stops reading and waits until no more events come.
    func stop()
}

/// The IIO devices of this machine, found through libudev and read through libiio; and those of the
/// machines whose iiod is configured (`network_sensors`), through libiio's network backend.
public struct HardwareSource: SensorSource {
    /// Seconds a buffered capture waits for its first scan before polling (nil: the capture's default).
    public var firstDataTimeout: Double?
    /// Mount matrices from motiond.conf, which win over udev's and sysfs's.
    public var mountMatrixOverrides: [MountMatrixOverride]
    /// The other machines' sensors, each numbered from its own `firstNumber`.
    public let remotes: [NetworkDiscovery]
    /// Seconds between reads of a resting accelerometer that its motion events wake.
    public var motionEventHeartbeat: Double
    /// Whether a sensor that no re-arm woke has its driver unbound and bound again (root only).
    public var rebindsStalledSensors = false
    /// Whether a chip's own functions (step counter, activity, significant motion, on-body) are read
    /// where a stream prefers them (motiond.conf's `chip_functions`).
    public var usesChipFunctions = true

    /// The first device number of the first remote: far above any local one.
    public static let firstRemoteNumber: Int32 = 10_000

    /// The machine's sensors, and those served by iiod at each of `networkSensors` (`ip:host[:port]`).
    /// `motionEventHeartbeat`: seconds between reads of a resting accelerometer that its motion events wake.
    public init(
        firstDataTimeout: Double? = nil, mountMatrixOverrides: [MountMatrixOverride] = [], networkSensors: [String] = [],
        motionEventHeartbeat: Double = AdaptivePolling.heartbeat
    ) {
        self.firstDataTimeout = firstDataTimeout
        self.motionEventHeartbeat = motionEventHeartbeat
        self.mountMatrixOverrides = mountMatrixOverrides
        remotes = networkSensors.enumerated().map { index, uri in
            NetworkDiscovery(
                uri: uri, firstNumber: Self.firstRemoteNumber + Int32(index) * NetworkDiscovery.numbersPerContext, overrides: mountMatrixOverrides)
        }
    }

    public func listDevices() throws -> DeviceListing {
        try DeviceDiscovery(overrides: mountMatrixOverrides).listDevices()
    }

    /// A device's sampled kinds go to a `LoopCapture`, its chip functions to a `ChipWatch`, both to a
    /// `CompositeStream`.
    public func open(
        _ device: DeviceDescriptor, kinds: [SensorKind], rate: Double, latency: Double, restsWhenStill: Bool, chipInterval: Double?,
        eventLoop: any EventLoop
    ) throws -> any SensorStream {
        let chipKinds = kinds.filter(\.isChipFunction)
        let sampledKinds = kinds.filter { !$0.isChipFunction }
        guard !chipKinds.isEmpty, remotes.allSatisfy({ !$0.owns(device.number) }) else {
            return try openSampled(device, kinds: kinds, rate: rate, latency: latency, restsWhenStill: restsWhenStill, eventLoop: eventLoop)
        }
        let watch = ChipWatch(
            device: device.number, kinds: Set(chipKinds), interval: chipInterval ?? CapturePlan.eventChipInterval, heartbeat: motionEventHeartbeat,
            eventLoop: eventLoop, deviceExists: { Syscall.exists("/sys/bus/iio/devices/\(device.number.sysname)") },
            open: { () throws(DeviceError) in try ChipFunctions(device: device, kinds: Set(chipKinds)) })
        guard !sampledKinds.isEmpty else { return watch }
        let sampled = try openSampled(device, kinds: sampledKinds, rate: rate, latency: latency, restsWhenStill: restsWhenStill, eventLoop: eventLoop)
        return CompositeStream(sampled: sampled, chip: watch)
    }

    private func openSampled(
        _ device: DeviceDescriptor, kinds: [SensorKind], rate: Double, latency: Double, restsWhenStill: Bool, eventLoop: any EventLoop
    ) throws -> any SensorStream {
        if let remote = remotes.first(where: { $0.owns(device.number) }) { return try remote.open(device, kinds: kinds, rate: rate) }
        // A buffered device is read on the hub's loop (one wake-up per batch), and so is one polled
        // slowly; one polled fast has a thread of the capture's, so that slow sysfs reads never hold the loop.
        return LoopCapture(
            device: device, kinds: kinds, rate: rate, latency: latency, eventLoop: eventLoop, firstDataTimeout: firstDataTimeout,
            restsWhenStill: restsWhenStill, heartbeat: motionEventHeartbeat)
    }

    public var followsHotPlug: Bool { true }

    public func rebind(_ device: DeviceDescriptor) throws(DeviceError) -> String? {
        guard rebindsStalledSensors, !remotes.contains(where: { $0.owns(device.number) }) else { return nil }
        return try DriverRebind.rebind(device.number.sysname)
    }

    /// A device of chip functions only (a ChromeOS EC's activity) is read at its events.
    public func readingMode(of device: DeviceDescriptor) -> ReadingMode {
        if remotes.contains(where: { $0.owns(device.number) }) { return .network }
        return !device.kinds.isEmpty && device.kinds.allSatisfy(\.isChipFunction) ? .events : ReadingMode(device.captureMode)
    }
}

extension SensorCapture: SensorStream {
    public var readingMode: ReadingMode { ReadingMode(mode) }
}

extension SamplePlayer: SensorStream {
    public var readingMode: ReadingMode { .replayed }
}
