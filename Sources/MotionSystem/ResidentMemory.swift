import CLinux

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Gives back the pages of code and data that the daemon mapped from its files (its own executable,
/// statically linked with the Swift runtime, and its libraries) once it is at rest.
///
/// Start-up touches code that rest never runs again (argument parsing, configuration, discovery,
/// libiio's context), and the kernel's fault-around and read-ahead map far more than was touched:
/// 13 of the static executable's 15 MB of text were resident at rest. These pages are clean copies of
/// files, so reclaiming them loses nothing: what runs later faults its pages back from the page cache
/// (or the disk), as it would after the kernel reclaimed them under memory pressure, which is all
/// `MADV_PAGEOUT` asks for ahead of time. Pages other processes map too (libc) stay where they are.
public enum ResidentMemory {
    /// The private, file-backed mappings in `maps` (proc(5)'s `/proc/PID/maps`): (start, length) in
    /// bytes. Shared ones (a memfd) are left out: their pages are memory, not copies. Writable ones
    /// (an executable's `.data`) are in: `MADV_PAGEOUT` drops the pages of theirs that were only read,
    /// clean copies of the file; those the process wrote it leaves, or swaps out where there is
    /// swap, as memory pressure would.
    static func privateFileMappings(in maps: String) -> [(start: UInt, length: Int)] {
        maps.split(separator: "\n").compactMap { line in
            // "55a84c971000-55a84ca04000 r-xp 01564000 fe:00 1234 /usr/bin/motiond"
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            guard fields.count >= 6, fields[5].hasPrefix("/"), fields[1].count == 4, fields[1].hasSuffix("p") else { return nil }
            let range = fields[0].split(separator: "-")
            guard range.count == 2, let start = UInt(range[0], radix: 16), let end = UInt(range[1], radix: 16), end > start else { return nil }
            return (start, Int(end - start))
        }
    }

    /// Asks the kernel to reclaim the process's clean file pages (`madvise(MADV_PAGEOUT)` on each
    /// private file mapping); returns the bytes of the mappings it was asked for, or the error of
    /// reading /proc/self/maps or of the first call refused (a kernel before 5.4 has no
    /// `MADV_PAGEOUT`: nothing is lost then, the pages stay).
    @discardableResult
    public static func releaseFilePages() -> Result<Int, Errno> {
        let maps: [UInt8]
        do {
            guard let read = try LocalFiles().contents(of: "/proc/self/maps", atMost: 1 << 22) else { return .success(0) }
            maps = read
        } catch {
            return .failure(error)
        }
        var total = 0
        for mapping in privateFileMappings(in: String(decoding: maps, as: UTF8.self)) {
            if case .failure(let error) = Syscall.advise(address: mapping.start, length: mapping.length, MADV_PAGEOUT) { return .failure(error) }
            total += mapping.length
        }
        return .success(total)
    }
}

extension ResidentMemory {
    /// Makes every thread allocate from the main heap (`mallopt(M_ARENA_MAX, 1)`): glibc otherwise
    /// gives each thread that allocates an arena of its own, whose touched pages stay resident (the
    /// per-job threads, the log writer). The daemon allocates on its loop; the other threads rarely.
    /// Returns whether glibc took it.
    @discardableResult
    public static func useOneHeapArena() -> Bool {
        mallopt(M_ARENA_MAX, 1) == 1
    }

    /// Gives the free memory of the heap back to the kernel (`malloc_trim(0)`, which also returns the
    /// free pages inside the heap, not only at its top): replies of clients that are gone leave tens
    /// of megabytes free but resident, as glibc keeps them for the next allocation. Returns whether
    /// any memory was given back.
    @discardableResult
    public static func releaseFreeHeap() -> Bool {
        malloc_trim(0) == 1
    }
}

extension Syscall {
    /// `madvise(address, length, advice)`, e.g. `MADV_PAGEOUT`: reclaim these pages now.
    public static func advise(address: UInt, length: Int, _ advice: Int32) -> Result<Void, Errno> {
        madvise(UnsafeMutableRawPointer(bitPattern: address), length, advice) == 0
            ? .success(()) : .failure(Errno(rawValue: errno))
    }
}
