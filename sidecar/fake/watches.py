"""One watch on the fake cluster: the history it replays and the live events it is handed, until
its timeout, ``close`` (the stream just ends) or ``cut`` (a dropped connection: the reader gets
``Unreachable``); an idle one sends BOOKMARKs carrying the store's version."""

from __future__ import annotations

import queue
import time
from collections.abc import Callable, Iterator
from typing import Any

from sidecar.kubeobj import Obj
from sidecar.watcher.kit.port import Resource, Unreachable

_END, _CUT = object(), object()


class Watch:
    """One watch: replayed history, then live events, until its timeout, ``close`` or a cut."""

    def __init__(
        self,
        resource: Resource,
        deadline: float,
        bookmark_every: float,
        version: Callable[[], str],
        unwatch: Callable[[Resource, Watch], None],
    ) -> None:
        self._resource, self._deadline, self._bookmark_every = resource, deadline, bookmark_every
        self._version, self._unwatch = version, unwatch
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()

    def push(self, item: Any) -> None:
        self._queue.put(item)

    def __iter__(self) -> Iterator[tuple[str, Obj]]:
        try:
            while True:
                left = self._deadline - time.monotonic()
                if left <= 0:
                    return
                wait = min(left, self._bookmark_every) if self._bookmark_every > 0 else left
                try:
                    item = self._queue.get(timeout=wait)
                except queue.Empty:
                    if self._bookmark_every > 0 and time.monotonic() < self._deadline:
                        rv = self._version()
                        yield "BOOKMARK", {"kind": self._resource.kind, "metadata": {"resourceVersion": rv}}
                    continue
                if item is _END:
                    return
                if item is _CUT:
                    raise Unreachable("watch stream cut")
                yield item
        finally:
            self._unwatch(self._resource, self)

    def close(self) -> None:
        self._queue.put(_END)

    def cut(self) -> None:
        self._queue.put(_CUT)
