import Foundation
import MotionCore
import MotionDevices
import Testing

/// When a polled accelerometer that only event streams read is polled fast or slowly: the readings
/// are of poses whose difference is known (a tilt of θ moves gravity's vector by 2 g sin(θ/2)).
@Suite struct AdaptivePollingTests {
    static let g = Units.standardGravity

    /// Specific force of a device tilted `degrees` about x from lying face up, m/s².
    static func tilted(_ degrees: Double) -> Vector3 {
        let θ = degrees * .pi / 180
        return Vector3(x: 0, y: g * sin(θ), z: g * cos(θ))
    }

    @Test func aDeviceLyingStillIsPolledAtTheRestRate() {
        var polling = AdaptivePolling(movingRate: 4)
        // A hand's tremor or a chip's noise: 0.5° back and forth (0.009 g), every 0.8 s for a minute.
        for i in 0..<75 { polling.update(Self.tilted(i % 2 == 0 ? 0 : 0.5), at: Int64(i) * 800_000_000) }
        #expect(!polling.isMoving && polling.rate == 1.25)
    }

    /// A quarter turn read mid-way (45°: 0.77 g from face up) is moving: polled at the streams' rate
    /// until the readings have held within 0.1 g for 1.5 s.
    @Test func aTurnIsPolledFastUntilItHasSettled() {
        var polling = AdaptivePolling(movingRate: 4)
        polling.update(Self.tilted(0), at: 0)
        polling.update(Self.tilted(45), at: 800_000_000)
        #expect(polling.isMoving && polling.rate == 4)
        polling.update(Self.tilted(90), at: 1_050_000_000)
        // Still from 1.05 s: fast until 1.5 s later.
        var t: Int64 = 1_050_000_000
        while t < 2_500_000_000 {
            t += 250_000_000
            polling.update(Self.tilted(90), at: t)
            #expect(polling.isMoving == (t < 2_550_000_000), "at \(t) ns")
        }
        polling.update(Self.tilted(90), at: 2_800_000_000)
        #expect(!polling.isMoving && polling.rate == 1.25)
    }

    /// 0.1 g is a tilt of 5.7°: 5° is not moving, 7° is.
    @Test func theThresholdIsATiltOfAboutSixDegrees() {
        var small = AdaptivePolling(movingRate: 4)
        small.update(Self.tilted(0), at: 0)
        small.update(Self.tilted(5), at: 1)
        var larger = AdaptivePolling(movingRate: 4)
        larger.update(Self.tilted(0), at: 0)
        larger.update(Self.tilted(7), at: 1)
        #expect(!small.isMoving && larger.isMoving)
    }
}
