import MotionCore
import Synchronization
import MotionSystem

/// Plays recorded samples as a live sensor would give them: on a thread of its own, each at its
/// recorded time (divided by `speed`) counted from a shared `epoch`, and stamped with the
/// CLOCK_MONOTONIC time it is played at. Players made with the same epoch stay in step, as the
/// sensors of one machine do; a player started late joins the recording where it is by now.
public final class SamplePlayer: Sendable {
    /// The samples played, in timestamp order.
    private let samples: [SensorSample]
    /// Playback speed: 2 plays twice as fast.
    public let speed: Double
    /// Whether playback starts again at the end (otherwise the player ends with `deviceVanished`).
    public let loops: Bool
    /// The sensors' rate as recorded, Hz (the median interval of the first kind).
    public let rate: Double
    private let epoch: Int64
    private let device: String
    private let state = Mutex<(stopRequested: Bool, thread: OSThread?)>((false, nil))
    /// How late a sample may be played when a player starts, ns.
    static let joinTolerance: Int64 = 50_000_000

    /// A player of `samples` (one device's, any order), from `epoch` (ns, CLOCK_MONOTONIC; default now).
    public init(samples: [SensorSample], device: String, speed: Double = 1, loops: Bool = false, epoch: Int64? = nil) {
        self.samples = samples.sorted { $0.timestamp < $1.timestamp }
        self.device = device
        self.speed = speed
        self.loops = loops
        self.epoch = epoch ?? Self.now()
        let first = self.samples.first?.kind
        let stamps = self.samples.filter { $0.kind == first }.map(\.timestamp)
        // A recording's stamps may be any Int64 (`TimestampArithmetic`): differences saturate.
        let gaps = zip(stamps.dropFirst(), stamps).map { $0.nanoseconds(since: $1) }.sorted()
        rate = gaps.isEmpty ? 0 : 1e9 / Double(gaps[gaps.count / 2]) * speed
    }

    /// The current CLOCK_MONOTONIC time, ns: the clock of every sample timestamp.
    public static func now() -> Int64 { Syscall.monotonicNanoseconds() }

    /// Starts playing; `handler` gets every event on the player's thread, in order.
    public func start(handler: @escaping @Sendable (SensorEvent) -> Void) {
        let thread = OSThread(name: "replay") { [self] in play(handler) }
        state.withLock { $0.thread = thread }
        if let failure = thread.start() {
            state.withLock { $0.thread = nil }
            handler(.ended(.bufferFailed(device: device, operation: "start a player thread", errno: failure.rawValue)))
        }
    }

    /// Stops playing and waits for the thread to end.
    public func stop() {
        let thread = state.withLock { state in
            state.stopRequested = true
            defer { state.thread = nil }
            return state.thread
        }
        thread?.join()
    }

    private func play(_ handler: @Sendable (SensorEvent) -> Void) {
        guard let first = samples.first?.timestamp, let last = samples.last?.timestamp else {
            handler(.ended(.deviceVanished(device: device)))
            return
        }
        // One cycle lasts the recording plus one sample interval, so that a loop keeps the rhythm.
        // Saturated, and at least 1 ns: a recording of one instant has no interval (a division by zero).
        let cycle = max(1, last.nanoseconds(since: first).saturatingAdvanced(by: rate > 0 ? Int64(saturating: 1e9 / rate * speed) : 1))
        let played = Int64(Double(Self.now() - epoch) * speed)
        var round = played / cycle
        if !loops && round > 0 {
            handler(.ended(.deviceVanished(device: device)))
            return
        }
        // Join where the recording is by now; a player started at once (the first) plays from the start.
        let position = first.saturatingAdvanced(by: played % cycle - Self.joinTolerance)
        var index = samples.partitioningIndex { $0.timestamp >= position }
        while !state.withLock({ $0.stopRequested }) {
            if index == samples.count {
                guard loops else {
                    handler(.ended(.deviceVanished(device: device)))
                    return
                }
                index = 0
                round += 1
            }
            var sample = samples[index]
            let offset = Double(sample.timestamp.nanoseconds(since: first)) + Double(round) * Double(cycle)
            let due = epoch.saturatingAdvanced(by: Int64(saturating: offset / speed))
            if Self.now() < due { handler(.readComplete) }  // what was due is out: now a wait
            // Sleep in short slices so that a stop is never kept waiting by a gap in the recording.
            while Self.now() < due {
                if state.withLock({ $0.stopRequested }) { return }
                Syscall.sleep(untilMonotonic: min(due, Self.now() + 50_000_000))
            }
            sample.timestamp = due
            handler(.sample(sample))
            index += 1
        }
    }
}

extension Array {
    /// The first index whose element satisfies `belongs`, which must be false then true along the array.
    func partitioningIndex(where belongs: (Element) -> Bool) -> Int {
        var low = 0, high = count
        while low < high {
            let middle = (low + high) / 2
            if belongs(self[middle]) { high = middle } else { low = middle + 1 }
        }
        return low
    }
}
