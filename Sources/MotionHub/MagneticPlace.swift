import MotionCore
import MotionFusion
import MotionSystem

/// Where the machine is and the Earth's field there: the declination that turns `xTrueNorthZVertical`
/// (the one configured, else the World Magnetic Model's at the place for the date, else 0) and the
/// field's inclination that the fusion's disturbance detector expects. No I/O: its tests set the date.
struct MagneticPlace {
    /// The declination (degrees east of true north) and the place configured (`LiveSettings`, or a
    /// location service's place where they give none).
    var setting: (degrees: Double?, location: GeographicLocation?) = (nil, nil) {
        didSet { update() }
    }
    /// Magnetic declination in use, degrees east of true north.
    private(set) var declination = 0.0
    /// The World Magnetic Model's field at the configured place, as last computed (nil: no place).
    private(set) var field: GeomagneticField?
    /// The model's inclination at the place, rad: what the fusion's disturbance detector expects.
    var expectedDip: Double? { field.map { $0.inclination * .pi / 180 } }
    /// When `field` was computed, s since 1970.
    private var fieldTime = -Double.infinity
    /// How long a place's field stands before `refresh` computes it again, s: 30 days (the model's
    /// secular change is a few hundredths of a degree a month).
    static let fieldLifetime = 30 * 86_400.0
    /// Now, seconds since 1970 (the date the model is computed for).
    private let unixTime: () -> Double

    init(unixTime: @escaping () -> Double = { Double(Syscall.realtimeNanoseconds()) * 1e-9 }) {
        self.unixTime = unixTime
    }

    /// Computes the place's field again where it is older than `fieldLifetime`: a fusion that runs for
    /// months follows the field's drift (the hub asks at each periodic save).
    mutating func refresh() {
        if setting.location != nil, unixTime() - fieldTime >= Self.fieldLifetime { update() }
    }

    /// A fusion starts: the place's field is computed for today, so that a daemon that runs for months
    /// follows the field's drift.
    mutating func fusionStarts() {
        if setting.location != nil { update() }
    }

    private mutating func update() {
        fieldTime = unixTime()
        field = setting.location.map { place in
            WorldMagneticModel.wmm2025.field(
                latitude: place.latitude, longitude: place.longitude, altitude: place.altitude,
                decimalYear: WorldMagneticModel.decimalYear(unixTime: fieldTime))
        }
        declination = setting.degrees ?? field?.declination ?? 0
    }
}
