import MotionWire

/// Each kind of message a recording client received, as its value, first first.
extension ScriptedHub.Client {
    package var motions: [MotionMessage] { values { if case .motion(let m) = $0 { m } else { nil } } }
    package var accelerometers: [AccelerometerMessage] { values { if case .accelerometer(let m) = $0 { m } else { nil } } }
    package var gyroscopes: [GyroscopeMessage] { values { if case .gyroscope(let m) = $0 { m } else { nil } } }
    package var orientations: [OrientationMessage] { values { if case .orientation(let m) = $0 { m } else { nil } } }
    package var tilts: [TiltMessage] { values { if case .tilt(let m) = $0 { m } else { nil } } }
    package var hinges: [HingeMessage] { values { if case .hinge(let m) = $0 { m } else { nil } } }
    package var lights: [LightMessage] { values { if case .light(let m) = $0 { m } else { nil } } }
    package var proximities: [ProximityMessage] { values { if case .proximity(let m) = $0 { m } else { nil } } }
    package var altitudes: [AltitudeMessage] { values { if case .altitude(let m) = $0 { m } else { nil } } }
    package var pedometers: [PedometerMessage] { values { if case .pedometer(let m) = $0 { m } else { nil } } }
    package var activities: [ActivityMessage] { values { if case .activity(let m) = $0 { m } else { nil } } }
    package var gestures: [GestureMessage] { values { if case .gesture(let m) = $0 { m } else { nil } } }
    package var watchings: [Watching] { values { if case .watching(let m) = $0 { m } else { nil } } }
    package var snapshots: [Snapshot] { values { if case .snapshot(let m) = $0 { m } else { nil } } }
    package var statuses: [StatusReply] { values { if case .status(let m) = $0 { m } else { nil } } }
    package var deviceReplies: [DevicesReply] { values { if case .devices(let m) = $0 { m } else { nil } } }
    package var histories: [HistoryReply] { values { if case .history(let m) = $0 { m } else { nil } } }
}
