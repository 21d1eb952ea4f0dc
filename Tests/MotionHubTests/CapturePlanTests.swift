import MotionCore
import MotionDevices
import MotionWire
import Testing

@testable import MotionHub

@Suite struct CapturePlanTests {
    func device(_ n: Int32, _ kinds: [SensorKind]) -> DeviceDescriptor {
        DeviceDescriptor(
            number: DeviceNumber(n), name: "d\(n)", syspath: "/sys/devices/d\(n)",
            sensors: kinds.map { SensorDescriptor(kind: $0, channels: []) })
    }

    var phone: [DeviceDescriptor] {
        [device(0, [.accelerometer]), device(1, [.gyroscope]), device(2, [.magnetometer]), device(3, [.proximity])]
    }

    @Test func nobodyWatchingOpensNothing() {
        #expect(CapturePlan(demands: [], devices: phone).captures.isEmpty)
    }

    @Test func motionOpensGyroscopeAccelerometerAndMagnetometerAtTheFastestInterval() {
        let plan = CapturePlan(
            demands: [.init(stream: .motion, interval: 0.1), .init(stream: .motion, interval: 0.01), .init(stream: .accelerometer, interval: 0.5)],
            devices: phone)
        #expect(plan.captures == [
            .init(device: DeviceNumber(0), kinds: [.accelerometer], rate: 100),
            .init(device: DeviceNumber(1), kinds: [.gyroscope], rate: 100),
            .init(device: DeviceNumber(2), kinds: [.magnetometer], rate: 100),
        ])
    }

    /// Event streams sample at the event rate and may wait the event latency; an accelerometer only
    /// they read may rest when still (proximity keeps its rate: a hand near the screen is no motion
    /// of the device).
    @Test func eventStreamsSampleAtTheEventRateAndMayWaitTheEventLatency() {
        let plan = CapturePlan(demands: [.init(stream: .proximity, interval: 5), .init(stream: .orientation, interval: 5)], devices: phone)
        #expect(plan.captures == [
            .init(device: DeviceNumber(0), kinds: [.accelerometer], rate: CapturePlan.eventRate, latency: CapturePlan.eventLatency, restsWhenStill: true),
            .init(device: DeviceNumber(3), kinds: [.proximity], rate: CapturePlan.eventRate, latency: CapturePlan.eventLatency),
        ])
    }

    /// A stream that samples (here `accelerometer` at 4 Hz, the same rate) keeps the accelerometer's
    /// rate at rest, as do the step detector's streams and the hinge's.
    @Test func anAccelerometerRestsOnlyWhenEventStreamsAloneReadIt() {
        for other in [CapturePlan.Demand(stream: .accelerometer, interval: 0.25), .init(stream: .pedometer, interval: 1), .init(stream: .gesture, interval: 1)] {
            let plan = CapturePlan(demands: [.init(stream: .orientation, interval: 5), other], devices: phone)
            #expect(plan.captures.first { $0.kinds == [.accelerometer] }?.restsWhenStill == false, "\(other.stream)")
        }
    }

    /// The step detector needs 25 Hz, not the event streams' 4 Hz, and its steps are seconds late
    /// anyway: the accelerometer runs at 25 Hz, read once a second, unless a more impatient stream
    /// shares it.
    @Test func pedometerAndActivityRunTheAccelerometerAtTheDetectorsRateInBatches() {
        let plan = CapturePlan(demands: [.init(stream: .pedometer, interval: 5), .init(stream: .activity, interval: 5)], devices: phone)
        #expect(plan.captures == [.init(device: DeviceNumber(0), kinds: [.accelerometer], rate: 25, latency: 1)])
        let withOrientation = CapturePlan(demands: [.init(stream: .pedometer, interval: 5), .init(stream: .orientation, interval: 5)], devices: phone)
        #expect(withOrientation.captures == [.init(device: DeviceNumber(0), kinds: [.accelerometer], rate: 25, latency: CapturePlan.eventLatency)])
    }

    /// With a pressure sensor the pedometer counts floors: the barometer runs beside it at the event
    /// rate (a floor is 3 m, climbed in 10 s and more), not at the steps' 25 Hz; `altitude` asks its own.
    @Test func thePedometerReadsAPressureSensorForFloorsAtTheEventRate() {
        let withBarometer = phone + [device(4, [.pressure])]
        let plan = CapturePlan(demands: [.init(stream: .pedometer, interval: 5)], devices: withBarometer)
        #expect(plan.captures == [
            .init(device: DeviceNumber(0), kinds: [.accelerometer], rate: 25, latency: 1),
            .init(device: DeviceNumber(4), kinds: [.pressure], rate: CapturePlan.eventRate, latency: 1),
        ])
        let altitude = CapturePlan(demands: [.init(stream: .pedometer, interval: 5), .init(stream: .altitude, interval: 0.05)], devices: withBarometer)
        #expect(altitude.captures.last == .init(device: DeviceNumber(4), kinds: [.pressure], rate: 20, latency: 0))
        #expect(CapturePlan(demands: [.init(stream: .pedometer, interval: 5)], devices: phone).captures.count == 1, "no barometer: steps alone")
    }

    /// A sensor batches only as far as its most impatient client lets it: one client that waits for
    /// nothing makes every scan go at once; an orientation watcher beside batching clients caps them
    /// at the event latency.
    @Test func aSensorWaitsAsLongAsItsMostImpatientClientLets() {
        let motion = { (latency: Double) in CapturePlan.Demand(stream: .motion, interval: 0.01, latency: latency) }
        #expect(CapturePlan(demands: [motion(0.5)], devices: phone).captures.map(\.latency) == [0.5, 0.5, 0.5])
        #expect(CapturePlan(demands: [motion(0.5), motion(0)], devices: phone).captures.map(\.latency) == [0, 0, 0])
        let withOrientation = CapturePlan(demands: [motion(0.5), .init(stream: .orientation, interval: 5)], devices: phone)
        #expect(withOrientation.captures.first { $0.kinds.contains(.accelerometer) }?.latency == CapturePlan.eventLatency)
        #expect(withOrientation.captures.first { $0.kinds.contains(.gyroscope) }?.latency == 0.5)
    }

    @Test func anIMUIsPreferredOverSeparateDevices() {
        let devices = [device(0, [.accelerometer]), device(1, [.gyroscope]), device(5, [.accelerometer, .gyroscope])]
        let plan = CapturePlan(demands: [.init(stream: .motion, interval: 0.02)], devices: devices)
        #expect(plan.captures == [.init(device: DeviceNumber(5), kinds: [.accelerometer, .gyroscope], rate: 50)])
    }

    @Test func aStreamNoDeviceCanGiveIsUnavailableAndOpensNothing() {
        let devices = [device(0, [.gyroscope])]
        let plan = CapturePlan(demands: [.init(stream: .motion, interval: 0.1), .init(stream: .proximity, interval: 1)], devices: devices)
        #expect(plan.unavailable == [.motion, .proximity])
        #expect(plan.captures.isEmpty)
        #expect(CapturePlan.reasons(for: plan.unavailable, devices: devices)
            == "motion needs a sensor this machine does not have: accelerometer; proximity needs a sensor this machine does not have: proximity")
    }

    /// A 2-in-1 (hwdb's `ACCEL_LOCATION=base` on the lower-numbered device): the screen's orientation
    /// and the motion come from the display's accelerometer.
    @Test func theDisplaysAccelerometerIsPreferredOverTheBases() {
        var base = device(0, [.accelerometer])
        base.location = .base
        let plan = CapturePlan(demands: [.init(stream: .orientation, interval: 1), .init(stream: .motion, interval: 0.1)], devices: [base, device(3, [.accelerometer])])
        #expect(plan.captures == [.init(device: DeviceNumber(3), kinds: [.accelerometer], rate: 10)])
    }

    @Test func motionRunsOnAnAccelerometerAloneAndUsesAMagnetometerWhereThereIsOne() {
        let plan = CapturePlan(demands: [.init(stream: .motion, interval: 0.05)], devices: [device(0, [.accelerometer]), device(1, [.magnetometer])])
        #expect(plan.unavailable.isEmpty)
        #expect(plan.captures == [.init(device: DeviceNumber(0), kinds: [.accelerometer], rate: 20), .init(device: DeviceNumber(1), kinds: [.magnetometer], rate: 20)])
    }

    /// Which streams a device's going ends: those it feeds with a sensor they need. A convertible's
    /// base carries an IMU (accelerometer and gyroscope): its accelerometer feeds the hinge alone, its
    /// gyroscope the gyroscope stream; `motion` needs only an accelerometer, the display's, and goes
    /// on without the gyroscope (docs/protocol.md: `motion` needs only an accelerometer).
    @Test func aDeviceFeedsTheStreamsItGivesASensorTheyNeed() {
        var base = device(1, [.accelerometer, .gyroscope])
        base.location = .base
        let display = device(0, [.accelerometer])
        let streams: [StreamKind] = [.orientation, .tilt, .hinge, .gyroscope, .motion]
        let plan = CapturePlan(demands: streams.map { .init(stream: $0, interval: 0.1) }, devices: [display, base])
        #expect(plan.baseAccelerometer == base.number)
        #expect(streams.filter { plan.feeds($0, from: base.number) } == [.hinge, .gyroscope])
        #expect(streams.filter { plan.feeds($0, from: display.number) } == [.orientation, .tilt, .hinge, .motion])
        #expect(!plan.feeds(.orientation, from: DeviceNumber(7)), "a device the plan does not read feeds nothing")
    }
}
