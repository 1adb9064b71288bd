"""``Obj``: a Kubernetes object (or any JSON object) as the API returns it, a ``dict`` from JSON.

One alias for every layer that reads or writes objects (the snapshot's converters, the watcher,
the fake cluster, the demo), so a reader meets one name for one thing.
"""

from __future__ import annotations

from typing import Any, TypeAlias

Obj: TypeAlias = dict[str, Any]
