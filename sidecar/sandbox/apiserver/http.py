"""The wire protocol: routing, discovery, CRUD, watch streams and Table negotiation over HTTP/1.1.

A ``ThreadingHTTPServer``: one thread per connection, so an open watch never blocks other calls.
Every request is checked against injected faults first and recorded in the audit log after.
"""

from __future__ import annotations

import json
import socket
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from sidecar.kubeobj import Obj
from sidecar.sandbox.apiserver import discovery, fields
from sidecar.sandbox.apiserver.apierrors import ApiError
from sidecar.sandbox.apiserver.faults import Audit, AuditRecord, Faults
from sidecar.sandbox.apiserver.registry import ResourceType
from sidecar.sandbox.apiserver.rest import Api
from sidecar.sandbox.apiserver.selectors import field_selector, label_selector
from sidecar.sandbox.apiserver.store import CLOSED
from sidecar.sandbox.apiserver.tables import table


class EmulatorHTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, addr: tuple[str, int], api: Api, faults: Faults, audit: Audit, bookmark_every: float) -> None:
        super().__init__(addr, Handler)
        self.api, self.faults, self.audit, self.bookmark_every = api, faults, audit, bookmark_every


@dataclass
class Route:
    rt: ResourceType
    namespace: str = ""
    name: str = ""
    sub: str = ""
    watch: bool = False


def _dumps(obj: Any) -> bytes:
    return json.dumps(obj, separators=(",", ":")).encode()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: EmulatorHTTPServer

    def setup(self) -> None:
        super().setup()
        self.request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # watch events leave at once

    def log_message(self, format: str, *args: Any) -> None:  # the audit log is the record
        pass

    def do_GET(self) -> None:
        self._handle("GET")

    def do_POST(self) -> None:
        self._handle("POST")

    def do_PUT(self) -> None:
        self._handle("PUT")

    def do_PATCH(self) -> None:
        self._handle("PATCH")

    def do_DELETE(self) -> None:
        self._handle("DELETE")

    # -- plumbing ----------------------------------------------------------------------------
    def _send(self, code: int, body: Any) -> None:
        data = _dumps(body)
        self.send_response(code)
        for warning in getattr(self, "warnings", ()):  # RFC 7234 warn-code 299, as the API server sends them
            self.send_header("Warning", '299 - "{}"'.format(warning.replace("\\", "\\\\").replace('"', '\\"')))
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
        self.code = code

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))

    def _handle(self, method: str) -> None:
        url = urlsplit(self.path)
        self.q = {k: v[-1] for k, v in parse_qs(url.query).items()}
        length = int(self.headers.get("Content-Length") or 0)
        self.body = self.rfile.read(length) if length else b""
        self.code, verb, route = 500, method.lower(), None
        self.warnings: list[str] = []
        try:
            doc = self._discovery(url.path) if method == "GET" else None
            if doc is not None:
                self._send(200, doc)
                return
            route = self._route(url.path)
            verb = self._verb(method, route)
            self.server.faults.check(verb, route.rt.plural, route.sub)
            if self.q.get("dryRun") and method != "GET":
                # refused rather than silently applied: a dry run that writes would lose data
                raise ApiError(400, "dryRun is not supported by the sandbox API server")
            self._dispatch(method, verb, route)
        except ApiError as exc:
            self._send(exc.code, exc.status())
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True
        except Exception as exc:  # a bug here must still answer as a Status, not a dropped socket
            self._send(500, ApiError(500, f"{type(exc).__name__}: {exc}").status())
        finally:
            rec = AuditRecord(
                verb,
                route.rt.plural if route else url.path,
                route.sub if route else "",
                route.namespace if route else "",
                route.name if route else "",
                self.headers.get("User-Agent", ""),
                self.code,
                self.path,
            )
            self.server.audit.add(rec)

    def _discovery(self, path: str) -> Any:
        reg, parts = self.server.api.registry, [p for p in path.split("/") if p]
        if path in ("/version", "/version/"):
            return discovery.VERSION
        if path == "/openapi/v2":
            raise ApiError(404, "the server could not find the requested resource")
        if path.rstrip("/") == "/openapi/v3":
            return discovery.openapi_v3(reg)
        if path.startswith("/openapi/v3/"):
            return discovery.openapi_v3_gv(reg, path.removeprefix("/openapi/v3/")) or _raise(
                ApiError(404, "the server could not find the requested resource")
            )
        if parts == ["api"]:
            return discovery.api_versions(f"127.0.0.1:{self.server.server_address[1]}")
        if parts == ["apis"]:
            return discovery.api_groups(reg)
        if parts == ["api", "v1"]:
            return discovery.resource_list(reg, "", "v1")
        if len(parts) == 2 and parts[0] == "apis":
            return discovery.api_group(reg, parts[1]) or _raise(
                ApiError(404, "the server could not find the requested resource")
            )
        if len(parts) == 3 and parts[0] == "apis":
            return discovery.resource_list(reg, parts[1], parts[2]) or _raise(
                ApiError(404, "the server could not find the requested resource")
            )
        return None

    def _route(self, path: str) -> Route:
        parts = [p for p in path.split("/") if p]
        if parts[:2] == ["api", "v1"]:
            group, version, rest = "", "v1", parts[2:]
        elif len(parts) >= 3 and parts[0] == "apis":
            group, version, rest = parts[1], parts[2], parts[3:]
        else:
            raise ApiError(404, "the server could not find the requested resource")
        watch = bool(rest) and rest[0] == "watch"
        rest = rest[1:] if watch else rest
        reg, namespace = self.server.api.registry, ""
        if len(rest) >= 3 and rest[0] == "namespaces":
            try:
                rt = reg.lookup(group, version, rest[2])
                namespace, rest = rest[1], rest[2:]
            except ApiError:
                if group:
                    raise
        if not rest or len(rest) > 3:
            raise ApiError(404, "the server could not find the requested resource")
        rt = reg.lookup(group, version, rest[0])
        sub = rest[2] if len(rest) == 3 else ""
        if sub and sub not in rt.subresources:
            raise ApiError(404, f"the server could not find the requested resource ({rt.plural}/{sub})")
        return Route(rt, namespace, rest[1] if len(rest) > 1 else "", sub, watch)

    def _verb(self, method: str, r: Route) -> str:
        if method == "GET":
            if r.name:
                return "watch" if r.watch else "get"
            return "watch" if r.watch or self.q.get("watch") in ("1", "true") else "list"
        collection = {"POST": "create", "DELETE": "deletecollection"}
        item = {"POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}
        verb = (item if r.name else collection).get(method)
        if verb is None:
            raise ApiError(405, f"{method} is not supported on this path")
        return verb

    def _validation(self) -> tuple[str, list[str]]:
        """The request's field validation (``fieldValidation``, Warn when absent) and where its warnings go."""
        return fields.mode_of(self.q), self.warnings

    def _json(self) -> Obj:
        ctype = (self.headers.get("Content-Type") or "application/json").split(";")[0].strip()
        if ctype not in ("application/json", "*/*", ""):
            # protobuf and CBOR are not served: 415 tells client-go to retry the write as JSON
            raise ApiError(
                415, f"the body of the request was in an unknown format: {ctype}", reason="UnsupportedMediaType"
            )
        try:
            doc = json.loads(self.body or b"{}")
        except ValueError as exc:
            raise ApiError(400, f"invalid JSON body: {exc}") from exc
        if not isinstance(doc, dict):
            raise ApiError(400, "the request body must be a JSON object")
        return doc

    # -- verbs -------------------------------------------------------------------------------
    def _dispatch(self, method: str, verb: str, r: Route) -> None:
        api, as_table = self.server.api, "as=Table" in (self.headers.get("Accept") or "")
        if verb == "watch":
            self._watch(r, as_table)
        elif verb == "get":
            obj = api.get(r.rt, r.namespace, r.name)
            self._send(200, table(r.rt, [obj], int(obj["metadata"]["resourceVersion"])) if as_table else obj)
        elif verb == "list":
            self._list(r, as_table)
        elif verb == "create" and (r.sub == "binding" or r.rt.kind == "Binding"):
            body = self._json()
            self._send(201, api.bind(r.namespace, r.name or body.get("metadata", {}).get("name", ""), body))
        elif r.rt.kind == "Binding":
            raise ApiError(405, f"{verb} is not supported on bindings")
        elif verb == "create" and r.sub == "eviction":
            self._send(201, api.evict(r.namespace, r.name, self._json()))
        elif verb == "create":
            self._send(201, api.create(r.rt, r.namespace, self._json(), validation=self._validation()))
        elif verb == "update":
            self._send(200, api.replace(r.rt, r.namespace, r.name, self._json(), r.sub, self._validation()))
        elif verb == "patch":
            ctype = self.headers.get("Content-Type", "")
            self._send(*api.patch(r.rt, r.namespace, r.name, self.body, ctype, r.sub, self._validation()))
        elif verb == "delete":
            opts = self._json() if self.body else {}
            for k in ("gracePeriodSeconds", "propagationPolicy"):
                if k in self.q:
                    opts[k] = self.q[k]
            self._send(200, api.delete(r.rt, r.namespace, r.name, opts))
        else:  # deletecollection
            items, _, _, _ = api.list_objects(r.rt, r.namespace, self._match())
            gone = [api.delete(r.rt, o["metadata"].get("namespace", ""), o["metadata"]["name"], {}) for o in items]
            self._send(200, {"kind": r.rt.list_kind, "apiVersion": r.rt.api_version, "metadata": {}, "items": gone})

    def _match(self) -> Any:
        labels, fields = label_selector(self.q.get("labelSelector")), field_selector(self.q.get("fieldSelector"))
        return lambda o: labels(o) and fields(o)

    def _list(self, r: Route, as_table: bool) -> None:
        limit = int(self.q.get("limit") or 0)
        items, rv, cont, remaining = self.server.api.list_objects(
            r.rt, r.namespace, self._match(), limit, self.q.get("continue", "")
        )
        if as_table:
            self._send(200, table(r.rt, items, rv, cont))
            return
        meta: dict[str, Any] = {"resourceVersion": str(rv)}
        if cont:
            meta.update({"continue": cont, "remainingItemCount": remaining})
        self._send(200, {"kind": r.rt.list_kind, "apiVersion": r.rt.api_version, "metadata": meta, "items": items})

    def _watch(self, r: Route, as_table: bool) -> None:
        """Newline-delimited WatchEvents in chunks; a too-old resourceVersion is an ERROR event (410)."""
        rv_text = self.q.get("resourceVersion", "")
        match = self._match()
        if r.name:
            by_name = field_selector(f"metadata.name={r.name}")
            match = (lambda m: lambda o: m(o) and by_name(o))(match)
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        self.code = 200
        try:
            sub = self.server.api.store.subscribe(
                r.rt.key, r.namespace or None, int(rv_text) if rv_text not in ("", "0") else None
            )
        except ApiError as exc:
            self._chunk(_dumps({"type": "ERROR", "object": exc.status()}) + b"\n")
            self._chunk(b"")
            return
        deadline = time.monotonic() + float(self.q.get("timeoutSeconds") or 1800)
        bookmarks = self.q.get("allowWatchBookmarks") in ("true", "1")
        try:
            while (left := deadline - time.monotonic()) > 0:
                event = sub.next(min(left, self.server.bookmark_every))
                if event is CLOSED:
                    self.close_connection = True  # dropped: no terminating chunk, the client sees a cut stream
                    return
                if event is None:
                    bm = sub.bookmark_rv() if bookmarks else None
                    if bm is not None:
                        obj = {
                            "kind": r.rt.kind,
                            "apiVersion": r.rt.api_version,
                            "metadata": {"resourceVersion": str(bm)},
                        }
                        self._chunk(_dumps({"type": "BOOKMARK", "object": obj}) + b"\n")
                    continue
                kind, obj, rv = event
                if match(obj):
                    out = table(r.rt, [obj], rv) if as_table else obj
                    self._chunk(_dumps({"type": kind, "object": out}) + b"\n")
            self._chunk(b"")
        finally:
            sub.close()


def _raise(exc: ApiError) -> Any:
    raise exc
