#if canImport(Glibc)
import Glibc
#endif
import MotionCore

/// The altimeter: a pressure reading (kPa) to an altitude in the standard atmosphere (m), and the
/// reading's own noise as an altitude (its precision, m).
///
/// The noise is measured from successive readings' differences, not from their spread about a mean:
/// a steady climb (a lift, a stair) moves every reading but hardly their differences. For white noise
/// of standard deviation σ, a difference has variance 2σ², so σ = √(mean square difference / 2).
///
/// A glitch is not an altitude. A reading outside `plausiblePressures` (the widest range the common
/// barometers measure) is refused: one raw count of an lps22hb (2.4e-5 kPa) read as 98 km and 37
/// floors. A reading that moves faster than `maximumVerticalSpeed` from the last one taken is refused
/// too, unless `glitchRun` readings in a row agree with it (the sensor then really is elsewhere: the
/// noise starts over from there).
public struct AltitudeEstimator: Sendable {
    /// The pressures a reading may have, kPa: the union of the operating ranges in the data sheets of
    /// the barometers phones and laptops carry: ST LPS22HB/LPS25HB and LPS33HW 26–126 kPa, Bosch
    /// BMP280 30–110, BMP388 30–125, Infineon DPS310 30–120. Everest's summit is 33 kPa.
    public static let plausiblePressures = 26.0...126.0
    /// The fastest climb or fall taken as real between two readings, m/s: more than the fastest lifts
    /// (about 20 m/s) and a skydiver's free fall (about 55 m/s).
    public static let maximumVerticalSpeed = 100.0
    /// What a reading may move beyond that speed allows, m: a slammed door's pressure step is a few metres.
    static let verticalSlack = 20.0
    /// Readings in a row that must agree with a jump before it is taken as real.
    static let glitchRun = 3

    /// What the altimeter is set to.
    public struct Parameters: Sendable, Hashable {
        /// The pressure at sea level, kPa: the standard 101.325, or the local QNH for an altitude
        /// above sea level rather than one in the standard atmosphere.
        public var seaLevelPressure: Double
        /// Over how long the noise is averaged, s (exponential weighting).
        public var noiseTimeConstant: Double

        /// Parameters with the standard atmosphere's sea-level pressure and a 10 s noise window.
        public init(seaLevelPressure: Double = StandardAtmosphere.seaLevelPressure, noiseTimeConstant: Double = 10) {
            self.seaLevelPressure = seaLevelPressure
            self.noiseTimeConstant = noiseTimeConstant
        }
    }

    /// One reading as an altitude.
    public struct Reading: Sendable, Hashable {
        /// The pressure read, kPa.
        public var pressure: Double
        /// Its altitude in the standard atmosphere, m (geopotential).
        public var altitude: Double
        /// One standard deviation of the readings' noise, m; `nil` until two differences were seen.
        public var precision: Double?
    }

    /// What the altimeter is set to; a new sea-level pressure applies from the next reading (the
    /// jump it makes is not counted as noise).
    public var parameters: Parameters {
        didSet { previous = nil }
    }
    private var previous: (altitude: Double, timestamp: Int64)?
    private var meanSquareDifference = 0.0
    private var differences = 0
    /// Readings refused in a row for jumping away from `previous`.
    private var jumps = 0

    /// An altimeter with `parameters`.
    public init(parameters: Parameters = Parameters()) {
        self.parameters = parameters
    }

    /// The altitude of `pressure` (kPa) read at `timestamp` (ns); `nil` for a glitch: a pressure outside
    /// `plausiblePressures` or not finite, or a jump faster than `maximumVerticalSpeed` not yet
    /// confirmed. A timestamp that goes back starts the noise over; a reading more than
    /// `noiseTimeConstant` after the last (the sensor stopped meanwhile) is not compared with it:
    /// hours of weather are no noise.
    public mutating func update(pressure: Double, timestamp: Int64) -> Reading? {
        guard Self.plausiblePressures.contains(pressure),
            let altitude = StandardAtmosphere.altitude(pressure: pressure, seaLevelPressure: parameters.seaLevelPressure), altitude.isFinite
        else { return nil }
        // Saturating (`TimestampArithmetic`): a barometer's clock may jump by any Int64; a jump is a gap.
        if let previous, timestamp > previous.timestamp {
            let allowed = Self.maximumVerticalSpeed * timestamp.seconds(since: previous.timestamp) + Self.verticalSlack
            if abs(altitude - previous.altitude) > allowed {
                jumps += 1
                guard jumps >= Self.glitchRun else { return nil }
                // Confirmed: the noise is measured from here.
                self.previous = nil
                meanSquareDifference = 0
                differences = 0
            }
        }
        jumps = 0
        // An estimate that went non-finite (it cannot from finite readings, but it must never stay so)
        // starts over.
        if !meanSquareDifference.isFinite {
            meanSquareDifference = 0
            differences = 0
        }
        if let previous, timestamp > previous.timestamp, timestamp.seconds(since: previous.timestamp) <= parameters.noiseTimeConstant {
            let difference = altitude - previous.altitude
            let dt = timestamp.seconds(since: previous.timestamp)
            let weight = differences == 0 ? 1 : 1 - exp(-dt / parameters.noiseTimeConstant)
            meanSquareDifference += weight * (difference * difference - meanSquareDifference)
            differences += 1
        } else if let previous, timestamp <= previous.timestamp {
            meanSquareDifference = 0
            differences = 0
        }
        previous = (altitude, timestamp)
        let precision = differences >= 2 ? (meanSquareDifference / 2).squareRoot() : nil
        return Reading(pressure: pressure, altitude: altitude, precision: precision)
    }
}
