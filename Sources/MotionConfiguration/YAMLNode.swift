import CYAML

/// One YAML document, as libyaml parses it: scalars, sequences and mappings with scalar keys. motiond
/// reads its configuration with libyaml directly rather than Yams, whose Swift layer needs
/// Foundation, and with it ICU's megabytes of resident pages.
///
/// Aliases repeat what they point to: a few hundred bytes of nested aliases expand to gigabytes (it
/// once took the daemon to 9.2 GB). Each anchored node's size is known when its alias comes, so the
/// document is refused as soon as its expansion would pass `maximumNodes`, before anything grows.
///
/// Nesting is bounded too, by `maximumDepth`: a node is released (and read) recursively, so thousands
/// of nested lists took as many stack frames on whichever thread held them, megabytes of stack that
/// stay resident once touched.
indirect enum YAMLNode {
    /// Collections inside collections: the configuration's deepest is 4 (`mqtt.streams[0].stream`).
    static let maximumDepth = 32

    /// A scalar's text; `plain` when unquoted (only a plain scalar can be null, a number or a boolean).
    case scalar(String, plain: Bool)
    case sequence([YAMLNode])
    /// Key–value pairs in the file's order.
    case mapping([(key: String, value: YAMLNode)])

    /// Why a document could not be read: the parser's problem at a line and column (1-based), or too many values.
    struct ParseError: Error, CustomStringConvertible {
        var description: String
    }

    /// Whether this is YAML's null: an empty plain scalar, `~` or `null`.
    var isNull: Bool {
        if case .scalar(let text, true) = self { return ["", "~", "null", "Null", "NULL"].contains(text) }
        return false
    }

    /// Parses the one document of `text`; `nil` when it has none (empty, or comments only). Anything
    /// after that document (a second one after `---`, or content after a top-level flow collection or
    /// after `...`, which libyaml reads as the start of another) is an error at its line: stopping at
    /// the first document's end silently ignored the rest of the file.
    static func parse(_ text: String, maximumNodes: Int) throws(ParseError) -> YAMLNode? {
        var parser = yaml_parser_t()
        guard yaml_parser_initialize(&parser) == 1 else { throw ParseError(description: "libyaml could not start a parser") }
        defer { yaml_parser_delete(&parser) }
        let bytes = Array(text.utf8)
        return try bytes.withUnsafeBufferPointer { buffer throws(ParseError) in
            yaml_parser_set_input_string(&parser, buffer.baseAddress, buffer.count)
            var builder = Builder(limit: maximumNodes)
            var documentEnded = false
            let oneDocument = "motiond reads one YAML document, and would ignore this and all after it"
            while true {
                var event = yaml_event_t()
                guard yaml_parser_parse(&parser, &event) == 1 else {
                    let problem = parser.problem.map { String(cString: $0) } ?? "syntax error"
                    let mark = parser.problem_mark
                    throw ParseError(description: "\(mark.line + 1):\(mark.column + 1): \(problem)" + (documentEnded ? " after the end of the document: \(oneDocument)" : ""))
                }
                defer { yaml_event_delete(&event) }
                switch event.type {
                case YAML_STREAM_END_EVENT: return builder.root
                case YAML_DOCUMENT_END_EVENT: documentEnded = true
                case YAML_DOCUMENT_START_EVENT where documentEnded:
                    let mark = event.start_mark
                    throw ParseError(description: "\(mark.line + 1):\(mark.column + 1): a second document: \(oneDocument)")
                default: try builder.take(event)
                }
            }
        }
    }

    /// Turns the parser's events into nodes.
    private struct Builder {
        let limit: Int
        var budget: Int
        var root: YAMLNode?
        /// Collections being built, innermost last.
        private var open: [Open] = []
        /// Anchored nodes and their sizes once expanded.
        private var anchors: [String: (node: YAMLNode, size: Int)] = [:]

        /// A sequence or a mapping being built, with its anchor and its size so far.
        struct Open {
            var isMapping: Bool
            var anchor: String?
            var size = 1
            var items: [YAMLNode] = []
            var pairs: [(key: String, value: YAMLNode)] = []
            var pendingKey: String?
        }

        init(limit: Int) { (self.limit, budget) = (limit, limit) }

        private static func string(_ pointer: UnsafeMutablePointer<yaml_char_t>?) -> String? {
            pointer.map { String(cString: UnsafeRawPointer($0).assumingMemoryBound(to: CChar.self)) }
        }

        mutating func take(_ event: yaml_event_t) throws(ParseError) {
            switch event.type {
            case YAML_SCALAR_EVENT:
                let scalar = event.data.scalar
                let text = String(decoding: UnsafeBufferPointer(start: scalar.value, count: scalar.length), as: UTF8.self)
                try refuseDuplicateKey(text, at: event.start_mark)
                try add(.scalar(text, plain: scalar.style == YAML_PLAIN_SCALAR_STYLE), size: 1, anchor: Self.string(scalar.anchor))
            case YAML_SEQUENCE_START_EVENT, YAML_MAPPING_START_EVENT:
                try spend(1)
                guard open.count < YAMLNode.maximumDepth else {
                    throw ParseError(description: "nests lists and mappings more than \(YAMLNode.maximumDepth) deep")
                }
                let isMapping = event.type == YAML_MAPPING_START_EVENT
                let anchor = isMapping ? event.data.mapping_start.anchor : event.data.sequence_start.anchor
                open.append(Open(isMapping: isMapping, anchor: Self.string(anchor)))
            case YAML_SEQUENCE_END_EVENT, YAML_MAPPING_END_EVENT:
                let done = open.removeLast()
                try add(done.isMapping ? .mapping(done.pairs) : .sequence(done.items), size: done.size, anchor: done.anchor, counted: true)
            case YAML_ALIAS_EVENT:
                let name = Self.string(event.data.alias.anchor) ?? ""
                guard let (node, size) = anchors[name] else { throw ParseError(description: "alias *\(name) names no anchor") }
                try add(node, size: size, anchor: nil)
            default:
                break  // stream and document starts
            }
        }

        /// A key given twice in one mapping is an error: YAML 1.2 requires keys to be unique, and
        /// taking the last would let a forgotten line silently override the one a person reads.
        private func refuseDuplicateKey(_ text: String, at mark: yaml_mark_t) throws(ParseError) {
            guard let last = open.last, last.isMapping, last.pendingKey == nil, last.pairs.contains(where: { $0.key == text }) else { return }
            throw ParseError(description: "\(mark.line + 1):\(mark.column + 1): the key \"\(text)\" is given twice in one mapping")
        }

        private mutating func spend(_ nodes: Int) throws(ParseError) {
            budget -= nodes
            guard budget >= 0 else { throw ParseError(description: "holds more than \(limit) values once its aliases are expanded") }
        }

        /// Puts a finished node in its parent (or makes it the root); `counted`: its size was spent
        /// as it was built.
        private mutating func add(_ node: YAMLNode, size: Int, anchor: String?, counted: Bool = false) throws(ParseError) {
            if !counted { try spend(size) }
            if let anchor { anchors[anchor] = (node, size) }
            guard let last = open.indices.last else {
                root = node
                return
            }
            open[last].size += size
            if !open[last].isMapping {
                open[last].items.append(node)
            } else if let key = open[last].pendingKey {
                open[last].pairs.append((key, node))
                open[last].pendingKey = nil
            } else {
                guard case .scalar(let key, _) = node else { throw ParseError(description: "a mapping's key must be a plain value, not a list or a mapping") }
                open[last].pendingKey = key
            }
        }
    }
}
