#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import HubTestKit
import MotionCore
import MotionDevices
import MotionWire
import MotionSystem
import NIOCore
import NIOEmbedded
import NIOPosix
import Synchronization
import Testing

@testable import MotionHub

/// `ChipWatch`'s wake rules (docs/protocol.md 1.11: "read only when it says something changed …, and
/// at the interval the client asked for … while a walk goes on; between walks … a heartbeat read every
/// 30 s"; "Where the driver has no events, or they are refused, the chip is read at that interval"),
/// on NIO's testing loop with a chip the test scripts: its count, its events, its failures.
@Suite struct ChipWatchTests {
    /// A chip whose count the test sets; it records each read's time and each change of an event's enable.
    final class TestChip: ChipDevice, @unchecked Sendable {
        // @unchecked: touched on the testing loop, read by the test between its turns.
        let kinds: Set<SensorKind>
        let eventsProblem: DeviceError?
        let loop: NIOAsyncTestingEventLoop
        var steps = 100.0
        var failure: DeviceError?
        var reads: [Int64] = []
        var switches: [(kind: SensorKind, enabled: Bool)] = []
        var closed = false

        init(kinds: Set<SensorKind>, eventsProblem: DeviceError? = nil, loop: NIOAsyncTestingEventLoop) {
            (self.kinds, self.eventsProblem, self.loop) = (kinds, eventsProblem, loop)
        }

        func takeEventDescriptor() -> OwnedDescriptor? { nil }

        func read(into samples: inout [SensorSample]) throws(DeviceError) {
            let t = Int64(loop.now.uptimeNanoseconds)
            reads.append(t)
            if let failure { throw failure }
            if kinds.contains(.stepCounter) {
                samples.append(SensorSample(kind: .stepCounter, device: DeviceNumber(0), timestamp: t, vector: Vector3(x: steps, y: 0, z: 0)))
            }
        }

        func setEvents(of kind: SensorKind, enabled: Bool) throws(DeviceError) { switches.append((kind, enabled)) }

        func event(_ record: IIOEventRecord, device: DeviceNumber, at t: Int64) -> ChipEvent? { nil }

        func close() { closed = true }
    }

    /// What a watch told its handler, in order.
    final class Told: Sendable {
        let events = Mutex<[SensorEvent]>([])
        func withLock<T>(_ body: (inout [SensorEvent]) -> T) -> T { events.withLock { body(&$0) } }
    }

    /// A watch of `chip` every `interval` s (heartbeat 30 s), started on `loop`, and what it told.
    func start(_ chip: TestChip, interval: Double = 5, exists: Bool = true, on loop: NIOAsyncTestingEventLoop) async throws -> (ChipWatch, Told) {
        let told = Told()
        let watch = ChipWatch(
            device: DeviceNumber(0), kinds: chip.kinds, interval: interval, heartbeat: 30, eventLoop: loop, delivery: .injected, opensOffLoop: false,
            deviceExists: { exists }, open: { chip })
        try await loop.executeInContext { watch.start { event in told.withLock { $0.append(event) } } }
        await loop.run()
        return (watch, told)
    }

    /// Seconds since `start` of each read.
    func readTimes(_ chip: TestChip, since start: NIODeadline) -> [Double] {
        chip.reads.map { Double($0 - Int64(start.uptimeNanoseconds)) / 1e9 }
    }

    /// The counts of the step samples told.
    func counts(_ told: Told) -> [Double] {
        told.withLock { $0.compactMap { if case .sample(let s) = $0, s.kind == .stepCounter { s.vector.x } else { nil } } }
    }

    /// At rest the chip is read at opening (the first state) and then only at the heartbeat; its
    /// events stay on, and the watch says it is woken by events.
    @Test func aRestingChipIsReadAtOpeningThenOnlyAtTheHeartbeat() async throws {
        let loop = NIOAsyncTestingEventLoop()
        let chip = TestChip(kinds: [.stepCounter], loop: loop)
        let opened = loop.now
        let (watch, told) = try await start(chip, on: loop)
        #expect(readTimes(chip, since: opened) == [0])
        #expect(counts(told) == [100])
        await loop.advanceTime(by: .seconds(29))
        #expect(chip.reads.count == 1, "nothing between heartbeats")
        await loop.advanceTime(by: .seconds(1))
        #expect(readTimes(chip, since: opened) == [0, 30])
        #expect(chip.switches.isEmpty && watch.readingMode == .events && watch.stepEventsOn)
        try await loop.executeInContext { watch.stop() }
        await loop.shutdownGracefully()
    }

    /// A step event reads at once; the count moved, so the step events go off and the chip is read every
    /// 5 s while it moves; the first read that finds no new steps turns them on again, and the next
    /// read is a heartbeat later.
    @Test func aWalkTurnsTheStepEventsOffAndIsReadAtTheIntervalUntilTheCountStops() async throws {
        let loop = NIOAsyncTestingEventLoop()
        let chip = TestChip(kinds: [.stepCounter], loop: loop)
        let opened = loop.now
        let (watch, told) = try await start(chip, on: loop)
        await loop.advanceTime(by: .seconds(2))
        chip.steps = 120
        try await loop.executeInContext { watch.take([ChipEvent(kind: .stepCounter, sample: nil)]) }
        #expect(chip.switches.map(\.enabled) == [false] && !watch.stepEventsOn)
        chip.steps = 140
        await loop.advanceTime(by: .seconds(5))  // 7 s: still moving
        await loop.advanceTime(by: .seconds(5))  // 12 s: no new steps
        #expect(chip.switches.map(\.enabled) == [false, true] && watch.stepEventsOn)
        await loop.advanceTime(by: .seconds(29))
        #expect(readTimes(chip, since: opened) == [0, 2, 7, 12], "at rest again: nothing before the heartbeat")
        await loop.advanceTime(by: .seconds(1))
        #expect(readTimes(chip, since: opened) == [0, 2, 7, 12, 42])
        #expect(counts(told) == [100, 120, 140, 140, 140])
        #expect(chip.switches.allSatisfy { $0.kind == .stepCounter })
        try await loop.executeInContext { watch.stop() }
        await loop.shutdownGracefully()
    }

    /// An interrupt storm (step events every millisecond while the count holds, as a chip whose
    /// events keep coming would send; its activity events are never turned off at all) reads the chip
    /// at most once a second (`eventReadSpacing`: the 5 s interval, at most 1 s), not once per event:
    /// 5,000 events from 1 s to 5.999 s make 6 reads after the opening's, at 1, 2 … 6 s (review: each
    /// event read the chip on the loop, back to back: 5,000 reads).
    @Test func anEventStormReadsTheChipAtMostOnceASecond() async throws {
        let loop = NIOAsyncTestingEventLoop()
        let chip = TestChip(kinds: [.stepCounter], loop: loop)
        let opened = loop.now
        let (watch, _) = try await start(chip, on: loop)
        await loop.advanceTime(by: .seconds(1))
        for _ in 0..<5_000 {
            try await loop.executeInContext { watch.take([ChipEvent(kind: .stepCounter, sample: nil)]) }
            await loop.advanceTime(by: .milliseconds(1))
        }
        #expect(readTimes(chip, since: opened) == [0, 1, 2, 3, 4, 5, 6], "\(readTimes(chip, since: opened))")
        try await loop.executeInContext { watch.stop() }
        await loop.shutdownGracefully()
    }

    /// Without events the chip is read at the interval, walking or not, its events never touched; the
    /// watch says it is polled and why (STATUS' `rest_note`, and the journal's capture mode change).
    @Test func withoutEventsTheChipIsReadAtTheIntervalAlways() async throws {
        let loop = NIOAsyncTestingEventLoop()
        let refused = DeviceError.eventsRefused(device: "iio:device0", operation: "open", errno: ErrnoValue.busy)
        let chip = TestChip(kinds: [.stepCounter], eventsProblem: refused, loop: loop)
        let opened = loop.now
        let (watch, told) = try await start(chip, on: loop)
        if case .captureModeChanged(.polled, let reason) = told.withLock({ $0.first }) {
            #expect(reason == refused, "the journal says why")
        } else {
            Issue.record("no mode change told first: \(told.withLock { $0 })")
        }
        for _ in 0..<3 { await loop.advanceTime(by: .seconds(5)) }
        chip.steps = 130
        for _ in 0..<2 { await loop.advanceTime(by: .seconds(5)) }
        #expect(readTimes(chip, since: opened) == [0, 5, 10, 15, 20, 25])
        #expect(chip.switches.isEmpty)
        #expect(watch.readingMode == .polled && watch.readingNote == refused)
        try await loop.executeInContext { watch.stop() }
        await loop.shutdownGracefully()
    }

    /// An event that carries its value (significant motion) is a sample at once, with no read; one of a
    /// function the watch was not opened for is left alone.
    @Test func anEventThatCarriesItsValueIsASampleAtOnce() async throws {
        let loop = NIOAsyncTestingEventLoop()
        let chip = TestChip(kinds: [.significantMotion], loop: loop)
        let (watch, told) = try await start(chip, on: loop)
        let fired = SensorSample(kind: .significantMotion, device: DeviceNumber(0), timestamp: 7, vector: Vector3(x: 1, y: 0, z: 0))
        told.withLock { $0.removeAll() }
        try await loop.executeInContext {
            watch.take([ChipEvent(kind: .significantMotion, sample: fired), ChipEvent(kind: .onBody, sample: fired)])
        }
        let events = told.withLock { $0 }
        #expect(events.count == 2)
        if case .sample(let sample) = events.first { #expect(sample == fired) } else { Issue.record("no sample: \(events)") }
        if case .readComplete = events.last {} else { Issue.record("no end of read: \(events)") }
        #expect(chip.reads.count == 1, "the opening's read only")
        try await loop.executeInContext { watch.stop() }
        await loop.shutdownGracefully()
    }

    /// Failing reads are told and retried at the interval; the tenth in a row ends the watch
    /// (`CapturePolicy.failuresThatEnd`), closing the chip; a device gone ends it at the first.
    @Test func failingReadsAreToldAndEndTheWatchAtTheTenthOrAtOnceWhenTheDeviceIsGone() async throws {
        let loop = NIOAsyncTestingEventLoop()
        let unreadable = DeviceError.attributeUnreadable(device: "iio:device0", attribute: "in_steps_input", errno: ErrnoValue.invalidArgument)
        let chip = TestChip(kinds: [.stepCounter], loop: loop)
        chip.failure = unreadable
        let (watch, told) = try await start(chip, on: loop)
        for _ in 0..<12 { await loop.advanceTime(by: .seconds(5)) }
        let events = told.withLock { $0 }
        #expect(events.count { if case .readFailed = $0 { true } else { false } } == CapturePolicy.failuresThatEnd - 1)
        if case .ended(let error) = events.last { #expect(error == unreadable) } else { Issue.record("not ended: \(events)") }
        #expect(chip.reads.count == CapturePolicy.failuresThatEnd && chip.closed, "no read after the end")

        let gone = TestChip(kinds: [.stepCounter], loop: loop)
        gone.failure = unreadable
        let (goneWatch, goneTold) = try await start(gone, exists: false, on: loop)
        if case .ended(let error) = goneTold.withLock({ $0.last }) { #expect(error.meansDeviceGone) } else { Issue.record("not ended") }
        #expect(gone.closed)
        // The hub holds its captures until it stops them, as the test does.
        try await loop.executeInContext { [watch, goneWatch] in
            watch.stop()
            goneWatch.stop()
        }
        await loop.shutdownGracefully()
    }

    /// Stopped, the watch puts the chip back and reads no more.
    @Test func aStoppedWatchClosesTheChipAndReadsNoMore() async throws {
        let loop = NIOAsyncTestingEventLoop()
        let chip = TestChip(kinds: [.stepCounter], loop: loop)
        let (watch, _) = try await start(chip, on: loop)
        try await loop.executeInContext { watch.stop() }
        await loop.advanceTime(by: .seconds(120))
        #expect(chip.closed && chip.reads.count == 1)
        await loop.shutdownGracefully()
    }

    /// A chip whose event descriptor is a pipe's read end: the test writes `iio_event_data` records
    /// into the other end, as the kernel would.
    final class PipeChip: ChipDevice, @unchecked Sendable {
        // @unchecked: `descriptor` is taken once, on the loop; the rest is immutable.
        let kinds: Set<SensorKind> = [.stepCounter]
        let eventsProblem: DeviceError? = nil
        private let descriptor = Mutex<Int32?>(nil)
        init(reading descriptor: Int32) { self.descriptor.withLock { $0 = descriptor } }
        func takeEventDescriptor() -> OwnedDescriptor? {
            descriptor.withLock { fd in defer { fd = nil }; return fd.map(OwnedDescriptor.init) }
        }
        func read(into samples: inout [SensorSample]) throws(DeviceError) {
            samples.append(SensorSample(kind: .stepCounter, device: DeviceNumber(0), timestamp: Syscall.monotonicNanoseconds(), vector: Vector3(x: 5, y: 0, z: 0)))
        }
        func setEvents(of kind: SensorKind, enabled: Bool) throws(DeviceError) {}
        /// The bma400's step event code: `IIO_UNMOD_EVENT_CODE(IIO_STEPS, 0, IIO_EV_TYPE_CHANGE, IIO_EV_DIR_NONE)`
        /// (include/linux/iio/events.h:53, types.h: IIO_STEPS 20, CHANGE 5, NONE 3; Linux 6.12).
        static let stepEvent = UInt64(5) << 56 | UInt64(3) << 48 | UInt64(20) << 32
        func event(_ record: IIOEventRecord, device: DeviceNumber, at t: Int64) -> ChipEvent? {
            record.id == Self.stepEvent ? ChipEvent(kind: .stepCounter, sample: nil) : nil
        }
        func close() {}
    }

    /// On a real loop, an event record written to the chip's descriptor reads the chip at once (the
    /// heartbeat is an hour away); the descriptor's end (its writer closed) leaves the chip read at its
    /// interval, the watch then polled, saying why.
    @Test func anEventThroughTheDescriptorReadsAtOnceAndItsEndFallsBackToTheInterval() throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        defer { try? group.syncShutdownGracefully() }
        let loop = group.next()
        var ends: [Int32] = [-1, -1]
        #expect(pipe(&ends) == 0)
        let chip = PipeChip(reading: ends[0])
        let reads = Mutex<(count: Int, waiting: [(Int, EventLoopPromise<Void>)])>((0, []))
        /// Settles once the watch has told `n` reads.
        func read(_ n: Int) -> EventLoopFuture<Void> {
            let promise = loop.makePromise(of: Void.self)
            let done = reads.withLock { state in
                if state.count < n { state.waiting.append((n, promise)) }
                return state.count >= n
            }
            if done { promise.succeed() }
            return promise.futureResult
        }
        let watch = ChipWatch(
            device: DeviceNumber(0), kinds: chip.kinds, interval: 0.05, heartbeat: 3600, eventLoop: loop, opensOffLoop: true, deviceExists: { true },
            open: { chip })
        watch.start { event in
            guard case .readComplete = event else { return }
            let due = reads.withLock { state in
                state.count += 1
                let due = state.waiting.filter { $0.0 <= state.count }.map(\.1)
                state.waiting.removeAll { $0.0 <= state.count }
                return due
            }
            for promise in due { promise.succeed() }
        }
        try read(1).wait()
        #expect(try loop.submit { watch.readingMode }.wait() == .events)
        var record = (PipeChip.stepEvent, Int64(0))
        #expect(withUnsafeBytes(of: &record) { write(ends[1], $0.baseAddress, IIOEventRecord.size) } == IIOEventRecord.size)
        try read(2).wait()
        close(ends[1])
        try read(3).wait()
        #expect(try loop.submit { watch.readingMode }.wait() == .polled)
        #expect(watch.readingNote != nil)
        watch.stop()
    }

    /// Through the hub: a pedometer client (interval 5 s) on the bma400 gets the chip's count at
    /// opening, a step event reads the chip at once (the steps reach the client then, not 25 times a
    /// second), the walk is read every 5 s, and at rest nothing is read until the heartbeat
    /// (`HardwareSource.motionEventHeartbeat`'s default, 30 s; the scripted source's watch uses it).
    @Test func aPedometerClientOnTheBma400IsWokenByTheChipsEventsAndItsInterval() async throws {
        let scripted = try await ScriptedHub(devices: [Machines.bma400])
        let wrist = Machines.bma400.number
        scripted.source.readings.withLock { $0[.stepCounter] = Vector3(x: 1000, y: 0, z: 0) }
        let (client, id) = try await scripted.connect()
        try await scripted.send(line: #"{"class":"WATCH","streams":["pedometer"],"interval":5}"#, from: id)
        let chip = try #require(scripted.source.chip(wrist))
        let opened = scripted.loop.now
        #expect(client.pedometers.last?.steps == 0, "the count when watching starts")
        await scripted.run(for: .seconds(2))
        scripted.source.readings.withLock { $0[.stepCounter] = Vector3(x: 1012, y: 0, z: 0) }
        let source = scripted.source
        #expect(try await scripted.onLoop { _ in source.push(.stepCounter, at: 0, to: wrist) })
        #expect(client.pedometers.last?.steps == 12)
        #expect(!chip.eventsEnabled(.stepCounter), "a walk under way wakes the daemon at the interval, not per step")
        scripted.source.readings.withLock { $0[.stepCounter] = Vector3(x: 1020, y: 0, z: 0) }
        await scripted.run(for: .seconds(10), step: .milliseconds(500))
        #expect(client.pedometers.last?.steps == 20 && chip.eventsEnabled(.stepCounter))
        await scripted.run(for: .seconds(60), step: .seconds(1))
        let seconds = chip.reads.map { Double($0 - Int64(opened.uptimeNanoseconds)) / 1e9 }
        #expect(seconds == [0, 2, 7, 12, 42, 72], "\(seconds)")
        try await scripted.shutDown()
    }
}
