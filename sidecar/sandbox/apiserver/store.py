"""Objects per resource with one global resourceVersion, and a bounded event history for watch.

Stored dicts are never mutated after they are written (writers store fresh copies), so reads,
lists and watch events share them without copying — that keeps a 6k-pod list cheap.
"""

from __future__ import annotations

import copy
import queue
import threading
import time
import uuid
from collections import defaultdict, deque
from collections.abc import Callable
from datetime import datetime, timezone

from sidecar.kubeobj import Obj
from sidecar.sandbox.apiserver.apierrors import already_exists, conflict, gone, not_found

Event = tuple[str, Obj, int]  # (ADDED | MODIFIED | DELETED, object, resourceVersion)
CLOSED: Event = ("CLOSED", {}, 0)


def now_iso(offset: float = 0.0) -> str:
    return datetime.fromtimestamp(time.time() + offset, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _names(key: str) -> tuple[str, str]:
    group, _, plural = key.partition("/")
    return group, plural


def _spec_part(obj: Obj) -> Obj:
    return {k: v for k, v in obj.items() if k not in ("metadata", "status")}


class Subscription:
    """One open watch: events arrive on a queue, pushed under the store lock so order is global."""

    def __init__(self, store: Store, key: str, namespace: str | None) -> None:
        self.store, self.key, self.namespace = store, key, namespace
        self.queue: queue.SimpleQueue[Event] = queue.SimpleQueue()

    def next(self, timeout: float) -> Event | None:
        try:
            return self.queue.get(timeout=timeout)
        except queue.Empty:
            return None

    def bookmark_rv(self) -> int | None:
        """The store's resourceVersion when nothing is pending for us (a bookmark may not skip events)."""
        with self.store.lock:
            return self.store.rv if self.queue.empty() else None

    def close(self) -> None:
        self.store.unsubscribe(self)


class Store:
    """In-memory objects by storage key (``group/plural``) and ``(namespace, name)``."""

    def __init__(self, history: int = 1000) -> None:
        self.lock = threading.RLock()
        self.rv = 0
        self.history_limit = history
        self._objs: dict[str, dict[tuple[str, str], Obj]] = defaultdict(dict)
        self._history: dict[str, deque[Event]] = defaultdict(deque)
        self._dropped: dict[str, int] = defaultdict(int)  # newest resourceVersion no longer in history
        self._floor = 0  # compaction: every resourceVersion below is gone
        self._subs: dict[str, list[Subscription]] = defaultdict(list)
        self._dependents: dict[str, set[tuple[str, str, str]]] = defaultdict(set)  # owner uid → dependents
        self._uids: set[str] = set()
        self._gone: set[str] = set()  # uids of objects removed here: owners known to be absent
        self.removed: queue.SimpleQueue[tuple[str, Obj]] = queue.SimpleQueue()  # for the lifecycle worker
        #: in-process controllers' informers: called under the lock with every event, so they must
        #: only take note (no watch fault drops them; they are the controller manager's own view)
        self.listeners: list[Callable[[str, Event], None]] = []

    # -- reads -------------------------------------------------------------------------------
    def get(self, key: str, namespace: str, name: str) -> Obj:
        with self.lock:
            obj = self._objs[key].get((namespace, name))
        if obj is None:
            raise not_found(*_names(key), name)
        return obj

    def find(self, key: str, namespace: str, name: str) -> Obj | None:
        with self.lock:
            return self._objs[key].get((namespace, name))

    def scan(
        self, key: str, namespace: str | None = None, after: tuple[str, str] | None = None
    ) -> tuple[list[Obj], int]:
        """Objects sorted by (namespace, name), optionally only those after a continue key."""
        with self.lock:
            items = sorted(self._objs[key].items())
            rv = self.rv
        if namespace:
            items = [kv for kv in items if kv[0][0] == namespace]
        if after is not None:
            items = [kv for kv in items if kv[0] > after]
        return [obj for _, obj in items], rv

    def resource_keys(self) -> list[str]:
        with self.lock:
            return list(self._objs)

    def has_uid(self, uid: str) -> bool:
        with self.lock:
            return uid in self._uids

    def known_absent(self, uid: str) -> bool:
        """True once an object with this uid was stored here and then removed."""
        with self.lock:
            return uid in self._gone and uid not in self._uids

    def dependents(self, uid: str) -> list[tuple[str, str, str]]:
        with self.lock:
            return sorted(self._dependents.get(uid, ()))

    # -- writes ------------------------------------------------------------------------------
    def create(self, key: str, obj: Obj, *, stored: bool = False) -> Obj:
        """A new object; ``stored`` keeps the uid, timestamps, generation and deletion fields it
        carries (a loader restoring state), where a client's create gets fresh ones."""
        meta = obj.setdefault("metadata", {})
        namespace, name = meta.get("namespace", ""), meta.get("name", "")
        with self.lock:
            if (namespace, name) in self._objs[key]:
                raise already_exists(*_names(key), name)
            if not stored or not meta.get("uid"):
                meta["uid"] = str(uuid.uuid4())
            if not stored or not meta.get("creationTimestamp"):
                meta["creationTimestamp"] = now_iso()
            if not stored or not meta.get("generation"):
                meta["generation"] = 1
            if not stored:
                meta.pop("deletionTimestamp", None)
                meta.pop("deletionGracePeriodSeconds", None)
            return self._write(key, obj, "ADDED")

    def update(self, key: str, obj: Obj, *, check_rv: bool = True) -> Obj:
        """Replace an object (409 on a stale resourceVersion); generation moves when more than metadata/status does."""
        meta = obj.setdefault("metadata", {})
        namespace, name = meta.get("namespace", ""), meta.get("name", "")
        with self.lock:
            old = self._objs[key].get((namespace, name))
            if old is None:
                raise not_found(*_names(key), name)
            sent = meta.get("resourceVersion")
            if check_rv and sent and sent != old["metadata"]["resourceVersion"]:
                why = "the object has been modified; please apply your changes to the latest version and try again"
                raise conflict(*_names(key), name, why)
            om = old["metadata"]
            for k in ("uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds"):
                if k in om:
                    meta[k] = om[k]
                else:
                    meta.pop(k, None)
            meta["generation"] = om.get("generation", 1) + (_spec_part(obj) != _spec_part(old))
            if om.get("deletionTimestamp") and not meta.get("finalizers") and om["deletionTimestamp"] <= now_iso():
                return self._drop(key, obj)
            return self._write(key, obj, "MODIFIED")

    def mark_deleting(self, key: str, obj: Obj, grace: int) -> Obj:
        """Graceful deletion: the object stays, visible as terminating, until grace and finalizers are done."""
        with self.lock:
            obj = copy.deepcopy(obj)
            meta = obj["metadata"]
            meta["deletionTimestamp"] = now_iso(grace)
            meta["deletionGracePeriodSeconds"] = grace
            meta["generation"] = meta.get("generation", 1) + 1
            return self._write(key, obj, "MODIFIED")

    def remove(self, key: str, namespace: str, name: str, uid: str | None = None) -> Obj | None:
        with self.lock:
            old = self._objs[key].get((namespace, name))
            if old is None or (uid and old["metadata"].get("uid") != uid):
                return None
            return self._drop(key, old)

    def _drop(self, key: str, obj: Obj) -> Obj:
        meta = obj["metadata"]
        self._objs[key].pop((meta.get("namespace", ""), meta["name"]), None)
        self._index(key, obj, add=False)
        self._gone.add(meta.get("uid", ""))
        self.rv += 1
        gone_obj = {**obj, "metadata": {**meta, "resourceVersion": str(self.rv)}}
        self._emit(key, ("DELETED", gone_obj, self.rv))
        self.removed.put((key, gone_obj))
        return gone_obj

    def _write(self, key: str, obj: Obj, kind: str) -> Obj:
        self.rv += 1
        meta = obj["metadata"]
        meta["resourceVersion"] = str(self.rv)
        old = self._objs[key].get((meta.get("namespace", ""), meta["name"]))
        if old is not None:
            self._index(key, old, add=False)
        self._objs[key][(meta.get("namespace", ""), meta["name"])] = obj
        self._index(key, obj, add=True)
        self._emit(key, (kind, obj, self.rv))
        return obj

    def _index(self, key: str, obj: Obj, *, add: bool) -> None:
        meta = obj["metadata"]
        me = (key, meta.get("namespace", ""), meta["name"])
        if add:
            self._uids.add(meta.get("uid", ""))
        else:
            self._uids.discard(meta.get("uid", ""))
        for ref in meta.get("ownerReferences") or []:
            deps = self._dependents[ref.get("uid", "")]
            if add:
                deps.add(me)
            else:
                deps.discard(me)

    # -- watch -------------------------------------------------------------------------------
    def _emit(self, key: str, event: Event) -> None:
        hist = self._history[key]
        hist.append(event)
        while len(hist) > self.history_limit:
            self._dropped[key] = hist.popleft()[2]
        ns = event[1]["metadata"].get("namespace", "")
        for listener in self.listeners:
            listener(key, event)
        for sub in self._subs[key]:
            if not sub.namespace or sub.namespace == ns:
                sub.queue.put(event)

    def check_rv(self, key: str, rv: int) -> None:
        """410 Gone when events after ``rv`` may have been forgotten (the history window passed it)."""
        with self.lock:
            oldest = max(self._dropped[key], self._floor)
        if rv < oldest:
            raise gone(f"too old resource version: {rv} ({oldest})")

    def subscribe(self, key: str, namespace: str | None, rv: int | None) -> Subscription:
        """Events after ``rv``; with no rv, synthetic ADDED events for what exists now, then live ones."""
        sub = Subscription(self, key, namespace)
        with self.lock:
            if rv is None:
                for (ns, _), obj in sorted(self._objs[key].items()):
                    if not namespace or ns == namespace:
                        sub.queue.put(("ADDED", obj, int(obj["metadata"]["resourceVersion"])))
            else:
                self.check_rv(key, rv)
                for event in self._history[key]:
                    if event[2] > rv and (not namespace or event[1]["metadata"].get("namespace", "") == namespace):
                        sub.queue.put(event)
            self._subs[key].append(sub)
        return sub

    def unsubscribe(self, sub: Subscription) -> None:
        with self.lock:
            if sub in self._subs[sub.key]:
                self._subs[sub.key].remove(sub)

    def drop_watches(self) -> int:
        """Close every open watch (fault injection): each stream ends as a dropped connection would."""
        with self.lock:
            subs = [s for group in self._subs.values() for s in group]
            self._subs.clear()
        for sub in subs:
            sub.queue.put(CLOSED)
        return len(subs)

    def compact(self) -> int:
        """Forget all history now: any older resourceVersion (watch or continue token) answers 410."""
        with self.lock:
            self.rv += 1  # a no-op write: lists from now on are servable, every earlier version is not
            self._floor = self.rv
            self._history.clear()
            return self.rv

    def watchers(self) -> int:
        with self.lock:
            return sum(len(group) for group in self._subs.values())

    @property
    def floor(self) -> int:
        with self.lock:
            return self._floor
