import FoundationEssentials
import MotionSystem
import NIOCore
import NIOHTTP1
import NIOPosix
import Synchronization

/// `motionctl view`'s web server: one page and its files, and motiond's lines as Server-Sent Events
/// (`/events`), on 127.0.0.1 only, at a port the kernel picks, to whoever shows the token.
///
/// Any local user can reach a loopback port, so the token (128 random bits, in the printed URL) is
/// asked of every request, as the first part of its path (`/<token>/`, `/<token>/view.js`,
/// `/<token>/events`: the page's relative URLs carry it, and no cookie does, which browsers would send
/// to every port of 127.0.0.1). Without it, or with a Host that is not this server's (a page of
/// another site rebound to 127.0.0.1): 403; another method than GET: 405; another path: 404. What a
/// peer can cost is bounded: `maximumConnections` at once (at the limit, the oldest that has not
/// shown the token yet makes room, so nobody without the token can keep the page out),
/// `maximumRequestBytes` read from a connection, a request complete within `requestTimeout`, one
/// request a connection, and an event stream that does not read loses batches (never queues more
/// than the write buffer's high mark) and is closed after `stallLimit`.
final class ViewServer: Sendable {
    /// Connections at once: a page takes one for its events and a few for its files.
    static let maximumConnections = 32
    /// Event streams at once: a few tabs.
    static let maximumEventStreams = 8
    /// All a connection may send: a GET's head, a browser's headers.
    static let maximumRequestBytes = 16 * 1024
    /// The time a request has to arrive whole, and a response to be taken: a browser sends its
    /// request as it connects.
    static let requestTimeout = TimeAmount.seconds(3)
    /// How long an event stream may leave its batches unread before it is closed.
    static let stallLimit = TimeAmount.seconds(10)

    /// The token every request shows: 32 hex digits.
    let token: String
    /// The port the kernel gave.
    let port: Int
    /// The page's address, token included.
    var url: String { "http://127.0.0.1:\(port)/\(token)/" }

    private let group: MultiThreadedEventLoopGroup
    private let channel: any Channel
    private let fanout: EventFanout

    /// Listens on 127.0.0.1, at a port the kernel picks, serving `assets`; counts the event
    /// streams open in `pages`.
    init(assets: ViewAssets, pages: ViewPages) throws {
        token = Self.makeToken()
        // One thread: every connection and the fan-out on one loop, so they share state without locks.
        group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let loop = group.next()
        let fanout = EventFanout(eventLoop: loop, pages: pages)
        self.fanout = fanout
        let connections = ConnectionTable(eventLoop: loop)
        let token = token
        let bootstrap = ServerBootstrap(group: loop)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.writeBufferWaterMark, value: .init(low: 32 * 1024, high: 256 * 1024))
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    guard connections.admit(channel) else {
                        channel.close(promise: nil)
                        return
                    }
                    try channel.pipeline.syncOperations.addHandler(ByteLimit(limit: Self.maximumRequestBytes))
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline(withPipeliningAssistance: false, withErrorHandling: true)
                    try channel.pipeline.syncOperations.addHandler(
                        ViewHandler(token: token, assets: assets, fanout: fanout, shown: { connections.showedToken(channel) }))
                }
            }
        do {
            channel = try bootstrap.bind(host: "127.0.0.1", port: 0).wait()
        } catch {
            try? group.syncShutdownGracefully()
            throw error
        }
        port = channel.localAddress?.port ?? 0
    }

    /// Sends `lines` (motiond's, each a JSON object) to every page, as one event.
    func publish(_ lines: [[UInt8]]) { fanout.eventLoop.execute { [fanout] in fanout.publish(lines) } }

    /// Tells every page, now and when it connects, how motiond is.
    func report(_ state: ViewFeed.State) { fanout.eventLoop.execute { [fanout] in fanout.report(state) } }

    /// Forgets how motiond was and its latest states: the feed left it, and a page that comes next
    /// is not to be shown them as live.
    func forget() { fanout.eventLoop.execute { [fanout] in fanout.forget() } }

    /// Waits until the server stops (it does not, but for the process's end).
    func wait() async throws { try await channel.closeFuture.get() }

    /// 128 random bits from the system's generator (getrandom), as hex.
    private static func makeToken() -> String {
        var generator = SystemRandomNumberGenerator()
        return (0..<2).map { _ in
            let word = generator.next() as UInt64
            let hex = String(word, radix: 16)
            return String(repeating: "0", count: 16 - hex.count) + hex
        }.joined()
    }
}

/// The connections open, on the server's loop: at most `maximumConnections`; at the limit, the
/// oldest that has not shown the token is closed to make room, and only if every one has shown it is
/// the newcomer refused. Confined to the loop (the child initializer and close futures run there).
private final class ConnectionTable: @unchecked Sendable {
    private let eventLoop: any EventLoop
    /// Those that have not shown the token yet, oldest first.
    private var waiting: [ObjectIdentifier: (channel: any Channel, since: NIODeadline)] = [:]
    private var count = 0

    init(eventLoop: any EventLoop) { self.eventLoop = eventLoop }

    func admit(_ channel: any Channel) -> Bool {
        eventLoop.preconditionInEventLoop()
        if count >= ViewServer.maximumConnections {
            guard let oldest = waiting.min(by: { $0.value.since < $1.value.since }) else { return false }
            waiting[oldest.key] = nil
            oldest.value.channel.close(promise: nil)
        }
        count += 1
        let key = ObjectIdentifier(channel)
        waiting[key] = (channel, .now())
        channel.closeFuture.assumeIsolated().whenComplete { [self] _ in
            count -= 1
            waiting[key] = nil
        }
        return true
    }

    /// `channel` showed the token: it is no longer one to close for room.
    func showedToken(_ channel: any Channel) {
        eventLoop.preconditionInEventLoop()
        waiting[ObjectIdentifier(channel)] = nil
    }
}

/// The page's files, read once at start: the server serves these and nothing else of the disk.
struct ViewAssets: Sendable {
    /// A file's type and bytes, by its path in the URL.
    var files: [String: (type: String, bytes: [UInt8])]

    /// What is wrong with the page's files: which, and why.
    struct Unreadable: Error, CustomStringConvertible {
        var path: String
        var reason: String
        var description: String { "cannot read \(path): \(reason)" }
    }

    /// The page's files in `directory`, by their paths under the token.
    init(directory: String) throws(Unreadable) {
        func read(_ name: String) throws(Unreadable) -> [UInt8] {
            let path = directory + "/" + name
            do throws(Errno) {
                guard let bytes = try LocalFiles().contents(of: path) else { throw .noSuchFileOrDirectory }
                return bytes
            } catch {
                throw Unreadable(path: path, reason: "\(error)")
            }
        }
        files = [
            "": ("text/html; charset=utf-8", try read("index.html")),
            "view.js": ("text/javascript; charset=utf-8", try read("view.js")),
            "view.css": ("text/css; charset=utf-8", try read("view.css")),
        ]
    }
}

/// Closes a connection that sends more than `limit` bytes in all: before the HTTP decoder, so that
/// no header, however long, is held.
private final class ByteLimit: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    private let limit: Int
    private var received = 0

    init(limit: Int) { self.limit = limit }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        received += unwrapInboundIn(data).readableBytes
        guard received <= limit else { return context.close(promise: nil) }
        context.fireChannelRead(data)
    }
}

/// One connection: one request, answered, then closed; or, for `/events`, an event stream that the
/// fan-out writes to until the page goes.
private final class ViewHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private let token: String
    private let assets: ViewAssets
    private let fanout: EventFanout
    /// Tells the connection table that this connection showed the token.
    private let shown: () -> Void
    private var request: HTTPRequestHead?
    private var answered = false
    private var timeout: Scheduled<Void>?

    init(token: String, assets: ViewAssets, fanout: EventFanout, shown: @escaping () -> Void) {
        self.token = token
        self.assets = assets
        self.fanout = fanout
        self.shown = shown
    }

    func handlerAdded(context: ChannelHandlerContext) {
        let channel = context.channel
        timeout = context.eventLoop.scheduleTask(in: ViewServer.requestTimeout) { channel.close(promise: nil) }
    }

    func handlerRemoved(context: ChannelHandlerContext) { timeout?.cancel() }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head): request = head
        case .body: break
        case .end:
            guard let request, !answered else { return }
            answered = true
            respond(to: request, context: context)
        }
    }

    private func respond(to request: HTTPRequestHead, context: ChannelHandlerContext) {
        let port = context.localAddress?.port ?? 0
        // The path is /<token>/<file>: a query, if any, is not part of it.
        let path = request.uri.prefix { $0 != "?" }
        let parts = path.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
        guard parts.count == 2, parts[0].isEmpty, let rest = parts.last,
            let slash = rest.firstIndex(of: "/"), Self.equal(rest[..<slash], token),
            Self.isThisServer(host: request.headers["Host"], port: port)
        else { return send(.forbidden, "a token is needed: open the URL motionctl view printed\n", request, context) }
        shown()
        guard request.method == .GET else { return send(.methodNotAllowed, "GET only\n", request, context, extra: [("Allow", "GET")]) }
        let file = rest[rest.index(after: slash)...]
        if file == "events" {
            guard fanout.count < ViewServer.maximumEventStreams else {
                return send(.serviceUnavailable, "too many pages open (\(ViewServer.maximumEventStreams))\n", request, context)
            }
            timeout?.cancel()
            var headers = Self.commonHeaders
            headers.add(name: "Content-Type", value: "text/event-stream")
            context.writeAndFlush(wrapOutboundOut(.head(HTTPResponseHead(version: request.version, status: .ok, headers: headers))), promise: nil)
            fanout.add(context.channel)
            return
        }
        guard let asset = assets.files[String(file)] else { return send(.notFound, "not found\n", request, context) }
        send(.ok, asset.bytes, type: asset.type, request, context, extra: [])
    }

    /// Whether the request was addressed to this server by the name the printed URL gives, or
    /// `localhost`: a page of another site that a rebound name points at 127.0.0.1 carries its own.
    private static func isThisServer(host: [String], port: Int) -> Bool {
        guard host.count == 1, let value = host.first else { return false }
        return value == "127.0.0.1:\(port)" || value == "localhost:\(port)"
    }

    private func send(_ status: HTTPResponseStatus, _ text: String, _ request: HTTPRequestHead, _ context: ChannelHandlerContext, extra: [(String, String)] = []) {
        send(status, Array(text.utf8), type: "text/plain; charset=utf-8", request, context, extra: extra)
    }

    private func send(
        _ status: HTTPResponseStatus, _ body: [UInt8], type: String, _ request: HTTPRequestHead, _ context: ChannelHandlerContext, extra: [(String, String)]
    ) {
        var headers = Self.commonHeaders
        headers.add(name: "Content-Type", value: type)
        headers.add(name: "Content-Length", value: "\(body.count)")
        headers.add(name: "Connection", value: "close")
        for (name, value) in extra { headers.add(name: name, value: value) }
        context.write(wrapOutboundOut(.head(HTTPResponseHead(version: request.version, status: status, headers: headers))), promise: nil)
        context.write(wrapOutboundOut(.body(.byteBuffer(ByteBuffer(bytes: body)))), promise: nil)
        let channel = context.channel
        context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in channel.close(promise: nil) }
    }

    /// Every response's: nothing cached, nothing but this server's own files and events on the page.
    private static let commonHeaders = HTTPHeaders([
        ("Cache-Control", "no-store"),
        ("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'"),
        ("X-Content-Type-Options", "nosniff"),
        ("Referrer-Policy", "no-referrer"),
    ])

    /// Compares in a time that does not depend on where they differ.
    private static func equal(_ a: Substring, _ b: String) -> Bool {
        let a = Array(a.utf8), b = Array(b.utf8)
        guard a.count == b.count else { return false }
        return zip(a, b).reduce(0) { $0 | ($1.0 ^ $1.1) } == 0
    }
}

/// The event streams of the pages open, and what a page is told when it connects (how motiond is,
/// and the latest of each event: orientation, steps…). Confined to the server's loop.
private final class EventFanout: @unchecked Sendable {
    let eventLoop: any EventLoop
    private var streams: [ObjectIdentifier: (channel: any Channel, stalledSince: NIODeadline?)] = [:]
    /// The latest line of each class that is a state, by class.
    private var latest: [String: [UInt8]] = [:]
    private var state: ViewFeed.State?
    private let pages: ViewPages

    /// The classes a newcomer is given the latest of: states, not samples (it waits for the next),
    /// nor replies and errors of the past.
    private static let states: Set<String> = ["ORIENTATION", "TILT", "PROXIMITY", "LIGHT", "PEDOMETER", "ACTIVITY", "GESTURE", "STATUS"]

    init(eventLoop: any EventLoop, pages: ViewPages) {
        self.eventLoop = eventLoop
        self.pages = pages
    }

    var count: Int { streams.count }

    func add(_ channel: any Channel) {
        eventLoop.preconditionInEventLoop()
        streams[ObjectIdentifier(channel)] = (channel, nil)
        pages.opened()
        channel.closeFuture.assumeIsolated().whenComplete { [self] _ in
            streams[ObjectIdentifier(channel)] = nil
            pages.closed()
        }
        // The browser's EventSource tries again a second after the connection drops.
        var first = Array("retry: 1000\n\n".utf8)
        if let state { first += Self.event(state) }
        if !latest.isEmpty { first += Self.event(Array(latest.values)) }
        write(first, to: channel)
    }

    func publish(_ lines: [[UInt8]]) {
        eventLoop.preconditionInEventLoop()
        for line in lines {
            guard let name = ViewFeed.className(line), Self.states.contains(name) else { continue }
            latest[name] = line
        }
        broadcast(Self.event(lines))
    }

    func report(_ state: ViewFeed.State) {
        eventLoop.preconditionInEventLoop()
        // A new daemon's states replace the old one's.
        if state.state == "connected" { latest = [:] }
        self.state = state
        broadcast(Self.event(state))
    }

    func forget() {
        eventLoop.preconditionInEventLoop()
        state = nil
        latest = [:]
    }

    /// To every stream that reads; one that has not read for `stallLimit` is closed.
    private func broadcast(_ bytes: [UInt8]) {
        let buffer = ByteBuffer(bytes: bytes)
        let now = NIODeadline.now()
        for (key, stream) in streams {
            if stream.channel.isWritable {
                if stream.stalledSince != nil { streams[key]?.stalledSince = nil }
                stream.channel.writeAndFlush(HTTPServerResponsePart.body(.byteBuffer(buffer)), promise: nil)
            } else if let since = stream.stalledSince {
                if now - since > ViewServer.stallLimit { stream.channel.close(promise: nil) }
            } else {
                streams[key]?.stalledSince = now
            }
        }
    }

    private func write(_ bytes: [UInt8], to channel: any Channel) {
        channel.writeAndFlush(HTTPServerResponsePart.body(.byteBuffer(ByteBuffer(bytes: bytes))), promise: nil)
    }

    /// One `message` event: the lines as a JSON array (a line holds no newline: JSON escapes it).
    private static func event(_ lines: [[UInt8]]) -> [UInt8] {
        var bytes = Array("data: [".utf8)
        bytes.reserveCapacity(lines.reduce(16) { $0 + $1.count + 1 })
        for (index, line) in lines.enumerated() {
            if index > 0 { bytes.append(UInt8(ascii: ",")) }
            bytes += line.last == UInt8(ascii: "\n") ? line.dropLast() : line[...]
        }
        bytes += Array("]\n\n".utf8)
        return bytes
    }

    /// One `status` event.
    private static func event(_ state: ViewFeed.State) -> [UInt8] {
        let json = (try? JSONEncoder().encode(state)).map(Array.init) ?? Array("{}".utf8)
        return Array("event: status\ndata: ".utf8) + json + Array("\n\n".utf8)
    }
}
