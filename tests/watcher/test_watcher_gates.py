"""The placement gate: the admission decision (one table), its HTTPS carriage, the webhook's
certificate, the leader's release of gates, and an Execute on the fake cluster port whose rebuilt
pods were admitted through the webhook over HTTPS (the API server's call reproduced in the fake's
admission hook), compared with the tests' in-process stand-in."""

from __future__ import annotations

import base64
import copy
import json
import socket
import ssl
import urllib.error
import urllib.request
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from google.protobuf import json_format

from sidecar.api.v1alpha1 import snapshot_pb2 as pb
from sidecar.fake import jsonpatch
from sidecar.fake.cluster import FakeCluster
from sidecar.fake.plane import ControlPlane, PlaneConfig
from sidecar.mirror.selectors import label_selector_matches
from sidecar.watcher.execute.journal import EvictionRecord, PlacementRecord, Relocation, WorkloadOwner, to_json
from sidecar.watcher.execute.placement import PLACEMENT_GATE
from sidecar.watcher.gate import certs
from sidecar.watcher.gate.index import (
    CONFIGURATION,
    GateIndex,
    Lifter,
    claims_of,
    configuration,
    gate_ops,
    release_reason,
)
from sidecar.watcher.gate.webhook import PATH, WebhookServer
from sidecar.watcher.kit.port import NAMESPACES, PODS, REPACKRUNS, WEBHOOK_CONFIGURATIONS, Resource
from tests.execute_fixtures import (
    NS,
    TRAINING_PG,
    WORKER0,
    WORKER1,
    execute_run,
    gate_runs,
    guide_objects,
    true_reasons,
)

Obj = dict[str, Any]
NOW = datetime(2026, 12, 1, 12, 0, 0, tzinfo=UTC)
JOB_UID, MS_UID = "job-uid", "modelserving-uid"
#: the label the API server keeps on every namespace (what namespaceSelectors match names by)
NAMESPACE_LABEL = "kubernetes.io/metadata.name"


def _rel(
    name: str, group: str, owner: str, *, eviction: str = "Evicted", placement: str = "WaitingForReplacement"
) -> Obj:
    record = Relocation(namespace=NS, victim_pod_name=name, victim_pod_uid=f"uid-{name}", pod_group_name=group,
                        owner=WorkloadOwner(uid=owner), eviction=EvictionRecord(phase=eviction),
                        placement=PlacementRecord(phase=placement))  # fmt: skip
    return to_json(record)


def _run(name: str, *rels: Obj, mode: str = "Execute", phase: str = "Running") -> Obj:
    return {"metadata": {"name": name}, "spec": {"mode": mode}, "status": {"phase": phase, "relocations": list(rels)}}


RUNS = [
    _run("exec", _rel(WORKER0, TRAINING_PG, JOB_UID), _rel(WORKER1, TRAINING_PG, JOB_UID, eviction="Pending"),
         _rel("serving-0-entry", "serving-0", MS_UID), _rel("placed", TRAINING_PG, JOB_UID, placement="Bound"),
         _rel("refused", TRAINING_PG, JOB_UID, eviction="Blocked", placement="Skipped")),
    _run("finished", _rel("old", TRAINING_PG, JOB_UID), phase="Succeeded"),
    _run("dry", _rel("planned-only", TRAINING_PG, JOB_UID), mode="DryRun"),
]  # fmt: skip
GROUP_OWNERS = {(NS, "serving-0-gen2"): MS_UID, (NS, "someone-else"): "other-uid"}


def _pod(name: str, group: str = TRAINING_PG, *, ns: str = NS, **extra: Any) -> Obj:
    pod: Obj = {"metadata": {"name": name, "namespace": ns, "annotations": {"scheduling.k8s.io/group-name": group}},
                "spec": {"containers": [{"name": "c"}]}}  # fmt: skip
    for path, value in extra.items():
        section, key = path.split("__")
        pod[section][key] = value
    return pod


def _index() -> GateIndex:
    index = GateIndex(lambda: RUNS, lambda ns, group: GROUP_OWNERS.get((ns, group), ""))
    index.refresh()
    return index


def _review(pod: Obj, *, operation: str = "CREATE", resource: str = "pods", sub: str = "") -> Obj:
    meta = pod.get("metadata") or {}
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
            "request": {"uid": "req-1", "operation": operation, "namespace": meta.get("namespace", ""),
                        "name": meta.get("name", ""), "resource": {"group": "", "version": "v1", "resource": resource},
                        "subResource": sub, "object": pod}}  # fmt: skip


# (case, the admission request, gated?) — the one table of the admission rule
CASES: list[tuple[str, Obj, bool]] = [
    ("the rebuild of an evicted victim", _review(_pod(WORKER0)), True),
    ("the rebuild of a victim being evicted (journaled Pending)", _review(_pod(WORKER1)), True),
    ("a ModelServing rebuild under a new PodGroup of the recorded owner",
     _review(_pod("serving-0-entry", "serving-0-gen2")), True),
    ("the same name in a PodGroup of another owner", _review(_pod("serving-0-entry", "someone-else")), False),
    ("the same name in another namespace", _review(_pod(WORKER0, ns="other")), False),
    ("another pod of the same Job", _review(_pod("ascend-batch-training-worker-2")), False),
    ("a relocation already placed", _review(_pod("placed")), False),
    ("a relocation whose eviction was refused", _review(_pod("refused")), False),
    ("a relocation of a finished run", _review(_pod("old")), False),
    ("a pod named in a DryRun plan", _review(_pod("planned-only")), False),
    ("a pod created bound (spec.nodeName: a gate is forbidden)",
     _review(_pod(WORKER0, spec__nodeName="ascend-node-02")), False),
    ("a pod update, not a create", _review(_pod(WORKER0), operation="UPDATE"), False),
    ("not a pod", _review(_pod(WORKER0), resource="configmaps"), False),
    ("a pod subresource", _review(_pod(WORKER0), sub="binding"), False),
    ("the victim itself (its UID)", _review(_pod(WORKER0, metadata__uid=f"uid-{WORKER0}")), False),
    ("a terminating pod", _review(_pod(WORKER0, metadata__deletionTimestamp="2026-12-01T00:00:00Z")), False),
]  # fmt: skip


def _patch(response: Obj) -> list[Obj]:
    return list(json.loads(base64.b64decode(response["patch"]))) if "patch" in response else []


@pytest.mark.parametrize(("case", "review", "gated"), CASES, ids=[c[0] for c in CASES])
def test_admission_gates_exactly_the_rebuilds_of_unfinished_relocations(case: str, review: Obj, gated: bool) -> None:
    answer = _index().review(review)
    response = answer["response"]
    assert answer["kind"] == "AdmissionReview" and answer["apiVersion"] == "admission.k8s.io/v1"
    assert response["uid"] == "req-1" and response["allowed"] is True, "the gate never refuses a pod"
    if gated:
        assert response["patchType"] == "JSONPatch"
        assert _patch(response) == [{"op": "add", "path": "/spec/schedulingGates", "value": [{"name": PLACEMENT_GATE}]}]
        assert response["auditAnnotations"]["gated"].startswith("RepackRun exec relocation repack-demo/")
    else:
        assert "patch" not in response and "patchType" not in response


def test_gate_ops_keep_other_gates_and_add_it_once() -> None:
    other = {"spec": {"schedulingGates": [{"name": "example.com/quota"}]}}
    assert gate_ops(other) == [{"op": "add", "path": "/spec/schedulingGates/-", "value": {"name": PLACEMENT_GATE}}]
    assert gate_ops({"spec": {"schedulingGates": [{"name": PLACEMENT_GATE}]}}) == []
    review = _review(_pod(WORKER0, spec__schedulingGates=[{"name": PLACEMENT_GATE}]))
    assert "patch" not in _index().review(review)["response"]


def test_claims_are_indexed_by_victim_name() -> None:
    claims = claims_of(RUNS)
    assert sorted(claims) == sorted((NS, n) for n in (WORKER0, WORKER1, "serving-0-entry"))
    assert len(_index()) == 3


def test_release_when_no_relocation_claims_the_pod_or_after_the_timeout() -> None:
    index = _index()
    created = (NOW - timedelta(seconds=10)).strftime("%Y-%m-%dT%H:%M:%SZ")
    gated = _pod(WORKER0, spec__schedulingGates=[{"name": PLACEMENT_GATE}], metadata__creationTimestamp=created)
    gated["metadata"]["uid"] = "new"
    assert release_reason(gated, index, NOW, timeout=60) == ""  # claimed, waiting for its nomination
    assert release_reason(gated, index, NOW, timeout=10) == "not nominated within 10s of its creation"
    stray = _pod("old", spec__schedulingGates=[{"name": PLACEMENT_GATE}], metadata__creationTimestamp=created)
    assert release_reason(stray, index, NOW, timeout=60) == "no unfinished Execute relocation claims it"
    bound = _pod("old", spec__schedulingGates=[{"name": PLACEMENT_GATE}], spec__nodeName="n")
    assert release_reason(bound, index, NOW, timeout=60) == ""
    foreign = _pod("old", spec__schedulingGates=[{"name": "example.com/quota"}])
    assert release_reason(foreign, index, NOW, timeout=60) == "", "another project's gate is not ours to lift"


# -- the certificate -------------------------------------------------------------------------------------
def test_certificates_serve_their_names_and_renew_from_the_same_ca() -> None:
    names = [*certs.service_names("repack-webhook", "volcano-system"), "127.0.0.1"]
    bundle = certs.issue(names, NOW)
    assert certs.problem(bundle, names, NOW) == ""
    assert set(certs.cert_names(bundle.cert)) == set(names)
    assert certs.problem(bundle, ["other.example"], NOW) == "the certificate lacks other.example"
    assert certs.problem(bundle, names, NOW + timedelta(days=340)).startswith("the certificate expires at ")
    renewed = certs.issue(names, NOW, (bundle.ca, bundle.ca_key))
    assert renewed.ca == bundle.ca and renewed.cert != bundle.cert and certs.problem(renewed, names, NOW) == ""
    broken = certs.Bundle(bundle.ca, bundle.ca_key, b"not a certificate", bundle.key)
    assert certs.problem(broken, names, NOW).startswith("unreadable")


# -- HTTPS -----------------------------------------------------------------------------------------------
def _post(port: int, ca: bytes, body: bytes, headers: dict[str, str] | None = None) -> tuple[int, bytes]:
    context = ssl.create_default_context(cadata=ca.decode())
    request = urllib.request.Request(f"https://127.0.0.1:{port}{PATH}", data=body, method="POST",
                                     headers=headers or {"Content-Type": "application/json"})  # fmt: skip
    try:
        with urllib.request.urlopen(request, timeout=5, context=context) as answer:
            return answer.status, answer.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def test_the_webhook_answers_over_https_with_a_certificate_of_its_ca() -> None:
    bundle = certs.issue(["127.0.0.1"], datetime.now(UTC))
    server = WebhookServer("127.0.0.1", 0, bundle.cert, bundle.key, _index().review)
    try:
        code, body = _post(server.port, bundle.ca, json.dumps(_review(_pod(WORKER0))).encode())
        assert code == 200 and json.loads(body)["response"]["patchType"] == "JSONPatch"
        assert _post(server.port, bundle.ca, b"{not json")[0] == 400
        assert _post(server.port, bundle.ca, b"[1]")[0] == 400
        context = ssl.create_default_context(cadata=bundle.ca.decode())
        with urllib.request.urlopen(f"https://127.0.0.1:{server.port}/healthz", timeout=5, context=context) as ok:
            assert ok.status == 200
        other = certs.issue(["127.0.0.1"], datetime.now(UTC))  # a client trusting another CA refuses it
        with pytest.raises(urllib.error.URLError):
            _post(server.port, other.ca, b"{}")
    finally:
        server.close()


# -- the leader's release, and an Execute behind the gate on the fake cluster ------------------------------
def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _matches(selector: Obj | None, labels: dict[str, str]) -> bool:
    parsed = json_format.ParseDict(selector or {}, pb.LabelSelector(), ignore_unknown_fields=True)
    return label_selector_matches(parsed, labels)


def calls_the_webhooks(cluster: FakeCluster) -> Callable[[Obj], Obj]:
    """The API server's mutating admission as the fake's hook: each webhook of the stored
    MutatingWebhookConfiguration whose selectors match the pod (a namespace's labels include
    ``kubernetes.io/metadata.name``, as the API server keeps them) is POSTed the AdmissionReview
    over HTTPS at its ``url``, trusting only its ``caBundle``, in order, each on the pod as the
    previous one patched it; an unanswered call is skipped (``failurePolicy: Ignore``). The
    answer is their patches in sequence."""

    def admit(review: Obj) -> Obj:
        request = review["request"]
        pod = copy.deepcopy(request["object"])
        ops: list[Obj] = []
        found = cluster.find(WEBHOOK_CONFIGURATIONS, CONFIGURATION)
        ns = cluster.find(NAMESPACES, request["namespace"]) or {}
        ns_labels = {**((ns.get("metadata") or {}).get("labels") or {}), NAMESPACE_LABEL: request["namespace"]}
        for hook in (found or {}).get("webhooks") or []:
            pod_labels = pod["metadata"].get("labels") or {}
            if not (
                _matches(hook.get("namespaceSelector"), ns_labels) and _matches(hook.get("objectSelector"), pod_labels)
            ):
                continue
            client_config = hook["clientConfig"]
            body = json.dumps({**review, "request": {**request, "object": pod}}).encode()
            call = urllib.request.Request(client_config["url"], data=body, method="POST",
                                          headers={"Content-Type": "application/json"})  # fmt: skip
            try:
                ca = base64.b64decode(client_config.get("caBundle", "")).decode()
                context = ssl.create_default_context(cadata=ca or None)
                with urllib.request.urlopen(call, timeout=hook["timeoutSeconds"], context=context) as reply:
                    response = json.loads(reply.read())["response"]
            except (OSError, ValueError, KeyError):
                assert hook["failurePolicy"] == "Ignore"
                continue
            if response.get("patch"):
                patch = list(json.loads(base64.b64decode(response["patch"])))
                pod = jsonpatch.apply(pod, patch)
                ops.extend(patch)
        answer: Obj = {"uid": request["uid"], "allowed": True}
        if ops:
            answer |= {"patchType": "JSONPatch", "patch": base64.b64encode(json.dumps(ops).encode()).decode()}
        return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": answer}

    return admit


def _guide_execute(
    *, webhook: bool, after: Callable[[FakeCluster], None] | None = None
) -> tuple[list[tuple[str, list[str]]], Obj]:
    """The guide's Execute on the fake cluster with its control plane threads and the watcher in
    process (``runner``'s informers, controller and gate); rebuilt pods gated by the webhook (the
    shipped path: the configuration registered by URL, the watcher's Secret, CA injection and HTTPS
    server, the API server's admission call reproduced by ``calls_the_webhooks``) or by the tests'
    stand-in (``gate_runs``: the gate's decision as the fake's admission hook). ``after(cluster)``
    runs once the run finished, the watcher still leading. The pods created (name, gates) and the
    finished run."""
    from sidecar.watcher.args import ExecuteFlags, LeaseFlags, WatchOptions, WebhookFlags
    from sidecar.watcher.kit.cache import ClusterCache
    from sidecar.watcher.runner import build_controller, placement_gate, serve_webhook
    from sidecar.watcher.sidecarport import InProcessSidecar
    from tests.k8s_fixtures import wait_for

    created: list[tuple[str, list[str]]] = []

    def note(resource: Resource, kind: str, obj: Obj) -> None:
        if resource == PODS and kind == "ADDED":
            gates = [g["name"] for g in (obj.get("spec") or {}).get("schedulingGates") or []]
            created.append((obj["metadata"]["name"], gates))

    run = execute_run()
    name = run["metadata"]["name"]
    cluster = FakeCluster(history=500)
    cluster.load(guide_objects(grace=0))
    cluster.create(NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "volcano-system"}})
    cluster.listeners.append(note)
    port = free_port()
    flags = WebhookFlags(port=port, host="127.0.0.1", names=("127.0.0.1",), gate_timeout=60.0)
    options = WatchOptions(period=0.2, lease=LeaseFlags(namespace="volcano-system"), webhook=flags,
                           execute=ExecuteFlags(cooldown=0.0))  # fmt: skip
    cache = ClusterCache(cluster)
    server: WebhookServer | None = None
    chores: list[Lifter] = []
    if webhook:
        # the operator's step where there is no Service network: the configuration by loopback URL
        cluster.create(WEBHOOK_CONFIGURATIONS, configuration({"url": f"https://127.0.0.1:{port}{PATH}"}))
        gates, lifter = placement_gate(cluster, cache, flags.gate_timeout)
        server = serve_webhook(cluster, options, gates)
        chores.append(lifter)
        cluster.admission = calls_the_webhooks(cluster)
    else:
        gate_runs(cluster)
    controller = build_controller(cluster, InProcessSidecar(), cache, options, chores)
    plane = ControlPlane(cluster, PlaneConfig(scheduler_period=0.05)).start()
    cache.start()
    controller.start_leading()

    def current() -> Obj:
        found = cluster.get(REPACKRUNS, name)
        assert found is not None
        return found

    try:
        cluster.create(REPACKRUNS, run)
        wait_for(lambda: current().get("status", {}).get("phase") in ("Succeeded", "Failed"), 30, why="finished")
        if after is not None:
            after(cluster)
        return created, current()
    finally:
        controller.stop_leading()
        cache.stop()
        plane.stop()
        if server is not None:
            server.close()


def _rebuilt(created: list[tuple[str, list[str]]]) -> list[tuple[str, list[str]]]:
    return [c for c in created if c[0] in (WORKER0, WORKER1)]


def test_the_fakes_admission_stand_in_gates_as_the_webhook_does() -> None:
    """``gate_runs`` (the fake's admission hook the step-by-step tests use) creates the same
    rebuilt pods as the webhook path and the run ends the same way."""
    shipped, run = _guide_execute(webhook=True)
    stand_in, other = _guide_execute(webhook=False)
    assert _rebuilt(shipped) == _rebuilt(stand_in) == [(WORKER0, [PLACEMENT_GATE]), (WORKER1, [PLACEMENT_GATE])]

    def outcome(r: Obj) -> Any:
        rels = [(x["victimPodName"], x["placement"]["phase"], x["placement"].get("actualNodeName"))
                for x in r["status"]["relocations"]]  # fmt: skip
        return true_reasons(r), sorted(rels), r["status"]["result"]["freedNodes"]

    assert outcome(run) == outcome(other)


def test_execute_behind_the_gate_then_the_leader_lifts_a_stray_gate() -> None:
    """The shipped path: both rebuilt pods created gated, nominated, released and bound where planned;
    then a gated pod no run claims (a watcher that died before its run ended) is released by the
    leader's next resync."""
    from tests.k8s_fixtures import wait_for

    def stray(cluster: FakeCluster) -> None:
        pod = {"apiVersion": "v1", "kind": "Pod",
               "metadata": {"name": "stray", "namespace": NS, "labels": {"volcano.sh/job-name": "x"}},
               "spec": {"schedulerName": "volcano", "schedulingGates": [{"name": PLACEMENT_GATE}],
                        "containers": [{"name": "c", "image": "pause"}]}}  # fmt: skip
        cluster.create(PODS, pod)

        def lifted() -> bool:
            found = cluster.get(PODS, "stray", NS)
            return found is not None and not found["spec"].get("schedulingGates")

        wait_for(lifted, 10, why="the leader lifted the stray gate")

    created, done = _guide_execute(webhook=True, after=stray)
    assert true_reasons(done) == [("Complete", "ExecutionCompleted")], done["status"]
    for rel in done["status"]["relocations"]:
        placement = rel["placement"]
        assert placement["phase"] == "Bound" and placement["selectedNodeName"] == rel["plannedNodeName"]
    assert _rebuilt(created) == [(WORKER0, [PLACEMENT_GATE]), (WORKER1, [PLACEMENT_GATE])]
    assert ("stray", [PLACEMENT_GATE]) in created


def test_the_lifter_lifts_only_what_is_due() -> None:
    """The chore asks for the pods the informer said carry the gate, and removes exactly those due."""
    index = _index()
    removed: list[list[Obj]] = []

    class Recording(FakeCluster):
        def patch(self, resource: Resource, name: str, namespace: str, ops: list[Obj], *, status: bool = False) -> Obj:
            assert resource == PODS and not status
            removed.append(ops)
            return super().patch(resource, name, namespace, ops, status=status)

    created = (NOW - timedelta(seconds=5)).strftime("%Y-%m-%dT%H:%M:%SZ")
    pods = {
        (NS, WORKER0): _pod(WORKER0, spec__schedulingGates=[{"name": PLACEMENT_GATE}],
                            metadata__creationTimestamp=created, metadata__uid="a"),  # claimed, in time
        (NS, "old"): _pod("old", spec__schedulingGates=[{"name": "x"}, {"name": PLACEMENT_GATE}],
                          metadata__creationTimestamp=created, metadata__uid="b"),  # its run finished
    }  # fmt: skip
    cluster = Recording()
    cluster.load([{"apiVersion": "v1", "kind": "Pod", **p} for p in pods.values()])
    lifter = Lifter(cluster, index, lambda name, ns: pods.get((ns, name)), clock=lambda: NOW, timeout=60)
    for pod in pods.values():
        lifter.on_pod("ADDED", pod)
    lifter.on_pod("ADDED", _pod("ungated"))
    assert lifter() == 1
    assert removed == [[{"op": "test", "path": "/metadata/uid", "value": "b"},
                        {"op": "test", "path": "/spec/schedulingGates/1/name", "value": PLACEMENT_GATE},
                        {"op": "remove", "path": "/spec/schedulingGates/1"}]]  # fmt: skip
    old = cluster.find(PODS, "old", NS)
    assert old is not None and old["spec"]["schedulingGates"] == [{"name": "x"}]
    lifter.on_pod("DELETED", pods[(NS, "old")])
    lifter.timeout = 5
    assert lifter() == 1 and removed[-1][0]["value"] == "a"


def test_the_configuration_selects_workload_pods_outside_system_namespaces() -> None:
    conf = configuration({"url": "https://127.0.0.1:1/mutate-pods"})
    assert [h["failurePolicy"] for h in conf["webhooks"]] == ["Ignore", "Ignore"]
    assert all(h["timeoutSeconds"] <= 5 and h["sideEffects"] == "None" for h in conf["webhooks"])
    labels = [h["objectSelector"]["matchExpressions"][0]["key"] for h in conf["webhooks"]]
    assert labels == ["volcano.sh/job-name", "modelserving.volcano.sh/name"]
    excluded = conf["webhooks"][0]["namespaceSelector"]["matchExpressions"][0]
    assert excluded["operator"] == "NotIn" and "volcano-system" in excluded["values"]


# -- found in review: what must not switch the gate off silently --------------------------------------------
def test_a_certificate_of_another_ca_is_unreadable_not_a_crash() -> None:
    """A Secret whose tls.crt came from another CA (a partial restore): re-issued, never a crash loop."""
    one, other = certs.issue(["127.0.0.1"], NOW), certs.issue(["127.0.0.1"], NOW)
    mixed = certs.Bundle(one.ca, one.ca_key, other.cert, other.key)
    assert certs.problem(mixed, ["127.0.0.1"], NOW).startswith("unreadable: InvalidSignature")
    wrong_key = certs.Bundle(one.ca, other.ca_key, one.cert, one.key)
    assert certs.problem(wrong_key, ["127.0.0.1"], NOW) == "unreadable: a key does not belong to its certificate"


def test_the_served_certificate_is_replaced_in_place() -> None:
    first, second = certs.issue(["127.0.0.1"], datetime.now(UTC)), certs.issue(["127.0.0.1"], datetime.now(UTC))
    server = WebhookServer("127.0.0.1", 0, first.cert, first.key, _index().review)
    try:
        assert _post(server.port, first.ca, json.dumps(_review(_pod(WORKER0))).encode())[0] == 200
        server.reload(second.cert, second.key)
        assert _post(server.port, second.ca, json.dumps(_review(_pod(WORKER0))).encode())[0] == 200
        with pytest.raises(urllib.error.URLError):
            _post(server.port, first.ca, b"{}")
    finally:
        server.close()


def test_the_ca_is_injected_again_when_the_configuration_lost_it() -> None:
    """Applied after the watcher started, or re-applied without caBundle: the next refresh mends it."""
    from sidecar.watcher.args import LeaseFlags, WatchOptions, WebhookFlags
    from sidecar.watcher.runner import webhook_certificate

    cluster = FakeCluster()
    cluster.create(NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "volcano-system"}})
    flags = WebhookFlags(port=1, host="127.0.0.1", names=("127.0.0.1",))
    options = WatchOptions(lease=LeaseFlags(namespace="volcano-system"), webhook=flags)
    cert, _ = webhook_certificate(cluster, options)  # no configuration yet: nothing to inject into
    cluster.create(WEBHOOK_CONFIGURATIONS, configuration({"url": "https://127.0.0.1:1/mutate-pods"}))
    again, _ = webhook_certificate(cluster, options)  # what the periodic refresh does
    assert again == cert, "the Secret's certificate is reused, not re-issued"
    found = cluster.get(WEBHOOK_CONFIGURATIONS, CONFIGURATION)
    assert found is not None
    hooks = found["webhooks"]
    ca = base64.b64decode(hooks[0]["clientConfig"]["caBundle"])
    assert ca.startswith(b"-----BEGIN CERTIFICATE-----") and len({h["clientConfig"]["caBundle"] for h in hooks}) == 1
