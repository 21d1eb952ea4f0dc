/// iio-sensor-proxy's D-Bus interface as data (docs/dbus.md): its name, objects, properties and
/// claim methods, and the introspection written from them, so that what is announced is what is served.
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
    }

    /// One served object: its path and its interface.
    struct Object: Sendable {
        var path: String
        var interface: String
    }

    static let main = Object(path: "/net/hadess/SensorProxy", interface: "net.hadess.SensorProxy")
    static let compass = Object(path: "/net/hadess/SensorProxy/Compass", interface: "net.hadess.SensorProxy.Compass")
    static let objects = [main, compass]

    /// Upstream's introspection of `object`, written from the property and method tables (so that
    /// what is announced is what is served), in upstream's order, with the standard interfaces.
    static func introspection(of object: Object) -> String {
        let defaults = Properties()
        let declared = properties.filter { $0.object.path == object.path }.map { property in
            #"<property type="\#(property.value(defaults).signature)" name="\#(property.name)" access="read"/>"#
        }
        let claims = methods.filter { $0.interface == object.interface }.map { #"<method name="\#($0.name)"/>"# }
        let children = object.path == main.path ? #"<node name="Compass"/>"# : ""
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
          <interface name="\(object.interface)">
        \((declared + claims).map { "    " + $0 }.joined(separator: "\n"))
          </interface>
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
    ]

    /// A claim method: its name, interface, sensor, and whether it claims or releases.
    struct Method: Sendable {
        var name: String
        var interface: String
        var sensor: ClaimBook.Sensor
        var claims: Bool
    }

    /// The claim methods, in upstream's order: a claim and a release per sensor.
    static let methods: [Method] = [(main, ClaimBook.Sensor.accelerometer, "Accelerometer"), (main, .light, "Light"), (main, .proximity, "Proximity"), (compass, .compass, "Compass")]
        .flatMap { object, sensor, name in
            [Method(name: "Claim" + name, interface: object.interface, sensor: sensor, claims: true),
             Method(name: "Release" + name, interface: object.interface, sensor: sensor, claims: false)]
        }
}
