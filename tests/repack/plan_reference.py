"""The plan reference set: fixed clusters and specs whose plans must not change by accident.

Refactors of the planner, the mirror or the kernels promise "plans byte-identical"; this is the set
that promise is checked on. Each case's ``RepackStatus`` (the Plan RPC's answer, deterministically
serialised) is hashed; ``plan_reference.json`` beside this file holds the digests. A change that is
meant to change plans regenerates them on purpose and says so in its commit:

    python -m tests.repack.plan_reference --write

Cases read from ``../shared/traces`` are recorded separately and skipped where the traces are absent.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import yaml
from google.protobuf import json_format

from sidecar.api.v1alpha1 import service_pb2, spec_pb2
from sidecar.api.v1alpha1 import snapshot_pb2 as pb
from sidecar.scenarios.synth import SynthOptions, synth
from sidecar.service import Deadline, RepackService
from sidecar.snapshot.io import load_snapshot

HERE = Path(__file__).resolve().parent
DIGESTS = HERE / "plan_reference.json"
DATA = HERE.parents[1] / "sidecar" / "data"
TRACES = Path(os.environ.get("REPACK_TRACES", HERE.parents[2] / "shared" / "traces"))
GPU = "nvidia.com/gpu"
NPU = "huawei.com/ascend-1980"


@dataclass(frozen=True)
class Case:
    name: str
    snapshot: Callable[[], pb.Snapshot]
    spec: dict[str, object]
    #: read from ../shared/traces (skipped where absent)
    trace: bool = False


def _guide() -> pb.Snapshot:
    return load_snapshot(str(DATA / "guide-ascend.json"))


def _guarded_spec() -> dict[str, object]:
    return dict(yaml.safe_load((DATA / "guide-ascend-dryrun.yaml").read_text())["spec"])


def _synth(**fields: object) -> Callable[[], pb.Snapshot]:
    return lambda: synth(SynthOptions(**fields))  # type: ignore[arg-type]


def _openb70() -> pb.Snapshot:
    from sidecar.scenarios.traces import Stop, openb_snapshot

    return openb_snapshot(TRACES / "openb", Stop(at_fill=0.7))[0]


def _goal(resource: str = GPU, **fields: object) -> dict[str, object]:
    return {"mode": "DryRun", "goals": [{"resource": resource}], **fields}


CASES = (
    Case("guide-minimal", _guide, _goal(NPU)),
    Case("guide-guarded", _guide, _guarded_spec()),
    Case("synth-demo-24", _synth(nodes=24, cards_per_node=8, fill=0.55, seed=2026), _goal()),
    Case("synth-300-spread", _synth(nodes=300, fill=0.7, seed=7, spread=0.3), _goal()),
    Case("synth-2000", _synth(nodes=2000, fill=0.65, seed=11), _goal()),
    Case("synth-1500-budget-20", _synth(nodes=1500, fill=0.6, seed=3), _goal(maxPerRun={"podGroups": 20})),
    Case("synth-800-cards-64", _synth(nodes=800, fill=0.7, seed=5), _goal(maxPerRun={"resources": {GPU: 64}})),
    Case("openb-70", _openb70, _goal(), trace=True),
)


def digest(case: Case) -> str:
    spec = json_format.ParseDict(case.spec, spec_pb2.RepackSpec())
    request = service_pb2.PlanRequest(snapshot=case.snapshot(), spec=spec)
    status = RepackService().plan(request, Deadline(600)).status
    return hashlib.sha256(status.SerializeToString(deterministic=True)).hexdigest()


def recorded() -> dict[str, str]:
    return dict(json.loads(DIGESTS.read_text()))


def traces_available() -> bool:
    return (TRACES / "openb" / "openb_pod_list_default.csv").exists()


def _cases(include_traces: bool) -> Iterator[Case]:
    return (c for c in CASES if include_traces or not c.trace)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--write", action="store_true", help="record the current plans' digests")
    args = p.parse_args()
    old = recorded() if DIGESTS.exists() else {}
    new = dict(old)
    differ = 0
    for case in _cases(traces_available()):
        got = digest(case)
        same = old.get(case.name) == got
        differ += not same
        print(f"{case.name:24} {got[:16]}  {'same' if same else 'CHANGED' if case.name in old else 'new'}")
        new[case.name] = got
    if args.write:
        DIGESTS.write_text(json.dumps(new, indent=2, sort_keys=True) + "\n")
        print(f"wrote {DIGESTS}")
        return 0
    return 1 if differ else 0


if __name__ == "__main__":
    raise SystemExit(main())
