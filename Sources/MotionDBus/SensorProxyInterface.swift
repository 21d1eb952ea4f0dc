/// iio-sensor-proxy's D-Bus interface as data (docs/dbus.md): its name, objects, properties and
/// claim methods, and the introspection written from them, so that what is announced is what is served.
/// Beside upstream's interfaces, unchanged, two of motiond's own on the main object: the posture of a
/// 2-in-1 (`io.github.motiond.Posture`) and whether a person is at the machine
/// (`io.github.motiond.Presence`), which upstream does not have.
enum SensorProxyInterface {
    static let busName = "net.hadess.SensorProxy"

    /// The values of the interface's properties.
    struct Properties: Sendable, Equatable {
        var hasAccelerometer = false
        var accelerometerOrientation = "undefined"
        var accelerometerTilt = "vertical"
        var hasAmbientLight = false
        var lightLevelUnit = "lux"
        var lightLevel = 0.0
        var hasProximity = false
        var proximityNear = false
        var hasCompass = false
        /// Degrees from magnetic north, clockwise; 0 until the first value, as upstream's.
        var compassHeading = 0.0
        /// Whether the machine has a hinge: an accelerometer in the display and one in the base.
        var hasPosture = false
        /// `closed`, `laptop`, `tent` or `tablet` (the `hinge` stream's mode); `undefined` until the
        /// first value, as upstream writes its own enumerated properties.
        var posture = "undefined"
        /// The hinge's angle, degrees: 0 shut, 180 flat, 360 folded back; 0 until the first value.
        var hingeAngle = 0.0
        /// Whether the machine can tell a person's presence: a human-presence sensor, else a
        /// proximity sensor (the `presence` stream's sources).
        var hasPresence = false
        /// `present` or `absent` (the `presence` stream's debounced state); `undefined` until the first value.
        var presence = "undefined"
        /// Whether the sensor tells attention: false until a value carries it (the `PRESENCE` message
        /// has `attention` only where the sensor has the channel; a proximity sensor never does).
        var hasAttention = false
        /// `attentive` or `inattentive` (looking at the screen, attention ≥ 50 %); `undefined` until a
        /// value carries it, and where the sensor has no attention channel.
        var attention = "undefined"
        /// How far the person is, metres, as the sensor gives it; −1 where it gives none, or before
        /// the first value. Sent with each change of presence or attention, not on its own.
        var presenceDistance = -1.0
    }

    /// One served interface: its object's path and its name. Two may share a path (the main object
    /// has upstream's interface and motiond's posture and presence).
    struct Object: Sendable, Equatable {
        var path: String
        var interface: String
    }

    static let main = Object(path: "/net/hadess/SensorProxy", interface: "net.hadess.SensorProxy")
    static let compass = Object(path: "/net/hadess/SensorProxy/Compass", interface: "net.hadess.SensorProxy.Compass")
    /// motiond's own interface on the main object: a 2-in-1's posture from its hinge (docs/dbus.md).
    /// Not upstream's, so named in motiond's namespace (its home, github.com/motiond, reversed).
    static let posture = Object(path: main.path, interface: "io.github.motiond.Posture")
    /// motiond's own interface on the main object: whether a person is at the machine, for a
    /// desktop's lock and dim policy (docs/dbus.md). In motiond's namespace as `posture`.
    static let presence = Object(path: main.path, interface: "io.github.motiond.Presence")
    /// Every served interface, upstream's first, in the order introspection lists them.
    static let objects = [main, compass, posture, presence]
    /// The served object paths, each once.
    static let paths = [main.path, compass.path]

    /// The introspection of the object at `path`: upstream's, written from the property and method
    /// tables (so that what is announced is what is served), in upstream's order, with the standard
    /// interfaces; motiond's own interfaces follow upstream's.
    static func introspection(of path: String) -> String {
        let defaults = Properties()
        let interfaces = objects.filter { $0.path == path }.map { object in
            let declared = properties.filter { $0.object == object }.map { property in
                #"<property type="\#(property.value(defaults).signature)" name="\#(property.name)" access="read"/>"#
            }
            let claims = methods.filter { $0.interface == object.interface }.map { #"<method name="\#($0.name)"/>"# }
            return """
                  <interface name="\(object.interface)">
                \((declared + claims).map { "    " + $0 }.joined(separator: "\n"))
                  </interface>
                """
        }
        let children = path == main.path ? #"<node name="Compass"/>"# : ""
        return """
        <!DOCTYPE node PUBLIC "-//freedesktop//DTD D-BUS Object Introspection 1.0//EN"
        "http://www.freedesktop.org/standards/dbus/1.0/introspect.dtd">
        <node>
          <interface name="org.freedesktop.DBus.Properties">
            <method name="Get">
              <arg type="s" name="interface_name" direction="in"/>
              <arg type="s" name="property_name" direction="in"/>
              <arg type="v" name="value" direction="out"/>
            </method>
            <method name="GetAll">
              <arg type="s" name="interface_name" direction="in"/>
              <arg type="a{sv}" name="properties" direction="out"/>
            </method>
            <method name="Set">
              <arg type="s" name="interface_name" direction="in"/>
              <arg type="s" name="property_name" direction="in"/>
              <arg type="v" name="value" direction="in"/>
            </method>
            <signal name="PropertiesChanged">
              <arg type="s" name="interface_name"/>
              <arg type="a{sv}" name="changed_properties"/>
              <arg type="as" name="invalidated_properties"/>
            </signal>
          </interface>
          <interface name="org.freedesktop.DBus.Introspectable">
            <method name="Introspect">
              <arg type="s" name="xml_data" direction="out"/>
            </method>
          </interface>
          <interface name="org.freedesktop.DBus.Peer">
            <method name="Ping"/>
            <method name="GetMachineId">
              <arg type="s" name="machine_uuid" direction="out"/>
            </method>
          </interface>
        \(interfaces.joined(separator: "\n"))
          \(children)
        </node>
        """
    }

    /// A property's value on the wire.
    enum Value: Equatable {
        case boolean(Bool), string(String), double(Double)

        /// Its D-Bus type.
        var signature: String {
            switch self {
            case .boolean: "b"
            case .string: "s"
            case .double: "d"
            }
        }
    }

    /// A property: its object, its name, the sensor whose claimants are told of its changes (`nil`:
    /// everyone), and its value.
    struct Property: Sendable {
        var object: Object
        var name: String
        var sensor: ClaimBook.Sensor?
        var value: @Sendable (Properties) -> Value

        init(_ object: Object, _ name: String, _ sensor: ClaimBook.Sensor?, _ value: @escaping @Sendable (Properties) -> Value) {
            (self.object, self.name, self.sensor, self.value) = (object, name, sensor, value)
        }
    }

    /// Every property, in upstream's order.
    static let properties: [Property] = [
        Property(main, "HasAccelerometer", nil, { .boolean($0.hasAccelerometer) }),
        Property(main, "AccelerometerOrientation", .accelerometer, { .string($0.accelerometerOrientation) }),
        Property(main, "AccelerometerTilt", .accelerometer, { .string($0.accelerometerTilt) }),
        Property(main, "HasAmbientLight", nil, { .boolean($0.hasAmbientLight) }),
        Property(main, "LightLevelUnit", .light, { .string($0.lightLevelUnit) }),
        Property(main, "LightLevel", .light, { .double($0.lightLevel) }),
        Property(main, "HasProximity", nil, { .boolean($0.hasProximity) }),
        Property(main, "ProximityNear", .proximity, { .boolean($0.proximityNear) }),
        Property(compass, "HasCompass", nil, { .boolean($0.hasCompass) }),
        Property(compass, "CompassHeading", .compass, { .double($0.compassHeading) }),
        // motiond's own.
        Property(posture, "HasPosture", nil, { .boolean($0.hasPosture) }),
        Property(posture, "Posture", .posture, { .string($0.posture) }),
        Property(posture, "HingeAngle", .posture, { .double($0.hingeAngle) }),
        Property(presence, "HasPresence", nil, { .boolean($0.hasPresence) }),
        Property(presence, "Presence", .presence, { .string($0.presence) }),
        Property(presence, "HasAttention", .presence, { .boolean($0.hasAttention) }),
        Property(presence, "Attention", .presence, { .string($0.attention) }),
        Property(presence, "PresenceDistance", .presence, { .double($0.presenceDistance) }),
    ]

    /// A claim method: its name, interface, sensor, and whether it claims or releases.
    struct Method: Sendable {
        var name: String
        var interface: String
        var sensor: ClaimBook.Sensor
        var claims: Bool
    }

    /// The claim methods, in upstream's order (motiond's own last): a claim and a release per sensor.
    static let methods: [Method] = [
        (main, ClaimBook.Sensor.accelerometer, "Accelerometer"), (main, .light, "Light"), (main, .proximity, "Proximity"), (compass, .compass, "Compass"),
        (posture, .posture, "Posture"), (presence, .presence, "Presence"),
    ]
        .flatMap { object, sensor, name in
            [Method(name: "Claim" + name, interface: object.interface, sensor: sensor, claims: true),
             Method(name: "Release" + name, interface: object.interface, sensor: sensor, claims: false)]
        }
}
