"""The extender wire as Volcano's ``extender.go`` drives it (volcano.sh/volcano v1.14.1,
pkg/scheduler/plugins/extender): POST ``<urlPrefix>/<verb>``, a JSON body of ``argument.go``'s
types, a 1 s client timeout, any answer but 200 an error (ignored with ``ignorable: true``).

* predicate's ``code`` is Volcano's (2 Unschedulable, 3 UnschedulableAndUnresolvable; 1 would be
  ``api.Error``), whatever path answered it;
* every verb the plugin can be configured with is answered in its type (the neutral vote) or
  refused with 400 naming the field;
* a call that cannot be answered within the timeout is refused at once (503), not after it;
* HTTP framing: chunked bodies, missing/negative/oversize/short Content-Length;
* a task's fields are checked the same whether ``latest`` holds it or the request is decoded.
"""

from __future__ import annotations

import http.client
import socket
import time
from collections.abc import Iterator
from typing import Any

import orjson
import pytest

from sidecar.api.v1alpha1 import service_pb2
from sidecar.fake.objects import objects_from_snapshot
from sidecar.scenarios.volcano_session import MASTER, check_bodies, session_dict
from sidecar.server.background import BackgroundServer
from sidecar.server.config import ServerConfig
from sidecar.server.extender import NEUTRAL, UNRESOLVABLE, UNSCHEDULABLE, VOLCANO_CODE, Extender
from sidecar.service import Deadline
from sidecar.snapshot import taskstatus as ts
from sidecar.snapshot.io import load_snapshot

GUIDE = "sidecar/data/guide-ascend.json"
Obj = dict[str, Any]


@pytest.fixture(scope="module")
def sidecar() -> Iterator[BackgroundServer]:
    with BackgroundServer(ServerConfig(port=0, extender_port=0)) as s:
        yield s


@pytest.fixture(scope="module")
def session() -> Obj:
    snap = load_snapshot(GUIDE)
    return session_dict(snap, objects_from_snapshot(snap), MASTER)


def _port(s: BackgroundServer) -> int:
    assert s.running.extender is not None
    return s.running.extender.port


def _extender(s: BackgroundServer) -> Extender:
    assert s.running.extender is not None
    return s.running.extender.extender


def post(s: BackgroundServer, verb: str, body: bytes) -> tuple[int, Obj]:
    conn = http.client.HTTPConnection("127.0.0.1", _port(s), timeout=10)
    conn.request("POST", f"/volcano/{verb}", body, {"Content-Type": "application/json"})
    resp = conn.getresponse()
    out = orjson.loads(resp.read() or b"{}")
    conn.close()
    return resp.status, out


def raw(s: BackgroundServer, request: bytes, wait: float = 5.0) -> bytes:
    """Bytes sent as they are; what came back before the server closed or ``wait`` passed."""
    with socket.create_connection(("127.0.0.1", _port(s)), timeout=wait) as conn:
        conn.sendall(request)
        out = b""
        deadline = time.monotonic() + wait
        try:
            while time.monotonic() < deadline:
                chunk = conn.recv(65536)
                if not chunk:
                    break
                out += chunk
        except TimeoutError:
            pass
        return out


def _open(s: BackgroundServer, session: Obj) -> None:
    assert post(s, "onSessionOpen", orjson.dumps(session)) == (200, {})
    assert _extender(s).intake.idle(30)


def _task_uid(session: Obj, status: int) -> str:
    return next(u for j in session["Jobs"].values() for u, t in j["Tasks"].items() if t["Status"] == status)


# -- predicate codes -------------------------------------------------------------------------------------
def test_the_contract_codes_map_to_volcanos() -> None:
    assert VOLCANO_CODE == {service_pb2.UNSCHEDULABLE: 2, service_pb2.UNSCHEDULABLE_AND_UNRESOLVABLE: 3}
    assert (UNSCHEDULABLE, UNRESOLVABLE) == (2, 3)


@pytest.mark.parametrize("source", ["latest", "request"])
def test_predicate_answers_volcanos_codes(sidecar: BackgroundServer, session: Obj, source: str) -> None:
    """Insufficient resources: 2 (preemption may help); an unschedulable (cordoned) node: 3."""
    cordoned = dict(session)
    nodes = {name: dict(info) for name, info in session["Nodes"].items()}
    full, off = sorted(nodes)[0], sorted(nodes)[1]
    node = dict(nodes[off]["Node"])
    node["spec"] = {**(node.get("spec") or {}), "unschedulable": True}
    nodes[off] = {**nodes[off], "Node": node}
    cordoned["Nodes"] = nodes
    _open(sidecar, cordoned)
    uid = _task_uid(cordoned, ts.RUNNING)
    answers = {}
    for name in (full, off):
        body = orjson.loads(check_bodies(cordoned, uid, [name])[0])
        if source == "request":  # a task latest does not hold: the request is decoded
            body["task"]["UID"] = body["task"]["Pod"]["metadata"]["uid"] = "not-in-latest"
            body["task"]["Pod"]["metadata"]["name"] = "not-in-latest"
            body["task"]["Name"] = "not-in-latest"
            body["task"]["Status"], body["task"]["NodeName"] = ts.PENDING, ""
        code, answer = post(sidecar, "predicate", orjson.dumps(body))
        assert code == 200, answer
        answers[name] = answer
    assert answers[off]["code"] == 3 and "unschedulable" in answers[off]["status"], answers
    if answers[full]["code"]:  # the guide's nodes are 3/4 and 2/4 full: some task does not fit somewhere
        assert answers[full]["code"] == 2 and "Insufficient" in answers[full]["status"], answers


def test_insufficient_resources_are_unschedulable_not_error(sidecar: BackgroundServer, session: Obj) -> None:
    _open(sidecar, session)
    uid = _task_uid(session, ts.RUNNING)
    body = orjson.loads(check_bodies(session, uid, [sorted(session["Nodes"])[0]])[0])
    body["task"]["UID"] = body["task"]["Pod"]["metadata"]["uid"] = "huge"
    body["task"]["Pod"]["metadata"]["name"] = body["task"]["Name"] = "huge"
    body["task"]["Status"], body["task"]["NodeName"] = ts.PENDING, ""
    for c in body["task"]["Pod"]["spec"]["containers"]:
        c["resources"] = {"requests": {"cpu": "100000"}, "limits": {"cpu": "100000"}}
    code, answer = post(sidecar, "predicate", orjson.dumps(body))
    assert code == 200 and answer["code"] == 2 and "Insufficient cpu" in answer["status"], answer


# -- the other verbs -------------------------------------------------------------------------------------
@pytest.mark.parametrize("verb", sorted(NEUTRAL))
def test_every_verb_the_plugin_can_send_is_answered_in_its_type(sidecar: BackgroundServer, verb: str) -> None:
    key, answer = NEUTRAL[verb]
    assert post(sidecar, verb, orjson.dumps({key: {"UID": "x"}, "evictees": []})) == (200, answer)
    code, refused = post(sidecar, verb, b"{}")
    assert code == 400 and refused["status"] == f"${'.' + key}: missing", refused
    assert post(sidecar, verb, b"[1]")[0] == 400


def test_neutral_answers_decode_into_argument_go_types() -> None:
    """The shapes argument.go decodes: Preemptable/Reclaimable {status int, victims []}, JobEnqueueable
    {status int}, QueueOverused {overused bool}, JobReady {status bool}, EventHandler {errorMessage}."""
    vote = {"status": int, "victims": type(None)}
    types = {"preemptable": vote, "reclaimable": vote,
             "jobEnqueueable": {"status": int}, "queueOverused": {"overused": bool}, "jobReady": {"status": bool},
             "allocateFunc": {"errorMessage": str}, "deallocateFunc": {"errorMessage": str}}  # fmt: skip
    assert set(types) == set(NEUTRAL)
    for verb, (_, answer) in NEUTRAL.items():
        assert {k: type(v) for k, v in answer.items()} == types[verb], verb
    assert NEUTRAL["jobEnqueueable"][1]["status"] == 0 == NEUTRAL["preemptable"][1]["status"]  # util.Abstain


# -- the deadline ----------------------------------------------------------------------------------------
def test_a_body_that_cannot_be_decoded_in_time_is_refused_at_once() -> None:
    """``prioritize`` for a task ``latest`` lacks must decode the request; when the body is too big
    for the time left, the answer is 503 within the deadline, not after it."""
    from sidecar.service import RepackService

    ext = Extender(RepackService(), timeout=1.0)
    try:
        ext.decode_rate = 10e6  # 10 MB/s: a 20 MB body needs 2 s
        body = b'{"task": {"UID": "t"}, "nodes": [' + b'{"Name": "n"},' * 1_500_000 + b'{"Name": "m"}]}'
        started = time.monotonic()
        code, answer, _ = ext.handle("prioritize", body)
        assert time.monotonic() - started < 1.0
        assert code == 503 and "takes ~" in answer["status"], answer
        # the time spent reading the body counts: arrived 2 s ago is too late already
        code, answer, _ = ext.handle("predicate", b"{}", arrived=time.monotonic() - 2.0)
        assert code == 503 and "reading the request body" in answer["status"]
    finally:
        ext.stop()


def test_the_decode_rate_follows_what_was_measured() -> None:
    from sidecar.service import RepackService

    ext = Extender(RepackService())
    try:
        ext.decode_rate = 50e6
        ext._decoded(1 << 20, 1.0)  # 1 MiB/s measured
        assert 1e6 < ext.decode_rate < 50e6
        before = ext.decode_rate
        ext._decoded(100, 1.0)  # a small body says nothing about the rate
        assert ext.decode_rate == before
        with pytest.raises(Exception, match="takes ~"):
            ext._can_decode(100 << 20, Deadline(0.5))
    finally:
        ext.stop()


# -- HTTP framing ----------------------------------------------------------------------------------------
def test_a_chunked_body_is_read_as_one_body(sidecar: BackgroundServer) -> None:
    body = b'{"job": {"UID": "j"}}'
    chunks = b"".join(f"{len(part):x}\r\n".encode() + part + b"\r\n" for part in (body[:5], body[5:]))
    request = (b"POST /volcano/jobReady HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
               b"Transfer-Encoding: chunked\r\n\r\n" + chunks + b"0\r\n\r\n")  # fmt: skip
    # twice on one connection: the first body's chunks are not read as a second request
    out = raw(sidecar, request + request, wait=2.0)
    assert out.count(b"HTTP/1.1 200") == 2 and out.count(b'{"status":true}') == 2, out
    assert b"400" not in out.split(b"\r\n", 1)[0]


@pytest.mark.parametrize(
    ("length", "status"),
    [("-5", b"400"), ("abc", b"400"), (str(1 << 40), b"413")],
)
def test_a_bad_content_length_is_refused_at_once(sidecar: BackgroundServer, length: str, status: bytes) -> None:
    request = f"POST /volcano/jobReady HTTP/1.1\r\nHost: x\r\nContent-Length: {length}\r\n\r\n".encode()
    started = time.monotonic()
    out = raw(sidecar, request, wait=5.0)
    assert out.startswith(b"HTTP/1.1 " + status), out
    assert time.monotonic() - started < 2.0, "the connection was held"
    assert b"Connection: close" in out


def test_a_bad_chunk_is_refused(sidecar: BackgroundServer) -> None:
    request = b"POST /volcano/jobReady HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n"
    assert raw(sidecar, request, wait=3.0).startswith(b"HTTP/1.1 400")


# -- task fields: latest and inline alike ----------------------------------------------------------------
@pytest.mark.parametrize(
    ("field", "value", "path"),
    [("Status", 99, "$.task.Status"), ("Pod", None, "$.task.Pod")],
)
def test_a_bad_task_is_refused_the_same_on_latest_and_inline(
    sidecar: BackgroundServer, session: Obj, field: str, value: Any, path: str
) -> None:
    _open(sidecar, session)
    uid = _task_uid(session, ts.RUNNING)
    node = sorted(session["Nodes"])[0]
    answers = []
    for in_latest in (True, False):
        body = orjson.loads(check_bodies(session, uid, [node])[0])
        if not in_latest:
            body["task"]["UID"] = "not-in-latest"
        body["task"][field] = value
        code, answer = post(sidecar, "predicate", orjson.dumps(body))
        answers.append((code, answer["status"].split(":")[0]))
    assert answers == [(400, path), (400, path)], answers


# -- found in review: every request gets an answer ---------------------------------------------------------
@pytest.mark.parametrize("body", [b'{"task": {"\xff": 1, x}}', b'{"task":{"a\\u12":1, x}}'])
def test_a_malformed_key_is_still_named_and_answered(sidecar: BackgroundServer, body: bytes) -> None:
    code, answer = post(sidecar, "predicate", body)
    assert code == 400 and answer["code"] == 1 and answer["status"].startswith("$"), answer


def test_a_non_ascii_digit_in_content_length_is_refused(sidecar: BackgroundServer) -> None:
    request = "POST /volcano/jobReady HTTP/1.1\r\nHost: x\r\nContent-Length: ²\r\n\r\n".encode()
    assert raw(sidecar, request, wait=3.0).startswith(b"HTTP/1.1 400")


def test_an_unexpected_error_is_answered_500(sidecar: BackgroundServer, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*_: Any, **__: Any) -> Obj:
        raise RuntimeError("a bug")

    monkeypatch.setattr(_extender(sidecar), "predicate", broken)
    code, answer = post(sidecar, "predicate", b"{}")
    assert code == 500 and answer == {"status": "internal error: RuntimeError: a bug", "code": 1,
                                      "errorMessage": "internal error: RuntimeError: a bug"}  # fmt: skip


def test_a_node_named_only_by_its_node_object_is_found_on_latest(sidecar: BackgroundServer, session: Obj) -> None:
    """``NodeInfo.Name`` empty, ``Node.metadata.name`` set: both paths read the same name."""
    _open(sidecar, session)
    uid = _task_uid(session, ts.RUNNING)
    name = sorted(session["Nodes"])[0]
    body = orjson.loads(check_bodies(session, uid, [name])[0])
    body["node"]["Name"] = ""
    assert body["node"]["Node"]["metadata"]["name"] == name
    conn = http.client.HTTPConnection("127.0.0.1", _port(sidecar), timeout=10)
    conn.request("POST", "/volcano/predicate", orjson.dumps(body), {"Content-Type": "application/json"})
    resp = conn.getresponse()
    assert resp.status == 200 and resp.getheader("X-Repack-Source") == "latest", resp.read()
    conn.close()
