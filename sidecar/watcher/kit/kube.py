"""The cluster port on the official ``kubernetes`` client: raw JSON over its configured connection.

Requests go through the client's own request path (``ApiClient.param_serialize``/``call_api``:
its kubeconfig or in-cluster credentials, TLS and connection pool) with bodies read as raw JSON
rather than typed models: on 1,000 nodes / 8,009 pods (2 cores) a raw pod LIST costs 0.33 s of
client CPU against 2.2 s typed, a watch event 25 µs against 156 µs with models. A watch is read
line by line as chunks arrive; ``close`` cuts it from another thread.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import urllib3
from kubernetes import client
from kubernetes.client import ApiException

from sidecar.errors import InputError
from sidecar.kubeobj import Obj
from sidecar.watcher.kit.port import PODS, ApiError, Gone, Listing, Resource, Unreachable

#: seconds to connect; how long past a watch's own timeout a silent stream is given up; a LIST's read timeout
CONNECT_TIMEOUT, READ_SLACK, LIST_READ_TIMEOUT = 10.0, 30.0, 120.0
JSON, JSON_PATCH = "application/json", "application/json-patch+json"


def _message(status: int, reason: str, data: bytes | None) -> ApiError:
    try:
        body = json.loads(data or b"{}")
        message = str(body.get("message") or reason)
        why = str(body.get("reason") or "")
    except (TypeError, ValueError):
        message, why = reason or f"HTTP {status}", ""
    return ApiError(status, message, why)


def _lines(response: Any) -> Iterator[bytes]:
    """Newline-delimited watch events as the chunks arrive (a chunk may hold several or part of one)."""
    buffer = bytearray()
    for chunk in response.stream(amt=None, decode_content=False):
        buffer.extend(chunk)
        start = 0
        while (end := buffer.find(b"\n", start)) != -1:
            if end > start:
                yield bytes(buffer[start:end])
            start = end + 1
        del buffer[:start]
    if buffer.strip():
        yield bytes(buffer)


class _Stream:
    """One watch response read as events; ``close`` may come from another thread."""

    def __init__(self, response: Any) -> None:
        self._response = response
        self._closed = False

    def __iter__(self) -> Iterator[tuple[str, Obj]]:
        try:
            for line in _lines(self._response):
                event = json.loads(line)
                kind, obj = str(event.get("type")), event.get("object") or {}
                if kind == "ERROR":
                    code = int(obj.get("code") or 500)
                    if code == 410:
                        raise Gone(str(obj.get("message") or "410 Gone"))
                    raise ApiError(code, str(obj.get("message") or ""), str(obj.get("reason") or ""))
                yield kind, obj
        except (urllib3.exceptions.HTTPError, OSError, ValueError) as exc:  # ValueError: a torn JSON line
            if self._closed:
                return  # cut on purpose (``close``): the stream just ends
            raise Unreachable(f"watch stream cut: {type(exc).__name__}: {exc}") from exc
        finally:
            self._response.release_conn()

    def close(self) -> None:
        """Unblock a thread reading the stream (urllib3 ≥ 2.3 ``shutdown``; else close the socket);
        the reader's loop then ends as if the server had ended the stream."""
        self._closed = True
        try:
            if hasattr(self._response, "shutdown"):
                self._response.shutdown()
            self._response.close()
        except Exception:  # best effort: the reader also sees its stop flag
            pass


class KubeCluster:
    """``Cluster`` over a configured ``kubernetes.client.ApiClient``."""

    def __init__(self, api: client.ApiClient) -> None:
        self.api = api

    def _call(
        self,
        method: str,
        path: str,
        *,
        query: list[tuple[str, Any]] | None = None,
        body: Any = None,
        content_type: str = JSON,
        timeout: Any = None,
    ) -> Any:
        """The raw urllib3 response of a 2xx answer; ApiError for any other, Unreachable for none."""
        headers = {"Accept": JSON, "Content-Type": content_type}
        request = self.api.param_serialize(
            method, path, query_params=query or [], header_params=headers, body=body, auth_settings=["BearerToken"]
        )
        try:
            answer = self.api.call_api(*request, _request_timeout=timeout)
        except ApiException as exc:
            body = exc.body.encode() if isinstance(exc.body, str) else exc.body
            raise _message(int(exc.status or 0), str(exc.reason or ""), body) from exc
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            raise Unreachable(f"{method} {path}: {type(exc).__name__}: {exc}") from exc
        if not 200 <= answer.status <= 299:
            raise _message(answer.status, str(answer.reason or ""), answer.response.data)
        return answer.response

    def _json(self, method: str, path: str, **kwargs: Any) -> Obj:
        response = self._call(method, path, **kwargs)
        try:
            doc = json.loads(response.data)
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            raise Unreachable(f"{method} {path}: body cut: {exc}") from exc
        except ValueError as exc:
            raise Unreachable(f"{method} {path}: body torn: {exc}") from exc
        assert isinstance(doc, dict)
        return doc

    @staticmethod
    def _timeout(seconds: float | None, default: float) -> tuple[float, float]:
        read = default if seconds is None else seconds
        return (min(CONNECT_TIMEOUT, read), read)

    def listing(self, resource: Resource, *, timeout: float | None = None) -> Listing:
        doc = self._json("GET", resource.path(), timeout=self._timeout(timeout, LIST_READ_TIMEOUT))
        rv = str((doc.get("metadata") or {}).get("resourceVersion") or "")
        return Listing(list(doc.get("items") or []), rv)

    def watch(self, resource: Resource, resource_version: str, timeout_seconds: int) -> _Stream:
        query = [("watch", "true"), ("allowWatchBookmarks", "true"), ("timeoutSeconds", timeout_seconds)]
        if resource_version:
            query.append(("resourceVersion", resource_version))
        response = self._call(
            "GET", resource.path(), query=query, timeout=(CONNECT_TIMEOUT, timeout_seconds + READ_SLACK)
        )
        return _Stream(response)

    def get(self, resource: Resource, name: str, namespace: str = "", *, timeout: float | None = None) -> Obj | None:
        try:
            return self._json("GET", resource.path(namespace, name), timeout=self._timeout(timeout, 30.0))
        except ApiError as exc:
            if exc.status == 404:
                return None
            raise

    def create(self, resource: Resource, obj: Obj, *, timeout: float | None = None) -> Obj:
        namespace = str((obj.get("metadata") or {}).get("namespace") or "")
        return self._json("POST", resource.path(namespace), body=obj, timeout=self._timeout(timeout, 30.0))

    def replace(self, resource: Resource, obj: Obj, *, status: bool = False, timeout: float | None = None) -> Obj:
        meta = obj.get("metadata") or {}
        path = resource.path(str(meta.get("namespace") or ""), str(meta["name"]), "status" if status else "")
        return self._json("PUT", path, body=obj, timeout=self._timeout(timeout, 30.0))

    def patch(self, resource: Resource, name: str, namespace: str, ops: list[Obj], *, status: bool = False) -> Obj:
        path = resource.path(namespace, name, "status" if status else "")
        return self._json("PATCH", path, body=ops, content_type=JSON_PATCH, timeout=self._timeout(None, 30.0))

    def delete(self, resource: Resource, name: str, namespace: str = "", *, uid: str = "") -> None:
        body: Obj = {"apiVersion": "v1", "kind": "DeleteOptions"}
        if uid:
            body["preconditions"] = {"uid": uid}
        self._json("DELETE", resource.path(namespace, name), body=body, timeout=self._timeout(None, 30.0))

    def evict(self, namespace: str, name: str, *, uid: str, grace_seconds: int | None = None) -> None:
        options: Obj = {"preconditions": {"uid": uid}}
        if grace_seconds is not None:
            options["gracePeriodSeconds"] = grace_seconds
        body = {
            "apiVersion": "policy/v1",
            "kind": "Eviction",
            "metadata": {"name": name, "namespace": namespace},
            "deleteOptions": options,
        }
        self._json("POST", PODS.path(namespace, name, "eviction"), body=body, timeout=self._timeout(None, 30.0))

    def close(self) -> None:
        self.api.close()  # type: ignore[no-untyped-call]


def connect(kubeconfig: str | None, *, retries: bool = True) -> KubeCluster:
    """The cluster in kubectl's and controller-runtime's order: the ``--kubeconfig`` given, else
    ``$KUBECONFIG`` (a list of files, merged), else the in-cluster config, else ``~/.kube/config``;
    an InputError naming what was tried when none works. Its connection pool has room for the
    informers' watches, the Lease and the writes; ``retries=False`` (the Lease) fails a cut request
    at once instead of trying it again past a deadline."""
    from kubernetes import config
    from kubernetes.config.config_exception import ConfigException

    conf = client.Configuration()
    env = os.environ.get("KUBECONFIG", "")
    home = Path("~/.kube/config").expanduser()
    try:
        if kubeconfig or env:
            source = kubeconfig or f"$KUBECONFIG={env}"
            config.load_kube_config(config_file=kubeconfig or env, client_configuration=conf)  # type: ignore[no-untyped-call]
        else:
            source = f"not given, $KUBECONFIG unset, and no in-cluster config nor {home}"
            try:
                config.load_incluster_config(client_configuration=conf)  # type: ignore[no-untyped-call]
            except ConfigException:
                if not home.is_file():
                    raise
                source = f"not given, $KUBECONFIG unset, no in-cluster config, {home}"
                config.load_kube_config(config_file=str(home), client_configuration=conf)  # type: ignore[no-untyped-call]
    except (ConfigException, OSError, ValueError) as exc:
        raise InputError("--kubeconfig", f"{source}: {exc}") from exc
    conf.connection_pool_maxsize = max(conf.connection_pool_maxsize or 0, 32)
    if not retries:
        conf.retries = False
    return KubeCluster(client.ApiClient(conf))
