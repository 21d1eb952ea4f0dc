import Testing

@testable import MotionConfiguration

/// The line the daemon logs as the remedy for a sensor whose axes disagree is one that motiond reads
/// back as the entry it names.
@Suite struct MountMatrixLineTests {
    @Test func theRemedysLineIsReadBackAsItsEntry() throws {
        let line = MountMatrixSetting.line(name: "bmg160", matrix: "0, 1, 0; 1, 0, 0; 0, 0, -1")
        #expect(line == #"mount_matrices: [{name: bmg160, matrix: "0, 1, 0; 1, 0, 0; 0, 0, -1"}]"#)
        let configuration = try Configuration.parse(line + "\n", file: "motiond.conf")
        #expect(configuration.mountMatrices == [MountMatrixSetting(name: "bmg160", matrix: "0, 1, 0; 1, 0, 0; 0, 0, -1")])
    }
}
