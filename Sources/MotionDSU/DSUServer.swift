import Logging
import MotionConfiguration
import MotionCore
import MotionDevices
import MotionHub
import MotionSystem
import MotionWire
import NIOCore
import NIOPosix

/// The DSU (cemuhook) server: emulators' requests in, one pad-data packet per IMU sample out, over
/// UDP on the hub's event loop (docs/games.md).
///
/// A client of the hub like a socket connection: it watches `motion` at the IMU's rate while some
/// emulator holds a lease, and not otherwise, so the sensors sleep when no game asks. Samples come as
/// values (`MotionReceiver`): each is encoded once, into a buffer reused, and written to every client
/// whose lease covers the slot, all flushed in one `sendmmsg`.
final class DSUServer: ClientSink, MotionReceiver {
    /// The rate asked of the IMU, Hz: the protocol's clients take up to 1 kHz (a device that offers
    /// less runs at its highest).
    static let rate = 1000.0
    /// Packets written before a flush: 25.6 KB, well under NIO's 64 KiB high-water mark.
    static let sendBatch = 256
    /// The socket's receive buffer, bytes (the kernel caps it at net.core.rmem_max): some 1,300
    /// requests, so that emulators starting together are not lost while the loop sends.
    static let receiveBuffer = 1 << 20

    private let hub: Hub
    private let settings: DSUSettings
    private let logger: Logger
    private let writer = DSUPacketWriter()
    private let channel: any Channel
    private var leases: DSULeases
    private var id: Hub.ClientID?
    /// The pad on the configured slot while the machine has an accelerometer.
    private var pad: DSUPad?
    /// Whether the hub sends us `motion` (a lease is held and the IMU is there).
    private var watching = false
    private var packetNumber: UInt32 = 0
    private var lastTimestamp: UInt64 = 0
    /// The pad-data packet, its storage reused from sample to sample.
    private var packet = ByteBuffer()
    private var sweep: RepeatedTask?
    /// Whether requests are being refused because the table is full (logged once while it lasts).
    private var refusing = false
    private(set) var counters = DSUCounters()

    /// Where it listens (the port chosen, for port 0).
    var localAddress: SocketAddress? { channel.localAddress }

    /// Serves on `channel` (bound by `listen`); on the hub's loop.
    init(hub: Hub, settings: DSUSettings, channel: any Channel) {
        self.hub = hub
        self.settings = settings
        self.channel = channel
        logger = hub.logger
        leases = DSULeases(maximumClients: settings.maximumClients)
    }

    /// Binds the UDP socket at `settings.listen` on the hub's loop, its datagrams going to
    /// `handler`; blocking, off the loop. Throws what kept it from listening.
    static func listen(_ settings: DSUSettings, on eventLoop: any EventLoop, handler: DatagramHandler) throws -> any Channel {
        let address = try settings.address()
        do {
            // No SO_REUSEADDR: for UDP it lets a second socket bind the same port (another motiond, or
            // a local user's program taking the emulators' requests), and a port in use would not fail.
            return try DatagramBootstrap(group: eventLoop)
                // recvmmsg: a burst of requests (every emulator starting at once) is read in a few
                // system calls, before the socket's buffer overflows.
                .channelOption(.datagramVectorReadMessageCount, value: 32)
                .channelOption(.socketOption(.so_rcvbuf), value: Self.receiveBuffer)
                .channelOption(.maxMessagesPerRead, value: 8)
                .channelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(handler) }
                }
                .bind(host: address.host, port: address.port).wait()
        } catch let error as IOError {
            throw ListenError(address: settings.listen, reason: "\(Errno(rawValue: error.errnoCode))")
        } catch {
            throw ListenError(address: settings.listen, reason: "\(error)")
        }
    }

    /// The address could not be listened on (in use, not this machine's, a name that does not resolve).
    struct ListenError: Error, CustomStringConvertible {
        var address: String
        var reason: String
        var description: String { "DSU \(address): cannot listen: \(reason)" }
    }

    /// Joins the hub and follows its devices; on the loop.
    func start() {
        hub.eventLoop.preconditionInEventLoop()
        id = hub.connect(self, motionReceiver: self)
        hub.observeDevices { [weak self] devices in self?.devicesChanged(devices) }
        devicesChanged(hub.devices)
        let server = NIOLoopBound(self, eventLoop: hub.eventLoop)
        sweep = hub.eventLoop.scheduleRepeatedTask(initialDelay: .seconds(1), delay: .seconds(1)) { _ in server.value.expireLeases() }
    }

    /// Leaves the hub and stops listening; on the loop.
    func stop() -> EventLoopFuture<Void> {
        hub.eventLoop.preconditionInEventLoop()
        sweep?.cancel()
        if let id { hub.disconnect(id) }
        id = nil
        return channel.close()
    }

    // MARK: Requests

    fileprivate func received(_ envelope: AddressedEnvelope<ByteBuffer>) {
        counters.datagrams += 1
        let request: DSURequest
        do {
            request = try DSURequest(datagram: envelope.data)
        } catch {
            return counters.dropped[error.rawValue, default: 0] += 1
        }
        switch request {
        case .version:
            channel.write(AddressedEnvelope(remoteAddress: envelope.remoteAddress, data: writer.version()), promise: nil)
        case .portInformation(let slots):
            for slot in slots {
                let reply = writer.portInformation(slot: slot, pad: pad?.slot == slot ? pad : nil)
                channel.write(AddressedEnvelope(remoteAddress: envelope.remoteAddress, data: reply), promise: nil)
            }
        case .padData(let subscription):
            guard leases.renew(subscription, from: envelope.remoteAddress, at: .now()) else {
                counters.dropped[DSURequest.Problem.tooManyClients.rawValue, default: 0] += 1
                if !refusing {
                    refusing = true
                    logger.warning("DSU request refused: too many clients", metadata: ["limit": "\(leases.maximumClients)", "client": "\(envelope.remoteAddress)"])
                }
                return
            }
            counters.clients = leases.clients.count
            // A renewal can only start the watch: the lease table is not scanned per request (Cemu
            // asks after every packet, and a thousand such clients would make that quadratic).
            if !watching { follow() }
        }
    }

    /// The end of a read: the replies go out together.
    fileprivate func readComplete() { channel.flush() }

    private func expireLeases() {
        leases.expire(at: .now())
        counters.clients = leases.clients.count
        if refusing && leases.clients.count < leases.maximumClients {
            refusing = false
            logger.notice("DSU accepting clients again", metadata: ["clients": "\(leases.clients.count)"])
        }
        follow()
    }

    // MARK: The hub

    private func devicesChanged(_ devices: [DeviceDescriptor]) {
        let kinds = Set(devices.flatMap(\.kinds))
        let now: DSUPad? = kinds.contains(.accelerometer)
            ? DSUPad(slot: settings.slot, model: kinds.contains(.gyroscope) ? .fullGyroscope : .partialGyroscope) : nil
        if now != pad { logger.notice("DSU pad \(now == nil ? "disconnected" : "connected")", metadata: ["slot": "\(settings.slot)"]) }
        pad = now
        // A stream the hub ended (its sensor went away) is asked for again once the sensor is back.
        if pad == nil { watching = false }
        follow()
    }

    /// Watches `motion` exactly while a client holds a lease on the pad's slot.
    private func follow() {
        guard let id else { return }
        let wanted = pad.map { leases.anyHolds($0.slot, at: .now()) } ?? false
        guard wanted != watching else { return }
        watching = wanted
        let request = Request.Watch(streams: [.motion], enable: wanted, interval: 1 / Self.rate)
        hub.handle(.watch(request), from: id)
    }

    func receive(_ motion: MotionMessage) {
        guard let pad else { return }
        let now = NIODeadline.now()
        // Strictly increasing, as Cemu requires, even for two samples in one microsecond.
        let microseconds = max(UInt64(clamping: motion.timestamp / 1000), lastTimestamp + 1)
        lastTimestamp = microseconds
        packetNumber &+= 1
        let a = motion.gravity + motion.userAcceleration
        let ω = motion.rotationRate * (180 / .pi)
        writer.padData(
            into: &packet, pad: pad, packetNumber: packetNumber, timestamp: microseconds,
            acceleration: (Float(a.x), Float(a.z), Float(-a.y)), rotationRate: (Float(ω.x), Float(-ω.z), Float(ω.y)))
        var sent = 0
        for client in leases.clients where client.holds(pad.slot, at: now) {
            guard channel.isWritable else {
                counters.packetsDropped += 1
                continue
            }
            channel.write(AddressedEnvelope(remoteAddress: client.address, data: packet), promise: nil)
            sent += 1
            // Out in batches, so that a thousand clients' packets never stand above the channel's
            // high-water mark (64 KiB): one sendmmsg per batch.
            if sent % Self.sendBatch == 0 { channel.flush() }
        }
        if sent % Self.sendBatch != 0 { channel.flush() }
        counters.packetsSent += sent
    }

    // MARK: ClientSink: the hub's lines (replies, and ENDED when the IMU goes)

    var isWritable: Bool { true }

    func write(_ line: ByteBuffer) {
        guard let message = try? AnyServerMessage(line: Array(line.readableBytesView)) else { return }
        switch message {
        case .ended(let ended):
            // The pad's state follows the devices (`devicesChanged`); here only the stream ended. The
            // lease sweep asks for it again within a second while the IMU is listed.
            logger.notice("DSU motion ended", metadata: ["slot": "\(settings.slot)", "reason": "\(ended.reason)"])
            watching = false
        case .error(let error):
            logger.warning("DSU cannot serve the IMU", metadata: ["reason": "\(error.message)"])
        default: break
        }
    }

    func flush() {}
    func closeAfterWrites() {}
    func close() {}
    func setReading(_ reading: Bool) {}
}

/// The datagrams of the DSU socket, handed to the server.
final class DatagramHandler: ChannelInboundHandler, @unchecked Sendable {
    // @unchecked: `server` is set once, on the loop; used only there (a datagram before it is dropped).
    typealias InboundIn = AddressedEnvelope<ByteBuffer>
    var server: NIOLoopBound<DSUServer>?

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        server?.value.received(unwrapInboundIn(data))
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        server?.value.readComplete()
    }

    /// A failed send (a client's socket gone) is not the server's end.
    func errorCaught(context: ChannelHandlerContext, error: any Error) {}
}
