"""The watcher's informers on the sandbox API server: sync, add/modify/delete, a dropped watch resumes from
its resourceVersion, 410 Gone relists with nothing lost and nothing left over, a failing LIST is retried,
resync, and ClusterCache.snapshot equal to read_cluster on the same objects."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from kubernetes import client

from sidecar.sandbox.apiserver import ApiServer
from sidecar.scenarios.synth import SynthOptions, synth
from sidecar.watcher.cluster import ClusterCache, read_cluster
from sidecar.watcher.informer import PODS, Backoff, Informer, key_of
from tests.sandbox_fixtures import pod, wait_for

FAST = Backoff(initial=0.05, cap=0.5)


@pytest.fixture
def pods(k8s: client.ApiClient) -> Iterator[tuple[Informer, list[tuple[str, str]]]]:
    """A started pod informer and the (event type, pod name) its handler saw."""
    seen: list[tuple[str, str]] = []
    informer = Informer(k8s, PODS, backoff=FAST, watch_timeout=30)
    informer.add_handler(lambda kind, obj: seen.append((kind, obj["metadata"]["name"])))
    informer.start()
    assert informer.wait_for_sync(10)
    yield informer, seen
    informer.stop()


def fresh_list(k8s: client.ApiClient) -> list[tuple[str, str, str]]:
    doc = json.loads(client.CoreV1Api(k8s).list_pod_for_all_namespaces(_preload_content=False).data)
    return [(*key_of(o), o["metadata"]["resourceVersion"]) for o in doc["items"]]


def cached(informer: Informer) -> list[tuple[str, str, str]]:
    return [(*key_of(o), o["metadata"]["resourceVersion"]) for o in informer.items()]


def watch_params(api: ApiServer, resource: str = "pods") -> list[dict[str, str]]:
    records = api.audit.records("watch", resource)
    return [{k: v[-1] for k, v in parse_qs(urlsplit(r.path).query).items()} for r in records]


def test_syncs_then_sees_add_modify_delete(k8s: client.ApiClient, pods: tuple[Informer, list[tuple[str, str]]]) -> None:
    informer, seen = pods
    assert cached(informer) == fresh_list(k8s)  # the LIST, in the API server's order
    assert {kind for kind, _ in seen} == {"ADDED"}
    core = client.CoreV1Api(k8s)
    core.create_namespaced_pod("default", pod("probe"))
    wait_for(lambda: informer.get("probe", "default"))
    core.patch_namespaced_pod("probe", "default", {"metadata": {"labels": {"touched": "yes"}}})
    wait_for(lambda: (informer.get("probe", "default") or {}).get("metadata", {}).get("labels", {}).get("touched"))
    core.delete_namespaced_pod("probe", "default")
    wait_for(lambda: informer.get("probe", "default") is None)
    assert [kind for kind, name in seen if name == "probe"] == ["ADDED", "MODIFIED", "DELETED"]
    assert cached(informer) == fresh_list(k8s)
    assert informer.stats.lists == 1 and informer.resource_version


def test_a_dropped_watch_resumes_from_the_last_resource_version(
    api: ApiServer, k8s: client.ApiClient, pods: tuple[Informer, list[tuple[str, str]]]
) -> None:
    informer, _ = pods
    wait_for(lambda: api.store.watchers() >= 1)
    api.audit.clear()
    held = informer.resource_version
    assert api.faults.drop_watches() >= 1
    client.CoreV1Api(k8s).create_namespaced_pod("default", pod("after-the-cut"))
    wait_for(lambda: informer.get("after-the-cut", "default"))
    assert informer.stats.lists == 1 and not api.audit.records("list", "pods")  # resumed, not relisted
    resumed = watch_params(api)[0]
    assert int(resumed["resourceVersion"]) >= int(held)  # the last event or bookmark seen, never from scratch
    assert resumed["allowWatchBookmarks"] == "true"
    assert cached(informer) == fresh_list(k8s)


def test_410_gone_relists_with_nothing_lost_and_no_ghosts(
    api: ApiServer, k8s: client.ApiClient, pods: tuple[Informer, list[tuple[str, str]]]
) -> None:
    informer, seen = pods
    core = client.CoreV1Api(k8s)
    core.create_namespaced_pod("default", pod("doomed"))
    wait_for(lambda: informer.get("doomed", "default"))
    wait_for(lambda: api.store.watchers() >= 1)
    # the watch is cut and its resumption held back while the cluster changes and history is compacted,
    # so it resumes from a resourceVersion the server has forgotten: an ERROR event with code 410
    api.faults.delay(0.5, "watch", "pods")
    api.faults.drop_watches()
    core.delete_namespaced_pod("doomed", "default")
    core.create_namespaced_pod("default", pod("born-in-the-gap"))
    api.faults.expire()
    wait_for(lambda: informer.stats.relists_gone >= 1, timeout=10)
    api.faults.clear()
    wait_for(lambda: informer.get("born-in-the-gap", "default"))
    assert informer.get("doomed", "default") is None  # no ghost
    assert cached(informer) == fresh_list(k8s)  # nothing lost
    assert ("DELETED", "doomed") in seen and ("ADDED", "born-in-the-gap") in seen
    assert informer.stats.lists == 2
    # and it goes on watching from the new list
    core.create_namespaced_pod("default", pod("later"))
    wait_for(lambda: informer.get("later", "default"))


def test_a_500_on_list_is_retried_with_backoff(api: ApiServer, k8s: client.ApiClient) -> None:
    api.faults.fail("list", "pods", 500, times=2)
    informer = Informer(k8s, PODS, backoff=FAST).start()
    try:
        assert informer.wait_for_sync(10)
        wait_for(lambda: len(api.audit.records("list", "pods")) == 3)  # a request is audited after its answer
        assert [r.code for r in api.audit.records("list", "pods")] == [500, 500, 200]
        assert informer.stats.errors == 2
        assert cached(informer) == fresh_list(k8s)
    finally:
        informer.stop()


def test_a_failing_watch_backs_off_and_recovers(api: ApiServer, k8s: client.ApiClient) -> None:
    api.faults.fail("watch", "pods", 503, times=3)
    informer = Informer(k8s, PODS, backoff=FAST).start()
    try:
        assert informer.wait_for_sync(10)
        wait_for(lambda: api.store.watchers() >= 1)
        client.CoreV1Api(k8s).create_namespaced_pod("default", pod("eventually"))
        wait_for(lambda: informer.get("eventually", "default"))
        # (an open watch is audited when it ends: the three refusals are all there is so far)
        assert [r.code for r in api.audit.records("watch", "pods")] == [503, 503, 503]
        assert informer.stats.lists == 1  # a watch error keeps the store: no relist
    finally:
        informer.stop()


def test_resync_relists_in_full_and_reports_no_change_for_unchanged_objects(k8s: client.ApiClient) -> None:
    seen: list[str] = []
    informer = Informer(k8s, PODS, resync=0.3, backoff=FAST)
    informer.add_handler(lambda kind, obj: seen.append(kind))
    informer.start()
    try:
        wait_for(lambda: informer.stats.lists >= 2, timeout=10)  # watches end on whole seconds
        assert set(seen) == {"ADDED"} and len(seen) == len(informer)
    finally:
        informer.stop()


def test_stop_cuts_an_open_watch_promptly(api: ApiServer, k8s: client.ApiClient) -> None:
    informer = Informer(k8s, PODS, watch_timeout=300).start()
    assert informer.wait_for_sync(10)
    wait_for(lambda: api.store.watchers() >= 1)
    started = time.monotonic()
    informer.stop()
    assert time.monotonic() - started < 2
    assert not any(t.name == "informer-pods" and t.is_alive() for t in threading.enumerate())


def test_wait_until_wakes_on_change(k8s: client.ApiClient, pods: tuple[Informer, list[tuple[str, str]]]) -> None:
    informer, _ = pods
    assert not informer.wait_until(lambda: informer.get("nobody", "default") is not None, timeout=0.1)
    client.CoreV1Api(k8s).create_namespaced_pod("default", pod("somebody"))
    assert informer.wait_until(lambda: informer.get("somebody", "default") is not None, timeout=5)


def pdb(name: str, namespace: str = "repack-demo") -> dict[str, Any]:
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"maxUnavailable": 1, "selector": {"matchLabels": {"app": "x"}}},
    }


def caught_up(cache: ClusterCache, api: ApiServer) -> bool:
    """Every informer has seen the server's latest resourceVersion (an event or a bookmark)."""
    return all(int(i.resource_version or 0) >= api.store.rv for i in cache.informers)


@pytest.mark.parametrize("cluster", ["guide", "synth"])
def test_cluster_cache_snapshot_equals_read_cluster(api: ApiServer, k8s: client.ApiClient, cluster: str) -> None:
    if cluster == "synth":
        api.load(synth(SynthOptions(nodes=40, cards_per_node=8, fill=0.6, seed=7)))
    cache = ClusterCache(k8s, backoff=FAST).start()
    try:
        assert cache.wait_for_sync(10)
        core = client.CoreV1Api(k8s)
        core.create_namespaced_pod("repack-demo", pod("late", namespace="repack-demo", node="ascend-node-02"))
        core.delete_namespaced_pod("kube-proxy-1", "kube-system", grace_period_seconds=0)
        client.PolicyV1Api(k8s).create_namespaced_pod_disruption_budget("repack-demo", pdb("budget"))
        wait_for(lambda: caught_up(cache, api))
        assert cache.snapshot("s") == read_cluster(k8s, name="s")
        assert len(cache.snapshot().pdbs) == 1
        assert cache.list_pods() == cache.pods.items()
    finally:
        cache.stop()


def test_cluster_cache_refresh_lists_once_without_threads(api: ApiServer, k8s: client.ApiClient) -> None:
    cache = ClusterCache(k8s)
    cache.refresh()
    assert cache.has_synced() and api.store.watchers() == 0
    assert cache.snapshot("s") == read_cluster(k8s, name="s")
    assert [r.resource for r in api.audit.records("list")].count("pods") == 2  # refresh, then read_cluster
    run = cache.run("missing")
    assert run is None and cache.list_runs() == []
