#!/usr/bin/python3
"""A stand-in for logind on the bus at $DBUS_SYSTEM_BUS_ADDRESS: the part of
org.freedesktop.login1.Manager (org.freedesktop.login1(5)) a sleep delay lock uses. Inhibit(what,
who, why, mode) -> h answers as systemd's logind does (src/login/logind-inhibit.c,
inhibitor_create_fifo): the caller gets the write end of a pipe, the stand-in keeps the read end and
sees the lock let go when it hangs up (the last copy of the write end closed). PrepareForSleep(true)
is emitted at SIGUSR1 and PrepareForSleep(false) at SIGUSR2, from the connection that owns the name,
as logind's are.

Each event is printed, one line each, with the time on CLOCK_MONOTONIC (the test's clock too):
  Owned org.freedesktop.login1
  Inhibit N WHAT WHO MODE at T for SENDER      (the lock N asked for; WHY is left out: it has spaces)
  Released N at T
  PrepareForSleep true|false at T

With --silent, Inhibit is never answered (the call is kept, so that nothing answers it for the
stand-in): a logind that hangs.
"""
import os
import sys
import signal
import time

from gi.repository import Gio, GLib

NODE = Gio.DBusNodeInfo.new_for_xml("""
<node>
  <interface name="org.freedesktop.login1.Manager">
    <method name="Inhibit">
      <arg name="what" type="s" direction="in"/>
      <arg name="who" type="s" direction="in"/>
      <arg name="why" type="s" direction="in"/>
      <arg name="mode" type="s" direction="in"/>
      <arg name="fd" type="h" direction="out"/>
    </method>
    <signal name="PrepareForSleep"><arg name="start" type="b"/></signal>
  </interface>
</node>
""")
MANAGER = NODE.lookup_interface("org.freedesktop.login1.Manager")

silent = "--silent" in sys.argv
bus = Gio.bus_get_sync(Gio.BusType.SYSTEM, None)
held = []  # calls never answered (--silent)
locks = 0


def say(*words):
    print(*words, flush=True)


def now():
    return "%.6f" % time.monotonic()


def manager_call(connection, sender, path, interface, method, parameters, invocation):
    global locks
    what, who, why, mode = parameters.unpack()
    locks += 1
    number = locks
    say("Inhibit", number, what, who, mode, "at", now(), "for", sender)
    if silent:
        held.append(invocation)
        return
    reader, writer = os.pipe2(os.O_CLOEXEC | os.O_NONBLOCK)

    def released(fd, condition):
        say("Released", number, "at", now())
        os.close(fd)
        return GLib.SOURCE_REMOVE

    # Events 0, as logind asks sd-event: only the hang-up (and an error) wake it.
    GLib.unix_fd_add_full(GLib.PRIORITY_DEFAULT, reader, GLib.IOCondition.HUP | GLib.IOCondition.ERR, released)
    fds = Gio.UnixFDList.new_from_array([writer])  # owns the write end from here, and closes it once sent
    invocation.return_value_with_unix_fd_list(GLib.Variant("(h)", (0,)), fds)


def emit(start):
    bus.emit_signal(None, "/org/freedesktop/login1", "org.freedesktop.login1.Manager", "PrepareForSleep", GLib.Variant("(b)", (start,)))
    bus.flush_sync(None)
    say("PrepareForSleep", "true" if start else "false", "at", now())
    return GLib.SOURCE_REMOVE


bus.register_object("/org/freedesktop/login1", MANAGER, manager_call, None, None)
# A parent may hand its blocked signals down (the test's does).
signal.pthread_sigmask(signal.SIG_UNBLOCK, [signal.SIGUSR1, signal.SIGUSR2])
GLib.unix_signal_add(GLib.PRIORITY_DEFAULT, signal.SIGUSR1, lambda: GLib.idle_add(emit, True) and True)
GLib.unix_signal_add(GLib.PRIORITY_DEFAULT, signal.SIGUSR2, lambda: GLib.idle_add(emit, False) and True)
Gio.bus_own_name_on_connection(bus, "org.freedesktop.login1", Gio.BusNameOwnerFlags.NONE,
                               lambda connection, name: say("Owned", name), lambda connection, name: say("Lost", name))
GLib.MainLoop().run()
