import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A TCP (or, with `datagram`, UDP) port nothing listens on now on 127.0.0.1 (the kernel's choice for
/// a socket bound to port 0).
public func freeLoopbackPort(datagram: Bool = false) throws -> Int {
    let fd = socket(AF_INET, Int32(datagram ? SOCK_DGRAM.rawValue : SOCK_STREAM.rawValue), 0)
    defer { close(fd) }
    var address = loopbackAddress(port: 0)
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
    }
    guard bound else { throw TestbedError("no free port: errno \(errno)") }
    return Int(UInt16(bigEndian: address.sin_port))
}

func loopbackAddress(port: Int) -> sockaddr_in {
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = UInt16(port).bigEndian
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    return address
}

/// A TCP connection to 127.0.0.1:`port`.
public func connectLoopback(port: Int) throws -> Int32 {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    var address = loopbackAddress(port: port)
    let connected = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
    }
    guard connected else {
        close(fd)
        throw TestbedError("connect to 127.0.0.1:\(port): errno \(errno)")
    }
    return fd
}

/// An HTTP/1.0 request to 127.0.0.1:`port`, answered in full: the status code and the body.
public func httpRequest(_ method: String = "GET", port: Int, path: String) throws -> (status: Int, body: String) {
    let fd = try connectLoopback(port: port)
    defer { close(fd) }
    let request = Array("\(method) \(path) HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n".utf8)
    guard write(fd, request, request.count) == request.count else { throw TestbedError("write to 127.0.0.1:\(port): errno \(errno)") }
    var response: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 65536)
    while true {
        let count = read(fd, &buffer, buffer.count)
        guard count > 0 else { break }
        response += buffer[..<count]
    }
    let text = String(decoding: response, as: UTF8.self)
    guard let statusLine = text.split(separator: "\r\n").first, let status = Int(statusLine.split(separator: " ")[1]),
        let bodyStart = text.range(of: "\r\n\r\n")
    else { throw TestbedError("not an HTTP response: \(text.prefix(200))") }
    return (status, String(text[bodyStart.upperBound...]))
}

/// `name{labels} value` lines of a Prometheus text exposition, by `name{labels}`.
public func prometheusSamples(_ exposition: String) -> [String: Double] {
    var samples: [String: Double] = [:]
    for line in exposition.split(separator: "\n") where !line.hasPrefix("#") {
        let parts = line.split(separator: " ")
        guard parts.count == 2, let value = Double(parts[1]) else { continue }
        samples[String(parts[0])] = value
    }
    return samples
}
