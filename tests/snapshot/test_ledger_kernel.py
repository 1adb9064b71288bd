"""The Cython ledger kernel and its numpy twin agree on random inputs."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from sidecar import dispatch
from sidecar.snapshot import ledger, taskstatus

# Binding drawn more often: its fit check against the Idle left so far is the subtle part.
STATUSES = sorted(taskstatus.VALID) + [taskstatus.BINDING] * 4

needs_kernel = pytest.mark.skipif(ledger._K is None, reason="Cython kernel not built (pure-Python install)")


@st.composite
def columns(draw):  # type: ignore[no-untyped-def]
    n_nodes = draw(st.integers(1, 12))
    n_tasks = draw(st.integers(0, 60))
    n_res = draw(st.integers(1, 5))
    node = draw(hnp.arrays(np.int32, n_tasks, elements=st.integers(-1, n_nodes - 1)))
    status = draw(hnp.arrays(np.int32, n_tasks, elements=st.sampled_from(STATUSES)))
    req = draw(hnp.arrays(np.float64, (n_tasks, n_res), elements=st.integers(0, 64_000).map(float)))
    alloc = draw(hnp.arrays(np.float64, (n_nodes, n_res), elements=st.integers(0, 256_000).map(float)))
    return node, status, req, alloc


@needs_kernel
@settings(max_examples=200, deadline=None)
@given(columns())
def test_kernel_matches_twin(cols) -> None:  # type: ignore[no-untyped-def]
    node, status, req, alloc = cols
    with dispatch.forced("kernel"):
        a = ledger.build_ledger(node, status, req, alloc)
    with dispatch.forced("twin"):
        b = ledger.build_ledger(node, status, req, alloc)
    for field in ("used", "releasing", "pipelined", "idle", "future_idle", "refused"):
        np.testing.assert_array_equal(getattr(a, field), getattr(b, field), err_msg=field)


def test_twin_works_without_kernel() -> None:
    node = np.array([0, 0, 1, -1], np.int32)
    status = np.array([32, 4, 64, 1], np.int32)
    req = np.array([[1.0], [2.0], [3.0], [9.0]])
    with dispatch.forced("twin"):
        out = ledger.build_ledger(node, status, req, np.array([[10.0], [10.0]]))
    np.testing.assert_array_equal(out.used[:, 0], [1.0, 3.0])
    np.testing.assert_array_equal(out.future_idle[:, 0], [10 - 1 - 2, 10 - 3 + 3])


# volcano v1.14.1 pkg/scheduler/api/node_info.go (NodeInfo.AddTask, Binding branch;
# resource_info.go LessEqualWithResourcesName, minResource 0.1)
BINDING, RUNNING, PIPELINED = taskstatus.BINDING, taskstatus.RUNNING, taskstatus.PIPELINED


@pytest.mark.parametrize("mode", ["twin", pytest.param("kernel", marks=needs_kernel)])
def test_node_info_add_task_refuses_a_binding_task_that_does_not_fit_idle(mode: str) -> None:
    # columns: cpu, memory, gpu; one node 10 cpu / 10 mem / 4 gpu
    alloc = np.array([[10.0, 10.0, 4.0]])
    node = np.array([0, 0, 0, 0, 0], np.int32)
    # the Binding task at row 0 comes after every non-Binding task, whatever its row
    status = np.array([BINDING, RUNNING, PIPELINED, BINDING, BINDING], np.int32)
    req = np.array(
        [
            [3.0, 3.0, 0.0],  # Binding: idle 10-6=4 cpu after the Running task -> fits, idle 1
            [6.0, 1.0, 0.0],  # Running: always counted
            [9.0, 9.0, 9.0],  # Pipelined: never touches Idle
            [1.05, 1.0, 0.0],  # Binding: 1.05 - 1 < 0.1 -> fits (tolerance), idle -0.05
            [0.0, 0.0, 1.0],  # Binding: cpu 0 - (-0.05) < 0.1 fits, gpu 1 <= 4 fits
        ]
    )
    with dispatch.forced(mode):  # type: ignore[arg-type]
        out = ledger.build_ledger(node, status, req, alloc, ["cpu", "memory", "nvidia.com/gpu"])
    np.testing.assert_array_equal(out.refused, [False, False, False, False, False])
    np.testing.assert_allclose(out.used[0], [10.05, 5.0, 1.0])
    # now one more cpu-less Binding task asking memory 6 > idle 5: refused, counted nowhere
    node2 = np.append(node, 0).astype(np.int32)
    status2 = np.append(status, BINDING).astype(np.int32)
    req2 = np.vstack([req, [0.0, 6.0, 0.0]])
    with dispatch.forced(mode):  # type: ignore[arg-type]
        out2 = ledger.build_ledger(node2, status2, req2, alloc, ["cpu", "memory", "nvidia.com/gpu"])
    np.testing.assert_array_equal(out2.refused, [False] * 5 + [True])
    np.testing.assert_array_equal(out2.used, out.used)


@pytest.mark.parametrize("mode", ["twin", pytest.param("kernel", marks=needs_kernel)])
def test_binding_fit_checks_cpu_memory_pods_always_and_only_requested_scalars(mode: str) -> None:
    """Volcano v1.14.1 NodeInfo.AddTask: a Binding task's Resreq (with its ``pods: 1``) against Idle."""
    alloc = np.array([[10.0, 10.0, 2.0, 0.0]])  # cpu, memory, pods (2 slots), gpu (none)
    node = np.zeros(4, np.int32)
    status = np.array([RUNNING, BINDING, BINDING, BINDING], np.int32)
    req = np.array(
        [
            [1.0, 1.0, 1.0, 0.0],  # fills one pod slot
            [1.0, 1.0, 1.0, 1.0],  # Binding: asks a gpu the node lacks -> refused
            [1.0, 1.0, 1.0, 0.0],  # Binding: the last pod slot -> fits
            [1.0, 1.0, 1.0, 0.0],  # Binding: no pod slot left -> refused (cpu and memory would fit)
        ]
    )
    with dispatch.forced(mode):  # type: ignore[arg-type]
        out = ledger.build_ledger(node, status, req, alloc, ["cpu", "memory", "pods", "nvidia.com/gpu"])
    np.testing.assert_array_equal(out.refused, [False, True, False, True])
    np.testing.assert_array_equal(out.used[0], [2.0, 2.0, 2.0, 0.0])
