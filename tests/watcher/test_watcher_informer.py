"""The watcher's informers on the fake cluster port: sync, add/modify/delete, a cut watch resumes from
its resourceVersion, 410 Gone relists with nothing lost and nothing left over, a failing LIST is retried,
a failing WATCH backs off, resync, stop, and ClusterCache.snapshot equal to read_cluster on the same objects."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from sidecar.fake.cluster import FakeCluster
from sidecar.fake.objects import objects_from_snapshot
from sidecar.scenarios.synth import SynthOptions, synth
from sidecar.watcher.kit.cache import ClusterCache, read_cluster
from sidecar.watcher.kit.informer import Backoff, Informer, key_of
from sidecar.watcher.kit.port import PDBS, PODS, Resource, WatchStream
from tests.k8s_fixtures import pod, wait_for

FAST = Backoff(initial=0.05, cap=0.5)


@pytest.fixture
def pods(cluster: FakeCluster) -> Iterator[tuple[Informer, list[tuple[str, str]]]]:
    """A started pod informer and the (event type, pod name) its handler saw."""
    seen: list[tuple[str, str]] = []
    informer = Informer(cluster, PODS, backoff=FAST, watch_timeout=30)
    informer.add_handler(lambda kind, obj: seen.append((kind, obj["metadata"]["name"])))
    informer.start()
    assert informer.wait_for_sync(10)
    yield informer, seen
    informer.stop()


def fresh_list(cluster: FakeCluster) -> list[tuple[str, str, str]]:
    """The pods as a LIST answers now, in the server's order."""
    return [(*key_of(o), o["metadata"]["resourceVersion"]) for o in cluster.listing(PODS).items]


def cached(informer: Informer) -> list[tuple[str, str, str]]:
    return [(*key_of(o), o["metadata"]["resourceVersion"]) for o in informer.items()]


def note_watches(cluster: FakeCluster, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """From now on, the resourceVersion each answered pod watch starts from."""
    versions: list[str] = []
    watch = cluster.watch

    def noted(resource: Resource, resource_version: str, timeout_seconds: int) -> WatchStream:
        stream = watch(resource, resource_version, timeout_seconds)
        if resource == PODS:
            versions.append(resource_version)
        return stream

    monkeypatch.setattr(cluster, "watch", noted)
    return versions


def watching(cluster: FakeCluster, resource: str = "pods") -> bool:
    """A watch of ``resource`` was answered (the fake audits a watch when it opens)."""
    return any(r.code == 200 for r in cluster.audit.records("watch", resource))


def test_syncs_then_sees_add_modify_delete(cluster: FakeCluster, pods: tuple[Informer, list[tuple[str, str]]]) -> None:
    informer, seen = pods
    assert cached(informer) == fresh_list(cluster)  # the LIST, in the API server's order
    assert {kind for kind, _ in seen} == {"ADDED"}
    cluster.create(PODS, pod("probe"))
    wait_for(lambda: informer.get("probe", "default"))
    cluster.patch(PODS, "probe", "default", [{"op": "add", "path": "/metadata/labels/touched", "value": "yes"}])
    wait_for(lambda: (informer.get("probe", "default") or {}).get("metadata", {}).get("labels", {}).get("touched"))
    cluster.delete(PODS, "probe", "default")
    wait_for(lambda: informer.get("probe", "default") is None)
    assert [kind for kind, name in seen if name == "probe"] == ["ADDED", "MODIFIED", "DELETED"]
    assert cached(informer) == fresh_list(cluster)
    assert informer.stats.lists == 1 and informer.resource_version


def test_a_dropped_watch_resumes_from_the_last_resource_version(
    cluster: FakeCluster, pods: tuple[Informer, list[tuple[str, str]]], monkeypatch: pytest.MonkeyPatch
) -> None:
    informer, _ = pods
    wait_for(lambda: watching(cluster))
    cluster.audit.clear()
    resumed = note_watches(cluster, monkeypatch)
    held = informer.resource_version
    assert cluster.drop_watches() >= 1  # the reader gets Unreachable, as from a cut connection
    cluster.create(PODS, pod("after-the-cut"))
    wait_for(lambda: informer.get("after-the-cut", "default"))
    assert informer.stats.lists == 1 and not cluster.audit.records("list", "pods")  # resumed, not relisted
    assert resumed and int(resumed[0]) >= int(held)  # the last event or bookmark seen, never from scratch
    assert informer.stats.errors >= 1  # the cut was a failure (backed off), not a normal end
    assert cached(informer) == fresh_list(cluster)


def test_410_gone_relists_with_nothing_lost_and_no_ghosts(
    cluster: FakeCluster, pods: tuple[Informer, list[tuple[str, str]]]
) -> None:
    informer, seen = pods
    cluster.create(PODS, pod("doomed"))
    wait_for(lambda: informer.get("doomed", "default"))
    wait_for(lambda: watching(cluster))
    # the watch is cut and its resumption held back while the cluster changes and history is compacted,
    # so it resumes from a resourceVersion the server has forgotten: 410 Gone
    cluster.faults.delay(0.5, "watch", "pods")
    cluster.drop_watches()
    cluster.delete(PODS, "doomed", "default")
    cluster.create(PODS, pod("born-in-the-gap"))
    cluster.expire()
    wait_for(lambda: informer.stats.relists_gone >= 1, timeout=10)
    cluster.faults.clear()
    wait_for(lambda: informer.get("born-in-the-gap", "default"))
    assert informer.get("doomed", "default") is None  # no ghost
    assert cached(informer) == fresh_list(cluster)  # nothing lost
    assert ("DELETED", "doomed") in seen and ("ADDED", "born-in-the-gap") in seen
    assert informer.stats.lists == 2
    # and it goes on watching from the new list
    cluster.create(PODS, pod("later"))
    wait_for(lambda: informer.get("later", "default"))


def test_a_500_on_list_is_retried_with_backoff(cluster: FakeCluster) -> None:
    cluster.faults.fail("list", "pods", 500, times=2)
    informer = Informer(cluster, PODS, backoff=FAST).start()
    try:
        assert informer.wait_for_sync(10)
        assert [r.code for r in cluster.audit.records("list", "pods")] == [500, 500, 200]
        assert informer.stats.errors == 2
        assert cached(informer) == fresh_list(cluster)
    finally:
        informer.stop()


def test_a_failing_watch_backs_off_and_recovers(cluster: FakeCluster) -> None:
    cluster.faults.fail("watch", "pods", 503, times=3)
    informer = Informer(cluster, PODS, backoff=FAST).start()
    try:
        assert informer.wait_for_sync(10)
        wait_for(lambda: watching(cluster))
        cluster.create(PODS, pod("eventually"))
        wait_for(lambda: informer.get("eventually", "default"))
        # three refusals, then the watch that stays open (the fake audits a watch when it opens)
        assert [r.code for r in cluster.audit.records("watch", "pods")] == [503, 503, 503, 200]
        assert informer.stats.errors == 3
        assert informer.stats.lists == 1  # a watch error keeps the store: no relist
    finally:
        informer.stop()


def test_resync_relists_in_full_and_reports_no_change_for_unchanged_objects(cluster: FakeCluster) -> None:
    seen: list[str] = []
    informer = Informer(cluster, PODS, resync=0.3, backoff=FAST)
    informer.add_handler(lambda kind, obj: seen.append(kind))
    informer.start()
    try:
        wait_for(lambda: informer.stats.lists >= 2, timeout=10)  # watches end on whole seconds
        assert set(seen) == {"ADDED"} and len(seen) == len(informer)
    finally:
        informer.stop()


def test_stop_cuts_an_open_watch_promptly(cluster: FakeCluster) -> None:
    informer = Informer(cluster, PODS, watch_timeout=300).start()
    assert informer.wait_for_sync(10)
    wait_for(lambda: watching(cluster))
    started = time.monotonic()
    informer.stop()
    assert time.monotonic() - started < 2
    assert not any(t.name == "informer-pods" and t.is_alive() for t in threading.enumerate())


def test_wait_until_wakes_on_change(cluster: FakeCluster, pods: tuple[Informer, list[tuple[str, str]]]) -> None:
    informer, _ = pods
    assert not informer.wait_until(lambda: informer.get("nobody", "default") is not None, timeout=0.1)
    cluster.create(PODS, pod("somebody"))
    assert informer.wait_until(lambda: informer.get("somebody", "default") is not None, timeout=5)


def pdb(name: str, namespace: str = "repack-demo") -> dict[str, Any]:
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"maxUnavailable": 1, "selector": {"matchLabels": {"app": "x"}}},
    }


def caught_up(cache: ClusterCache, cluster: FakeCluster) -> bool:
    """Every informer has seen the server's latest resourceVersion (an event or a bookmark)."""
    latest = int(cluster.resource_version)
    return all(int(i.resource_version or 0) >= latest for i in cache.informers)


@pytest.mark.parametrize("example", ["guide", "synth"])
def test_cluster_cache_snapshot_equals_read_cluster(cluster: FakeCluster, example: str) -> None:
    if example == "synth":
        cluster.load(objects_from_snapshot(synth(SynthOptions(nodes=40, cards_per_node=8, fill=0.6, seed=7))))
    cache = ClusterCache(cluster, backoff=FAST).start()
    try:
        assert cache.wait_for_sync(10)
        cluster.create(PODS, pod("late", namespace="repack-demo", node="ascend-node-02"))
        cluster.delete(PODS, "kube-proxy-1", "kube-system")  # its grace is 0: gone at once
        cluster.create(PDBS, pdb("budget"))
        wait_for(lambda: caught_up(cache, cluster))
        assert cache.snapshot("s") == read_cluster(cluster, name="s")
        assert len(cache.snapshot().pdbs) == 1
        assert cache.list_pods() == cache.pods.items()
    finally:
        cache.stop()


def test_cluster_cache_refresh_lists_once_without_threads(cluster: FakeCluster) -> None:
    cache = ClusterCache(cluster)
    cache.refresh()
    assert cache.has_synced() and not cluster.audit.records("watch")
    assert cache.snapshot("s") == read_cluster(cluster, name="s")
    assert [r.resource for r in cluster.audit.records("list")].count("pods") == 2  # refresh, then read_cluster
    run = cache.run("missing")
    assert run is None and cache.list_runs() == []
