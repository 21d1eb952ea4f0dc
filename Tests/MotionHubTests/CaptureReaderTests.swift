import HubTestKit
import MotionDevices
import MotionSystem
import NIOCore
import NIOPosix
import Testing

@testable import MotionHub

/// What a capture's reader hands to NIO: only an open descriptor. NIO traps on one that is not
/// (`takingOwnershipOfDescriptor`'s `fstat` precondition), which took the whole daemon down when a
/// motion-event ioctl answered with a descriptor number that was not open (an end-to-end test's fake
/// driver did; issue 62's helper report).
@Suite struct CaptureReaderTests {
    final class Reader: ChannelReader, @unchecked Sendable {
        typealias InboundIn = ByteBuffer
        let channel = ReadingChannel()
        func channelEnded(_ error: any Error) {}
        func close(waiting: Bool) { channel.close(waiting: waiting) }
    }

    @Test func aDescriptorThatIsNotOpenFailsTheOpeningInsteadOfTrappingInNIO() throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        defer { try? group.syncShutdownGracefully() }
        let capture = LoopCapture(device: Machines.laptop, kinds: [.accelerometer], rate: 4, latency: 0, eventLoop: group.next())
        // Far above any descriptor this process has open (the soft limit is 1,024 or so).
        let notOpen: Int32 = 1_000_000
        #expect(Syscall.checkOpen(notOpen) != nil)
        let attached = Reader().attach(to: capture, { OwnedDescriptor(notOpen) }, readSize: 64)
        #expect(throws: DeviceError.bufferFailed(device: "iio:device0", operation: "read descriptor 1000000", errno: ErrnoValue.badDescriptor)) {
            try attached.wait()
        }
    }
}
