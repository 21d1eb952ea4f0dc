"""A real motiond replaying the bundled BROAD recording, on a socket of its own, for each test."""

import os
import pathlib
import signal
import socket
import subprocess
import sys
import tempfile
import time

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "clients" / "python"))

RECORDING = ROOT / "Recordings" / "broad-04-slow-rotation.motionrec.gz"


def motiond_binary() -> pathlib.Path:
    """``$MOTIOND`` (a built motiond), else the package's debug build."""
    path = pathlib.Path(os.environ.get("MOTIOND") or ROOT / ".build" / "debug" / "motiond")
    if not path.exists():
        pytest.fail(f"no motiond at {path}: run `swift build --product motiond` first, or set MOTIOND")
    return path


def accepts(path: str) -> bool:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        try:
            s.connect(path)
            return True
        except OSError:
            return False


@pytest.fixture
def daemon():
    """The socket path of a running ``motiond --replay … --loop``."""
    with tempfile.TemporaryDirectory(prefix="motiond-python-") as directory:
        path = os.path.join(directory, "motiond.sock")
        log = open(os.path.join(directory, "motiond.log"), "w")
        process = subprocess.Popen(
            [str(motiond_binary()), "--replay", str(RECORDING), "--loop", "--socket", path,
             "--state-directory", os.path.join(directory, "state")],
            stderr=log,
        )
        deadline = time.monotonic() + 10
        while not accepts(path):
            if time.monotonic() > deadline or process.poll() is not None:
                process.kill()
                pytest.fail("motiond did not start: " + open(log.name).read())
            time.sleep(0.01)
        try:
            yield path
        finally:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(10)
            except subprocess.TimeoutExpired:
                process.kill()
                pytest.fail("motiond did not stop within 10 s of SIGTERM")
            log.close()
