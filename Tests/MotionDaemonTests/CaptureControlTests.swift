import Foundation
import MotionCore
import MotionDevices
import MotionWire
import NIOCore
import Synchronization
import TestSupport
import Testing

@testable import MotionDaemon
import MotionHub

/// Stopping a capture joins its reader thread, which can wait for a slow read: that must not stop
/// the event loop that serves every client.
@Suite(.onOwnThreads) struct CaptureControlTests {
    /// The bundled recording, whose first capture takes until the test says so to stop.
    final class SlowStoppingSource: SensorSource {
        let replay: ReplaySource
        let release = DispatchSemaphore(value: 0)
        let stopsStarted = Atomic<Int>(0)

        init() throws { replay = try ReplaySource(path: ReplayDaemon.bundledRecording, loops: true) }

        final class Stream: SensorStream {
            let inner: any SensorStream
            let source: SlowStoppingSource
            init(_ inner: any SensorStream, _ source: SlowStoppingSource) { (self.inner, self.source) = (inner, source) }
            var rate: Double { inner.rate }
            var readingMode: ReadingMode { inner.readingMode }
            func start(handler: @escaping @Sendable (SensorEvent) -> Void) { inner.start(handler: handler) }
            func stop() {
                // Only the first stop is held: the daemon's own stop at the end must not wait for a release.
                if source.stopsStarted.add(1, ordering: .relaxed).newValue == 1 { source.release.wait() }
                inner.stop()
            }
        }

        func listDevices() throws -> DeviceListing { try replay.listDevices() }
        func open(
            _ device: DeviceDescriptor, kinds: [SensorKind], rate: Double, latency: Double, restsWhenStill: Bool, eventLoop: any EventLoop
        ) throws -> any SensorStream {
            Stream(try replay.open(device, kinds: kinds, rate: rate, latency: latency, restsWhenStill: restsWhenStill, eventLoop: eventLoop), self)
        }
        var followsHotPlug: Bool { false }
        func readingMode(of device: DeviceDescriptor) -> ReadingMode { replay.readingMode(of: device) }
    }

    /// A capture whose stop hangs until released: the daemon answers another client meanwhile (were
    /// the stop on the loop, no answer could come before the release, which waits for that answer).
    @Test func aCaptureThatIsSlowToStopDoesNotStopTheDaemon() async throws {
        let source = try SlowStoppingSource()
        let server = MotionServer(socketPath: NSTemporaryDirectory() + "motiond-control-\(getpid()).sock", source: source)
        try await server.start()
        defer { source.release.signal() }  // the held stop goes on, should the test end before it releases it
        try await server.whileServing {
            let watcher = try TestClient.greeted(path: server.socketPath)
            try watcher.send(#"{"class":"WATCH","streams":["gyroscope"],"interval":0.01}"#)
            _ = try watcher.next("GYROSCOPE")
            try watcher.send(#"{"class":"WATCH","streams":["gyroscope"],"enable":false}"#)
            _ = try watcher.next("WATCHING")
            // The stop runs on the thread pool: asked for STATUS once it is under way (and held).
            try waitUntil { source.stopsStarted.load(ordering: .relaxed) == 1 }
            let other = try TestClient.greeted(path: server.socketPath)
            try other.send(#"{"class":"STATUS"}"#)
            let status = try other.decode(StatusReply.self, try other.next("STATUS", seconds: 5))
            #expect(status.sensors.isEmpty, "the stopping capture is no longer counted as running")
            source.release.signal()
            // Watched again once stopped: the device opens anew and serves.
            try watcher.send(#"{"class":"WATCH","streams":["gyroscope"],"interval":0.01}"#)
            _ = try watcher.next("GYROSCOPE")
        }
    }
}
