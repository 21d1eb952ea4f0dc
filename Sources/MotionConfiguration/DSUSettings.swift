/// The `dsu` section of motiond.conf: the DSU (cemuhook) server for emulators' motion controls
/// (docs/games.md). `dsu: HOST:PORT`, and the `--dsu` flag, are `listen` alone.
public struct DSUSettings: Sendable, Equatable, SettingsSection {
    /// `host:port` of the UDP socket (default `127.0.0.1:26760`, the protocol's port on loopback).
    public var listen = DSUSettings.defaultListen
    /// The pad slot, 0–3, that shows the machine's IMU (default 0); the other slots are not connected.
    public var slot = 0
    /// Client addresses that may hold leases at once (default 16); a request from one more is dropped.
    /// Emulators are few and each asks from one socket: 16 is four emulators of four pads' sockets
    /// each, 16,000 packets a second at 1 kHz, a few percent of a core beside the socket's clients.
    public var maximumClients = 16
    /// Client addresses one source may hold (default 4): one user on this machine (on loopback, with
    /// `requireMotionGroup`), else one IP address; the rest of the table stays for the others.
    public var maximumClientsPerSource = 4
    /// Whether a request from this machine (a loopback source) is served only from a socket whose
    /// owner may connect to motiond's Unix socket (root, its owner, or its group's members as its
    /// mode says): the `motion` group's gate, which UDP would otherwise bypass (default true).
    public var requireMotionGroup = true

    public static let defaultListen = "127.0.0.1:26760"

    /// Listens at `listen`; the rest at their defaults.
    public init(listen: String) {
        self.listen = listen
    }

    init() {}

    static let settings: [Setting<DSUSettings>] = [
        .value(
            "listen", \.listen, .text("host:port"), default: defaultListen,
            summary: "The UDP address to serve on; anything but loopback lets other machines (and spoofed senders) reach it (security.md).",
            check: { Configuration.hostAndPort($0) == nil ? "\"\($0)\" is not host:port (such as 127.0.0.1:26760)" : nil }),
        .value(
            "slot", \.slot, .integer("0 to 3"), default: "0", summary: "The pad slot that shows the machine's IMU; the others are not connected.",
            check: { (0...3).contains($0) ? nil : "must be 0, 1, 2 or 3, not \($0)" }),
        .value(
            "maximum_clients", \.maximumClients, .integer("1 to 65536"), default: "16",
            summary: "Client addresses served at once; a request from one more is dropped, counted and logged.",
            check: { (1...65536).contains($0) ? nil : "must be 1...65536, not \($0)" }),
        .value(
            "maximum_clients_per_source", \.maximumClientsPerSource, .integer("1 to 65536"), default: "4",
            summary: "Client addresses one source holds at once: one user of this machine (with require_motion_group), else one IP address.",
            check: { (1...65536).contains($0) ? nil : "must be 1...65536, not \($0)" }),
        .value(
            "require_motion_group", \.requireMotionGroup, .boolean, default: "true",
            summary: "Serve a request from this machine only if the sending socket's owner may connect to motiond's socket (root, or the socket's group)."),
    ]

    /// The address to listen on, or what is wrong with `listen`.
    public func address() throws(Configuration.Invalid) -> (host: String, port: Int) {
        guard let address = Configuration.hostAndPort(listen) else {
            throw Place(key: "dsu.listen").invalid("\"\(listen)\" is not host:port (such as 127.0.0.1:26760)")
        }
        return address
    }
}
