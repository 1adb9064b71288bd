"""Which Execute runs an informer event concerns (the controller's ``maps``, as controller-runtime
maps events to owners): a Pod's events go to the unfinished Execute runs whose journal names it
(Execute waits for rebuilt pods, which keep their victims' names, and a targeted run for its
workload's pods), a PodGroup's events to the targeted runs it is the workload of, and an Execute run that
starts, finishes or goes away wakes the Pending Execute runs it may have held back."""

from __future__ import annotations

import threading
from collections.abc import Callable

from sidecar.api.repackrun import Mode, Phase
from sidecar.kubeobj import Obj
from sidecar.watcher.execute.journal import key as pod_key
from sidecar.watcher.execute.journal import relocations_of
from sidecar.watcher.execute.target import progress_of
from sidecar.watcher.kit.cache import ClusterCache
from sidecar.watcher.kit.controller import Mapper, name_of, unfinished
from sidecar.watcher.kit.informer import DELETED, Informer
from sidecar.watcher.kit.status import mode_of, phase_of


def is_execute(run: Obj) -> bool:
    return mode_of(run) == Mode.EXECUTE


class JournalPods:
    """ "namespace/name" of a pod -> the unfinished Execute runs whose journal names it; kept from
    run events, read by Pod events."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pods: dict[str, set[str]] = {}
        self._of_run: dict[str, set[str]] = {}

    def update(self, run: Obj, deleted: bool = False) -> None:
        name = name_of(run)
        keys: set[str] = set()
        if not deleted and is_execute(run) and unfinished(run):
            status = run.get("status") or {}
            keys = {pod_key(r) for r in relocations_of(status)}
            workload = progress_of(status)
            if workload is not None:  # a targeted run follows its workload's pods too
                namespace = workload.pod_group.partition("/")[0]
                keys |= {f"{namespace}/{n.pod_name}" for n in workload.nominations}
        with self._lock:
            for key in self._of_run.pop(name, set()) - keys:
                runs = self._pods.get(key, set())
                runs.discard(name)
                if not runs:
                    self._pods.pop(key, None)
            for key in keys:
                self._pods.setdefault(key, set()).add(name)
            if keys:
                self._of_run[name] = keys

    def runs(self, pod: Obj) -> list[str]:
        meta = pod.get("metadata") or {}
        with self._lock:
            return sorted(self._pods.get(f"{meta.get('namespace', '')}/{meta.get('name', '')}", ()))


class ExecuteEvents:
    """The two maps, over the runs as cached (``runs``)."""

    def __init__(self, runs: Callable[[], list[Obj]]) -> None:
        self._runs = runs
        self.pods = JournalPods()

    def on_run(self, kind: str, run: Obj) -> list[str]:
        self.pods.update(run, deleted=kind == DELETED)
        if not is_execute(run):
            return []
        me = name_of(run)
        return [
            name_of(o)
            for o in self._runs()
            if is_execute(o) and phase_of(o) in ("", Phase.PENDING) and name_of(o) != me
        ]

    def on_pod(self, kind: str, pod: Obj) -> list[str]:
        return self.pods.runs(pod)

    def on_pod_group(self, kind: str, group: Obj) -> list[str]:
        """A PodGroup's events go to the unfinished targeted runs it is the workload of (its deletion
        ends them)."""
        meta = group.get("metadata") or {}
        key = f"{meta.get('namespace', '')}/{meta.get('name', '')}"
        return [
            name_of(r)
            for r in self._runs()
            if is_execute(r) and unfinished(r) and ((r.get("status") or {}).get("target") or {}).get("podGroup") == key
        ]

    @classmethod
    def maps(cls, cache: ClusterCache) -> list[tuple[Informer, Mapper]]:
        events = cls(cache.list_runs)
        return [(cache.runs, events.on_run), (cache.pods, events.on_pod), (cache.pod_groups, events.on_pod_group)]
