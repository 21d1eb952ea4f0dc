import MotionSystem
import NIOCore

/// Who a client is, for the bound per source: a user of this machine (a loopback source whose
/// socket's owner is known: every local user shares 127.0.0.1), else an IP address.
enum DSUSource: Hashable, CustomStringConvertible {
    case user(UInt32)
    case host([UInt8])

    var description: String {
        switch self {
        case .user(let uid): "uid \(uid)"
        case .host(let bytes) where bytes.count == 4: bytes.map(String.init).joined(separator: ".")
        case .host(let bytes): "IPv6 \(bytes.map { String($0, radix: 16) }.joined(separator: ":"))"
        }
    }
}

/// Who gets which pad's data, until when: a client (an address, IP and port) that asks for pad data
/// gets it for `duration` after its last request, per slot. At most `maximumClients` addresses hold
/// leases, at most `maximumPerSource` of one source; a request from one more is refused until a lease
/// runs out.
struct DSULeases {
    /// How long pad data flows after a request: Citra and yuzu ask again every 3 s, Dolphin every
    /// 1 s, Cemu after every packet (docs/games.md).
    static let duration = TimeAmount.seconds(5)

    struct Client {
        let address: SocketAddress
        /// `address` as the kernel takes it, made once for the sends of every sample.
        let destination: DatagramAddress
        /// Whose it is, decided when it first asked and kept for the lease's life (a renewal per
        /// packet costs no look-up).
        let source: DSUSource
        /// Until when each slot's data goes to it (`.distantPast`: not asked).
        var until: [NIODeadline] = Array(repeating: .distantPast, count: DSUWire.slotCount)

        func holds(_ slot: Int, at now: NIODeadline) -> Bool { until[slot] > now }
        var lastExpiry: NIODeadline { until.max()! }
    }

    let maximumClients: Int
    let maximumPerSource: Int
    /// In the order they first asked.
    private(set) var clients: [Client] = []
    private var indexByAddress: [SocketAddress: Int] = [:]
    private var countBySource: [DSUSource: Int] = [:]

    init(maximumClients: Int, maximumPerSource: Int) {
        self.maximumClients = maximumClients
        self.maximumPerSource = maximumPerSource
    }

    var isFull: Bool { clients.count >= maximumClients }

    /// Whether `address` holds a lease (a request from it is a renewal).
    func holdsLease(_ address: SocketAddress) -> Bool { indexByAddress[address] != nil }

    /// Whether `source` holds as many leases as it may.
    func isFull(_ source: DSUSource) -> Bool { countBySource[source, default: 0] >= maximumPerSource }

    /// Whether some source holds as many leases as it may.
    var anySourceFull: Bool { countBySource.values.contains { $0 >= maximumPerSource } }

    /// Enters a new client; the caller has checked `isFull` and `isFull(source)`.
    mutating func admit(_ address: SocketAddress, destination: DatagramAddress, source: DSUSource) {
        precondition(!isFull && !isFull(source) && !holdsLease(address))
        indexByAddress[address] = clients.count
        clients.append(Client(address: address, destination: destination, source: source))
        countBySource[source, default: 0] += 1
    }

    /// Takes a pad-data request from `address`, a client admitted, at `now`.
    mutating func renew(_ subscription: DSURequest.Subscription, from address: SocketAddress, at now: NIODeadline) {
        guard let index = indexByAddress[address] else { return }
        // motiond's MACs name their slot (`DSUMAC(slot:)`); any other MAC is no pad of ours.
        let macSlot = subscription.mac?.slot
        for slot in 0..<DSUWire.slotCount where subscription.allPads || subscription.slot == slot || macSlot == slot {
            clients[index].until[slot] = now + Self.duration
        }
    }

    /// Forgets the clients whose every lease ran out by `now`.
    mutating func expire(at now: NIODeadline) {
        guard clients.contains(where: { $0.lastExpiry <= now }) else { return }
        clients.removeAll { $0.lastExpiry <= now }
        indexByAddress = Dictionary(uniqueKeysWithValues: clients.enumerated().map { ($1.address, $0) })
        countBySource = Dictionary(clients.map { ($0.source, 1) }, uniquingKeysWith: +)
    }

    /// Whether any client holds a lease on `slot` at `now`.
    func anyHolds(_ slot: Int, at now: NIODeadline) -> Bool {
        clients.contains { $0.holds(slot, at: now) }
    }
}
