"""The samples and events motiond sends, as typed classes.

Field names are the Swift client's (``MotionWire``) in Python's spelling: ``userAcceleration`` is
``user_acceleration``, exactly the wire's key. Units and signs are CoreMotion's (docs/frames.md):
accelerations in g (face up at rest: z = -1), rotation rates in rad/s, magnetic fields in µT, angles
in radians except ``heading`` (degrees); timestamps are integer nanoseconds of the daemon's
CLOCK_MONOTONIC.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, Optional, Tuple


@dataclass(frozen=True)
class Vector3:
    """A vector in the device frame (x right, y up the screen, z out of it)."""

    x: float
    y: float
    z: float

    @classmethod
    def from_wire(cls, value: Dict[str, Any]) -> "Vector3":
        return cls(float(value["x"]), float(value["y"]), float(value["z"]))

    @property
    def length(self) -> float:
        return (self.x * self.x + self.y * self.y + self.z * self.z) ** 0.5


@dataclass(frozen=True)
class Quaternion:
    """Device → reference frame rotation."""

    x: float
    y: float
    z: float
    w: float

    @classmethod
    def from_wire(cls, value: Dict[str, Any]) -> "Quaternion":
        return cls(float(value["x"]), float(value["y"]), float(value["z"]), float(value["w"]))


@dataclass(frozen=True)
class Attitude:
    """The attitude of ``MOTION``: radians, CoreMotion's conventions."""

    quaternion: Quaternion
    roll: float
    pitch: float
    yaw: float
    #: CoreMotion's rotation matrix (reference → device), row by row.
    rotation_matrix: Tuple[Tuple[float, float, float], Tuple[float, float, float], Tuple[float, float, float]]

    @classmethod
    def from_wire(cls, value: Dict[str, Any]) -> "Attitude":
        m = [float(e) for e in value["rotation_matrix"]]
        if len(m) != 9:
            raise ProtocolError(f"a rotation matrix has 9 numbers, not {len(m)}")
        return cls(
            Quaternion.from_wire(value["quaternion"]),
            float(value["roll"]),
            float(value["pitch"]),
            float(value["yaw"]),
            ((m[0], m[1], m[2]), (m[3], m[4], m[5]), (m[6], m[7], m[8])),
        )


@dataclass(frozen=True)
class CalibratedMagneticField:
    """µT, hard iron removed, and how far to trust it: uncalibrated, low, medium, high."""

    field: Vector3
    accuracy: str


@dataclass(frozen=True)
class MotionSample:
    """``MOTION``: fused device motion."""

    timestamp: int
    frame: str
    attitude: Attitude
    #: g, CoreMotion's sign.
    gravity: Vector3
    #: g.
    user_acceleration: Vector3
    #: rad/s, bias removed.
    rotation_rate: Vector3
    magnetic_field: CalibratedMagneticField
    #: Degrees in [0, 360), north frames only.
    heading: Optional[float] = None
    #: What the machine's sensors cannot give: field name → reason.
    unavailable: Optional[Dict[str, str]] = None

    @classmethod
    def from_wire(cls, m: Dict[str, Any]) -> "MotionSample":
        field = m["magnetic_field"]
        return cls(
            int(m["timestamp"]),
            m["frame"],
            Attitude.from_wire(m["attitude"]),
            Vector3.from_wire(m["gravity"]),
            Vector3.from_wire(m["user_acceleration"]),
            Vector3.from_wire(m["rotation_rate"]),
            CalibratedMagneticField(Vector3.from_wire(field["field"]), field["accuracy"]),
            m.get("heading"),
            m.get("unavailable"),
        )


@dataclass(frozen=True)
class AccelerometerSample:
    """``ACCELEROMETER``: raw acceleration, g, CoreMotion's sign."""

    timestamp: int
    acceleration: Vector3

    @classmethod
    def from_wire(cls, m: Dict[str, Any]) -> "AccelerometerSample":
        return cls(int(m["timestamp"]), Vector3.from_wire(m["acceleration"]))


@dataclass(frozen=True)
class GyroscopeSample:
    """``GYROSCOPE``: raw rotation rate, rad/s."""

    timestamp: int
    rotation_rate: Vector3

    @classmethod
    def from_wire(cls, m: Dict[str, Any]) -> "GyroscopeSample":
        return cls(int(m["timestamp"]), Vector3.from_wire(m["rotation_rate"]))


@dataclass(frozen=True)
class MagnetometerSample:
    """``MAGNETOMETER``: raw magnetic field, µT."""

    timestamp: int
    magnetic_field: Vector3

    @classmethod
    def from_wire(cls, m: Dict[str, Any]) -> "MagnetometerSample":
        return cls(int(m["timestamp"]), Vector3.from_wire(m["magnetic_field"]))


@dataclass(frozen=True)
class ProximityEvent:
    """``PROXIMITY``: near or far, and the raw reading."""

    timestamp: int
    near: bool
    value: float

    @classmethod
    def from_wire(cls, m: Dict[str, Any]) -> "ProximityEvent":
        return cls(int(m["timestamp"]), bool(m["near"]), float(m["value"]))


@dataclass(frozen=True)
class LightEvent:
    """``LIGHT``: ambient light in ``unit``: ``lux``, or ``vendor`` (raw, comparable only with itself)."""

    timestamp: int
    illuminance: float
    unit: str

    @classmethod
    def from_wire(cls, m: Dict[str, Any]) -> "LightEvent":
        return cls(int(m["timestamp"]), float(m["illuminance"]), m["unit"])


@dataclass(frozen=True)
class OrientationEvent:
    """``ORIENTATION``: normal, bottom-up, left-up, right-up, face-up, face-down."""

    timestamp: int
    orientation: str

    @classmethod
    def from_wire(cls, m: Dict[str, Any]) -> "OrientationEvent":
        return cls(int(m["timestamp"]), m["orientation"])


@dataclass(frozen=True)
class TiltEvent:
    """``TILT``: vertical, tilted-up, tilted-down, face-up, face-down."""

    timestamp: int
    tilt: str

    @classmethod
    def from_wire(cls, m: Dict[str, Any]) -> "TiltEvent":
        return cls(int(m["timestamp"]), m["tilt"])


@dataclass(frozen=True)
class HingeSample:
    """``HINGE``: a 2-in-1's hinge angle, degrees in [0, 360], and its mode; ``display`` and
    ``base`` (protocol 1.9, None from an older daemon) are the readings the angle comes from: each
    accelerometer's acceleration, g, CoreMotion's sign, in its own frame, low-passed."""

    timestamp: int
    angle: float
    mode: str
    display: Optional[Vector3] = None
    base: Optional[Vector3] = None

    @classmethod
    def from_wire(cls, m: Dict[str, Any]) -> "HingeSample":
        def vector(key: str) -> Optional[Vector3]:
            return Vector3.from_wire(m[key]) if key in m else None

        return cls(int(m["timestamp"]), float(m["angle"]), m["mode"], vector("display"), vector("base"))


@dataclass(frozen=True)
class PedometerEvent:
    """``PEDOMETER``: steps since the daemon's first start (kept across restarts), distance (m), cadence (steps/s) and pace (s/m);
    ``cadence`` and ``pace`` are ``None`` before the third step; floors climbed and gone down on foot where a
    pressure sensor runs (else ``None``)."""

    timestamp: int
    steps: int
    distance: float
    cadence: Optional[float]
    pace: Optional[float]
    floors_ascended: Optional[int] = None
    floors_descended: Optional[int] = None

    @classmethod
    def from_wire(cls, m: Dict[str, Any]) -> "PedometerEvent":
        def optional(key: str, kind=float):
            return None if m.get(key) is None else kind(m[key])

        return cls(int(m["timestamp"]), int(m["steps"]), float(m["distance"]), optional("cadence"), optional("pace"),
                   optional("floors_ascended", int), optional("floors_descended", int))


@dataclass(frozen=True)
class ActivityEvent:
    """``ACTIVITY``: stationary, walking, running or unknown; confidence low, medium or high; ``start`` (ns)
    when it began."""

    timestamp: int
    activity: str
    confidence: str
    start: int

    @classmethod
    def from_wire(cls, m: Dict[str, Any]) -> "ActivityEvent":
        return cls(int(m["timestamp"]), m["activity"], m["confidence"], int(m["start"]))


@dataclass(frozen=True)
class GestureEvent:
    """``GESTURE``: ``shake``, ``pick-up`` or ``significant-motion``; ``on-body`` or ``off-body`` where the
    chip tells whether it is worn or held (protocol 1.11)."""

    timestamp: int
    gesture: str

    @classmethod
    def from_wire(cls, m: Dict[str, Any]) -> "GestureEvent":
        return cls(int(m["timestamp"]), m["gesture"])


@dataclass(frozen=True)
class PresenceEvent:
    """``PRESENCE`` (protocol 1.11): whether a person is at the machine (``present``); ``attention``
    whether they look at the screen (``None`` where the sensor has no attention channel); ``distance``
    how far they are (m, ``None`` where the sensor gives none); ``source`` ``human-presence`` or
    ``proximity``. Sent when watching starts and at each change (a change at once, the next held until
    the new state has lasted 1 s); a change of distance alone sends none."""

    timestamp: int
    present: bool
    attention: Optional[bool]
    distance: Optional[float]
    source: str

    @classmethod
    def from_wire(cls, m: Dict[str, Any]) -> "PresenceEvent":
        attention, distance = m.get("attention"), m.get("distance")
        return cls(int(m["timestamp"]), bool(m["present"]), None if attention is None else bool(attention),
                   None if distance is None else float(distance), m["source"])


@dataclass(frozen=True)
class SignificantMotionEvent:
    """``SIGNIFICANT_MOTION`` (protocol 1.11): Android's one-shot trigger, sent once per ``WATCH`` (the
    watch then ends, with no ``ENDED``); ``source`` ``significant-motion`` (the chip's sensor) or
    ``accelerometer`` (the step detector); ``timestamp`` (ns) the event's."""

    timestamp: int
    source: str

    @classmethod
    def from_wire(cls, m: Dict[str, Any]) -> "SignificantMotionEvent":
        return cls(int(m["timestamp"]), m["source"])


@dataclass(frozen=True)
class AltitudeSample:
    """``ALTITUDE``: ``pressure`` (kPa), the ``altitude`` it means in the standard atmosphere (m; differences
    of it are the relative altitude), and the readings' ``precision`` (m, one standard deviation; ``None``
    at first)."""

    timestamp: int
    pressure: float
    altitude: float
    precision: Optional[float]

    @classmethod
    def from_wire(cls, m: Dict[str, Any]) -> "AltitudeSample":
        precision = m.get("precision")
        return cls(int(m["timestamp"]), float(m["pressure"]), float(m["altitude"]), None if precision is None else float(precision))


@dataclass(frozen=True)
class Dropped:
    """``DROPPED``: ``count`` messages of ``stream`` were lost because this client read too slowly."""

    stream: str
    count: int


@dataclass(frozen=True)
class Ended:
    """``ENDED``: a stream ended because its sensor went away or failed."""

    stream: str
    reason: str


@dataclass(frozen=True)
class Snapshot:
    """The reply to ``get``: the latest of each stream asked for (``None`` for the others)."""

    motion: Optional[MotionSample] = None
    accelerometer: Optional[AccelerometerSample] = None
    gyroscope: Optional[GyroscopeSample] = None
    magnetometer: Optional[MagnetometerSample] = None
    proximity: Optional[ProximityEvent] = None
    light: Optional[LightEvent] = None
    orientation: Optional[OrientationEvent] = None
    tilt: Optional[TiltEvent] = None
    hinge: Optional[HingeSample] = None
    pedometer: Optional[PedometerEvent] = None
    activity: Optional[ActivityEvent] = None
    altitude: Optional[AltitudeSample] = None
    gesture: Optional[GestureEvent] = None
    presence: Optional[PresenceEvent] = None
    #: Never set: a trigger has no state (motiond refuses to poll it); here for the catalogue's sake.
    significant_motion: Optional[SignificantMotionEvent] = None


#: Each stream's sample class, by the wire's ``class``.
SAMPLE_CLASSES = {
    "MOTION": ("motion", MotionSample),
    "ACCELEROMETER": ("accelerometer", AccelerometerSample),
    "GYROSCOPE": ("gyroscope", GyroscopeSample),
    "MAGNETOMETER": ("magnetometer", MagnetometerSample),
    "PROXIMITY": ("proximity", ProximityEvent),
    "LIGHT": ("light", LightEvent),
    "ORIENTATION": ("orientation", OrientationEvent),
    "TILT": ("tilt", TiltEvent),
    "HINGE": ("hinge", HingeSample),
    "PEDOMETER": ("pedometer", PedometerEvent),
    "ACTIVITY": ("activity", ActivityEvent),
    "ALTITUDE": ("altitude", AltitudeSample),
    "GESTURE": ("gesture", GestureEvent),
    "PRESENCE": ("presence", PresenceEvent),
    "SIGNIFICANT_MOTION": ("significant_motion", SignificantMotionEvent),
}


class MotiondError(Exception):
    """Anything that went wrong talking to motiond."""


class NotRunning(MotiondError):
    """Nothing listens at the socket."""


class ProtocolError(MotiondError):
    """motiond sent something this client cannot read, or closed the connection."""


class RequestRefused(MotiondError):
    """motiond answered a request with ``ERROR``: its ``code`` and ``message`` (docs/protocol.md)."""

    def __init__(self, code: str, message: str):
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message


class StreamEnded(MotiondError):
    """A watched stream ended (its sensor went away): ``stream`` and ``reason``."""

    def __init__(self, stream: str, reason: str):
        super().__init__(f"{stream} ended: {reason}")
        self.stream = stream
        self.reason = reason


def sample_from_wire(message: Dict[str, Any]) -> Any:
    """The typed sample of one stream line, or ``None`` for a line of no stream."""
    entry = SAMPLE_CLASSES.get(message.get("class"))
    if entry is None:
        return None
    try:
        return entry[1].from_wire(message)
    except (KeyError, TypeError, ValueError) as error:
        raise ProtocolError(f"a {message.get('class')} line without what it must have: {error!r}") from error
