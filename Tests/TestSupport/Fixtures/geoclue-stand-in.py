#!/usr/bin/python3
"""A stand-in for GeoClue 2 on the bus at $DBUS_SYSTEM_BUS_ADDRESS: the part of its documented D-Bus
interface a client uses (org.freedesktop.GeoClue2.Manager.GetClient; the client's DesktopId,
RequestedAccuracyLevel, DistanceThreshold, Location and Active, Start, Stop and LocationUpdated; the
location's Latitude, Longitude, Accuracy and Altitude), giving the place on its command line
(latitude, longitude, altitude; an altitude of "unknown" is GeoClue's -DBL_MAX) once each client
starts, and a second place (--then LATITUDE,LONGITUDE) at SIGUSR1. A location is its client's child,
as GeoClue makes it (/org/freedesktop/GeoClue2/Client/1/Location/0). It also serves a decoy location
(…/Location/99) that it never announces. Each call, property set and location read is printed, one
line each, for the test to follow, and so are the bus's grant of its name ("Owned …") and its loss ("Lost …").

With --flood=N, SIGUSR2 makes it send each started client N LocationUpdated naming a location that
is not the client's (/org/freedesktop/GeoClue2/Location/K), then print "Flooded N".

With --answer-after=SECONDS, GetClient is answered that long after it came, as a GeoClue busy
starting its sources may answer.

With --refuse, Start answers org.freedesktop.DBus.Error.AccessDenied, as GeoClue does for a system
service its configuration does not list.
"""
import signal
import sys
import time

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
then = next((a.split("=", 1)[1] for a in sys.argv[1:] if a.startswith("--then=")), None)
flood = int(next((a.split("=", 1)[1] for a in sys.argv[1:] if a.startswith("--flood=")), "0"))
answer_after = float(next((a.split("=", 1)[1] for a in sys.argv[1:] if a.startswith("--answer-after=")), "0"))
places = {"99": (-45.0, 170.0, 0.0)}  # the decoy's

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
    # When, on CLOCK_MONOTONIC (the test's clock too): what came before a moment the test marks.
    say("GetClient", clients[sender]["path"], "at", "%.6f" % time.monotonic(), "for", sender)
    answer = GLib.Variant("(o)", (clients[sender]["path"],))
    if answer_after > 0:
        GLib.timeout_add(int(answer_after * 1000), lambda: invocation.return_value(answer) or GLib.SOURCE_REMOVE)
    else:
        invocation.return_value(answer)


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
        announce(client, (latitude, longitude, altitude))
    else:
        client["Active"] = False


def announce(client, place):
    """A new location object under the client, and LocationUpdated for it."""
    number = str(len(locations))
    places[number] = place
    location = "%s/Location/%s" % (client["path"], number)
    bus.register_object(location, LOCATION, None, location_get, None)
    locations.append(location)
    old, client["Location"] = client["Location"], location
    bus.emit_signal(None, client["path"], "org.freedesktop.GeoClue2.Client", "LocationUpdated", GLib.Variant("(oo)", (old, location)))


def client_get(connection, sender, path, interface, name):
    value = client_of(path)[name]
    kind = {"Location": "o", "DesktopId": "s", "Active": "b"}.get(name, "u")
    return GLib.Variant(kind, value)


def client_set(connection, sender, path, interface, name, value):
    client_of(path)[name] = value.unpack()
    say("Set", name, value.unpack())
    return True


def location_get(connection, sender, path, interface, name):
    if name == "Latitude":
        say("Read", path)
    lat, lon, alt = places[path.rsplit("/", 1)[1]]
    values = {"Latitude": lat, "Longitude": lon, "Accuracy": 5000.0, "Altitude": alt}
    return GLib.Variant("s", "stand-in") if name == "Description" else GLib.Variant("d", values[name])


def next_place():
    lat, lon = (float(v) for v in then.split(","))
    for client in clients.values():
        if client["Active"]:
            announce(client, (lat, lon, 0.0))
    return GLib.SOURCE_REMOVE


def send_flood():
    for client in clients.values():
        if client["Active"]:
            for k in range(flood):
                bus.emit_signal(None, client["path"], "org.freedesktop.GeoClue2.Client", "LocationUpdated",
                                GLib.Variant("(oo)", (client["Location"], "/org/freedesktop/GeoClue2/Location/%d" % k)))
    bus.flush_sync(None)
    say("Flooded", flood)
    return GLib.SOURCE_REMOVE


bus.register_object("/org/freedesktop/GeoClue2/Manager", MANAGER, manager_call, None, None)
bus.register_object("/org/freedesktop/GeoClue2/Client/1/Location/99", LOCATION, None, location_get, None)
# A parent may hand its blocked signals down (the test's does).
signal.pthread_sigmask(signal.SIG_UNBLOCK, [signal.SIGUSR1, signal.SIGUSR2])
GLib.unix_signal_add(GLib.PRIORITY_DEFAULT, signal.SIGUSR1, lambda: GLib.idle_add(next_place) and True)
GLib.unix_signal_add(GLib.PRIORITY_DEFAULT, signal.SIGUSR2, lambda: GLib.idle_add(send_flood) and True)
# The name's grant (and loss) printed: the event a test waits for before it starts motiond, and, lost,
# why motiond found no GeoClue.
Gio.bus_own_name_on_connection(bus, "org.freedesktop.GeoClue2", Gio.BusNameOwnerFlags.NONE,
                               lambda connection, name: say("Owned", name), lambda connection, name: say("Lost", name))
GLib.MainLoop().run()
