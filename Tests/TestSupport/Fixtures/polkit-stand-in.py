#!/usr/bin/python3
"""A stand-in for polkit's authority on the bus at $DBUS_SYSTEM_BUS_ADDRESS: the one method a service
calls to check a caller, org.freedesktop.PolicyKit1.Authority.CheckAuthorization(subject (sa{sv}),
action_id s, details a{ss}, flags u, cancellation_id s) -> (is_authorized b, is_challenge b,
details a{ss}), as polkit documents it (polkit(8), the Authority interface). It refuses every check
(--allow: grants every one) and prints one line per check, "Check ACTION KIND NAME flags=FLAGS", for
the test to follow, and "Owned" once the bus gave it its name.
"""
import sys

from gi.repository import Gio, GLib

NODE = Gio.DBusNodeInfo.new_for_xml("""
<node>
  <interface name="org.freedesktop.PolicyKit1.Authority">
    <method name="CheckAuthorization">
      <arg name="subject" type="(sa{sv})" direction="in"/>
      <arg name="action_id" type="s" direction="in"/>
      <arg name="details" type="a{ss}" direction="in"/>
      <arg name="flags" type="u" direction="in"/>
      <arg name="cancellation_id" type="s" direction="in"/>
      <arg name="result" type="(bba{ss})" direction="out"/>
    </method>
  </interface>
</node>
""")
allow = "--allow" in sys.argv


def called(connection, sender, path, interface, method, parameters, invocation):
    (kind, subject), action, _details, flags, _cancellation = parameters.unpack()
    print(f"Check {action} {kind} {subject.get('name', '?')} flags={flags}", flush=True)
    invocation.return_value(GLib.Variant("((bba{ss}))", ((allow, False, {}),)))


def acquired(connection, name):
    print("Owned", flush=True)


bus = Gio.bus_get_sync(Gio.BusType.SYSTEM, None)
bus.register_object("/org/freedesktop/PolicyKit1/Authority", NODE.interfaces[0], called, None, None)
Gio.bus_own_name_on_connection(bus, "org.freedesktop.PolicyKit1", Gio.BusNameOwnerFlags.NONE, acquired, None)
GLib.MainLoop().run()
