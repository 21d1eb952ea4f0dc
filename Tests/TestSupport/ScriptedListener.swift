import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// A TCP listener on 127.0.0.1 that plays a script to each connection it accepts, each on a thread of
/// its own: the misbehaving broker or board of an attack. Stops listening when released or by `close`.
public final class ScriptedListener: Sendable {
    public let port: Int
    private let descriptor: Int32
    private let state = ListenerState()

    /// Listens on `port` (a free one when nil), and runs `script` for each connection, which is
    /// closed when the script returns.
    public init(port: Int? = nil, script: @escaping @Sendable (ScriptedPeer) -> Void) throws {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var yes: Int32 = 1
        setsockopt(descriptor, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
        var address = loopbackAddress(port: port ?? 0)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let listening = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(descriptor, $0, length) == 0 && getsockname(descriptor, $0, &length) == 0 && listen(descriptor, 64) == 0
            }
        }
        guard listening else {
            Glibc.close(descriptor)
            throw TestbedError("cannot listen on 127.0.0.1:\(port ?? 0): errno \(errno)")
        }
        self.descriptor = descriptor
        self.port = Int(UInt16(bigEndian: address.sin_port))
        let state = state
        let acceptor = Thread {
            while !state.closed.load(ordering: .relaxed) {
                var poller = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
                guard poll(&poller, 1, 50) > 0 else { continue }
                let connection = accept(descriptor, nil, nil)
                guard connection >= 0 else { continue }
                let index = state.accepted.add(1, ordering: .relaxed).oldValue
                Thread.detachNewThread {
                    script(ScriptedPeer(descriptor: connection, index: index, state: state))
                    Glibc.close(connection)
                }
            }
            state.acceptorEnded.store(true, ordering: .releasing)
        }
        acceptor.start()
    }

    /// How many connections were accepted so far.
    public var accepted: Int { state.accepted.load(ordering: .relaxed) }

    /// Stops listening (the port is free again when this returns); scripts see `isClosed`.
    public func close() {
        guard !state.closed.exchange(true, ordering: .relaxed) else { return }
        while !state.acceptorEnded.load(ordering: .acquiring) { usleep(5_000) }
        Glibc.close(descriptor)
    }

    deinit { close() }
}

final class ListenerState: Sendable {
    let closed = Atomic<Bool>(false)
    let acceptorEnded = Atomic<Bool>(false)
    let accepted = Atomic<Int>(0)
}

/// One accepted connection, as a script sees it: blocking reads and writes with timeouts.
public struct ScriptedPeer: Sendable {
    public let descriptor: Int32
    /// The connection's place in the order they were accepted, from 0.
    public let index: Int
    private let state: ListenerState

    init(descriptor: Int32, index: Int, state: ListenerState) {
        (self.descriptor, self.index, self.state) = (descriptor, index, state)
    }

    /// Whether the listener was closed: a script that goes on should end.
    public var isClosed: Bool { state.closed.load(ordering: .relaxed) }

    /// Up to `count` bytes, waiting at most `timeout` seconds for the first; empty at the end of the
    /// stream, on timeout or once the listener is closed.
    public func read(upTo count: Int = 65536, timeout: Double = 5) -> [UInt8] {
        let deadline = Date().addingTimeInterval(timeout)
        while !isClosed && Date() < deadline {
            var poller = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
            guard poll(&poller, 1, 50) > 0 else { continue }
            var bytes = [UInt8](repeating: 0, count: count)
            let got = Glibc.read(descriptor, &bytes, count)
            return got > 0 ? Array(bytes[..<got]) : []
        }
        return []
    }

    /// Reads until `predicate` holds for what came so far (or the stream ends, or `timeout` passes).
    public func read(timeout: Double = 5, until predicate: ([UInt8]) -> Bool) -> [UInt8] {
        let deadline = Date().addingTimeInterval(timeout)
        var received: [UInt8] = []
        while !predicate(received) && Date() < deadline {
            let more = read(timeout: deadline.timeIntervalSinceNow)
            if more.isEmpty { break }
            received += more
        }
        return received
    }

    /// Writes all of `bytes`; false if the peer is gone (or the listener closed while blocked).
    @discardableResult
    public func write(_ bytes: [UInt8]) -> Bool {
        var offset = 0
        while offset < bytes.count && !isClosed {
            let written = bytes[offset...].withUnsafeBytes { send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard written > 0 else { return false }
            offset += written
        }
        return offset == bytes.count
    }

    /// Waits `seconds`, or less once the listener is closed.
    public func pause(seconds: Double) {
        let deadline = Date().addingTimeInterval(seconds)
        while !isClosed && Date() < deadline { usleep(20_000) }
    }
}
