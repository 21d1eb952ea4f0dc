import Foundation
import TestSupport

#if canImport(Glibc)
import Glibc
#endif

extension DaemonLoad {
    /// The MQTT bridge's cost and its losses, against Debian's mosquitto on loopback: motiond at 1 kHz
    /// with one local client watching motion, with and without the bridge publishing the same stream
    /// (the difference is the bridge), then with the broker down for 10 s mid-stream.
    func mqtt(executable: String, testbed: Testbed) throws {
        let broker = try MosquittoBroker()
        let directory = NSTemporaryDirectory() + "daemon-load-mqtt-\(getpid())"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)

        /// motiond CPU over `seconds` with a local client at 1 kHz, and the bridge as `mqtt` says (nil: none).
        func measure(_ mqtt: String?, latency: Double = 0, outage: Bool = false) throws -> (usage: ProcessProbe.Usage, local: Int, localDropped: Int, received: Int, log: String, peakRSS: Int) {
            var arguments = ["--log-level", "notice"]
            if let mqtt {
                let path = directory + "/motiond.conf"
                try "mqtt:\n  broker: mqtt://127.0.0.1:\(broker.port)\n  topic_prefix: load/\n\(mqtt)\n".write(toFile: path, atomically: true, encoding: .utf8)
                arguments += ["--config", path]
            }
            let subscriber = try MQTTSubscriber(port: broker.port, topic: "load/motion")
            let daemon = try Daemon(executable: executable, arguments: arguments)
            let feeder = Feeder(testbed: testbed, device: "iio:device0", node: "/dev/iio:device0", rate: 1000)
            defer { feeder.stop() }
            let load = try LoadClients(socket: daemon.socket, count: 1)
            load.start()
            try load.sendToAll(#"{"class":"WATCH","streams":["motion"],"interval":0.001,"latency":\#(latency)}"#)
            sleep(2)
            let probe = ProcessProbe(pid: daemon.pid)
            load.startCounting()
            let before = subscriber.messages.count
            let a = probe.read()
            if outage {
                broker.kill()
                usleep(10_000_000)
                try broker.start()
                // Until the bridge is back (after its backoff).
                let restarted = Date()
                while daemon.log.components(separatedBy: "MQTT broker connected").count < 3 && Date() < restarted.addingTimeInterval(40) { usleep(10_000) }
                print(String(format: "mqtt: the bridge was back %.1f s after the broker", Date().timeIntervalSince(restarted)))
            } else {
                usleep(UInt32(seconds * 1e6))
            }
            let b = probe.read()
            load.stop()
            let received = subscriber.messages.count - before
            return (ProcessProbe.usage(from: a, to: b), load.received[0], load.dropped, received, daemon.log, probe.status("VmHWM"))
        }

        let base = try measure(nil)
        print("mqtt: no bridge, one local client of motion at 1 kHz: \(base.usage); local lines \(base.local), dropped \(base.localDropped); peak RSS \(base.peakRSS) kB")
        let bridged = try measure("  streams: [{stream: motion, interval: 0.001}]")
        let rate = Double(bridged.received) / seconds
        print(String(
            format: "mqtt: with the bridge publishing motion at 1 kHz: %@; local lines %d, dropped %d; the broker delivered %d (%.0f messages/s); peak RSS %d kB\n    the bridge's cost: %.2f %% of one core per 1,000 messages/s",
            bridged.usage.description, bridged.local, bridged.localDropped, bridged.received, rate, bridged.peakRSS,
            (bridged.usage.cpuPercent - base.usage.cpuPercent) / max(rate, 1) * 1000))
        print("    wake-ups by thread: \(bridged.usage.byThread)")
        let batchedBase = try measure(nil, latency: 0.1)
        let batched = try measure("  batch: true\n  streams: [{stream: motion, interval: 0.001, latency: 0.1}]", latency: 0.1)
        print(String(
            format: "mqtt: batched (latency 0.1 s, one message per batch), the local client too: without the bridge %@; with it %@, %d messages delivered (%.1f/s)\n    the bridge's cost: %.2f %% of one core per 1,000 samples/s",
            batchedBase.usage.description, batched.usage.description, batched.received, Double(batched.received) / seconds,
            batched.usage.cpuPercent - batchedBase.usage.cpuPercent))
        let outage = try measure("  streams: [{stream: motion, interval: 0.001}]", outage: true)
        let dropped = outage.log.components(separatedBy: "dropped so far=").last.flatMap { Int($0.prefix { $0.isNumber }) } ?? -1
        print("mqtt: broker down 10 s at 1,000 messages/s (queue 1000): the bridge dropped \(dropped) messages; local lines \(outage.local), dropped \(outage.localDropped); \(outage.usage); peak RSS \(outage.peakRSS) kB")
    }
}
