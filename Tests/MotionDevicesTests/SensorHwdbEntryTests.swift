import Foundation
import MotionCore
import MotionDevices
import TestSupport
import Testing

/// The hwdb key and record the mount wizard writes, checked against the real `systemd-hwdb` and the
/// records of Debian 12's own 60-sensor.hwdb: a record systemd ships for a machine must match the key
/// built from that machine's sysfs, or the key is not the one udev looks up.
@Suite struct SensorHwdbEntryTests {
    /// A machine's sysfs in a temporary directory: the IIO device under its parent (with the parent's
    /// `modalias`), the DMI modalias (none: a device-tree machine has no /sys/class/dmi), and the device's `label` if any.
    static func sysfs(parentModalias: String, dmi: String?, label: String? = nil) throws -> (root: String, syspath: String) {
        let root = NSTemporaryDirectory() + "hwdb-sysfs-\(UInt32.random(in: 0...UInt32.max))"
        let parent = root + "/devices/pci0000:00/808622C1:04/i2c-4/sensor-parent"
        let syspath = parent + "/iio:device0"
        try FileManager.default.createDirectory(atPath: syspath, withIntermediateDirectories: true)
        try (parentModalias + "\n").write(toFile: parent + "/modalias", atomically: true, encoding: .utf8)
        if let dmi {
            try FileManager.default.createDirectory(atPath: root + "/class/dmi/id", withIntermediateDirectories: true)
            try (dmi + "\n").write(toFile: root + "/class/dmi/id/modalias", atomically: true, encoding: .utf8)
        }
        if let label { try (label + "\n").write(toFile: syspath + "/label", atomically: true, encoding: .utf8) }
        return (root, syspath)
    }

    /// The Chuwi Hi10 Pro's DMI as the kernel writes it (no spaces; its vendor has parentheses).
    static let chuwiDMI = "dmi:bvnAmericanMegatrendsInc.:bvrP02A_C106.60E:bd11/19/2018:br5.12:svnCHUWIINNOVATIONANDTECHNOLOGY(SHENZHEN)CO.,LTD:pnHi10protablet:pvrDefaultstring:rvnCHUWIINNOVATIONANDTECHNOLOGY(SHENZHEN)CO.,LTD:rnHi10protablet:rvrDefaultstring:cvnDefaultstring:ct3:cvrDefaultstring:skuDefaultstring:"

    /// The key as udev builds it: the ACPI parent's modalias ends in `:` and the rules add another;
    /// the parentheses become `_` (udev_replace_chars).
    @Test func theKeyIsBuiltAsUdevBuildsIt() throws {
        let machine = try Self.sysfs(parentModalias: "acpi:BOSC0200:BOSC0200:", dmi: Self.chuwiDMI)
        let key = try SensorHwdbKey.reading(syspath: machine.syspath, sysRoot: machine.root)
        #expect(key.lookup.hasPrefix("sensor:modalias:acpi:BOSC0200:BOSC0200::dmi:bvnAmericanMegatrendsInc.:"))
        #expect(key.lookup.contains(":svnCHUWIINNOVATIONANDTECHNOLOGY_SHENZHEN_CO.,LTD:pnHi10protablet:"))
    }

    /// A labelled sensor is looked up by the label form only; its record carries the plain form too.
    @Test func aLabelledSensorsRecordMatchesBothForms() throws {
        let machine = try Self.sysfs(parentModalias: "acpi:DUAL250E:DUAL250E:", dmi: "dmi:bvnLENOVO:svnLENOVO:pn80M1:", label: "accel-display")
        let key = try SensorHwdbKey.reading(syspath: machine.syspath, sysRoot: machine.root)
        #expect(key.lookup == "sensor:accel-display:modalias:acpi:DUAL250E:DUAL250E::dmi:bvnLENOVO:svnLENOVO:pn80M1:")
        let record = SensorHwdbRecord(key: key, matrix: Matrix3(rowMajor: [0, -1, 0, -1, 0, 0, 0, 0, -1]), location: .display)
        #expect(record.text == """
            sensor:accel-display:modalias:acpi:DUAL250E:DUAL250E::dmi:bvnLENOVO:svnLENOVO:pn80M1:
            sensor:modalias:acpi:DUAL250E:DUAL250E::dmi:bvnLENOVO:svnLENOVO:pn80M1:
             ACCEL_MOUNT_MATRIX=0, -1, 0; -1, 0, 0; 0, 0, -1
             ACCEL_LOCATION=display

            """)
    }

    /// A device-tree machine, the PineTab2: no /sys/class/dmi, so udev's `$attr{[dmi/id]modalias}`
    /// is empty (udev-format.c: an attribute that cannot be read substitutes nothing) and the key ends
    /// in the parent's `of:` modalias and a `:`. The kernel writes the node's missing device_type as
    /// `(null)` (drivers/of/module.c, `of_modalias`), which udev makes `_null_`; 60-sensor.hwdb's
    /// PineTab2 record (Debian 12's line 989) matches that key.
    @Test func aDeviceTreeMachineWithoutDMIHasAnEmptyDMIPart() async throws {
        let machine = try Self.sysfs(parentModalias: "of:NaccelerometerT(null)Csilan,sc7a20", dmi: nil)
        let key = try SensorHwdbKey.reading(syspath: machine.syspath, sysRoot: machine.root)
        #expect(key.lookup == "sensor:modalias:of:NaccelerometerT_null_Csilan,sc7a20:")
        let shipped = try Hwdb.shippedRecord(startingWith: "sensor:modalias:of:NaccelerometerT_null_Csilan,sc7a20:*")
        let found = try await Hwdb.lookUp(key.lookup, in: ["lib/udev/hwdb.d/60-sensor.hwdb": shipped])
        #expect(found.properties.contains("ACCEL_MOUNT_MATRIX=0, 0, -1; 1, 0, 0; 0, -1, 0"), "\(found.properties)")
    }

    /// Real machines: the shipped record matches the key built from the machine's sysfs (so the key
    /// is udev's), and the wizard's record, compiled by systemd-hwdb without a warning, gives the
    /// same matrix for it, and wins over the shipped one as a 61- file does.
    @Test(arguments: [
        ("sensor:modalias:acpi:BOSC0200*:dmi:*:svn*CHUWIINNOVATIONANDTECHNOLOGY*:pnHi10protablet:*", "acpi:BOSC0200:BOSC0200:", chuwiDMI),
        ("sensor:modalias:acpi:KIOX000A*:dmi:bvnLENOVO:bvr1HCN4?WW:*:svnLENOVO:pn80SG:*", "acpi:KIOX000A:KIOX000A:",
         "dmi:bvnLENOVO:bvr1HCN44WW:bd06/02/2017:br1.44:efr1.44:svnLENOVO:pn80SG:pvrMIIX310-10ICR:rvnLENOVO:rnLNVNB161216:rvrSDK0K09938WIN:cvnLENOVO:ct32:cvrMIIX310-10ICR:skuLENOVO_MT_80SG_BU_idea_FM_MIIX310-10ICR:"),
        ("sensor:modalias:i2c:bmc150_accel:dmi:*:svnHewlett-Packard:pnHPProTablet408:*:rn8048:*", "i2c:bmc150_accel",
         "dmi:bvnHewlett-Packard:bvrM70Ver.01.04:bd10/20/2015:svnHewlett-Packard:pnHPProTablet408:pvr1.0:rvnHewlett-Packard:rn8048:rvrKBCVersion01.04:cvnHewlett-Packard:ct11:cvrChassisVersion:"),
        ("sensor:modalias:platform:HID-SENSOR-200073*:dmi:*svn*ASUSTeK*:pnT103HAF:*", "platform:HID-SENSOR-200073",
         "dmi:bvnAmericanMegatrendsInc.:bvrT103HAF.306:bd03/15/2018:br5.12:svnASUSTeKCOMPUTERINC.:pnT103HAF:pvr1.0:rvnASUSTeKCOMPUTERINC.:rnT103HAF:rvr1.0:cvnASUSTeKCOMPUTERINC.:ct31:cvr1.0:"),
    ])
    func theKeyFindsTheShippedRecordAndTheWizardsRecordReplacesIt(match: String, parentModalias: String, dmi: String) async throws {
        let machine = try Self.sysfs(parentModalias: parentModalias, dmi: dmi)
        let key = try SensorHwdbKey.reading(syspath: machine.syspath, sysRoot: machine.root)
        let shipped = try Hwdb.shippedRecord(startingWith: match)
        let found = try await Hwdb.lookUp(key.lookup, in: ["lib/udev/hwdb.d/60-sensor.hwdb": shipped])
        #expect(found.updateStatus == 0 && found.properties.contains("ACCEL_MOUNT_MATRIX="), "the shipped record matches \(key.lookup)")
        let local = SensorHwdbRecord(key: key, matrix: Matrix3(rowMajor: [0, 1, 0, 1, 0, 0, 0, 0, -1]))
        let both = try await Hwdb.lookUp(
            key.lookup, in: ["lib/udev/hwdb.d/60-sensor.hwdb": shipped, "etc/udev/hwdb.d/61-sensor-local.hwdb": local.text])
        #expect(both.updateStatus == 0 && both.warnings.isEmpty, "\(both.warnings)")
        #expect(both.properties.contains("ACCEL_MOUNT_MATRIX=0, 1, 0; 1, 0, 0; 0, 0, -1"), "\(both.properties)")
    }
}
