"""Leader election on a coordination.k8s.io/v1 Lease, as client-go's leaderelection does it.

A candidate GETs the Lease every ``retry_period``; it takes it when it is absent (create: a 409
means another candidate created it first), released (no holderIdentity) or expired
(``renewTime + leaseDurationSeconds < now``) by a replace carrying the Lease's resourceVersion
(a 409 means another candidate won the race). The leader renews every ``retry_period``; when no
renewal has succeeded for ``renew_deadline`` seconds — or the Lease names someone else — it stops
leading at once (``on_stopped_leading``) and goes back to candidacy. ``renew_deadline <
lease_duration`` leaves the old leader time to stop before anyone may take over. A clean ``stop``
releases the Lease by clearing holderIdentity, so a successor need not wait for expiry.

Expiry is judged on the wall clock (renewTime is a timestamp written by the holder): like every
Lease user, this assumes the candidates' clocks agree to well under ``lease_duration −
renew_deadline``.
"""

from __future__ import annotations

import socket
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone

import structlog

from sidecar.kubeobj import Obj
from sidecar.watcher.kit.port import LEASES, TRANSIENT, ApiError, Cluster

log = structlog.get_logger("sidecar.watcher")


def default_identity() -> str:
    """hostname_uuid: unique per process even when two replicas share a hostname."""
    return f"{socket.gethostname()}_{uuid.uuid4()}"


@dataclass(frozen=True)
class LeaseConfig:
    """client-go's defaults: a 15 s lease, renewed every 2 s, given up after 10 s without a renewal."""

    name: str = "repack-watcher"
    namespace: str = "default"
    identity: str = field(default_factory=default_identity)
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0

    def problems(self) -> list[str]:
        """What client-go's NewLeaderElector would refuse."""
        out = []
        if self.lease_duration <= self.renew_deadline:
            out.append("the lease duration must be greater than the renew deadline")
        if self.renew_deadline <= self.retry_period:
            out.append("the renew deadline must be greater than the retry period")
        if self.retry_period <= 0:
            out.append("the retry period must be positive")
        if not self.identity:
            out.append("the identity must not be empty")
        return out


def micro_time(at: float) -> str:
    """A MicroTime as the API server writes it (RFC 3339, microseconds, UTC)."""
    return datetime.fromtimestamp(at, timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def parse_time(text: str) -> float | None:
    """Seconds since the epoch of a Time or MicroTime ("Z" or an offset), None when absent or unreadable."""
    if not text:
        return None
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def expired(lease: Obj, now: float) -> bool:
    """No holder, or the holder's renewTime + leaseDurationSeconds lies in the past."""
    spec = lease.get("spec") or {}
    if not spec.get("holderIdentity"):
        return True
    renewed = parse_time(str(spec.get("renewTime") or spec.get("acquireTime") or ""))
    return renewed is None or renewed + float(spec.get("leaseDurationSeconds") or 0) < now


class LeaderElector:
    """Candidacy and leadership on one Lease, on a thread of its own (``start``/``stop``) or ``run``."""

    def __init__(
        self,
        cluster: Cluster,
        config: LeaseConfig,
        *,
        on_started_leading: Callable[[], None],
        on_stopped_leading: Callable[[], None],
        clock: Callable[[], float] = time.time,
    ) -> None:
        bad = config.problems()
        if bad:
            raise ValueError("; ".join(bad))
        self.config = config
        #: a port of its own whose requests are not retried (``kube.connect(retries=False)``): a
        #: request cut at the time left before the renew deadline must fail then, not be tried again
        self._cluster = cluster
        self._started, self._stopped_cb = on_started_leading, on_stopped_leading
        self._clock = clock
        self._stop = threading.Event()
        self._leading = threading.Event()
        self._release = True
        self._thread: threading.Thread | None = None
        #: the Lease as last read or written by this elector
        self.observed: Obj | None = None

    @property
    def identity(self) -> str:
        return self.config.identity

    def is_leader(self) -> bool:
        return self._leading.is_set()

    # -- lifecycle ---------------------------------------------------------------------------
    def start(self) -> LeaderElector:
        if self._thread is None:
            self._thread = threading.Thread(target=self.run, name="leader-elector", daemon=True)
            self._thread.start()
        return self

    def stop(self, *, release: bool = True, timeout: float = 10.0) -> None:
        """Leave the election: stop leading (callback), then clear holderIdentity unless ``release``
        is False (a crash, as tests simulate it: the others wait for expiry)."""
        self._release = release
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None
        self._cluster.close()

    def run(self) -> None:
        """Candidate, leader, candidate again … until ``stop``."""
        while not self._stop.is_set():
            if not self._acquire():
                break
            self._lead()
        if self._release:
            self._give_up()

    # -- candidacy ---------------------------------------------------------------------------
    def _acquire(self) -> bool:
        """Try every retry period until this process holds the Lease (True) or is stopped (False)."""
        while not self._stop.is_set():
            try:
                if self.try_acquire_or_renew(timeout=self.config.renew_deadline):
                    return True
            except TRANSIENT as exc:
                log.warning("lease not acquired; retrying", lease=self.config.name, error=_why(exc))
            self._stop.wait(self.config.retry_period)
        return False

    def _lead(self) -> None:
        """Leading: renew every retry period; step down when the renew deadline passes without a renewal."""
        self._leading.set()
        log.info("leading", lease=self.config.name, identity=self.identity)
        _call(self._started, "on_started_leading")
        renewed = time.monotonic()
        try:
            while True:
                left = self.config.renew_deadline - (time.monotonic() - renewed)
                if self._stop.wait(max(0.0, min(self.config.retry_period, left))):
                    return
                left = self.config.renew_deadline - (time.monotonic() - renewed)
                if left <= 0:
                    log.warning("lease not renewed within the deadline; stepping down", lease=self.config.name)
                    return
                try:
                    ok = self.try_acquire_or_renew(timeout=left)
                except TRANSIENT as exc:
                    log.warning("lease renewal failed", lease=self.config.name, error=_why(exc))
                    continue
                if ok:
                    renewed = time.monotonic()
                elif self._holder() not in ("", self.identity):
                    log.warning("lease taken by another holder; stepping down", holder=self._holder())
                    return
        finally:
            self._leading.clear()
            log.info("stopped leading", lease=self.config.name, identity=self.identity)
            _call(self._stopped_cb, "on_stopped_leading")

    def try_acquire_or_renew(self, timeout: float | None = None) -> bool:
        """One round: True when this process holds the Lease afterwards. A lost race (409) is False;
        other API errors raise (the caller retries). No request outlives ``timeout``."""
        now = self._clock()
        name, ns = self.config.name, self.config.namespace
        lease = self._cluster.get(LEASES, name, ns, timeout=timeout)
        if lease is None:
            body = {
                "apiVersion": "coordination.k8s.io/v1",
                "kind": "Lease",
                "metadata": {"name": name, "namespace": ns},
                "spec": self._spec({}, now),
            }
            return self._write(lambda: self._cluster.create(LEASES, body, timeout=timeout))
        self.observed = lease
        spec = lease.get("spec") or {}
        holder = str(spec.get("holderIdentity") or "")
        if holder != self.identity and not expired(lease, now):
            return False
        lease = {**lease, "spec": self._spec(spec, now)}
        return self._write(lambda: self._cluster.replace(LEASES, lease, timeout=timeout))

    def _spec(self, old: Obj, now: float) -> Obj:
        spec = dict(old)
        if old.get("holderIdentity") != self.identity:
            spec["acquireTime"] = micro_time(now)
            spec["leaseTransitions"] = int(old.get("leaseTransitions") or 0) + (1 if old else 0)
        spec["holderIdentity"] = self.identity
        spec["leaseDurationSeconds"] = max(1, round(self.config.lease_duration))
        spec["renewTime"] = micro_time(now)
        return spec

    def _write(self, call: Callable[[], Obj]) -> bool:
        try:
            self.observed = call()
        except ApiError as exc:
            if exc.status == 409:
                log.info("lease race lost", lease=self.config.name, identity=self.identity)
                return False
            raise
        return True

    def _holder(self) -> str:
        return str(((self.observed or {}).get("spec") or {}).get("holderIdentity") or "")

    def _give_up(self) -> None:
        """Release: clear holderIdentity (if still ours) so a successor need not wait for expiry."""
        name, ns = self.config.name, self.config.namespace
        try:
            lease = self._cluster.get(LEASES, name, ns, timeout=5.0)
            spec = dict((lease or {}).get("spec") or {})
            if lease is None or spec.get("holderIdentity") != self.identity:
                return
            spec.pop("holderIdentity", None)
            spec["leaseDurationSeconds"] = 1
            spec["renewTime"] = micro_time(self._clock())
            self._cluster.replace(LEASES, {**lease, "spec": spec}, timeout=5.0)
            log.info("lease released", lease=name, identity=self.identity)
        except TRANSIENT as exc:
            log.warning("lease not released; the next leader waits for expiry", lease=name, error=_why(exc))


def _why(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


def _call(callback: Callable[[], None], what: str) -> None:
    try:
        callback()
    except Exception as exc:  # a callback's bug must not wedge the election
        log.error(f"{what} failed", error=f"{type(exc).__name__}: {exc}")
