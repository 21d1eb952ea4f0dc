import MotionCore
import MotionWire

/// Where the machine is, for `xTrueNorthZVertical`'s declination: the settings' declination or
/// location, else a location service's place, which is asked for only while someone watches motion in
/// that frame and the settings give neither. Confined to the hub's event loop.
final class LocationNeed {
    /// The live settings as configured.
    var settings = LiveSettings.defaults
    /// Where a location service says the machine is: stands in for a location the settings do not give.
    private var place: GeographicLocation?
    /// Whether a place is needed (`follow`), and who is told when that changes.
    private var needed = false
    private var observer: ((Bool) -> Void)?

    /// The declination (degrees east of true north) and the place that the fusion follows: the
    /// settings', the service's place standing in for a location they do not give.
    var declinationSetting: (degrees: Double?, location: GeographicLocation?) { (settings.declination, settings.location ?? place) }

    /// Takes a location service's place; returns whether it is the one the fusion follows (the
    /// settings give no location).
    func update(_ place: GeographicLocation) -> Bool {
        self.place = place
        return settings.location == nil
    }

    /// Tells `observer` (nil: nobody) whether a place is needed, now and at each change.
    func observe(_ observer: ((Bool) -> Void)?) {
        self.observer = observer
        observer?(needed)
    }

    /// Follows whether a client watches motion in `xTrueNorthZVertical` (`watchesTrueNorth`): a place
    /// is needed while one does and the settings give neither a declination nor a location.
    func follow(watchesTrueNorth: Bool) {
        let needs = settings.declination == nil && settings.location == nil && watchesTrueNorth
        guard needs != needed else { return }
        needed = needs
        observer?(needs)
    }
}
