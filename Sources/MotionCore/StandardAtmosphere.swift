#if canImport(Glibc)
import Glibc
#endif

/// The International Standard Atmosphere (ICAO Doc 7488, which is the U.S. Standard Atmosphere 1976
/// up to 20 km): the altitude at which the air has a given pressure.
///
/// Below the tropopause (11 km) the temperature falls linearly with height, and the hydrostatic
/// equation gives h = T₀/L · (1 − (p/p₀)^(R·L/(g₀·M))); above it the air is isothermal and the pressure
/// falls exponentially. Altitudes are geopotential, as the standard's tables give them.
public enum StandardAtmosphere {
    /// The standard atmosphere's pressure at sea level, kPa.
    public static let seaLevelPressure = 101.325
    /// Sea-level temperature, K.
    static let seaLevelTemperature = 288.15
    /// How fast the temperature falls with height below the tropopause, K/m.
    static let lapseRate = 0.0065
    /// The tropopause's altitude, m; above it the temperature stays at 216.65 K.
    static let tropopause = 11_000.0
    /// The universal gas constant as the 1976 standard gives it (J/(mol·K)), the molar mass of dry air
    /// (kg/mol) and standard gravity (m/s²).
    static let gasConstant = 8.31432, molarMass = 0.0289644, gravity = 9.80665
    /// R·L/(g₀·M): 0.190263.
    static let exponent = gasConstant * lapseRate / (gravity * molarMass)
    /// R·T/(g₀·M) in the isothermal layer, m: the height over which the pressure falls by e (6,341.6 m).
    static let scaleHeight = gasConstant * (seaLevelTemperature - lapseRate * tropopause) / (gravity * molarMass)

    /// The altitude (m, geopotential) at which the standard atmosphere, shifted to `seaLevelPressure`
    /// (kPa) at sea level, has `pressure` (kPa). `nil` for a pressure that is not above 0, or a sea-level
    /// pressure that is not.
    public static func altitude(pressure: Double, seaLevelPressure: Double = seaLevelPressure) -> Double? {
        guard pressure > 0, seaLevelPressure > 0, pressure.isFinite, seaLevelPressure.isFinite else { return nil }
        let tropopausePressure = seaLevelPressure * pow(1 - lapseRate * tropopause / seaLevelTemperature, 1 / exponent)
        if pressure >= tropopausePressure {
            return seaLevelTemperature / lapseRate * (1 - pow(pressure / seaLevelPressure, exponent))
        }
        return tropopause + scaleHeight * log(tropopausePressure / pressure)
    }
}
