import Foundation
import MotionSystem

#if canImport(Glibc)
import Glibc
#endif

/// The least that waking up costs on this machine: a process that does nothing but wait for a
/// timerfd with poll(2) and read it, `rate` times a second. motiond's figures are read against it (in
/// a VM, one wake-up alone can cost tens of microseconds of CPU).
enum Floor {
    /// Ticks until killed (run as `daemon-load --tick-at RATE`, a child of the floor scenario).
    static func tick(at rate: Double) -> Never {
        guard let owned = try? Syscall.makePeriodicTimer(period: Int64(1e9 / rate)) else { exit(1) }
        let expirations = UnsafeMutableRawBufferPointer.allocate(byteCount: 8, alignment: 8)
        // The owner is read at each use (here and below): a non-copyable may be destroyed, and the
        // timer closed, after its last use, so a number copied out of it once could outlive it.
        while true {
            _ = Syscall.waitReadable(owned.rawValue, timeoutMilliseconds: -1)
            _ = Syscall.read(owned.rawValue, into: expirations)
        }
    }

    /// Ticks as `tick` does, and at each tick writes one `lineSize`-byte line to each of `clients`
    /// Unix sockets, one `write` each, as motiond at the least would; a second thread, not counted
    /// (named "reader"), reads them all.
    static func write(at rate: Double, clients: Int, lineSize: Int) -> Never {
        let ends = clientSockets(clients)
        let line = [UInt8](repeating: UInt8(ascii: "x"), count: lineSize - 1) + [UInt8(ascii: "\n")]
        guard let owned = try? Syscall.makePeriodicTimer(period: Int64(1e9 / rate)) else { exit(1) }
        let expirations = UnsafeMutableRawBufferPointer.allocate(byteCount: 8, alignment: 8)
        while true {
            _ = Syscall.waitReadable(owned.rawValue, timeoutMilliseconds: -1)
            _ = Syscall.read(owned.rawValue, into: expirations)
            for writer in ends { _ = Glibc.write(writer, line, line.count) }
        }
    }

    /// The floor a daemon cannot go under (issue 63): reads the fake IMU motiond reads, as motiond
    /// reads it (the accelerometer's and gyroscope's scan elements and the timestamp enabled, the
    /// buffer `length` scans long, as motiond set it, and readable every `watermark` scans), so the
    /// feeder writes the same scans at the same rate; for each scan it writes one `lineSize`-byte line
    /// to each of `clients` Unix sockets, one `write` each. It decodes nothing and formats nothing:
    /// what motiond does beyond this is its own. A second thread, not counted (named "reader"), reads
    /// the clients.
    static func readAndWrite(device: String, length: Int, watermark: Int, clients: Int, lineSize: Int) -> Never {
        let directory = "/sys/bus/iio/devices/\(device)"
        func set(_ attribute: String, _ value: String) {
            guard (try? value.write(toFile: "\(directory)/\(attribute)", atomically: false, encoding: .utf8)) != nil else {
                FileHandle.standardError.write(Data("floor: cannot write \(directory)/\(attribute)\n".utf8))
                exit(1)
            }
        }
        set("buffer/enable", "0")
        for element in ["accel_x", "accel_y", "accel_z", "anglvel_x", "anglvel_y", "anglvel_z", "timestamp"] {
            set("scan_elements/in_\(element)_en", "1")
        }
        set("buffer/length", String(length))
        set("buffer/watermark", String(watermark))
        set("buffer/enable", "1")
        // 6 × s16, 4 bytes of padding, the s64 timestamp (the fixture's scan types).
        let scanSize = 24
        let node = open("/dev/\(device)", O_RDONLY | O_NONBLOCK | O_CLOEXEC)
        guard node >= 0 else { exit(1) }

        let ends = clientSockets(clients)
        let writers = UnsafeMutableBufferPointer<Int32>.allocate(capacity: clients)
        _ = writers.initialize(from: ends)
        let line = UnsafeMutableRawBufferPointer.allocate(byteCount: lineSize, alignment: 8)
        line.initializeMemory(as: UInt8.self, repeating: UInt8(ascii: "x"))
        line[lineSize - 1] = UInt8(ascii: "\n")
        let scans = UnsafeMutableRawBufferPointer.allocate(byteCount: scanSize * length, alignment: 8)
        var held = 0  // bytes of a partial scan kept from the last read
        while true {
            _ = Syscall.waitReadable(node, timeoutMilliseconds: -1)
            let count = Glibc.read(node, scans.baseAddress! + held, scans.count - held)
            guard count > 0 else { continue }
            let bytes = held + count
            for _ in 0..<(bytes / scanSize) {
                for writer in writers { _ = Glibc.write(writer, line.baseAddress, lineSize) }
            }
            held = bytes % scanSize
            if held > 0 { scans.baseAddress!.copyMemory(from: scans.baseAddress! + (bytes - held), byteCount: held) }
        }
    }

    /// Ticks as `tick` does, and at each tick sends one `datagramSize`-byte datagram to each of
    /// `clients` UDP sockets on the loopback, in one `sendmmsg`: the least a DSU server does per
    /// sample. On the loopback the sender's CPU also pays the receivers' delivery (the softirq and
    /// their wake-up), as motiond's does; the receivers, each on a thread of its own as the scenario's
    /// emulators are, not counted (named "reader"), drain them.
    static func send(at rate: Double, clients: Int, datagramSize: Int) -> Never {
        let sender = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        var addresses: [sockaddr_in] = []
        var receiverList: [Int32] = []
        for _ in 0..<clients {
            let receiver = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            let bound = withUnsafeMutablePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    bind(receiver, $0, length) == 0 && getsockname(receiver, $0, &length) == 0
                }
            }
            guard sender >= 0, receiver >= 0, bound else { exit(1) }
            receiverList.append(receiver)
            addresses.append(address)
        }
        // A thread per receiver, as each emulator of the dsu scenario has: each wakes per datagram.
        for receiver in receiverList {
            Thread {
                _ = try? String("reader").write(toFile: "/proc/thread-self/comm", atomically: false, encoding: .utf8)
                var buffer = [UInt8](repeating: 0, count: 2048)
                while true { _ = recv(receiver, &buffer, buffer.count, 0) }
            }.start()
        }
        let datagram = UnsafeMutableRawBufferPointer.allocate(byteCount: datagramSize, alignment: 8)
        datagram.initializeMemory(as: UInt8.self, repeating: 0)
        let vector = UnsafeMutablePointer<iovec>.allocate(capacity: 1)
        vector.initialize(to: iovec(iov_base: datagram.baseAddress, iov_len: datagramSize))
        let targets = UnsafeMutablePointer<sockaddr_in>.allocate(capacity: clients)
        targets.initialize(from: addresses, count: clients)
        let messages = UnsafeMutablePointer<MultipleMessageHeader>.allocate(capacity: clients)
        for index in 0..<clients {
            var header = msghdr()
            header.msg_name = UnsafeMutableRawPointer(targets + index)
            header.msg_namelen = socklen_t(MemoryLayout<sockaddr_in>.size)
            header.msg_iov = vector
            header.msg_iovlen = 1
            (messages + index).initialize(to: MultipleMessageHeader(header: header, length: 0))
        }
        guard let owned = try? Syscall.makePeriodicTimer(period: Int64(1e9 / rate)) else { exit(1) }
        let expirations = UnsafeMutableRawBufferPointer.allocate(byteCount: 8, alignment: 8)
        while true {
            _ = Syscall.waitReadable(owned.rawValue, timeoutMilliseconds: -1)
            _ = Syscall.read(owned.rawValue, into: expirations)
            _ = sendMultipleMessages(sender, messages, UInt32(clients), 0)
        }
    }

    /// `count` connected pairs of Unix stream sockets, as the clients' connections: returns the ends
    /// to write to; a thread, named "reader" so that `measure` leaves it out, reads the others.
    private static func clientSockets(_ count: Int) -> [Int32] {
        var ends: [(Int32, Int32)] = []
        for _ in 0..<count {
            var pair: [Int32] = [-1, -1]
            guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &pair) == 0 else { exit(1) }
            ends.append((pair[0], pair[1]))
        }
        let readers = ends.map(\.1)
        Thread {
            _ = try? String("reader").write(toFile: "/proc/thread-self/comm", atomically: false, encoding: .utf8)
            var polled = readers.map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
            var buffer = [UInt8](repeating: 0, count: 1 << 16)
            while true {
                guard poll(&polled, nfds_t(polled.count), -1) > 0 else { continue }
                for entry in polled where entry.revents != 0 { _ = read(entry.fd, &buffer, buffer.count) }
            }
        }.start()
        return ends.map(\.0)
    }

    /// `struct mmsghdr`, which Glibc's module leaves out (it needs _GNU_SOURCE).
    private struct MultipleMessageHeader {
        var header: msghdr
        var length: UInt32
    }

    /// sendmmsg(2), found at run time for the same reason.
    private static let sendMultipleMessages = unsafeBitCast(
        dlsym(UnsafeMutableRawPointer(bitPattern: 0), "sendmmsg"),
        to: (@convention(c) (Int32, UnsafeMutableRawPointer, UInt32, Int32) -> Int32).self)

    /// Runs the ticking child (`arguments` after the program) for `seconds` and measures its threads
    /// but the reader as the daemon is measured.
    static func measure(_ arguments: [String], seconds: Double) throws -> ProcessProbe.Usage {
        let child = Process()
        child.executableURL = URL(fileURLWithPath: CommandLine.arguments[0])
        child.arguments = arguments
        try child.run()
        defer {
            child.terminate()
            child.waitUntilExit()
        }
        usleep(500_000)
        let probe = ProcessProbe(pid: child.processIdentifier)
        var a = probe.read(), b = a
        usleep(UInt32(seconds * 1e6))
        b = probe.read()
        for (thread, reading) in b.threads where reading.name == "reader" {
            a.threads[thread] = nil
            b.threads[thread] = nil
        }
        return ProcessProbe.usage(from: a, to: b)
    }
}
