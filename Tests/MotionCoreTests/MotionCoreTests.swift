import Testing

@testable import MotionCore

@Suite struct MotionCoreTests {
    @Test func matrixTimesVectorUsesRowsAsTheIIOMountMatrixDoes() {
        let m = Matrix3(rowMajor: [1, 2, 3, 4, 5, 6, 7, 8, 9])
        #expect(m * Vector3(x: 1, y: 0, z: -1) == Vector3(x: -2, y: -2, z: -2))
        #expect(Matrix3.identity * Vector3(x: 1.5, y: -2, z: 3) == Vector3(x: 1.5, y: -2, z: 3))
    }

    /// Tables indexed by kind rely on it.
    @Test func aSensorKindsIndexIsItsPlaceAmongAllCases() {
        #expect(SensorKind.allCases.map(\.index) == Array(SensorKind.allCases.indices))
    }

    @Test func deviceNumbersParseOnlyIIODeviceNames() {
        #expect(DeviceNumber(sysname: "iio:device12") == DeviceNumber(12))
        #expect(DeviceNumber(sysname: "trigger0") == nil)
        #expect(DeviceNumber(sysname: "iio:device") == nil)
        #expect(DeviceNumber(sysname: "iio:device-1") == nil)
        #expect(DeviceNumber(3).sysname == "iio:device3")
    }

    @Test func vectorArithmeticAndLength() {
        let v = Vector3(x: 3, y: 4, z: 12)
        #expect(v.length == 13)
        #expect(v - v == .zero)
        #expect(v * 2 + v == Vector3(x: 9, y: 12, z: 36))
        var w = Vector3.zero
        w[.y] = 5
        #expect(w == Vector3(x: 0, y: 5, z: 0) && w[.y] == 5)
    }

    @Test func unitsMatchTheirDefinitions() {
        #expect(Units.standardGravity == 9.80665)
        #expect(Units.microteslaPerGauss == 100)
        #expect(!SensorKind.proximity.isVector && SensorKind.magnetometer.isVector)
    }
}

@Suite struct IMUTableTests {
    @Test func rowsWithoutAMagnetometerSampleLeaveItsFieldsEmpty() throws {
        let table = try IMUTable(csv: """
            t,ax,ay,az,gx,gy,gz,mx,my,mz
            0.00,0,0,9.8,0,0,0,1,2,3
            0.01,0,0,9.8,0,0,0,,,
            0.02,0,0,9.8,0,0,0,,,
            0.03,0,0,9.8,0,0,0,,,
            0.04,0,0,9.8,0,0,0,4,5,6
            0.05,0,0,9.8,0,0,0,,,
            0.06,0,0,9.8,0,0,0,,,
            0.07,0,0,9.8,0,0,0,,,
            0.08,0,0,9.8,0,0,0,7,8,9
            """)
        #expect(table.rows.map(\.magnetometer) == [Vector3(x: 1, y: 2, z: 3), nil, nil, nil, Vector3(x: 4, y: 5, z: 6), nil, nil, nil, Vector3(x: 7, y: 8, z: 9)])
        #expect(abs(table.rate - 100) < 1e-6)
        #expect(abs((table.magnetometerRate ?? 0) - 25) < 1e-6)
        // Rates are taken from the intervals: a repeated time is left out and counted (issue 40, defect
        // 13: it refused 2 of 12 real phone walks), a time going back is refused, naming its line.
        let repeated = try IMUTable(csv: "t,ax,ay,az,gx,gy,gz,mx,my,mz\n0,0,0,9.8,0,0,0,1,2,3\n0.01,0,0,9.8,0,0,0,1,2,3\n0.01,0,0,9.7,0,0,0,1,2,3\n0.02,0,0,9.8,0,0,0,1,2,3\n")
        #expect(repeated.rows.map(\.time) == [0, 0.01, 0.02] && repeated.repeatedTimes == 1)
        #expect(repeated.rows[1].accelerometer.z == 9.8, "the first row of the instant is kept")
        #expect(throws: IMUTable.ParseError.timeGoesBack(line: 4)) {
            try IMUTable(csv: "t,ax,ay,az,gx,gy,gz,mx,my,mz\n0,0,0,9.8,0,0,0,1,2,3\n0.01,0,0,9.8,0,0,0,1,2,3\n0.005,0,0,9.8,0,0,0,1,2,3\n")
        }
        // One empty magnetometer field of three is a bad row, not a missing sample.
        #expect(throws: IMUTable.ParseError.badRow(line: 3)) {
            try IMUTable(csv: "t,ax,ay,az,gx,gy,gz,mx,my,mz\n0,0,0,9.8,0,0,0,1,2,3\n0.01,0,0,9.8,0,0,0,1,,3\n")
        }
    }

    /// A 100 Hz magnetometer on the rows of a 285.7 Hz IMU (each sample on the first row at or after
    /// it: 3 rows apart mostly, 2 at times), with a pause where its value held: its rate is 100 Hz,
    /// not the 95.2 Hz of its median interval.
    @Test func aMagnetometerOnTheRowsOfAFasterIMUHasItsOwnRate() throws {
        var csv = "t,ax,ay,az,gx,gy,gz,mx,my,mz\n"
        var next = 0.0
        for k in 0..<2858 {
            let t = Double(k) * 0.0035
            let held = t > 4 && t < 6
            if t >= next - 1e-9 && !held { csv += "\(t),0,0,9.8,0,0,0,1,2,3\n" } else { csv += "\(t),0,0,9.8,0,0,0,,,\n" }
            while next <= t + 1e-9 { next += 0.01 }
        }
        let table = try IMUTable(csv: csv)
        #expect(abs((table.magnetometerRate ?? 0) - 100) < 0.5, "\(table.magnetometerRate ?? 0) Hz")
    }

    /// A 285.7 Hz magnetometer written only when its counts changed (7 rows in 10 here), with a
    /// value held for 2 s: its rate is that of the samples given, 200 Hz (7 samples per 35 ms), as the
    /// daemon measures a polled one, not the 285.7 Hz of its rows, nor lowered by the hold.
    @Test func aMagnetometerWrittenOnlyWhenItChangedHasTheRateOfItsChanges() throws {
        var csv = "t,ax,ay,az,gx,gy,gz,mx,my,mz\n"
        for k in 0..<2858 {
            let t = Double(k) * 0.0035
            let held = t > 4 && t < 6
            if ![2, 5, 8].contains(k % 10) && !held { csv += "\(t),0,0,9.8,0,0,0,1,2,3\n" } else { csv += "\(t),0,0,9.8,0,0,0,,,\n" }
        }
        let table = try IMUTable(csv: csv)
        #expect(abs((table.magnetometerRate ?? 0) - 200) < 0.5, "\(table.magnetometerRate ?? 0) Hz")
    }

    /// A magnetometer slower than 10 Hz (5 Hz, and exactly 10 Hz, on 100 Hz rows) has its rate: its
    /// intervals are no pauses. (Counted as pauses, they left no interval, the rate was 0/0, and
    /// `motionctl fuse` crashed on it.)
    @Test func aSlowMagnetometerHasItsRate() throws {
        for (every, rate) in [(20, 5.0), (10, 10.0)] {
            var csv = "t,ax,ay,az,gx,gy,gz,mx,my,mz\n"
            for k in 0..<1000 { csv += k % every == 0 ? "\(Double(k) / 100),0,0,9.8,0,0,0,20,0,-40\n" : "\(Double(k) / 100),0,0,9.8,0,0,0,,,\n" }
            let table = try IMUTable(csv: csv)
            #expect(abs((table.magnetometerRate ?? 0) - rate) < 1e-6, "\(table.magnetometerRate ?? 0) Hz for \(rate) Hz")
        }
    }

    /// One turn of directions, [0, 360), whatever the angle's sign or size; the value just below 0 that
    /// adding a turn rounds up to 360 exactly is north, 0.
    @Test func anAngleIsTheSameDirectionWithinOneTurn() {
        #expect(Units.degreesWithinOneTurn(-10) == 350)
        #expect(Units.degreesWithinOneTurn(360) == 0)
        #expect(Units.degreesWithinOneTurn(725) == 5)
        #expect(Units.degreesWithinOneTurn(-1e-14) == 0)
        #expect(Units.degreesWithinOneTurn(359.5) == 359.5)
    }
}
