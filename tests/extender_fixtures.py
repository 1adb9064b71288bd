"""Shared pieces of the extender tests: a sidecar with the HTTP intake, POSTing a verb, and
sending the guide's cluster as Volcano's onSessionOpen until it is published as ``latest``."""

from __future__ import annotations

import http.client
from typing import Any

import orjson

from sidecar.fake.objects import objects_from_snapshot
from sidecar.scenarios.volcano_session import MASTER, session_dict
from sidecar.server.background import BackgroundServer
from sidecar.snapshot.io import load_snapshot

GUIDE = "sidecar/data/guide-ascend.json"


def post(s: BackgroundServer, verb: str, body: bytes) -> tuple[int, dict[str, Any]]:
    assert s.running.extender is not None
    conn = http.client.HTTPConnection("127.0.0.1", s.running.extender.port, timeout=10)
    conn.request("POST", f"/volcano/{verb}", body, {"Content-Type": "application/json"})
    resp = conn.getresponse()
    out = orjson.loads(resp.read() or b"{}")
    conn.close()
    return resp.status, out


def open_guide_session(s: BackgroundServer) -> dict[str, Any]:
    """POST the guide's cluster as onSessionOpen and wait until the decoder has published it."""
    snap = load_snapshot(GUIDE)
    session = session_dict(snap, objects_from_snapshot(snap), MASTER)
    assert post(s, "onSessionOpen", orjson.dumps(session)) == (200, {})
    assert s.running.extender is not None
    assert s.running.extender.extender.intake.idle(30)
    return session
