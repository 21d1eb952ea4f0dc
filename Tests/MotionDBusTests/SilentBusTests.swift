import Foundation
import Logging
import Synchronization
import TestSupport
import Testing

@testable import MotionDBus

/// The D-Bus connections on a bus that accepts them and never answers (issue 60, defect 9): making
/// one, starting it and stopping it each return at once, whatever the bus does.
@Suite struct SilentBusTests {
    /// Seconds `body` took.
    static func seconds(_ body: () throws -> Void) rethrows -> Double {
        let start = Date()
        try body()
        return Date().timeIntervalSince(start)
    }

    /// The drop-in's service: made and started at once; its wait for the name, interrupted from
    /// another thread, returns at once, without the name; its stop too.
    @Test func theServiceNeitherStartsNorStopsWaitingForTheBus() throws {
        let bus = try SilentBus()
        var service: SensorProxyService?
        let made = try Self.seconds { service = try SensorProxyService(address: bus.address) }
        let started = try #require(service)
        started.start()
        try waitUntil(seconds: 10) { bus.connections == 1 }
        Thread { usleep(200_000); started.interruptWaiting() }.start()
        var named = true
        let waited = try Self.seconds { named = try started.waitUntilNamed(seconds: 30) }
        let stopped = Self.seconds { started.stop() }
        #expect(!named)
        #expect(made < 1 && waited < 1 && stopped < 1, "made in \(made) s, waited \(waited) s (interrupted after 0.2 s), stopped in \(stopped) s")
    }

    /// GeoClue's client: made, started, asked for the place, and stopped (its last `Stop` queued for
    /// a bus that never takes it) within a second.
    @Test func geoCluesClientNeitherStartsNorStopsWaitingForTheBus() throws {
        let bus = try SilentBus()
        let took = try Self.seconds {
            let client = try GeoClueClient(address: bus.address, logger: Logger(label: "test")) { _ in }
            client.start()
            client.setLocationWanted(true)
            try waitUntil(seconds: 10) { bus.connections == 1 }
            client.stop()
        }
        #expect(took < 1.5, "\(took) s")
    }

    /// A bus that answers after 11 s, longer than a method call's timeout (10 s), as a bus slow at boot
    /// or restarted does: the service takes its name then, serves a claim, and releases it when its
    /// claimant leaves the bus (the `NameOwnerChanged` match, asked for at start, is in place). The
    /// setup calls must not time out before it answers: silent from the start (sd-bus counts a call's
    /// timeout from the end of authentication), or authenticating at once and answering `Hello` but
    /// not the calls after it until 11 s (`driverAnswersLate`).
    @Test(arguments: [false, true])
    func aBusThatAnswersAfterElevenSecondsIsServed(driverAnswersLate: Bool) throws {
        let system = try PrivateSystemBus()
        let bus = try SilentBus(wakingInto: system, driverAnswersLate: driverAnswersLate)
        if driverAnswersLate { bus.wake() }
        let began = Date()
        let served = Mutex<SensorProxyService?>(nil)
        let service = try SensorProxyService(address: bus.address) { sensor, claimed in
            if claimed { served.withLock { $0 }?.markReady(sensor) }
        }
        served.withLock { $0 = service }
        service.start()
        defer { service.stop() }
        #expect(try !service.waitUntilNamed(seconds: 10), "named by a bus that has not answered")
        // The scenario is the bus's silence itself: 11 s from the start, then it answers.
        Thread.sleep(forTimeInterval: max(0, 11 - Date().timeIntervalSince(began)))
        if driverAnswersLate { bus.letTheDriverAnswer() } else { bus.wake() }
        var named = false
        do { named = try service.waitUntilNamed(seconds: 10) } catch { Issue.record("the name refused: \(error)") }
        #expect(named && system.hasOwner(SensorProxyInterface.busName), "no name 10 s after the bus woke")
        var client: BusClient? = try BusClient(address: system.address)
        try client?.call("ClaimAccelerometer")
        let claimant = client?.uniqueName ?? ""
        #expect(service.claimants(of: .accelerometer) == [claimant])
        client = nil
        #expect(throws: Never.self, "the claim of a client that left stays") {
            try waitUntil(seconds: 5) { service.claimants(of: .accelerometer).isEmpty }
        }
    }
}
