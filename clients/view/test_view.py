"""`motionctl view` in a real browser: Debian's chromium, headless, driven over the DevTools protocol,
against `motionctl view` on a motiond that replays the bundled recording (README.md's test command).

Expects `.build/debug/motiond` and `.build/debug/motionctl` (`swift build --build-tests` builds them);
needs `chromium` and `python3-websocket` (scripts/install-debian-packages --tests).
"""

import base64
import json
import re
import math
import os
import pathlib
import shutil
import select
import signal
import socket
import struct
import subprocess
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
import zlib

import random

import pytest
import websocket

ROOT = pathlib.Path(__file__).resolve().parents[2]
RECORDING = ROOT / "Recordings" / "broad-04-slow-rotation.motionrec.gz"
BUILD = ROOT / ".build" / "debug"


def binary(name):
    path = BUILD / name
    if not path.exists():
        pytest.fail(f"no {name} at {path}: run `swift build --build-tests` first")
    return str(path)


def wait_for(what, condition, timeout=20.0):
    """Polls `condition` until it gives something true; fails naming `what` at the deadline."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout} s waiting for {what}")
        time.sleep(0.05)


# ---- motiond, restartable, and its motion read independently -----------------------------------


class Daemon:
    """`motiond --replay … --loop` on a socket of its own; `stop` and `start` again on the same path."""

    def __init__(self, directory, recording=RECORDING, name="motiond"):
        self.directory = directory
        self.recording = recording
        self.name = name
        self.socket = os.path.join(directory, name + ".sock")
        self.process = None

    def start(self):
        log = open(os.path.join(self.directory, self.name + ".log"), "a")
        self.process = subprocess.Popen(
            [binary("motiond"), "--replay", str(self.recording), "--loop", "--socket", self.socket,
             "--state-directory", os.path.join(self.directory, self.name + "-state"), "--log-level", "warning"],
            stderr=log)
        wait_for("motiond's socket", self.accepts, 10)

    def accepts(self):
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            try:
                s.connect(self.socket)
                return True
            except OSError:
                return False

    def stop(self):
        self.process.send_signal(signal.SIGTERM)
        self.process.wait(10)


class MotionLog:
    """Every `MOTION` of motiond's (each sample: the interval is the shortest), by timestamp, read
    on a connection of the test's own: what the page's drawn attitude is checked against."""

    def __init__(self, path):
        self.samples = {}
        self.lock = threading.Lock()
        self.connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.connection.connect(path)
        self.connection.sendall(b'{"class":"WATCH","streams":["motion"],"interval":0.001}\n')
        threading.Thread(target=self.read, daemon=True).start()

    def read(self):
        pending = b""
        while True:
            try:
                data = self.connection.recv(1 << 16)
            except OSError:
                return
            if not data:
                return
            pending += data
            *lines, pending = pending.split(b"\n")
            for line in lines:
                message = json.loads(line)
                if message.get("class") == "MOTION":
                    q = message["attitude"]["quaternion"]
                    with self.lock:
                        self.samples[message["timestamp"]] = (q["w"], q["x"], q["y"], q["z"])

    def nearest(self, timestamp):
        with self.lock:
            if not self.samples:
                return None, None
            key = min(self.samples, key=lambda t: abs(t - timestamp))
            return key, self.samples[key]

    def close(self):
        self.connection.close()


def still_recording(path, seconds=20, rate=100.0):
    """A recording of a device lying still, face up: constant values and seeded Gaussian noise of the
    size BROAD trial 04's IMU shows in its first rest (seconds 2-27: accelerometer 0.004-0.0075 g,
    gyroscope 0.0016-0.0022 rad/s, magnetometer 0.7 µT, standard deviations), in the format of
    docs/recording.md."""
    noise = random.Random(4)
    header = {"format": "motiond-recording", "version": 1, "source": "a still device, made up by test_view.py",
              "devices": [{"device": "iio:device0", "name": "still", "kinds": ["accelerometer", "gyroscope", "magnetometer"],
                           "mode": "replayed", "rates": [rate], "mount_matrix": [1, 0, 0, 0, 1, 0, 0, 0, 1],
                           "mount_matrix_source": "recording", "channels": {}}]}
    with open(path, "w") as out:
        out.write(json.dumps(header) + "\n")
        for i in range(int(seconds * rate)):
            ns = 1_000_000_000 + round(i * 1e9 / rate)
            a = [-0.024 + noise.gauss(0, 0.0045), -0.035 + noise.gauss(0, 0.005), -1.005 + noise.gauss(0, 0.0075)]
            g = [noise.gauss(0, 0.0017), noise.gauss(0, 0.0016), noise.gauss(0, 0.0022)]
            m = [1.0 + noise.gauss(0, 0.7), 14.6 + noise.gauss(0, 0.7), -39.3 + noise.gauss(0, 0.7)]
            out.write("accelerometer %d %r %r %r\n" % (ns, *a))
            out.write("gyroscope %d %r %r %r\n" % (ns, *g))
            out.write("magnetometer %d %r %r %r\n" % (ns, *m))
    return path


class Status:
    """One connection to motiond that asks it `STATUS` (one connection throughout: a closed one takes
    motiond a moment to forget)."""

    def __init__(self, path):
        self.socket = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.socket.connect(path)
        self.pending = b""
        self.next_id = 100

    def clients(self):
        """The clients motiond counts."""
        self.next_id += 1
        self.socket.sendall(b'{"class":"STATUS","id":%d}\n' % self.next_id)
        while True:
            data = self.socket.recv(1 << 16)
            if not data:
                pytest.fail("motiond closed the connection before answering STATUS")
            self.pending += data
            *lines, self.pending = self.pending.split(b"\n")
            for line in lines:
                message = json.loads(line)
                if message.get("class") == "STATUS" and message.get("id") == self.next_id:
                    return message["clients"]

    def close(self):
        self.socket.close()


def degrees_between(a, b):
    dot = abs(sum(x * y for x, y in zip(a, b)))
    return math.degrees(2 * math.acos(min(1.0, dot)))


# ---- chromium over the DevTools protocol --------------------------------------------------------


class Browser:
    """Headless chromium and one page of it, spoken to over the DevTools protocol (a websocket)."""

    # What the test listens to: the console and exceptions, logged errors, requests, screenshots.
    domains = ("Runtime", "Log", "Network", "Page")

    def __init__(self, directory):
        self.profile = os.path.join(directory, "chromium")
        arguments = [
            shutil.which("chromium") or pytest.fail("no chromium: apt install chromium"),
            "--headless=new", "--remote-debugging-port=0", "--user-data-dir=" + self.profile,
            "--window-size=1400,1000", "--no-first-run", "--no-default-browser-check",
            "about:blank",
        ]
        if os.geteuid() == 0:
            arguments.insert(1, "--no-sandbox")  # chromium's sandbox refuses root
        self.log = open(os.path.join(directory, "chromium.log"), "w")
        self.process = subprocess.Popen(arguments, stdout=self.log, stderr=subprocess.STDOUT)
        port_file = os.path.join(self.profile, "DevToolsActivePort")
        wait_for("chromium's DevTools port", lambda: os.path.exists(port_file) and open(port_file).read().count("\n") >= 1, 30)
        port = int(open(port_file).read().split("\n")[0])
        targets = wait_for("chromium's page", lambda: [t for t in self.targets(port) if t["type"] == "page"], 10)
        self.socket = websocket.create_connection(targets[0]["webSocketDebuggerUrl"], suppress_origin=True, timeout=30)
        self.next_id = 0
        self.events = []
        for domain in self.domains:
            self.call(domain + ".enable")

    @staticmethod
    def targets(port):
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=5) as response:
                return json.load(response)
        except OSError:
            return []

    def call(self, method, **params):
        self.next_id += 1
        ident = self.next_id
        self.socket.send(json.dumps({"id": ident, "method": method, "params": params}))
        while True:
            message = json.loads(self.socket.recv())
            if message.get("id") == ident:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message.get("result", {})
            if "method" in message:
                self.events.append(message)

    def evaluate(self, expression):
        result = self.call("Runtime.evaluate", expression=expression, returnByValue=True)
        if "exceptionDetails" in result:
            raise RuntimeError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def state(self):
        return json.loads(self.evaluate("JSON.stringify(window.motionView || null)"))

    def errors(self):
        """The page's console errors, uncaught exceptions and logged errors so far."""
        self.call("Runtime.evaluate", expression="0")  # takes in the events sent meanwhile
        found = []
        for event in self.events:
            method, params = event["method"], event["params"]
            if method == "Runtime.consoleAPICalled" and params["type"] in ("error", "assert"):
                found.append(params)
            elif method == "Runtime.exceptionThrown":
                found.append(params)
            elif method == "Log.entryAdded" and params["entry"]["level"] == "error":
                found.append(params["entry"])
        return found

    def requested(self):
        self.call("Runtime.evaluate", expression="0")
        return [e["params"]["request"]["url"] for e in self.events if e["method"] == "Network.requestWillBeSent"]

    def screenshot(self, path):
        data = self.call("Page.captureScreenshot", format="png")["data"]
        png = base64.b64decode(data)
        pathlib.Path(path).write_bytes(png)
        return png

    def close(self):
        try:
            self.socket.close()
        finally:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
            self.log.close()


def png_pixels(png):
    """(width, height, rows of RGB(A) bytes) of an 8-bit, non-interlaced PNG: chromium's screenshots."""
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    position, idat, header = 8, b"", None
    while position < len(png):
        length, kind = struct.unpack(">I4s", png[position:position + 8])
        body = png[position + 8:position + 8 + length]
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        position += 12 + length
    width, height, depth, color, _, _, interlace = header
    assert depth == 8 and interlace == 0 and color in (2, 6)
    channels = 3 if color == 2 else 4
    stride = width * channels
    raw = zlib.decompress(idat)
    rows, previous = [], bytearray(stride)
    for y in range(height):
        kind = raw[y * (stride + 1)]
        row = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            left = row[i - channels] if i >= channels else 0
            up = previous[i]
            corner = previous[i - channels] if i >= channels else 0
            if kind == 1:
                row[i] = (row[i] + left) & 255
            elif kind == 2:
                row[i] = (row[i] + up) & 255
            elif kind == 3:
                row[i] = (row[i] + (left + up) // 2) & 255
            elif kind == 4:
                p = left + up - corner
                pa, pb, pc = abs(p - left), abs(p - up), abs(p - corner)
                row[i] = (row[i] + (left if pa <= pb and pa <= pc else up if pb <= pc else corner)) & 255
        rows.append(bytes(row))
        previous = row
    return width, height, channels, rows


def region(png, box):
    """The RGB colours of the pixels of `box` (x, y, width, height), every second pixel."""
    width, height, channels, rows = png_pixels(png)
    x0, y0, w, h = (int(v) for v in box)
    colours = []
    for y in range(y0, min(height, y0 + h), 2):
        row = rows[y]
        for x in range(x0, min(width, x0 + w), 2):
            colours.append(tuple(row[x * channels:x * channels + 3]))
    return colours


def printed_url(process):
    """The URL `motionctl view` prints first, within 10 s."""
    ready, _, _ = select.select([process.stdout], [], [], 10)
    url = process.stdout.readline().strip() if ready else ""
    if not re.fullmatch(r"http://127\.0\.0\.1:\d+/[0-9a-f]{32}/", url):
        process.kill()
        pytest.fail(f"motionctl view printed no URL (exit status {process.poll()}): {url!r}")
    return url


# ---- the fixtures: one motiond, one motionctl view, one browser for the whole file --------------


@pytest.fixture(scope="module")
def directory():
    with tempfile.TemporaryDirectory(prefix="motionctl-view-") as path:
        yield path


@pytest.fixture(scope="module")
def daemon(directory):
    daemon = Daemon(directory)
    daemon.start()
    yield daemon
    daemon.stop()


class View:
    """`motionctl view --no-open` on a daemon's socket, and the URL it printed."""

    def __init__(self, directory, daemon, name="motionctl"):
        self.log = open(os.path.join(directory, name + ".log"), "w")
        self.process = subprocess.Popen([binary("motionctl"), "view", "--no-open", "--socket", daemon.socket],
                                        stdout=subprocess.PIPE, stderr=self.log, text=True)
        self.url = printed_url(self.process)

    def close(self):
        self.process.terminate()
        self.process.wait(10)
        self.log.close()


def open_page(directory, url):
    browser = Browser(directory)
    browser.call("Page.navigate", url=url)
    wait_for("the page's state", lambda: browser.state())
    return browser


@pytest.fixture(scope="module")
def view(directory, daemon):
    """`motionctl view --no-open` on the daemon's socket, and the URL it printed."""
    view = View(directory, daemon)
    yield view.url
    view.close()


@pytest.fixture(scope="module")
def browser(directory, view):
    browser = open_page(directory, view)
    yield browser
    browser.close()


@pytest.fixture(scope="module")
def still_daemon(directory):
    """motiond replaying a device that lies still."""
    daemon = Daemon(directory, still_recording(os.path.join(directory, "still.motionrec")), "still")
    daemon.start()
    yield daemon
    daemon.stop()


@pytest.fixture(scope="module")
def still_view(directory, still_daemon):
    view = View(directory, still_daemon, "motionctl-still")
    yield view
    view.close()


@pytest.fixture(scope="module")
def still_browser(directory, still_view):
    # A profile of its own: two chromiums cannot share one.
    profile = os.path.join(directory, "still")
    os.makedirs(profile, exist_ok=True)
    browser = open_page(profile, still_view.url)
    yield browser
    browser.close()


@pytest.fixture(scope="module")
def motion_log(daemon):
    log = MotionLog(daemon.socket)
    yield log
    log.close()


# ---- the tests ----------------------------------------------------------------------------------


def test_the_page_loads_with_no_error_and_asks_only_the_loopback(browser):
    state = wait_for("a drawn attitude", lambda: (s := browser.state()) and s["frames"] > 10 and s)
    assert state["status"]["state"] == "connected", state["status"]
    assert browser.errors() == []
    urls = browser.requested()
    assert any(url.endswith("/events") for url in urls), urls
    assert {urllib.parse.urlsplit(url).hostname for url in urls} == {"127.0.0.1"}, urls


def test_the_model_follows_the_attitude(browser, motion_log, directory):
    wait_for("the test's own motion samples", lambda: motion_log.samples)
    def drawn_and_motionds():
        state = browser.state()
        timestamp, expected = motion_log.nearest(state["timestamp"])
        return timestamp is not None and abs(timestamp - state["timestamp"]) < 5e6 and (state["quaternion"], expected)

    worst = 0.0
    for _ in range(8):
        drawn, expected = wait_for("motiond's sample at the time the page draws", drawn_and_motionds)
        worst = max(worst, degrees_between(drawn, expected))
        time.sleep(0.3)
    assert worst < 3, f"the model is {worst:.1f}° off motiond's attitude"

    # Seen: the model's canvas has a picture, and it changes as the recording turns.
    box = browser.evaluate("(r => [r.x, r.y, r.width, r.height])(document.getElementById('model').getBoundingClientRect())")
    first = browser.screenshot(os.path.join(directory, "view-1.png"))
    before = browser.state()
    wait_for("the model to turn by 5°", lambda: degrees_between(browser.state()["quaternion"], before["quaternion"]) > 5, 30)
    second = browser.screenshot(os.path.join(directory, "view-2.png"))
    a, b = region(first, box), region(second, box)
    assert len(set(a)) > 20, "the model's canvas is blank"
    changed = sum(1 for p, q in zip(a, b) if p != q)
    assert changed > len(a) // 100, "the model looks the same after a turn"


def test_the_plots_advance(browser):
    before = browser.state()["plotsSamples"]
    wait_for("new samples on the plots", lambda: all(
        browser.state()["plotsSamples"][name] > before[name] + 20 for name in ("acceleration", "rotation", "magnetic")))


def test_a_stopped_motiond_is_said_and_the_values_dimmed(browser, daemon):
    # Stopped, not ended: its socket and the connection stay, and nothing comes.
    daemon.process.send_signal(signal.SIGSTOP)
    try:
        wait_for("the page to say motiond is not running", lambda: banner(browser)[0] == "banner bad")
        assert "motiond is not running" in banner(browser)[1] and daemon.socket in banner(browser)[1], banner(browser)
        assert browser.evaluate("getComputedStyle(document.querySelector('main')).opacity") != "1", "the old values look live"
        state = browser.state()
        assert state["stale"] and state["status"]["state"] == "silent", state
    finally:
        daemon.process.send_signal(signal.SIGCONT)
    wait_for("the page to say motiond is back", lambda: banner(browser)[0] == "banner ok" and browser.state()["status"]["state"] == "connected")
    assert browser.evaluate("getComputedStyle(document.querySelector('main')).opacity") == "1"


def banner(browser):
    """The banner's class and text."""
    return browser.evaluate("(b => [b.className, b.textContent])(document.getElementById('banner'))")


def test_a_restart_of_motiond_is_survived(browser, daemon, motion_log):
    daemon.stop()
    wait_for("the page to say motiond is gone", lambda: browser.state()["status"]["state"] != "connected")
    text = browser.evaluate("document.getElementById('banner').textContent")
    assert "motiond" in text and daemon.socket in text, text
    daemon.start()
    wait_for("the page to say motiond is back", lambda: browser.state()["status"]["state"] == "connected")
    before = browser.state()
    wait_for("values flowing again", lambda: (s := browser.state())["frames"] > before["frames"] + 10
             and s["plotsSamples"]["acceleration"] > before["plotsSamples"]["acceleration"] + 20)
    assert browser.errors() == []


def status(url, method="GET", headers=None):
    request = urllib.request.Request(url, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return response.status
    except urllib.error.HTTPError as error:
        return error.code
    except OSError:
        return None  # closed without an answer


def test_a_request_without_the_token_is_refused(view):
    parts = urllib.parse.urlsplit(view)
    root = f"http://127.0.0.1:{parts.port}/"
    token = parts.path.strip("/")
    for path in ("", "view.js", "view.css", "events", "nothing"):
        assert status(root + path) == 403, path
        assert status(root + "0" * 32 + "/" + path) == 403, path
        assert status(root + path + "?token=" + token) == 403, path  # only in the path
    assert status(root + token[:-1] + "/") == 403
    assert status(root + token.upper() + "/") == 403
    # The token is no cookie: browsers send cookies to every port of 127.0.0.1.
    assert status(root + "view.js", headers={"Cookie": f"motionctl-view-{parts.port}={token}"}) == 403
    # A page of another site rebound to 127.0.0.1 names its own host.
    assert status(view, headers={"Host": f"evil.example:{parts.port}"}) == 403
    assert status(view, headers={"Host": f"localhost:{parts.port}"}) == 200
    assert status(view) == 200
    assert status(view + "view.js") == 200
    assert status(view + "nothing") == 404
    assert status(view, method="POST") == 405


def test_what_a_peer_can_cost_is_bounded(view):
    parts = urllib.parse.urlsplit(view)
    # A head longer than the limit: the connection is closed, nothing is answered.
    with socket.create_connection((parts.hostname, parts.port), timeout=5) as s:
        try:
            s.sendall(b"GET /" + b"a" * 40000 + b" HTTP/1.1\r\n\r\n")
            assert s.recv(100) == b""
        except ConnectionResetError:
            pass
    # Many connections at once: those beyond the limit are closed at once, and the page still loads.
    held = [socket.create_connection((parts.hostname, parts.port), timeout=5) for _ in range(40)]
    try:
        closed = 0
        for s in held:
            s.settimeout(0.5)
            try:
                closed += s.recv(1) == b""
            except (socket.timeout, ConnectionResetError):
                pass
        assert closed >= 8
    finally:
        for s in held:
            s.close()
    wait_for("the page again", lambda: status(view) == 200, 5)


def test_connections_without_the_token_cannot_keep_the_page_out(view):
    parts = urllib.parse.urlsplit(view)
    # Far more bare connections than the limit, held open and saying nothing: at the limit the oldest
    # of them make room, so the page loads while they are held.
    held = [socket.create_connection((parts.hostname, parts.port), timeout=5) for _ in range(50)]
    try:
        assert status(view) == 200
        assert status(view + "view.js") == 200
    finally:
        for s in held:
            s.close()


def first_status(url):
    """The first `status` event of the page's event stream: how motionctl finds motiond."""
    with urllib.request.urlopen(url + "events", timeout=10) as response:
        assert response.headers["Content-Type"] == "text/event-stream"
        event = None
        for line in response:
            line = line.decode().rstrip("\n")
            if line.startswith("event: "):
                event = line[7:]
            elif line.startswith("data: ") and event == "status":
                return json.loads(line[6:])


@pytest.mark.parametrize("case", ["no daemon", "not in the group"])
def test_the_page_says_plainly_why_there_is_nothing_to_show(case, daemon, directory):
    command = [binary("motionctl"), "view", "--no-open", "--socket", daemon.socket]
    if case == "no daemon":
        command[-1] = os.path.join(directory, "nothing-here.sock")
    else:
        if os.geteuid() != 0:
            pytest.skip("needs root, to run motionctl as a user outside the socket's group")
        # `nobody` runs a copy of motionctl and of the page's files in a directory it may enter: the
        # build tree may be in one it may not (CI clones into a 0700 `mktemp -d`).
        public = tempfile.mkdtemp(prefix="motionctl-view-public-")
        os.chmod(public, 0o755)
        shutil.copy2(binary("motionctl"), os.path.join(public, "motionctl"))
        shutil.copytree(ROOT / "share" / "view", os.path.join(public, "view"))
        os.chmod(os.path.join(public, "view"), 0o755)
        command = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", os.path.join(public, "motionctl")] + command[1:] + [
            "--assets", os.path.join(public, "view")]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        url = printed_url(process)
        status = wait_for("a status saying why", lambda: (s := first_status(url)) and s["state"] != "connected" and s, 10)
    finally:
        process.terminate()
        process.wait(10)
        if case != "no daemon":
            shutil.rmtree(public, ignore_errors=True)
    if case == "no daemon":
        assert status["state"] == "absent" and "motiond is not running" in status["message"], status
    else:
        assert status["state"] == "denied" and "usermod -aG" in status["message"], status


def test_a_resting_device_costs_no_drawing(still_browser):
    browser = still_browser
    wait_for("the page to draw the device", lambda: browser.state()["frames"] > 0)
    # The fusion settles in its first seconds (the attitude moves by a degree as it converges).
    time.sleep(4)
    before, start = browser.state(), time.monotonic()
    time.sleep(6)
    after, seconds = browser.state(), time.monotonic() - start
    frames = (after["frames"] - before["frames"]) / seconds
    # motionctl sends a batch a second at rest, and each may scroll the plots: at most about one
    # drawing a second, and no 3D frame (before: 30 frames a second, one per batch).
    assert frames <= 0.2, f"{frames:.1f} 3D frames a second for a device at rest"
    paints = (after["paints"] - before["paints"]) / seconds
    assert paints <= 1.5, f"{paints:.1f} drawings a second for a device at rest"
    # Yet it is live: the samples still come and are plotted.
    assert after["plotsSamples"]["acceleration"] > before["plotsSamples"]["acceleration"] + 100
    assert not after["stale"]


def test_a_stopped_motionctl_view_is_said(still_browser, still_view):
    # motionctl view stopped: its connection to the page stays open, and nothing comes.
    still_view.process.send_signal(signal.SIGSTOP)
    try:
        wait_for("the page to say no data come", lambda: banner(still_browser)[0] == "banner bad")
        assert "no data" in banner(still_browser)[1], banner(still_browser)
        assert still_browser.state()["stale"]
    finally:
        still_view.process.send_signal(signal.SIGCONT)
    wait_for("the page to go on", lambda: banner(still_browser)[0] == "banner ok")
    assert not still_browser.state()["stale"]


def test_motiond_idles_while_no_page_is_open(directory):
    daemon = Daemon(directory, still_recording(os.path.join(directory, "idle.motionrec"), seconds=5), "idle")
    daemon.start()
    status = Status(daemon.socket)
    alone = status.clients()  # this connection, as motiond counts it
    view = View(directory, daemon, "motionctl-idle")
    try:
        # No page: motionctl view is no client of motiond's, whose sensors and fusion then rest.
        # (Absence takes watching for a while: two seconds, twice motionctl's retry interval.)
        deadline = time.monotonic() + 2
        while time.monotonic() < deadline:
            assert status.clients() == alone, "motionctl view watches motiond with no page open"
            time.sleep(0.2)
        # A page's event stream makes it one; the stream's end, no longer.
        with urllib.request.urlopen(view.url + "events", timeout=10) as stream:
            wait_for("motionctl view to watch motiond", lambda: status.clients() == alone + 1, 10)
            assert stream.status == 200
        wait_for("motionctl view to leave motiond", lambda: status.clients() == alone, 10)
    finally:
        status.close()
        view.close()
        daemon.stop()


def test_why_motiond_cannot_be_had_stays_said(directory):
    # No motiond: motionctl says so once (it repeats no unchanged state), and the page's own watchdog
    # for a silent motionctl view must not replace that with a vaguer guess.
    nobody = type("Nobody", (), {"socket": os.path.join(directory, "nobody-listens.sock")})()
    view = View(directory, nobody, "motionctl-nobody")
    profile = os.path.join(directory, "nobody")
    os.makedirs(profile, exist_ok=True)
    browser = open_page(profile, view.url)
    try:
        wait_for("the page to say motiond is not running", lambda: "no socket at" in banner(browser)[1])
        time.sleep(7)  # longer than the page's 5-s watchdog
        kind, text = banner(browser)
        assert kind == "banner bad" and "no socket at" in text and nobody.socket in text, text
    finally:
        browser.close()
        view.close()


def stream_events(url, until, timeout=10):
    """The event stream's events, (name, data), until `until` holds of the list so far."""
    events, name = [], "message"
    with urllib.request.urlopen(url + "events", timeout=timeout) as response:
        for line in response:
            line = line.decode().rstrip("\n")
            if line.startswith("event: "):
                name = line[7:]
            elif line.startswith("data: "):
                events.append((name, json.loads(line[6:])))
                name = "message"
                if until(events):
                    return events
    return events


def test_a_reload_keeps_motiond_watched_and_a_later_page_gets_no_old_state(directory):
    daemon = Daemon(directory, still_recording(os.path.join(directory, "reload.motionrec"), seconds=5), "reload")
    daemon.start()
    status = Status(daemon.socket)
    alone = status.clients()
    view = View(directory, daemon, "motionctl-reload")
    try:
        stream = urllib.request.urlopen(view.url + "events", timeout=10)
        wait_for("motionctl view to watch motiond", lambda: status.clients() == alone + 1, 10)
        time.sleep(0.5)  # an ORIENTATION and a STATUS reply on their way to the page
        # A reload: the page's stream closes, and a new one opens half a second later. motiond stays
        # watched throughout (its IMU and fusion would stop, and the fusion start over).
        stream.close()
        deadline = time.monotonic() + 0.5
        while time.monotonic() < deadline:
            assert status.clients() == alone + 1, "motionctl view left motiond during a reload"
            time.sleep(0.05)
        with urllib.request.urlopen(view.url + "events", timeout=10):
            deadline = time.monotonic() + 1.5
            while time.monotonic() < deadline:
                assert status.clients() == alone + 1, "motionctl view left motiond during a reload"
                time.sleep(0.05)
        # No page for longer than the grace: motiond is left alone.
        wait_for("motionctl view to leave motiond", lambda: status.clients() == alone, 10)
        status.close()
        # motiond goes while no page is open: the next page must not be told it is live, nor be shown
        # the old daemon's states as if they were.
        daemon.stop()
        events = stream_events(view.url, lambda e: any(name == "status" for name, _ in e))
        assert events[0][0] == "status" and events[0][1]["state"] == "absent", events[:3]
    finally:
        view.close()
        if daemon.process.poll() is None:
            daemon.stop()
