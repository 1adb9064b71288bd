"""The API server emulator driven by the unchanged official ``kubernetes`` client over real loopback HTTP."""

from __future__ import annotations

import threading
import time

import pytest
from kubernetes import client, watch
from kubernetes.client.rest import ApiException

from sidecar.sandbox.apiserver import ApiServer
from tests.k8s_fixtures import node, pod


def test_crud_of_every_builtin_kind(k8s: client.ApiClient) -> None:
    core, coord, policy = client.CoreV1Api(k8s), client.CoordinationV1Api(k8s), client.PolicyV1Api(k8s)
    core.create_namespace({"metadata": {"name": "team"}})
    assert core.read_namespace("team").status.phase == "Active"
    core.create_node(node("n1", zone="a"))
    assert core.read_node("n1").status.conditions[0].type == "Ready"  # nodes keep status on create
    created = core.create_namespaced_pod("team", pod("p1", namespace="team", labels={"app": "x"}))
    assert created.metadata.uid and created.metadata.creation_timestamp and created.status.phase == "Pending"
    lease = {"metadata": {"name": "l1"}, "spec": {"holderIdentity": "me", "leaseDurationSeconds": 15}}
    assert coord.create_namespaced_lease("team", lease).spec.holder_identity == "me"
    pdb = {"metadata": {"name": "b1"}, "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "x"}}}}
    assert policy.create_namespaced_pod_disruption_budget("team", pdb).spec.min_available == 1
    with pytest.raises(ApiException) as exc:
        core.create_namespaced_pod("team", pod("p1", namespace="team"))
    assert exc.value.status == 409 and "AlreadyExists" in exc.value.body
    with pytest.raises(ApiException) as exc:
        core.create_namespaced_pod("nowhere", pod("p2", namespace="nowhere"))
    assert exc.value.status == 404
    coord.delete_namespaced_lease("l1", "team")
    policy.delete_namespaced_pod_disruption_budget("b1", "team")
    core.delete_namespaced_pod("p1", "team")
    core.delete_node("n1")
    assert core.list_namespaced_pod("team").items == []
    with pytest.raises(ApiException) as exc:
        core.read_node("n1")
    assert exc.value.status == 404 and '"reason":"NotFound"' in exc.value.body


def test_stale_update_conflicts_and_generation_follows_spec(k8s: client.ApiClient) -> None:
    core = client.CoreV1Api(k8s)
    core.create_node(node("n1"))
    first = core.read_node("n1")
    assert first.metadata.generation == 1
    first.metadata.labels = {"a": "b"}
    second = core.replace_node("n1", first)
    assert second.metadata.generation == 1  # metadata only
    second.spec = client.V1NodeSpec(unschedulable=True)
    third = core.replace_node("n1", second)
    assert third.metadata.generation == 2
    assert int(third.metadata.resource_version) > int(second.metadata.resource_version)
    with pytest.raises(ApiException) as exc:
        core.replace_node("n1", first)  # first's resourceVersion is stale
    assert exc.value.status == 409 and "the object has been modified" in exc.value.body


def test_selectors_and_pagination(api: ApiServer, k8s: client.ApiClient) -> None:
    core = client.CoreV1Api(k8s)
    for i in range(7):
        api.create(pod(f"p{i}", node="n1" if i % 2 else "n2", labels={"app": "a" if i < 4 else "b", "i": str(i)}))
    names = lambda lst: [p.metadata.name for p in lst.items]  # noqa: E731
    assert names(core.list_namespaced_pod("default", label_selector="app=a,i!=0")) == ["p1", "p2", "p3"]
    assert names(core.list_namespaced_pod("default", label_selector="i in (5,6),!missing")) == ["p5", "p6"]
    assert names(core.list_namespaced_pod("default", label_selector="app notin (a)")) == ["p4", "p5", "p6"]
    assert names(core.list_pod_for_all_namespaces(field_selector="spec.nodeName=n1")) == ["p1", "p3", "p5"]
    assert names(core.list_namespaced_pod("default", field_selector="metadata.name==p2,status.phase!=Running")) == [
        "p2"
    ]
    assert names(core.list_namespaced_pod("default", field_selector="metadata.namespace!=default")) == []
    seen, token, pages = [], None, 0
    while pages < 10:
        page = core.list_namespaced_pod("default", limit=3, _continue=token)
        seen += names(page)
        pages += 1
        token = page.metadata._continue
        if not token:
            break
    assert seen == [f"p{i}" for i in range(7)] and pages == 3
    page = core.list_namespaced_pod("default", limit=3)
    api.faults.expire()
    with pytest.raises(ApiException) as exc:
        core.list_namespaced_pod("default", limit=3, _continue=page.metadata._continue)
    assert exc.value.status == 410


def test_watch_from_a_resource_version_resumes_and_expires(api: ApiServer, k8s: client.ApiClient) -> None:
    core = client.CoreV1Api(k8s)
    api.create(pod("a"))
    rv = core.list_namespaced_pod("default").metadata.resource_version
    api.create(pod("b"))
    core.patch_namespaced_pod("a", "default", {"metadata": {"labels": {"x": "1"}}})
    w = watch.Watch()
    events = [
        (e["type"], e["object"].metadata.name)
        for e in w.stream(core.list_namespaced_pod, "default", resource_version=rv, timeout_seconds=1)
    ]
    assert events == [("ADDED", "b"), ("MODIFIED", "a")]
    for i in range(60):  # push the history window (50) past rv
        api.create(pod(f"f{i}"))
    with pytest.raises(ApiException) as exc:
        list(w.stream(core.list_namespaced_pod, "default", resource_version=rv, timeout_seconds=1))
    assert exc.value.status == 410 and "too old resource version" in exc.value.reason


def test_watch_bookmarks_and_live_events(api: ApiServer, k8s: client.ApiClient) -> None:
    core = client.CoreV1Api(k8s)
    rv = core.list_namespaced_pod("default").metadata.resource_version
    threading.Timer(0.5, lambda: api.create(pod("late"))).start()
    w = watch.Watch()
    kinds = []
    for e in w.stream(
        core.list_namespaced_pod, "default", resource_version=rv, allow_watch_bookmarks=True, timeout_seconds=2
    ):
        kinds.append(e["type"])
        if e["type"] == "ADDED":
            assert e["object"].metadata.name == "late"
    assert "BOOKMARK" in kinds and "ADDED" in kinds
    assert int(w.resource_version) >= int(rv)  # bookmarks advance the resume point


def test_patch_formats_and_status_subresource(api: ApiServer, k8s: client.ApiClient) -> None:
    core = client.CoreV1Api(k8s)
    body = pod("p", labels={"app": "a"})
    body["spec"]["containers"] = [
        {"name": "a", "image": "i:1", "env": [{"name": "X", "value": "1"}]},
        {"name": "b", "image": "j:1"},
    ]
    body["metadata"]["finalizers"] = ["one"]
    core.create_namespaced_pod("default", body)
    strategic = {"spec": {"containers": [{"name": "a", "image": "i:2", "env": [{"name": "Y", "value": "2"}]}]}}
    got = core.patch_namespaced_pod("p", "default", strategic)  # the client sends strategic merge for dicts
    assert [(c.name, c.image) for c in got.spec.containers] == [("a", "i:2"), ("b", "j:1")]
    assert [e.name for e in got.spec.containers[0].env] == ["X", "Y"]
    delete_b = {"spec": {"containers": [{"name": "b", "$patch": "delete"}]}, "metadata": {"finalizers": ["two"]}}
    got = core.patch_namespaced_pod("p", "default", delete_b)
    assert [c.name for c in got.spec.containers] == ["a"] and got.metadata.finalizers == ["one", "two"]
    ops = [
        {"op": "replace", "path": "/metadata/labels/app", "value": "z"},
        {"op": "remove", "path": "/metadata/finalizers"},
    ]
    got = core.patch_namespaced_pod("p", "default", ops)  # a list is sent as JSON patch
    assert got.metadata.labels == {"app": "z"} and not got.metadata.finalizers
    # spec writes ignore status, status writes ignore spec
    got = core.patch_namespaced_pod("p", "default", {"status": {"phase": "Running"}})
    assert got.status.phase == "Pending"
    got = core.patch_namespaced_pod_status("p", "default", {"status": {"phase": "Running"}, "spec": {"nodeName": "x"}})
    assert got.status.phase == "Running" and got.spec.node_name is None
    merge = {"metadata": {"labels": {"merge": "yes"}}}
    core.patch_namespaced_pod("p", "default", merge, _content_type="application/merge-patch+json")
    assert core.read_namespaced_pod("p", "default").metadata.labels == {"app": "z", "merge": "yes"}


def test_graceful_deletion_with_a_finalizer(api: ApiServer, k8s: client.ApiClient) -> None:
    core = client.CoreV1Api(k8s)
    body = pod("p", node="n1")
    body["metadata"]["finalizers"] = ["example.com/hold"]
    core.create_namespaced_pod("default", body)
    core.delete_namespaced_pod("p", "default", grace_period_seconds=0)
    held = core.read_namespaced_pod("p", "default")
    assert held.metadata.deletion_timestamp is not None and held.metadata.deletion_grace_period_seconds == 0
    core.patch_namespaced_pod("p", "default", [{"op": "remove", "path": "/metadata/finalizers"}])
    with pytest.raises(ApiException) as exc:
        core.read_namespaced_pod("p", "default")
    assert exc.value.status == 404
    core.create_namespaced_pod("default", pod("q", node="n1"))
    core.delete_namespaced_pod("q", "default", grace_period_seconds=1)
    assert core.read_namespaced_pod("q", "default").metadata.deletion_timestamp is not None
    _wait(lambda: not core.list_namespaced_pod("default").items, 5)


def _wait(cond: object, timeout: float) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if cond():  # type: ignore[operator]
            return
        time.sleep(0.05)
    raise AssertionError("condition not met in time")


def test_owner_references_are_garbage_collected(api: ApiServer, k8s: client.ApiClient) -> None:
    core, coord = client.CoreV1Api(k8s), client.CoordinationV1Api(k8s)
    owner = coord.create_namespaced_lease("default", {"metadata": {"name": "owner"}, "spec": {}})
    other = coord.create_namespaced_lease("default", {"metadata": {"name": "other"}, "spec": {}})

    def ref(o: client.V1Lease) -> dict[str, str]:
        return {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "name": o.metadata.name,
            "uid": o.metadata.uid,
        }

    only = pod("only")
    only["metadata"]["ownerReferences"] = [ref(owner)]
    both = pod("both")
    both["metadata"]["ownerReferences"] = [ref(owner), ref(other)]
    core.create_namespaced_pod("default", only)
    core.create_namespaced_pod("default", both)
    coord.delete_namespaced_lease("owner", "default")
    _wait(lambda: [p.metadata.name for p in core.list_namespaced_pod("default").items] == ["both"], 5)
    kept = core.read_namespaced_pod("both", "default")
    assert [r.name for r in kept.metadata.owner_references] == ["other"]


def test_binding_and_eviction_subresources(api: ApiServer, k8s: client.ApiClient) -> None:
    core = client.CoreV1Api(k8s)
    core.create_namespaced_pod("default", pod("p"))
    binding = {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": "p"},
        "target": {"kind": "Node", "name": "n1"},
    }
    core.create_namespaced_binding("default", binding, _preload_content=False)
    bound = core.read_namespaced_pod("p", "default")
    assert bound.spec.node_name == "n1" and bound.status.conditions[0].type == "PodScheduled"
    with pytest.raises(ApiException) as exc:
        core.create_namespaced_pod_binding("p", "default", binding, _preload_content=False)
    assert exc.value.status == 409 and "already assigned" in exc.value.body
    eviction = {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": "p"},
                "deleteOptions": {"gracePeriodSeconds": 0}}  # fmt: skip
    resp = core.create_namespaced_pod_eviction("p", "default", eviction, _preload_content=False)
    assert resp.status == 201
    _wait(lambda: not core.list_namespaced_pod("default").items, 5)


def test_fault_injection_and_audit(api: ApiServer, k8s: client.ApiClient) -> None:
    core = client.CoreV1Api(k8s)
    for code in (409, 429, 500, 503):
        api.faults.fail("list", "pods", code, times=2)
        for _ in range(2):
            with pytest.raises(ApiException) as exc:
                core.list_namespaced_pod("default")
            assert exc.value.status == code
        core.list_namespaced_pod("default")  # spent
    api.faults.fail("create", "pods", 500, subresource="binding")
    core.create_namespaced_pod("default", pod("p"))  # the main resource is not affected
    api.faults.delay(0.3, verb="get")
    t0 = time.monotonic()
    core.read_namespaced_pod("p", "default")
    assert time.monotonic() - t0 >= 0.3
    api.faults.clear()
    records = api.audit.records(resource="pods")
    assert [r.code for r in records if r.verb == "list"] == [409, 409, 200, 429, 429, 200, 500, 500, 200, 503, 503, 200]
    assert records[-1].verb == "get" and records[-1].name == "p" and "OpenAPI-Generator" in records[-1].user_agent


def test_dropped_watch_and_forced_expiry(api: ApiServer, k8s: client.ApiClient) -> None:
    core = client.CoreV1Api(k8s)
    rv = core.list_namespaced_pod("default").metadata.resource_version
    got: list[str] = []

    def run() -> None:
        w = watch.Watch()
        try:
            for e in w.stream(core.list_namespaced_pod, "default", resource_version=rv, timeout_seconds=5):
                got.append(e["type"])
        except Exception as exc:
            got.append(type(exc).__name__)

    t = threading.Thread(target=run)
    t.start()
    _wait(lambda: api.store.watchers() == 1, 5)
    assert api.faults.drop_watches() == 1
    t.join(5)
    assert not t.is_alive() and "ADDED" not in got
    api.create(pod("a"))
    api.faults.expire()
    with pytest.raises(ApiException) as exc:
        list(watch.Watch().stream(core.list_namespaced_pod, "default", resource_version=rv, timeout_seconds=1))
    assert exc.value.status == 410


def test_a_dry_run_is_refused_not_applied(k8s: client.ApiClient) -> None:
    """The sandbox has no dry-run path; answering 400 beats writing what the caller asked to only check."""
    core = client.CoreV1Api(k8s)
    with pytest.raises(ApiException) as err:
        core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name="dry")), dry_run="All")
    assert err.value.status == 400 and "dryRun" in err.value.body
    assert "dry" not in [n.metadata.name for n in core.list_namespace().items]
