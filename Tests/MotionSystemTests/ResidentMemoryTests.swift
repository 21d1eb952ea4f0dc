import Testing

@testable import MotionSystem

/// Which mappings `ResidentMemory` asks the kernel to reclaim: the private mappings of files (code,
/// read-only data, and writable data, of which the kernel drops only the pages never written), never
/// anonymous memory (the heap, stacks), which reclaiming would have to swap, nor shared memory (a memfd).
@Suite struct ResidentMemoryTests {
    /// Lines in proc(5)'s `/proc/PID/maps` format, as a statically linked motiond has them.
    static let maps = """
        55a84c971000-55a84ca04000 r--p 00000000 fe:00 1311 /usr/bin/motiond
        55a84ca04000-55a84d8ed000 r-xp 00093000 fe:00 1311 /usr/bin/motiond
        55a84d8ed000-55a84dabe000 r--p 00f7c000 fe:00 1311 /usr/bin/motiond
        55a84dabe000-55a84daee000 rw-p 0114d000 fe:00 1311 /usr/bin/motiond
        55a84daee000-55a84dbbb000 rw-p 00000000 00:00 0
        55a84f2c0000-55a84f2e1000 rw-p 00000000 00:00 0                          [heap]
        7f94b0600000-7f94b0626000 r--p 00000000 fe:00 2002 /usr/lib/x86_64-linux-gnu/libc.so.6
        7f94b0800000-7f94b0a00000 r--s 00000000 00:05 7 /memfd:shared (deleted)
        7ffc2b1d0000-7ffc2b1f1000 rw-p 00000000 00:00 0                          [stack]
        7ffc2b1f6000-7ffc2b1f8000 r-xp 00000000 00:00 0                          [vdso]
        """

    @Test func onlyThePrivateMappingsOfFilesAreReclaimed() {
        let mappings = ResidentMemory.privateFileMappings(in: Self.maps)
        #expect(mappings.map(\.start) == [0x55a8_4c97_1000, 0x55a8_4ca0_4000, 0x55a8_4d8e_d000, 0x55a8_4dab_e000, 0x7f94_b060_0000])
        #expect(mappings.map(\.length) == [0x93000, 0xEE9000, 0x1D1000, 0x30000, 0x26000])
    }

    @Test func aGarbledLineIsSkipped() {
        #expect(ResidentMemory.privateFileMappings(in: "zz-10 r--p 0 fe:00 1 /x\n20-10 r--p 0 fe:00 1 /x\n\n").isEmpty)
    }
}
