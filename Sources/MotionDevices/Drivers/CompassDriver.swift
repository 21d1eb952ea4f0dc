import CLibIIO
import MotionCore

/// `in_rot_from_north_magnetic_tilt_comp*`: an HID sensor hub's own compass (`hid-sensor-magn-3d`,
/// HID usage "Compensated Magnetic North"), degrees clockwise from magnetic north, tilt-compensated by
/// the hub's firmware; the kernel's scale turns counts into degrees (hid-sensor-attributes.c maps the
/// usage to `HID_USAGE_SENSOR_UNITS_DEGREES` at scale 1). The channel iio-sensor-proxy's compass reads.
/// The hub's other headings (true north, uncompensated) are not read.
struct CompassDriver: SensorDriver {
    let kind = SensorKind.compass
    let channelType = IIO_ROT
    let sysfsName = "rot"
    let unitToSI = 1.0

    func channels(among channels: [any ChannelInfo]) -> [any ChannelInfo] {
        channels.compactMap { channel -> (any ChannelInfo)? in
            guard channel.type == IIO_ROT else { return nil }
            if channel.modifier == IIO_MOD_NORTH_MAGN_TILT_COMP { return channel }
            // libiio 0.24's local backend takes the shorter modifier name that prefixes the longer:
            // `in_rot_from_north_magnetic_tilt_comp_raw` becomes channel `rot_from_north_magnetic`
            // with an attribute `tilt_comp_raw` (an uncompensated heading has `raw` itself).
            if channel.modifier == IIO_MOD_NORTH_MAGN, channel.filename(ofAttribute: "tilt_comp_raw") != nil {
                return TiltCompensatedChannel(misparsed: channel)
            }
            return nil
        }
    }
}

/// The tilt-compensated heading channel that libiio misparsed (see `CompassDriver`), under its own name.
private struct TiltCompensatedChannel: ChannelInfo {
    let misparsed: any ChannelInfo
    var id: String { "rot_from_north_magnetic_tilt_comp" }
    var type: iio_chan_type { IIO_ROT }
    var modifier: iio_modifier { IIO_MOD_NORTH_MAGN_TILT_COMP }
    var isOutput: Bool { false }
    // libiio did not see its scan element under this name: it is read polled.
    var isScanElement: Bool { false }
    var scanIndex: Int { -1 }

    /// The channel's own attribute (`tilt_comp_raw`), else the type's shared one (`in_rot_scale`).
    func filename(ofAttribute name: String) -> String? {
        misparsed.filename(ofAttribute: "tilt_comp_" + name) ?? misparsed.filename(ofAttribute: name).flatMap {
            $0 == "in_rot_from_north_magnetic_\(name)" ? nil : $0
        }
    }
}
