import Logging
import MotionCore
import MotionDevices
import MotionWire
import NIOCore
import NIOEmbedded
import Synchronization
import Testing

@testable import MotionHub

/// A whole `Hub` on NIO's testing event loop, whose clock the test moves: its devices are scripted
/// (`ScriptedSource`), its clients record what they get and when. `NIOAsyncTestingEventLoop`, not
/// `EmbeddedEventLoop`: the hub stops a capture on NIO's thread pool (a reader thread may take a while
/// to join), and only the former takes the result back from another thread.
final class ScriptedHub: Sendable {
    let loop = NIOAsyncTestingEventLoop()
    let source: ScriptedSource
    let hub: Hub

    /// A hub with `devices`, listed as at start.
    init(devices: [DeviceDescriptor]) async throws {
        source = ScriptedSource(devices: devices)
        hub = Hub(eventLoop: loop, logger: Logger(label: "test"), release: "test", store: nil, source: source)
        try await list(devices)
    }

    /// The machine's devices are now `devices` (a udev event's listing).
    func list(_ devices: [DeviceDescriptor]) async throws {
        let hub = hub
        try await loop.executeInContext { hub.apply(.success(DeviceListing(devices: devices, problems: []))) }
        await settle()
    }

    /// A client of the hub that records each message with the loop's time.
    func connect() async throws -> (Client, Hub.ClientID) {
        let (hub, client) = (hub, Client(loop: loop))
        let id = try await loop.executeInContext { hub.connect(client) }
        return (client, try #require(id))
    }

    /// Sends `request` from `id`, on the loop.
    func send(_ request: Request, from id: Hub.ClientID) async throws {
        let hub = hub
        try await loop.executeInContext { hub.handle(request, from: id) }
        await settle()
    }

    /// Disconnects `id`, on the loop.
    func disconnect(_ id: Hub.ClientID) async throws {
        let hub = hub
        try await loop.executeInContext { hub.disconnect(id) }
        await settle()
    }

    /// Runs what is due now, after the captures being stopped on the thread pool have stopped (their
    /// devices can only be opened again then).
    func settle() async {
        hub.offLoop.waitUntilDone()
        await loop.run()
    }

    /// Moves the clock by `step` until `condition` holds or `limit` has passed; returns the time it
    /// took, or nil.
    func advance(by step: TimeAmount = .milliseconds(10), upTo limit: TimeAmount = .seconds(3), until condition: () -> Bool) async -> TimeAmount? {
        let start = loop.now
        while !condition() {
            guard loop.now - start < limit else { return nil }
            await loop.advanceTime(by: step)
            await settle()
        }
        return loop.now - start
    }

    /// Stops the hub and its loop.
    func shutDown() async throws {
        let hub = hub
        try await loop.executeInContext { hub.stopAll() }
        await settle()
        await loop.shutdownGracefully()
    }

    /// What one client got: each message and the loop's time then.
    final class Client: MessageSink, @unchecked Sendable {
        // @unchecked: written on the loop, read by the test between its turns (`executeInContext`).
        private let loop: NIOAsyncTestingEventLoop
        private(set) var received: [(message: AnyServerMessage, at: NIODeadline)] = []

        init(loop: NIOAsyncTestingEventLoop) { self.loop = loop }

        func receive(_ message: AnyServerMessage, line: () -> ByteBuffer?) { received.append((message, loop.now)) }

        /// The messages of `stream` received.
        func messages(of stream: StreamKind) -> [AnyServerMessage] { received.map(\.message).filter { $0.stream == stream } }

        /// The `ENDED` streams received.
        var ended: [StreamKind] {
            received.compactMap { if case .ended(let ended) = $0.message { ended.stream } else { nil } }
        }
    }
}

/// Devices whose sensors read what the test sets (`pose`), polled by the loop's clock at their
/// capture's rate: the first read one period after opening, as a polled capture's first timer.
final class ScriptedSource: SensorSource {
    let devices: [DeviceDescriptor]
    /// Each device's accelerometer reading, specific force in m/s² (device frame).
    let pose = Mutex<[DeviceNumber: Vector3]>([:])
    /// Each other kind's reading, in its unit (a gyroscope's rate, rad/s; a magnetometer's field, µT;
    /// a barometer's pressure in x, kPa); the accelerometer's `pose` where none is set.
    let readings = Mutex<[SensorKind: Vector3]>([:])
    /// The timestamps (ns) each device stamps its next reads with, first first, in place of the loop's
    /// clock: a device's own clock, which may say anything (then the loop's again).
    let stamps = Mutex<[DeviceNumber: [Int64]]>([:])
    /// How many times each device was opened.
    let openings = Mutex<[DeviceNumber: Int]>([:])
    /// Each device's latest opening.
    private let streams = Mutex<[DeviceNumber: Stream]>([:])

    init(devices: [DeviceDescriptor]) { self.devices = devices }

    func listDevices() throws -> DeviceListing { DeviceListing(devices: devices, problems: []) }

    func open(
        _ device: DeviceDescriptor, kinds: [SensorKind], rate: Double, latency: Double, restsWhenStill: Bool, eventLoop: any EventLoop
    ) throws -> any SensorStream {
        openings.withLock { $0[device.number, default: 0] += 1 }
        let stream = Stream(source: self, device: device.number, kinds: kinds, rate: rate, eventLoop: eventLoop)
        streams.withLock { $0[device.number] = stream }
        return stream
    }

    /// `device`'s capture ends as one does when its device is unplugged (before udev's listing says so).
    func vanish(_ device: DeviceNumber) { streams.withLock { $0[device] }?.vanish() }

    var followsHotPlug: Bool { true }

    func readingMode(of device: DeviceDescriptor) -> ReadingMode { .polled }

    /// One opening of a device: a repeated read on the loop.
    final class Stream: SensorStream {
        let rate: Double
        var readingMode: ReadingMode { .polled }
        private let source: ScriptedSource
        private let device: DeviceNumber
        private let kinds: [SensorKind]
        private let eventLoop: any EventLoop
        private let reads = Mutex<RepeatedTask?>(nil)
        private let handler = Mutex<(@Sendable (SensorEvent) -> Void)?>(nil)

        init(source: ScriptedSource, device: DeviceNumber, kinds: [SensorKind], rate: Double, eventLoop: any EventLoop) {
            (self.source, self.device, self.kinds, self.rate, self.eventLoop) = (source, device, kinds, rate, eventLoop)
        }

        func start(handler: @escaping @Sendable (SensorEvent) -> Void) {
            let period = TimeAmount.nanoseconds(Int64(1e9 / rate))
            let (source, device, kinds, eventLoop) = (source, device, kinds, eventLoop)
            let task = eventLoop.scheduleRepeatedTask(initialDelay: period, delay: period) { _ in
                let scripted = source.stamps.withLock { $0[device]?.isEmpty == false ? $0[device]!.removeFirst() : nil }
                let t = scripted ?? Int64(eventLoop.now.uptimeNanoseconds)
                let force = source.pose.withLock { $0[device] } ?? Vector3(x: 0, y: 0, z: Units.standardGravity)
                let readings = source.readings.withLock { $0 }
                for kind in kinds {
                    handler(.sample(SensorSample(kind: kind, device: device, timestamp: t, vector: readings[kind] ?? force)))
                }
                handler(.readComplete)
            }
            reads.withLock { $0 = task }
            self.handler.withLock { $0 = handler }
        }

        func stop() { reads.withLock { $0?.cancel() } }

        /// Stops reading and says the device vanished (on the loop, as a capture read there does).
        func vanish() {
            stop()
            handler.withLock { $0 }?(.ended(.deviceVanished(device: device.sysname)))
        }
    }
}
