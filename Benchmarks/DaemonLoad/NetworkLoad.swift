import Foundation
import MotionClient
import TestSupport

#if canImport(Glibc)
import Glibc
#endif

extension DaemonLoad {
    /// A sensor over the network: Debian's iiod serves this process's testbed (the IMU) on loopback,
    /// and a motiond that sees no local devices reads its accelerometer at 100 Hz for one client, its
    /// attributes polled (no scans come: after its first-data timeout the capture polls), then its
    /// buffer streamed by iiod (the feeder playing the chip): motiond's and iiod's CPU, and the rate
    /// the samples' timestamps show. Polled first: iiod's thread for an abandoned buffer blocks in its
    /// read of the device until scans come.
    func network(executable: String, testbed: Testbed) throws {
        let port = try freeLoopbackPort()
        let iiod = Process()
        iiod.executableURL = URL(fileURLWithPath: "/usr/sbin/iiod")
        iiod.arguments = ["-p", "\(port)"]
        iiod.standardOutput = FileHandle.nullDevice
        iiod.standardError = FileHandle.nullDevice
        try iiod.run()
        defer {
            kill(iiod.processIdentifier, SIGKILL)
            iiod.waitUntilEnded(seconds: 5)
        }
        let deadline = Date().addingTimeInterval(10)
        while !MosquittoBroker.accepts(port: port) && Date() < deadline { usleep(10_000) }

        let path = NSTemporaryDirectory() + "daemon-load-network-\(getpid()).conf"
        try "network_sensors: [\"ip:127.0.0.1:\(port)\"]\n".write(toFile: path, atomically: true, encoding: .utf8)
        for buffered in [false, true] {
            let feeder = buffered ? Feeder(testbed: testbed, device: "iio:device0", node: "/dev/iio:device0", rate: 100) : nil
            defer { feeder?.stop() }
            // Not under the testbed: its only sensors are iiod's.
            let daemon = try Daemon(executable: executable, arguments: ["--config", path], environment: ["LD_PRELOAD": "", "UMOCKDEV_DIR": ""])
            let load = try LoadClients(socket: daemon.socket, count: 1)
            load.start()
            try load.sendToAll(#"{"class":"WATCH","streams":["accelerometer"],"interval":0.01}"#)
            sleep(buffered ? 2 : 4)
            let probe = ProcessProbe(pid: daemon.pid), server = ProcessProbe(pid: iiod.processIdentifier)
            let a = probe.read(), serverA = server.read()
            usleep(UInt32(seconds * 1e6))
            let b = probe.read(), serverB = server.read()
            load.stop()
            let status = try MotionClient(socketPath: daemon.socket).status()
            let rate = status.sensors.first?.measuredRate ?? 0
            print(String(
                format: "network: an accelerometer through iiod on loopback at 100 Hz, %@, 1 client: motiond %@; iiod %@; measured %.1f Hz",
                buffered ? "its buffer streamed" : "polled", ProcessProbe.usage(from: a, to: b).description,
                ProcessProbe.usage(from: serverA, to: serverB).description, rate))
        }
    }
}
