"""The event-driven controller on the fake cluster port, wired as ``watch`` wires it (Execute's event
maps): a DryRun applied after start is reconciled at once (not after a period), Pod events wake the
unfinished Execute runs whose journal names the pod, a resync moves runs without events, one failing run
does not stop the others, each pass starts from the version the last one wrote, a controller that does
not hold the Lease does nothing, and ``watch`` itself (its cluster the fake): SIGTERM stops it and
releases the Lease; a missing cluster; the in-cluster config."""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from sidecar import logs
from sidecar.cli import main
from sidecar.errors import InputError
from sidecar.fake.cluster import FakeCluster
from sidecar.watcher import runner
from sidecar.watcher.args import LeaseFlags, WatchOptions
from sidecar.watcher.dryrun import dry_run
from sidecar.watcher.execute.events import ExecuteEvents, JournalPods, is_execute
from sidecar.watcher.kit.cache import ClusterCache
from sidecar.watcher.kit.controller import Controller, Mapper, Reconciler, unfinished
from sidecar.watcher.kit.informer import Backoff, Informer
from sidecar.watcher.kit.lease import LeaderElector, LeaseConfig, micro_time
from sidecar.watcher.kit.port import LEASES, PODS, REPACKRUNS, ApiError
from sidecar.watcher.kit.requeue import Reconciled
from sidecar.watcher.kit.status import phase_of
from sidecar.watcher.kit.workqueue import WorkQueue
from sidecar.watcher.sidecarport import InProcessSidecar
from tests.k8s_fixtures import pod, wait_for

ROOT = Path(__file__).resolve().parents[2]
DRYRUN = yaml.safe_load((ROOT / "sidecar" / "data" / "guide-ascend-dryrun.yaml").read_text())
NAME = DRYRUN["metadata"]["name"]
FAST = Backoff(initial=0.05, cap=0.5)
LEASE: dict[str, Any] = {"lease_duration": 1.0, "renew_deadline": 0.6, "retry_period": 0.1}


def create_run(cluster: FakeCluster, name: str = NAME, mode: str = "DryRun") -> None:
    body = {**DRYRUN, "metadata": {"name": name}, "spec": {**DRYRUN["spec"], "mode": mode}}
    cluster.create(REPACKRUNS, body)


def read_run(cluster: FakeCluster, name: str = NAME) -> dict[str, Any]:
    found = cluster.get(REPACKRUNS, name)
    assert found is not None, f"no RepackRun {name}"
    return found


def phase(cluster: FakeCluster, name: str = NAME) -> str:
    """The run's phase as stored (read without a call: the audit stays the watcher's)."""
    return phase_of(cluster.find(REPACKRUNS, name) or {})


class Recorder:
    """A reconciler for tests: wants what ``pick`` selects, records each call, answers with ``answer``."""

    def __init__(
        self, pick: Callable[[dict[str, Any]], bool], answer: Callable[[str], str | None], requeue: float | None = None
    ) -> None:
        self.pick, self.answer, self.requeue = pick, answer, requeue
        self.calls: list[str] = []
        self.lock = threading.Lock()

    def wants(self, run: dict[str, Any]) -> bool:
        return self.pick(run)

    def reconcile(self, run: dict[str, Any]) -> Reconciled:
        name = run["metadata"]["name"]
        with self.lock:
            self.calls.append(name)
        return Reconciled(self.answer(name), self.requeue)

    def count(self, name: str) -> int:
        with self.lock:
            return self.calls.count(name)


class Controllers:
    """Started controllers (cache + worker, no election) with Execute's event maps, as ``watch`` builds
    them (``runner.build_controller``); stopped after the test."""

    def __init__(self, cluster: FakeCluster) -> None:
        self.cluster = cluster
        self.made: list[tuple[Controller, list[tuple[Informer, Mapper]]]] = []

    def __call__(self, reconcilers: list[Reconciler], period: float = 30.0, sync_period: float = 60.0) -> Controller:
        cache = ClusterCache(self.cluster, backoff=FAST)
        maps = ExecuteEvents.maps(cache)
        c = Controller(
            self.cluster, reconcilers, cache=cache, period=period, sync_period=sync_period, backoff=FAST, maps=maps
        )
        cache.start()
        c.start_leading()
        assert cache.wait_for_sync(10)
        self.made.append((c, maps))
        return c

    def runs_of_pod(self, controller: Controller, obj: dict[str, Any]) -> list[str]:
        """The runs the controller's Pod map names for an event of ``obj``."""
        maps = next(m for c, m in self.made if c is controller)
        return [
            name for informer, mapper in maps if informer is controller.cache.pods for name in mapper("MODIFIED", obj)
        ]

    def stop(self) -> None:
        for c, _ in self.made:
            c.stop_leading()
            c.cache.stop()


@pytest.fixture
def controllers(cluster: FakeCluster) -> Iterator[Controllers]:
    made = Controllers(cluster)
    yield made
    made.stop()


def test_a_dryrun_applied_after_start_is_reconciled_without_waiting_for_a_period(
    cluster: FakeCluster, controllers: Controllers
) -> None:
    controllers([dry_run(cluster, InProcessSidecar())], period=60.0)
    time.sleep(0.3)  # the start-up resync is over: only an event can bring the run in now
    started = time.monotonic()
    create_run(cluster)
    wait_for(lambda: phase(cluster) == "Succeeded", timeout=10)
    assert time.monotonic() - started < 10  # ≪ the 60 s period
    time.sleep(0.3)
    # its own status events (Pending, Running) wake the run again, but the cache already shows it
    # finished: no second plan from a stale copy, no conflicting write
    writes = [r.code for r in cluster.audit.records("update", "repackruns") if r.subresource == "status"]
    assert writes == [200, 200, 200]


def test_the_start_up_resync_picks_up_runs_created_before(cluster: FakeCluster, controllers: Controllers) -> None:
    create_run(cluster)
    controllers([dry_run(cluster, InProcessSidecar())], period=60.0)
    wait_for(lambda: phase(cluster) == "Succeeded", timeout=10)


def journal_naming(cluster: FakeCluster, name: str, pod_name: str) -> None:
    """Make ``name`` a Running Execute run whose journal holds one relocation of default/``pod_name``."""
    create_run(cluster, name, mode="Execute")
    run = read_run(cluster, name)
    relocation = {"namespace": "default", "victimPodName": pod_name, "fromNodeName": "a", "plannedNodeName": "b"}
    run["status"] = {"phase": "Running", "relocations": [relocation]}
    cluster.replace(REPACKRUNS, run, status=True)


def test_pod_events_wake_the_execute_runs_whose_journal_names_the_pod(
    cluster: FakeCluster, controllers: Controllers
) -> None:
    """A pod's event maps to the runs waiting for it (controller-runtime's owner mapping), not to
    every unfinished run."""
    execute = Recorder(is_execute, lambda name: None)  # never finishes: waits for rebuilt pods
    controller = controllers([execute], period=60.0)
    journal_naming(cluster, "exec", "worker-0")
    journal_naming(cluster, "other", "worker-9")
    wait_for(lambda: controllers.runs_of_pod(controller, pod("worker-0")) == ["exec"] and execute.count("other") >= 1)
    time.sleep(0.3)
    before, other = execute.count("exec"), execute.count("other")
    cluster.create(PODS, pod("worker-0"))  # the rebuilt replacement
    wait_for(lambda: execute.count("exec") > before)
    cluster.create(PODS, pod("unrelated"))
    time.sleep(0.5)
    assert execute.count("other") == other, "no pod of its journal changed"


def test_a_finished_runs_pods_are_dropped_from_the_index() -> None:
    index = JournalPods()
    run: dict[str, Any] = {"metadata": {"name": "r"}, "spec": {"mode": "Execute"}, "status": {"phase": "Running"}}
    run["status"]["relocations"] = [{"namespace": "ml", "victimPodName": "w-0"}]
    index.update(run)
    assert index.runs(pod("w-0", namespace="ml")) == ["r"]
    index.update({**run, "status": {**run["status"], "phase": "Succeeded"}})
    assert index.runs(pod("w-0", namespace="ml")) == []
    index.update(run)
    index.update(run, deleted=True)
    assert index.runs(pod("w-0", namespace="ml")) == []


def test_a_requeue_delay_brings_the_run_back_without_events(cluster: FakeCluster, controllers: Controllers) -> None:
    waiting = Recorder(unfinished, lambda name: None, requeue=0.2)  # e.g. a cooldown: time passes
    controllers([waiting], period=60.0, sync_period=60.0)
    create_run(cluster, "cooling")
    wait_for(lambda: waiting.count("cooling") >= 4, timeout=5)


def test_the_safety_resync_queues_every_wanted_run(cluster: FakeCluster, controllers: Controllers) -> None:
    quiet = Recorder(unfinished, lambda name: None)  # asks for nothing: only the resync brings it back
    controllers([quiet], period=60.0, sync_period=0.2)
    create_run(cluster, "forgotten")
    wait_for(lambda: quiet.count("forgotten") >= 4, timeout=5)


def test_a_held_execute_run_is_woken_when_another_execute_run_changes(
    cluster: FakeCluster, controllers: Controllers
) -> None:
    seen = Recorder(is_execute, lambda name: None)
    controllers([seen], period=60.0)
    create_run(cluster, "held", mode="Execute")
    wait_for(lambda: seen.count("held") >= 1)
    time.sleep(0.3)
    before = seen.count("held")
    journal_naming(cluster, "holder", "w-1")  # another Execute run moves: the held one may be admitted
    wait_for(lambda: seen.count("held") > before)


def test_a_failing_run_is_retried_with_backoff_and_never_stops_the_others(
    cluster: FakeCluster, controllers: Controllers
) -> None:
    attempts: Counter[str] = Counter()

    def answer(name: str) -> str | None:
        attempts[name] += 1
        if name == "bad" and attempts[name] <= 3:
            raise ApiError(503, "Service Unavailable")
        return None

    recorder = Recorder(lambda run: True, answer)
    controller = controllers([recorder], period=60.0)
    create_run(cluster, "bad")
    create_run(cluster, "good")
    wait_for(lambda: attempts["good"] >= 1 and attempts["bad"] >= 4, timeout=10)
    wait_for(lambda: controller.queue.failures("bad") == 0)  # forgotten once it went through
    assert attempts["good"] == 1


def test_every_reconciler_that_wants_a_run_gets_it_fresh(cluster: FakeCluster, controllers: Controllers) -> None:
    seen: list[tuple[str, str]] = []

    class Mutating:
        def wants(self, run: dict[str, Any]) -> bool:
            return bool(run["metadata"]["name"] == "shared")

        def reconcile(self, run: dict[str, Any]) -> Reconciled:
            seen.append(("first", phase_of(run)))
            run.setdefault("status", {})["phase"] = "Scribbled"  # on its own copy only
            return Reconciled()

    class Second(Mutating):
        def reconcile(self, run: dict[str, Any]) -> Reconciled:
            seen.append(("second", phase_of(run)))
            return Reconciled()

    controller = controllers([Mutating(), Second()], period=60.0)
    create_run(cluster, "shared")
    wait_for(lambda: len(seen) >= 2)
    assert seen[:2] == [("first", ""), ("second", "")]
    assert phase_of(controller.cache.runs.get("shared") or {}) == ""


class Counting:
    """Each pass writes twice, then status.result.passes + 1, each write with the resourceVersion it holds
    (a pass started from a stale copy gets a 409)."""

    def __init__(self, cluster: FakeCluster, upto: int) -> None:
        self.cluster, self.upto = cluster, upto
        self.seen: list[int] = []

    @staticmethod
    def passes(run: dict[str, Any]) -> int:
        return int(((run.get("status") or {}).get("result") or {}).get("passes", 0))

    def wants(self, run: dict[str, Any]) -> bool:
        return run["metadata"]["name"] == "counter" and self.passes(run) < self.upto

    def reconcile(self, run: dict[str, Any]) -> Reconciled:
        self.seen.append(self.passes(run))
        for step in ("journal", "done"):  # two writes a pass, as a journal step and its outcome
            status = {"phase": "Running", "result": {"passes": self.passes(run) + (step == "done"), "step": step}}
            run = self.cluster.replace(REPACKRUNS, {**run, "status": status}, status=True)
        return Reconciled("Running")  # the same phase every pass: only the resourceVersion tells the copies apart


def test_each_pass_starts_from_the_version_the_last_one_wrote(cluster: FakeCluster, controllers: Controllers) -> None:
    counting = Counting(cluster, upto=5)
    controllers([counting], period=60.0)
    create_run(cluster, "counter")
    wait_for(lambda: counting.seen[-1:] == [4])  # each write's own event brings the run back at once
    assert counting.seen == [0, 1, 2, 3, 4]  # never a stale copy: no pass repeated, no 409
    assert {r.code for r in cluster.audit.records("update", "repackruns")} == {200}


def test_finished_runs_a_reconciler_wants_are_resynced_too(cluster: FakeCluster, controllers: Controllers) -> None:
    finished = Recorder(lambda run: not unfinished(run), lambda name: None)  # e.g. TTL: deletes when due
    controllers([finished], period=60.0, sync_period=0.2)
    create_run(cluster, "done")
    run = read_run(cluster, "done")
    run["status"] = {"phase": "Succeeded"}
    cluster.replace(REPACKRUNS, run, status=True)
    wait_for(lambda: finished.count("done") >= 3, timeout=5)


def test_an_api_outage_on_status_writes_is_retried_until_the_run_succeeds(
    cluster: FakeCluster, controllers: Controllers
) -> None:
    cluster.faults.fail("update", "repackruns", 503, times=3, subresource="status")
    controllers([dry_run(cluster, InProcessSidecar())], period=60.0)
    create_run(cluster)
    wait_for(lambda: phase(cluster) == "Succeeded", timeout=15)
    assert cluster.faults.pending() == 0


def held_lease(cluster: FakeCluster, holder: str = "someone-else") -> None:
    now = micro_time(time.time())
    body: dict[str, Any] = {"metadata": {"name": "repack-watcher", "namespace": "default"}}
    body["spec"] = {"holderIdentity": holder, "leaseDurationSeconds": 3600, "renewTime": now, "acquireTime": now}
    cluster.create(LEASES, body)


def the_lease(cluster: FakeCluster) -> dict[str, Any]:
    found = cluster.get(LEASES, "repack-watcher", "default")
    assert found is not None, "no Lease"
    return found


def test_a_controller_without_the_lease_does_nothing_until_it_gets_it(cluster: FakeCluster) -> None:
    held_lease(cluster)
    cache = ClusterCache(cluster, backoff=FAST)
    controller = Controller(cluster, [dry_run(cluster, InProcessSidecar())], cache=cache, period=0.1, backoff=FAST)
    elector = LeaderElector(
        cluster,
        LeaseConfig(identity="me", **LEASE),
        on_started_leading=controller.start_leading,
        on_stopped_leading=controller.stop_leading,
    )
    cache.start()
    elector.start()
    try:
        assert cache.wait_for_sync(10)
        create_run(cluster)
        time.sleep(1.0)  # many periods and retries: nothing may happen while another holds the Lease
        assert phase(cluster) == "" and not elector.is_leader()
        assert not cluster.audit.records("update", "repackruns")
        held = the_lease(cluster)
        held["spec"].pop("holderIdentity")  # the other holder releases it
        cluster.replace(LEASES, held)
        wait_for(lambda: phase(cluster) == "Succeeded", timeout=10)
        assert elector.is_leader()
    finally:
        elector.stop()
        cache.stop()
    assert "holderIdentity" not in the_lease(cluster)["spec"]  # released on stop


def test_two_controllers_reconcile_each_run_once(cluster: FakeCluster) -> None:
    stacks = []
    for who in ("a", "b"):
        recorder = Recorder(unfinished, lambda name: None)
        cache = ClusterCache(cluster, backoff=FAST)
        controller = Controller(cluster, [recorder], cache=cache, period=60.0, backoff=FAST)
        elector = LeaderElector(
            cluster,
            LeaseConfig(identity=who, **LEASE),
            on_started_leading=controller.start_leading,
            on_stopped_leading=controller.stop_leading,
        )
        stacks.append((recorder, cache, elector))
        cache.start()
        elector.start()
    try:
        wait_for(lambda: any(e.is_leader() for _, _, e in stacks))
        create_run(cluster, "only-once")
        wait_for(lambda: sum(r.count("only-once") for r, _, _ in stacks) >= 1)
        time.sleep(0.5)
        assert sorted(r.count("only-once") for r, _, _ in stacks) == [0, 1]
        assert [e.is_leader() for _, _, e in stacks].count(True) == 1
    finally:
        for _, cache, elector in stacks:
            elector.stop()
            cache.stop()


def test_work_queue_dedups_and_requeues_what_changed_while_processing() -> None:
    q = WorkQueue(Backoff(initial=0.05, cap=0.05))
    q.add("a")
    q.add("a")
    q.add("b")
    assert (q.get(0), q.get(0), q.get(0)) == ("a", "b", None)
    q.add("a")  # changed while being processed: once more, after
    assert q.get(0) is None
    q.done("a")
    q.done("b")
    assert (q.get(0), q.get(0)) == ("a", None)
    q.done("a")
    started = time.monotonic()
    assert q.add_rate_limited("a") > 0 and q.failures("a") == 1
    assert q.get(1.0) == "a" and time.monotonic() - started >= 0.03
    q.wake()
    assert q.get(5.0) is None  # a wake makes the next get return at once


def test_a_name_waits_for_one_delayed_add_the_earliest() -> None:
    """Each reconcile asks to come back at its next deadline; the requests do not pile up, and an
    earlier one replaces a later one (client-go's delaying queue)."""
    q = WorkQueue()
    for _ in range(100):
        q.add_after("run", 30.0)
    assert len(q) == 1
    q.add_after("run", 0.05)  # an earlier deadline: taken
    q.add_after("run", 60.0)  # a later one: covered by the pending add
    assert len(q) == 1
    started = time.monotonic()
    assert q.get(1.0) == "run" and time.monotonic() - started < 1.0
    q.done("run")
    assert len(q) == 0 and q.get(0.1) is None  # the replaced 30 s entry does not come back


def test_watch_runs_until_sigterm_then_releases_the_lease(
    cluster: FakeCluster, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``watch`` with leader election on the main thread, its cluster (both connections) the fake:
    the run is planned while it holds the Lease; SIGTERM stops the worker, releases the Lease, and
    ``watch`` returns 0. (The same as a process, on the real control plane: listed for it.)"""
    logs.configure("json", "info")  # the suite's conftest puts its level back afterwards
    monkeypatch.setattr(runner, "connect", lambda kubeconfig, retries=True: cluster)
    lease = LeaseFlags(namespace="default", duration=2, renew_deadline=1.5, retry_period=0.2)
    options = WatchOptions(period=0.5, lease=lease)
    stop = threading.Event()  # the way out should the signal never come (a failed check below)
    seen: dict[str, Any] = {}

    def operator() -> None:
        try:
            create_run(cluster)
            wait_for(lambda: phase(cluster) == "Succeeded", timeout=30)
            seen["holder"] = the_lease(cluster)["spec"]["holderIdentity"]
            os.kill(os.getpid(), signal.SIGTERM)
        except BaseException as exc:
            seen["error"] = exc
            stop.set()

    # a SIGTERM arriving after ``watch`` put its handler back must not end the test run
    previous = signal.signal(signal.SIGTERM, lambda *_: None)
    helper = threading.Thread(target=operator, daemon=True)
    try:
        helper.start()
        assert runner.watch(options, None, stop=stop) == 0
    finally:
        signal.signal(signal.SIGTERM, previous)
        helper.join(10)
    assert "error" not in seen, seen.get("error")  # so the signal, not the way out, stopped it
    assert str(seen["holder"]).startswith(os.uname().nodename)
    assert "holderIdentity" not in the_lease(cluster)["spec"]  # released on the way out
    log = [json.loads(line) for line in capsys.readouterr().err.splitlines() if line.startswith("{")]
    assert {"leading", "stopping", "lease released"} <= {entry.get("event") for entry in log}


def test_watch_without_a_cluster_is_a_one_line_error(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))  # no ~/.kube/config
    assert main(["watch", "--in-process", "--once"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("repack-sidecar: error: --kubeconfig: not given, $KUBECONFIG unset, and no in-cluster config")
    assert "\n" not in err
    assert main(["watch", "--in-process", "--once", "--kubeconfig", str(tmp_path / "missing")]) == 2
    assert capsys.readouterr().err.startswith(f"repack-sidecar: error: --kubeconfig: {tmp_path / 'missing'}")
    assert main(["watch", "--in-process", "--lease-duration", "5", "--renew-deadline", "6"]) == 2
    assert "lease duration > renew deadline" in capsys.readouterr().err


def _in_cluster(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """A pod's environment: the API server's Service address and a mounted token and CA; returns the CA."""
    from kubernetes.config import incluster_config

    token, ca = tmp_path / "token", tmp_path / "ca.crt"
    token.write_text("t0k3n")
    ca.write_text("-----BEGIN CERTIFICATE-----\n")
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1")
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", "443")
    monkeypatch.setattr(incluster_config, "SERVICE_TOKEN_FILENAME", str(token))
    monkeypatch.setattr(incluster_config, "SERVICE_CERT_FILENAME", str(ca))
    return ca


def test_without_a_kubeconfig_the_in_cluster_config_is_used(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from sidecar.watcher import args
    from sidecar.watcher.kit import kube

    ca = _in_cluster(monkeypatch, tmp_path)
    namespace = tmp_path / "namespace"
    namespace.write_text("volcano-system\n")
    monkeypatch.setattr(args, "POD_NAMESPACE_FILE", namespace)
    monkeypatch.delenv("KUBECONFIG", raising=False)
    cluster = kube.connect(None)
    try:
        conf = cluster.api.configuration
        assert (conf.host, conf.ssl_ca_cert, conf.api_key["BearerToken"]) == (
            "https://10.96.0.1:443",
            str(ca),
            "bearer t0k3n",
        )
        assert conf.connection_pool_maxsize >= 32  # six watches, the Lease and the writes at once
    finally:
        cluster.close()
    unretried = kube.connect(None, retries=False)  # the Lease's own: a cut request is not tried again
    try:
        assert unretried.api.configuration.retries is False
    finally:
        unretried.close()
    assert args.lease_namespace(args.LeaseFlags()) == "volcano-system"  # the pod's own namespace
    assert args.lease_namespace(args.LeaseFlags(namespace="ops")) == "ops"


def _kubeconfig(path: Path, server: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": "c",
        "clusters": [{"name": "k", "cluster": {"server": server}}],
        "users": [{"name": "u", "user": {"token": "t"}}],
        "contexts": [{"name": "c", "context": {"cluster": "k", "user": "u"}}],
    }))  # fmt: skip
    return path


def test_the_cluster_is_found_in_kubectls_order(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """--kubeconfig, then $KUBECONFIG, then the in-cluster config, then ~/.kube/config (as kubectl
    and controller-runtime look): an operator's exported KUBECONFIG is honoured as kubectl's is."""
    from sidecar.watcher.kit import kube

    def host() -> str:
        cluster = kube.connect(flag)
        try:
            return str(cluster.api.configuration.host)
        finally:
            cluster.close()

    _in_cluster(monkeypatch, tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path))
    _kubeconfig(tmp_path / ".kube" / "config", "https://home.example:6443")
    env = _kubeconfig(tmp_path / "env.kubeconfig", "https://env.example:6443")
    flag: str | None = str(_kubeconfig(tmp_path / "flag.kubeconfig", "https://flag.example:6443"))
    monkeypatch.setenv("KUBECONFIG", str(env))
    assert host() == "https://flag.example:6443"
    flag = None
    assert host() == "https://env.example:6443"
    monkeypatch.delenv("KUBECONFIG")
    assert host() == "https://10.96.0.1:443"
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST")
    assert host() == "https://home.example:6443"
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "missing"))
    with pytest.raises(InputError, match=r"--kubeconfig: \$KUBECONFIG=.*missing"):
        host()
