"""An in-memory Kubernetes API server on loopback, real HTTP, for the official client and kubectl.

No kube-apiserver or etcd can run on these machines, so the watcher is tested against this emulator:
``ApiServer`` (server.py) is the front door; ``store`` keeps objects and watch history, ``rest`` the
per-kind semantics, ``http`` the wire protocol.
"""

from sidecar.sandbox.apiserver.server import ApiServer

__all__ = ["ApiServer"]
