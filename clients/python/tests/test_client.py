"""The Python client against a real motiond replaying BROAD's recording (its README: trials start at
rest, the IMU samples at 285.7 Hz). Expected values come from the recording and from the daemon's own
lines read raw off the socket, not from this client's beliefs."""

import asyncio
import dataclasses
import json
import math
import os
import pathlib
import re
import socket
import subprocess
import sys
import time

import pytest

import motiond
from motiond.samples import SAMPLE_CLASSES

ROOT = pathlib.Path(__file__).resolve().parents[3]


def run(coroutine):
    return asyncio.run(coroutine)


def raw_line(path, request, answer):
    """The first line of class ``answer`` after ``request``, read off the socket with no client code."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.connect(path)
        s.sendall((json.dumps(request) + "\n").encode())
        buffered = b""
        while True:
            chunk = s.recv(65536)
            assert chunk, "motiond closed the connection"
            buffered += chunk
            while b"\n" in buffered:
                line, buffered = buffered.split(b"\n", 1)
                message = json.loads(line)
                if message["class"] == answer:
                    return message


def test_get_gives_gravity_where_the_accelerometer_feels_it(daemon):
    snapshot = run(motiond.Client(daemon).get(["motion", "accelerometer"]))
    acceleration = snapshot.accelerometer.acceleration
    gravity = snapshot.motion.gravity
    # At rest the accelerometer reads 1 g, and the fused gravity points along it (CoreMotion's sign).
    assert abs(acceleration.length - 1) < 0.05
    cosine = (gravity.x * acceleration.x + gravity.y * acceleration.y + gravity.z * acceleration.z) / (
        gravity.length * acceleration.length)
    assert cosine > math.cos(math.radians(3))
    assert snapshot.gyroscope is None, "only what was asked"
    q = snapshot.motion.attitude.quaternion
    assert abs(q.w * q.w + q.x * q.x + q.y * q.y + q.z * q.z - 1) < 1e-6


def test_watch_streams_at_the_interval_on_the_sample_clock(daemon):
    async def stamps():
        seen = []
        async for sample in motiond.Client(daemon).watch(["motion"], interval=0.05, frame="xArbitraryCorrectedZVertical"):
            assert isinstance(sample, motiond.MotionSample)
            assert sample.frame == "xArbitraryCorrectedZVertical"
            seen.append(sample.timestamp)
            if len(seen) == 21:
                return seen
    seen = run(stamps())
    mean = (seen[-1] - seen[0]) / 20 * 1e-9
    assert abs(mean - 0.05) < 0.004, mean


def test_the_sample_classes_have_every_field_the_daemon_sends(daemon):
    # Each stream's line, read raw: every key of it is a field of its class (nothing is lost).
    for stream in ["motion", "accelerometer", "gyroscope", "magnetometer", "pedometer", "activity"]:
        message = raw_line(daemon, {"class": "WATCH", "streams": [stream], "interval": 0.1}, stream.upper())
        fields = {f.name for f in dataclasses.fields(SAMPLE_CLASSES[stream.upper()][1])}
        assert set(message) - {"class"} <= fields, (stream, set(message) - fields)
        sample = motiond.samples.sample_from_wire(message)
        assert sample.timestamp == message["timestamp"]
    motion = motiond.samples.sample_from_wire(raw_line(daemon, {"class": "WATCH", "streams": ["motion"]}, "MOTION"))
    assert {f.name for f in dataclasses.fields(motion.attitude)} == {"quaternion", "roll", "pitch", "yaw", "rotation_matrix"}


def test_the_altitude_class_reads_the_protocols_example():
    # The bundled recording has no pressure sensor: the line is docs/protocol.md's own example.
    line = next(l for l in (ROOT / "docs" / "protocol.md").read_text().splitlines() if l.startswith('{"class":"ALTITUDE"'))
    message = json.loads(line)
    sample = motiond.samples.sample_from_wire(message)
    assert {f.name for f in dataclasses.fields(sample)} == set(message) - {"class"}
    assert (sample.pressure, sample.altitude, sample.precision) == (89.8746, 1000.0, 0.02)


def test_the_hinge_class_reads_the_protocols_example_and_an_older_daemons_line():
    # The bundled recording has no 2-in-1: the line is docs/protocol.md's own example (protocol 1.9).
    line = next(l for l in (ROOT / "docs" / "protocol.md").read_text().splitlines() if l.startswith('{"class":"HINGE"'))
    message = json.loads(line)
    sample = motiond.samples.sample_from_wire(message)
    assert {f.name for f in dataclasses.fields(sample)} == set(message) - {"class"}
    assert (sample.angle, sample.mode, sample.base.z, sample.display.y) == (112.5, "laptop", 1, -0.92)
    older = motiond.samples.sample_from_wire({"class": "HINGE", "timestamp": 1, "angle": 90, "mode": "laptop"})
    assert older.display is None and older.base is None


def test_history_counts_the_steps_of_the_last_minutes(daemon):
    # BROAD's IMU is turned by hand, never walked with: the history holds no steps, and the
    # activity the replay has reported since it began.
    async def ask():
        client = motiond.Client(daemon)
        await client.get(["activity"])
        now = time.time()
        return await client.history("pedometer", now - 600), await client.history("activity", now - 600, now + 1)

    steps, activities = asyncio.run(ask())
    assert steps["steps"] == 0 and steps["distance"] == 0
    assert activities["activities"] and all(a["activity"] in {"unknown", "stationary"} for a in activities["activities"])
    with pytest.raises(motiond.RequestRefused) as refused:
        asyncio.run(motiond.Client(daemon).history("motion", 0))
    assert refused.value.code == "invalid_argument"


def test_status_and_devices(daemon):
    client = motiond.Client(daemon)
    devices = run(client.devices())
    assert [sorted(d["kinds"]) for d in devices] == [["accelerometer", "gyroscope", "magnetometer"]]
    assert devices[0]["mode"] == "replayed"
    assert run(client.status())["uptime"] > 0


def test_errors_are_exceptions_with_the_daemons_reason(daemon, tmp_path):
    client = motiond.Client(daemon)
    with pytest.raises(motiond.RequestRefused) as refused:
        run(client.get(["proximity"]))
    assert refused.value.code == "unavailable"

    async def watch_too_fast():
        async for _ in client.watch(["motion"], interval=0.0001):
            pass
    with pytest.raises(motiond.RequestRefused) as refused:
        run(watch_too_fast())
    assert refused.value.code == "invalid_argument" and "interval" in refused.value.message

    with pytest.raises(motiond.NotRunning):
        run(motiond.Client(str(tmp_path / "nothing.sock")).get(["motion"]))


def test_the_docs_example_runs_as_written(daemon, tmp_path):
    page = (ROOT / "docs" / "python.md").read_text()
    example = re.search(r"```python\n(.*?)```", page, re.S).group(1)
    script = tmp_path / "example.py"
    script.write_text(example)
    environment = dict(os.environ, MOTIOND_SOCKET=daemon, PYTHONPATH=str(ROOT / "clients" / "python"))
    result = subprocess.run([sys.executable, str(script)], env=environment, capture_output=True, text=True, timeout=30)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("gravity (g): Vector3(")
    assert len([line for line in lines if line.startswith("roll ")]) == 10


def protocol_example(name):
    """docs/protocol.md's example line of the class ``name``."""
    return json.loads(next(l for l in (ROOT / "docs" / "protocol.md").read_text().splitlines() if l.startswith('{"class":"%s"' % name)))


def test_the_presence_and_significant_motion_classes_read_the_protocols_examples():
    # The bundled recording has no presence sensor and no walk: the lines are docs/protocol.md's (1.11).
    message = protocol_example("PRESENCE")
    presence = motiond.samples.sample_from_wire(message)
    assert isinstance(presence, motiond.PresenceEvent)
    assert {f.name for f in dataclasses.fields(presence)} == set(message) - {"class"}
    assert (presence.present, presence.attention, presence.distance, presence.source) == (True, True, 0.62, "human-presence")
    # A proximity sensor's: no attention channel, no distance (protocol 1.11: both absent then).
    bare = motiond.samples.sample_from_wire({"class": "PRESENCE", "timestamp": 5, "present": False, "source": "proximity"})
    assert (bare.present, bare.attention, bare.distance) == (False, None, None)
    message = protocol_example("SIGNIFICANT_MOTION")
    trigger = motiond.samples.sample_from_wire(message)
    assert isinstance(trigger, motiond.SignificantMotionEvent)
    assert (trigger.timestamp, trigger.source) == (1234567890123, "significant-motion")


def test_the_significant_motion_trigger_returns_its_one_event_and_ends_the_watch(tmp_path):
    # A stand-in for motiond speaking protocol 1.11's one-shot exchange (docs/protocol.md: a WATCH arms
    # it, the event is sent once, then nothing, no ENDED): the client must return on the event, not wait
    # for more. The bundled recording has no walk, so a real motiond would never fire it.
    path = str(tmp_path / "motiond.sock")
    asked = []

    async def serve(reader, writer):
        writer.write(b'{"class":"VERSION","proto_major":1,"proto_minor":11,"release":"stand-in"}\n')
        request = json.loads(await reader.readline())
        asked.append(request)
        writer.write(b'{"class":"WATCHING","streams":[{"stream":"significant_motion","interval":0.1}]}\n')
        writer.write(json.dumps(protocol_example("SIGNIFICANT_MOTION")).encode() + b"\n")
        await writer.drain()
        await reader.read()  # the connection stays open, sending nothing more, until the client closes it

    async def scenario():
        server = await asyncio.start_unix_server(serve, path)
        async with server:
            client = motiond.Client(path)
            event = await asyncio.wait_for(client.significant_motion(), 5)
            # And a watch of the trigger alone ends by itself after its event.
            events = await asyncio.wait_for(_collect(client.watch(["significant_motion"])), 5)
            return event, events

    event, events = run(scenario())
    assert (event.timestamp, event.source) == (1234567890123, "significant-motion")
    assert [type(e).__name__ for e in events] == ["SignificantMotionEvent"]
    assert [(a["class"], a["streams"]) for a in asked] == [("WATCH", ["significant_motion"])] * 2


async def _collect(iterator):
    return [item async for item in iterator]
