"""The simulated Volcano control plane over a fake cluster: scheduler, kubelet and the workload
controllers' rebuilds, each switchable, each a ``Loop`` a test may also cycle by hand."""

from __future__ import annotations

from dataclasses import dataclass

from sidecar.fake.cluster import FakeCluster
from sidecar.fake.kubelet import Kubelet
from sidecar.fake.scheduler import Loop, Scheduler
from sidecar.fake.workloads import Workloads


@dataclass(frozen=True)
class PlaneConfig:
    scheduler: bool = True
    kubelet: bool = True
    workloads: bool = True
    #: Volcano's default schedulePeriod (1 s): how long a rebuilt pod waits before a cycle sees it
    scheduler_period: float = 1.0
    kubelet_start_delay: float = 0.0


class ControlPlane:
    """The components ``config`` switches on; ``start`` runs each on its thread, ``cycle`` runs one
    pass of each in order (workloads, scheduler, kubelet)."""

    def __init__(self, cluster: FakeCluster, config: PlaneConfig | None = None) -> None:
        self.config = config = config or PlaneConfig()
        self.workloads = Workloads(cluster) if config.workloads else None
        self.scheduler = Scheduler(cluster, period=config.scheduler_period) if config.scheduler else None
        self.kubelet = Kubelet(cluster, start_delay=config.kubelet_start_delay) if config.kubelet else None

    @property
    def parts(self) -> list[Loop]:
        return [p for p in (self.workloads, self.scheduler, self.kubelet) if p is not None]

    def start(self) -> ControlPlane:
        for part in self.parts:
            part.start()
        return self

    def stop(self) -> None:
        for part in self.parts:
            part.stop()

    def cycle(self) -> int:
        return sum(p.cycle() for p in self.parts)
