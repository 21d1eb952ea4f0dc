import Foundation
import MotionDevices
import Testing

/// The last resort's sysfs writes (Documentation/ABI/testing/sysfs-bus-*, a driver's `bind` and
/// `unbind`: "write the device name"): on a sysfs tree in a temporary directory laid out as the
/// kernel's, the IIO device under its SPI parent, the parent's `driver` a link to the bus's driver.
@Suite struct DriverRebindTests {
    static func tree() throws -> String {
        let root = NSTemporaryDirectory() + "rebind-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        let files = FileManager.default
        try files.createDirectory(atPath: root + "/devices/platform/spi-0/spi0.0/iio:device0", withIntermediateDirectories: true)
        try files.createDirectory(atPath: root + "/bus/spi/drivers/bmi160", withIntermediateDirectories: true)
        try files.createDirectory(atPath: root + "/bus/iio/devices", withIntermediateDirectories: true)
        for step in ["bind", "unbind"] { try "".write(toFile: root + "/bus/spi/drivers/bmi160/" + step, atomically: false, encoding: .utf8) }
        try files.createSymbolicLink(atPath: root + "/bus/iio/devices/iio:device0", withDestinationPath: "../../../devices/platform/spi-0/spi0.0/iio:device0")
        try files.createSymbolicLink(atPath: root + "/devices/platform/spi-0/spi0.0/driver", withDestinationPath: "../../../../bus/spi/drivers/bmi160")
        return root
    }

    /// The parent's name, `spi0.0`, goes to the driver's `unbind` and then its `bind`.
    @Test func theParentsNameIsWrittenToItsDriversUnbindAndBind() throws {
        let root = try Self.tree()
        defer { try? FileManager.default.removeItem(atPath: root) }
        #expect(try DriverRebind.rebind("iio:device0", sysRoot: root) == "spi0.0 on bmi160")
        for step in ["unbind", "bind"] {
            #expect(try String(contentsOfFile: root + "/bus/spi/drivers/bmi160/" + step, encoding: .utf8) == "spi0.0")
        }
    }

    /// A `driver` link that leads anywhere but a bus's drivers is refused before anything is written
    /// (the kernel's never does: a tree that says so is not sysfs).
    @Test func aDriverLinkOutsideTheBusesDriversIsRefused() throws {
        let root = try Self.tree()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let elsewhere = root + "/elsewhere"
        try FileManager.default.createDirectory(atPath: elsewhere, withIntermediateDirectories: true)
        try "".write(toFile: elsewhere + "/unbind", atomically: false, encoding: .utf8)
        try FileManager.default.removeItem(atPath: root + "/devices/platform/spi-0/spi0.0/driver")
        try FileManager.default.createSymbolicLink(atPath: root + "/devices/platform/spi-0/spi0.0/driver", withDestinationPath: elsewhere)
        #expect(throws: DeviceError.self) { try DriverRebind.rebind("iio:device0", sysRoot: root) }
        #expect(try String(contentsOfFile: elsewhere + "/unbind", encoding: .utf8) == "")
    }

    /// A parent bound to no driver (no `driver` link) is said, with the step that failed.
    @Test func aParentWithoutADriverIsSaid() throws {
        let root = try Self.tree()
        defer { try? FileManager.default.removeItem(atPath: root) }
        try FileManager.default.removeItem(atPath: root + "/devices/platform/spi-0/spi0.0/driver")
        #expect(throws: DeviceError.rebindFailed(device: "iio:device0", step: "finding its parent's driver", errno: ENOENT)) {
            try DriverRebind.rebind("iio:device0", sysRoot: root)
        }
    }
}
