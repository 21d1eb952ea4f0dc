import CLibIIO
import MotionCore

/// `in_steps_input`: an accelerometer's own step counter (bma400, bmi270, bmi260), a count read from
/// sysfs by `ChipFunctions`, never a scan element (the drivers give it `scan_index` -1), turned on by
/// `in_steps_en`.
struct StepCounterDriver: SensorDriver {
    let kind = SensorKind.stepCounter
    let channelType = IIO_STEPS
    let sysfsName = "steps"
    let unitToSI = 1.0

    /// The steps channel, where the driver gives its count (`_input`).
    func channels(among channels: [any ChannelInfo]) -> [any ChannelInfo] {
        channels.filter { $0.type == IIO_STEPS && $0.filename(ofAttribute: "input") != nil }
    }
}
