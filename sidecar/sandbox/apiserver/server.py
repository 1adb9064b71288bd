"""``ApiServer``: the emulator as a context manager for tests, and ``serve`` for the CLI.

It binds 127.0.0.1 only (a free port by default) and serves from a background thread; ``stop``
cuts open watches first so connection threads end with it.
"""

from __future__ import annotations

import copy
import importlib
import signal
import threading
from pathlib import Path
from types import TracebackType
from typing import Any

from sidecar.sandbox.apiserver.apierrors import ApiError
from sidecar.sandbox.apiserver.faults import Audit, Faults
from sidecar.sandbox.apiserver.http import EmulatorHTTPServer
from sidecar.sandbox.apiserver.kubeconfig import write_kubeconfig
from sidecar.sandbox.apiserver.lifecycle import Lifecycle
from sidecar.sandbox.apiserver.registry import Registry
from sidecar.sandbox.apiserver.rest import Api
from sidecar.sandbox.apiserver.store import Obj, Store

SYSTEM_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")


class ApiServer:
    """In-memory Kubernetes API server. ``history``: watch events kept per resource before 410 Gone."""

    def __init__(self, port: int = 0, *, history: int = 1000, bookmark_every: float = 1.0) -> None:
        self.store = Store(history=history)
        self.registry = Registry()
        self.api = Api(self.store, self.registry)
        self.lifecycle = Lifecycle(self.api)
        self.faults = Faults(self.store)
        self.audit = Audit()
        self._http = EmulatorHTTPServer(("127.0.0.1", port), self.api, self.faults, self.audit, bookmark_every)
        self._thread = threading.Thread(target=self._http.serve_forever, name="apiserver-http", daemon=True)
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
        self._thread.start()
        return self

    def stop(self) -> None:
        self.store.drop_watches()
        self._http.shutdown()
        self._http.server_close()
        self.lifecycle.stop()
        self._thread.join(5)

    def __enter__(self) -> ApiServer:
        return self.start()

    def __exit__(self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()

    def create(self, obj: Obj, *, keep_status: bool = True) -> Obj:
        """Create any object by its apiVersion/kind in process (status kept: loaders state what is running)."""
        rt = self.registry.by_kind(obj.get("apiVersion", ""), obj.get("kind", ""))
        return self.api.create(rt, obj.get("metadata", {}).get("namespace", ""), obj, keep_status=keep_status)

    def load(self, objs: list[Obj]) -> int:
        """Create objects in order (namespaces and CRDs first, as a person would apply them); existing ones are kept."""
        order = {"Namespace": 0, "CustomResourceDefinition": 0, "Node": 1}
        done = 0
        for obj in sorted(objs, key=lambda o: order.get(o.get("kind", ""), 2)):
            try:
                self.create(copy.deepcopy(obj))
                done += 1
            except ApiError as exc:
                if exc.reason != "AlreadyExists":
                    raise
        return done


def objects_loader() -> Any | None:
    """``sidecar.sandbox.objects.objects_from_snapshot`` when that module exists."""
    try:
        return importlib.import_module("sidecar.sandbox.objects").objects_from_snapshot
    except (ImportError, AttributeError):
        return None


def serve(port: int, kubeconfig_path: str, objs: list[Obj] | None = None) -> int:
    """Serve until SIGINT/SIGTERM (the CLI's ``sandbox serve``)."""
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    with ApiServer(port) as server:
        loaded = server.load(objs or [])
        path = server.kubeconfig(kubeconfig_path)
        print(f"serving {server.url} ({loaded} objects loaded); kubeconfig: {path}", flush=True)
        print(f"try: kubectl --kubeconfig {path} get nodes,pods -A", flush=True)
        stop.wait()
    return 0
