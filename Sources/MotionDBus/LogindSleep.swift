import Logging
import MotionSystem
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// logind's side of sleep, on a thread of its own: a delay lock on sleep taken from
/// `org.freedesktop.login1.Manager` on the system bus (systemd's logind, or elogind, which serves the
/// same interface where systemd is not PID 1), and its `PrepareForSleep(b)` told to the owner. At
/// `PrepareForSleep(true)` the owner quiesces and calls back, and the lock is let go then, or
/// `releasePatience` after the signal, whichever comes first; at `PrepareForSleep(false)` the owner
/// resumes and a new lock is taken (systemd's docs/INHIBITOR_LOCKS.md, "Taking Delay Locks"). No
/// logind on the bus is said once; a logind that comes later (`NameOwnerChanged`) is asked then.
/// No system bus at start, or one lost (a dbus-daemon restarted, or started after motiond as OpenRC
/// may), is connected to again after `firstRetry`, doubled each failure up to `longestRetry`.
/// Nothing here waits for the bus: a logind that never answers holds neither start nor stop, and a
/// stop ends the wait between two connections at once.
final class LogindSleep: Sendable {
    /// logind's well-known name, object and interface (org.freedesktop.login1(5)).
    static let busName = "org.freedesktop.login1"
    static let path = "/org/freedesktop/login1"
    static let interface = "org.freedesktop.login1.Manager"
    /// Who takes the lock and why, as `systemd-inhibit --list` shows them.
    static let who = "motiond"
    static let why = "Saving the calibration and step count, and closing the motion sensors"
    /// The longest the lock is held after `PrepareForSleep(true)`, ns: well inside logind's default
    /// `InhibitDelayMaxSec` (5 s, logind.conf(5)), so that a quiescing that hangs costs the machine 3 s
    /// of its sleep, never logind's whole delay.
    static let releasePatience: Int64 = 3_000_000_000
    /// An `Inhibit` left unanswered this long (sd-bus's timeout, `Bus.methodCallTimeout`) is asked
    /// again, ns: a logind slow at boot is not absent. A `NoReply` sooner is the bus driver's (logind
    /// left without answering): its next owner is asked, not this one again.
    static let askInterval = Int64(Bus.methodCallTimeout) * 1000
    /// The wait before connecting again after a bus was lost or found missing, ns, doubled at each
    /// failure up to `longestRetry` (60 s): a dbus-daemon restarted is back in about a second, and
    /// one that never comes costs an attempt (a `connect` refused) a minute.
    static let firstRetry: Int64 = 1_000_000_000
    static let longestRetry: Int64 = 60_000_000_000

    /// A sleep under way: its number (the owner's call back names it) and when its
    /// `PrepareForSleep(true)` came, monotonic ns.
    private struct Sleep {
        var number: Int
        var since: Int64
    }

    private let thread: WakeableThread
    /// The bus's D-Bus address; nil: the system bus.
    private let address: String?
    /// The bus thread's alone: the connection (nil between two), the wait before the next one (ns; 0
    /// once a connection was answered), and whether a bus was missing or lost since one was last
    /// followed (the next that answers is said).
    private nonisolated(unsafe) var bus: Bus?
    private nonisolated(unsafe) var retry: Int64 = 0
    private nonisolated(unsafe) var awaitingBus = false
    private let logger: Logger
    /// The bus thread's alone: logind's unique name on the bus (only its signals are taken: a signal's
    /// well-known sender is not checked locally, issue 60), the lock held, whether an `Inhibit` is
    /// under way, the sleep under way, how many sleeps began, how many times logind's name changed
    /// owner, and whether its absence was said.
    private nonisolated(unsafe) var owner: String?
    private nonisolated(unsafe) var inhibitor: OwnedDescriptor?
    private nonisolated(unsafe) var asking = false
    private nonisolated(unsafe) var sleep: Sleep?
    private nonisolated(unsafe) var sleeps = 0
    private nonisolated(unsafe) var ownerChanges = 0
    private nonisolated(unsafe) var saidAbsent = false
    /// The warnings a peer can provoke at will (signals from anyone): a few a minute. The bus thread's alone.
    private nonisolated(unsafe) var warnings: WarningLimiter
    /// The number of the last sleep for which the owner has quiesced (its call back, from any thread).
    private let quiesced = Atomic<Int>(0)
    private let preparing: @Sendable (_ quiesced: @escaping @Sendable () -> Void) -> Void
    private let resumed: @Sendable () -> Void

    /// A client of the bus at `address`, or of the system bus (`DBUS_SYSTEM_BUS_ADDRESS`, else the
    /// standard socket), connected to by `start`; throws only when its thread's eventfd cannot be
    /// made. On the bus thread,
    /// `preparing` is told that the machine is about to sleep, and calls the closure it is given once
    /// it has quiesced (from any thread; at most once); `resumed`, that it woke.
    init(
        address: String? = nil, logger: Logger, preparing: @escaping @Sendable (_ quiesced: @escaping @Sendable () -> Void) -> Void,
        resumed: @escaping @Sendable () -> Void
    ) throws(BusError) {
        do {
            thread = try WakeableThread(name: "logind")
        } catch {
            throw BusError(call: "eventfd", code: error.rawValue)
        }
        self.address = address
        self.logger = logger
        warnings = WarningLimiter(logger: logger)
        self.preparing = preparing
        self.resumed = resumed
    }

    /// A connection to the bus, logind's signals subscribed to; throws when there is no bus (its
    /// socket refuses or is missing: at once, nothing waited for).
    private func connect() throws(BusError) -> Bus {
        let bus = try Bus(address: address)
        try bus.subscribe(
            "type='signal',sender='org.freedesktop.DBus',interface='org.freedesktop.DBus',member='NameOwnerChanged',arg0='\(Self.busName)'",
            failed: { [logger] error in
                // ETIMEDOUT: sd-bus's NoReply as the connection closes (AddMatch has no timeout); the loss is said.
                if error.code != ETIMEDOUT { logger.warning("a logind started later will not be seen", metadata: ["error": "\(error)"]) }
            }
        ) { [weak self] signal in self?.logindOwnerChanged(signal) }
        try bus.subscribe(
            "type='signal',sender='\(Self.busName)',path='\(Self.path)',interface='\(Self.interface)',member='PrepareForSleep'",
            failed: { [logger] error in
                if error.code != ETIMEDOUT { logger.warning("logind's sleeps will not be seen", metadata: ["error": "\(error)"]) }
            }
        ) { [weak self] signal in self?.prepareForSleep(signal) }
        return bus
    }

    /// Follows logind on the bus thread until `stop`: connects, asks who serves its name and for the
    /// lock; connects again, after a back-off, when there is no bus or it is lost.
    func start() {
        let failure = thread.start { [self] in
            // Whether a missing or lost bus was said: said once, then the attempts go on in silence.
            var said = false
            while !thread.isStopping {
                if retry > 0 {
                    logger.debug("connecting to the system bus again in \(retry / 1_000_000_000) s")
                    pause(nanoseconds: retry)
                    guard !thread.isStopping else { break }
                }
                do {
                    bus = try connect()
                } catch {
                    if !said {
                        said = true
                        logger.info(
                            "no system bus: logind's sleeps are not followed until one comes (tried again after 1, 2, 4 … 60 s)",
                            metadata: ["error": "\(error)"])
                    }
                    (awaitingBus, retry) = (true, Self.after(retry))
                    continue
                }
                do {
                    try follow()
                } catch {
                    if !awaitingBus {
                        logger.error("lost the system bus: logind's sleeps are not followed until it comes back", metadata: ["error": "\(error)"])
                    }
                    // No `PrepareForSleep(false)` can come now: the sensors closed for a sleep open again.
                    if sleep != nil { wokeUp(because: "the system bus was lost", askingForLock: false) }
                    // 1 s after a bus that answered (`retry` 0), else doubled: one that accepts and
                    // drops every connection (a dbus-daemon going) is not hammered.
                    (said, awaitingBus, retry) = (true, true, Self.after(retry))
                }
                // The old connection's lock and logind went with it (closed: no descriptor is kept).
                inhibitor = nil
                (owner, asking, saidAbsent) = (nil, false, false)
                bus = nil
            }
            // Closed at stop: a lock is never left behind (the process's exit would close it too).
            inhibitor = nil
            bus = nil
            warnings.flush()
        }
        if let failure { logger.error("cannot follow logind's sleeps", metadata: ["error": "\(BusError(call: "pthread_create", code: failure.rawValue))"]) }
    }

    /// Ends the bus thread, letting the lock go, and waits for it: at once, whatever the bus does.
    func stop() {
        thread.stop()
    }

    // MARK: The bus thread

    /// The wait after `retry` (ns): `firstRetry` after none, else twice as long, up to `longestRetry`.
    private static func after(_ retry: Int64) -> Int64 { retry == 0 ? firstRetry : min(retry * 2, longestRetry) }

    /// Handles the bus until `stop` (returns) or until the bus fails (throws).
    private func follow() throws(BusError) {
        guard let bus else { return }
        try lookUpLogind()
        askForLock()
        while !thread.isStopping {
            try bus.process()
            releaseIfDue()
            let waiting = try bus.waitingFor()
            let deadline = [waiting.deadline, releaseDeadline].compactMap { $0 }.min()
            let timeout = deadline.map { Int32(clamping: max(0, ($0 - Syscall.monotonicNanoseconds() + 999_999) / 1_000_000)) } ?? -1
            _ = try thread.wait(for: waiting.events, on: waiting.descriptor, timeoutMilliseconds: timeout)
                .mapError { BusError(call: "poll", code: $0.rawValue) }.get()
        }
    }

    /// Waits `nanoseconds`, or until `stop`: the wait between two connections, which no stop waits for.
    private func pause(nanoseconds: Int64) {
        let deadline = Syscall.monotonicNanoseconds() + nanoseconds
        while !thread.isStopping {
            let left = deadline - Syscall.monotonicNanoseconds()
            guard left > 0 else { return }
            // Only a stop wakes it now (no sleep is under way without a bus): no busy loop.
            guard case .success = thread.wait(timeoutMilliseconds: Int32(clamping: (left + 999_999) / 1_000_000)) else { return }
        }
    }

    /// When the lock of the sleep under way must be let go though the owner has not quiesced, monotonic ns.
    private var releaseDeadline: Int64? {
        guard let sleep, inhibitor != nil else { return nil }
        return sleep.since + Self.releasePatience
    }

    /// Asks the bus who owns logind's name now; `NameOwnerChanged` says it from then on.
    private func lookUpLogind() throws(BusError) {
        guard let bus else { return }
        let get = try bus.newMethodCall(
            destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus", member: "GetNameOwner")
        try get.append(Self.busName)
        try bus.call(get) { [weak self] reply in
            guard let self else { return }
            // The bus driver's own answers (a name, or NameHasNoOwner): the bus is followed, and the
            // back-off starts over. Not sd-bus's NoReply for a connection that closed meanwhile.
            if reply.error == nil || reply.error?.name == "org.freedesktop.DBus.Error.NameHasNoOwner" {
                retry = 0
                if awaitingBus {
                    awaitingBus = false
                    logger.info("the system bus is there: logind's sleeps are followed again")
                }
            }
            // NameHasNoOwner: `Inhibit`'s answer says so (it may start logind by activation meanwhile).
            guard reply.error == nil, let name = try? reply.readString() else { return }
            owner = name
        }
    }

    /// Asks logind for a delay lock on sleep, unless one is held or asked for, or a sleep is under way.
    private func askForLock() {
        guard let bus, inhibitor == nil, !asking, sleep == nil else { return }
        do throws(BusError) {
            let inhibit = try bus.newMethodCall(destination: Self.busName, path: Self.path, interface: Self.interface, member: "Inhibit")
            for argument in ["sleep", Self.who, Self.why, "delay"] { try inhibit.append(argument) }
            let (sent, changes) = (Syscall.monotonicNanoseconds(), ownerChanges)
            try bus.call(inhibit) { [weak self] reply in self?.inhibitAnswered(reply, sentAt: sent, ownerChanges: changes) }
            asking = true
        } catch {
            warnings.warning("cannot ask logind for a delay lock on sleep", metadata: ["error": "\(error)"])
        }
    }

    private func inhibitAnswered(_ reply: BusMessage, sentAt sent: Int64, ownerChanges changes: Int) {
        asking = false
        if let error = reply.error {
            switch error.name {
            case "org.freedesktop.DBus.Error.ServiceUnknown", "org.freedesktop.DBus.Error.NameHasNoOwner":
                if !saidAbsent {
                    saidAbsent = true
                    logger.info("no logind on the system bus: sleeps are not announced to motiond (a sensor that falls silent is re-armed when its stall is seen)")
                }
            case "org.freedesktop.DBus.Error.NoReply" where error.message == "Connection terminated":
                // sd-bus's answer to every call under way as the bus goes (sd-bus.c, process_closing):
                // the loss is said by the bus thread, and the next connection asks again.
                return
            case "org.freedesktop.DBus.Error.NoReply" where Syscall.monotonicNanoseconds() - sent >= Self.askInterval:
                warnings.warning("logind has not answered Inhibit: asking again")
                askForLock()
            default:
                // logind left while it was asked, and came back: its new self is asked.
                if owner != nil && ownerChanges != changes { return askForLock() }
                warnings.warning(
                    "logind refused a delay lock on sleep: the sensors are still closed at sleep, without delaying it",
                    metadata: ["error": "\(error.name): \(error.message)"])
            }
            return
        }
        do throws(BusError) {
            let lock = try reply.readDescriptor()
            // Given while a sleep is under way: dropped (closed) at once, and a new one taken at the resume.
            guard sleep == nil, inhibitor == nil else { return }
            inhibitor = consume lock
            logger.debug("took logind's delay lock on sleep")
        } catch {
            warnings.warning("logind's delay lock cannot be read", metadata: ["error": "\(error)"])
        }
    }

    /// `NameOwnerChanged(name, old, new)` for logind's name, from the bus itself only: a logind that
    /// came is asked for the lock; one that left took its lock with it (and a sleep under way will
    /// never end by its signal).
    private func logindOwnerChanged(_ signal: BusMessage) {
        guard signal.sender == "org.freedesktop.DBus" else {
            return warnings.warning("ignored a NameOwnerChanged that did not come from the bus", metadata: ["sender": "\(signal.sender ?? "none")"])
        }
        guard (try? signal.readString()) == Self.busName, (try? signal.readString()) != nil, let new = try? signal.readString() else { return }
        inhibitor = nil
        if new.isEmpty {
            owner = nil
            logger.info("logind left the system bus")
            if sleep != nil { wokeUp(because: "logind left the bus") }
        } else {
            owner = new
            ownerChanges += 1
            saidAbsent = false
            logger.info("logind is on the system bus: taking a delay lock on sleep")
            askForLock()
        }
    }

    /// `PrepareForSleep(start)`, from logind only.
    private func prepareForSleep(_ signal: BusMessage) {
        guard let sender = signal.sender, sender == owner else {
            return warnings.warning("ignored a PrepareForSleep that did not come from logind", metadata: ["sender": "\(signal.sender ?? "none")"])
        }
        guard let start = try? signal.readBool() else {
            return warnings.warning("ignored a PrepareForSleep without its boolean", metadata: ["sender": "\(sender)"])
        }
        if start { fallingAsleep() } else if sleep != nil { wokeUp(because: "PrepareForSleep(false)") }
    }

    private func fallingAsleep() {
        guard sleep == nil else { return }  // said twice: the first one's quiescing goes on
        sleeps += 1
        let number = sleeps
        sleep = Sleep(number: number, since: Syscall.monotonicNanoseconds())
        // The hub says what it does (notice); this says what logind asked.
        logger.debug("logind: PrepareForSleep(true)", metadata: ["lock": "\(inhibitor == nil ? "none" : "held")"])
        preparing { [weak self] in
            guard let self else { return }
            quiesced.max(number, ordering: .releasing)
            thread.wake()
        }
    }

    /// The sleep ended (or can no longer end by logind's word): the owner resumes, and a new lock is
    /// taken (unless `askingForLock` is false: the bus is gone).
    private func wokeUp(because reason: String, askingForLock: Bool = true) {
        guard let sleep else { return }
        self.sleep = nil
        inhibitor = nil  // let go already, but for a sleep shorter than the quiescing
        logger.debug(
            "logind: the sleep ended", metadata: ["reason": "\(reason)", "seconds": "\(Double(Syscall.monotonicNanoseconds() - sleep.since) / 1e9)"])
        resumed()
        if askingForLock { askForLock() }
    }

    /// Lets the lock go once the owner has quiesced for the sleep under way, or `releasePatience` after it began.
    private func releaseIfDue() {
        guard let sleep, inhibitor != nil else { return }
        let held = Syscall.monotonicNanoseconds() - sleep.since
        if quiesced.load(ordering: .acquiring) >= sleep.number {
            inhibitor = nil
            logger.debug("let logind's delay lock go", metadata: ["milliseconds": "\(held / 1_000_000)"])
        } else if held >= Self.releasePatience {
            inhibitor = nil
            logger.warning("the sensors were not closed \(Self.releasePatience / 1_000_000_000) s after PrepareForSleep: logind's delay lock let go anyway")
        }
    }
}
