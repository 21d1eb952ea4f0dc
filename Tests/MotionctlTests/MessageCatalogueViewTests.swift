import Foundation
import MotionCore
import MotionWire
import Testing
import TestSupport

@testable import MotionCtlCommands

/// The browser view knows every stream of the catalogue it is sent: view.js's `take()`, run under node
/// on each stream's example of docs/protocol.md, draws (a plot's sample or a text) exactly the streams
/// `motionctl view` watches on a machine that has every sensor. A stream watched and not drawn, or
/// drawn and never watched, fails here, naming it. (MessageCatalogueTests checks the wire's encoders,
/// the snapshot and the Python client.)
@Suite struct MessageCatalogueViewTests {
    /// The package's root.
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../..").standardized

    /// docs/protocol.md's first complete example line of the class `name`, as the daemon sends it.
    static func example(of name: String) throws -> String? {
        try String(contentsOf: root.appendingPathComponent("docs/protocol.md"), encoding: .utf8).split(separator: "\n").lazy
            .map { $0.hasPrefix("< ") ? $0.dropFirst(2) : $0 }
            .first { $0.hasPrefix("{\"class\":\"\(name)\"") && !$0.contains("…") }.map(String.init)
    }

    /// view.js in node: the browser's objects stand-ins that take anything, the page's texts and the
    /// view's plot counts recorded; `take` is made reachable from outside its closure. Prints, for each
    /// line of the JSON array given, what taking it changed ("plot NAME", "text ID").
    static let harness = #"""
        'use strict';
        const fs = require('fs');
        const vm = require('vm');
        const [path, linesJSON] = process.argv.slice(1);
        function anything() {
          const store = {};
          return new Proxy(function () {}, {
            get: (_, key) => key === Symbol.toPrimitive ? () => 0 : key === 'then' ? undefined : key in store ? store[key] : (store[key] = anything()),
            set: (_, key, value) => { store[key] = value; return true; },
            apply: () => anything(),
            construct: () => anything(),
          });
        }
        const elements = {};
        function element(id) {
          if (!elements[id]) { elements[id] = anything(); elements[id].textContent = ''; }
          return elements[id];
        }
        const context = {
          document: { getElementById: element, querySelector: element },
          EventSource: function () { return anything(); },
          performance: { now: () => 0 },
          requestAnimationFrame: () => 0, setInterval: () => 0, setTimeout: () => 0, clearTimeout: () => {},
          Math, JSON, Date, Object, Array, Number, String, Infinity, NaN, isFinite, Float64Array, Float32Array, console,
        };
        context.window = context;
        vm.createContext(context);
        const source = fs.readFileSync(path, 'utf8');
        const marked = source.replace('function take(m) {', 'window.take = take; function take(m) {');
        if (marked === source) throw new Error('view.js has no `function take(m) {`');
        vm.runInContext(marked, context, { filename: path });
        const state = () => JSON.parse(JSON.stringify({
          plots: context.motionView.plotsSamples,
          texts: Object.fromEntries(Object.entries(elements).map(([id, e]) => [id, String(e.textContent)])),
        }));
        const changed = [];
        for (const line of JSON.parse(linesJSON)) {
          const before = state();
          context.take(JSON.parse(line));
          const after = state();
          changed.push(Object.keys(after.plots).filter((name) => after.plots[name] !== before.plots[name]).map((name) => 'plot ' + name)
            .concat(Object.keys(after.texts).filter((id) => after.texts[id] !== before.texts[id]).map((id) => 'text ' + id)));
        }
        console.log(JSON.stringify(changed));
        """#

    /// A machine with every kind of sensor, an accelerometer in the display and one in the base.
    static let everySensor = ["display", "base"].map { location in
        DevicesReply.Device(
            device: "iio:device-\(location)", name: location, kinds: location == "display" ? SensorKind.allCases : [.accelerometer], mode: "polled",
            rates: nil, mountMatrix: [1, 0, 0, 0, 1, 0, 0, 0, 1], mountMatrixSource: "identity", location: location, channels: [:])
    }

    @Test func viewJSDrawsEveryStreamMotionctlViewWatchesAndNoOther() async throws {
        let watched = Set(ViewFeed(socketPath: "", frame: .xArbitraryZVertical).watches(for: Self.everySensor).flatMap { $0.streams ?? [] })
        let lines = try StreamKind.allCases.map { stream in
            try #require(try Self.example(of: stream.descriptor.message.name), "docs/protocol.md has no example of the \(stream) stream's message")
        }
        let linesJSON = String(decoding: try JSONEncoder().encode(lines), as: UTF8.self)
        let view = Self.root.appendingPathComponent("share/view/view.js").path
        let run = try await runProgram("node", ["-e", Self.harness, view, linesJSON], timeLimit: 60)
        try #require(run.status == 0, "node (Debian's nodejs) ran view.js: \(run.errors)")
        let changed = try JSONDecoder().decode([[String]].self, from: Data(run.output.utf8))
        try #require(changed.count == lines.count, "\(run.output)")
        for (stream, drawn) in zip(StreamKind.allCases, changed) {
            if watched.contains(stream) {
                #expect(!drawn.isEmpty, "share/view/view.js: take() draws nothing of \(stream.descriptor.message.name), which motionctl view watches")
            } else {
                #expect(drawn.isEmpty, "share/view/view.js draws \(stream.descriptor.message.name) (\(drawn)), which motionctl view does not watch (ViewFeed.watches)")
            }
        }
    }
}
