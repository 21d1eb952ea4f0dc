import Foundation
import MotionCore
import Synchronization

/// Fused device motion: attitude, gravity and user acceleration (g), rotation rate (rad/s, bias
/// removed), calibrated magnetic field (µT) — CoreMotion's `CMDeviceMotion`.
public typealias DeviceMotion = MotionMessage
/// Raw acceleration, g, CoreMotion's sign — `CMAccelerometerData`.
public typealias AccelerometerData = AccelerometerMessage
/// Raw rotation rate, rad/s — `CMGyroData`.
public typealias GyroData = GyroscopeMessage
/// Raw magnetic field, µT — `CMMagnetometerData`.
public typealias MagnetometerData = MagnetometerMessage
/// Near or far, and the raw reading.
public typealias ProximityData = ProximityMessage

/// CoreMotion's `CMMotionManager`, on motiond: set an update interval, start updates with a
/// handler (called on the given operation queue, or on a thread of the manager's), or start them
/// without one and read the latest value from the property; stop them when done.
///
///     let manager = MotionManager()
///     manager.deviceMotionUpdateInterval = 1.0 / 50
///     manager.startDeviceMotionUpdates(using: .xMagneticNorthZVertical, to: .main) { motion, error in
///         guard let motion else { return }
///         print(motion.attitude.yaw)
///     }
public final class MotionManager: Sendable {
    /// The daemon this manager talks to.
    public let client: MotionClient
    private let state = Mutex(State())

    private struct State {
        var intervals: [StreamKind: Double] = [:]
        var subscriptions: [StreamKind: Subscription] = [:]
        var latest: [StreamKind: MotionClient.Update] = [:]
        var kinds: Set<SensorKind>?
    }

    /// A manager for the daemon `client` reaches (by default the usual socket; see `MotionClient.init`).
    public init(client: MotionClient = MotionClient()) { self.client = client }

    // MARK: Availability

    /// Whether the machine has the sensor kinds (asked of the daemon once, then remembered).
    private func has(_ needed: Set<SensorKind>) -> Bool {
        if let kinds = state.withLock({ $0.kinds }) { return needed.isSubset(of: kinds) }
        guard let devices = try? client.devices() else { return false }
        let kinds = Set(devices.flatMap(\.kinds))
        state.withLock { $0.kinds = kinds }
        return needed.isSubset(of: kinds)
    }

    /// Whether fused device motion can be had (a gyroscope and an accelerometer).
    public var isDeviceMotionAvailable: Bool { has([.gyroscope, .accelerometer]) }
    /// Whether there is an accelerometer.
    public var isAccelerometerAvailable: Bool { has([.accelerometer]) }
    /// Whether there is a gyroscope.
    public var isGyroAvailable: Bool { has([.gyroscope]) }
    /// Whether there is a magnetometer.
    public var isMagnetometerAvailable: Bool { has([.magnetometer]) }
    /// Whether there is a proximity sensor.
    public var isProximityAvailable: Bool { has([.proximity]) }

    // MARK: Intervals, seconds (default 0.1)

    private func interval(_ stream: StreamKind) -> Double { state.withLock { $0.intervals[stream] ?? 0.1 } }
    private func setInterval(_ stream: StreamKind, _ value: Double) { state.withLock { $0.intervals[stream] = value } }

    /// Seconds between device-motion updates; takes effect at the next start.
    public var deviceMotionUpdateInterval: Double {
        get { interval(.motion) }
        set { setInterval(.motion, newValue) }
    }
    /// Seconds between accelerometer updates.
    public var accelerometerUpdateInterval: Double {
        get { interval(.accelerometer) }
        set { setInterval(.accelerometer, newValue) }
    }
    /// Seconds between gyroscope updates.
    public var gyroUpdateInterval: Double {
        get { interval(.gyroscope) }
        set { setInterval(.gyroscope, newValue) }
    }
    /// Seconds between magnetometer updates.
    public var magnetometerUpdateInterval: Double {
        get { interval(.magnetometer) }
        set { setInterval(.magnetometer, newValue) }
    }

    // MARK: Latest values (pull)

    /// The latest device motion since `startDeviceMotionUpdates`, `nil` before the first or when stopped.
    public var deviceMotion: DeviceMotion? {
        if case .motion(let m) = state.withLock({ $0.latest[.motion] }) { m } else { nil }
    }
    /// The latest accelerometer reading since `startAccelerometerUpdates`.
    public var accelerometerData: AccelerometerData? {
        if case .accelerometer(let m) = state.withLock({ $0.latest[.accelerometer] }) { m } else { nil }
    }
    /// The latest gyroscope reading since `startGyroUpdates`.
    public var gyroData: GyroData? {
        if case .gyroscope(let m) = state.withLock({ $0.latest[.gyroscope] }) { m } else { nil }
    }
    /// The latest magnetometer reading since `startMagnetometerUpdates`.
    public var magnetometerData: MagnetometerData? {
        if case .magnetometer(let m) = state.withLock({ $0.latest[.magnetometer] }) { m } else { nil }
    }
    /// The latest proximity state since `startProximityUpdates`.
    public var proximityData: ProximityData? {
        if case .proximity(let m) = state.withLock({ $0.latest[.proximity] }) { m } else { nil }
    }

    /// Whether device-motion updates run.
    public var isDeviceMotionActive: Bool { state.withLock { $0.subscriptions[.motion] != nil } }

    // MARK: Start and stop (push)

    /// Starts device-motion updates every `deviceMotionUpdateInterval`, attitude in `frame`.
    /// `handler` (if any) runs on `queue` (if given) for each update, or once with the error that ended them.
    public func startDeviceMotionUpdates(
        using frame: AttitudeReferenceFrame = .xArbitraryZVertical, to queue: OperationQueue? = nil,
        withHandler handler: (@Sendable (DeviceMotion?, (any Error)?) -> Void)? = nil
    ) {
        start(.motion, frame: frame, queue: queue) { update, error in
            if case .motion(let m) = update { handler?(m, nil) } else if let error { handler?(nil, error) }
        }
    }

    /// Stops device-motion updates.
    public func stopDeviceMotionUpdates() { stop(.motion) }

    /// Starts accelerometer updates every `accelerometerUpdateInterval`.
    public func startAccelerometerUpdates(to queue: OperationQueue? = nil, withHandler handler: (@Sendable (AccelerometerData?, (any Error)?) -> Void)? = nil) {
        start(.accelerometer, queue: queue) { update, error in
            if case .accelerometer(let m) = update { handler?(m, nil) } else if let error { handler?(nil, error) }
        }
    }

    /// Stops accelerometer updates.
    public func stopAccelerometerUpdates() { stop(.accelerometer) }

    /// Starts gyroscope updates every `gyroUpdateInterval`.
    public func startGyroUpdates(to queue: OperationQueue? = nil, withHandler handler: (@Sendable (GyroData?, (any Error)?) -> Void)? = nil) {
        start(.gyroscope, queue: queue) { update, error in
            if case .gyroscope(let m) = update { handler?(m, nil) } else if let error { handler?(nil, error) }
        }
    }

    /// Stops gyroscope updates.
    public func stopGyroUpdates() { stop(.gyroscope) }

    /// Starts magnetometer updates every `magnetometerUpdateInterval`.
    public func startMagnetometerUpdates(to queue: OperationQueue? = nil, withHandler handler: (@Sendable (MagnetometerData?, (any Error)?) -> Void)? = nil) {
        start(.magnetometer, queue: queue) { update, error in
            if case .magnetometer(let m) = update { handler?(m, nil) } else if let error { handler?(nil, error) }
        }
    }

    /// Stops magnetometer updates.
    public func stopMagnetometerUpdates() { stop(.magnetometer) }

    /// Starts proximity updates: the current state, then each change.
    public func startProximityUpdates(to queue: OperationQueue? = nil, withHandler handler: (@Sendable (ProximityData?, (any Error)?) -> Void)? = nil) {
        start(.proximity, queue: queue) { update, error in
            if case .proximity(let m) = update { handler?(m, nil) } else if let error { handler?(nil, error) }
        }
    }

    /// Stops proximity updates.
    public func stopProximityUpdates() { stop(.proximity) }

    private func start(
        _ stream: StreamKind, frame: AttitudeReferenceFrame = .xArbitraryZVertical, queue: OperationQueue?,
        deliver: @escaping @Sendable (MotionClient.Update?, (any Error)?) -> Void
    ) {
        stop(stream)
        let subscription = client.watch([stream], interval: interval(stream), frame: frame) { [weak self] result in
            switch result {
            case .success(let update):
                if case .dropped = update { return }
                self?.state.withLock { $0.latest[stream] = update }
                Self.run(on: queue) { deliver(update, nil) }
            case .failure(let error):
                Self.run(on: queue) { deliver(nil, error) }
            }
        }
        state.withLock { $0.subscriptions[stream] = subscription }
    }

    private func stop(_ stream: StreamKind) {
        let subscription = state.withLock { state in
            state.latest[stream] = nil
            return state.subscriptions.removeValue(forKey: stream)
        }
        subscription?.cancel()
    }

    private static func run(on queue: OperationQueue?, _ body: @escaping @Sendable () -> Void) {
        if let queue { queue.addOperation(body) } else { body() }
    }

    deinit {
        for subscription in state.withLock({ Array($0.subscriptions.values) }) { subscription.cancel() }
    }
}
