import CLibIIO
import MotionCore
import MotionSystem

/// Reads sensors from `/dev/iio:deviceN` through a libiio buffer: enables the scan elements of the
/// chosen sensors and the timestamp, sets the trigger where the device needs one, and decodes each
/// scan by its channels' scan types. Everything it changes is put back by `close()`.
///
/// With a network `sysfs` the buffer is another machine's, streamed by its iiod through libiio's
/// network backend. Its scans are stamped on arrival: their own timestamps would be on that
/// machine's clock.
final class BufferedReader {
    private let context: IIOContext
    private let device: String
    private var restorer: AttributeRestorer
    private var buffer: OpaquePointer?
    private var decoder: ScanDecoder?
    private let samplePeriod: Int64
    let samplesPerRefill: Int
    /// Why the scans' own timestamps are not used, if they are not (their clock could not be made monotonic).
    private(set) var timestampProblem: DeviceError?

    /// Opens a buffer on `device` for `kinds`, refilling every `samplesPerRefill` scans; a refill that
    /// sees no data within `timeoutMilliseconds` fails with ETIMEDOUT.
    ///
    /// libiio (0.24's local backend, as seen on the testbeds) sets the kernel's `buffer/length` to four
    /// times `samplesPerRefill` and `buffer/watermark` to `samplesPerRefill`: poll reports the
    /// descriptor readable once that many scans wait, and a driver with a hardware FIFO programs its
    /// own watermark from it (the kernel's `hwfifo_set_watermark`). So an owner that reads the
    /// descriptor itself (`descriptor`, `decode`) wakes once per `samplesPerRefill` scans.
    /// `kernelBlocks` (libiio's `iio_device_set_kernel_buffers_count`, 4 by default) sets the length
    /// to that many times `samplesPerRefill` instead.
    init(
        device descriptor: DeviceDescriptor, kinds: [SensorKind], rate: Double, samplesPerRefill: Int,
        timeoutMilliseconds: UInt32, sysfs: Sysfs, kernelBlocks: Int = 4
    ) throws(DeviceError) {
        device = descriptor.number.sysname
        restorer = AttributeRestorer(sysfs: sysfs, device: device)
        samplePeriod = Int64(1e9 / max(rate, 0.001))
        self.samplesPerRefill = samplesPerRefill
        if let remote = sysfs.network?.context {
            context = remote
        } else {
            context = try IIOContext()
        }
        context.setTimeout(milliseconds: timeoutMilliseconds)
        guard let iioDevice = context.device(sysname: device) else { throw .deviceVanished(device: device) }

        do throws(DeviceError) {
            if let trigger = descriptor.trigger {
                let current = try sysfs.read(device: device, attribute: "trigger/current_trigger").get()
                if current.trimmingWhitespace != trigger {
                    try restorer.set("trigger/current_trigger", to: trigger)
                }
            }
            // Scan timestamps must be on the monotonic clock, which every other sample is on and which a
            // wall-clock change does not move; the kernel's default is realtime. Where the clock cannot
            // be switched (or a kernel too old to have the attribute says nothing of it), the scans are
            // stamped on arrival instead: a buffer on realtime next to polled samples on monotonic
            // would put decades between them.
            var monotonicTimestamps = descriptor.timestampScan != nil && sysfs.network == nil
            if monotonicTimestamps, !sysfs.exists(device: device, attribute: "current_timestamp_clock") {
                monotonicTimestamps = false
            } else if monotonicTimestamps,
                (try? sysfs.read(device: device, attribute: "current_timestamp_clock").get())?.trimmingWhitespace != "monotonic"
            {
                do throws(DeviceError) {
                    try restorer.set("current_timestamp_clock", to: "monotonic")
                } catch {
                    monotonicTimestamps = false
                    timestampProblem = error
                }
            }

            let channels = iioDevice.channels
            var wanted: Set<String> = []
            for kind in kinds {
                guard let sensor = descriptor.sensor(kind) else {
                    throw DeviceError.kindUnavailable(device: device, kind: kind.rawValue)
                }
                wanted.formUnion(sensor.channels.map(\.id))
            }
            if monotonicTimestamps { wanted.insert("timestamp") }
            for channel in channels where channel.isScanElement {
                channel.setEnabled(wanted.contains(channel.id))
            }

            // The kernel's `buffer/length` is `kernelBlocks` refills (libiio's low-speed interface).
            let counted = iio_device_set_kernel_buffers_count(iioDevice.pointer, UInt32(max(1, kernelBlocks)))
            if counted < 0 { throw DeviceError.bufferFailed(device: device, operation: "kernel buffers count \(kernelBlocks)", errno: -counted) }
            guard let buffer = iio_device_create_buffer(iioDevice.pointer, samplesPerRefill, false) else {
                throw DeviceError.bufferFailed(device: device, operation: "create", errno: currentErrno())
            }
            self.buffer = buffer

            // Where each enabled channel sits in a scan, from libiio's layout of the first scan.
            let start = UnsafeRawPointer(iio_buffer_start(buffer)!)
            func offset(of id: String) -> Int? {
                guard let channel = channels.first(where: { $0.id == id }),
                    let first = iio_buffer_first(buffer, channel.pointer)
                else { return nil }
                return UnsafeRawPointer(first) - start
            }
            var layout: [(kind: SensorKind, offsets: [Int])] = []
            for kind in kinds {
                var offsets: [Int] = []
                for channel in descriptor.sensor(kind)!.channels {
                    guard let o = offset(of: channel.id) else {
                        throw DeviceError.bufferFailed(device: device, operation: "layout of \(channel.id)", errno: ErrnoValue.invalidArgument)
                    }
                    offsets.append(o)
                }
                layout.append((kind, offsets))
            }
            let timestampOffset = monotonicTimestamps ? offset(of: "timestamp") : nil
            decoder = try ScanDecoder(device: descriptor, layout: layout, timestampOffset: timestampOffset)
        } catch {
            close()
            throw error
        }
    }

    deinit { close() }

    /// Waits for the next `samplesPerRefill` scans and hands each decoded sample to `emit`.
    /// Throws `bufferFailed(…, ETIMEDOUT)` when no data came in time.
    func read(emit: (SensorSample) -> Void) throws(DeviceError) {
        guard let buffer else { throw .bufferFailed(device: device, operation: "refill", errno: ErrnoValue.badDescriptor) }
        let n = iio_buffer_refill(buffer)
        if n < 0 { throw .bufferFailed(device: device, operation: "refill", errno: Int32(-n)) }
        let start = UnsafeRawPointer(iio_buffer_start(buffer)!)
        decode(UnsafeRawBufferPointer(start: start, count: n), receivedAt: Syscall.monotonicNanoseconds(), emit: emit)
    }

    /// Bytes per scan, as the kernel lays them out (alignment included).
    var scanSize: Int { buffer.map { iio_buffer_step($0) } ?? 0 }

    /// The buffer's descriptor (`/dev/iio:deviceN`, non-blocking), for an owner that polls and reads it.
    var descriptor: Int32? { buffer.map { iio_buffer_get_poll_fd($0) } }

    /// Decodes the whole scans at the start of `bytes`, read at `receivedAt` (ns, monotonic), and
    /// returns how many bytes they took (a partial scan at the end is left for the next read).
    @discardableResult
    func decode(_ bytes: UnsafeRawBufferPointer, receivedAt: Int64, emit: (SensorSample) -> Void) -> Int {
        let step = scanSize
        guard step > 0, let start = bytes.baseAddress else { return 0 }
        let scans = bytes.count / step
        for i in 0..<scans {
            // Without a hardware timestamp, the last scan arrived now and the others one period apart.
            decoder!.decode(scan: start + i * step, fallbackTimestamp: receivedAt - Int64(scans - 1 - i) * samplePeriod, emit: emit)
        }
        return scans * step
    }

    /// Readings dropped so far as beyond what a sensor can measure.
    var rejectedReadings: Int { decoder?.rejectedReadings ?? 0 }

    /// Wakes a thread blocked in `read` (it then fails with EBADF); safe from any thread.
    func cancel() {
        if let buffer { iio_buffer_cancel(buffer) }
    }

    /// Destroys the buffer (libiio disables it and its scan elements) and restores the attributes.
    func close() {
        if let buffer { iio_buffer_destroy(buffer) }
        buffer = nil
        restorer.restoreAll()
    }
}
