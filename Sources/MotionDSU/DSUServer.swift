import CoreMetrics
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
/// A client of the hub like a socket connection: it watches `accelerometer` (the specific force a pad
/// sends) and `motion` (for its rotation rate, the gyroscope's bias removed) at the IMU's rate while
/// some emulator holds a lease, and not otherwise, so the sensors sleep when no game asks. Samples
/// come as values (`MessageSink`): each motion, with the acceleration of its sample (sent just
/// before it), is encoded once, into a buffer reused, and sent to every client whose lease covers
/// the slot, at most `sendBudget` of them, in one `sendmmsg`.
///
/// NIO reads the socket; the server sends on a descriptor of its own to the same socket
/// (`DatagramSender`), because a NIO datagram channel closes itself on a send error other than
/// `EMSGSIZE` and `EHOSTUNREACH`, and one client's address (port 0, or one a firewall refuses with
/// `EPERM`) would end the server for everyone.
final class DSUServer: MessageSink {
    /// The rate asked of the IMU, Hz: the protocol's clients take up to 1 kHz (a device that offers
    /// less runs at its highest).
    static let rate = 1000.0
    /// Packets sent per sample at most: at 1 kHz, 32,000 a second, about a tenth of a core on the
    /// loopback (an attack measured 270,000 a second as a full core), so that the loop still serves
    /// the socket's clients in time. Beyond it the clients take turns (the rest counted dropped,
    /// `over_budget`); the default `maximum_clients` (16) stays under it.
    static let sendBudget = 32
    /// The socket's receive buffer, bytes (the kernel caps it at net.core.rmem_max): some 1,300
    /// requests, so that emulators starting together are not lost while the loop sends.
    static let receiveBuffer: Int32 = 1 << 20

    private let hub: Hub
    private let settings: DSUSettings
    private let writer = DSUPacketWriter()
    /// Its channel replaced should NIO close it (`channelClosed`).
    private var socket: DSUSocket
    private var leases: DSULeases
    private var admission: DSUAdmission
    private var id: Hub.ClientID?
    /// The pad on the configured slot while the machine has an accelerometer.
    private var pad: DSUPad?
    /// Whether the hub sends us `accelerometer` and `motion` (a lease is held and the IMU is there).
    private var watching = false
    /// The latest acceleration, g, CoreMotion's sign: the pad's, sent with the motion that follows it.
    private var acceleration = Vector3.zero
    private var packetNumber: UInt32 = 0
    private var lastTimestamp: UInt64 = 0
    /// The pad-data packet, its storage reused from sample to sample.
    private var packet = ByteBuffer()
    /// The client a sample's sends begin with: they take turns when the budget does not reach all.
    private var firstClient = 0
    private var sweep: RepeatedTask?
    /// Whether `stop` was asked (a channel closed otherwise is opened again).
    private var stopping = false
    /// The refusals going on, `tooManyClients` while the table is full, `tooManyFromSource` while
    /// some source holds its share: each logged once while it lasts.
    private var refusing: Set<DSURequest.Problem> = []
    /// Users refused by `require_motion_group` and when last, each logged once while its refusals go
    /// on (`UInt32.max`: a source no socket of this machine has).
    private var refusedUsers: [UInt32: NIODeadline] = [:]
    /// Whether sends failed since the last sweep (logged once per episode).
    private var sendsFailing = false
    private var metrics: DSUMetrics

    /// Serves on `socket` (made by `listen`); on the hub's loop. `socketPath` is motiond's Unix
    /// socket, whose permissions `require_motion_group` applies; its metrics go to `metrics`.
    init(hub: Hub, settings: DSUSettings, socket: DSUSocket, socketPath: String, metrics: any MetricsFactory) {
        self.hub = hub
        self.metrics = DSUMetrics(factory: metrics)
        self.settings = settings
        self.socket = socket
        leases = DSULeases(maximumClients: settings.maximumClients, maximumPerSource: settings.maximumClientsPerSource)
        admission = DSUAdmission(socketPath: socketPath, requireMotionGroup: settings.requireMotionGroup)
    }

    /// The DSU socket: NIO's channel reads it, `sender` writes it (a descriptor of its own).
    struct DSUSocket: Sendable {
        var channel: any Channel
        var sender: DatagramSender
        /// Where it is bound (the port chosen, for port 0), as the kernel takes it: `sock_diag`'s look-ups use it.
        var address: DatagramAddress
    }

    /// Binds the UDP socket at `settings.listen` on the hub's loop, its datagrams going to
    /// `handler`; blocking, off the loop. Throws what kept it from listening.
    static func listen(_ settings: DSUSettings, on eventLoop: any EventLoop, handler: DatagramHandler) throws -> DSUSocket {
        let address = try settings.address()
        let failure = { (reason: Any) in ListenError(address: settings.listen, reason: "\(reason)") }
        let resolved = try Result { try SocketAddress.makeAddressResolvingHost(address.host, port: address.port) }.mapError(failure).get()
        guard let wanted = DatagramAddress(resolved) else { throw failure("not an IP address") }
        let sender: DatagramSender
        do {
            // The sender owns the socket from here: closing it, at stop or on a failure below, is its job.
            sender = DatagramSender(
                descriptor: try Syscall.bindDatagramSocket(wanted, receiveBuffer: Self.receiveBuffer), capacity: min(settings.maximumClients, Self.sendBudget))
        } catch {
            throw failure(error)
        }
        let channel = try Result { try register(sender, on: eventLoop, handler: handler) }.mapError(failure).get()
        guard let bound = channel.localAddress.flatMap(DatagramAddress.init) else {
            channel.close(promise: nil)
            throw failure("the socket has no address")
        }
        return DSUSocket(channel: channel, sender: sender, address: bound)
    }

    /// Gives NIO a second descriptor of `sender`'s socket to read; blocking, off the loop.
    private static func register(_ sender: DatagramSender, on eventLoop: any EventLoop, handler: DatagramHandler) throws -> any Channel {
        let copy = try Syscall.duplicate(sender.descriptor)
        let bootstrap = DatagramBootstrap(group: eventLoop)
            // recvmmsg: a burst of requests (every emulator starting at once) is read in a few
            // system calls, before the socket's buffer overflows.
            .channelOption(.datagramVectorReadMessageCount, value: 32)
            .channelOption(.maxMessagesPerRead, value: 8)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(handler) }
            }
        // Handed to NIO, which closes it with the channel (`take`): it refuses one only before the
        // channel is made, for a descriptor `fcntl` cannot make non-blocking, which a socket just
        // duplicated is not; after that, closing it here too would close it twice.
        return try bootstrap.withBoundSocket(copy.take()).wait()
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
        id = hub.connect(self)
        hub.observeDevices { [weak self] devices in self?.devicesChanged(devices) }
        devicesChanged(hub.devices)
        let server = NIOLoopBound(self, eventLoop: hub.eventLoop)
        sweep = hub.eventLoop.scheduleRepeatedTask(initialDelay: .seconds(1), delay: .seconds(1)) { _ in server.value.expireLeases() }
        followChannel()
    }

    /// Leaves the hub and stops listening; on the loop.
    func stop() -> EventLoopFuture<Void> {
        hub.eventLoop.preconditionInEventLoop()
        stopping = true
        sweep?.cancel()
        if let id { hub.disconnect(id) }
        id = nil
        // A channel that closed already (and was not opened again) is no failure of the stop.
        return socket.channel.close().flatMapErrorThrowing { error in
            guard let error = error as? ChannelError, error == .alreadyClosed else { throw error }
        }
    }

    /// Opens the socket to NIO again should its channel close while the server runs (a read error
    /// NIO deems fatal): the socket itself stays open (`sender` holds it), its port and leases kept.
    private func followChannel() {
        let server = NIOLoopBound(self, eventLoop: hub.eventLoop)
        socket.channel.closeFuture.whenComplete { _ in server.value.channelClosed() }
    }

    private func channelClosed() {
        guard !stopping else { return }
        hub.logger.error("DSU socket closed by NIO: reading it again", metadata: ["address": "\(settings.listen)"])
        let handler = DatagramHandler()
        let server = NIOLoopBound(self, eventLoop: hub.eventLoop)
        handler.server = server
        let (sender, loop, logger, listen) = (socket.sender, hub.eventLoop, hub.logger, settings.listen)
        // `register` waits for the loop: it runs on a thread made for it (no pool kept at rest).
        loop.runOnThreadOfItsOwn(named: "dsu register") {
            try Self.register(sender, on: loop, handler: handler)
        }.whenComplete { result in
            switch result {
            case .success(let channel):
                if server.value.stopping { return channel.close(promise: nil) }
                server.value.socket.channel = channel
                server.value.followChannel()
            case .failure(let error):
                logger.error("DSU socket cannot be read again: pad data goes on, requests are lost", metadata: ["address": "\(listen)", "error": "\(error)"])
            }
        }
    }

    // MARK: Requests

    fileprivate func received(_ envelope: AddressedEnvelope<ByteBuffer>) {
        metrics.received()
        let request: DSURequest
        do {
            request = try DSURequest(datagram: envelope.data)
        } catch {
            return metrics.dropped(error)
        }
        // Nothing can be sent to port 0 (EINVAL): no reply, no lease.
        guard let client = DatagramAddress(envelope.remoteAddress), client.port != 0 else { return metrics.dropped(.sourcePortZero) }
        switch request {
        case .version:
            reply(writer.version(), to: client)
        case .portInformation(let slots):
            for slot in slots { reply(writer.portInformation(slot: slot, pad: pad?.slot == slot ? pad : nil), to: client) }
        case .padData(let subscription):
            let now = NIODeadline.now()
            guard leases.holdsLease(envelope.remoteAddress) || admit(envelope.remoteAddress, client, at: now) else { return }
            leases.renew(subscription, from: envelope.remoteAddress, at: now)
            metrics.holding(leases.clients.count)
            // A renewal can only start the watch: the lease table is not scanned per request (Cemu
            // asks after every packet, and a thousand such clients would make that quadratic).
            if !watching { follow() }
        }
    }

    /// Enters a new client if the table, its source's share and `require_motion_group` allow;
    /// otherwise counts and logs (once per episode) why not.
    private func admit(_ address: SocketAddress, _ client: DatagramAddress, at now: NIODeadline) -> Bool {
        // The cheap check first: a full table costs no look-up.
        guard !leases.isFull else {
            metrics.dropped(.tooManyClients)
            if refusing.insert(.tooManyClients).inserted {
                hub.logger.warning("DSU request refused: too many clients", metadata: ["limit": "\(leases.maximumClients)", "client": "\(address)"])
            }
            return false
        }
        switch admission.decide(client, server: socket.address, at: now) {
        case .refuse(let uid):
            metrics.dropped(.notPermitted)
            if refusedUsers.updateValue(now, forKey: uid ?? .max) == nil {
                hub.logger.warning(
                    "DSU request refused: its socket's owner may not use motiond's socket (dsu.require_motion_group)",
                    metadata: ["client": "\(address)", "uid": "\(uid.map(String.init) ?? "no socket of this machine")", "socket": "\(admission.socketPath)"])
            }
            return false
        case .admit(let source):
            guard !leases.isFull(source) else {
                metrics.dropped(.tooManyFromSource)
                if refusing.insert(.tooManyFromSource).inserted {
                    hub.logger.warning(
                        "DSU request refused: its source holds its share of clients",
                        metadata: ["limit": "\(leases.maximumPerSource)", "source": "\(source)", "client": "\(address)"])
                }
                return false
            }
            leases.admit(address, destination: client, source: source)
            return true
        }
    }

    /// Sends one reply at once (requests are few: a version or a slot's information).
    private func reply(_ bytes: ByteBuffer, to client: DatagramAddress) {
        let sent = bytes.withUnsafeReadableBytes { Syscall.sendDatagram(socket.sender.descriptor, $0, to: client) }
        if case .failure(let error) = sent { countFailedSend(error, bufferFull: error == .resourceTemporarilyUnavailable || error == .noBufferSpace) }
    }

    private func countFailedSend(_ error: Errno?, bufferFull: Bool, count: Int = 1) {
        metrics.packetsDropped(count, reason: bufferFull ? .sendBufferFull : .sendError)
        if !bufferFull && !sendsFailing {
            sendsFailing = true
            hub.logger.warning(
                "DSU send refused by the kernel; that client's packets are dropped", metadata: ["error": "\(error.map { "\($0)" } ?? "?")"])
        }
    }

    private func expireLeases() {
        let now = NIODeadline.now()
        leases.expire(at: now)
        admission.expire(at: now)
        metrics.holding(leases.clients.count)
        if !leases.isFull, refusing.remove(.tooManyClients) != nil {
            hub.logger.notice("DSU accepting clients again", metadata: ["clients": "\(leases.clients.count)"])
        }
        if !leases.anySourceFull { refusing.remove(.tooManyFromSource) }
        refusedUsers = refusedUsers.filter { $0.value + DSULeases.duration > now }
        sendsFailing = false
        follow()
    }

    // MARK: The hub

    private func devicesChanged(_ devices: [DeviceDescriptor]) {
        let kinds = Set(devices.flatMap(\.kinds))
        let now: DSUPad? = kinds.contains(.accelerometer)
            ? DSUPad(slot: settings.slot, model: kinds.contains(.gyroscope) ? .fullGyroscope : .partialGyroscope) : nil
        if now != pad { hub.logger.notice("DSU pad \(now == nil ? "disconnected" : "connected")", metadata: ["slot": "\(settings.slot)"]) }
        pad = now
        // A stream the hub ended (its sensor went away) is asked for again once the sensor is back.
        if pad == nil { watching = false }
        follow()
    }

    /// Watches `accelerometer` and `motion` exactly while a client holds a lease on the pad's slot.
    private func follow() {
        guard let id else { return }
        let wanted = pad.map { leases.anyHolds($0.slot, at: .now()) } ?? false
        guard wanted != watching else { return }
        watching = wanted
        let request = Request.Watch(streams: [.accelerometer, .motion], enable: wanted, interval: 1 / Self.rate)
        hub.handle(.watch(request), from: id)
    }

    // MARK: MessageSink: samples as values; replies, and ENDED when the IMU goes

    func receive(_ message: AnyServerMessage, line: () -> ByteBuffer?) {
        switch message {
        case .accelerometer(let accelerometer): acceleration = accelerometer.acceleration
        case .motion(let motion): send(motion)
        case .ended(let ended):
            // The pad's state follows the devices (`devicesChanged`); here only the stream ended. The
            // lease sweep asks for both streams again within a second while the IMU is listed.
            if watching { hub.logger.notice("DSU motion ended", metadata: ["slot": "\(settings.slot)", "reason": "\(ended.reason)"]) }
            watching = false
        case .error(let error):
            hub.logger.warning("DSU cannot serve the IMU", metadata: ["reason": "\(error.message)"])
        default: break
        }
    }

    /// A step back larger than this, µs, is a clock gone back (or a bad stamp before it), not jitter.
    static let stepBack: UInt64 = 1_000_000

    /// A packet's timestamp, µs, for a sample stamped `nanoseconds` after a packet stamped `last` µs:
    /// strictly increasing, as Cemu requires, even for two samples in one microsecond; but a stamp
    /// more than `stepBack` below the last starts over from it, or one bad stamp (Int64.max) would
    /// make every later packet the last + 1 µs until a restart, over which Cemu integrates the gyro.
    static func packetTimestamp(nanoseconds: Int64, after last: UInt64) -> UInt64 {
        let microseconds = UInt64(clamping: nanoseconds / 1000)
        return microseconds > last || last - microseconds > stepBack ? microseconds : last + 1
    }

    /// One pad-data packet of `motion`'s rotation rate and the latest acceleration, to every client
    /// whose lease covers the pad's slot.
    private func send(_ motion: MotionMessage) {
        guard let pad else { return }
        let now = NIODeadline.now()
        let microseconds = Self.packetTimestamp(nanoseconds: motion.timestamp, after: lastTimestamp)
        lastTimestamp = microseconds
        packetNumber &+= 1
        let a = acceleration
        let ω = motion.rotationRate * (180 / .pi)
        writer.padData(
            into: &packet, pad: pad, packetNumber: packetNumber, timestamp: microseconds,
            acceleration: (Float(a.x), Float(a.z), Float(-a.y)), rotationRate: (Float(ω.x), Float(-ω.z), Float(ω.y)))
        // From `firstClient` round the table, `sendBudget` at most; the next sample begins after the
        // last one sent, so that over budget every client gets its turn.
        let (clients, sender) = (leases.clients, socket.sender)
        var over = 0
        for offset in 0..<clients.count {
            let index = (firstClient + offset) % clients.count
            guard clients[index].holds(pad.slot, at: now) else { continue }
            if sender.add(clients[index].destination) {
                if sender.count == sender.capacity { firstClient = index + 1 }
            } else {
                over += 1
            }
        }
        if over > 0 { metrics.packetsDropped(over, reason: .overBudget) }
        let outcome = packet.withUnsafeReadableBytes { sender.send($0) }
        metrics.sent(outcome.sent)
        if outcome.refused > 0 { countFailedSend(outcome.lastRefusal, bufferFull: false, count: outcome.refused) }
        if outcome.bufferFull > 0 { countFailedSend(nil, bufferFull: true, count: outcome.bufferFull) }
    }
}

/// The datagrams of the DSU socket, handed to the server.
final class DatagramHandler: ChannelInboundHandler, @unchecked Sendable {
    // @unchecked: `server` is set once, on the loop; used only there (a datagram before it is dropped).
    typealias InboundIn = AddressedEnvelope<ByteBuffer>
    var server: NIOLoopBound<DSUServer>?

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        server?.value.received(unwrapInboundIn(data))
    }

    /// A failed send (a client's socket gone) is not the server's end.
    func errorCaught(context: ChannelHandlerContext, error: any Error) {}
}
