import Foundation
import Testing
import TestSupport

extension Hardware.DSUOnAnIMU {
    /// Issue 60 review, item 3: one sample stamped Int64.max ns (a driver's bad stamp), then the IMU's
    /// clock as before. Each later packet was stamped the last + 1 µs until a restart (Cemu
    /// integrates the gyroscope over those 1 µs steps); a stamp more than 1 s below the last is a
    /// clock gone back, and the packets start over from it.
    @Test func aStampFarBelowTheLastStartsTheTimestampsOver() async throws {
        let (testbed, server, port) = try await Self.start()
        let client = try DSUTestClient(serverPort: port)
        try client.requestPadData(.slot(0))
        try waitUntil { (try? testbed.attribute("iio:device0", "buffer/enable"))?.hasPrefix("1") == true }
        var stamps: [UInt64] = []
        // DSU stamps are µs (the protocol's 64-bit timestamp, docs/games.md): the IIO stamp's ns / 1000.
        for time: Int64 in [1_000_000, .max, 2_000_000_000, 2_010_000_000] {
            try testbed.feed("/dev/iio:device0", Testbed.imuScan(accelerometer: [0, 0, 16384], gyroscope: [0, 0, 0], time: time))
            if let pad = Self.padData(client, within: 1) { stamps.append(pad.timestamp) }
        }
        try await server.stop()
        // The test client holds each slot's stamps to increase and keeps the last it took, so the
        // packets after the step back come as its reports, with their stamps (µs): started over.
        #expect(stamps == [1000, UInt64(Int64.max / 1000)])
        #expect(client.violations == [
            "slot 0: timestamp 2000000 µs after 9223372036854775", "slot 0: timestamp 2010000 µs after 9223372036854775",
        ])
    }
}
