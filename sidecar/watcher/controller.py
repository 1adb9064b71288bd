"""The watch loop: list RepackRuns every period and reconcile the DryRuns.

Polling keeps this slice simple and crash-safe (each pass starts from the API's state); the next
step is a watch from the list's resourceVersion (410 → relist) and a Lease for leader election.
"""

from __future__ import annotations

import threading
from typing import Any, cast

import structlog
from kubernetes import client, config
from kubernetes.client import ApiException

from sidecar.watcher.dryrun import GROUP, PLURAL, VERSION, DryRunReconciler, InProcessPlanner, Planner, wants

log = structlog.get_logger("sidecar.watcher")


class Controller:
    """Reconciles every unfinished DryRun on each pass; one run's failure never stops the others."""

    def __init__(self, api: client.ApiClient, planner: Planner, *, period: float = 2.0) -> None:
        self._custom = client.CustomObjectsApi(api)
        self._reconciler = DryRunReconciler(api, planner)
        self.period = period
        self.stopped = threading.Event()

    def run_once(self) -> dict[str, str]:
        """One pass; returns the phase each run reached in it (runs left alone are absent)."""
        listed = cast(dict[str, Any], self._custom.list_cluster_custom_object(GROUP, VERSION, PLURAL))
        runs: list[dict[str, Any]] = listed.get("items") or []
        done: dict[str, str] = {}
        for run in runs:
            if not wants(run):
                continue
            name = run["metadata"]["name"]
            try:
                phase = self._reconciler.reconcile(run)
            except (ApiException, RuntimeError) as exc:
                log.warning("repackrun not reconciled; next pass retries", run=name, error=str(exc))
                continue
            if phase is not None:
                done[name] = phase
        return done

    def run(self) -> None:
        """Pass after pass until ``stop``; an API outage is logged and waited out."""
        while not self.stopped.is_set():
            try:
                self.run_once()
            except ApiException as exc:
                log.warning("repackruns not listed", status=exc.status, reason=exc.reason)
            self.stopped.wait(self.period)

    def stop(self) -> None:
        self.stopped.set()


def watch(kubeconfig: str, planner: Planner | None, *, once: bool = False, period: float = 2.0) -> int:
    """``repack-sidecar watch``: one pass (``once``) or a loop until interrupted; exit code 0.
    ``planner`` None plans in process (the CLI passes the gRPC client: the watcher may not import it)."""
    api = config.new_client_from_config(kubeconfig)  # type: ignore[no-untyped-call]
    controller = Controller(api, planner or InProcessPlanner(), period=period)
    try:
        if once:
            for name, phase in sorted(controller.run_once().items()):
                print(f"repackrun/{name} {phase}", flush=True)
        else:
            controller.run()
    except KeyboardInterrupt:
        controller.stop()
    finally:
        api.close()
    return 0
