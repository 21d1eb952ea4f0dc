import FoundationEssentials
import MotionCore
import MotionDevices
import NIOCore
import MotionWire
import Synchronization

/// A recording (docs/recording.md) played as if its devices were plugged in: the whole daemon runs
/// on it, with no hardware.
public final class ReplaySource: SensorSource {
    /// The devices of the recording.
    public let devices: [DeviceDescriptor]
    private let samples: [DeviceNumber: [SensorSample]]
    private let speed: Double
    private let loops: Bool
    /// Every player counts from the moment the first one opened, so that the recording starts
    /// with its first watcher and its devices stay in step.
    private let epoch = Mutex<Int64?>(nil)

    /// Reads the recording at `path`, to be played at `speed` (2: twice as fast), over and over if `loops`.
    public init(path: String, speed: Double = 1, loops: Bool = false) throws {
        let (header, recorded) = try Recording.read(path: path)
        var devices: [DeviceDescriptor] = []
        var deviceOf: [SensorKind: DeviceNumber] = [:]
        for (index, device) in header.devices.enumerated() {
            let number = DeviceNumber(sysname: device.device) ?? DeviceNumber(Int32(index))
            let sensors = device.kinds.map { kind in
                // The recorded values already have the device's mount matrix applied.
                SensorDescriptor(kind: kind, channels: [], mountMatrixSource: "recording")
            }
            devices.append(DeviceDescriptor(number: number, name: device.name, syspath: "replay:\(path)", sensors: sensors))
            for kind in device.kinds where deviceOf[kind] == nil { deviceOf[kind] = number }
        }
        var samples: [DeviceNumber: [SensorSample]] = [:]
        for sample in recorded {
            // Recording.read checked that a device of the header carries every sample's kind.
            let kind = sample.stream.descriptor.rawSensor!
            let number = deviceOf[kind]!
            // In the device layer's SI units (the inverse of what the hub sends on the wire).
            let vector = kind == .accelerometer ? sample.vector.specificForceFromAcceleration : sample.vector
            samples[number, default: []].append(
                SensorSample(kind: kind, device: number, timestamp: sample.timestamp, vector: vector, isNear: sample.near))
        }
        self.devices = devices.filter { samples[$0.number] != nil }
        self.samples = samples
        self.speed = speed
        self.loops = loops
    }

    public func listDevices() throws -> DeviceListing { DeviceListing(devices: devices, problems: []) }

    public func open(
        _ device: DeviceDescriptor, kinds: [SensorKind], rate: Double, latency: Double, restsWhenStill: Bool, eventLoop: any EventLoop
    ) throws -> any SensorStream {
        let wanted = Set(kinds)
        return SamplePlayer(
            samples: (samples[device.number] ?? []).filter { wanted.contains($0.kind) }, device: device.number.sysname,
            speed: speed, loops: loops, epoch: epoch.withLock { epoch in
                if epoch == nil { epoch = SamplePlayer.now() }
                return epoch!
            })
    }

    public var followsHotPlug: Bool { false }

    public func readingMode(of device: DeviceDescriptor) -> ReadingMode { .replayed }
}
