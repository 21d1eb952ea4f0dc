import Foundation
import Logging
import MotionCore
import Synchronization
import TestSupport
import Testing

@testable import MotionDBus

/// The D-Bus connections on a bus that accepts them and never answers (issue 60, defect 9): making
/// one, starting it and stopping it each return at once, whatever the bus does.
@Suite(.onOwnThreads) struct SilentBusTests {
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

    /// GeoClue's client on a bus that authenticates and answers `Hello` at once but gives its other
    /// replies only after 11 s (a bus driver slow at boot), with a true-north watch from the start: it
    /// gets GeoClue's place once the bus answers (its `GetClient`, unanswered in 10 s, is asked again),
    /// and a GeoClue started again at another place is asked again (its `NameOwnerChanged` match,
    /// asked for at start, is in place).
    @Test func geoCluesClientOnABusThatAnswersLateGetsThePlace() throws {
        let system = try PrivateSystemBus()
        let standIn = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("../TestSupport/Fixtures/geoclue-stand-in.py").standardized.path
        var geoClue = try Peer("/usr/bin/python3", arguments: [standIn, "52.52", "13.40", "34"], bus: system)
        try waitUntil(seconds: 20) { geoClue.output.contains("Owned org.freedesktop.GeoClue2") }
        let bus = try SilentBus(wakingInto: system, driverAnswersLate: true)
        bus.wake()
        let began = Date()
        let places = Mutex<[GeographicLocation]>([])
        let client = try GeoClueClient(address: bus.address, logger: Logger(label: "test")) { place in places.withLock { $0.append(place) } }
        client.start()
        defer { client.stop() }
        client.setLocationWanted(true)
        Thread.sleep(forTimeInterval: max(0, 11 - Date().timeIntervalSince(began)))
        bus.letTheDriverAnswer()
        // 30 s, not 10: the rule is that the place comes once the bus answers, and a CI run of the full
        // suite on two cores (a bus, a Python GeoClue stand-in and the client all starved) needed more than 10.
        #expect(throws: Never.self, "no place 30 s after the bus answered: \(geoClue.output)") {
            try waitUntil(seconds: 30) { places.withLock { $0.contains { abs($0.latitude - 52.52) < 1e-6 } } }
        }
        geoClue.stop()
        geoClue = try Peer("/usr/bin/python3", arguments: [standIn, "48.85", "2.35", "35"], bus: system)
        #expect(throws: Never.self, "a GeoClue started again was not asked: \(geoClue.output)") {
            try waitUntil(seconds: 30) { places.withLock { $0.contains { abs($0.latitude - 48.85) < 1e-6 } } }
        }
    }
}
