import NIOCore

/// Who gets which pad's data, until when: a client (an address, IP and port) that asks for pad data
/// gets it for `duration` after its last request, per slot. At most `maximumClients` addresses hold
/// leases; a request from one more is refused until a lease runs out.
struct DSULeases {
    /// How long pad data flows after a request: Citra and yuzu ask again every 3 s, Dolphin every
    /// 1 s, Cemu after every packet (docs/games.md).
    static let duration = TimeAmount.seconds(5)

    struct Client {
        let address: SocketAddress
        /// Until when each slot's data goes to it (`.distantPast`: not asked).
        var until: [NIODeadline] = Array(repeating: .distantPast, count: DSUWire.slotCount)

        func holds(_ slot: Int, at now: NIODeadline) -> Bool { until[slot] > now }
        var lastExpiry: NIODeadline { until.max()! }
    }

    let maximumClients: Int
    /// In the order they first asked.
    private(set) var clients: [Client] = []
    private var indexByAddress: [SocketAddress: Int] = [:]

    init(maximumClients: Int) {
        self.maximumClients = maximumClients
    }

    var isEmpty: Bool { clients.isEmpty }

    /// Takes a pad-data request from `address` at `now`; `false` when it is a new client and the table
    /// is full.
    mutating func renew(_ subscription: DSURequest.Subscription, from address: SocketAddress, at now: NIODeadline) -> Bool {
        let index: Int
        if let known = indexByAddress[address] {
            index = known
        } else {
            guard clients.count < maximumClients else { return false }
            index = clients.count
            clients.append(Client(address: address))
            indexByAddress[address] = index
        }
        let until = now + Self.duration
        if subscription.allPads {
            for slot in 0..<DSUWire.slotCount { clients[index].until[slot] = until }
        }
        if let slot = subscription.slot, slot < DSUWire.slotCount { clients[index].until[slot] = until }
        // motiond's MACs name their slot (`DSUMAC(slot:)`); any other MAC is no pad of ours.
        if let slot = subscription.mac?.slot {
            clients[index].until[slot] = until
        }
        return true
    }

    /// Forgets the clients whose every lease ran out by `now`.
    mutating func expire(at now: NIODeadline) {
        guard clients.contains(where: { $0.lastExpiry <= now }) else { return }
        clients.removeAll { $0.lastExpiry <= now }
        indexByAddress = Dictionary(uniqueKeysWithValues: clients.enumerated().map { ($1.address, $0) })
    }

    /// Whether any client holds a lease on `slot` at `now`.
    func anyHolds(_ slot: Int, at now: NIODeadline) -> Bool {
        clients.contains { $0.holds(slot, at: now) }
    }
}
