"""The connection to motiond: one Unix socket speaking docs/protocol.md, with asyncio."""

from __future__ import annotations

import asyncio
import itertools
import json
import os
from typing import Any, AsyncIterator, Dict, Iterable, Optional, Union

from .samples import (
    Dropped,
    NotRunning,
    ProtocolError,
    RequestRefused,
    SAMPLE_CLASSES,
    SignificantMotionEvent,
    Snapshot,
    StreamEnded,
    sample_from_wire,
)

#: The protocol major version this client speaks.
PROTOCOL_MAJOR = 1
#: The longest line motiond sends is a DEVICES reply; this bounds a line read.
LINE_LIMIT = 1 << 20


def default_socket() -> str:
    """``$MOTIOND_SOCKET``, else the system service's socket."""
    return os.environ.get("MOTIOND_SOCKET") or "/run/motiond/motiond.sock"


class Client:
    """A client of motiond.

    ``await client.get(["motion"])`` is one snapshot (a pull); ``async for sample in
    client.watch(["motion"], interval=0.1)`` a stream (a push). Each call opens its own connection,
    so a program may watch several streams and pull at the same time.
    """

    def __init__(self, socket_path: Optional[str] = None, timeout: float = 5.0):
        """``socket_path``: default ``default_socket()``; ``timeout``: seconds a reply may take."""
        self.socket_path = socket_path or default_socket()
        self.timeout = timeout
        self._ids = itertools.count(1)

    async def get(self, streams: Iterable[str], frame: Optional[str] = None) -> Snapshot:
        """The latest sample of each of ``streams`` (a ``POLL``); motiond starts sensors not running."""
        request: Dict[str, Any] = {"class": "POLL", "streams": list(streams)}
        if frame is not None:
            request["frame"] = frame
        reply = await self._request(request, "SNAPSHOT")
        values = {}
        for name, (field, _) in SAMPLE_CLASSES.items():
            if reply.get(field) is not None:
                values[field] = sample_from_wire(dict(reply[field], **{"class": name}))
        return Snapshot(**values)

    async def status(self) -> Dict[str, Any]:
        """``STATUS``: uptime, running sensors and their rates, clients, drops, calibration."""
        return await self._request({"class": "STATUS"}, "STATUS")

    async def history(self, stream: str, start: float, end: Optional[float] = None) -> Dict[str, Any]:
        """``HISTORY`` (protocol 1.5): for ``"pedometer"`` the ``steps`` and ``distance`` (m) of the minutes
        that begin between ``start`` and ``end`` (seconds of Unix time, as ``time.time()``; ``end`` default
        now), for ``"activity"`` the ``activities`` begun in the range (the one under way at ``start``
        first). motiond keeps the last 7 days, across restarts."""
        request: Dict[str, Any] = {"class": "HISTORY", "stream": stream, "from": start}
        if end is not None:
            request["to"] = end
        return await self._request(request, "HISTORY")

    async def devices(self) -> list:
        """``DEVICES``: the sensors there are."""
        return (await self._request({"class": "DEVICES"}, "DEVICES"))["devices"]

    async def watch(
        self,
        streams: Iterable[str],
        interval: float = 0.1,
        frame: Optional[str] = None,
        latency: float = 0.0,
        report_drops: bool = False,
    ) -> AsyncIterator[Any]:
        """Yields each sample or event of ``streams`` as it comes.

        ``interval``: seconds between samples (0.001 to 60; events come at each change).
        ``frame``: the attitude's reference frame for ``motion`` (default ``xArbitraryZVertical``).
        ``latency``: seconds a sample may wait, so the sensor delivers in batches (0 to 10).
        ``report_drops``: yield ``Dropped`` when samples were lost to a slow reader (else skipped).
        Raises ``StreamEnded`` when a stream ends (its sensor went away), ``RequestRefused`` when
        motiond refuses the watch (such as a stream the machine cannot give).
        ``significant_motion`` is a one-shot trigger (protocol 1.11): its one ``SignificantMotionEvent``
        ends its watch, and the iteration ends with it when no other stream is watched.
        """
        streams = list(streams)
        request: Dict[str, Any] = {"class": "WATCH", "streams": streams, "interval": interval}
        if frame is not None:
            request["frame"] = frame
        if latency:
            request["latency"] = latency
        connection = await self._connect()
        try:
            await connection.send(request)
            while True:
                message = await connection.receive(timeout=None)
                name = message.get("class")
                if name in SAMPLE_CLASSES:
                    yield sample_from_wire(message)
                    if name == "SIGNIFICANT_MOTION" and all(stream == "significant_motion" for stream in streams):
                        return  # the trigger fired: motiond sends nothing more on this watch
                elif name == "DROPPED":
                    if report_drops:
                        yield Dropped(message["stream"], int(message["count"]))
                elif name == "ENDED":
                    raise StreamEnded(message["stream"], message.get("reason", ""))
                elif name == "ERROR":
                    raise RequestRefused(message.get("code", ""), message.get("message", ""))
                # WATCHING and others: nothing to yield.
        finally:
            await connection.close()

    async def significant_motion(self) -> SignificantMotionEvent:
        """Arms Android's significant-motion trigger (protocol 1.11) and returns its one event: when
        a motion that likely changes where the user is comes (a walk, or the chip's own sensor says so).
        Call it again to re-arm. Raises ``RequestRefused`` on a machine that cannot tell one."""
        async for event in self.watch(["significant_motion"]):
            if isinstance(event, SignificantMotionEvent):
                return event
        raise ProtocolError("the significant_motion watch ended without its event")

    async def _connect(self) -> "_Connection":
        try:
            reader, writer = await asyncio.open_unix_connection(self.socket_path, limit=LINE_LIMIT)
        except (FileNotFoundError, ConnectionRefusedError) as error:
            raise NotRunning(f"motiond is not running (nothing listens at {self.socket_path})") from error
        connection = _Connection(reader, writer, self.timeout)
        greeting = await connection.receive()
        if greeting.get("class") == "ERROR":
            await connection.close()
            raise RequestRefused(greeting.get("code", ""), greeting.get("message", ""))
        if greeting.get("class") != "VERSION" or greeting.get("proto_major") != PROTOCOL_MAJOR:
            await connection.close()
            raise ProtocolError(f"not a motiond speaking protocol {PROTOCOL_MAJOR}.x: {greeting}")
        return connection

    async def _request(self, request: Dict[str, Any], answer: str) -> Dict[str, Any]:
        request = dict(request, id=next(self._ids))
        connection = await self._connect()
        try:
            await connection.send(request)
            while True:
                message = await connection.receive()
                if message.get("id") != request["id"]:
                    continue
                if message.get("class") == "ERROR":
                    raise RequestRefused(message.get("code", ""), message.get("message", ""))
                if message.get("class") != answer:
                    raise ProtocolError(f"expected {answer}, got {message.get('class')}")
                return message
        finally:
            await connection.close()


class _Connection:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, timeout: float):
        self.reader = reader
        self.writer = writer
        self.timeout = timeout

    async def send(self, request: Dict[str, Any]) -> None:
        self.writer.write(json.dumps(request, separators=(",", ":")).encode() + b"\n")
        await self.writer.drain()

    async def receive(self, timeout: Union[float, None, str] = "default") -> Dict[str, Any]:
        limit = self.timeout if timeout == "default" else timeout
        try:
            line = await asyncio.wait_for(self.reader.readline(), limit)
        except asyncio.TimeoutError as error:
            raise ProtocolError(f"motiond did not answer within {limit} s") from error
        except (ValueError, asyncio.LimitOverrunError) as error:
            raise ProtocolError(f"a line longer than {LINE_LIMIT} bytes") from error
        if not line:
            raise ProtocolError("motiond closed the connection")
        try:
            message = json.loads(line)
        except json.JSONDecodeError as error:
            raise ProtocolError(f"not a JSON line: {line[:200]!r}") from error
        if not isinstance(message, dict):
            raise ProtocolError(f"not a JSON object: {line[:200]!r}")
        return message

    async def close(self) -> None:
        self.writer.close()
        try:
            await self.writer.wait_closed()
        except (ConnectionError, BrokenPipeError):
            pass
