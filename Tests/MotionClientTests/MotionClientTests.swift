import Foundation
import MotionClient
import Synchronization
import Testing
import TestSupport

/// The client library against a real motiond replaying the bundled BROAD recording.
@Suite(.serialized, .onOwnThreads) struct MotionClientTests {
    /// BROAD's trials start at rest (its README): the raw accelerometer then reads 1 g, and the fused
    /// gravity points along it, both with CoreMotion's sign (−1 g along up).
    @Test func pullGivesASnapshotWhoseGravityIsWhereTheAccelerometerFeelsIt() throws {
        let daemon = try ReplayDaemon()
        let client = MotionClient(socketPath: daemon.socket)
        let snapshot = try client.snapshot(of: [.motion, .accelerometer])
        let motion = try #require(snapshot.motion)
        let acceleration = try #require(snapshot.accelerometer).acceleration
        #expect(abs(acceleration.length - 1) < 0.05, "at rest the accelerometer reads 1 g: \(acceleration)")
        let cosine = motion.gravity.dot(acceleration) / (motion.gravity.length * acceleration.length)
        #expect(cosine > cos(3 * Double.pi / 180), "gravity \(motion.gravity) along the acceleration \(acceleration)")
        #expect(try client.devices().map(\.kinds) == [[.accelerometer, .gyroscope, .magnetometer]])
        #expect(try client.devices().first?.mode == "replayed")
        usleep(300_000)  // stays: the sensors are to be still running this long after the poll
        let sensor = try #require(try client.status().sensors.first, "the sensors stay warm after a poll")
        #expect(sensor.mode == "replayed" && abs((sensor.measuredRate ?? 0) - 285.714) < 3, "\(sensor)")
    }

    @Test func pullWithoutBlockingTheCaller() async throws {
        let daemon = try ReplayDaemon()
        let snapshot = try await MotionClient(socketPath: daemon.socket).snapshot(of: [.gyroscope])
        #expect(snapshot.gyroscope != nil && snapshot.motion == nil, "only what was asked")
    }

    @Test func pushDeliversUpdatesAtTheAskedIntervalOnTheSampleClock() async throws {
        let daemon = try ReplayDaemon()
        let client = MotionClient(socketPath: daemon.socket)
        var stamps: [Int64] = []
        for try await update in client.updates(of: [.motion], interval: 0.05) {
            guard case .motion(let motion) = update else { continue }
            stamps.append(motion.timestamp)
            if stamps.count == 21 { break }
        }
        let mean = Double(stamps.last! - stamps.first!) / 20 * 1e-9
        #expect(abs(mean - 0.05) < 0.004, "mean interval \(mean) s from a 285.7 Hz recording")
    }

    @Test func everyMotionUpdateHasTheMagnetometerSampleOfItsOwnRead() async throws {
        // In the recording each instant has accelerometer, gyroscope, then magnetometer samples:
        // motion is sent once the whole read is fused, so even the first one has a field.
        let daemon = try ReplayDaemon()
        for try await update in MotionClient(socketPath: daemon.socket).updates(of: [.motion], interval: 0.01) {
            guard case .motion(let motion) = update else { continue }
            #expect(motion.magneticField.field.length > 20, "\(motion.magneticField)")
            break
        }
    }

    @Test func theCallbackFormStopsWhenCancelled() throws {
        let daemon = try ReplayDaemon()
        let client = MotionClient(socketPath: daemon.socket)
        let count = Atomic<Int>(0)
        let subscription = client.watch([.gyroscope], interval: 0.01) { result in
            if case .success(.gyroscope) = result { count.add(1, ordering: .relaxed) }
        }
        try waitUntil { count.load(ordering: .relaxed) >= 20 }
        subscription.cancel()
        let after = count.load(ordering: .relaxed)
        // A witness on the same stream: once it has had 30 more samples, the cancelled one would
        // have had some too.
        let witnessed = Atomic<Int>(0)
        let witness = client.watch([.gyroscope], interval: 0.01) { result in
            if case .success(.gyroscope) = result { witnessed.add(1, ordering: .relaxed) }
        }
        defer { witness.cancel() }
        #expect((try? waitUntil { witnessed.load(ordering: .relaxed) >= 30 }) != nil, "the stream went on")
        #expect(count.load(ordering: .relaxed) == after, "nothing after cancel")
    }

    @Test func aStreamResumesAfterTheDaemonRestarts() async throws {
        var daemon: ReplayDaemon? = try ReplayDaemon()
        let socket = daemon!.socket
        let client = MotionClient(socketPath: socket)
        var seen = 0
        var restarted = false
        for try await update in client.updates(of: [.gyroscope], interval: 0.02) {
            guard case .gyroscope = update else { continue }
            seen += 1
            if seen == 5 {
                #expect(daemon!.stop(), "motiond stops on SIGTERM")
                daemon = try ReplayDaemon(socket: socket)
                restarted = true
            }
            if seen == 10 { break }
        }
        #expect(restarted && seen == 10, "updates came again from the new daemon")
    }

    /// The documented path after a daemon restart: the next request finds its connection dead and
    /// retries on a fresh one. Writing to the dead connection used to raise SIGPIPE, which kills
    /// the program that uses the library (this test process with it).
    @Test func aRequestAfterTheDaemonRestartedIsRetriedWithoutKillingTheCaller() throws {
        var daemon = try ReplayDaemon()
        let socket = daemon.socket
        let client = MotionClient(socketPath: socket)
        _ = try client.status()
        #expect(daemon.stop(), "motiond stops on SIGTERM")
        daemon = try ReplayDaemon(socket: socket)
        #expect(try client.status().clients == 1, "answered by the new daemon on a fresh connection")
    }

    @Test func aMissingDaemonIsReportedWithWhatToDo() throws {
        let client = MotionClient(socketPath: NSTemporaryDirectory() + "no-motiond-here.sock")
        #expect(throws: MotionClientError.daemonNotRunning(socket: client.socketPath)) { try client.status() }
        #expect("\(MotionClientError.daemonNotRunning(socket: "/x"))".contains("systemctl start motiond"))
    }

    @Test func theSocketComesFromTheArgumentTheEnvironmentOrTheDefaults() {
        #expect(MotionClient(socketPath: "/a").socketPath == "/a")
        #expect(MotionClient.defaultSocketPath(environment: ["MOTIOND_SOCKET": "/b"]) == "/b")
        #expect(MotionClient.defaultSocketPath(environment: ["XDG_RUNTIME_DIR": "/nonexistent"]) == "/run/motiond/motiond.sock")
    }

    @Test func theMotionManagerWorksAsCoreMotionsDoes() throws {
        let daemon = try ReplayDaemon()
        let manager = MotionManager(client: MotionClient(socketPath: daemon.socket))
        #expect(manager.isDeviceMotionAvailable && manager.isMagnetometerAvailable)
        #expect(!manager.isProximityAvailable)
        manager.deviceMotionUpdateInterval = 0.02
        let received = Atomic<Int>(0)
        let queue = OperationQueue()
        manager.startDeviceMotionUpdates(using: .xMagneticNorthZVertical, to: queue) { motion, error in
            if let motion, motion.frame == .xMagneticNorthZVertical, motion.heading != nil { received.add(1, ordering: .relaxed) }
        }
        #expect(manager.isDeviceMotionActive)
        try waitUntil { received.load(ordering: .relaxed) >= 10 }
        #expect(manager.deviceMotion?.frame == .xMagneticNorthZVertical, "the pull property follows the updates")
        manager.stopDeviceMotionUpdates()
        #expect(manager.deviceMotion == nil && !manager.isDeviceMotionActive)

        // Started without a handler: read the property.
        manager.startGyroUpdates()
        try waitUntil { manager.gyroData != nil }
        manager.stopGyroUpdates()
    }
}

/// What a later minor version of the daemon may send (a new stream, a new error code), which this
/// client cannot read: it neither loses its own reply nor waits for ever. A scripted stand-in sends
/// it, since no daemon of this version does.
@Suite(.onOwnThreads) struct ForwardCompatibilityTests {
    /// A message in between that this version cannot read used to end the round trip.
    @Test func anUnreadableMessageBeforeTheReplyIsSkipped() throws {
        let daemon = try ScriptedDaemon(replies: [
            #"{"class":"DROPPED","stream":"a-later-stream","count":3}"#,
            #"{"class":"DEVICES","id":$ID,"devices":[]}"#,
        ])
        #expect(try MotionClient(socketPath: daemon.path, timeout: 2).devices().isEmpty)
    }

    /// A refusal with an error code this version does not know used to be skipped: the watcher waited
    /// for updates that never came.
    @Test func aRefusalWithAnUnknownCodeEndsTheStream() throws {
        let daemon = try ScriptedDaemon(replies: [#"{"class":"ERROR","id":$ID,"code":"a-later-code","message":"no"}"#])
        let ended = DispatchSemaphore(value: 0)
        let outcome = Mutex<MotionClientError?>(nil)
        let subscription = MotionClient(socketPath: daemon.path, timeout: 2).watch([.motion], reconnects: false) { result in
            if case .failure(let error) = result {
                outcome.withLock { $0 = error }
                ended.signal()
            }
        }
        defer { subscription.cancel() }
        #expect(ended.wait(timeout: .now() + 5) == .success, "the stream ended")
        guard case .refused(.internal, let message)? = outcome.withLock({ $0 }) else {
            Issue.record("\(String(describing: outcome.withLock { $0 }))")
            return
        }
        #expect(message.contains("a-later-code"), "\(message)")
    }
}
