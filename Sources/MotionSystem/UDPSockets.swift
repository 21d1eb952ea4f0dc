import CLinux
import SystemPackage

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

// UDP for the DSU server: its socket, its sends (sendmmsg, every message's error its own), and whose
// socket a request came from (sock_diag), with what decides whether that user may use motiond's socket.

/// An IPv4 or IPv6 socket address as the kernel takes it (a `sockaddr_in` or `sockaddr_in6`), kept by
/// value, so that a send copies it and allocates nothing.
public struct DatagramAddress: Sendable, Equatable {
    /// Room for either kind (`sockaddr_in6` is the larger).
    fileprivate var storage = sockaddr_in6()
    fileprivate let length: socklen_t

    public init(_ address: sockaddr_in) {
        length = socklen_t(MemoryLayout<sockaddr_in>.size)
        withUnsafeMutableBytes(of: &storage) { raw in withUnsafeBytes(of: address) { raw.copyMemory(from: $0) } }
    }

    public init(_ address: sockaddr_in6) {
        length = socklen_t(MemoryLayout<sockaddr_in6>.size)
        storage = address
    }

    /// `AF_INET` or `AF_INET6`.
    public var family: Int32 { Int32(storage.sin6_family) }
    /// The port, host order.
    public var port: UInt16 { UInt16(bigEndian: storage.sin6_port) }
    /// The IP address's bytes in network order: 4 for IPv4, 16 for IPv6.
    public var addressBytes: [UInt8] {
        withUnsafeBytes(of: storage) { raw in
            family == AF_INET ? Array(raw[4..<8]) : Array(raw[8..<24])
        }
    }

    /// The same IP address with another port.
    public func replacingPort(with port: UInt16) -> Self {
        var copy = self
        copy.storage.sin6_port = port.bigEndian
        return copy
    }

    public static func == (a: Self, b: Self) -> Bool {
        a.length == b.length && withUnsafeBytes(of: a.storage) { x in withUnsafeBytes(of: b.storage) { y in x.prefix(Int(a.length)).elementsEqual(y.prefix(Int(b.length))) } }
    }

    fileprivate func withSockaddr<T>(_ body: (UnsafePointer<sockaddr>, socklen_t) -> T) -> T {
        withUnsafeBytes(of: storage) { body($0.baseAddress!.assumingMemoryBound(to: sockaddr.self), length) }
    }
}

extension Syscall {
    /// `socket(family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC)`, `setsockopt(SO_RCVBUF)`, `bind`: a
    /// bound UDP descriptor, owned, or the errno of the call that failed. No `SO_REUSEADDR`: for UDP
    /// it would let a second socket share the port, and a port in use not fail.
    public static func bindDatagramSocket(_ address: DatagramAddress, receiveBuffer: Int32) throws(Errno) -> OwnedDescriptor {
        let type = Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
        let bound = OwnedDescriptor(try retryingInterrupts { socket(address.family, type, 0) }.get())
        var size = receiveBuffer
        // A smaller buffer than asked (net.core.rmem_max) is no reason not to serve.
        _ = setsockopt(bound.rawValue, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        guard address.withSockaddr({ bind(bound.rawValue, $0, $1) }) == 0 else { throw Errno(rawValue: errno) }
        return bound
    }

    /// `sendto(fd, bytes, MSG_DONTWAIT, address)`: one datagram.
    public static func sendDatagram(_ fd: Int32, _ bytes: UnsafeRawBufferPointer, to address: DatagramAddress) -> Result<Void, Errno> {
        address.withSockaddr { sockaddr, length in
            retryingInterrupts { sendto(fd, bytes.baseAddress, bytes.count, Int32(MSG_DONTWAIT), sockaddr, length) }.map { _ in () }
        }
    }
}

/// What one `DatagramSender.send` did.
public struct DatagramSendOutcome: Sendable, Equatable {
    /// Messages the kernel took.
    public var sent = 0
    /// Messages it refused for their destination (`EPERM` from a firewall, `EINVAL` for port 0,
    /// `ENETUNREACH`…): skipped, the others still sent.
    public var refused = 0
    /// Messages not sent because the socket's send buffer was full (`EAGAIN`, `ENOBUFS`).
    public var bufferFull = 0
    /// The last refusal's errno.
    public var lastRefusal: Errno?

    public init() {}
}

/// One datagram to many destinations in `sendmmsg(2)` calls, from storage made once: adding a
/// destination and sending allocate nothing. Owns `descriptor` (a UDP socket's) and closes it.
///
/// Unlike a NIO datagram channel, which closes itself on any send error but `EMSGSIZE` and
/// `EHOSTUNREACH`, a destination the kernel refuses costs that message alone.
public final class DatagramSender: @unchecked Sendable {
    // @unchecked: one thread at a time uses it (made by a part's start, then used on the event loop
    // alone); `owned` and `capacity` never change.
    private let owned: OwnedDescriptor
    /// The socket sent on, lent.
    public var descriptor: Int32 { owned.rawValue }
    /// Destinations one `send` takes at most.
    public let capacity: Int
    private let messages: UnsafeMutablePointer<motiond_mmsghdr>
    private let addresses: UnsafeMutablePointer<sockaddr_in6>
    private var vector = iovec()
    private let vectors: UnsafeMutablePointer<iovec>
    /// Destinations added since the last `send`.
    public private(set) var count = 0

    /// Sends on `descriptor` (now this sender's) to at most `capacity` destinations at a time.
    public init(descriptor: consuming OwnedDescriptor, capacity: Int) {
        owned = descriptor
        self.capacity = max(1, capacity)
        messages = .allocate(capacity: self.capacity)
        messages.initialize(repeating: motiond_mmsghdr(), count: self.capacity)
        addresses = .allocate(capacity: self.capacity)
        addresses.initialize(repeating: sockaddr_in6(), count: self.capacity)
        vectors = .allocate(capacity: 1)
        vectors.initialize(to: iovec())
    }

    deinit {
        messages.deallocate()
        addresses.deallocate()
        vectors.deallocate()
    }

    /// Adds `address` to the next `send`; `false` (nothing added) when `capacity` are already.
    public func add(_ address: DatagramAddress) -> Bool {
        guard count < capacity else { return false }
        addresses[count] = address.storage
        messages[count].msg_hdr.msg_namelen = address.length
        count += 1
        return true
    }

    /// Sends `bytes` to every destination added (then forgets them). A message refused is skipped and
    /// the next tried; a full send buffer ends the round, its messages counted as `bufferFull`.
    public func send(_ bytes: UnsafeRawBufferPointer) -> DatagramSendOutcome {
        var outcome = DatagramSendOutcome()
        defer { count = 0 }
        vectors.pointee = iovec(iov_base: UnsafeMutableRawPointer(mutating: bytes.baseAddress), iov_len: bytes.count)
        for index in 0..<count {
            messages[index].msg_hdr.msg_name = UnsafeMutableRawPointer(addresses + index)
            messages[index].msg_hdr.msg_iov = vectors
            messages[index].msg_hdr.msg_iovlen = 1
        }
        var next = 0
        while next < count {
            // sendmmsg(2): an error after some messages went is reported by the next call, at the
            // message that failed.
            let result = Syscall.retryingInterrupts {
                motiond_sendmmsg(descriptor, messages + next, UInt32(count - next), Int32(MSG_DONTWAIT))
            }
            switch result {
            case .success(let sent) where sent > 0:
                outcome.sent += Int(sent)
                next += Int(sent)
            case .success:
                outcome.bufferFull += count - next
                return outcome
            case .failure(let error) where error == .resourceTemporarilyUnavailable || error == .noBufferSpace:
                outcome.bufferFull += count - next
                return outcome
            case .failure(let error):
                outcome.refused += 1
                outcome.lastRefusal = error
                next += 1
            }
        }
        return outcome
    }
}

extension Syscall {
    /// The owner (uid) of the UDP socket on this machine bound to `address` that sends to `peer`
    /// (`sock_diag(7)`: one `SOCK_DIAG_BY_FAMILY` request for that socket, not a dump of them all).
    /// `ENOENT` when no socket of this machine has that address (a forged source).
    public static func udpSocketOwner(boundTo address: DatagramAddress, peer: DatagramAddress) -> Result<UInt32, Errno> {
        var request = inet_diag_req_v2()
        request.sdiag_family = UInt8(address.family)
        request.sdiag_protocol = UInt8(IPPROTO_UDP)
        request.idiag_states = .max
        // The kernel looks the socket up with `dst` as its own address and `src` as the peer's
        // ("src and dst are swapped for historical reasons", net/ipv4/udp_diag.c); an unconnected
        // socket matches whatever the peer.
        request.id.idiag_dport = address.port.bigEndian
        request.id.idiag_sport = peer.port.bigEndian
        withUnsafeMutableBytes(of: &request.id.idiag_dst) { $0.copyBytes(from: address.addressBytes) }
        withUnsafeMutableBytes(of: &request.id.idiag_src) { $0.copyBytes(from: peer.addressBytes) }
        request.id.idiag_cookie = (INET_DIAG_NOCOOKIE, INET_DIAG_NOCOOKIE)
        var header = nlmsghdr()
        header.nlmsg_len = UInt32(MemoryLayout<nlmsghdr>.size + MemoryLayout<inet_diag_req_v2>.size)
        header.nlmsg_type = UInt16(SOCK_DIAG_BY_FAMILY)
        header.nlmsg_flags = UInt16(NLM_F_REQUEST)
        let type = Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
        return retryingInterrupts { socket(AF_NETLINK, type, NETLINK_SOCK_DIAG) }.flatMap { fd in
            let netlink = OwnedDescriptor(fd)
            return withUnsafeTemporaryAllocation(byteCount: 1024, alignment: 8) { buffer in
                let headerSize = MemoryLayout<nlmsghdr>.size
                buffer.storeBytes(of: header, as: nlmsghdr.self)
                buffer.storeBytes(of: request, toByteOffset: headerSize, as: inet_diag_req_v2.self)
                var kernel = sockaddr_nl()
                kernel.nl_family = sa_family_t(AF_NETLINK)
                let sent = withUnsafePointer(to: &kernel) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { kernel in
                        retryingInterrupts {
                            sendto(fd, buffer.baseAddress, Int(header.nlmsg_len), 0, kernel, socklen_t(MemoryLayout<sockaddr_nl>.size))
                        }
                    }
                }
                if case .failure(let error) = sent { return .failure(error) }
                // The kernel answers within the send: the reply is waiting.
                let received = retryingInterrupts { recv(netlink.rawValue, buffer.baseAddress, buffer.count, Int32(MSG_DONTWAIT)) }
                return received.flatMap { length in
                    guard length >= headerSize + 4 else { return .failure(.ioError) }
                    let reply = buffer.load(as: nlmsghdr.self)
                    if reply.nlmsg_type == UInt16(NLMSG_ERROR) {
                        let code = buffer.load(fromByteOffset: headerSize, as: Int32.self)
                        return .failure(Errno(rawValue: code == 0 ? EIO : -code))
                    }
                    guard reply.nlmsg_type == UInt16(SOCK_DIAG_BY_FAMILY), length >= headerSize + MemoryLayout<inet_diag_msg>.size else {
                        return .failure(.ioError)
                    }
                    return .success(buffer.load(fromByteOffset: headerSize, as: inet_diag_msg.self).idiag_uid)
                }
            }
        }
    }

    /// The groups of the user whose id is `uid` (`getpwuid_r`, then `getgrouplist(3)`): its primary
    /// group and every group that lists it; `nil` when no user has that id.
    public static func groups(ofUser uid: UInt32) -> [UInt32]? {
        var user = passwd()
        var found: UnsafeMutablePointer<passwd>?
        var text = [CChar](repeating: 0, count: 4096)
        guard getpwuid_r(uid, &user, &text, text.count, &found) == 0, found != nil, let name = user.pw_name else { return nil }
        var count: Int32 = 32
        while true {
            var groups = [gid_t](repeating: 0, count: Int(count))
            let listed = getgrouplist(name, user.pw_gid, &groups, &count)
            // −1: more groups than room; `count` now says how many.
            if listed >= 0 { return Array(groups.prefix(Int(count))) }
            guard count <= 65536 else { return nil }
        }
    }

    /// `stat(path)`'s owner, group and permission bits.
    public static func ownership(of path: String) -> Result<(owner: UInt32, group: UInt32, mode: UInt32), Errno> {
        var status = stat()
        return retryingInterrupts { stat(path, &status) }.map { _ in (status.st_uid, status.st_gid, status.st_mode & 0o7777) }
    }
}
