import Foundation
import MotionCore
import TestSupport
import Testing

@testable import MotionDevices

/// Rates no chip runs at, as a device (or another machine's iiod) may list them: refused where they
/// are parsed, and every conversion of a rate or a period to an integer saturates rather than traps.
/// The plausible range is `PlausibleRate.hertz`: IIO's `sampling_frequency` is in Hz
/// (Documentation/ABI/testing/sysfs-bus-iio), and motion chips run from 0.1 Hz (ADXL345's slowest
/// data rate) to 32 kHz (ICM-42688's fastest).
@Suite struct ImplausibleRateTests {
    @Test(arguments: [
        "1e-10\n", "1e-9\n", "0.001\n", "1e308\n", "200000\n", "12.5 25 1e308\n", "1e-10 12.5\n",
        "[1e-10 1 100]\n", "[1 1 1e308]\n", "[1e-10 1e-10 1e-10]\n",
    ])
    func ratesNoChipRunsAtAreRefusedWhereTheyAreParsed(text: String) {
        #expect(AttributeParser.availableRates(text) == nil)
    }

    /// The ends of the range are rates: the slowest and fastest a device may say it runs at.
    @Test func theEndsOfThePlausibleRangeAreRates() {
        #expect(PlausibleRate.hertz == 0.01...100_000)
        #expect(AttributeParser.availableRates("0.01 0.78 100000\n") == .list([0.01, 0.78, 100_000]))
        #expect(AttributeParser.availableRates("[0.01 0.01 100000]\n") == .range(minimum: 0.01, step: 0.01, maximum: 100_000))
    }

    /// Rates that did not come through the parser (a decoded listing) are brought into the range
    /// before any capture uses them.
    @Test func ratesThatBypassedTheParserAreClamped() {
        #expect(AvailableRates.list([1e-10]).rate(atLeast: 4) == 0.01)
        #expect(AvailableRates.list([]).rate(atLeast: .infinity) == 100_000)
        #expect(AvailableRates.range(minimum: 1e308, step: 1, maximum: 1e308).rate(atLeast: 4) == 100_000)
        #expect(AvailableRates.range(minimum: 1, step: 5e-324, maximum: 100).rate(atLeast: 50) <= 100)
    }

    /// The conversions a period or a timeout goes through: the nearest integer of the type, never a trap.
    @Test func conversionsToIntegersSaturate() {
        #expect(Int64(saturating: 1e20) == .max && Int64(saturating: -1e20) == .min && Int64(saturating: .nan) == 0)
        #expect(Int64(saturating: .infinity) == .max && Int64(saturating: 9.223372036854775e18) == 9_223_372_036_854_774_784)
        #expect(UInt32(saturating: -1) == 0 && UInt32(saturating: 1e10) == .max && Int32(saturating: 12.7) == 12)
        #expect(Int(saturating: 1e305) == .max)
    }

    /// A period is that of the rate brought into the range: 100 s at most, 10 µs at least.
    @Test(arguments: [
        (1e-10, 100_000_000_000), (-5, 100_000_000_000), (Double.nan, 100_000_000_000), (0, 100_000_000_000),
        (1e308, 10_000), (Double.infinity, 10_000), (4, 250_000_000),
    ] as [(Double, Int64)])
    func periodsComeFromPlausibleRates(rate: Double, nanoseconds: Int64) {
        #expect(PlausibleRate.period(rate) == nanoseconds)
    }

    /// A policy made for an implausible rate has a bounded first-data timeout and presence check.
    @Test(arguments: [1e-10, 1e308, Double.nan, -1])
    func aPolicyForAnImplausibleRateIsBounded(rate: Double) {
        let policy = CapturePolicy(rate: rate, batch: 1)
        #expect(PlausibleRate.hertz.contains(policy.rate))
        #expect(policy.firstDataTimeout <= 10 / PlausibleRate.hertz.lowerBound + 1 / PlausibleRate.hertz.lowerBound)
        #expect(policy.readsPerPresenceCheck >= 1 && policy.readsPerPresenceCheck <= 10_000)
    }
}

extension Hardware.BadInput {
    /// `sampling_frequency_available` with rates no chip runs at (motiond trapped converting the
    /// period of 1e-10 Hz, or the batch of 1e308 Hz, and never read again at 1e-9 Hz): the attribute is
    /// a problem of the device, which is read at the rate asked for, polled and after a buffer that
    /// could not open (the fallback), its `sampling_frequency` set to that rate.
    @Test(arguments: ["1e-10", "1e-9", "1e308", "[1e-10 1e-10 1e-10]"])
    func ratesNoChipRunsAtAreAProblemAndTheDeviceIsReadAtTheRateAskedFor(available: String) throws {
        let (listing, testbed) = try listing(accelerometer(["sampling_frequency_available": "\(available)\\n", "sampling_frequency": "10\\n"]))
        let device = try #require(listing.devices.first { $0.name == "acc" })
        #expect(device.availableRates == nil)
        #expect(device.problems.contains(.attributeMalformed(
            device: "iio:device0", attribute: "sampling_frequency_available", value: "\(available)\n",
            expected: "rates from 0.01 to 100000 Hz separated by spaces, or [min step max]")))
        for mode in [CaptureMode.polled, .buffered] {
            let capture = try SensorCapture(device: device, kinds: [.accelerometer], rate: 20, mode: mode, firstDataTimeout: 0.2)
            #expect(capture.rate == 20)
            let events = EventLog()
            capture.start(handler: events.append)
            defer { capture.stop() }
            try events.waitUntil { $0.samples.count >= 3 }
            #expect(try testbed.attribute("iio:device0", "sampling_frequency") == "20\n")
        }
    }

    /// The current `sampling_frequency`, when it is no rate a chip runs at, is left out and said.
    @Test(arguments: ["-5", "0", "1e308", "1e-10", "nan", "inf", "fast"])
    func aCurrentRateNoChipRunsAtIsLeftOutAndSaid(value: String) throws {
        let (listing, _) = try listing(accelerometer(["sampling_frequency": "\(value)\\n"]))
        let device = try #require(listing.devices.first { $0.name == "acc" })
        #expect(device.samplingFrequency == nil)
        #expect(device.problems.contains(.attributeMalformed(
            device: "iio:device0", attribute: "sampling_frequency", value: "\(value)\n", expected: "a rate from 0.01 to 100000 Hz")))
    }
}
