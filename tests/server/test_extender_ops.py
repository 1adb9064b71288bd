"""The extender intake as an operator sees it: /metrics scraped after real POSTs, the session's age
on every answer (HTTP headers, gRPC trailers), and bad bodies answered 400 with the JSON path."""

from __future__ import annotations

import http.client
import json
import re
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import grpc
import orjson
import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from sidecar.api.v1alpha1 import service_pb2, service_pb2_grpc
from sidecar.client import MIB, client_options
from sidecar.fake.objects import objects_from_snapshot
from sidecar.scenarios.volcano_session import MASTER, check_bodies, session_dict
from sidecar.server import servicer
from sidecar.server.background import BackgroundServer
from sidecar.server.config import ServerConfig
from sidecar.server.extender import AGE_HEADER, SESSION, SOURCE_HEADER, Extender
from sidecar.server.jsonerrors import json_path_at
from sidecar.snapshot import taskstatus as ts
from sidecar.snapshot.io import load_snapshot

GUIDE = "sidecar/data/guide-ascend.json"
Sample = tuple[str, tuple[tuple[str, str], ...]]


@pytest.fixture(scope="module")
def sidecar() -> Iterator[BackgroundServer]:
    config = ServerConfig(port=0, metrics_port=0, metrics_host="127.0.0.1", extender_port=0)
    with BackgroundServer(config) as s:
        yield s


def post(s: BackgroundServer, verb: str, body: bytes) -> tuple[int, dict, dict[str, str]]:  # type: ignore[type-arg]
    assert s.running.extender is not None
    conn = http.client.HTTPConnection("127.0.0.1", s.running.extender.port, timeout=10)
    conn.request("POST", f"/volcano/{verb}", body, {"Content-Type": "application/json"})
    resp = conn.getresponse()
    out = orjson.loads(resp.read() or b"{}")
    headers = {k: v for k, v in resp.getheaders()}
    conn.close()
    return resp.status, out, headers


def extender(s: BackgroundServer) -> Extender:
    assert s.running.extender is not None
    return s.running.extender.extender


def scrape(s: BackgroundServer) -> dict[Sample, float]:
    assert s.metrics is not None
    with urllib.request.urlopen(f"http://127.0.0.1:{s.metrics.port}/metrics", timeout=5) as reply:
        text = reply.read().decode()
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        if family.name.startswith("repack_extender")
        for sample in family.samples
    }


def delta(before: dict[Sample, float], after: dict[Sample, float], name: str, **labels: str) -> float:
    key = (name, tuple(sorted(labels.items())))
    return after.get(key, 0.0) - before.get(key, 0.0)


@pytest.fixture(scope="module")
def session() -> dict:  # type: ignore[type-arg]
    snap = load_snapshot(GUIDE)
    return session_dict(snap, objects_from_snapshot(snap), MASTER)


def _running_uid(session: dict) -> str:  # type: ignore[type-arg]
    return next(u for j in session["Jobs"].values() for u, t in j["Tasks"].items() if t["Status"] == ts.RUNNING)


def _open(s: BackgroundServer, body: bytes) -> None:
    assert post(s, "onSessionOpen", body)[:2] == (200, {})
    assert extender(s).intake.idle(30)


def test_metrics_count_what_real_posts_did(sidecar: BackgroundServer, session: dict) -> None:  # type: ignore[type-arg]
    before = scrape(sidecar)
    _open(sidecar, orjson.dumps(session))
    _open(sidecar, b'{"Nodes": {"n1": {"Name": "n1", "Used": {"MilliCPU": NaN}}}}')
    uid, names = _running_uid(session), sorted(session["Nodes"])
    pred, prio = check_bodies(session, uid, names[:1])[0], check_bodies(session, uid, names)[1]
    assert post(sidecar, "predicate", pred)[0] == 200
    assert post(sidecar, "prioritize", prio)[0] == 200
    assert post(sidecar, "predicate", b'{"task": {"UID": "u"}, "node": {"Name": Infinity}}')[0] == 400
    assert post(sidecar, "onSessionClose", b"{}")[0] == 200
    assert post(sidecar, "preemptable", b'{"evictor": {}}')[0] == 200
    assert post(sidecar, "nonsense", b"{}")[0] == 404
    after = scrape(sidecar)

    requests = "repack_extender_requests_total"
    assert delta(before, after, requests, verb="onSessionOpen", code="200") == 2
    assert delta(before, after, requests, verb="predicate", code="200") == 1
    assert delta(before, after, requests, verb="predicate", code="400") == 1
    assert delta(before, after, requests, verb="prioritize", code="200") == 1
    assert delta(before, after, requests, verb="onSessionClose", code="200") == 1
    assert delta(before, after, requests, verb="unknown", code="404") == 1  # no label per stray path
    assert delta(before, after, "repack_extender_duration_seconds_count", verb="predicate") == 2
    assert delta(before, after, "repack_extender_duration_seconds_count", verb="prioritize") == 1
    assert delta(before, after, "repack_extender_sessions_total", result="published") == 1
    assert delta(before, after, "repack_extender_sessions_total", result="failed") == 1
    assert ("repack_extender_sessions_total", (("result", "dropped"),)) in after  # present from the start
    assert delta(before, after, "repack_extender_decode_seconds_count") == 1
    age = after[("repack_extender_session_age_seconds", ())]
    assert 0 <= age < 30


def test_session_age_gauge_is_read_at_scrape_time(sidecar: BackgroundServer, session: dict) -> None:  # type: ignore[type-arg]
    _open(sidecar, orjson.dumps(session))
    latest = sidecar.running.service.session(SESSION)
    assert latest is not None
    latest.opened_at -= 100  # as if published 100 s ago
    assert scrape(sidecar)[("repack_extender_session_age_seconds", ())] >= 100
    _open(sidecar, orjson.dumps(session))
    assert scrape(sidecar)[("repack_extender_session_age_seconds", ())] < 30


def test_answers_carry_the_session_age_and_their_source(sidecar: BackgroundServer, session: dict) -> None:  # type: ignore[type-arg]
    _open(sidecar, orjson.dumps(session))
    uid, names = _running_uid(session), sorted(session["Nodes"])
    pred, prio = check_bodies(session, uid, names[:1])[0], check_bodies(session, uid, names)[1]
    code, answer, headers = post(sidecar, "predicate", pred)
    assert code == 200 and set(answer) == {"status", "code"}  # Volcano's PredicateResponse, nothing more
    assert headers[SOURCE_HEADER] == "latest" and 0 <= float(headers[AGE_HEADER]) < 30
    code, answer, headers = post(sidecar, "prioritize", prio)
    assert code == 200 and set(answer) == {"nodeScore", "errorMessage"}
    assert headers[SOURCE_HEADER] == "latest" and float(headers[AGE_HEADER]) >= 0
    assert AGE_HEADER in post(sidecar, "onSessionClose", b"{}")[2]

    body = orjson.loads(pred)  # a task the session lacks: answered from the request's own objects
    body["task"]["UID"] = body["task"]["Pod"]["metadata"]["uid"] = "not-in-the-session"
    code, answer, headers = post(sidecar, "predicate", orjson.dumps(body))
    assert code == 200 and headers[SOURCE_HEADER] == "request" and AGE_HEADER in headers


def test_grpc_on_latest_carries_the_age_as_trailing_metadata(sidecar: BackgroundServer, session: dict) -> None:  # type: ignore[type-arg]
    assert servicer.LATEST == SESSION
    _open(sidecar, orjson.dumps(session))
    rpc = service_pb2_grpc.RepackStub(grpc.insecure_channel(sidecar.target, options=client_options(64 * MIB)))
    uid, names = _running_uid(session), sorted(session["Nodes"])
    on_latest = service_pb2.FilterRequest(session_id="latest", task_uid=uid, nodes=names)
    _, call = rpc.Filter.with_call(on_latest, timeout=30)
    trailers = dict(call.trailing_metadata() or ())
    assert 0 <= float(trailers[servicer.AGE_METADATA]) < 30
    _, call = rpc.Filter.with_call(
        service_pb2.FilterRequest(snapshot=load_snapshot(GUIDE), task_uid=uid, nodes=names), timeout=30
    )
    assert servicer.AGE_METADATA not in dict(call.trailing_metadata() or ())


@pytest.mark.parametrize(
    ("verb", "body", "path"),
    [
        ("predicate", b'{"task": {"UID": "u"}, "node": {"Used": {"MilliCPU": NaN}}}', "$.node.Used.MilliCPU"),
        ("prioritize", b'{"task": {"UID": "u"}, "nodes": [{"Name": "a"}, {"Name": -Infinity}]}', "$.nodes[1].Name"),
        ("prioritize", b'{"task": {"UID": "u"}, "nodes": [{"Name": "a"},]}', "$.nodes[1]"),
        ("predicate", b'{"task": {"UID": "u",}}', "$.task"),
        ("predicate", b'{"task": {"UID": "u"', "$"),
        ("predicate", b"\xff", "$"),
        # 1e999 is JSON, but no float: out of range, like Infinity
        (
            "predicate",
            b'{"task": {"UID": "u"}, "node": {"Name": "n", "Allocatable": {"MilliCPU": 1e999}}}',
            "$.node.Allocatable.MilliCPU",
        ),
    ],
)
def test_bad_bodies_are_400_naming_the_json_path(sidecar: BackgroundServer, verb: str, body: bytes, path: str) -> None:
    code, answer, _ = post(sidecar, verb, body)
    assert code == 400 and answer["code"] == 1
    assert answer["status"].startswith(f"{path}: "), answer
    assert answer["errorMessage"] == answer["status"]
    if b"NaN" in body or b"Infinity" in body:
        assert "NaN and Infinity are not JSON numbers" in answer["status"]


def test_a_bad_session_is_counted_failed_and_latest_kept(sidecar: BackgroundServer, session: dict) -> None:  # type: ignore[type-arg]
    _open(sidecar, orjson.dumps(session))
    latest = sidecar.running.service.session(SESSION)
    stats = extender(sidecar).intake.stats
    failed = stats.failed
    bad = orjson.dumps(session).replace(b'"MilliCPU":', b'"MilliCPU":NaN,"x":', 1)
    _open(sidecar, bad)
    _open(sidecar, b'{"Nodes": {"n1": }')
    assert stats.failed == failed + 2
    assert sidecar.running.service.session(SESSION) is latest  # not replaced
    assert "NaN and Infinity" not in stats.last_error and stats.last_error.startswith("$.Nodes.n1: ")


def test_a_late_error_in_a_big_body_names_the_byte_and_the_nearest_key(sidecar: BackgroundServer) -> None:
    body = (
        b'{"task": {"UID": "u"}, "pad": "'
        + b"x" * (2 << 20)
        + b'", "nodes": [{"Name": "a", "Used": {"MilliCPU": NaN}}]}'
    )
    code, answer, _ = post(sidecar, "prioritize", body)
    assert code == 400
    assert answer["status"].startswith(f"$: JSON is malformed: invalid character (byte {body.index(b'NaN')})")
    assert answer["status"].endswith('NaN and Infinity are not JSON numbers; after the key "MilliCPU"')


def test_json_path_at() -> None:
    body = b'{"a": {"b\\"c": [1, {"d": [true, null, "x,]}"]}]}, "e": 2}'
    assert json_path_at(body, body.index(b"true")) == '$.a.b"c[1].d[0]'
    assert json_path_at(body, body.index(b"null")) == '$.a.b"c[1].d[1]'
    assert json_path_at(body, body.index(b"2}")) == "$.e"
    assert json_path_at(body, 0) == "$"


def test_image_default_and_docs_use_the_manifests_extender_port() -> None:
    """The image's default CMD is the manifests' repack-sidecar args (extender on 8008), and the
    docs' urlPrefix and flag are the scheduler ConfigMap's."""
    root = Path(__file__).resolve().parents[2]
    docker = (root / "Dockerfile").read_text().replace("\\\n", " ")
    cmd = json.loads(re.search(r"^CMD (\[.*\])$", docker, re.M).group(1))  # type: ignore[union-attr]
    patch = yaml.safe_load((root / "manifests/sidecar/scheduler-sidecar-patch.yaml").read_text())
    containers = {c["name"]: c for c in patch["spec"]["template"]["spec"]["containers"]}
    assert cmd == containers["repack-sidecar"]["args"]
    conf = (root / "manifests/extender/volcano-scheduler.conf").read_text()
    url = re.search(r"extender\.urlPrefix: (\S+)", conf).group(1)  # type: ignore[union-attr]
    port = url.rsplit(":", 1)[1]
    assert cmd[cmd.index("--extender-port") + 1] == port == "8008"
    docs = (root / "docs/extender.md").read_text()
    assert set(re.findall(r"extender\.urlPrefix: (\S+)", docs)) == {url}
    assert set(re.findall(r"--extender-port (\d+)", docs)) == {port}
