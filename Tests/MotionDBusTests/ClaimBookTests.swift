import Testing

@testable import MotionDBus

/// Claims counted as iio-sensor-proxy's docs say (docs/dbus.md, "Rules"): the first claim starts a
/// sensor, the last release stops it, a sender that leaves releases all it held.
@Suite struct ClaimBookTests {
    @Test func theFirstClaimStartsAndTheLastReleaseStops() {
        var book = ClaimBook()
        let starts = [book.claim(.accelerometer, by: ":1.1"), book.claim(.accelerometer, by: ":1.2"), book.claim(.accelerometer, by: ":1.2")]
        #expect(starts == [true, false, false], "only the first claim starts; a second by the same sender is the same claim")
        let stops = [book.release(.accelerometer, by: ":1.1"), book.release(.accelerometer, by: ":1.2"), book.release(.accelerometer, by: ":1.2")]
        #expect(stops == [false, true, false], "only the last release stops; releasing what it does not hold changes nothing")
    }

    @Test func aSenderThatLeavesReleasesAllItHeldAndOnlyThat() {
        var book = ClaimBook()
        _ = book.claim(.accelerometer, by: ":1.1")
        _ = book.claim(.light, by: ":1.1")
        _ = book.claim(.light, by: ":1.2")
        let stopped = book.remove(":1.1")
        #expect(stopped == [.accelerometer], "the light is still claimed by :1.2")
        #expect(book.claimants(of: .light) == [":1.2"])
        let none = book.remove(":1.9")
        #expect(none.isEmpty)
    }
}
