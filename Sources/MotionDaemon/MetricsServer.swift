/// Serves Prometheus metrics over HTTP.
enum MetricsServer {
    /// The `host:port` to listen on, or what is wrong with it.
    static func address(_ text: String) throws(Configuration.Invalid) -> (host: String, port: Int) {
        guard let colon = text.lastIndex(of: ":"), let port = Int(text[text.index(after: colon)...]), (0...65535).contains(port) else {
            throw Configuration.Invalid(path: "", problem: "metrics \"\(text)\" is not host:port (such as 127.0.0.1:9464)")
        }
        var host = text[..<colon]
        if host.hasPrefix("[") && host.hasSuffix("]") { host = host.dropFirst().dropLast() }
        guard !host.isEmpty else { throw Configuration.Invalid(path: "", problem: "metrics \"\(text)\" names no host (such as 127.0.0.1:9464)") }
        return (String(host), port)
    }
}
