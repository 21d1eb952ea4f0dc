"""Python client of motiond, the motion-sensor daemon for Linux (docs/python.md).

Standard library only. ``Client`` pulls (``get``) and streams (``watch``); samples arrive as the
typed classes of ``motiond.samples``; failures are the ``MotiondError`` exceptions.
"""

from .client import Client, default_socket
from .samples import (
    AccelerometerSample,
    ActivityEvent,
    AltitudeSample,
    Attitude,
    CalibratedMagneticField,
    Dropped,
    Ended,
    GestureEvent,
    GyroscopeSample,
    HingeSample,
    LightEvent,
    MagnetometerSample,
    MotiondError,
    MotionSample,
    NotRunning,
    OrientationEvent,
    PedometerEvent,
    PresenceEvent,
    ProtocolError,
    ProximityEvent,
    Quaternion,
    RequestRefused,
    SignificantMotionEvent,
    Snapshot,
    StreamEnded,
    TiltEvent,
    Vector3,
)

__all__ = [
    "AccelerometerSample", "ActivityEvent", "AltitudeSample", "Attitude", "CalibratedMagneticField", "Client", "Dropped", "Ended", "GestureEvent", "GyroscopeSample",
    "HingeSample", "LightEvent", "MagnetometerSample", "MotiondError", "MotionSample", "NotRunning", "OrientationEvent",
    "PedometerEvent", "PresenceEvent", "ProtocolError", "ProximityEvent", "Quaternion", "RequestRefused", "SignificantMotionEvent", "Snapshot", "StreamEnded", "TiltEvent", "Vector3",
    "default_socket",
]
