import ArgumentParser
import Dispatch
import FoundationEssentials
import MotionClientCore
import MotionSystem
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// `motionctl record`: raw samples to a file (docs/recording.md), until Ctrl-C.
struct Record: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Record raw samples (accelerometer, gyroscope, magnetometer, proximity, pressure) to a file until Ctrl-C.",
        discussion: "Play it back with `motiond --replay FILE`. Everything received before Ctrl-C (or SIGTERM) is written.")

    @OptionGroup var connection: ConnectionOptions

    @Argument(help: "The file to write.")
    var output: String

    @Option(help: "Seconds between samples of each sensor (the sensors run at least this fast).")
    var interval: Double = 0.01

    @Option(help: "Stop after this many seconds.")
    var duration: Double?

    func run() throws {
        let client = connection.client
        let devices = try reportingErrors { try client.devices() }
        // Each raw sensor's stream: a pressure sensor's readings come as the altitude stream's.
        let raw: [(SensorKind, StreamKind)] = [
            (.accelerometer, .accelerometer), (.gyroscope, .gyroscope), (.magnetometer, .magnetometer), (.proximity, .proximity),
            (.pressure, .altitude),
        ]
        let kinds = Set(devices.flatMap(\.kinds))
        let streams = raw.filter { kinds.contains($0.0) }.map(\.1)
        guard !streams.isEmpty else {
            writeStandardError("motionctl: motiond has no sensors to record\n")
            throw ExitCode(ExitStatus.failure)
        }
        // Opened in place, not replaced: the output may be a pipe or a device.
        let exists = FileManager.default.fileExists(atPath: output)
        // O_TRUNC empties a regular file and is ignored by a pipe or a device.
        guard exists || FileManager.default.createFile(atPath: output, contents: nil), let file = try? Syscall.openWriteOnly(output) else {
            writeStandardError("motionctl: cannot create \(output)\n")
            throw ExitCode(ExitStatus.failure)
        }
        let writer = RecordingFile(file: file)
        do {
            try writer.write(Recording.line(for: Recording.Header(devices: devices, source: "motionctl record from \(client.socketPath)")))
        } catch {
            writeStandardError("motionctl: cannot write \(output): \(error)\n")
            throw ExitCode(ExitStatus.failure)
        }

        let done = DispatchSemaphore(value: 0)
        let failure = Mutex<MotionClientError?>(nil)
        let subscription = client.watch(streams, interval: interval, reconnects: false) { result in
            switch result {
            case .success(let update):
                guard let sample = update.recordedSample else { return }
                writer.append(Recording.line(for: sample))
            case .failure(let error):
                failure.withLock { $0 = error }
                done.signal()
            }
        }
        // Ctrl-C and SIGTERM end the recording cleanly.
        var sources: [any DispatchSourceSignal] = []
        for number in [SIGINT, SIGTERM] {
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number)
            source.setEventHandler { done.signal() }
            source.resume()
            sources.append(source)
        }
        if let duration {
            _ = done.wait(timeout: .now() + duration)
        } else {
            done.wait()
        }
        subscription.cancel()
        sources.forEach { $0.cancel() }
        let count = writer.close()
        writeStandardError("motionctl: \(count) samples written to \(output)\n")
        switch failure.withLock({ $0 }) {
        case nil: break
        case .streamEnded(_, let reason)?:
            // A sensor unplugged, or the end of a replayed recording: what came before is the recording.
            writeStandardError("motionctl: recording ended: \(reason)\n")
        case let error?: throw fail(error)
        }
    }
}

/// The recording being written: lines are gathered and written in blocks; `close` writes the rest.
final class RecordingFile: Sendable {
    /// The file, closed when the writer goes.
    private let file: OwnedDescriptor
    private let state = Mutex<(pending: String, samples: Int, failed: Bool, closed: Bool)>(("", 0, false, false))

    init(file: consuming OwnedDescriptor) { self.file = file }

    func write(_ bytes: [UInt8]) throws { try Syscall.write(file.rawValue, bytes).get() }

    /// Adds a sample's line; one that arrives after `close` (the subscription's last, racing Ctrl-C) is not counted.
    func append(_ line: String) {
        state.withLock { state in
            guard !state.closed else { return }
            state.pending += line
            state.samples += 1
            if state.pending.utf8.count >= 1 << 16 { flush(&state) }
        }
    }

    /// Writes what is left and makes it durable (the descriptor closes as the writer goes); returns
    /// the number of samples written.
    func close() -> Int {
        state.withLock { state in
            flush(&state)
            state.closed = true
            try? LocalFiles().synchronize(file)
            return state.samples
        }
    }

    private func flush(_ state: inout (pending: String, samples: Int, failed: Bool, closed: Bool)) {
        do {
            try Syscall.write(file.rawValue, Array(state.pending.utf8)).get()
        } catch {
            if !state.failed { writeStandardError("motionctl: cannot write the recording: \(error)\n") }
            state.failed = true
        }
        state.pending.removeAll(keepingCapacity: true)
    }
}

extension MotionClient.Update {
    /// The update as a recorded raw sample (raw streams only).
    var recordedSample: Recording.Sample? {
        switch self {
        case .accelerometer(let m): Recording.Sample(stream: .accelerometer, timestamp: m.timestamp, vector: m.acceleration)
        case .gyroscope(let m): Recording.Sample(stream: .gyroscope, timestamp: m.timestamp, vector: m.rotationRate)
        case .magnetometer(let m): Recording.Sample(stream: .magnetometer, timestamp: m.timestamp, vector: m.magneticField)
        case .proximity(let m): Recording.Sample(stream: .proximity, timestamp: m.timestamp, vector: Vector3(x: m.value, y: 0, z: 0), near: m.near)
        case .altitude(let m): Recording.Sample(stream: .altitude, timestamp: m.timestamp, vector: Vector3(x: m.pressure, y: 0, z: 0))
        default: nil
        }
    }
}
