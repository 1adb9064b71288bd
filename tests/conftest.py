"""Fixtures for the whole suite: the gRPC sidecar (``server``, ``make_server``), the real control
plane (``real_cluster``) and Volcano's compiled checks (``volcano_oracle``). A package folder's
conftest.py adds its own (the watcher's: the fake cluster holding the guide's example)."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import hypothesis  # noqa: F401  (imported up front: see below)
import pytest

from realcluster.launcher import ClusterError, RealCluster, ensure_built
from sidecar import logs
from sidecar.server.background import BackgroundServer
from sidecar.server.config import MIB, ServerConfig

logs.configure("json", "warning")

# hypothesis' pytest plugin imports the package lazily in its terminal summary. Imported then,
# pytest's assertion rewriter parses it while finalizers of HTTP clients may run, and CPython
# 3.11's parser can fail with "AST constructor recursion depth mismatch". Importing it here keeps
# that parse at start-up.


#: a real grpc.aio server on loopback, on its own event loop in a background thread
ServerThread = BackgroundServer


@pytest.fixture(scope="session")
def server() -> Iterator[ServerThread]:
    s = ServerThread(ServerConfig(port=0, metrics_port=-1, max_message_bytes=4 * MIB, session_ttl_seconds=60))
    yield s
    s.stop()


@pytest.fixture
def make_server() -> Iterator[object]:
    started: list[ServerThread] = []

    def factory(**overrides: object) -> ServerThread:
        s = ServerThread(ServerConfig(**{"port": 0, "metrics_port": -1, **overrides}))  # type: ignore[arg-type]
        started.append(s)
        return s

    yield factory
    for s in started:
        s.stop()


@pytest.fixture(autouse=True)
def _quiet_logs() -> Iterator[None]:
    """CLI tests reconfigure logging; put the suite's level back afterwards."""
    yield
    logs.configure("json", "warning")


@pytest.fixture(scope="module")
def real_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RealCluster]:
    """The real control plane (tests/realcluster), built once and started fresh for each test module
    (a module's scenarios assume the cluster holds only what they create), stopped after it. Without
    Go the real-cluster tests skip saying why — except under CI (``CI`` set), where a cluster that
    cannot be built or started fails the run: CI must never pass without having run them."""
    try:
        if shutil.which("go") is None:
            raise ClusterError("go not found: the real control plane is built from Go modules (Go >= 1.26)")
        bin_dir = ensure_built()
        cluster = RealCluster(tmp_path_factory.mktemp("real-cluster"), bin_dir=bin_dir).up()
    except ClusterError as exc:
        if os.environ.get("CI"):
            raise
        pytest.skip(f"the real control plane is not available: {exc}")
    try:
        yield cluster
    finally:
        cluster.down()


@pytest.fixture(scope="session")
def volcano_oracle() -> Path:
    """The ``volcano-oracle`` binary (Volcano's compiled code, built with the real control plane
    by go/controlplane/build.sh); skipped where that cannot be built, except in CI."""
    from bench import fidelity

    try:
        return fidelity.oracle_binary()
    except RuntimeError as exc:
        if os.environ.get("CI"):
            raise
        pytest.skip(f"volcano-oracle is built with the real control plane, which is not available: {exc}")
