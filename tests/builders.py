"""Small helpers to write snapshots in tests the way a reader thinks of them (cards, not x1000)."""

from __future__ import annotations

from sidecar.api.v1alpha1 import snapshot_pb2 as pb

GPU = "nvidia.com/gpu"
GIB = 1024**3


def node(
    name: str,
    cards: float = 8,
    *,
    resource: str = GPU,
    labels: dict[str, str] | None = None,
    cpu: float = 64_000,
    memory: float = 512 * GIB,
    pods: float = 110,
    **kw: object,
) -> pb.Node:
    alloc = {"cpu": cpu, "memory": memory, "pods": pods}
    if cards:
        alloc[resource] = cards * 1000.0
    return pb.Node(name=name, labels={"kubernetes.io/hostname": name, **(labels or {})}, allocatable=alloc, **kw)


def task(
    name: str,
    node_name: str = "",
    cards: float = 1,
    *,
    resource: str = GPU,
    ns: str = "default",
    status: int = pb.Task.Running,
    pod_group: str = "",
    cpu: float = 1000,
    scheduler: str = "volcano",
    profile: pb.TaskProfile | None = None,
    **kw: object,
) -> pb.Task:
    req = {"cpu": cpu, "memory": 1.0 * GIB}
    if cards:
        req[resource] = cards * 1000.0
    return pb.Task(
        uid=f"uid-{ns}-{name}",
        namespace=ns,
        name=name,
        node=node_name,
        status=status,
        pod_group=pod_group,
        requests=req,
        profile=profile if profile is not None else pb.TaskProfile(scheduler_name=scheduler),
        **kw,
    )


def snapshot(nodes: list[pb.Node], tasks: list[pb.Task], pod_groups: list[pb.PodGroup] | None = None) -> pb.Snapshot:
    return pb.Snapshot(nodes=nodes, tasks=tasks, pod_groups=pod_groups or [])


def guide_twenty_nodes() -> pb.Snapshot:
    """The guide's example: 20 nodes of 8 cards, 15 in use, 96 cards allocated -> minimum 12, 15%.

    npu-00..05 hold one 8-card pod, npu-06..11 a 4- and a 2-card pod, npu-12..14 two 2-card pods.
    """
    nodes = [node(f"npu-{i:02d}") for i in range(20)]
    pods = [[8]] * 6 + [[4, 2]] * 6 + [[2, 2]] * 3
    tasks = [
        task(f"w-{i:02d}-{j}", f"npu-{i:02d}", size) for i, sizes in enumerate(pods) for j, size in enumerate(sizes)
    ]
    return snapshot(nodes, tasks)
