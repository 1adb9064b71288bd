"""The watcher's cluster port on kube-apiserver (``kit.kube`` over the official client): the same
scenarios the fake must pass (tests/port_contract.py), judged here by the real API server, so the
fake's answers are the server's."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from realcluster.launcher import RealCluster
from sidecar.watcher.kit.kube import KubeCluster, connect
from sidecar.watcher.kit.port import Cluster
from tests.port_contract import SCENARIOS, namespace

CRD = Path(__file__).resolve().parents[2] / "manifests" / "crd" / "repack.volcano.sh_repackruns.yaml"


@pytest.fixture(scope="module")
def port(real_cluster: RealCluster) -> Iterator[KubeCluster]:
    real_cluster.kubectl("apply", "-f", str(CRD))
    real_cluster.wait_established("repackruns.repack.volcano.sh")
    cluster = connect(str(real_cluster.kubeconfig))
    yield cluster
    cluster.close()


@pytest.mark.parametrize("scenario", SCENARIOS.values(), ids=SCENARIOS.keys())
def test_the_port_contract(port: KubeCluster, scenario: Callable[[Cluster, str], None]) -> None:
    ns = f"contract-{scenario.__name__.replace('_', '-')}"
    namespace(port, ns)
    scenario(port, ns)
