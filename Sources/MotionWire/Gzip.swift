import CZlib

/// gzip (RFC 1952) decompression through zlib, for recordings shipped compressed.
enum Gzip {
    /// A gzip file's first two bytes (RFC 1952 §2.3.1), whatever its name.
    static func isCompressed(_ bytes: some Collection<UInt8>) -> Bool {
        bytes.starts(with: [0x1f, 0x8b])
    }

    /// The most a recording may decompress to, bytes (1 GiB: three and a half hours of a 285.7 Hz
    /// IMU): a few kB of crafted gzip can hold gigabytes (a decompression bomb).
    static let maximumSize = 1 << 30

    /// The bytes a gzip file holds, every member of it (`cat a.gz b.gz` is a valid file, as `gunzip`
    /// reads it), at most `limit` bytes. Throws a sentence saying what is wrong: corrupt data, a file
    /// that ends early, or one too large.
    static func decompress(_ compressed: [UInt8], limit: Int = maximumSize) throws(Failure) -> [UInt8] {
        // zlib counts its input in 32 bits.
        guard compressed.count <= Int(UInt32.max) else {
            throw Failure(reason: "\(compressed.count) bytes of compressed data are more than zlib takes at once (4 GiB)")
        }
        var stream = z_stream()
        // 15 + 16: a 32 kB window, gzip wrapper only (zlib.h, inflateInit2). inflateInit2 is a macro.
        guard inflateInit2_(&stream, 15 + 16, zlibVersion(), Int32(MemoryLayout<z_stream>.size)) == Z_OK else {
            throw Failure(reason: "zlib could not start: \(message(of: stream, status: Z_MEM_ERROR))")
        }
        defer { inflateEnd(&stream) }
        // gzip stores the size modulo 2^32 in its trailer; a recording compresses about 4:1.
        var output = [UInt8]()
        output.reserveCapacity(min(compressed.count * 4, limit))
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        return try compressed.withUnsafeBufferPointer { (input) throws(Failure) -> [UInt8] in
            stream.next_in = UnsafeMutablePointer(mutating: input.baseAddress)
            stream.avail_in = uInt(input.count)
            while true {
                let status = chunk.withUnsafeMutableBufferPointer { out in
                    stream.next_out = out.baseAddress
                    stream.avail_out = uInt(out.count)
                    return inflate(&stream, Z_NO_FLUSH)
                }
                output.append(contentsOf: chunk[0..<(chunk.count - Int(stream.avail_out))])
                guard output.count <= limit else {
                    throw Failure(reason: "it decompresses to more than \(limit) bytes, more than any recording motiond replays")
                }
                switch status {
                case Z_OK:
                    continue
                case Z_STREAM_END:
                    // Another member may follow; anything else after the trailer is not gzip.
                    guard stream.avail_in > 0 else { return output }
                    guard stream.avail_in >= 2, stream.next_in[0] == 0x1f, stream.next_in[1] == 0x8b else {
                        throw Failure(reason: "\(stream.avail_in) bytes after the end of the compressed data are not gzip")
                    }
                    inflateReset(&stream)
                case Z_BUF_ERROR where stream.avail_in == 0:
                    // All input given, no end of stream: the file was cut short.
                    throw Failure(reason: "the compressed data ends early (a truncated file?), after \(output.count) bytes of text")
                default:
                    throw Failure(reason: "corrupt compressed data: \(message(of: stream, status: status))")
                }
            }
        }
    }

    /// zlib's own words for what went wrong.
    private static func message(of stream: z_stream, status: Int32) -> String {
        if let msg = stream.msg { return String(cString: msg) }
        return zError(status).map { String(cString: $0) } ?? "zlib status \(status)"
    }

    /// What is wrong with a gzip file.
    struct Failure: Error {
        var reason: String
    }
}
