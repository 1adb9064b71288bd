"""volcano-scheduler.conf parsing: the real YAML format, defaults, errors naming the field."""

from __future__ import annotations

import pytest

from sidecar.api.v1alpha1 import snapshot_pb2 as pb
from sidecar.errors import InputError
from sidecar.mirror.conf import DEFAULT, DEFAULT_CONF, from_proto, parse_conf, to_proto

REAL = """
actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
    enablePreemptable: false
  - name: conformance
- plugins:
  - name: overcommit
  - name: drf
    enablePreemptable: false
  - name: predicates
    arguments:
      predicate.NodeAffinityEnable: true
      predicate.PodAffinityEnable: false
      predicate.PodTopologySpreadEnable: "false"
  - name: proportion
  - name: nodeorder
    arguments:
      leastrequested.weight: 0
      mostrequested.weight: 2
      tainttoleration.weight: 5
  - name: binpack
    arguments:
      binpack.weight: 10
      binpack.cpu: 2
      binpack.memory: -1
      binpack.resources: nvidia.com/gpu, example.com/foo
      binpack.resources.nvidia.com/gpu: 8
"""


def test_default_is_the_helm_conf() -> None:
    assert parse_conf(DEFAULT_CONF) == DEFAULT
    assert DEFAULT.actions == ("enqueue", "allocate", "backfill")
    assert all(DEFAULT.predicates.values())
    assert DEFAULT.nodeorder == {
        "leastrequested": 1,
        "mostrequested": 0,
        "balancedresource": 1,
        "nodeaffinity": 2,
        "podaffinity": 2,
        "tainttoleration": 3,
        "imagelocality": 1,
        "podtopologyspread": 2,
    }
    assert DEFAULT.binpack_weight == 1 and dict(DEFAULT.binpack_resources) == {"cpu": 1, "memory": 1}


def test_real_conf_arguments() -> None:
    conf = parse_conf(REAL)
    assert conf.predicate_on("NodeAffinity") and not conf.predicate_on("InterPodAffinity")
    assert not conf.predicate_on("PodTopologySpread") and conf.predicate_on("TaintToleration")
    assert conf.nodeorder["leastrequested"] == 0 and conf.nodeorder["mostrequested"] == 2
    assert conf.nodeorder["tainttoleration"] == 5 and conf.nodeorder["nodeaffinity"] == 2
    assert conf.binpack_weight == 10
    # negative weights fall back to 1, listed resources default to 1
    assert dict(conf.binpack_resources) == {"nvidia.com/gpu": 8, "example.com/foo": 1, "cpu": 2, "memory": 1}


def test_missing_plugins_are_off() -> None:
    conf = parse_conf('actions: "allocate"\ntiers:\n- plugins:\n  - name: gang\n')
    assert not conf.predicates_plugin and not conf.nodeorder_plugin and not conf.binpack_plugin
    assert not conf.predicate_on("NodeAffinity")


def test_proto_round_trip_and_empty_means_default() -> None:
    assert from_proto(pb.SchedulerConfig()) == DEFAULT
    assert from_proto(to_proto(REAL)) == parse_conf(REAL)


@pytest.mark.parametrize(
    "text,field",
    [
        (
            "tiers:\n- plugins:\n  - name: nodeorder\n    arguments:\n      leastrequested.weight: lots\n",
            'volcano-scheduler.conf.tiers[0].plugins[0].arguments["leastrequested.weight"]',
        ),
        (
            "tiers:\n- plugins:\n  - name: predicates\n    arguments:\n      predicate.NodePortsEnable: maybe\n",
            'volcano-scheduler.conf.tiers[0].plugins[0].arguments["predicate.NodePortsEnable"]',
        ),
        ("tiers:\n- plugins:\n  - arguments: {}\n", "volcano-scheduler.conf.tiers[0].plugins[0].name"),
        ("[1, 2]", "volcano-scheduler.conf"),
    ],
)
def test_bad_conf_names_the_field(text: str, field: str) -> None:
    with pytest.raises(InputError) as err:
        parse_conf(text)
    assert err.value.field == field
