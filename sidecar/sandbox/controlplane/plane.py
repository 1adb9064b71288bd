"""The control plane as one switchable unit that ``ApiServer(control_plane=...)`` starts and stops."""

from __future__ import annotations

from dataclasses import dataclass

from sidecar.sandbox.apiserver.rest import Api
from sidecar.sandbox.controlplane.creation import Creation
from sidecar.sandbox.controlplane.kubelet import Kubelet
from sidecar.sandbox.controlplane.loop import Loop
from sidecar.sandbox.controlplane.scheduler import Scheduler
from sidecar.sandbox.controlplane.workloads import Workloads


@dataclass(frozen=True)
class ControlPlaneConfig:
    """Which simulated components run, and how fast (tests switch parts off to drive one by hand)."""

    scheduler: bool = True
    kubelet: bool = True
    jobs: bool = True
    modelserving: bool = True
    #: Volcano's default schedulePeriod (1 s): how long a rebuilt pod waits before a cycle sees it
    scheduler_period: float = 1.0
    kubelet_start_delay: float = 0.0
    #: scheduling gates the workload controllers create rebuilt pods with (none: they race the scheduler)
    rebuild_gates: tuple[str, ...] = ()


class ControlPlane:
    """The components a config switches on, over one API server's store."""

    def __init__(self, api: Api, config: ControlPlaneConfig | None = None) -> None:
        self.config = config = config or ControlPlaneConfig()
        self.scheduler = Scheduler(api, period=config.scheduler_period) if config.scheduler else None
        self.kubelet = Kubelet(api, start_delay=config.kubelet_start_delay) if config.kubelet else None
        wanted = config.jobs or config.modelserving
        self.workloads = (
            Workloads(api, jobs=config.jobs, modelserving=config.modelserving, gates=config.rebuild_gates)
            if wanted
            else None
        )
        self.creation = Creation(api, jobs=config.jobs, modelserving=config.modelserving) if wanted else None

    @property
    def parts(self) -> list[Loop]:
        return [p for p in (self.creation, self.scheduler, self.kubelet, self.workloads) if p is not None]

    def start(self) -> None:
        for part in self.parts:
            part.start()

    def stop(self) -> None:
        for part in self.parts:
            part.stop()

    def cycle(self) -> int:
        """One pass of every part in order (creation, workloads, scheduler, kubelet); returns objects changed."""
        parts = (self.creation, self.workloads, self.scheduler, self.kubelet)
        return sum(p.cycle() for p in parts if p is not None)
