import Foundation
import MotionClient
import MotionWire
import NIOPosix
import TestSupport
import Testing

@testable import MotionMetrics

/// The metrics endpoint scraped over HTTP while a client streams, checked against what else tells the
/// same facts: the recording's rate (BROAD's IMU, 285.7 Hz, as `motionctl status` measures it too),
/// the client's own count of updates, and STATUS.
@Suite(.serialized, .onOwnThreads) struct MetricsTests {
    @Test func aScrapeWhileStreamingCountsWhatTheClientAndStatusSee() async throws {
        let port = try freeLoopbackPort()
        let daemon = try ReplayDaemon(arguments: ["--loop", "--metrics", "127.0.0.1:\(port)"])
        let client = MotionClient(socketPath: daemon.socket)
        var updates = 0
        var scraped: (status: Int, body: String)?
        for try await update in client.updates(of: [.motion], interval: 0.01) {
            guard case .motion = update else { continue }
            updates += 1
            // Scraped while the stream runs.
            if updates == 100 {
                scraped = try httpRequest(port: port, path: "/metrics")
                break
            }
        }
        let first = try #require(scraped)
        #expect(first.status == 200)
        let before = prometheusSamples(first.body)
        // Every line is a comment or `name{labels} number` (Prometheus's text format 0.0.4).
        let malformed = first.body.split(separator: "\n").filter { !$0.hasPrefix("# TYPE ") && $0.split(separator: " ").count != 2 }
        #expect(malformed.isEmpty, "\(malformed)")

        // 100 updates are 99 intervals of 0.01 s on average (the decimator keeps the mean interval):
        // 0.99 s of a 285.7 Hz recording, ≥ 282 samples of each sensor.
        let read = try #require(before["motiond_samples_read_total{sensor=\"accelerometer\"}"], "\(first.body)")
        #expect(read >= 282, "\(read)")
        #expect(before["motiond_samples_read_total{sensor=\"gyroscope\"}"] == read, "the IMU reads all three in one scan")
        #expect(before["motiond_samples_read_total{sensor=\"magnetometer\"}"] == read)
        #expect(before["motiond_fusion_running"] == 1)
        let measured = try #require(before["motiond_sensor_measured_rate_hertz{device=\"iio:device0\"}"])
        #expect(abs(measured - 285.714) < 3, "\(measured)")
        #expect(before["motiond_sensor_rate_hertz{device=\"iio:device0\"}"].map { abs($0 - 285.714) < 0.1 } == true)

        // A refused request and a second client: the counters move, STATUS agrees.
        let raw = try LineConnection(socketPath: daemon.socket)
        try raw.send(raw: Array("{\"class\":\"NOPE\"}\n".utf8))
        #expect(Wire.className(of: try raw.nextLine(timeout: 5)) == ErrorReply.className)
        let status = try client.status()
        let after = prometheusSamples(try httpRequest(port: port, path: "/metrics").body)
        #expect(after["motiond_errors_total{kind=\"request_refused\"}"] == 1)
        #expect(after["motiond_clients"] == Double(status.clients), "STATUS says \(status.clients)")
        #expect(after["motiond_dropped_samples_total"] == Double(status.dropped))
        #expect(try #require(after["motiond_uptime_seconds"]) >= before["motiond_uptime_seconds"]!)
        #expect(try #require(after["motiond_samples_read_total{sensor=\"accelerometer\"}"]) >= read)

        #expect(try httpRequest(port: port, path: "/").status == 404)
        #expect(try httpRequest("POST", port: port, path: "/metrics").status == 405)
    }

    /// The pedometer and activity series say what a POLL of those streams says. The recording plays
    /// on meanwhile, so the scrape is bracketed by two polls: it says what one of them says. A
    /// watcher keeps the sensors running throughout (a poll's alone stop 5 s after it, and a loaded
    /// machine answered the first that late: the scrape then found the sensors stopped).
    @Test func theStepsAndTheActivityAreScrapedAsPolled() async throws {
        let port = try freeLoopbackPort()
        let daemon = try ReplayDaemon(arguments: ["--loop", "--metrics", "127.0.0.1:\(port)"])
        let watcher = try TestClient.greeted(path: daemon.socket)
        try watcher.send(#"{"class":"WATCH","streams":["activity"]}"#)
        _ = try watcher.next("WATCHING")
        let client = MotionClient(socketPath: daemon.socket)
        let before = try await client.snapshot(of: [.pedometer, .activity])
        let scraped = prometheusSamples(try httpRequest(port: port, path: "/metrics").body)
        let after = try await client.snapshot(of: [.pedometer, .activity])
        let steps = try #require(scraped["motiond_steps_total"])
        let (first, last) = (try #require(before.pedometer).steps, try #require(after.pedometer).steps)
        #expect(Double(first) <= steps && steps <= Double(last), "\(first) ≤ \(steps) ≤ \(last)")
        let activities = [try #require(before.activity).activity, try #require(after.activity).activity]
        let current = MotionActivityKind.allCases.filter { scraped["motiond_activity{activity=\"\($0.rawValue)\"}"] == 1 }
        #expect(current.count == 1 && activities.contains(current[0]), "scraped \(current), polled \(activities)")
        #expect(MotionActivityKind.allCases.allSatisfy { scraped["motiond_activity{activity=\"\($0.rawValue)\"}"] != nil }, "every kind is a series")
        #expect(scraped["motiond_altitude_meters"] == nil, "the recording has no pressure sensor")
    }

    @Test func theBridgesCountersAreScraped() throws {
        let broker = try MosquittoBroker()
        let port = try freeLoopbackPort()
        let path = NSTemporaryDirectory() + "motiond-metrics-\(getpid()).conf"
        try "metrics: 127.0.0.1:\(port)\nmqtt:\n  broker: mqtt://127.0.0.1:\(broker.port)\n  topic_prefix: m/\n  streams: [{stream: motion, interval: 0.05}]\n"
            .write(toFile: path, atomically: true, encoding: .utf8)
        let daemon = try ReplayDaemon(arguments: ["--loop", "--config", path])
        let subscriber = try MQTTSubscriber(port: broker.port, topic: "m/motion")
        let received = subscriber.wait(seconds: 10) { $0.count >= 10 }.count
        let metrics = prometheusSamples(try httpRequest(port: port, path: "/metrics").body)
        #expect(metrics["motiond_mqtt_connected"] == 1, "\(daemon.log)")
        #expect(try #require(metrics["motiond_mqtt_published_messages_total"]) >= Double(received))
        #expect(metrics["motiond_mqtt_dropped_messages_total"] == 0)
        broker.kill()
        // The bridge sees the broker gone as its connection ends: until then the gauge says 1.
        let down = { (try? prometheusSamples(httpRequest(port: port, path: "/metrics").body))?["motiond_mqtt_connected"] == 0 }
        #expect((try? waitUntil(down)) != nil, "motiond_mqtt_connected is 0 once the broker is gone: \(daemon.log)")
    }

    @Test func anAddressItCannotListenOnIsRefusedSayingWhichAndWhy() throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        defer { try? group.syncShutdownGracefully() }
        let port = try freeLoopbackPort()
        let first = try MetricsServer(host: "127.0.0.1", port: port, eventLoop: group.next()) { [] }
        defer { try? first.close() }
        // NIO's own words are "bind(descriptor:ptr:bytes:): Address already in use) (errno: 98)".
        #expect {
            try MetricsServer(host: "127.0.0.1", port: port, eventLoop: group.next()) { [] }
        } throws: { "\($0)" == "metrics 127.0.0.1:\(port): cannot listen: Address already in use" }
    }
}
