import Foundation
import MotionCore
import Synchronization

/// CoreMotion's `CMAltitudeData`: the altitude change since the updates began, and the pressure.
public struct AltitudeData: Sendable, Hashable {
    /// When the pressure was read, seconds of CLOCK_MONOTONIC (CoreMotion's `timestamp`: since boot).
    public var timestamp: Double
    /// Metres gained since the first reading of these updates (negative: lower).
    public var relativeAltitude: Double
    /// kPa.
    public var pressure: Double
}

/// CoreMotion's `CMAbsoluteAltitudeData`: the altitude in the standard atmosphere for motiond's
/// `sea_level_pressure`, and how precise the reading is.
public struct AbsoluteAltitudeData: Sendable, Hashable {
    /// Seconds of CLOCK_MONOTONIC.
    public var timestamp: Double
    /// Metres above sea level (geopotential), as good as the configured sea-level pressure.
    public var altitude: Double
    /// One standard deviation of the readings' noise, m; `nil` until the third reading.
    public var precision: Double?
}

/// CoreMotion's `CMAltimeter`, on motiond's `altitude` stream (docs/protocol.md, `ALTITUDE`): the
/// handler runs on `queue` if given, else on the subscription's thread.
///
///     let altimeter = Altimeter()
///     altimeter.startRelativeAltitudeUpdates { data, error in
///         if let data { print(data.relativeAltitude) }
///     }
public final class Altimeter: Sendable {
    /// The daemon this altimeter talks to.
    public let client: MotionClient
    /// Seconds between updates (default 1, about CoreMotion's); takes effect at the next start.
    public let updateInterval: Double
    private let relative = UpdateSlot()
    private let absolute = UpdateSlot()

    /// An altimeter on the daemon `client` reaches, updated every `updateInterval` seconds.
    public init(client: MotionClient = MotionClient(), updateInterval: Double = 1) {
        self.client = client
        self.updateInterval = updateInterval
    }

    /// Whether the daemon has a pressure sensor.
    public var isRelativeAltitudeAvailable: Bool { (try? client.devices())?.contains { $0.kinds.contains(.pressure) } ?? false }
    /// Whether the daemon has a pressure sensor (the absolute altitude needs no more).
    public var isAbsoluteAltitudeAvailable: Bool { isRelativeAltitudeAvailable }

    /// Starts updates of the altitude gained since this call's first reading.
    public func startRelativeAltitudeUpdates(
        to queue: OperationQueue? = nil, withHandler handler: @escaping @Sendable (AltitudeData?, (any Error)?) -> Void
    ) {
        let start = Mutex<Double?>(nil)
        relative.replace {
            client.watch([.altitude], interval: updateInterval) { result in
                switch result {
                case .success(.altitude(let m)):
                    let first = start.withLock { first in
                        if first == nil { first = m.altitude }
                        return first!
                    }
                    let data = AltitudeData(timestamp: Double(m.timestamp) * 1e-9, relativeAltitude: m.altitude - first, pressure: m.pressure)
                    UpdateSlot.run(on: queue) { handler(data, nil) }
                case .success: break
                case .failure(let error): UpdateSlot.run(on: queue) { handler(nil, error) }
                }
            }
        }
    }

    /// Stops the relative altitude updates.
    public func stopRelativeAltitudeUpdates() { relative.stop() }

    /// Starts updates of the altitude above sea level.
    public func startAbsoluteAltitudeUpdates(
        to queue: OperationQueue? = nil, withHandler handler: @escaping @Sendable (AbsoluteAltitudeData?, (any Error)?) -> Void
    ) {
        absolute.replace {
            client.watch([.altitude], interval: updateInterval) { result in
                switch result {
                case .success(.altitude(let m)):
                    let data = AbsoluteAltitudeData(timestamp: Double(m.timestamp) * 1e-9, altitude: m.altitude, precision: m.precision)
                    UpdateSlot.run(on: queue) { handler(data, nil) }
                case .success: break
                case .failure(let error): UpdateSlot.run(on: queue) { handler(nil, error) }
                }
            }
        }
    }

    /// Stops the absolute altitude updates.
    public func stopAbsoluteAltitudeUpdates() { absolute.stop() }
}
