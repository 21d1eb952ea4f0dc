import Foundation
import MotionClient
import Synchronization
import TestSupport
import Testing

/// `Pedometer`, `MotionActivityManager` and `Altimeter` turn the protocol's lines into CoreMotion's
/// shapes: checked on lines a scripted daemon sends (worked examples of docs/protocol.md's
/// semantics), each reply given to every request, as the stand-in does.
@Suite(.onOwnThreads) struct CoreMotionShapesTests {
    /// Collects what a handler gets until `count` values came (or 5 s passed).
    final class Collected<Value: Sendable>: Sendable {
        private let values = Mutex<[Value]>([])
        private let arrived = DispatchSemaphore(value: 0)
        func add(_ value: Value) {
            values.withLock { $0.append(value) }
            arrived.signal()
        }
        func wait(for count: Int) -> [Value] {
            for _ in 0..<count { _ = arrived.wait(timeout: .now() + 5) }
            return values.withLock { $0 }
        }
    }

    /// Steps since a past date: the history's count up to now, then what the live count adds.
    @Test func livePedometerUpdatesFromAPastDateAddTheHistorysSteps() throws {
        let daemon = try ScriptedDaemon(replies: [
            #"{"class":"HISTORY","id":$ID,"stream":"pedometer","from":1795564800,"to":1795568400,"steps":100,"distance":70.55}"#,
            #"{"class":"WATCHING","id":$ID,"streams":[{"stream":"pedometer"}]}"#,
            #"{"class":"PEDOMETER","timestamp":0,"steps":500,"distance":352.75}"#,
            #"{"class":"PEDOMETER","timestamp":5000000000,"steps":503,"distance":354.8665,"cadence":1.8,"pace":0.787,"floors_ascended":4,"floors_descended":1}"#,
        ])
        let pedometer = Pedometer(client: MotionClient(socketPath: daemon.path, timeout: 2))
        let collected = Collected<PedometerData>()
        let start = Date(timeIntervalSinceNow: -3600)
        pedometer.startUpdates(from: start) { data, _ in if let data { collected.add(data) } }
        defer { pedometer.stopUpdates() }
        let data = collected.wait(for: 2)
        #expect(data.map(\.numberOfSteps) == [100, 103])
        #expect(data.allSatisfy { $0.startDate == start })
        #expect(abs((data.last?.distance ?? 0) - 103 * 0.7055) < 1e-9)
        #expect(data.last?.currentCadence == 1.8 && data.first?.currentCadence == nil)
        // Floors since the updates began; none known before a pressure sensor reported them.
        #expect(data.first?.floorsAscended == nil && data.last?.floorsAscended == 4 && data.last?.floorsDescended == 1)
    }

    @Test func aPedometerQueryIsTheHistorysCountOverItsRange() throws {
        let daemon = try ScriptedDaemon(replies: [
            #"{"class":"HISTORY","id":$ID,"stream":"pedometer","from":1795564800,"to":1795568400,"steps":1042,"distance":735.131}"#
        ])
        var result: PedometerData?
        Pedometer(client: MotionClient(socketPath: daemon.path, timeout: 2))
            .queryPedometerData(from: Date(timeIntervalSince1970: 1_795_564_800), to: Date(timeIntervalSince1970: 1_795_568_400)) { data, _ in
                result = data
            }
        #expect(result?.numberOfSteps == 1042 && result?.distance == 735.131)
        #expect(result?.endDate == Date(timeIntervalSince1970: 1_795_568_400))
    }

    @Test func anActivityQueryGivesCoreMotionsActivities() throws {
        let daemon = try ScriptedDaemon(replies: [
            #"{"class":"HISTORY","id":$ID,"stream":"activity","from":1795564800,"to":1795568400,"activities":[{"activity":"stationary","confidence":"high","start":1795564000.5},{"activity":"walking","confidence":"medium","start":1795565000.25}]}"#
        ])
        var activities: [MotionActivity] = []
        MotionActivityManager(client: MotionClient(socketPath: daemon.path, timeout: 2))
            .queryActivityStarting(from: Date(timeIntervalSince1970: 1_795_564_800), to: Date(timeIntervalSince1970: 1_795_568_400)) { list, _ in
                activities = list ?? []
            }
        #expect(activities.map(\.stationary) == [true, false] && activities.map(\.walking) == [false, true])
        #expect(activities.last?.confidence == .medium && activities.last?.startDate == Date(timeIntervalSince1970: 1_795_565_000.25))
    }

    /// The relative altitude counts from the first reading of the updates; the absolute is the wire's.
    @Test func theRelativeAltitudeCountsFromTheFirstReading() throws {
        let daemon = try ScriptedDaemon(replies: [
            #"{"class":"WATCHING","id":$ID,"streams":[{"stream":"altitude","interval":1}]}"#,
            #"{"class":"ALTITUDE","timestamp":1000000000,"pressure":89.875,"altitude":999.96}"#,
            #"{"class":"ALTITUDE","timestamp":2000000000,"pressure":89.839,"altitude":1003.26,"precision":0.02}"#,
        ])
        let altimeter = Altimeter(client: MotionClient(socketPath: daemon.path, timeout: 2))
        let relative = Collected<AltitudeData>(), absolute = Collected<AbsoluteAltitudeData>()
        altimeter.startRelativeAltitudeUpdates { data, _ in if let data { relative.add(data) } }
        altimeter.startAbsoluteAltitudeUpdates { data, _ in if let data { absolute.add(data) } }
        defer {
            altimeter.stopRelativeAltitudeUpdates()
            altimeter.stopAbsoluteAltitudeUpdates()
        }
        let gained = relative.wait(for: 2)
        #expect(gained.map(\.relativeAltitude).map { ($0 * 100).rounded() / 100 } == [0, 3.3])
        #expect(gained.map(\.pressure) == [89.875, 89.839] && gained.last?.timestamp == 2)
        #expect(absolute.wait(for: 2).map(\.altitude) == [999.96, 1003.26])
    }
}
