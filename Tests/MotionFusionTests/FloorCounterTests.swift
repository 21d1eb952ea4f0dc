import MotionCore
import Testing

@testable import MotionFusion

/// Floors as CoreMotion counts them: about 3 m each, on foot only.
@Suite struct FloorCounterTests {
    /// Altitudes every 0.25 s (a pressure sensor read 4 times a second) with noise of 0.1 m, the
    /// walker's state with each.
    static func count(seconds: Double, altitude: (Double) -> Double, walking: (Double) -> Bool) -> (ascended: Int, descended: Int) {
        var counter = FloorCounter()
        var noise = SeededNoise(seed: 3)
        for i in 0..<Int(seconds * 4) {
            let t = Double(i) / 4
            _ = counter.update(altitude: altitude(t) + 0.1 * noise.next(), timestamp: Int64(t * 1e9), isWalking: walking(t))
        }
        return (counter.ascended, counter.descended)
    }

    /// Four flights of stairs up (13 m at 0.2 m/s, a brisk climb), the walk confirmed 4 s after it
    /// began and a 5 s stop on a landing halfway; then down two floors (6.5 m).
    @Test func stairsClimbedAndDescendedOnFootAreCounted() {
        let up = Self.count(seconds: 90, altitude: { t in
            let climbing = t < 30 ? t : t < 35 ? 30 : t - 5
            return min(13, 0.2 * climbing)
        }, walking: { t in t > 4 && (t < 30 || t > 35) && t < 75 })
        #expect(up == (4, 0))
        let down = Self.count(seconds: 60, altitude: { t in max(-6.5, -0.2 * t) }, walking: { t in t > 4 && t < 45 })
        #expect(down == (0, 2))
    }

    /// The same 13 m in a lift, nobody walking, and a day's weather (1 hPa an hour, 8 m over the
    /// hour) with the walker walking on the flat now and then: no floor.
    @Test func aLiftAndTheWeatherAreNoFloors() {
        #expect(Self.count(seconds: 60, altitude: { t in min(13, 1.0 * t) }, walking: { _ in false }) == (0, 0))
        let weather = Self.count(seconds: 3600, altitude: { t in 8 * t / 3600 }, walking: { t in t.truncatingRemainder(dividingBy: 600) < 60 })
        #expect(weather == (0, 0))
    }

    /// Issue 40, defect 5: a non-finite altitude made the low-pass NaN, and no floor was counted again
    /// until a restart. It is ignored; the stairs after it count.
    @Test func aNonFiniteAltitudeIsIgnoredAndCountingGoesOn() {
        var counter = FloorCounter()
        _ = counter.update(altitude: 0, timestamp: 0, isWalking: true)
        _ = counter.update(altitude: .nan, timestamp: 250_000_000, isWalking: true)
        _ = counter.update(altitude: -.infinity, timestamp: 500_000_000, isWalking: true)
        for i in 3..<120 { _ = counter.update(altitude: 0.2 * Double(i) / 4, timestamp: Int64(i) * 250_000_000, isWalking: true) }
        #expect(counter.ascended == 1, "5.9 m climbed on foot")
    }

    /// Issue 60 review, item 2: a barometer stamp read twice (the same timestamp) just after a walk
    /// stopped was taken for a clock gone back: the grace was dropped and the reference reset, so a
    /// flight of stairs (3.5 m at 0.2 m/s, the walk ending as the walker reaches the landing) was not
    /// counted. A repeated stamp changes nothing; only a stamp before the last starts afresh.
    @Test func aRepeatedStampAfterAWalkKeepsTheGrace() {
        var counter = FloorCounter()
        for i in 0..<120 {
            let t = Double(i) / 4
            let timestamp = Int64(i) * 250_000_000
            let stamps = i == 61 ? [timestamp, timestamp] : [timestamp]
            for stamp in stamps { _ = counter.update(altitude: min(3.5, 0.2 * t), timestamp: stamp, isWalking: t < 15) }
        }
        #expect(counter.ascended == 1, "3.5 m climbed on foot, the last 0.5 m low-passed within the 10 s grace")
    }
}
