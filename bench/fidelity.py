"""Differential fidelity: the mirror against Volcano's compiled predicates and node order.

    python -m bench.fidelity [--pairs 100000] [--seed 1] [--show 5] [--plugins 10] [--conf FILE]

A seeded generator writes random clusters as Kubernetes objects (nodes with taints, labels and
scalars, some overcommitted; running, releasing, bound and finished pods with requests, host
ports and anti-affinity; several pending pods with every kind of placement rule) and a random
volcano-scheduler.conf (predicate switches, nodeorder and binpack weights). Both sides read the
same objects: Volcano's code through ``volcano-oracle`` (go/plugin/fidelity: a mock scheduler
cache, framework.OpenSession, the allocate action's predicate and util.PrioritizeNodes), the
mirror through ``snapshot_from_objects`` and the service's Prioritize. Per (task, node) pair:
feasibility, the failure code, the reasons (as text), and the score of feasible nodes; with
``--plugins K``, every K-th cluster is also asked once per node-order function alone (the
others' weights 0), for agreement per plugin. Reports agreement per check and the first
disagreements found, each named by the seed that produced it (rerun with ``--seed``).
"""

from __future__ import annotations

import argparse
import itertools
import json
import queue
import random
import subprocess
import sys
import time
from collections import Counter, deque
from collections.abc import Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sidecar.api.v1alpha1 import service_pb2
from sidecar.mirror.conf import NODEORDER_DEFAULTS, PREDICATE_SWITCHES, to_proto
from sidecar.mirror.explain import (
    AFFINITY,
    NODE_AFFINITY,
    NODE_UNSCHEDULABLE,
    POD_NUMBER,
    SPREAD,
    SPREAD_LABEL,
    TAINT,
    UNRESOLVABLE,
    UNSCHEDULABLE,
    reason_code,
)
from sidecar.service import Deadline, RepackService
from sidecar.snapshot.kube import parse_quantity, snapshot_from_objects

ROOT = Path(__file__).resolve().parents[1]
BUILD = ROOT / "go" / "controlplane" / "build.sh"
GPU = "nvidia.com/gpu"
Obj = dict[str, Any]
#: Volcano's status codes (pkg/scheduler/api/types.go) of the contract's FailureCode
VOLCANO_CODE = {service_pb2.UNSCHEDULABLE: 2, service_pb2.UNSCHEDULABLE_AND_UNRESOLVABLE: 3}
CHECKS = ("feasibility", "code", "reasons", "score")


def oracle_binary() -> Path:
    done = subprocess.run([str(BUILD)], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"go/controlplane/build.sh failed:\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
    out = subprocess.run([str(BUILD), "--print-bin"], capture_output=True, text=True, check=True).stdout.strip()
    return Path(out) / "volcano-oracle"


class Oracle:
    """One volcano-oracle process: a case per line in, an answer per line out."""

    def __init__(self, binary: Path) -> None:
        self.proc = subprocess.Popen([str(binary)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)

    def ask(self, objects: list[Obj], confs: list[str], tasks: list[str]) -> list[list[dict[str, Any]]]:
        """Volcano's answers, ``[conf][task]`` -> {"nodes": {node: answer}}."""
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(json.dumps({"objects": objects, "confs": confs, "tasks": tasks}) + "\n")
        self.proc.stdin.flush()
        answer: dict[str, Any] = json.loads(self.proc.stdout.readline())
        if answer.get("error"):
            raise RuntimeError(f"volcano-oracle: {answer['error']}")
        answers: list[list[dict[str, Any]]] = answer["answers"]
        return answers

    def session_body(self, objects: list[Obj], conf: str, path: Path) -> None:
        """Write the session of ``objects`` under ``conf`` to ``path`` as Volcano's extender plugin
        marshals it for onSessionOpen (its own json.Marshal of its own structs)."""
        assert self.proc.stdin is not None and self.proc.stdout is not None
        case = {"objects": objects, "confs": [conf], "tasks": [], "sessionBodyTo": str(path)}
        self.proc.stdin.write(json.dumps(case) + "\n")
        self.proc.stdin.flush()
        answer: dict[str, Any] = json.loads(self.proc.stdout.readline())
        if answer.get("error"):
            raise RuntimeError(f"volcano-oracle: {answer['error']}")

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        self.proc.wait(timeout=30)

    def __enter__(self) -> Oracle:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


class OraclePool:
    """Several volcano-oracle processes answering cases concurrently: each case opens a mock
    scheduler cache whose informers Volcano syncs on a 100 ms poll, time a single process would
    spend waiting. Processes, not goroutines: Volcano's scheduler packages keep global state."""

    #: cases one process answers before it is replaced: each case's mock cache leaves memory behind
    #: in Volcano's packages (a 1,000,000-pair run grew four processes to 6 GB each and swapped)
    CASES_PER_PROCESS = 300

    def __init__(self, binary: Path, processes: int = 4) -> None:
        self._binary = binary
        self._idle: queue.SimpleQueue[tuple[Oracle, int]] = queue.SimpleQueue()
        self._all = [Oracle(binary) for _ in range(processes)]
        for o in self._all:
            self._idle.put((o, 0))
        self._threads = ThreadPoolExecutor(processes, thread_name_prefix="oracle")
        self.size = processes

    def submit(self, objects: list[Obj], confs: list[str], tasks: list[str]) -> Future[list[list[dict[str, Any]]]]:
        def ask() -> list[list[dict[str, Any]]]:
            oracle, answered = self._idle.get()
            if answered >= self.CASES_PER_PROCESS:
                oracle.close()
                fresh = Oracle(self._binary)
                self._all[self._all.index(oracle)] = fresh
                oracle, answered = fresh, 0
            try:
                return oracle.ask(objects, confs, tasks)
            finally:
                self._idle.put((oracle, answered + 1))

        return self._threads.submit(ask)

    def close(self) -> None:
        self._threads.shutdown(wait=True)
        for o in self._all:
            o.close()

    def __enter__(self) -> OraclePool:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


# -- the generator -------------------------------------------------------------------------------
ZONES = ("z0", "z1", "z2")
TAINT_KEYS = ("dedicated", "gpu", "maintenance")
EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
APPS = ("web", "train", "infer")


def _meta(name: str, namespace: str = "", labels: dict[str, str] | None = None, **extra: Any) -> Obj:
    m: Obj = {"name": name, "uid": f"uid-{namespace}-{name}"}
    if namespace:
        m["namespace"] = namespace
    if labels:
        m["labels"] = labels
    m.update(extra)
    return m


def _selector(rng: random.Random) -> Obj:
    if rng.random() < 0.6:
        return {"matchLabels": {"app": rng.choice(APPS)}}
    op = rng.choice(("In", "NotIn", "Exists", "DoesNotExist"))
    expr: Obj = {"key": "app", "operator": op}
    if op in ("In", "NotIn"):
        expr["values"] = rng.sample(APPS, rng.randint(1, 2))
    return {"matchExpressions": [expr]}


def _node_requirement(rng: random.Random) -> Obj:
    key = rng.choice(("zone", "rack", "pool", "kubernetes.io/hostname"))
    op = rng.choice(("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"))
    req: Obj = {"key": key, "operator": op}
    if op in ("In", "NotIn"):
        values = {"zone": ZONES, "rack": ("r0", "r1", "r2", "r3"), "pool": ("a", "b")}.get(
            key, ("n-00", "n-01", "n-02")
        )
        req["values"] = rng.sample(list(values), rng.randint(1, 2))
    elif op in ("Gt", "Lt"):
        req["key"] = "rank"
        req["values"] = [str(rng.randint(0, 9))]
    return req


def _pod_term(rng: random.Random) -> Obj:
    term: Obj = {"labelSelector": _selector(rng), "topologyKey": rng.choice(("zone", "kubernetes.io/hostname", "rack"))}
    r = rng.random()
    if r < 0.2:
        term["namespaces"] = [rng.choice(("fa", "fb"))]
    elif r < 0.35:
        term["namespaceSelector"] = {} if rng.random() < 0.5 else {"matchLabels": {"team": rng.choice(("a", "b"))}}
    return term


def _quantity_cpu(rng: random.Random, low: int, high: int) -> str:
    return f"{rng.randint(low, high) * 250}m"


@dataclass(frozen=True)
class Case:
    """A random cluster: its objects, its pending pods ("namespace/name") and its conf."""

    seed: int
    objects: list[Obj]
    tasks: list[str]
    conf: Conf


def gen_case(seed: int) -> Case:
    """A random cluster, deterministic in ``seed``: usually 3-10 nodes, sometimes up to 32; up to
    three pods per node; one to six pending pods, each in its own PodGroup."""
    rng = random.Random(seed)
    objects: list[Obj] = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": _meta("fa", labels={"team": "a"})},
        {"apiVersion": "v1", "kind": "Namespace", "metadata": _meta("fb", labels={"team": "b"})},
    ]
    names = [f"n-{i:02d}" for i in range(rng.randint(3, 10) if rng.random() < 0.85 else rng.randint(11, 32))]
    overcommit = rng.random() < 0.1  # a node may hold more than it has (Volcano's idle goes negative)
    free: dict[str, dict[str, float]] = {}  # what each node has left
    for name in names:
        labels = {"kubernetes.io/hostname": name, "rank": str(rng.randint(0, 9))}
        if rng.random() < 0.85:
            labels["zone"] = rng.choice(ZONES)
        if rng.random() < 0.6:
            labels["rack"] = rng.choice(("r0", "r1", "r2", "r3"))
        if rng.random() < 0.5:
            labels["pool"] = rng.choice(("a", "b"))
        alloc = {"cpu": str(rng.choice((4, 8, 16, 32))), "memory": f"{rng.choice((8, 16, 64))}Gi",
                 "pods": str(rng.choice((3, 8, 110)))}  # fmt: skip
        if rng.random() < 0.6:
            alloc[GPU] = str(rng.choice((0, 4, 8)))
        free[name] = {r: parse_quantity(q) for r, q in alloc.items()}
        spec: Obj = {}
        if rng.random() < 0.3:
            spec["taints"] = [
                {"key": rng.choice(TAINT_KEYS), "value": rng.choice(("x", "y", "")), "effect": rng.choice(EFFECTS)}
                for _ in range(rng.randint(1, 2))
            ]
        if rng.random() < 0.08:
            spec["unschedulable"] = True
        objects.append({"apiVersion": "v1", "kind": "Node", "metadata": _meta(name, labels=labels), "spec": spec,
                        "status": {"allocatable": alloc, "capacity": alloc,
                                   "conditions": [{"type": "Ready", "status": "True"}]}})  # fmt: skip
    pods: list[Obj] = []
    groups: list[Obj] = []
    for j in range(rng.randint(0, 3 * len(names))):
        ns = rng.choice(("fa", "fb"))
        node = rng.choice(names)
        group = f"g{j}"
        pod = _pod(rng, f"p{j}", ns, rng.choice(APPS), group, running_on=node)
        need = {r: parse_quantity(q) for r, q in pod["spec"]["containers"][0]["resources"]["requests"].items()}
        need["pods"] = 1.0
        if not overcommit and any(free[node].get(r, 0.0) < q for r, q in need.items()):
            continue  # a kubelet would not run it
        for r, q in need.items():
            free[node][r] = free[node].get(r, 0.0) - q
        groups.append({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
                       "metadata": _meta(group, ns), "spec": {"minMember": 1, "queue": "default"},
                       "status": {"phase": "Running"}})  # fmt: skip
        pods.append(pod)
    tasks = []
    for k in range(rng.randint(1, 6)):
        ns, name = rng.choice(("fa", "fb")), f"subject-{k}"
        groups.append({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
                       "metadata": _meta(name, ns), "spec": {"minMember": 1, "queue": "default"},
                       "status": {"phase": "Inqueue"}})  # fmt: skip
        subject = _pod(rng, name, ns, rng.choice(APPS), name, running_on=None)
        _rules(rng, subject)
        pods.append(subject)
        tasks.append(f"{ns}/{name}")
    objects += groups + pods
    return Case(seed, objects, tasks, gen_conf(rng))


def _pod(rng: random.Random, name: str, ns: str, app: str, group: str, running_on: str | None) -> Obj:
    requests: Obj = {}
    if rng.random() < 0.85:
        requests["cpu"] = _quantity_cpu(rng, 1, 16)
    if rng.random() < 0.85:
        requests["memory"] = f"{rng.randint(1, 16)}Gi"
    if rng.random() < 0.4:
        requests[GPU] = str(rng.randint(1, 4))
    container: Obj = {"name": "main", "image": "x", "resources": {"requests": requests, "limits": {}}}
    if GPU in requests:
        container["resources"]["limits"][GPU] = requests[GPU]
    if rng.random() < 0.15:
        container["ports"] = [{"containerPort": 80, "hostPort": rng.choice((8080, 8081)),
                               "protocol": rng.choice(("TCP", "UDP"))}]  # fmt: skip
    spec: Obj = {"schedulerName": "volcano", "priority": 0, "containers": [container]}
    labels = {"app": app}
    if rng.random() < 0.5:
        labels["pod-template-hash"] = rng.choice(("h1", "h2"))
    meta = _meta(name, ns, labels=labels, annotations={"scheduling.k8s.io/group-name": group})
    status: Obj = {"phase": "Pending"}
    if running_on is not None:
        spec["nodeName"] = running_on
        r = rng.random()
        if r < 0.08:  # Releasing: a running pod being deleted
            status = {"phase": "Running"}
            meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
        elif r < 0.12:  # Bound: on its node, not started yet
            status = {"phase": "Pending"}
        elif r < 0.16:  # finished: on no node's account
            status = {"phase": rng.choice(("Succeeded", "Failed"))}
        else:
            status = {"phase": "Running"}
        if rng.random() < 0.2:
            spec.setdefault("affinity", {})["podAntiAffinity"] = {
                "requiredDuringSchedulingIgnoredDuringExecution": [_pod_term(rng)]
            }
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec, "status": status}


def _rules(rng: random.Random, pod: Obj) -> None:
    """Placement rules on the pending pod: each kind with some probability."""
    spec = pod["spec"]
    if rng.random() < 0.2:
        spec["nodeSelector"] = {"zone": rng.choice(ZONES)}
    affinity: Obj = {}
    if rng.random() < 0.3:
        terms = [{"matchExpressions": [_node_requirement(rng) for _ in range(rng.randint(1, 2))]}
                 for _ in range(rng.randint(1, 2))]  # fmt: skip
        affinity.setdefault("nodeAffinity", {})["requiredDuringSchedulingIgnoredDuringExecution"] = {
            "nodeSelectorTerms": terms
        }
    if rng.random() < 0.3:
        affinity.setdefault("nodeAffinity", {})["preferredDuringSchedulingIgnoredDuringExecution"] = [
            {"weight": rng.randint(1, 100), "preference": {"matchExpressions": [_node_requirement(rng)]}}
            for _ in range(rng.randint(1, 2))
        ]
    for kind in ("podAffinity", "podAntiAffinity"):
        if rng.random() < 0.2:
            affinity.setdefault(kind, {})["requiredDuringSchedulingIgnoredDuringExecution"] = [_pod_term(rng)]
        if rng.random() < 0.2:
            affinity.setdefault(kind, {})["preferredDuringSchedulingIgnoredDuringExecution"] = [
                {"weight": rng.randint(1, 100), "podAffinityTerm": _pod_term(rng)}
            ]
    if affinity:
        spec["affinity"] = affinity
    if rng.random() < 0.4:
        spec["tolerations"] = []
        for _ in range(rng.randint(1, 2)):
            op = rng.choice(("Equal", "Exists"))
            tol: Obj = {"operator": op}
            if op == "Equal" or rng.random() < 0.9:  # an empty key needs Exists (API validation)
                tol["key"] = rng.choice(TAINT_KEYS)
            if op == "Equal":
                tol["value"] = rng.choice(("x", "y", ""))
            if rng.random() < 0.7:
                tol["effect"] = rng.choice(EFFECTS)
            spec["tolerations"].append(tol)
    if rng.random() < 0.3:
        spec["topologySpreadConstraints"] = []
        for _ in range(rng.randint(1, 2)):
            key = rng.choice(("zone", "kubernetes.io/hostname", "rack"))
            c: Obj = {"maxSkew": rng.randint(1, 2), "topologyKey": key,
                      "whenUnsatisfiable": rng.choice(("DoNotSchedule", "ScheduleAnyway")),
                      "labelSelector": _selector(rng)}  # fmt: skip
            if c["whenUnsatisfiable"] == "DoNotSchedule" and rng.random() < 0.3:
                c["minDomains"] = rng.randint(1, 4)
            if rng.random() < 0.2:
                c["nodeAffinityPolicy"] = rng.choice(("Honor", "Ignore"))
            if rng.random() < 0.2:
                c["nodeTaintsPolicy"] = rng.choice(("Honor", "Ignore"))
            if rng.random() < 0.15:
                c["matchLabelKeys"] = [rng.choice(("pod-template-hash", "app", "absent"))]
            spec["topologySpreadConstraints"].append(c)


# -- the conf ------------------------------------------------------------------------------------
Args = tuple[tuple[str, Any], ...]


@dataclass(frozen=True)
class Conf:
    """A volcano-scheduler.conf: Volcano's helm default tiers, with arguments for predicates,
    nodeorder and binpack (None: the plugin is left out; (): no arguments)."""

    predicates: Args | None = ()
    nodeorder: Args | None = ()
    binpack: Args | None = ()

    def text(self) -> str:
        lines = ['actions: "enqueue, allocate, backfill"', "tiers:", "- plugins:", "  - name: priority",
                 "  - name: gang", "  - name: conformance", "- plugins:", "  - name: overcommit",
                 "  - name: drf"]  # fmt: skip
        for name, args in (("predicates", self.predicates), ("proportion", ()), ("nodeorder", self.nodeorder),
                           ("binpack", self.binpack)):  # fmt: skip
            if args is None:
                continue
            lines.append(f"  - name: {name}")
            if args:
                lines.append("    arguments:")
                lines += [f"      {key}: {json.dumps(value)}" for key, value in args]
        return "\n".join(lines) + "\n"

    def weight(self, scorer: str) -> int:
        """The weight a node-order function gets (the plugin's default where no argument names it)."""
        if scorer == "binpack":
            return 0 if self.binpack is None else int(dict(self.binpack).get("binpack.weight", 1))
        if self.nodeorder is None:
            return 0
        return int(dict(self.nodeorder).get(f"{scorer}.weight", NODEORDER_DEFAULTS[scorer]))

    def scorers(self) -> list[str]:
        """The node-order functions that add to a node's score under this conf."""
        return [s for s in (*NODEORDER_DEFAULTS, "binpack") if self.weight(s) != 0]

    def alone(self, scorer: str) -> Conf:
        """This conf with only ``scorer`` left scoring (every other weight 0, or its plugin left out)."""
        if scorer == "binpack":
            return Conf(self.predicates, None, self.binpack)
        weights = tuple((f"{k}.weight", self.weight(k) if k == scorer else 0) for k in NODEORDER_DEFAULTS)
        return Conf(self.predicates, weights, None)


def gen_conf(rng: random.Random) -> Conf:
    """Half the clusters get Volcano's helm default; the rest random switches and weights."""
    if rng.random() < 0.5:
        return Conf()
    predicates: Args | None = ()
    if rng.random() < 0.25:
        predicates = tuple((key, rng.random() < 0.6) for key in PREDICATE_SWITCHES.values())
    elif rng.random() < 0.05:
        predicates = None
    nodeorder: Args | None = tuple(
        (f"{k}.weight", rng.choice((0, 0, 1, 2, 3, 5))) for k in NODEORDER_DEFAULTS if rng.random() < 0.6
    )
    if rng.random() < 0.1:
        nodeorder = None
    binpack: Args | None = ()
    if rng.random() < 0.15:
        binpack = None
    elif rng.random() < 0.7:
        args: list[tuple[str, Any]] = [("binpack.weight", rng.choice((0, 1, 2, 5)))]
        args += [(f"binpack.{r}", rng.choice((-1, 0, 1, 2, 3))) for r in ("cpu", "memory") if rng.random() < 0.5]
        if rng.random() < 0.5:
            args += [("binpack.resources", GPU), (f"binpack.resources.{GPU}", rng.choice((-1, 0, 1, 2, 5)))]
        binpack = tuple(args)
    return Conf(predicates, nodeorder, binpack)


# -- the known differences (README "Known differences (Volcano v1.14.1)") ----------------------
def known(check: str, volcano: dict[str, object], mirror: dict[str, object]) -> str | None:
    """The README difference a disagreement is, or None. Both are Volcano choosing at random
    (Go map order) among answers of which the mirror gives one; neither changes feasibility, the
    failure code or a score, so only a ``reasons`` disagreement can be one."""
    if check != "reasons":
        return None
    v = list(volcano.get("reasons") or [])  # type: ignore[call-overload]
    m = list(mirror.get("reasons") or [])  # type: ignore[call-overload]
    if _one_scalar(v) and _one_scalar(m):
        return (
            "which insufficient scalar is named: allocate names the first failing resource, and Volcano walks"
            " the scalars (pods among them) in Go map order"
        )
    if _map_order(v, m):
        return (
            "which reasons Volcano reports: v1.14.1 runs its filter plugins in Go map order and stops at the"
            " first UnschedulableAndUnresolvable, so the reasons vary from call to call"
        )
    return None


def _one_scalar(reasons: list[str]) -> bool:
    """One "Insufficient <scalar>" reason (cpu and memory are always walked first, in order)."""
    base = ("Insufficient cpu", "Insufficient memory")
    return len(reasons) == 1 and reasons[0].startswith("Insufficient ") and reasons[0] not in base


def _map_order(v: list[str], m: list[str]) -> bool:
    """Could Volcano's reasons ``v`` be the mirror's ``m`` met in another filter order?

    Volcano v1.14.1's predicates plugin (predicates.go Predicate) records the pod number check,
    then runs the stable filters (NodeUnschedulable, NodeAffinity, TaintToleration) from a map,
    each failure aborting, then the other filters (NodePorts, InterPodAffinity, PodTopologySpread)
    from a map, recording Unschedulable failures and stopping at the first
    UnschedulableAndUnresolvable. So without such an abort every failure is reported whatever the
    order (the lists must be equal), and with one: both stopped at a stable filter, or Volcano
    reported one abort and some of the other failures, each one the mirror also found or did not
    reach (it stops at the pod's own required affinity, before PodTopologySpread)."""
    if (POD_NUMBER in v) != (POD_NUMBER in m):
        return False
    v, m = [r for r in v if r != POD_NUMBER], [r for r in m if r != POD_NUMBER]
    v_aborts = [r for r in v if reason_code(r) == UNRESOLVABLE]
    if len(v_aborts) != 1:
        return False
    if any(map(_node_only, v + m)):
        return len(v) == len(m) == 1 and _node_only(v[0]) and _node_only(m[0])
    unreached = {SPREAD, SPREAD_LABEL} if AFFINITY in m else set()
    return set(v) <= set(m) | unreached and all(reason_code(r) == UNSCHEDULABLE for r in set(m) - set(v) - {AFFINITY})


def _node_only(reason: str) -> bool:
    """A reason of one of Volcano v1.14.1's stable filter plugins (NodeUnschedulable, NodeAffinity,
    TaintToleration: predicates.go StableFilterPlugins, a map), each aborting the node."""
    return reason in (NODE_UNSCHEDULABLE, NODE_AFFINITY) or reason.startswith(TAINT.split("{", 1)[0])


# -- the comparison ------------------------------------------------------------------------------
@dataclass
class Tally:
    pairs: int = 0
    cases: int = 0
    agree: Counter[str] = field(default_factory=Counter)
    checked: Counter[str] = field(default_factory=Counter)
    examples: dict[str, list[str]] = field(default_factory=dict)
    explained: Counter[str] = field(default_factory=Counter)
    unexplained: list[str] = field(default_factory=list)

    def record(self, check: str, ok: bool, note: str, keep: int) -> None:
        self.checked[check] += 1
        if ok:
            self.agree[check] += 1
        elif len(self.examples.setdefault(check, [])) < keep:
            self.examples[check].append(note)


def mirror_answers(objects: list[Obj], conf: str, tasks: list[str]) -> list[dict[str, Any]]:
    """The mirror's answer for the same objects and volcano-scheduler.conf, per task, in the oracle's
    shape: one session, then the service's Prioritize (Filter's failures and the scores) per task."""
    by_kind: dict[str, list[Obj]] = {}
    for o in objects:
        by_kind.setdefault(o["kind"], []).append(o)
    snap = snapshot_from_objects(by_kind.get("Namespace", []), by_kind.get("Node", []), by_kind.get("Pod", []),
                                 by_kind.get("PodGroup", []), [], name="fidelity")  # fmt: skip
    snap.scheduler_config.CopyFrom(to_proto(conf))
    service, none = RepackService(), Deadline.none()
    sid = service.open_session(service_pb2.OpenSessionRequest(snapshot=snap), none).session_id
    out = []
    for task in tasks:
        ns, name = task.split("/")
        scored = service.prioritize(service_pb2.PrioritizeRequest(session_id=sid, task_uid=f"uid-{ns}-{name}"), none)
        nodes: dict[str, Any] = {}
        for s in scored.scores:
            nodes[s.node] = {"feasible": True, "score": s.score, "plugins": dict(s.plugins)}
        for group in scored.failures:
            for n in group.nodes:
                nodes[n] = {
                    "feasible": False,
                    "code": VOLCANO_CODE.get(group.code, 1),
                    "reasons": sorted(group.reasons),
                }
        out.append({"nodes": nodes})
    service.close_session(service_pb2.CloseSessionRequest(session_id=sid), none)
    return out


def _close(a: float, b: float) -> bool:
    return abs(a - b) <= 1e-6 * max(1.0, abs(a))


def confs_of(case: Case, conf: str | None = None, per_plugin: bool = False) -> tuple[list[str], list[str]]:
    """(the confs to ask, the node-order functions asked alone): the case's own conf (or ``conf``),
    then, when ``per_plugin``, its conf once per scoring function with only that one scoring."""
    scorers = case.conf.scorers() if per_plugin and conf is None else []
    return [conf or case.conf.text()] + [case.conf.alone(s).text() for s in scorers], scorers


def compare(
    case: Case, want: list[list[dict[str, Any]]], tally: Tally, keep: int = 5, conf: str | None = None,
    per_plugin: bool = False,
) -> list[str]:  # fmt: skip
    """Compare one cluster (every pending pod on every node) with Volcano's answers ``want`` (the
    oracle's, for :func:`confs_of`'s confs); returns the disagreements no known difference explains."""
    confs, scorers = confs_of(case, conf, per_plugin)
    got = [mirror_answers(case.objects, c, case.tasks) for c in confs]
    tally.cases += 1
    unexplained: list[str] = []
    for k, task in enumerate(case.tasks):
        for node in sorted(want[0][k]["nodes"]):
            w, g = want[0][k]["nodes"][node], got[0][k]["nodes"].get(node, {"feasible": None})
            tally.pairs += 1
            where = f"seed {case.seed} task {task} node {node}"
            found: list[str] = []
            tally.record("feasibility", w["feasible"] == g["feasible"], f"{where}: volcano {w} mirror {g}", keep)
            if w["feasible"] != g["feasible"]:
                found.append("feasibility")
            elif w["feasible"]:
                ok = _close(w.get("score", 0.0), g.get("score", 0.0))
                tally.record("score", ok, f"{where}: volcano {w.get('score')} mirror {g.get('score')}", keep)
                found += [] if ok else ["score"]
            else:
                for check, ok in (
                    ("code", w.get("code") == g.get("code")),
                    ("reasons", w.get("reasons") == g.get("reasons")),
                ):
                    tally.record(check, ok, f"{where}: volcano {w} mirror {g}", keep)
                    found += [] if ok else [check]
            for check in found:
                why = known(check, w, g)
                if why is None:
                    unexplained.append(f"{where} {check}: volcano {w} mirror {g}")
                else:
                    tally.explained[why] += 1
            for i, scorer in enumerate(scorers, 1):
                a, b = want[i][k]["nodes"][node], got[i][k]["nodes"].get(node, {})
                if not (a["feasible"] and b.get("feasible")):
                    continue
                ok = _close(a.get("score", 0.0), b.get("score", 0.0))
                note = f"{where}: volcano {a.get('score')} mirror {b.get('score')} ({b.get('plugins')})"
                tally.record(f"score:{scorer}", ok, note, keep)
                if not ok:
                    unexplained.append(f"{where} score:{scorer}: volcano {a.get('score')} mirror {b.get('score')}")
    tally.unexplained += unexplained
    return unexplained


def run_seeds(seeds: Iterable[int], pool: OraclePool, tally: Tally, keep: int = 5, conf: str | None = None,
              plugins_every: int = 0, pairs: int | None = None, progress: bool = False) -> None:  # fmt: skip
    """Compare the clusters of ``seeds`` (until at least ``pairs`` pairs, if given), the oracle a
    few clusters ahead of the mirror; every ``plugins_every``-th cluster (counted from the first) per plugin too."""
    ahead: deque[tuple[Case, bool, Future[list[list[dict[str, Any]]]]]] = deque()
    for i, seed in enumerate(seeds):
        if pairs is not None and tally.pairs >= pairs:
            break
        case = gen_case(seed)
        per_plugin = plugins_every > 0 and i % plugins_every == 0
        confs, _ = confs_of(case, conf, per_plugin)
        ahead.append((case, per_plugin, pool.submit(case.objects, confs, case.tasks)))
        if len(ahead) >= 3 * pool.size:
            c, pp, want = ahead.popleft()
            compare(c, want.result(), tally, keep, conf, pp)
            if progress and tally.cases % 1000 == 0:
                print(f"  ... {tally.pairs} pairs, {len(tally.unexplained)} unexplained", file=sys.stderr, flush=True)
    for c, pp, want in ahead:
        compare(c, want.result(), tally, keep, conf, pp)


def run(pairs: int, seed: int, keep: int = 5, conf: str | None = None, plugins_every: int = 0,
        processes: int = 4) -> Tally:  # fmt: skip
    tally = Tally()
    with OraclePool(oracle_binary(), processes) as pool:
        run_seeds(itertools.count(seed), pool, tally, keep, conf, plugins_every, pairs, progress=True)
    return tally


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pairs", type=int, default=100_000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--show", type=int, default=5, help="disagreements shown per check")
    ap.add_argument("--plugins", type=int, default=10, metavar="K",
                    help="every K-th cluster is also scored per node-order function (0: never)")  # fmt: skip
    ap.add_argument("--conf", type=Path, help="one volcano-scheduler.conf for every cluster (default: each its own)")
    ap.add_argument("--processes", type=int, default=4, help="volcano-oracle processes (default 4)")
    args = ap.parse_args(argv)
    conf = args.conf.read_text() if args.conf else None
    started = time.perf_counter()
    tally = run(args.pairs, args.seed, args.show, conf, args.plugins, args.processes)
    took = time.perf_counter() - started
    last = args.seed + tally.cases - 1
    print(f"{tally.pairs} (task, node) pairs in {tally.cases} clusters, seeds {args.seed}..{last}, {took:.0f} s"
          f" ({tally.pairs / took:.0f} pairs/s)")  # fmt: skip
    for check in (*CHECKS, *sorted(c for c in tally.checked if c.startswith("score:"))):
        n = tally.checked[check]
        if n:
            print(f"  {check:<28} {tally.agree[check]}/{n} agree ({100 * tally.agree[check] / n:.3f} %)")
        for note in tally.examples.get(check, []):
            print(f"    {note}")
    print('disagreements by known difference (README, "Known differences (Volcano v1.14.1)"):')
    for why, count in tally.explained.most_common():
        print(f"  {count:>7}  {why}")
    print(f"  {len(tally.unexplained):>7}  not explained by any known difference")
    for note in tally.unexplained[: args.show]:
        print(f"    {note}")
    return 0 if not tally.unexplained else 1


if __name__ == "__main__":
    sys.exit(main())
