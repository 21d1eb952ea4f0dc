#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

extension Double {
    /// This number in decimal with `decimals` digits after the point (0…17), exactly as C's printf
    /// writes it with `%[+][width].[decimals]f`: rounded to nearest on the exact binary value (ties
    /// to even), `sign` writing `+` before a positive number, padded with spaces on the left to at
    /// least `width` characters; "nan" and "inf" as printf writes them. What Foundation's
    /// `String(format:)` wrote, without Foundation (and its ICU): the text is glibc's own, in the C
    /// locale (a Swift program never calls `setlocale`), so the decimal point is always `.`.
    public func fixed(_ decimals: Int, sign: Bool = false, width: Int = 0) -> String {
        let format = "%\(sign ? "+" : "")\(max(0, width)).\(min(max(0, decimals), 17))f"
        // Most numbers fit 64 bytes; a longer one (1e300 has 301 digits) is written again into its size.
        var capacity = 64
        while true {
            var buffer = [CChar](repeating: 0, count: capacity)
            let needed = withVaList([self]) { arguments in
                buffer.withUnsafeMutableBufferPointer { vsnprintf($0.baseAddress, capacity, format, arguments) }
            }
            guard needed >= capacity else {
                return String(decoding: buffer[0..<Int(max(0, needed))].map { UInt8(bitPattern: $0) }, as: UTF8.self)
            }
            capacity = Int(needed) + 1
        }
    }
}
