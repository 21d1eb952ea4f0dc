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

    /// The slowest rate taken is the slowest a motion chip runs at: ADXL345's, 0.10 Hz in its data
    /// sheet (BW_RATE's rate code 0000), 3200 Hz / 2^15, which Linux's adxl345 driver lists as
    /// `0.097000` (adxl345_core.c, `adxl345_odr_tbl`; `0.097656250` before 6.15). A device
    /// whose only rate was 0.01 Hz was captured at it, its first scan waited for 1,100 s: a stream
    /// that never delivers, inside the range. ADXL345's own list is whole.
    @Test func theSlowestRateIsTheSlowestAChipRunsAt() {
        #expect(PlausibleRate.hertz.lowerBound == 0.097)
        let adxl345 = "0.097000 0.195000 0.390000 0.781000 1.562000 3.125000 6.250000 12.500000 25 50 100 200 400 800 1600 3200\n"
        #expect(AttributeParser.availableRates(adxl345)?.rate(atLeast: 0) == 0.097)
        #expect(AttributeParser.availableRates("0.097656250 0.195312500\n") != nil)
        #expect(AttributeParser.availableRates("0.01\n") == nil && AttributeParser.availableRates("0.05 1\n") == nil)
    }

    /// A buffer that gives no scan is found out within seconds at any rate taken: ten periods, at
    /// most 10 s, beyond the time its batch takes (at 0.01 Hz it was 1,100 s, at 0.1 Hz 110 s).
    @Test(arguments: [PlausibleRate.hertz.lowerBound, 0.5, 1, 4, 100, 100_000])
    func aSilentBufferIsFoundWithinSeconds(rate: Double) {
        for remote in [false, true] {
            let policy = CapturePolicy(rate: rate, batch: 1, remote: remote)
            #expect(policy.firstDataTimeout <= 1 / rate + 10, "\(rate) Hz: \(policy.firstDataTimeout) s")
            #expect(policy.firstDataTimeout >= min(10 / rate, 10) + 1 / rate, "\(rate) Hz: waits for the first scan")
        }
        #expect(CapturePolicy(rate: PlausibleRate.hertz.lowerBound).firstDataTimeout < 21)
    }

    /// The ends of the range are rates: the slowest and fastest a device may say it runs at.
    @Test func theEndsOfThePlausibleRangeAreRates() {
        #expect(PlausibleRate.hertz.upperBound == 100_000)
        #expect(AttributeParser.availableRates("0.097 0.78 100000\n") == .list([0.097, 0.78, 100_000]))
        #expect(AttributeParser.availableRates("[0.097 0.097 100000]\n") == .range(minimum: 0.097, step: 0.097, maximum: 100_000))
    }

    /// Rates that did not come through the parser (a decoded listing) are brought into the range
    /// before any capture uses them.
    @Test func ratesThatBypassedTheParserAreClamped() {
        #expect(AvailableRates.list([1e-10]).rate(atLeast: 4) == 0.097)
        #expect(AvailableRates.list([]).rate(atLeast: .infinity) == 100_000)
        #expect(AvailableRates.range(minimum: 1e308, step: 1, maximum: 1e308).rate(atLeast: 4) == 100_000)
        #expect(AvailableRates.range(minimum: 1, step: .leastNonzeroMagnitude, maximum: 100).rate(atLeast: 50) <= 100)
    }

    /// The conversions a period or a timeout goes through: the nearest integer of the type, never a trap.
    @Test func conversionsToIntegersSaturate() {
        #expect(Int64(saturating: 1e20) == .max && Int64(saturating: -1e20) == .min && Int64(saturating: .nan) == 0)
        #expect(Int64(saturating: .infinity) == .max && Int64(saturating: 9.223372036854775e18) == 9_223_372_036_854_774_784)
        #expect(UInt32(saturating: -1) == 0 && UInt32(saturating: 1e10) == .max && Int32(saturating: 12.7) == 12)
        #expect(Int(saturating: 1e305) == .max)
    }

    /// A period is that of the rate brought into the range: 10.3 s at most (1 / 0.097 Hz), 10 µs at least.
    @Test(arguments: [
        (1e-10, 10_309_278_351), (-5, 10_309_278_351), (Double.nan, 10_309_278_351), (0, 10_309_278_351),
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
        #expect(policy.firstDataTimeout <= CapturePolicy.firstDataMargin + 1 / PlausibleRate.hertz.lowerBound)
        #expect(policy.readsPerPresenceCheck >= 1 && policy.readsPerPresenceCheck <= 10_000)
    }
}

extension Hardware.BadInput {
    /// `sampling_frequency_available` with rates no chip runs at (motiond trapped converting the
    /// period of 1e-10 Hz, or the batch of 1e308 Hz, and never read again at 1e-9 Hz): the attribute is
    /// a problem of the device, which is read at the rate asked for, polled and after a buffer that
    /// could not open (the fallback), its `sampling_frequency` set to that rate.
    @Test(arguments: ["1e-10", "1e-9", "0.01", "1e308", "[1e-10 1e-10 1e-10]"])
    func ratesNoChipRunsAtAreAProblemAndTheDeviceIsReadAtTheRateAskedFor(available: String) throws {
        let (listing, testbed) = try listing(accelerometer(["sampling_frequency_available": "\(available)\\n", "sampling_frequency": "10\\n"]))
        let device = try #require(listing.devices.first { $0.name == "acc" })
        #expect(device.availableRates == nil)
        #expect(device.problems.contains(.attributeMalformed(
            device: "iio:device0", attribute: "sampling_frequency_available", value: "\(available)\n",
            expected: "rates from 0.097 to 100000 Hz separated by spaces, or [min step max]")))
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
            device: "iio:device0", attribute: "sampling_frequency", value: "\(value)\n", expected: "a rate from 0.097 to 100000 Hz")))
    }
}
