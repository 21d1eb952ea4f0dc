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
public struct AltitudeEstimator: Sendable {
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

    /// An altimeter with `parameters`.
    public init(parameters: Parameters = Parameters()) {
        self.parameters = parameters
    }

    /// The altitude of `pressure` (kPa) read at `timestamp` (ns); `nil` for a pressure of 0 or less
    /// (or not finite), which no air has. A timestamp that goes back starts the noise over; a reading
    /// more than `noiseTimeConstant` after the last (the sensor stopped meanwhile) is not compared
    /// with it: hours of weather are no noise.
    public mutating func update(pressure: Double, timestamp: Int64) -> Reading? {
        guard let altitude = StandardAtmosphere.altitude(pressure: pressure, seaLevelPressure: parameters.seaLevelPressure) else {
            return nil
        }
        if let previous, timestamp > previous.timestamp, Double(timestamp - previous.timestamp) * 1e-9 <= parameters.noiseTimeConstant {
            let difference = altitude - previous.altitude
            let dt = Double(timestamp - previous.timestamp) * 1e-9
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
