"""volcano-scheduler.conf: which predicates run and how nodes are ordered.

Parses the real file format (``actions``, ``tiers[].plugins[]`` with ``arguments``) or the
snapshot's SchedulerConfig message into one ``SchedulerConf``. Defaults are Volcano's:
every predicate the mirror implements is on, nodeorder weights leastrequested 1,
mostrequested 0, balancedresource 1, nodeaffinity 2, podaffinity 2, tainttoleration 3,
imagelocality 1, podtopologyspread 2; binpack weight 1 with cpu 1 and memory 1.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import yaml

from sidecar.api.v1alpha1 import snapshot_pb2 as pb
from sidecar.errors import InputError

#: predicate.<Name>Enable keys the mirror honours (others, e.g. volume checks, have nothing to check here).
PREDICATE_SWITCHES = {
    "NodeAffinity": "predicate.NodeAffinityEnable",
    "NodePorts": "predicate.NodePortsEnable",
    "TaintToleration": "predicate.TaintTolerationEnable",
    "InterPodAffinity": "predicate.PodAffinityEnable",
    "PodTopologySpread": "predicate.PodTopologySpreadEnable",
}

NODEORDER_DEFAULTS = {
    "leastrequested": 1,
    "mostrequested": 0,
    "balancedresource": 1,
    "nodeaffinity": 2,
    "podaffinity": 2,
    "tainttoleration": 3,
    "imagelocality": 1,
    "podtopologyspread": 2,
}

#: The helm chart's default volcano-scheduler.conf.
DEFAULT_CONF = """\
actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
- plugins:
  - name: overcommit
  - name: drf
  - name: predicates
  - name: proportion
  - name: nodeorder
  - name: binpack
"""


@dataclass(frozen=True)
class SchedulerConf:
    actions: tuple[str, ...] = ("enqueue", "allocate", "backfill")
    predicates_plugin: bool = True
    predicates: Mapping[str, bool] = field(default_factory=lambda: dict.fromkeys(PREDICATE_SWITCHES, True))
    nodeorder_plugin: bool = True
    nodeorder: Mapping[str, int] = field(default_factory=lambda: dict(NODEORDER_DEFAULTS))
    binpack_plugin: bool = True
    binpack_weight: int = 1
    #: resource name -> weight (cpu and memory always present).
    binpack_resources: Mapping[str, int] = field(default_factory=lambda: {"cpu": 1, "memory": 1})

    def predicate_on(self, name: str) -> bool:
        return self.predicates_plugin and self.predicates.get(name, True)


def _get_bool(args: Mapping[str, Any], key: str, default: bool, where: str) -> bool:
    if key not in args:
        return default
    value = args[key]
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("1", "t", "true"):
        return True
    if text in ("0", "f", "false"):
        return False
    raise InputError(f'{where}.arguments["{key}"]', f"not a boolean: {value!r}")


def _get_int(args: Mapping[str, Any], key: str, default: int, where: str) -> int:
    if key not in args:
        return default
    value = args[key]
    try:
        number = int(str(value).strip())
    except ValueError:
        raise InputError(f'{where}.arguments["{key}"]', f"not an integer: {value!r}") from None
    if not -(2**63) <= number < 2**63:  # Go's int: the scores are int64 arithmetic
        raise InputError(f'{where}.arguments["{key}"]', f"not an integer within int64: {value!r}")
    return number


def _plugin(name: str, args: Mapping[str, Any], where: str, conf: dict[str, Any]) -> None:
    if name == "predicates":
        conf["predicates_plugin"] = True
        conf["predicates"] = {pred: _get_bool(args, key, True, where) for pred, key in PREDICATE_SWITCHES.items()}
    elif name == "nodeorder":
        conf["nodeorder_plugin"] = True
        conf["nodeorder"] = {
            k: _get_int(args, f"{k}.weight", default, where) for k, default in NODEORDER_DEFAULTS.items()
        }
    elif name == "binpack":
        conf["binpack_plugin"] = True
        conf["binpack_weight"] = _get_int(args, "binpack.weight", 1, where)
        resources: dict[str, int] = {}
        for res in str(args.get("binpack.resources", "")).split(","):
            res = res.strip()
            if res:
                w = _get_int(args, f"binpack.resources.{res}", 1, where)
                resources[res] = w if w >= 0 else 1
        cpu = _get_int(args, "binpack.cpu", 1, where)
        mem = _get_int(args, "binpack.memory", 1, where)
        resources["cpu"] = cpu if cpu >= 0 else 1
        resources["memory"] = mem if mem >= 0 else 1
        conf["binpack_resources"] = resources


def from_plugins(
    actions: list[str], tiers: Sequence[Sequence[tuple[str, Mapping[str, Any]]]], source: str
) -> SchedulerConf:
    conf: dict[str, Any] = {
        "actions": tuple(actions),
        "predicates_plugin": False,
        "nodeorder_plugin": False,
        "binpack_plugin": False,
    }
    for t, tier in enumerate(tiers):
        for p, (name, args) in enumerate(tier):
            _plugin(name, args, f"{source}.tiers[{t}].plugins[{p}]", conf)
    return SchedulerConf(**conf)


def parse_conf(text: str, source: str = "volcano-scheduler.conf") -> SchedulerConf:
    """Parse the YAML of a volcano-scheduler.conf."""
    try:
        data = yaml.safe_load(text) or {}
    except yaml.YAMLError as exc:
        raise InputError(source, f"not valid YAML: {exc}") from exc
    if not isinstance(data, dict):
        raise InputError(source, "expected a mapping with actions and tiers")
    actions = [a.strip() for a in str(data.get("actions", "")).split(",") if a.strip()]
    tiers = []
    for t, tier in enumerate(data.get("tiers") or []):
        plugins = []
        for p, plugin in enumerate((tier or {}).get("plugins") or []):
            if not isinstance(plugin, dict) or not plugin.get("name"):
                raise InputError(f"{source}.tiers[{t}].plugins[{p}].name", "missing")
            plugins.append((str(plugin["name"]), plugin.get("arguments") or {}))
        tiers.append(plugins)
    return from_plugins(actions, tiers, source)


def from_proto(msg: pb.SchedulerConfig) -> SchedulerConf:
    """The snapshot's SchedulerConfig; an empty one means Volcano's default conf."""
    if not msg.tiers:
        return DEFAULT
    tiers = [[(p.name, dict(p.arguments)) for p in tier.plugins] for tier in msg.tiers]
    return from_plugins(list(msg.actions), tiers, "scheduler_config")


def to_proto(text: str) -> pb.SchedulerConfig:
    """A volcano-scheduler.conf file as the snapshot message (arguments kept as strings)."""
    parse_conf(text)  # validate first
    data = yaml.safe_load(text) or {}
    msg = pb.SchedulerConfig(actions=[a.strip() for a in str(data.get("actions", "")).split(",") if a.strip()])
    for tier in data.get("tiers") or []:
        t = msg.tiers.add()
        for plugin in (tier or {}).get("plugins") or []:
            args = {
                str(k): str(v).lower() if isinstance(v, bool) else str(v)
                for k, v in (plugin.get("arguments") or {}).items()
            }
            t.plugins.add(name=str(plugin["name"]), arguments=args)
    return msg


DEFAULT = parse_conf(DEFAULT_CONF)
