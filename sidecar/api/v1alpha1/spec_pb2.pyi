from sidecar.api.v1alpha1 import snapshot_pb2 as _snapshot_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class RepackSpec(_message.Message):
    __slots__ = ("mode", "scope", "goals", "max_per_run", "eviction", "ttl_seconds_after_finished", "planner", "target")
    class Mode(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        MODE_UNSPECIFIED: _ClassVar[RepackSpec.Mode]
        DryRun: _ClassVar[RepackSpec.Mode]
        Execute: _ClassVar[RepackSpec.Mode]
    MODE_UNSPECIFIED: RepackSpec.Mode
    DryRun: RepackSpec.Mode
    Execute: RepackSpec.Mode
    MODE_FIELD_NUMBER: _ClassVar[int]
    SCOPE_FIELD_NUMBER: _ClassVar[int]
    GOALS_FIELD_NUMBER: _ClassVar[int]
    MAX_PER_RUN_FIELD_NUMBER: _ClassVar[int]
    EVICTION_FIELD_NUMBER: _ClassVar[int]
    TTL_SECONDS_AFTER_FINISHED_FIELD_NUMBER: _ClassVar[int]
    PLANNER_FIELD_NUMBER: _ClassVar[int]
    TARGET_FIELD_NUMBER: _ClassVar[int]
    mode: RepackSpec.Mode
    scope: RepackScope
    goals: _containers.RepeatedCompositeFieldContainer[RepackGoal]
    max_per_run: MaxPerRun
    eviction: EvictionOptions
    ttl_seconds_after_finished: int
    planner: PlannerOptions
    target: RepackTarget
    def __init__(self, mode: _Optional[_Union[RepackSpec.Mode, str]] = ..., scope: _Optional[_Union[RepackScope, _Mapping]] = ..., goals: _Optional[_Iterable[_Union[RepackGoal, _Mapping]]] = ..., max_per_run: _Optional[_Union[MaxPerRun, _Mapping]] = ..., eviction: _Optional[_Union[EvictionOptions, _Mapping]] = ..., ttl_seconds_after_finished: _Optional[int] = ..., planner: _Optional[_Union[PlannerOptions, _Mapping]] = ..., target: _Optional[_Union[RepackTarget, _Mapping]] = ...) -> None: ...

class RepackTarget(_message.Message):
    __slots__ = ("pod_group", "job", "model_serving")
    POD_GROUP_FIELD_NUMBER: _ClassVar[int]
    JOB_FIELD_NUMBER: _ClassVar[int]
    MODEL_SERVING_FIELD_NUMBER: _ClassVar[int]
    pod_group: str
    job: str
    model_serving: str
    def __init__(self, pod_group: _Optional[str] = ..., job: _Optional[str] = ..., model_serving: _Optional[str] = ...) -> None: ...

class RepackScope(_message.Message):
    __slots__ = ("pod_groups", "nodes")
    POD_GROUPS_FIELD_NUMBER: _ClassVar[int]
    NODES_FIELD_NUMBER: _ClassVar[int]
    pod_groups: ScopeSelection
    nodes: ScopeSelection
    def __init__(self, pod_groups: _Optional[_Union[ScopeSelection, _Mapping]] = ..., nodes: _Optional[_Union[ScopeSelection, _Mapping]] = ...) -> None: ...

class ScopeSelection(_message.Message):
    __slots__ = ("include", "exclude")
    INCLUDE_FIELD_NUMBER: _ClassVar[int]
    EXCLUDE_FIELD_NUMBER: _ClassVar[int]
    include: ScopeFilter
    exclude: ScopeFilter
    def __init__(self, include: _Optional[_Union[ScopeFilter, _Mapping]] = ..., exclude: _Optional[_Union[ScopeFilter, _Mapping]] = ...) -> None: ...

class ScopeFilter(_message.Message):
    __slots__ = ("names", "selector")
    NAMES_FIELD_NUMBER: _ClassVar[int]
    SELECTOR_FIELD_NUMBER: _ClassVar[int]
    names: _containers.RepeatedScalarFieldContainer[str]
    selector: _snapshot_pb2.LabelSelector
    def __init__(self, names: _Optional[_Iterable[str]] = ..., selector: _Optional[_Union[_snapshot_pb2.LabelSelector, _Mapping]] = ...) -> None: ...

class RepackGoal(_message.Message):
    __slots__ = ("resource", "min_frag_improvement_percent")
    RESOURCE_FIELD_NUMBER: _ClassVar[int]
    MIN_FRAG_IMPROVEMENT_PERCENT_FIELD_NUMBER: _ClassVar[int]
    resource: str
    min_frag_improvement_percent: float
    def __init__(self, resource: _Optional[str] = ..., min_frag_improvement_percent: _Optional[float] = ...) -> None: ...

class MaxPerRun(_message.Message):
    __slots__ = ("pod_groups", "resources")
    class ResourcesEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: float
        def __init__(self, key: _Optional[str] = ..., value: _Optional[float] = ...) -> None: ...
    POD_GROUPS_FIELD_NUMBER: _ClassVar[int]
    RESOURCES_FIELD_NUMBER: _ClassVar[int]
    pod_groups: int
    resources: _containers.ScalarMap[str, float]
    def __init__(self, pod_groups: _Optional[int] = ..., resources: _Optional[_Mapping[str, float]] = ...) -> None: ...

class EvictionOptions(_message.Message):
    __slots__ = ("grace_period_seconds",)
    GRACE_PERIOD_SECONDS_FIELD_NUMBER: _ClassVar[int]
    grace_period_seconds: int
    def __init__(self, grace_period_seconds: _Optional[int] = ...) -> None: ...

class PlannerOptions(_message.Message):
    __slots__ = ("affected_workloads_weight", "below_min_available_weight", "affected_resources_weight", "moved_resources_weight", "moved_pods_weight", "scheduler_names", "strategy")
    class Strategy(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        STRATEGY_UNSPECIFIED: _ClassVar[PlannerOptions.Strategy]
        Greedy: _ClassVar[PlannerOptions.Strategy]
        Exact: _ClassVar[PlannerOptions.Strategy]
    STRATEGY_UNSPECIFIED: PlannerOptions.Strategy
    Greedy: PlannerOptions.Strategy
    Exact: PlannerOptions.Strategy
    AFFECTED_WORKLOADS_WEIGHT_FIELD_NUMBER: _ClassVar[int]
    BELOW_MIN_AVAILABLE_WEIGHT_FIELD_NUMBER: _ClassVar[int]
    AFFECTED_RESOURCES_WEIGHT_FIELD_NUMBER: _ClassVar[int]
    MOVED_RESOURCES_WEIGHT_FIELD_NUMBER: _ClassVar[int]
    MOVED_PODS_WEIGHT_FIELD_NUMBER: _ClassVar[int]
    SCHEDULER_NAMES_FIELD_NUMBER: _ClassVar[int]
    STRATEGY_FIELD_NUMBER: _ClassVar[int]
    affected_workloads_weight: float
    below_min_available_weight: float
    affected_resources_weight: float
    moved_resources_weight: float
    moved_pods_weight: float
    scheduler_names: _containers.RepeatedScalarFieldContainer[str]
    strategy: PlannerOptions.Strategy
    def __init__(self, affected_workloads_weight: _Optional[float] = ..., below_min_available_weight: _Optional[float] = ..., affected_resources_weight: _Optional[float] = ..., moved_resources_weight: _Optional[float] = ..., moved_pods_weight: _Optional[float] = ..., scheduler_names: _Optional[_Iterable[str]] = ..., strategy: _Optional[_Union[PlannerOptions.Strategy, str]] = ...) -> None: ...
