import MotionCore
import Testing

@testable import MotionDevices

/// The parsers on plain strings, against values worked out by hand.
@Suite struct AttributeParserTests {
    @Test(arguments: [
        ("42\n", 42.0), ("-17\n", -17), ("0.000598550\n", 0.00059855), ("  9.80665  ", 9.80665),
        ("+3", 3), ("1e-3\n", 0.001), ("-0.5", -0.5),
    ])
    func numbersParseWithSurroundingWhitespace(text: String, value: Double) {
        #expect(AttributeParser.number(text) == value)
    }

    @Test(arguments: ["", "\n", "abc", "1.2.3", "12abc", "nan", "inf", "0x10", "1 2", "--1", "1e400"])
    func garbageIsNotANumber(text: String) {
        #expect(AttributeParser.number(text) == nil)
    }

    @Test func mountMatrixParsesRowsInOrder() throws {
        let m = try #require(AttributeParser.mountMatrix("0, 1, 0; -1, 0, 0; 0, 0, 1\n"))
        #expect(m.rowMajor == [0, 1, 0, -1, 0, 0, 0, 0, 1])
        // A sensor rotated 90° in the plane: its x reads the device's -y.
        #expect(m * Vector3(x: 1, y: 2, z: 3) == Vector3(x: 2, y: -1, z: 3))
        #expect(AttributeParser.mountMatrix("1,0,0;0,1,0;0,0,1") == .identity)
        #expect(AttributeParser.mountMatrix("0.7071, -0.7071, 0; 0.7071, 0.7071, 0; 0, 0, 1")?.row0.y == -0.7071)
    }

    @Test(arguments: ["", "1, 0, 0; 0, 1, 0", "1, 0; 0, 1; 0, 0", "1, 0, 0; 0, 1, 0; 0, 0, 1; 1, 1, 1",
                      "a, 0, 0; 0, 1, 0; 0, 0, 1", "1, 0, 0; 0, 1, 0; 0, 0, inf"])
    func malformedMountMatricesAreRejected(text: String) {
        #expect(AttributeParser.mountMatrix(text) == nil)
    }

    @Test func scanTypesParseEveryField() {
        #expect(AttributeParser.scanType("le:s12/16>>4\n") == ScanType(isBigEndian: false, isSigned: true, bits: 12, storageBits: 16, shift: 4))
        #expect(AttributeParser.scanType("be:u24/32>>8") == ScanType(isBigEndian: true, isSigned: false, bits: 24, storageBits: 32, shift: 8))
        #expect(AttributeParser.scanType("le:S64/64") == ScanType(isBigEndian: false, isSigned: true, bits: 64, storageBits: 64, shift: 0))
        #expect(AttributeParser.scanType("le:s16/16>>0")?.description == "le:s16/16>>0")
    }

    @Test(arguments: ["", "xe:s16/16>>0", "le:q16/16>>0", "le:s16/24>>0", "le:s20/16>>0", "le:s12/16>>8",
                      "le:s16/16X2>>0", "le:s16/16>>", "le:s/16>>0", "le:s16/16>>0 trailing"])
    func scanTypesThisCodeCannotDecodeAreRejected(text: String) {
        #expect(AttributeParser.scanType(text) == nil)
    }

    @Test func decodingHandlesByteOrderSignShiftAndMask() {
        func decode(_ type: String, _ bytes: [UInt8]) -> Int64 {
            let padded = bytes + [UInt8](repeating: 0, count: 8 - bytes.count)
            return padded.withUnsafeBytes { AttributeParser.scanType(type)!.decode($0.baseAddress!) }
        }
        #expect(decode("le:s16/16>>0", [0xFE, 0xFF]) == -2)
        #expect(decode("be:s16/16>>0", [0xFF, 0xFE]) == -2)
        #expect(decode("le:u16/16>>0", [0xFE, 0xFF]) == 65534)
        #expect(decode("le:s12/16>>4", [0x00, 0x80]) == -2048)  // 0x8000 >> 4 = 0x800, the sign bit of 12
        #expect(decode("le:u12/16>>4", [0x0F, 0x80]) == 2048)  // the low 4 bits are dropped
        #expect(decode("be:s24/32>>8", [0xFF, 0xFF, 0xFB, 0x77]) == -5)
        #expect(decode("le:s8/8>>0", [0x80]) == -128)
        #expect(decode("le:s64/64>>0", [0x00, 0xCA, 0x9A, 0x3B, 0, 0, 0, 0]) == 1_000_000_000)
    }

    @Test func availableRatesPickTheLowestAtLeastTheRequest() throws {
        let list = try #require(AttributeParser.availableRates("12.5 25 50 100\n"))
        #expect(list == .list([12.5, 25, 50, 100]))
        #expect(list.rate(atLeast: 1) == 12.5)
        #expect(list.rate(atLeast: 25) == 25)
        #expect(list.rate(atLeast: 26) == 50)
        #expect(list.rate(atLeast: 400) == 100, "above the fastest: the fastest")
        let range = try #require(AttributeParser.availableRates("[10 10 1000]"))
        #expect(range.rate(atLeast: 95) == 100)
        #expect(range.rate(atLeast: 5) == 10)
        #expect(range.rate(atLeast: 5000) == 1000)
        #expect(AttributeParser.availableRates("") == nil)
        #expect(AttributeParser.availableRates("10 fast") == nil)
        #expect(AttributeParser.availableRates("[10 0 100]") == nil)
    }

    @Test func proximityHysteresisBandIsTenPercentOfTheNearLevel() {
        var detector = ProximityDetector(nearLevel: 1000)
        #expect([500, 1000, 950, 901, 899, 999, 1000].map { detector.update($0) }
            == [false, true, true, true, false, false, true])
        var unknown = ProximityDetector(nearLevel: nil)
        #expect(unknown.update(1e6) == false, "without a near level nothing is near")
    }

    @Test func errorsNameDeviceAttributeAndErrno() {
        #expect(DeviceError.attributeUnreadable(device: "iio:device3", attribute: "in_accel_x_raw", errno: 5).description
            == "iio:device3: cannot read in_accel_x_raw (EIO)")
        #expect(DeviceError.attributeMalformed(device: "iio:device1", attribute: "in_accel_scale", value: "abc\n", expected: "a decimal number").description
            == "iio:device1: in_accel_scale is \"abc⏎\", expected a decimal number")
        #expect(DeviceError.deviceVanished(device: "iio:device0").meansDeviceGone)
        #expect(DeviceError.attributeUnreadable(device: "d", attribute: "a", errno: 19).meansDeviceGone)
        #expect(!DeviceError.missingScale(device: "d", channel: "accel_x").meansDeviceGone)
    }
}
