"""Differential fidelity: the mirror against Volcano's compiled predicates and node order.

    python -m bench.fidelity [--pairs 100000] [--seed 1] [--show 5]

A seeded generator writes random clusters as Kubernetes objects (nodes with taints, labels and
scalars; running pods with requests, host ports and (anti-)affinity; one pending pod with every
kind of placement rule). Both sides read the same objects: Volcano's code through
``volcano-oracle`` (go/plugin/fidelity: a mock scheduler cache, framework.OpenSession, the
allocate action's predicate and util.PrioritizeNodes), the mirror through ``snapshot_from_objects``
and the service's Filter and Prioritize. Per (task, node) pair: feasibility, the failure code,
the reasons (as text), and the score of feasible nodes. Reports agreement per check and the first
disagreements found, minimised by the seed that produced them (rerun with ``--seed``).
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sidecar.api.v1alpha1 import service_pb2
from sidecar.mirror.conf import DEFAULT_CONF, to_proto
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

    def ask(self, objects: list[Obj], task: str, conf: str = DEFAULT_CONF) -> dict[str, Any]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(json.dumps({"objects": objects, "conf": conf, "task": task}) + "\n")
        self.proc.stdin.flush()
        answer: dict[str, Any] = json.loads(self.proc.stdout.readline())
        if answer.get("error"):
            raise RuntimeError(f"volcano-oracle: {answer['error']}")
        return answer

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        self.proc.wait(timeout=30)

    def __enter__(self) -> Oracle:
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


def gen_case(seed: int) -> tuple[list[Obj], str]:
    """Objects of a random cluster and the key of its pending pod (deterministic in ``seed``)."""
    rng = random.Random(seed)
    objects: list[Obj] = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": _meta("fa", labels={"team": "a"})},
        {"apiVersion": "v1", "kind": "Namespace", "metadata": _meta("fb", labels={"team": "b"})},
    ]
    names = [f"n-{i:02d}" for i in range(rng.randint(3, 10))]
    free: dict[str, dict[str, float]] = {}  # what each node has left: running pods always fit
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
        app = rng.choice(APPS)
        group = f"g{j}"
        pod = _pod(rng, f"p{j}", ns, app, group, running_on=node)
        need = {r: parse_quantity(q) for r, q in pod["spec"]["containers"][0]["resources"]["requests"].items()}
        need["pods"] = 1.0
        if any(free[node].get(r, 0.0) < q for r, q in need.items()):
            continue  # a kubelet would not run it: no overcommitted nodes (not covered here)
        for r, q in need.items():
            free[node][r] -= q
        groups.append({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
                       "metadata": _meta(group, ns), "spec": {"minMember": 1, "queue": "default"},
                       "status": {"phase": "Running"}})  # fmt: skip
        pods.append(pod)
    subject_ns = rng.choice(("fa", "fb"))
    groups.append({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
                   "metadata": _meta("subject", subject_ns), "spec": {"minMember": 1, "queue": "default"},
                   "status": {"phase": "Inqueue"}})  # fmt: skip
    subject = _pod(rng, "subject", subject_ns, rng.choice(APPS), "subject", running_on=None)
    _rules(rng, subject)
    pods.append(subject)
    objects += groups + pods
    return objects, f"{subject_ns}/subject"


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
    meta = _meta(name, ns, labels={"app": app}, annotations={"scheduling.k8s.io/group-name": group})
    status: Obj = {"phase": "Pending"}
    if running_on is not None:
        spec["nodeName"] = running_on
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
            spec["topologySpreadConstraints"].append(c)


# -- the known differences (README "Known differences (Volcano v1.14.1)") ----------------------
def known(check: str, volcano: dict[str, object], mirror: dict[str, object], rescored: bool) -> str | None:
    """The README difference a disagreement is, or None."""
    if check == "score" and rescored:
        return "BalancedAllocation formula (the mirror: Kubernetes 1.36; Volcano v1.14.1: Kubernetes 1.34)"
    if check in ("code", "reasons"):
        v = list(volcano.get("reasons") or [])  # type: ignore[call-overload]
        m = list(mirror.get("reasons") or [])  # type: ignore[call-overload]
        if v and volcano.get("code") == 2 and all(r.startswith("Insufficient ") for r in v) and _short(m):
            return (
                "resources checked first: Volcano's allocate stops at the FutureIdle fit and names only the first"
                " insufficient resource (cpu, memory, then scalars in Go map order)"
            )
        nv, nm = [_taint_wording(r) for r in v], list(m)
        if check == "reasons" and sorted(nv) == sorted(nm):
            return "TaintToleration wording (the mirror: Kubernetes 1.36; Volcano v1.14.1: 1.34 names the taint)"
        same_code = volcano.get("code") == mirror.get("code")
        if (
            check == "reasons"
            and same_code
            and (
                set(nv) <= set(nm)
                or set(nm) <= set(nv)
                or _both_node_only(nv, nm)
                or _both_first_unresolvable(volcano, nv, nm)
            )
        ):
            return (
                "which reasons Volcano reports: v1.14.1 runs its filter plugins in Go map order and stops at the"
                " first UnschedulableAndUnresolvable, so the reasons vary from call to call"
            )
    return None


def _short(mirror: list[str]) -> bool:
    """The mirror found the node short of some resource (its pod count in the predicates' words)."""
    return any(r.startswith("Insufficient ") or r == "node(s) pod number exceeded" for r in mirror)


def _taint_wording(reason: str) -> str:
    """Kubernetes 1.34's taint reason (names the taint) in the mirror's 1.36 wording."""
    return "node(s) had untolerated taint(s)" if reason.startswith("node(s) had untolerated taint {") else reason


def _both_node_only(v: list[str], m: list[str]) -> bool:
    return len(v) == len(m) == 1 and _node_only(v[0]) and _node_only(m[0])


def _both_first_unresolvable(volcano: dict[str, object], v: list[str], m: list[str]) -> bool:
    """Each side stopped at one UnschedulableAndUnresolvable reason, met in its own order."""
    return volcano.get("code") == 3 and len(v) == len(m) == 1


def _node_only(reason: str) -> bool:
    """A reason of one of Volcano v1.14.1's stable filter plugins (NodeUnschedulable, NodeAffinity,
    TaintToleration: predicates.go StableFilterPlugins, a map), each aborting the node."""
    return reason in ("node(s) were unschedulable", "node(s) didn't match Pod's node affinity/selector") or (
        reason.startswith("node(s) had untolerated taint")
    )


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


def mirror_answer(objects: list[Obj], task: str, conf: str = DEFAULT_CONF) -> dict[str, Any]:
    """The mirror's answer for the same objects, pod and volcano-scheduler.conf, in the oracle's shape."""
    by_kind: dict[str, list[Obj]] = {}
    for o in objects:
        by_kind.setdefault(o["kind"], []).append(o)
    snap = snapshot_from_objects(by_kind.get("Namespace", []), by_kind.get("Node", []), by_kind.get("Pod", []),
                                 by_kind.get("PodGroup", []), [], name="fidelity")  # fmt: skip
    snap.scheduler_config.CopyFrom(to_proto(conf))
    ns, name = task.split("/")
    uid = f"uid-{ns}-{name}"
    service, none = RepackService(), Deadline.none()
    filtered = service.filter(service_pb2.FilterRequest(snapshot=snap, task_uid=uid), none)
    nodes: dict[str, Any] = {n: {"feasible": True} for n in filtered.feasible_nodes}
    for group in filtered.failures:
        for n in group.nodes:
            nodes[n] = {"feasible": False, "code": VOLCANO_CODE.get(group.code, 1), "reasons": sorted(group.reasons)}
    if filtered.feasible_nodes:
        scored = service.prioritize(service_pb2.PrioritizeRequest(snapshot=snap, task_uid=uid), none)
        for s in scored.scores:
            nodes[s.node]["score"] = s.score
    return {"nodes": nodes}


def _close(a: float, b: float) -> bool:
    return abs(a - b) <= 1e-6 * max(1.0, abs(a))


#: Volcano's helm default conf with BalancedAllocation's weight 0: the known score difference away
NO_BALANCED = DEFAULT_CONF.replace(
    "  - name: nodeorder\n", "  - name: nodeorder\n    arguments:\n      balancedresource.weight: 0\n"
)


def compare(seed: int, oracle: Oracle, tally: Tally, keep: int = 5, conf: str = DEFAULT_CONF) -> list[str]:
    """Compare one case; returns the disagreements no known difference explains."""
    objects, task = gen_case(seed)
    want = oracle.ask(objects, task, conf)["nodes"]
    got = mirror_answer(objects, task, conf)["nodes"]
    tally.cases += 1
    rescored: bool | None = None
    unexplained = []
    for node in sorted(want):
        w, g = want[node], got.get(node, {"feasible": None})
        tally.pairs += 1
        where = f"seed {seed} node {node}"
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
            if check == "score" and rescored is None:  # the same case without BalancedAllocation
                a = oracle.ask(objects, task, NO_BALANCED)["nodes"]
                b = mirror_answer(objects, task, NO_BALANCED)["nodes"]
                rescored = all(
                    _close(a[n].get("score", 0.0), b[n].get("score", 0.0))
                    for n in a
                    if a[n]["feasible"] and b.get(n, {}).get("feasible")
                )
            why = known(check, w, g, bool(rescored))
            if why is None:
                unexplained.append(f"{where} {check}: volcano {w} mirror {g}")
            else:
                tally.explained[why] += 1
    tally.unexplained += unexplained
    return unexplained


def run(pairs: int, seed: int, keep: int = 5, conf: str = DEFAULT_CONF) -> Tally:
    tally = Tally()
    with Oracle(oracle_binary()) as oracle:
        s = seed
        while tally.pairs < pairs:
            compare(s, oracle, tally, keep, conf)
            s += 1
    return tally


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pairs", type=int, default=100_000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--show", type=int, default=5, help="disagreements shown per check")
    ap.add_argument(
        "--conf", type=Path, help="a volcano-scheduler.conf for both sides (default: Volcano's helm default)"
    )
    args = ap.parse_args(argv)
    conf = args.conf.read_text() if args.conf else DEFAULT_CONF
    started = time.perf_counter()
    tally = run(args.pairs, args.seed, args.show, conf)
    took = time.perf_counter() - started
    last = args.seed + tally.cases - 1
    print(f"{tally.pairs} (task, node) pairs in {tally.cases} clusters, seeds {args.seed}..{last}, {took:.0f} s")
    for check in CHECKS:
        n = tally.checked[check]
        if n:
            print(f"  {check:<12} {tally.agree[check]}/{n} agree ({100 * tally.agree[check] / n:.3f} %)")
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
