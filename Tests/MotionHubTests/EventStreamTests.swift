import HubTestKit
import MotionCore
import MotionDevices
import MotionWire
import NIOCore
import Synchronization
import Testing

@testable import MotionHub

/// Proximity is an event stream (design.md, "The socket protocol"): a client gets the state when it
/// starts watching and then each change of near/far, not a periodic sample. The phone fixture's
/// stk3310 (near at 100 counts, `in_proximity_nearlevel`), read at the event rate.
@Suite struct ProximityTests {
    @Test func aWatcherGetsNearOrFarNowThenEachChange() async throws {
        let proximity = DeviceNumber(3)
        let scripted = try await ScriptedHub(devices: Machines.phone)
        scripted.source.counts.withLock { $0 = Machines.phoneCounts }
        let (client, id) = try await scripted.connect()
        try await scripted.send(line: #"{"class":"WATCH","streams":["proximity"]}"#, from: id)
        #expect(await scripted.advance { !client.proximities.isEmpty } != nil)
        #expect(client.proximities.map(\.near) == [false], "50 counts: far")
        await scripted.run(for: .seconds(1))
        #expect(client.proximities.count == 1, "no change, nothing sent")
        scripted.source.counts.withLock { $0[proximity] = [.proximity: Vector3(x: 150, y: 0, z: 0)] }
        #expect(await scripted.advance { client.proximities.count == 2 } != nil)
        scripted.source.counts.withLock { $0[proximity] = [.proximity: Vector3(x: 20, y: 0, z: 0)] }
        #expect(await scripted.advance { client.proximities.count == 3 } != nil)
        #expect(client.proximities.map(\.near) == [false, true, false])
        try await scripted.shutDown()
    }
}

/// `xTrueNorthZVertical` needs the magnetic declination: the hub asks for the machine's place (a
/// location service, GeoClue) only while a client watches motion in that frame and the settings give
/// neither a declination nor a location (`LocationNeed`).
@Suite struct LocationNeedTests {
    @Test func thePlaceIsNeededOnlyWhileTrueNorthIsWatchedWithoutADeclination() async throws {
        let scripted = try await ScriptedHub(devices: [Machines.tabletAccelerometer, Machines.tabletMagnetometer])
        let needs = Mutex<[Bool]>([])
        try await scripted.onLoop { hub in hub.observeLocationNeed { need in needs.withLock { $0.append(need) } } }
        let (_, id) = try await scripted.connect()
        try await scripted.send(line: #"{"class":"WATCH","streams":["motion"],"frame":"xMagneticNorthZVertical"}"#, from: id)
        try await scripted.send(line: #"{"class":"WATCH","streams":["motion"],"frame":"xTrueNorthZVertical"}"#, from: id)
        try await scripted.send(line: #"{"class":"WATCH","enable":false}"#, from: id)
        #expect(needs.withLock { $0 } == [false, true, false], "asked when watching starts, given up when it stops")
        var declared = LiveSettings.defaults
        declared.declination = 2
        try await scripted.onLoop { [declared] hub in hub.apply(declared) }
        try await scripted.send(line: #"{"class":"WATCH","streams":["motion"],"frame":"xTrueNorthZVertical"}"#, from: id)
        #expect(needs.withLock { $0 } == [false, true, false], "a declination set: no place needed")
        try await scripted.shutDown()
    }
}
