#!/usr/bin/python3
"""A stand-in for GeoClue 2 on the bus at $DBUS_SYSTEM_BUS_ADDRESS: the part of its documented D-Bus
interface a client uses (org.freedesktop.GeoClue2.Manager.GetClient; the client's DesktopId,
RequestedAccuracyLevel, DistanceThreshold, Location and Active, Start, Stop and LocationUpdated; the
location's Latitude, Longitude, Accuracy and Altitude), giving the place on its command line
(latitude, longitude, altitude; an altitude of "unknown" is GeoClue's -DBL_MAX) once each client
starts. Each call and property set is printed, one line each, for the test to follow.

With --refuse, Start answers org.freedesktop.DBus.Error.AccessDenied, as GeoClue does for a system
service its configuration does not list.
"""
import sys

from gi.repository import Gio, GLib

NODE = Gio.DBusNodeInfo.new_for_xml("""
<node>
  <interface name="org.freedesktop.GeoClue2.Manager">
    <method name="GetClient"><arg name="client" type="o" direction="out"/></method>
  </interface>
  <interface name="org.freedesktop.GeoClue2.Client">
    <property name="Location" type="o" access="read"/>
    <property name="DistanceThreshold" type="u" access="readwrite"/>
    <property name="TimeThreshold" type="u" access="readwrite"/>
    <property name="DesktopId" type="s" access="readwrite"/>
    <property name="RequestedAccuracyLevel" type="u" access="readwrite"/>
    <property name="Active" type="b" access="read"/>
    <method name="Start"/>
    <method name="Stop"/>
    <signal name="LocationUpdated"><arg name="old" type="o"/><arg name="new" type="o"/></signal>
  </interface>
  <interface name="org.freedesktop.GeoClue2.Location">
    <property name="Latitude" type="d" access="read"/>
    <property name="Longitude" type="d" access="read"/>
    <property name="Accuracy" type="d" access="read"/>
    <property name="Altitude" type="d" access="read"/>
    <property name="Description" type="s" access="read"/>
  </interface>
</node>
""")
MANAGER, CLIENT, LOCATION = (NODE.lookup_interface(name) for name in (
    "org.freedesktop.GeoClue2.Manager", "org.freedesktop.GeoClue2.Client", "org.freedesktop.GeoClue2.Location"))

arguments = [a for a in sys.argv[1:] if not a.startswith("--")]
refuse = "--refuse" in sys.argv
latitude, longitude = float(arguments[0]), float(arguments[1])
altitude = -sys.float_info.max if arguments[2] == "unknown" else float(arguments[2])

bus = Gio.bus_get_sync(Gio.BusType.SYSTEM, None)
clients = {}  # sender -> its client's path and properties
locations = []


def say(*words):
    print(*words, flush=True)


def manager_call(connection, sender, path, interface, method, parameters, invocation):
    if sender not in clients:
        client = "/org/freedesktop/GeoClue2/Client/%d" % (len(clients) + 1)
        clients[sender] = {"path": client, "DesktopId": "", "RequestedAccuracyLevel": 0, "DistanceThreshold": 0,
                           "TimeThreshold": 0, "Active": False, "Location": "/"}
        connection.register_object(client, CLIENT, client_call, client_get, client_set)
    say("GetClient", clients[sender]["path"])
    invocation.return_value(GLib.Variant("(o)", (clients[sender]["path"],)))


def client_of(path):
    return next(c for c in clients.values() if c["path"] == path)


def client_call(connection, sender, path, interface, method, parameters, invocation):
    client = client_of(path)
    say(method, client["DesktopId"], client["RequestedAccuracyLevel"], client["DistanceThreshold"])
    if method == "Start" and refuse:
        invocation.return_dbus_error("org.freedesktop.DBus.Error.AccessDenied", "'motiond' disallowed, no agent for UID 0")
        return
    invocation.return_value(None)
    if method == "Start":
        client["Active"] = True
        location = "/org/freedesktop/GeoClue2/Location/%d" % (len(locations) + 1)
        connection.register_object(location, LOCATION, None, location_get, None)
        locations.append(location)
        old, client["Location"] = client["Location"], location
        connection.emit_signal(None, path, "org.freedesktop.GeoClue2.Client", "LocationUpdated",
                               GLib.Variant("(oo)", (old, location)))
    else:
        client["Active"] = False


def client_get(connection, sender, path, interface, name):
    value = client_of(path)[name]
    kind = {"Location": "o", "DesktopId": "s", "Active": "b"}.get(name, "u")
    return GLib.Variant(kind, value)


def client_set(connection, sender, path, interface, name, value):
    client_of(path)[name] = value.unpack()
    say("Set", name, value.unpack())
    return True


def location_get(connection, sender, path, interface, name):
    values = {"Latitude": latitude, "Longitude": longitude, "Accuracy": 5000.0, "Altitude": altitude}
    return GLib.Variant("s", "stand-in") if name == "Description" else GLib.Variant("d", values[name])


bus.register_object("/org/freedesktop/GeoClue2/Manager", MANAGER, manager_call, None, None)
Gio.bus_own_name_on_connection(bus, "org.freedesktop.GeoClue2", Gio.BusNameOwnerFlags.NONE, None, None)
GLib.MainLoop().run()
