import Testing

import MotionCore

/// `Double.fixed`, which writes motionctl's and motion-probe's numbers in place of Foundation's
/// `String(format:)` (issue 63: without Foundation, no ICU in motionctl). Each expected text is
/// Python 3's `'%<spec>' % value` (its own correctly rounded formatter, not glibc's), e.g.
/// `python3 -c "print(repr('%+8.2f' % 12.3456))"`.
@Suite struct FixedDecimalsTests {
    @Test(arguments: [
        // Ties on the exact binary value go to even: 0.125 is exact, 2.675 is 2.67499999…
        (0.125, 2, false, 0, "0.12"),
        (2.675, 2, false, 0, "2.67"),
        (-1.5, 0, false, 0, "-2"),
        (2.5, 0, false, 0, "2"),
        // The sign and the width (motionctl watch's angles: `%+8.2f`).
        (12.3456, 2, true, 8, "  +12.35"),
        (-3.14159, 2, false, 8, "   -3.14"),
        (1.0, 4, true, 0, "+1.0000"),
        // A negative number that rounds to zero keeps its sign, as printf's does.
        (-0.0, 2, true, 0, "-0.00"),
        (-0.001, 2, false, 0, "-0.00"),
        (.nan, 1, false, 0, "nan"),
        (.infinity, 1, true, 0, "+inf"),
    ])
    func writesAsPrintf(value: Double, decimals: Int, sign: Bool, width: Int, expected: String) {
        #expect(value.fixed(decimals, sign: sign, width: width) == expected)
    }

    /// Longer than the first buffer: 1e300 written in full (Python: `'%.3f' % 1e300`).
    @Test func writesALongNumberWhole() {
        let text = 1e300.fixed(3)
        #expect(text.count == 305)
        #expect(text.hasPrefix("1000000000000000052504760255204420248704468581108159154915854115511802457988908195786371375080447864043704443832883878176942523235360430575644792184786706982848387200926575803737830233794788090059368953234970799945081119038967640880074652742780142494579258788820056842838115669472196386865459400540160"))
        #expect(text.hasSuffix(".000"))
    }
}
