"""Bad input never crashes the service: a seeded, bounded fuzzer over the contract.

Requests are valid ones (the guide's snapshot, a columnar synthetic one, one with affinity and
spread) mutated in their protobuf JSON (dropped, duplicated, reordered and truncated fields,
negative/huge/NaN numbers, unknown enum values, empty and 20 KB names, bad selectors, unknown
resources) or in their wire bytes, or plain random bytes. Every answer must be OK,
INVALID_ARGUMENT (its message starting with a field path), NOT_FOUND or DEADLINE_EXCEEDED —
never INTERNAL or UNKNOWN — within its deadline, and memory must stay bounded.
"""

from __future__ import annotations

import copy
import json
import re
import resource
import time
import warnings
from importlib import resources
from typing import Any

import grpc
import pytest
from google.protobuf import json_format
from google.protobuf.message import Message
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sidecar.api.v1alpha1 import service_pb2
from sidecar.errors import MAX_PART, InputError
from sidecar.scenarios.synth import SynthOptions, synth
from sidecar.server.config import MIB
from sidecar.service import Deadline, DeadlineExceeded, NotFound, RepackService, ServiceLimits
from tests.builders import GPU

#: a field path as InputError writes it (``snapshot``, ``tasks[3].requests["x"]``, ``$.node``), then ": "
FIELD_PATH = re.compile(r'^(\$|[A-Za-z_][\w-]*)(\.[A-Za-z_]\w*|\[-?\d+\]|\[".*?"\])*: \S', re.S)
#: most UTF-8 bytes of an error message (two clipped parts and the separator)
MAX_MESSAGE = 2 * MAX_PART + 2
CALL_TIMEOUT = 10.0

HUGE = "n" * 20_000
VALUES: list[Any] = [
    0, -1, 1, 3, 9, 1000, 2**31 - 1, -(2**31), 2**31, 2**53 + 1, 2**63 - 1, 2**63, 2**70, -(2**70),
    9.3e18, 1e19, 1e308, -0.5, 0.5, "NaN", "Infinity", "-Infinity", "", HUGE, "a b", "x", str(2**70),
    "-1", "9223372036854775808", GPU, "cpu", "Gt", "Lt", "In", "Exists", "Foo", "DoNotSchedule",
    "ScheduleAnyway", "NoSchedule", "Running", "Pending", "DryRun", "Honor", "kubernetes.io/hostname",
    True, None, [], {}, ["1", "2"], [str(2**70)], {"a": "b"}, {GPU: 1e19},
]  # fmt: skip
#: values of the same JSON kind as the one replaced, so most mutants still parse and reach the service
SAME_KIND: dict[type, list[Any]] = {
    kind: [
        v for v in VALUES if isinstance(v, (int, float) if kind in (int, float) else kind) and not isinstance(v, bool)
    ]
    for kind in (int, float, str, list, dict)
}
OPS = ("set", "delete", "duplicate", "reverse", "truncate", "add_key", "set_container")


def _guide() -> dict[str, Any]:
    text = resources.files("sidecar.data").joinpath("guide-ascend.json").read_text()
    snap: dict[str, Any] = json.loads(text)
    return snap


NODEORDER = {"leastrequested.weight": "2"}
BINPACK = {"binpack.weight": "3", "binpack.resources": GPU, f"binpack.resources.{GPU}": "5"}


def _constrained() -> dict[str, Any]:
    """Three nodes and a pending task that uses every kind of constraint the mirror evaluates."""
    labels = [{"kubernetes.io/hostname": f"n{i}", "zone": f"z{i % 2}", "rank": str(i * 10)} for i in range(3)]
    labels[2].pop("zone")
    term = {"labelSelector": {"matchLabels": {"app": "a"}}, "topologyKey": "zone"}
    profile = {
        "labels": {"app": "a"},
        "requiredNodeAffinity": [{"matchExpressions": [{"key": "rank", "operator": "Gt", "values": ["5"]}]}],
        "podAntiAffinity": [term],
        "preferredPodAffinity": [{"weight": 10, "term": term}],
        "topologySpreadConstraints": [
            {
                "maxSkew": 1,
                "topologyKey": "zone",
                "whenUnsatisfiable": "DoNotSchedule",
                "labelSelector": term["labelSelector"],
            }
        ],
        "tolerations": [{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}],
    }
    return {
        "nodes": [
            {"name": f"n{i}", "labels": labels[i], "allocatable": {"cpu": 8000, "memory": 2**34, "pods": 10, GPU: 8000}}
            for i in range(3)
        ],
        "namespaces": [{"name": "d", "labels": {"team": "x"}}],
        "podGroups": [{"namespace": "d", "name": "pg", "minMember": 1}],
        "schedulerConfig": {
            "actions": ["allocate"],
            "tiers": [
                {"plugins": [{"name": "predicates"}, {"name": "nodeorder", "arguments": NODEORDER}]},
                {"plugins": [{"name": "binpack", "arguments": BINPACK}]},
            ],
        },
        "pdbs": [{"namespace": "d", "name": "b", "selector": {"matchLabels": {"app": "a"}}, "disruptionsAllowed": 1}],
        "tasks": [
            {"uid": "u0", "namespace": "d", "name": "p0", "node": "n1", "status": "Running", "podGroup": "pg",
             "requests": {"cpu": 1000, GPU: 2000}, "profile": profile},
            {"uid": "u1", "namespace": "d", "name": "p1", "status": "Pending", "podGroup": "pg",
             "requests": {"cpu": 1000, GPU: 1000}, "profile": profile},
        ],
    }  # fmt: skip


#: every RepackSpec field, for the constrained snapshot's Plan
FULL_SPEC = {
    "scope": {
        "podGroups": {"include": {"names": ["d/pg"], "selector": {"matchLabels": {"a": "b"}}}},
        "nodes": {"include": {"selector": {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["z0"]}]}}},
    },
    "maxPerRun": {"podGroups": 2, "resources": {GPU: 4}},
    "eviction": {"gracePeriodSeconds": 3},
    "planner": {"schedulerNames": ["volcano"], "movedPodsWeight": 0.5},
    "ttlSecondsAfterFinished": 5,
}

SNAPSHOTS: list[dict[str, Any]] = [
    _guide(),
    json_format.MessageToDict(synth(SynthOptions(nodes=6, cards_per_node=8, fill=0.6, seed=7))),
    _constrained(),
]
GOALS = ["huawei.com/ascend-1980", GPU, GPU]
METHODS = ("Plan", "Evaluate", "Filter", "Prioritize", "OpenSession")
REQUEST_TYPES: dict[str, type[Message]] = {
    "Plan": service_pb2.PlanRequest,
    "Evaluate": service_pb2.EvaluateRequest,
    "Filter": service_pb2.FilterRequest,
    "Prioritize": service_pb2.PrioritizeRequest,
    "OpenSession": service_pb2.OpenSessionRequest,
}


def base_request(method: str, k: int) -> dict[str, Any]:
    snap = copy.deepcopy(SNAPSHOTS[k])
    if method == "Plan":
        spec = {"mode": "DryRun", "goals": [{"resource": GOALS[k]}]}
        return {"snapshot": snap, "spec": {**spec, **copy.deepcopy(FULL_SPEC)} if k == 2 else spec}
    if method in ("Filter", "Prioritize"):
        tasks = snap.get("tasks") or []
        if tasks:
            return {"snapshot": snap, "task": copy.deepcopy(tasks[-1])}
        return {"snapshot": snap, "taskUid": snap["taskColumns"]["uid"][0]}
    if method == "OpenSession":
        return {"snapshot": snap, "ttlSeconds": 5}
    return {"snapshot": snap, "resources": [GOALS[k]]}


def _slots(tree: Any, out: list[tuple[Any, Any]]) -> list[tuple[Any, Any]]:
    """Every (container, key) in a JSON tree, parents before children."""
    items = tree.items() if isinstance(tree, dict) else enumerate(tree) if isinstance(tree, list) else ()
    for key, value in items:
        out.append((tree, key))
        _slots(value, out)
    return out


def mutate(tree: dict[str, Any], ops: list[tuple[int, str, int]]) -> dict[str, Any]:
    for where, op, v in ops:
        slots = _slots(tree, [])
        if not slots:
            break
        parent, key = slots[where % len(slots)]
        value = parent[key]
        if op == "set":
            pool = SAME_KIND.get(type(value), VALUES) if v % 4 else VALUES
            parent[key] = copy.deepcopy(pool[v % len(pool)])
        elif op == "delete":
            del parent[key]
        elif op == "duplicate" and isinstance(parent, list):
            parent.insert(key, copy.deepcopy(value))
        elif op == "reverse" and isinstance(value, list):
            value.reverse()
        elif op == "truncate" and isinstance(value, list) and value:
            value.pop()
        elif op == "add_key" and isinstance(value, dict):
            name = VALUES[v % len(VALUES)]
            value[name if isinstance(name, str) else f"r{v}"] = copy.deepcopy(VALUES[(v * 7 + 3) % len(VALUES)])
        elif op == "set_container":
            parent[key] = [] if v % 2 else {}
    return tree


MUTATIONS = st.lists(
    st.tuples(st.integers(0, 10**6), st.sampled_from(OPS), st.integers(0, 10**4)), min_size=1, max_size=4
)
REQUESTS = st.tuples(st.sampled_from(METHODS), st.integers(0, len(SNAPSHOTS) - 1), MUTATIONS)


def parsed(method: str, k: int, ops: list[tuple[int, str, int]]) -> Message | None:
    """The mutated request as a message, or None when it is not valid protobuf JSON at all
    (a client library refuses to send that)."""
    body = mutate(base_request(method, k), ops)
    try:
        return json_format.ParseDict(body, REQUEST_TYPES[method]())
    except (json_format.ParseError, ValueError, TypeError, RecursionError):
        return None


def check_invalid_argument(message: str) -> None:
    assert FIELD_PATH.match(message), f"INVALID_ARGUMENT without a field path: {message[:300]!r}"
    assert len(message.encode()) <= MAX_MESSAGE, f"{len(message.encode())}-byte message"


class Tally:
    def __init__(self) -> None:
        self.calls = 0
        self.outcomes: dict[str, int] = {}

    def add(self, outcome: str) -> None:
        self.calls += 1
        self.outcomes[outcome] = self.outcomes.get(outcome, 0) + 1


def fuzz(examples: int) -> settings:
    """Seeded (the same cases every run), bounded, no example database written."""
    return settings(
        max_examples=examples,
        derandomize=True,
        database=None,
        deadline=None,
        suppress_health_check=list(HealthCheck),
    )


def _rss_mib() -> float:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def test_fuzz_service_in_process() -> None:
    """The service itself (no transport), for volume: only InputError/NotFound/DeadlineExceeded escape,
    and no arithmetic warns (a numpy RuntimeWarning is an error here)."""
    service = RepackService(ServiceLimits(max_sessions=4))
    tally = Tally()
    rss_before = _rss_mib()

    @fuzz(2200)
    @given(REQUESTS)
    def run(case: tuple[str, int, list[tuple[int, str, int]]]) -> None:
        method, k, ops = case
        request = parsed(method, k, ops)
        if request is None:
            tally.add("unparsable")
            return
        work = {
            "Plan": service.plan,
            "Evaluate": service.evaluate,
            "Filter": service.filter,
            "Prioritize": service.prioritize,
            "OpenSession": service.open_session,
        }[method]
        try:
            work(request, Deadline(CALL_TIMEOUT))  # type: ignore[arg-type]
            tally.add("ok")
        except InputError as exc:
            check_invalid_argument(str(exc))
            tally.add("invalid")
        except (NotFound, DeadlineExceeded):
            tally.add("other")

    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # overflow/invalid arithmetic fails the case
        run()
    served = tally.calls - tally.outcomes.get("unparsable", 0)
    assert tally.calls >= 2000 and served >= 1200, tally.outcomes
    # the mutations reach past the parser and both ways through the service
    assert tally.outcomes.get("ok", 0) >= 100 and tally.outcomes.get("invalid", 0) >= 100, tally.outcomes
    grown = _rss_mib() - rss_before
    assert grown < 400, f"RSS grew {grown:.0f} MiB over {tally.calls} calls"


ALLOWED = {
    grpc.StatusCode.OK,
    grpc.StatusCode.INVALID_ARGUMENT,
    grpc.StatusCode.NOT_FOUND,
    grpc.StatusCode.DEADLINE_EXCEEDED,
}


@pytest.fixture
def channel(make_server):  # type: ignore[no-untyped-def]
    """A server of its own: the fuzzer's sessions must not evict the shared server's."""
    server = make_server(max_message_bytes=4 * MIB, session_ttl_seconds=60)
    with grpc.insecure_channel(server.target) as ch:
        yield ch


def _unary(channel: grpc.Channel, method: str) -> Any:
    return channel.unary_unary(
        f"/volcano.repack.v1alpha1.Repack/{method}", request_serializer=None, response_deserializer=None
    )


def _call(channel: grpc.Channel, method: str, data: bytes, structured: bool, tally: Tally) -> None:
    """Send raw bytes; the answer must be allowed, in time, and name a field when it is INVALID_ARGUMENT."""
    started = time.monotonic()
    try:
        _unary(channel, method)(data, timeout=CALL_TIMEOUT)
        code, details = grpc.StatusCode.OK, ""
    except grpc.RpcError as exc:
        code, details = exc.code(), exc.details() or ""
    elapsed = time.monotonic() - started
    assert elapsed < CALL_TIMEOUT + 20, f"{method} took {elapsed:.1f} s"  # slack for a loaded machine
    assert code in ALLOWED, f"{method}: {code} {details[:300]!r}"
    # "request is not a valid ...": bytes that are no message at all, answered by the servicer
    if code == grpc.StatusCode.INVALID_ARGUMENT and (structured or not details.startswith("request is not a valid ")):
        check_invalid_argument(details)
    tally.add(code.name)


def test_fuzz_grpc_json_and_bytes(channel) -> None:  # type: ignore[no-untyped-def]
    """The same mutations, mutated wire bytes and random bytes over a real server on loopback."""
    tally = Tally()
    rss_before = _rss_mib()

    @fuzz(250)
    @given(REQUESTS)
    def json_requests(case: tuple[str, int, list[tuple[int, str, int]]]) -> None:
        method, k, ops = case
        request = parsed(method, k, ops)
        if request is not None:
            _call(channel, method, request.SerializeToString(), True, tally)

    @fuzz(250)
    @given(
        st.sampled_from(METHODS),
        st.integers(0, len(SNAPSHOTS) - 1),
        st.lists(st.tuples(st.integers(0, 10**6), st.integers(0, 255)), min_size=1, max_size=8),
    )
    def mutated_bytes(method: str, k: int, flips: list[tuple[int, int]]) -> None:
        data = bytearray(json_format.ParseDict(base_request(method, k), REQUEST_TYPES[method]()).SerializeToString())
        for at, byte in flips:
            data[at % len(data)] = byte
        _call(channel, method, bytes(data), False, tally)

    @fuzz(200)
    @given(st.sampled_from((*METHODS, "CloseSession", "Supplement")), st.binary(max_size=512))
    def random_bytes(method: str, data: bytes) -> None:
        _call(channel, method, data, False, tally)

    json_requests()
    mutated_bytes()
    random_bytes()
    assert tally.calls >= 500, tally.outcomes
    assert "OK" in tally.outcomes and "INVALID_ARGUMENT" in tally.outcomes, tally.outcomes
    grown = _rss_mib() - rss_before
    assert grown < 400, f"RSS grew {grown:.0f} MiB over {tally.calls} calls"
