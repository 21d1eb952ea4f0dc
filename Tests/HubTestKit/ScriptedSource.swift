import MotionCore
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
    }

    package init(devices: [DeviceDescriptor]) { self.devices = devices }

    package func listDevices() throws -> DeviceListing { DeviceListing(devices: devices, problems: []) }

    package func open(
        _ device: DeviceDescriptor, kinds: [SensorKind], rate: Double, latency: Double, restsWhenStill: Bool, eventLoop: any EventLoop
    ) throws -> any SensorStream {
        let deviceRate = device.captureRate(for: rate, in: device.captureMode)
        openings.withLock {
            $0.append(Opening(device: device.number, kinds: Set(kinds), rate: rate, deviceRate: deviceRate, latency: latency, restsWhenStill: restsWhenStill))
        }
        let stream = Stream(source: self, device: device, kinds: kinds, rate: deviceRate, eventLoop: eventLoop)
        streams.withLock { $0[device.number] = stream }
        return stream
    }

    /// How many times `device` was opened.
    package func openingCount(of device: DeviceNumber) -> Int { openings.withLock { $0.count { $0.device == device } } }

    /// `device`'s latest opening, if it is running now.
    package func running(_ device: DeviceNumber) -> Opening? {
        guard streams.withLock({ $0[device]?.isRunning }) == true else { return nil }
        return openings.withLock { $0.last { $0.device == device } }
    }

    /// Hands `reads` to `device`'s capture, each read's samples of the kinds it was opened for, then the
    /// end of the read; on the loop. Returns whether it runs (a closed device takes nothing).
    package func feed(_ reads: [[SensorSample]], to device: DeviceNumber) -> Bool {
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

    package func readingMode(of device: DeviceDescriptor) -> ReadingMode { ReadingMode(device.captureMode) }

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
