#if canImport(Glibc)
import Glibc
#endif
import MotionCore

/// A World Magnetic Model (NOAA NCEI / BGS): the Earth's main magnetic field, a degree-12
/// spherical-harmonic expansion with a linear secular variation, valid for five years from its epoch.
/// `wmm2025` is the model for 2025.0–2030.0.
///
/// Computed as the WMM technical report states it (Chulliat et al., "The US/UK World Magnetic Model
/// for 2025–2030", NOAA NCEI): the geodetic position on the WGS-84 ellipsoid is turned into geocentric
/// spherical coordinates, the coefficients are moved from the epoch to the date by their secular
/// variation, the field is summed with Schmidt semi-normalised associated Legendre functions, and
/// turned back from the geocentric to the geodetic north and down.
///
/// The east component carries the report's 1/cos φ′ (a division by zero at the geographic poles) as
/// P(n, m)/sin θ, which the Legendre recursion gives directly: the field is finite and continuous
/// at the poles too.
public struct WorldMagneticModel: Sendable {
    /// The model's name, as in its coefficient file (for example "WMM-2025").
    public let name: String
    /// The epoch, decimal year: the coefficients are those of this date.
    public let epoch: Double
    /// The dates the model is valid for, decimal years: five years from the epoch.
    public var validity: Range<Double> { epoch..<(epoch + 5) }

    /// The highest degree: the WMM's since WMM2000.
    static let degree = 12

    /// One line of a coefficient file: degree, order, the Gauss coefficients g and h (nT) and their
    /// yearly change ġ and ḣ (nT/year).
    struct Coefficient: Sendable {
        var n: Int, m: Int, g: Double, h: Double, gDot: Double, hDot: Double
        init(_ n: Int, _ m: Int, _ g: Double, _ h: Double, _ gDot: Double, _ hDot: Double) {
            (self.n, self.m, self.g, self.h, self.gDot, self.hDot) = (n, m, g, h, gDot, hDot)
        }
    }

    /// One (n, m) term: its coefficients and the Legendre recursion's constants, computed once:
    /// a = (2n − 1)/√(n² − m²) and b = √(((n − 1)² − m²)/(n² − m²)) for m < n, a = √((2n − 1)/2n) on
    /// the diagonal. Kept together so that a term is one read.
    struct Term: Sendable {
        var g = 0.0, h = 0.0, gDot = 0.0, hDot = 0.0, a = 0.0, b = 0.0
    }
    /// The terms (n, m), 0 ≤ m ≤ n ≤ 12, at n(n + 1)/2 + m; (0, 0) is unused.
    private var terms = InlineArray<91, Term>(repeating: Term())

    /// A model from the 90 lines of a degree-12 coefficient file, in the file's order.
    init(name: String, epoch: Double, coefficients: InlineArray<90, Coefficient>) {
        self.name = name
        self.epoch = epoch
        for i in coefficients.indices {
            let c = coefficients[i]
            let k = c.n * (c.n + 1) / 2 + c.m
            precondition(k == i + 1, "coefficient (\(c.n), \(c.m)) out of order")
            (terms[k].g, terms[k].h, terms[k].gDot, terms[k].hDot) = (c.g, c.h, c.gDot, c.hDot)
        }
        for n in 1...Self.degree {
            let nn = Double(n)
            for m in 0...n {
                let k = n * (n + 1) / 2 + m, mm = Double(m)
                if m == n {
                    terms[k].a = n == 1 ? 1 : ((2 * nn - 1) / (2 * nn)).squareRoot()
                } else {
                    terms[k].a = (2 * nn - 1) / (nn * nn - mm * mm).squareRoot()
                    terms[k].b = (((nn - 1) * (nn - 1) - mm * mm) / (nn * nn - mm * mm)).squareRoot()
                }
            }
        }
    }

    /// The WGS-84 ellipsoid: semi-major axis (km) and first eccentricity squared, f(2 − f).
    private static let semiMajorAxis = 6378.137
    private static let eccentricitySquared = (1 / 298.257223563) * (2 - 1 / 298.257223563)
    /// The model's reference radius, km: the mean radius of the Earth the coefficients refer to.
    private static let referenceRadius = 6371.2

    /// The main field at a place and date.
    ///
    /// - Parameters:
    ///   - latitude: geodetic latitude on WGS-84, degrees, north positive (−90...90).
    ///   - longitude: longitude, degrees, east positive (any value; −180...180 or 0...360 alike).
    ///   - altitude: height above the WGS-84 ellipsoid, metres (the model holds from −1 km to 850 km).
    ///     A height above mean sea level differs by the geoid's undulation (±100 m), a change of
    ///     2–3 nT in the field (it weakens by about 25 nT a kilometre): small beside the model's error.
    ///   - decimalYear: the date as a decimal year (2027.5 is mid-2027), see `decimalYear(unixTime:)`.
    ///     Outside `validity` the secular variation is extrapolated and `isWithinValidity` is false.
    /// - Returns: the field's components, intensities, angles and their yearly change.
    ///
    /// Allocates nothing: every table is inline storage on the stack or in the model.
    public func field(latitude: Double, longitude: Double, altitude: Double, decimalYear: Double) -> GeomagneticField {
        let degree = Self.degree
        // Read through a span: a subscript of the stored InlineArray copied all of it (4 KB) at each
        // read, 14 µs a call; the span costs one such copy a call.
        let terms = self.terms.span
        let dt = decimalYear - epoch
        let phi = latitude * .pi / 180, lambda = longitude * .pi / 180
        let heightKm = altitude / 1000

        // Geodetic → geocentric spherical (report eq. 7–8).
        let sinPhi = sin(phi), cosPhi = cos(phi)
        let rc = Self.semiMajorAxis / (1 - Self.eccentricitySquared * sinPhi * sinPhi).squareRoot()
        let p = (rc + heightKm) * cosPhi
        let z = (rc * (1 - Self.eccentricitySquared) + heightKm) * sinPhi
        let r = (p * p + z * z).squareRoot()
        // θ is the geocentric colatitude: cos θ = sin φ′ = z/r, sin θ = cos φ′ = p/r ≥ 0.
        let cosTheta = z / r, sinTheta = p / r

        // cos mλ and sin mλ by the angle-sum recurrence (two trigonometric calls, not 24).
        var cosM = InlineArray<13, Double>(repeating: 0), sinM = InlineArray<13, Double>(repeating: 0)
        let cosL = cos(lambda), sinL = sin(lambda)
        cosM[0] = 1
        for m in 1...degree {
            cosM[m] = cosM[m - 1] * cosL - sinM[m - 1] * sinL
            sinM[m] = sinM[m - 1] * cosL + cosM[m - 1] * sinL
        }

        // Legendre functions of cos θ, two rows (n − 1, n − 2) indexed by m. For m ≥ 1 the rows hold
        // S = P/sin θ (P(n, m) carries sin^m θ), which the same recursion gives from S(m, m); the
        // derivative dP/dθ is recurred directly. Neither divides by sin θ.
        var s1 = InlineArray<13, Double>(repeating: 0), s2 = InlineArray<13, Double>(repeating: 0)
        var d1 = InlineArray<13, Double>(repeating: 0), d2 = InlineArray<13, Double>(repeating: 0)
        s1[0] = 1  // P(0, 0); its derivative is 0

        var north = 0.0, east = 0.0, down = 0.0
        var northRate = 0.0, eastRate = 0.0, downRate = 0.0
        let ratio = Self.referenceRadius / r
        var radial = ratio * ratio  // (a/r)^(n + 2), n = 0

        for n in 1...degree {
            radial *= ratio
            let base = n * (n + 1) / 2
            let previousDiagonal = s1[n - 1]  // S(n − 1, n − 1), before this degree overwrites it
            var sumX = 0.0, sumY = 0.0, sumZ = 0.0, rateX = 0.0, rateY = 0.0, rateZ = 0.0
            for m in 0...n {
                let k = base + m
                let term = terms[k]
                let a = term.a, b = term.b
                var s: Double, d: Double
                if m == n {
                    // The diagonal: S(1, 1) = 1; S(n, n) = √((2n − 1)/2n) sin θ S(n − 1, n − 1);
                    // P(1, 0)'s row is the general one below (m = 0 < n).
                    s = n == 1 ? 1 : a * sinTheta * previousDiagonal
                    d = Double(n) * cosTheta * s  // d(c sinⁿθ)/dθ = n cos θ · c sinⁿ⁻¹θ
                } else {
                    s = a * cosTheta * s1[m] - b * s2[m]
                    // d/dθ of the same recursion, with P(n − 1, m) = sin θ S(n − 1, m) for m ≥ 1.
                    let previous = m == 0 ? s1[0] : sinTheta * s1[m]
                    d = a * (cosTheta * d1[m] - sinTheta * previous) - b * d2[m]
                }
                let pnm = m == 0 ? s : sinTheta * s
                let gt = term.g + dt * term.gDot, ht = term.h + dt * term.hDot
                let cosPart = gt * cosM[m] + ht * sinM[m], cosRate = term.gDot * cosM[m] + term.hDot * sinM[m]
                // X′ = −Σ (…) dP/dφ′ = Σ (…) dP/dθ (report eq. 10), Z′ = −Σ (n + 1)(…) P (eq. 12).
                sumX += cosPart * d
                sumZ += cosPart * pnm
                rateX += cosRate * d
                rateZ += cosRate * pnm
                if m > 0 {
                    // Y′ = Σ m (g sin mλ − h cos mλ) P / cos φ′ (eq. 11), cos φ′ = sin θ.
                    let mm = Double(m)
                    sumY += mm * (gt * sinM[m] - ht * cosM[m]) * s
                    rateY += mm * (term.gDot * sinM[m] - term.hDot * cosM[m]) * s
                }
                // Shift this degree's values into the rows the next degree reads.
                s2[m] = s1[m]
                d2[m] = d1[m]
                s1[m] = s
                d1[m] = d
            }
            let weightZ = -Double(n + 1) * radial
            north += radial * sumX
            east += radial * sumY
            down += weightZ * sumZ
            northRate += radial * rateX
            eastRate += radial * rateY
            downRate += weightZ * rateZ
        }

        // Geocentric → geodetic north and down (report eq. 17): a turn by ψ = φ′ − φ about east,
        // its cosine and sine by the angle difference (φ′ is known by its sine and cosine only).
        let cosPsi = sinTheta * cosPhi + cosTheta * sinPhi, sinPsi = cosTheta * cosPhi - sinTheta * sinPhi
        return GeomagneticField(
            north: north * cosPsi - down * sinPsi, east: east, down: north * sinPsi + down * cosPsi,
            northRate: northRate * cosPsi - downRate * sinPsi, eastRate: eastRate,
            downRate: northRate * sinPsi + downRate * cosPsi,
            isWithinValidity: validity.contains(decimalYear))
    }

    /// The decimal year of a Unix time (seconds since 1970-01-01 00:00 UTC, finite), as the WMM counts
    /// it: the year plus the fraction of that year (365 or 366 days) gone by. 2028-07-02 00:00 UTC is
    /// 2028.5 (183 days of a leap year's 366).
    public static func decimalYear(unixTime: Double) -> Double {
        let secondsPerDay = 86_400.0
        let dayCount = (unixTime / secondsPerDay).rounded(.down)
        let day = Int(dayCount), secondsIntoDay = unixTime - dayCount * secondsPerDay
        // A mean Gregorian year's guess, off by at most one either way.
        var year = 1970 + Int((dayCount / 365.2425).rounded(.down))
        while daysFromUnixEpoch(toJanuaryFirstOf: year + 1) <= day { year += 1 }
        while daysFromUnixEpoch(toJanuaryFirstOf: year) > day { year -= 1 }
        let start = daysFromUnixEpoch(toJanuaryFirstOf: year)
        let length = Double(daysFromUnixEpoch(toJanuaryFirstOf: year + 1) - start)
        return Double(year) + (Double(day - start) + secondsIntoDay / secondsPerDay) / length
    }

    /// Days from 1970-01-01 to January 1 of `year`, in the proleptic Gregorian calendar: 365 a year,
    /// and the leap days of the years before it since 1970 (every 4th year, but not every 100th
    /// unless every 400th).
    private static func daysFromUnixEpoch(toJanuaryFirstOf year: Int) -> Int {
        func leapDaysBefore(_ y: Int) -> Int {
            let last = y - 1  // the leap days of years 1...last, floored for years before 1
            return floorDivide(last, 4) - floorDivide(last, 100) + floorDivide(last, 400)
        }
        return 365 * (year - 1970) + leapDaysBefore(year) - leapDaysBefore(1970)
    }

    /// ⌊a / b⌋ for b > 0 (Swift's `/` truncates toward zero).
    private static func floorDivide(_ a: Int, _ b: Int) -> Int { a >= 0 ? a / b : -((-a + b - 1) / b) }
}

/// The Earth's main magnetic field at a place and date, by a `WorldMagneticModel`, in the local
/// geodetic frame North-East-Down. Intensities in nanotesla (nT), angles in degrees, yearly changes per
/// year; the `…InMicrotesla` and `…InRadians` accessors are for the daemon's magnetometer (µT) and
/// attitude (radians).
///
/// What it leaves out: the crust's field (on land typically a few hundred nT, up to thousands near
/// ore bodies), the ionosphere's and magnetosphere's (storms: hundreds of nT at high latitude), and
/// whatever the device sits next to. The WMM2025 report puts the model's global error (1σ) at about
/// 0.3–0.5° of declination away from the poles, 0.2° of inclination, 150 nT of total intensity.
public struct GeomagneticField: Sendable, Hashable {
    /// The northward component X, nT (geodetic north, along the ellipsoid's meridian).
    public var north: Double
    /// The eastward component Y, nT.
    public var east: Double
    /// The downward component Z, nT (positive in the northern hemisphere, where the field dips).
    public var down: Double
    /// The yearly change of `north`, nT/year (the model's secular variation).
    public var northRate: Double
    /// The yearly change of `east`, nT/year.
    public var eastRate: Double
    /// The yearly change of `down`, nT/year.
    public var downRate: Double
    /// Whether the date is inside the model's validity (for WMM2025, 2025.0 ≤ date < 2030.0). Outside
    /// it the secular variation is extrapolated: the error grows by tens of nT a year.
    public var isWithinValidity: Bool

    /// A field from its North-East-Down components and their yearly changes (nT, nT/year).
    public init(
        north: Double, east: Double, down: Double, northRate: Double, eastRate: Double, downRate: Double,
        isWithinValidity: Bool
    ) {
        (self.north, self.east, self.down) = (north, east, down)
        (self.northRate, self.eastRate, self.downRate) = (northRate, eastRate, downRate)
        self.isWithinValidity = isWithinValidity
    }

    /// The horizontal intensity H, nT.
    public var horizontalIntensity: Double { (north * north + east * east).squareRoot() }
    /// The total intensity F, nT.
    public var totalIntensity: Double { (north * north + east * east + down * down).squareRoot() }
    /// The declination D, degrees east of true north (−180...180): the angle from true to magnetic
    /// north, what the `xTrueNorthZVertical` frame turns the magnetic heading by.
    public var declination: Double { declinationInRadians * 180 / .pi }
    /// The inclination (dip) I, degrees below the horizontal (−90...90; negative where the field
    /// points up, in the southern magnetic hemisphere).
    public var inclination: Double { inclinationInRadians * 180 / .pi }
    /// The declination, radians east of true north.
    public var declinationInRadians: Double { atan2(east, north) }
    /// The inclination, radians below the horizontal.
    public var inclinationInRadians: Double { atan2(down, horizontalIntensity) }

    /// The yearly change of `horizontalIntensity`, nT/year.
    public var horizontalIntensityRate: Double {
        let h = horizontalIntensity
        return h > 0 ? (north * northRate + east * eastRate) / h : 0
    }
    /// The yearly change of `totalIntensity`, nT/year.
    public var totalIntensityRate: Double {
        (north * northRate + east * eastRate + down * downRate) / totalIntensity
    }
    /// The yearly change of `declination`, degrees/year (0 where H is 0 and D undefined).
    public var declinationRate: Double {
        let hh = north * north + east * east
        return hh > 0 ? (north * eastRate - east * northRate) / hh * 180 / .pi : 0
    }
    /// The yearly change of `inclination`, degrees/year.
    public var inclinationRate: Double {
        let f = totalIntensity
        return (horizontalIntensity * downRate - down * horizontalIntensityRate) / (f * f) * 180 / .pi
    }

    /// The field North-East-Down, µT: x north, y east, z down.
    public var northEastDownInMicrotesla: Vector3 { Vector3(x: north / 1000, y: east / 1000, z: down / 1000) }
    /// The total intensity, µT: the strength a calibrated magnetometer should read here.
    public var totalIntensityInMicrotesla: Double { totalIntensity / 1000 }
    /// The horizontal intensity, µT: what a compass has to work with.
    public var horizontalIntensityInMicrotesla: Double { horizontalIntensity / 1000 }

    /// How far a compass can be trusted where the horizontal field is weak, by NOAA's zones around
    /// the magnetic poles: below 2000 nT (the blackout zone) the declination is unreliable, a
    /// compass useless; below 6000 nT (the caution zone) it is to be used with care.
    public enum CompassZone: Sendable, Hashable, Comparable {
        /// H ≥ 6000 nT.
        case normal
        /// 2000 nT ≤ H < 6000 nT: NOAA's caution zone.
        case caution
        /// H < 2000 nT: NOAA's blackout zone.
        case blackout
    }

    /// The horizontal intensity below which NOAA's blackout zone begins, nT.
    public static let blackoutHorizontalIntensity = 2000.0
    /// The horizontal intensity below which NOAA's caution zone begins, nT.
    public static let cautionHorizontalIntensity = 6000.0

    /// Where this place is among NOAA's zones of a weak horizontal field.
    public var compassZone: CompassZone {
        let h = horizontalIntensity
        if h < Self.blackoutHorizontalIntensity { return .blackout }
        if h < Self.cautionHorizontalIntensity { return .caution }
        return .normal
    }
}
