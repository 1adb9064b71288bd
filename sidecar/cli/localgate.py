"""The placement gate where there is no Service network — the sandbox, a control plane on one
machine: the shipped webhook configuration registered with a loopback URL instead of the Service
(the operator's step), and the watcher serving it there with a certificate that names 127.0.0.1.
From then on it is the deployed path: the watcher's Secret, its CA injection, its HTTPS server."""

from __future__ import annotations

import socket
from dataclasses import dataclass
from typing import Any, cast

from kubernetes import client
from kubernetes.client import ApiException

from sidecar.watcher.args import LeaseFlags, WatchOptions, WebhookFlags
from sidecar.watcher.cluster import ClusterCache
from sidecar.watcher.gates import CONFIGURATION, GateIndex, Lifter, configuration
from sidecar.watcher.runner import placement_gate, serve_webhook
from sidecar.watcher.webhook import PATH, WebhookServer


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def register(api: client.ApiClient, port: int) -> str:
    """Create (or replace) the webhook configuration calling ``https://127.0.0.1:<port>/mutate-pods``,
    without a caBundle (the watcher injects its CA); returns the URL."""
    url = f"https://127.0.0.1:{port}{PATH}"
    body = configuration({"url": url})
    admission = client.AdmissionregistrationV1Api(api)
    try:
        admission.create_mutating_webhook_configuration(cast(Any, body))
    except ApiException as exc:
        if exc.status != 409:
            raise
        admission.replace_mutating_webhook_configuration(CONFIGURATION, cast(Any, body))
    return url


def local_flags(port: int, timeout: float = 60.0) -> WebhookFlags:
    """``watch --webhook-port <port> --webhook-host 127.0.0.1 --webhook-name 127.0.0.1``."""
    return WebhookFlags(port=port, host="127.0.0.1", names=("127.0.0.1",), gate_timeout=timeout)


@dataclass
class LocalGate:
    server: WebhookServer
    gates: GateIndex
    #: the leader's chore: give it to the Controller
    lifter: Lifter

    def close(self) -> None:
        self.server.close()


def serve_local_gate(
    api: client.ApiClient, cache: ClusterCache, *, namespace: str = "volcano-system", timeout: float = 60.0
) -> LocalGate:
    """Register the configuration on a free loopback port, then serve it as ``watch`` does."""
    port = free_port()
    register(api, port)
    gates, lifter = placement_gate(api, cache, timeout)
    options = WatchOptions(lease=LeaseFlags(namespace=namespace), webhook=local_flags(port, timeout))
    return LocalGate(serve_webhook(api, options, gates), gates, lifter)
