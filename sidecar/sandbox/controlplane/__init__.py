"""The simulated Volcano control plane: scheduler, kubelet and workload controllers, each switchable.

They act only through the API server's store, as the real components act only through the API,
so watchers see every binding, phase change and recreation as events.
"""

from sidecar.sandbox.controlplane.plane import ControlPlane, ControlPlaneConfig

__all__ = ["ControlPlane", "ControlPlaneConfig"]
