# motiond: build and install (README.md, docs/security.md).
#
#   make                      build the release binary, motiond, which is also motionctl by that name (Swift runtime
#                             linked in: it runs without a Swift toolchain)
#   sudo make install         install, create the users, reload systemd and udev, start the socket
#   sudo make uninstall       remove it all again (the users and the saved calibration stay)
#   make deb                  the Debian package, in dist/ (the package first: README.md's install section)
#
# PREFIX (default /usr/local) and DESTDIR work as usual; with DESTDIR set, nothing outside it is
# touched (no users, no reloads): that is for packagers. BUILD_DIR names the binaries to install
# (default: the release build; NO_BUILD=1 installs what is there without building).

PREFIX      ?= /usr/local
DESTDIR     ?=
SYSCONFDIR  ?= /etc
BINDIR      ?= $(PREFIX)/bin
SBINDIR     ?= $(PREFIX)/sbin
MANDIR      ?= $(PREFIX)/share/man
DOCDIR      ?= $(PREFIX)/share/doc/motiond
UNITDIR     ?= $(PREFIX)/lib/systemd/system
UDEVRULESDIR ?= $(PREFIX)/lib/udev/rules.d
SYSUSERSDIR ?= $(PREFIX)/lib/sysusers.d
# Read by dbus-daemon and polkitd from these places only, whatever PREFIX is.
DBUSPOLICYDIR ?= /usr/share/dbus-1/system.d
POLKITACTIONDIR ?= /usr/share/polkit-1/actions
DATADIR     ?= $(PREFIX)/share/motiond
BUILD_DIR   ?= .build/release
# Full RELRO (-z now), as Debian's hardening asks of every binary. lld, the relative relocations packed
# (DT_RELR: glibc 2.36) and no symbol exported (debian/motiond.map): 26.46 -> 22.90 MB stripped (issue 63).
SWIFT_BUILD_FLAGS ?= -c release --static-swift-stdlib -Xlinker -z -Xlinker now \
	-Xswiftc -use-ld=lld -Xlinker -z -Xlinker pack-relative-relocs -Xlinker --version-script=$(CURDIR)/debian/motiond.map

# One executable: motionctl is motiond called by that name (a link to it), so the package carries the
# Swift runtime once (issue 63).
BINARIES = motiond
LINKS = motionctl
DOCS = docs/protocol.md docs/client.md docs/recording.md docs/frames.md docs/security.md docs/dbus.md docs/fleet.md docs/python.md \
       docs/activity.md docs/games.md docs/view.md docs/fusion.md
# `motionctl view`'s page, which motionctl finds at ../share/motiond/view beside itself.
VIEW = share/view/index.html share/view/view.js share/view/view.css

.PHONY: all build install install-files uninstall switch-to-motiond switch-to-iio-sensor-proxy deb

all: build

build:
	swift build $(SWIFT_BUILD_FLAGS) --product motiond

install: $(if $(NO_BUILD),,build) install-files
ifeq ($(DESTDIR),)
	systemd-sysusers $(SYSUSERSDIR)/motiond.conf
	systemctl daemon-reload
	udevadm control --reload
	udevadm trigger --action=add --subsystem-match=iio
	systemctl enable --now motiond.socket
	@echo "motiond installed. Let a user read motion data: sudo usermod -aG motion USER (then log in again)."
endif

install-files:
	install -d $(DESTDIR)$(BINDIR)
	# .eh_frame (3.75 MB) stays: nothing in motiond unwinds (no C++ exception, no pthread_exit) and crashes
	# unwind by frame pointers, but binutils 2.40's objcopy -R .eh_frame drops this lld binary's
	# PT_GNU_RELRO (full RELRO lost) and llvm-objcopy frees no bytes; only the link could leave it out (issue 63).
	for b in $(BINARIES); do install -m 0755 $(BUILD_DIR)/$$b $(DESTDIR)$(BINDIR)/$$b; done
	for l in $(LINKS); do ln -sf motiond $(DESTDIR)$(BINDIR)/$$l; done
	install -D -m 0755 scripts/motiond-sensorproxy $(DESTDIR)$(SBINDIR)/motiond-sensorproxy
	install -d $(DESTDIR)$(UNITDIR)
	sed 's|/usr/local/bin/motiond|$(BINDIR)/motiond|' systemd/motiond.service > $(DESTDIR)$(UNITDIR)/motiond.service
	install -m 0644 systemd/motiond.socket $(DESTDIR)$(UNITDIR)/motiond.socket
	chmod 0644 $(DESTDIR)$(UNITDIR)/motiond.service
	install -D -m 0644 udev-rules/70-motiond.rules $(DESTDIR)$(UDEVRULESDIR)/70-motiond.rules
	install -D -m 0644 systemd/motiond.sysusers $(DESTDIR)$(SYSUSERSDIR)/motiond.conf
	# The sample configuration never replaces one that is there.
	install -d $(DESTDIR)$(SYSCONFDIR)/motiond
	test -e $(DESTDIR)$(SYSCONFDIR)/motiond/motiond.conf || install -m 0644 systemd/motiond.conf $(DESTDIR)$(SYSCONFDIR)/motiond/motiond.conf
	install -D -m 0644 docs/motiond.8 $(DESTDIR)$(MANDIR)/man8/motiond.8
	install -D -m 0644 docs/motiond.conf.5 $(DESTDIR)$(MANDIR)/man5/motiond.conf.5
	install -D -m 0644 docs/motionctl.1 $(DESTDIR)$(MANDIR)/man1/motionctl.1
	install -D -m 0644 docs/motiond-sensorproxy.8 $(DESTDIR)$(MANDIR)/man8/motiond-sensorproxy.8
	install -d $(DESTDIR)$(DOCDIR)
	install -m 0644 $(DOCS) Recordings/README.md $(DESTDIR)$(DOCDIR)/
	install -m 0644 Recordings/broad-04-slow-rotation.motionrec.gz $(DESTDIR)$(DOCDIR)/
	# iio-sensor-proxy's D-Bus interface: the bus policy and polkit action are inert until the
	# drop-in is switched on (switch-to-motiond).
	install -D -m 0644 systemd/motiond-dbus.conf $(DESTDIR)$(DBUSPOLICYDIR)/motiond.conf
	install -D -m 0644 systemd/net.hadess.SensorProxy.motiond.policy $(DESTDIR)$(POLKITACTIONDIR)/net.hadess.SensorProxy.motiond.policy
	install -d $(DESTDIR)$(DATADIR)
	sed 's|/usr/local/bin/motiond|$(BINDIR)/motiond|' systemd/motiond-sensorproxy.conf > $(DESTDIR)$(DATADIR)/sensorproxy.conf
	chmod 0644 $(DESTDIR)$(DATADIR)/sensorproxy.conf
	# IP sockets for the MQTT bridge, the metrics and network_sensors (docs/fleet.md): inert until linked in.
	sed 's|/usr/local/share/motiond|$(DATADIR)|' systemd/motiond-network.conf > $(DESTDIR)$(DATADIR)/network.conf
	chmod 0644 $(DESTDIR)$(DATADIR)/network.conf
	install -d $(DESTDIR)$(DATADIR)/view
	install -m 0644 $(VIEW) $(DESTDIR)$(DATADIR)/view/

# motiond takes iio-sensor-proxy's place on the bus (docs/dbus.md); the second target undoes it.
switch-to-motiond:
	scripts/motiond-sensorproxy on

switch-to-iio-sensor-proxy:
	scripts/motiond-sensorproxy off

# The Debian package, left in dist/ (scripts/make-deb).
deb:
	scripts/make-deb

uninstall:
ifeq ($(DESTDIR),)
	-systemctl disable --now motiond.socket motiond.service
endif
	rm -f $(addprefix $(DESTDIR)$(BINDIR)/,$(BINARIES) $(LINKS)) $(DESTDIR)$(SBINDIR)/motiond-sensorproxy
	rm -f $(DESTDIR)$(UNITDIR)/motiond.service $(DESTDIR)$(UNITDIR)/motiond.socket
	rm -f $(DESTDIR)$(UDEVRULESDIR)/70-motiond.rules $(DESTDIR)$(SYSUSERSDIR)/motiond.conf
	rm -f $(DESTDIR)$(MANDIR)/man8/motiond.8 $(DESTDIR)$(MANDIR)/man5/motiond.conf.5 $(DESTDIR)$(MANDIR)/man1/motionctl.1
	rm -f $(DESTDIR)$(MANDIR)/man8/motiond-sensorproxy.8
	rm -rf $(DESTDIR)$(DOCDIR)
	rm -f $(DESTDIR)$(DBUSPOLICYDIR)/motiond.conf $(DESTDIR)$(POLKITACTIONDIR)/net.hadess.SensorProxy.motiond.policy
	rm -f $(DESTDIR)$(DATADIR)/sensorproxy.conf $(DESTDIR)$(DATADIR)/network.conf
	rm -rf $(DESTDIR)$(DATADIR)/view
	-rmdir $(DESTDIR)$(DATADIR) 2>/dev/null
	# The configuration is removed only if it is still the sample.
	-cmp -s systemd/motiond.conf $(DESTDIR)$(SYSCONFDIR)/motiond/motiond.conf && rm -f $(DESTDIR)$(SYSCONFDIR)/motiond/motiond.conf
	-rmdir $(DESTDIR)$(SYSCONFDIR)/motiond 2>/dev/null
ifeq ($(DESTDIR),)
	systemctl daemon-reload
	udevadm control --reload
endif
