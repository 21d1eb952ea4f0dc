import Foundation
import MotionCore
import MotionFusion
import Testing
import TestSupport

/// `motionctl fuse`, run as a user runs it: the built executable, real files.
@Suite struct FuseCommandTests {
    /// The directory with the built products (the test bundle lives there too).
    static var products: URL {
        URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
    }

    /// Runs motionctl; `output` holds both of its output streams.
    func run(_ arguments: [String]) async throws -> (status: Int32, output: String) {
        let run = try await runProgram(Self.products.appendingPathComponent("motionctl").path, arguments)
        return (run.status, run.output + run.errors)
    }

    func temporaryFile(_ name: String, _ contents: String? = nil) throws -> String {
        let path = NSTemporaryDirectory() + "motionctl-test-\(getpid())-\(name)"
        if let contents { try contents.write(toFile: path, atomically: true, encoding: .utf8) }
        return path
    }

    /// Three seconds of a device turning slowly about z, in the BROAD format.
    var recording: String {
        var text = "t,ax,ay,az,gx,gy,gz,mx,my,mz\n"
        for i in 0..<300 {
            let t = Double(i) / 100
            let q = Quaternion(angle: 0.2 * t, axis: Vector3(x: 0, y: 0, z: 1)).conjugate
            let f = q.rotate(Vector3(x: 0, y: 0, z: 9.81)), m = q.rotate(Vector3(x: 0, y: 19, z: -46))
            text += "\(t),\(f.x),\(f.y),\(f.z),0,0,0.2,\(m.x),\(m.y),\(m.z)\n"
        }
        return text
    }

    /// An output that is not a regular file is written into, not replaced: Foundation's atomic write
    /// renames a temporary file over the path, and as root `--output /dev/null` left a regular file
    /// in the device's place. A named pipe stands in for the device (the test may not break the
    /// machine's /dev/null if it fails): it is still a pipe afterwards, and its reader got every row.
    @Test func anOutputThatIsNoRegularFileIsWrittenIntoNotReplaced() async throws {
        let input = try temporaryFile("in.csv", recording)
        let pipe = try temporaryFile("pipe.csv"), captured = try temporaryFile("captured.csv")
        try? FileManager.default.removeItem(atPath: pipe)
        let motionctl = Self.products.appendingPathComponent("motionctl").path
        let run = try await runProgram("/bin/sh", ["-c", "mkfifo \"$1\" && { cat \"$1\" > \"$2\" & } && \"$3\" fuse --input \"$4\" --output \"$1\" && wait && test -p \"$1\"", "sh", pipe, captured, motionctl, input], timeLimit: 20)
        #expect(run.status == 0, "\(run.output)\(run.errors)")
        let lines = try String(contentsOfFile: captured, encoding: .utf8).split(separator: "\n")
        #expect(lines.first == "t,qw,qx,qy,qz")
        #expect(lines.count == 301)
        try? FileManager.default.removeItem(atPath: pipe)
    }

    /// An output that is a symlink to a longer file: the file it points to is replaced whole (written
    /// through the link without truncation, the old file's tail stayed behind), the link kept.
    @Test func anOutputThatIsASymlinkReplacesTheFileItPointsTo() async throws {
        let input = try temporaryFile("in.csv", recording)
        let target = try temporaryFile("target.csv", String(repeating: "old row\n", count: 10_000))
        let link = try temporaryFile("link.csv")
        try? FileManager.default.removeItem(atPath: link)
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: target)
        let result = try await run(["fuse", "--input", input, "--output", link])
        #expect(result.status == 0, "\(result.output)")
        #expect((try? FileManager.default.destinationOfSymbolicLink(atPath: link)) == target)
        let lines = try String(contentsOfFile: target, encoding: .utf8).split(separator: "\n")
        #expect(lines.count == 301 && !lines.contains("old row"))
        try? FileManager.default.removeItem(atPath: link)
    }

    @Test func fuseWritesOneUnitQuaternionPerRowMatchingTheLibrary() async throws {
        let input = try temporaryFile("in.csv", recording)
        let output = try temporaryFile("out.csv")
        let result = try await run(["fuse", "--input", input, "--output", output])
        #expect(result.status == 0, "\(result.output)")
        let lines = try String(contentsOfFile: output, encoding: .utf8).split(separator: "\n")
        #expect(lines.first == "t,qw,qx,qy,qz")
        #expect(lines.count == 301)
        let last = lines.last!.split(separator: ",").map { Double($0)! }
        let q = Quaternion(w: last[1], x: last[2], y: last[3], z: last[4])
        #expect(abs(q.w * q.w + q.x * q.x + q.y * q.y + q.z * q.z - 1) < 1e-9)
        // The same rows through the library give the same attitude.
        var fusion = SensorFusion(gyroscopeRate: 100)
        for row in try IMUTable(csv: recording).rows {
            for (kind, v) in [(SensorKind.gyroscope, row.gyroscope), (.accelerometer, row.accelerometer), (.magnetometer, row.magnetometer!)] {
                fusion.update(SensorSample(kind: kind, device: DeviceNumber(0), timestamp: row.timestamp, vector: v))
            }
        }
        #expect(q.angle(to: fusion.filter.attitude) < 1e-9)
        // And it is right: 0.2 rad/s for 2.99 s about up, in ENU.
        #expect(q.angle(to: Quaternion(angle: 0.2 * 2.99, axis: Vector3(x: 0, y: 0, z: 1))) < 0.01)
    }

    /// `--no-gyroscope` fuses as a machine without one: the gyroscope's column, here a lie of 1 rad/s
    /// about x, is not read, and the attitude is the library's gyroscope-free one, at the pose.
    @Test func withheldTheGyroscopeIsNotReadAndTheAttitudeIsTheGyroscopeFreeFilters() async throws {
        let lying = recording.split(separator: "\n").enumerated().map { index, line in
            guard index > 0 else { return String(line) }
            var fields = line.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
            fields[4] = "1"
            return fields.joined(separator: ",")
        }.joined(separator: "\n") + "\n"
        let input = try temporaryFile("no-gyroscope.csv", lying)
        let output = try temporaryFile("no-gyroscope-out.csv")
        let result = try await run(["fuse", "--no-gyroscope", "--input", input, "--output", output])
        #expect(result.status == 0, "\(result.output)")
        let lines = try String(contentsOfFile: output, encoding: .utf8).split(separator: "\n")
        #expect(lines.count == 301)
        let last = lines.last!.split(separator: ",").map { Double($0)! }
        let q = Quaternion(w: last[1], x: last[2], y: last[3], z: last[4])
        var fusion = SensorFusion(gyroscopeRate: nil, accelerometerRate: 100, magnetometerRate: 100)
        for row in try IMUTable(csv: recording).rows {
            fusion.update(SensorSample(kind: .accelerometer, device: DeviceNumber(0), timestamp: row.timestamp, vector: row.accelerometer))
            fusion.update(SensorSample(kind: .magnetometer, device: DeviceNumber(0), timestamp: row.timestamp, vector: row.magnetometer!))
        }
        let library = try #require(fusion.gyroscopeFree?.attitude)
        #expect(q.angle(to: library) < 1e-9)
        // The pose: 0.2 rad/s about up for 2.99 s, which the compass follows late by its heading time
        // constant (0.5 s): the pose of 2.49 s, within 1°.
        #expect(q.angle(to: Quaternion(angle: 0.2 * 2.49, axis: Vector3(x: 0, y: 0, z: 1))) < .pi / 180, "\(q)")
    }

    @Test func theCalibrationLearntIsShownOnRequest() async throws {
        let input = try temporaryFile("calibration.csv", recording)
        let result = try await runProgram(
            Self.products.appendingPathComponent("motionctl").path,
            ["fuse", "--show-calibration", "--input", input, "--output", try temporaryFile("calibration-out.csv")])
        #expect(result.status == 0)
        let lines = result.errors.split(separator: "\n")
        #expect(lines.count == 3 && lines[0].hasPrefix("gyroscope bias: (") && lines[0].hasSuffix(") °/s"), "\(result.errors)")
        #expect(lines[1].hasPrefix("gyroscope scale error: (") && lines[2].hasPrefix("magnetometer offset: ("), "\(result.errors)")
        let plain = try await run(["fuse", "--input", input, "--output", try temporaryFile("plain-out.csv")])
        #expect(plain.output.isEmpty, "nothing printed unless asked")
    }

    @Test func withoutTheMagnetometerTheFieldIsIgnored() async throws {
        // Garbage magnetometer columns must not matter in 6D.
        let noisy = recording.split(separator: "\n").enumerated().map { i, line in
            i == 0 ? String(line) : line.split(separator: ",").prefix(7).joined(separator: ",") + ",1e6,-1e6,5"
        }.joined(separator: "\n")
        let clean = try temporaryFile("clean.csv", recording), dirty = try temporaryFile("dirty.csv", noisy)
        let a = try temporaryFile("a.csv"), b = try temporaryFile("b.csv")
        #expect(try await run(["fuse", "--no-magnetometer", "--input", clean, "--output", a]).status == 0)
        #expect(try await run(["fuse", "--no-magnetometer", "--input", dirty, "--output", b]).status == 0)
        #expect(try String(contentsOfFile: a, encoding: .utf8) == String(contentsOfFile: b, encoding: .utf8))
    }

    @Test func aBadFileIsAClearErrorAndAFailingExitStatus() async throws {
        let badHeader = try temporaryFile("bad.csv", "time,a,b\n1,2,3\n")
        let result = try await run(["fuse", "--input", badHeader, "--output", try temporaryFile("x.csv")])
        #expect(result.status != 0)
        #expect(result.output.contains("header"), "\(result.output)")
        let badRow = try temporaryFile("row.csv", "t,ax,ay,az,gx,gy,gz,mx,my,mz\n0,1,2,3,4,5,6,7,8,9\n0.01,1,2,x,4,5,6,7,8,9\n")
        let second = try await run(["fuse", "--input", badRow, "--output", try temporaryFile("y.csv")])
        #expect(second.status != 0 && second.output.contains("line 3"), "\(second.output)")
        // A number that is not finite would poison the filter's state: refused like any garbage.
        for garbage in ["nan", "inf", "-inf"] {
            let notFinite = try temporaryFile("\(garbage).csv", "t,ax,ay,az,gx,gy,gz,mx,my,mz\n0,1,2,3,4,5,6,7,8,9\n0.01,1,2,3,\(garbage),5,6,7,8,9\n")
            let refused = try await run(["fuse", "--input", notFinite, "--output", try temporaryFile("\(garbage)-out.csv")])
            #expect(refused.status != 0 && refused.output.contains("line 3: expected 10 finite numbers"), "\(garbage): \(refused.output)")
        }
        let missing = try await run(["fuse", "--input", "/nonexistent/in.csv", "--output", try temporaryFile("z.csv")])
        #expect(missing.status != 0 && missing.output.contains("/nonexistent/in.csv"), "\(missing.output)")
    }
}
