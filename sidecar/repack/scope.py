"""RepackRun scope: which PodGroups may be evicted and which nodes may be emptied.

Within one include or exclude, ``names`` and ``selector`` are ORed; exclude wins; an include
with neither selects everything. PodGroup names are ``namespace/name``. Scope never limits
receivers and never changes the fragmentation statistic.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from sidecar.api.v1alpha1 import snapshot_pb2 as pb
from sidecar.api.v1alpha1 import spec_pb2
from sidecar.errors import InputError
from sidecar.mirror.selectors import LABEL_OPS, label_selector_matches
from sidecar.snapshot.state import ClusterState


@dataclass(frozen=True)
class Filter:
    names: frozenset[str]
    selector: pb.LabelSelector | None  # None: no selector given

    @property
    def empty(self) -> bool:
        return not self.names and self.selector is None

    def matches(self, name: str, labels: Mapping[str, str]) -> bool:
        return name in self.names or (self.selector is not None and label_selector_matches(self.selector, labels))


@dataclass(frozen=True)
class Selection:
    include: Filter
    exclude: Filter

    @property
    def everything(self) -> bool:
        """No include and no exclude: every object is in scope (and nothing need be read)."""
        return self.include.empty and self.exclude.empty

    def allows(self, name: str, labels: Mapping[str, str]) -> bool:
        if not self.exclude.empty and self.exclude.matches(name, labels):
            return False
        return self.include.empty or self.include.matches(name, labels)


@dataclass(frozen=True)
class Scope:
    pod_groups: Selection
    nodes: Selection

    def pod_group_mask(self, state: ClusterState) -> npt.NDArray[np.bool_]:
        if self.pod_groups.everything:
            return np.ones(len(state.pod_groups), bool)
        return np.array(
            [self.pod_groups.allows(f"{pg.namespace}/{pg.name}", pg.labels) for pg in state.pod_groups], bool
        )

    def node_mask(self, state: ClusterState) -> npt.NDArray[np.bool_]:
        if self.nodes.everything:
            return np.ones(state.n_nodes, bool)
        return np.array([self.nodes.allows(n.name, n.labels) for n in state.nodes], bool)


def _filter(msg: spec_pb2.ScopeFilter, path: str, namespaced: bool) -> Filter:
    for i, name in enumerate(msg.names):
        if not name:
            raise InputError(f"{path}.names[{i}]", "empty name")
        if namespaced and (name.count("/") != 1 or name.startswith("/") or name.endswith("/")):
            raise InputError(f"{path}.names[{i}]", f'PodGroup names are namespace/name, got "{name}"')
    selector = None
    if msg.HasField("selector"):
        selector = msg.selector
        for j, req in enumerate(selector.match_expressions):
            where = f"{path}.selector.matchExpressions[{j}]"
            if req.operator not in LABEL_OPS:
                raise InputError(
                    f"{where}.operator", f'unknown operator "{req.operator}" (In, NotIn, Exists, DoesNotExist)'
                )
            if not req.key:
                raise InputError(f"{where}.key", "missing")
            if req.operator in ("In", "NotIn") and not req.values:
                raise InputError(f"{where}.values", f"{req.operator} needs at least one value")
            if req.operator in ("Exists", "DoesNotExist") and req.values:
                raise InputError(f"{where}.values", f"{req.operator} takes no values")
    return Filter(frozenset(msg.names), selector)


def _selection(msg: spec_pb2.ScopeSelection, path: str, namespaced: bool) -> Selection:
    return Selection(
        _filter(msg.include, f"{path}.include", namespaced), _filter(msg.exclude, f"{path}.exclude", namespaced)
    )


def resolve_selector_spec(scope: spec_pb2.RepackScope, path: str = "spec.scope") -> Scope:
    return Scope(
        _selection(scope.pod_groups, f"{path}.podGroups", True), _selection(scope.nodes, f"{path}.nodes", False)
    )
