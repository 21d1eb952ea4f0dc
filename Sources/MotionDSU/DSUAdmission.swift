import MotionSystem
import NIOCore

/// Whether a new client may hold a lease, and as which source (docs/security.md, "For games").
///
/// A request from this machine (a loopback source) comes from a socket some user owns, which
/// `sock_diag` names: that user is the source (every local user shares 127.0.0.1), and with
/// `requireMotionGroup` only a user who may connect to motiond's Unix socket is served, so that UDP
/// does not bypass the `motion` group. Another machine's request is its IP address, and cannot be
/// checked so.
struct DSUAdmission {
    /// motiond's Unix socket, whose owner, group and mode say who may use motion data.
    let socketPath: String
    let requireMotionGroup: Bool
    /// Each user's answer, for a lease's span (a group change takes effect within that).
    private var verdicts: [UInt32: (mayUse: Bool, until: NIODeadline)] = [:]

    init(socketPath: String, requireMotionGroup: Bool) {
        self.socketPath = socketPath
        self.requireMotionGroup = requireMotionGroup
    }

    enum Verdict: Equatable {
        case admit(DSUSource)
        /// Refused: its owner may not use motiond's socket (`uid`), or no socket of this machine has
        /// its address (`uid` nil: forged, or gone).
        case refuse(uid: UInt32?)
    }

    /// Decides for `client`, a request's source, that came to `server` (the DSU socket's address).
    mutating func decide(_ client: DatagramAddress, server: DatagramAddress, at now: NIODeadline) -> Verdict {
        guard client.isLoopback else { return .admit(.host(client.addressBytes)) }
        // A wildcard-bound server was reached at a loopback address: the client's own is the likeliest.
        let reached = server.addressBytes.allSatisfy { $0 == 0 } ? client.replacingPort(with: server.port) : server
        guard case .success(let uid) = Syscall.udpSocketOwner(boundTo: client, peer: reached) else {
            return requireMotionGroup ? .refuse(uid: nil) : .admit(.host(client.addressBytes))
        }
        guard requireMotionGroup else { return .admit(.user(uid)) }
        if verdicts[uid].map({ $0.until <= now }) ?? true { verdicts[uid] = (mayUseSocket(uid), now + DSULeases.duration) }
        return verdicts[uid]!.mayUse ? .admit(.user(uid)) : .refuse(uid: uid)
    }

    /// Forgets answers older than a lease (called by the sweep, so the table stays as small as the users).
    mutating func expire(at now: NIODeadline) {
        verdicts = verdicts.filter { $0.value.until > now }
    }

    /// Whether `uid` may connect to the Unix socket: root; else the permission bits of the class it
    /// falls in (owner, group, others), as the kernel decides a connect (it needs write permission).
    private func mayUseSocket(_ uid: UInt32) -> Bool {
        if uid == 0 { return true }
        guard case .success(let file) = Syscall.ownership(of: socketPath) else { return false }
        if uid == file.owner { return file.mode & 0o200 != 0 }
        if Syscall.groups(ofUser: uid)?.contains(file.group) == true { return file.mode & 0o020 != 0 }
        return file.mode & 0o002 != 0
    }
}

extension DatagramAddress {
    /// NIO's address as the kernel takes it; nil for a Unix socket's.
    init?(_ address: SocketAddress) {
        switch address {
        case .v4(let v4): self.init(v4.address)
        case .v6(let v6): self.init(v6.address)
        default: return nil
        }
    }

    /// 127.0.0.0/8, ::1, or ::ffff:127.0.0.0/104.
    var isLoopback: Bool {
        let bytes = addressBytes
        if bytes.count == 4 { return bytes[0] == 127 }
        if bytes == [UInt8](repeating: 0, count: 15) + [1] { return true }
        return bytes.prefix(12) == [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF] && bytes[12] == 127
    }
}
