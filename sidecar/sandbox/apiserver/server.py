"""``ApiServer``: the emulator as a context manager for tests, and ``serve`` for the CLI.

It binds 127.0.0.1 only (a free port by default) and serves from a background thread; ``stop``
cuts open watches first so connection threads end with it.
"""

from __future__ import annotations

import signal
import threading
from pathlib import Path
from types import TracebackType

import yaml

from sidecar.api.v1alpha1 import snapshot_pb2 as pb
from sidecar.errors import InputError
from sidecar.kubeobj import Obj
from sidecar.sandbox.apiserver.apierrors import ApiError
from sidecar.sandbox.apiserver.disruption import DisruptionController
from sidecar.sandbox.apiserver.faults import Audit, Faults, load_faults
from sidecar.sandbox.apiserver.http import EmulatorHTTPServer
from sidecar.sandbox.apiserver.kubeconfig import write_kubeconfig
from sidecar.sandbox.apiserver.lifecycle import Lifecycle
from sidecar.sandbox.apiserver.registry import Registry
from sidecar.sandbox.apiserver.rest import Api
from sidecar.sandbox.apiserver.store import Store
from sidecar.sandbox.controlplane import ControlPlane, ControlPlaneConfig
from sidecar.sandbox.objects import objects_from_snapshot
from sidecar.snapshot.io import load_snapshot, read_data

SYSTEM_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")
_HERE = Path(__file__).resolve()
#: where the CRDs are: packaged into the wheel by setup.py, else the repository's manifests/crd
CRD_DIRS = (_HERE.parents[2] / "data" / "crd", _HERE.parents[3] / "manifests" / "crd")


def crd_manifests() -> list[Obj]:
    """The CRDs a loaded snapshot needs (RepackRun, PodGroup, Volcano Job), from the first folder found."""
    folder = next((d for d in CRD_DIRS if any(d.glob("*_*.yaml"))), None)
    if folder is None:
        raise FileNotFoundError(f"no CRD manifests in {' or '.join(str(d) for d in CRD_DIRS)}")
    return [yaml.safe_load(p.read_text()) for p in sorted(folder.glob("*_*.yaml"))]


class ApiServer:
    """In-memory Kubernetes API server. ``history``: watch events kept per resource before 410 Gone."""

    def __init__(
        self,
        port: int = 0,
        *,
        history: int = 1000,
        bookmark_every: float = 1.0,
        control_plane: ControlPlaneConfig | bool = False,
    ) -> None:
        self.store = Store(history=history)
        self.registry = Registry()
        self.api = Api(self.store, self.registry)
        self.lifecycle = Lifecycle(self.api)
        self.disruption = DisruptionController(self.store)
        self.faults = Faults(self.store)
        self.audit = Audit()
        self._http = EmulatorHTTPServer(("127.0.0.1", port), self.api, self.faults, self.audit, bookmark_every)
        self._thread = threading.Thread(
            target=self._http.serve_forever, args=(0.05,), name="apiserver-http", daemon=True
        )
        #: the simulated scheduler, kubelet and workload controllers (``True``: all on, defaults)
        self.control_plane: ControlPlane | None = None
        if control_plane:
            conf = control_plane if isinstance(control_plane, ControlPlaneConfig) else ControlPlaneConfig()
            self.control_plane = ControlPlane(self.api, conf)
        ns = self.registry.lookup("", "v1", "namespaces")
        for name in SYSTEM_NAMESPACES:
            self.api.create(ns, "", {"metadata": {"name": name}})

    @property
    def port(self) -> int:
        return int(self._http.server_address[1])

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def kubeconfig(self, path: str | Path) -> Path:
        return write_kubeconfig(path, self.url)

    def start(self) -> ApiServer:
        self.lifecycle.start()
        self.disruption.start()
        if self.control_plane is not None:
            self.control_plane.start()
        self._thread.start()
        return self

    def stop(self) -> None:
        """Idempotent, and safe on a server never started (a failed ``--load``)."""
        if self.control_plane is not None:
            self.control_plane.stop()
        self.store.drop_watches()
        if self._thread.is_alive():
            self._http.shutdown()
            self._thread.join(5)
        self._http.server_close()
        self.lifecycle.stop()
        self.disruption.stop()

    def __enter__(self) -> ApiServer:
        return self.start()

    def __exit__(self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()

    def create(self, obj: Obj, *, keep_status: bool = True, stored: bool = False) -> Obj:
        """Create any object by its apiVersion/kind in process (status kept: loaders state what is running;
        ``stored``: uid and deletionTimestamp kept too)."""
        rt = self.registry.by_kind(obj.get("apiVersion", ""), obj.get("kind", ""))
        namespace = obj.get("metadata", {}).get("namespace", "")
        return self.api.create(rt, namespace, obj, keep_status=keep_status, stored=stored)

    def load(self, snapshot: pb.Snapshot | list[Obj]) -> int:
        """Fill the server with a cluster's state: the project's CRDs first, then a snapshot's objects
        (``objects_from_snapshot``) or the objects given, written as stored state rather than as
        client creates (status, uid and deletionTimestamp as given). Objects that exist are kept;
        returns how many were created."""
        objs = objects_from_snapshot(snapshot) if isinstance(snapshot, pb.Snapshot) else snapshot
        order = {"CustomResourceDefinition": 0, "Namespace": 1, "Node": 2}
        done = 0
        for obj in [*crd_manifests(), *sorted(objs, key=lambda o: order.get(o.get("kind", ""), 3))]:
            try:
                self.create(obj, stored=True)  # Api.create copies
                done += 1
            except ApiError as exc:
                if exc.reason != "AlreadyExists":
                    raise
        return done


def _install_faults(server: ApiServer, path: str) -> int:
    try:
        text = Path(path).read_text()
    except OSError as exc:
        raise InputError("--faults", f"cannot read {path}: {exc.strerror or exc}") from None
    return load_faults(server.faults, read_data(text, source=path), path)


def serve(
    port: int, kubeconfig_path: str, load: str | None = None, *, control_plane: bool = False, faults: str | None = None
) -> int:
    """The CLI's ``sandbox serve``: load, install the faults file, write the kubeconfig, then serve
    until SIGINT/SIGTERM (exit 0).

    Port 0 binds a free port; the URL is printed once the server answers, the kubeconfig already written.
    """
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    server = ApiServer(port, control_plane=control_plane)
    try:
        loaded = server.load(load_snapshot(load) if load else [])  # the project's CRDs in any case
        rules = _install_faults(server, faults) if faults else 0
        path = server.kubeconfig(kubeconfig_path)
        server.start()
        injected = f", {rules} fault rules from {faults}" if faults else ""
        print(f"serving {server.url} ({loaded} objects loaded{injected}); kubeconfig: {path}", flush=True)
        print(f"try: kubectl --kubeconfig {path} get nodes,pods -A", flush=True)
        stop.wait()
    finally:
        server.stop()
    return 0
