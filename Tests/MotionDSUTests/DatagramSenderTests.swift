import Foundation
import MotionSystem
import Testing
import TestSupport

/// The DSU server's sends (`DatagramSender`, sendmmsg) and its owner look-up (`sock_diag`), against
/// plain sockets of the test's own.
@Suite struct DatagramSenderTests {
    /// A UDP socket on 127.0.0.1 and its address.
    static func receiver() throws -> (fd: Int32, address: DatagramAddress) {
        let fd = try Syscall.bindDatagramSocket(loopback(port: 0), receiveBuffer: 1 << 16).take()
        var address = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
        return (fd, DatagramAddress(address))
    }

    static func loopback(port: UInt16) -> DatagramAddress {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        return DatagramAddress(address)
    }

    /// A destination the kernel refuses (port 0: EINVAL; a firewall's EPERM takes the same path)
    /// costs its own packet: the destinations before and after it in the one sendmmsg get theirs.
    @Test func aRefusedDestinationCostsOnlyItsOwnPacket() throws {
        let (a, b) = (try Self.receiver(), try Self.receiver())
        defer { close(a.fd); close(b.fd) }
        let sender = DatagramSender(descriptor: try Syscall.bindDatagramSocket(Self.loopback(port: 0), receiveBuffer: 1 << 16), capacity: 4)
        for destination in [a.address, Self.loopback(port: 0), b.address] { #expect(sender.add(destination)) }
        let bytes: [UInt8] = Array("pad".utf8)
        let outcome = bytes.withUnsafeBytes { sender.send($0) }
        #expect(outcome.sent == 2 && outcome.refused == 1 && outcome.lastRefusal == .invalidArgument, "\(outcome)")
        for receiver in [a, b] {
            var got = [UInt8](repeating: 0, count: 16)
            let count = recv(receiver.fd, &got, got.count, Int32(MSG_DONTWAIT))
            #expect(count == 3 && Array(got.prefix(3)) == bytes)
        }
    }

    /// sock_diag names the owner of the socket a datagram comes from (here one made as `nobody`), and
    /// says ENOENT for an address no socket has (a forged source).
    @Test func theOwnerOfALocalSocketIsFound() throws {
        let nobody = getpwnam("nobody").pointee.pw_uid
        let server = Self.loopback(port: 26760)
        let client = try DSUTestClient(serverPort: 26760, owner: nobody)
        var address = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(client.descriptor, $0, &length) } }
        let owner = Syscall.udpSocketOwner(boundTo: DatagramAddress(address), peer: server)
        #expect((try? owner.get()) == nobody, "\(owner)")
        // UDP port 1 (tcpmux's) has no socket here.
        #expect(throws: Errno.noSuchFileOrDirectory) { try Syscall.udpSocketOwner(boundTo: Self.loopback(port: 1), peer: server).get() }
    }
}
