import datetime

from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class Fragmentation(_message.Message):
    __slots__ = ("resource", "providing_nodes", "occupied_nodes", "min_occupied_nodes", "fragmentation_percent", "min_exact", "min_method", "allocated", "allocatable", "message")
    RESOURCE_FIELD_NUMBER: _ClassVar[int]
    PROVIDING_NODES_FIELD_NUMBER: _ClassVar[int]
    OCCUPIED_NODES_FIELD_NUMBER: _ClassVar[int]
    MIN_OCCUPIED_NODES_FIELD_NUMBER: _ClassVar[int]
    FRAGMENTATION_PERCENT_FIELD_NUMBER: _ClassVar[int]
    MIN_EXACT_FIELD_NUMBER: _ClassVar[int]
    MIN_METHOD_FIELD_NUMBER: _ClassVar[int]
    ALLOCATED_FIELD_NUMBER: _ClassVar[int]
    ALLOCATABLE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    resource: str
    providing_nodes: int
    occupied_nodes: int
    min_occupied_nodes: int
    fragmentation_percent: float
    min_exact: bool
    min_method: str
    allocated: float
    allocatable: float
    message: str
    def __init__(self, resource: _Optional[str] = ..., providing_nodes: _Optional[int] = ..., occupied_nodes: _Optional[int] = ..., min_occupied_nodes: _Optional[int] = ..., fragmentation_percent: _Optional[float] = ..., min_exact: _Optional[bool] = ..., min_method: _Optional[str] = ..., allocated: _Optional[float] = ..., allocatable: _Optional[float] = ..., message: _Optional[str] = ...) -> None: ...

class RepackStatus(_message.Message):
    __slots__ = ("phase", "plan", "conditions", "warnings", "observed_generation", "start_time", "completion_time", "relocations", "result", "target")
    PHASE_FIELD_NUMBER: _ClassVar[int]
    PLAN_FIELD_NUMBER: _ClassVar[int]
    CONDITIONS_FIELD_NUMBER: _ClassVar[int]
    WARNINGS_FIELD_NUMBER: _ClassVar[int]
    OBSERVED_GENERATION_FIELD_NUMBER: _ClassVar[int]
    START_TIME_FIELD_NUMBER: _ClassVar[int]
    COMPLETION_TIME_FIELD_NUMBER: _ClassVar[int]
    RELOCATIONS_FIELD_NUMBER: _ClassVar[int]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    TARGET_FIELD_NUMBER: _ClassVar[int]
    phase: str
    plan: Plan
    conditions: _containers.RepeatedCompositeFieldContainer[Condition]
    warnings: _containers.RepeatedScalarFieldContainer[str]
    observed_generation: int
    start_time: _timestamp_pb2.Timestamp
    completion_time: _timestamp_pb2.Timestamp
    relocations: _containers.RepeatedCompositeFieldContainer[Relocation]
    result: ExecutionResult
    target: TargetProgress
    def __init__(self, phase: _Optional[str] = ..., plan: _Optional[_Union[Plan, _Mapping]] = ..., conditions: _Optional[_Iterable[_Union[Condition, _Mapping]]] = ..., warnings: _Optional[_Iterable[str]] = ..., observed_generation: _Optional[int] = ..., start_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., completion_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., relocations: _Optional[_Iterable[_Union[Relocation, _Mapping]]] = ..., result: _Optional[_Union[ExecutionResult, _Mapping]] = ..., target: _Optional[_Union[TargetProgress, _Mapping]] = ...) -> None: ...

class TargetProgress(_message.Message):
    __slots__ = ("pod_group", "pod_group_uid", "phase", "nominations", "message")
    POD_GROUP_FIELD_NUMBER: _ClassVar[int]
    POD_GROUP_UID_FIELD_NUMBER: _ClassVar[int]
    PHASE_FIELD_NUMBER: _ClassVar[int]
    NOMINATIONS_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    pod_group: str
    pod_group_uid: str
    phase: str
    nominations: _containers.RepeatedCompositeFieldContainer[TargetNomination]
    message: str
    def __init__(self, pod_group: _Optional[str] = ..., pod_group_uid: _Optional[str] = ..., phase: _Optional[str] = ..., nominations: _Optional[_Iterable[_Union[TargetNomination, _Mapping]]] = ..., message: _Optional[str] = ...) -> None: ...

class TargetNomination(_message.Message):
    __slots__ = ("pod_name", "pod_uid", "node_name", "actual_node_name", "phase")
    POD_NAME_FIELD_NUMBER: _ClassVar[int]
    POD_UID_FIELD_NUMBER: _ClassVar[int]
    NODE_NAME_FIELD_NUMBER: _ClassVar[int]
    ACTUAL_NODE_NAME_FIELD_NUMBER: _ClassVar[int]
    PHASE_FIELD_NUMBER: _ClassVar[int]
    pod_name: str
    pod_uid: str
    node_name: str
    actual_node_name: str
    phase: str
    def __init__(self, pod_name: _Optional[str] = ..., pod_uid: _Optional[str] = ..., node_name: _Optional[str] = ..., actual_node_name: _Optional[str] = ..., phase: _Optional[str] = ...) -> None: ...

class Relocation(_message.Message):
    __slots__ = ("namespace", "victim_pod_name", "victim_pod_uid", "pod_group_name", "owner", "from_node_name", "planned_node_name", "cards", "replacement_pod_group_name", "eviction", "placement")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    VICTIM_POD_NAME_FIELD_NUMBER: _ClassVar[int]
    VICTIM_POD_UID_FIELD_NUMBER: _ClassVar[int]
    POD_GROUP_NAME_FIELD_NUMBER: _ClassVar[int]
    OWNER_FIELD_NUMBER: _ClassVar[int]
    FROM_NODE_NAME_FIELD_NUMBER: _ClassVar[int]
    PLANNED_NODE_NAME_FIELD_NUMBER: _ClassVar[int]
    CARDS_FIELD_NUMBER: _ClassVar[int]
    REPLACEMENT_POD_GROUP_NAME_FIELD_NUMBER: _ClassVar[int]
    EVICTION_FIELD_NUMBER: _ClassVar[int]
    PLACEMENT_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    victim_pod_name: str
    victim_pod_uid: str
    pod_group_name: str
    owner: WorkloadOwner
    from_node_name: str
    planned_node_name: str
    cards: float
    replacement_pod_group_name: str
    eviction: EvictionRecord
    placement: PlacementRecord
    def __init__(self, namespace: _Optional[str] = ..., victim_pod_name: _Optional[str] = ..., victim_pod_uid: _Optional[str] = ..., pod_group_name: _Optional[str] = ..., owner: _Optional[_Union[WorkloadOwner, _Mapping]] = ..., from_node_name: _Optional[str] = ..., planned_node_name: _Optional[str] = ..., cards: _Optional[float] = ..., replacement_pod_group_name: _Optional[str] = ..., eviction: _Optional[_Union[EvictionRecord, _Mapping]] = ..., placement: _Optional[_Union[PlacementRecord, _Mapping]] = ...) -> None: ...

class EvictionRecord(_message.Message):
    __slots__ = ("phase", "attempts", "last_attempt_time", "message")
    PHASE_FIELD_NUMBER: _ClassVar[int]
    ATTEMPTS_FIELD_NUMBER: _ClassVar[int]
    LAST_ATTEMPT_TIME_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    phase: str
    attempts: int
    last_attempt_time: _timestamp_pb2.Timestamp
    message: str
    def __init__(self, phase: _Optional[str] = ..., attempts: _Optional[int] = ..., last_attempt_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., message: _Optional[str] = ...) -> None: ...

class PlacementRecord(_message.Message):
    __slots__ = ("phase", "selected_node_name", "actual_node_name", "replacement_pod_name", "replacement_pod_uid", "message")
    PHASE_FIELD_NUMBER: _ClassVar[int]
    SELECTED_NODE_NAME_FIELD_NUMBER: _ClassVar[int]
    ACTUAL_NODE_NAME_FIELD_NUMBER: _ClassVar[int]
    REPLACEMENT_POD_NAME_FIELD_NUMBER: _ClassVar[int]
    REPLACEMENT_POD_UID_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    phase: str
    selected_node_name: str
    actual_node_name: str
    replacement_pod_name: str
    replacement_pod_uid: str
    message: str
    def __init__(self, phase: _Optional[str] = ..., selected_node_name: _Optional[str] = ..., actual_node_name: _Optional[str] = ..., replacement_pod_name: _Optional[str] = ..., replacement_pod_uid: _Optional[str] = ..., message: _Optional[str] = ...) -> None: ...

class ExecutionResult(_message.Message):
    __slots__ = ("frag_after_percent", "freed_node_count", "freed_nodes", "moved_card_count", "evicted_pod_count", "metrics_verified", "message")
    FRAG_AFTER_PERCENT_FIELD_NUMBER: _ClassVar[int]
    FREED_NODE_COUNT_FIELD_NUMBER: _ClassVar[int]
    FREED_NODES_FIELD_NUMBER: _ClassVar[int]
    MOVED_CARD_COUNT_FIELD_NUMBER: _ClassVar[int]
    EVICTED_POD_COUNT_FIELD_NUMBER: _ClassVar[int]
    METRICS_VERIFIED_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    frag_after_percent: float
    freed_node_count: int
    freed_nodes: _containers.RepeatedScalarFieldContainer[str]
    moved_card_count: float
    evicted_pod_count: int
    metrics_verified: bool
    message: str
    def __init__(self, frag_after_percent: _Optional[float] = ..., freed_node_count: _Optional[int] = ..., freed_nodes: _Optional[_Iterable[str]] = ..., moved_card_count: _Optional[float] = ..., evicted_pod_count: _Optional[int] = ..., metrics_verified: _Optional[bool] = ..., message: _Optional[str] = ...) -> None: ...

class Plan(_message.Message):
    __slots__ = ("summary", "moves", "freed_nodes", "candidates", "target")
    SUMMARY_FIELD_NUMBER: _ClassVar[int]
    MOVES_FIELD_NUMBER: _ClassVar[int]
    FREED_NODES_FIELD_NUMBER: _ClassVar[int]
    CANDIDATES_FIELD_NUMBER: _ClassVar[int]
    TARGET_FIELD_NUMBER: _ClassVar[int]
    summary: PlanSummary
    moves: _containers.RepeatedCompositeFieldContainer[WorkloadMove]
    freed_nodes: _containers.RepeatedScalarFieldContainer[str]
    candidates: _containers.RepeatedCompositeFieldContainer[CandidateExplanation]
    target: TargetPlan
    def __init__(self, summary: _Optional[_Union[PlanSummary, _Mapping]] = ..., moves: _Optional[_Iterable[_Union[WorkloadMove, _Mapping]]] = ..., freed_nodes: _Optional[_Iterable[str]] = ..., candidates: _Optional[_Iterable[_Union[CandidateExplanation, _Mapping]]] = ..., target: _Optional[_Union[TargetPlan, _Mapping]] = ...) -> None: ...

class TargetPlan(_message.Message):
    __slots__ = ("pod_group", "verdict", "min_available", "ready", "waiting", "placements", "stuck_pod_name", "message")
    POD_GROUP_FIELD_NUMBER: _ClassVar[int]
    VERDICT_FIELD_NUMBER: _ClassVar[int]
    MIN_AVAILABLE_FIELD_NUMBER: _ClassVar[int]
    READY_FIELD_NUMBER: _ClassVar[int]
    WAITING_FIELD_NUMBER: _ClassVar[int]
    PLACEMENTS_FIELD_NUMBER: _ClassVar[int]
    STUCK_POD_NAME_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    pod_group: str
    verdict: str
    min_available: int
    ready: int
    waiting: int
    placements: _containers.RepeatedCompositeFieldContainer[TaskPlacement]
    stuck_pod_name: str
    message: str
    def __init__(self, pod_group: _Optional[str] = ..., verdict: _Optional[str] = ..., min_available: _Optional[int] = ..., ready: _Optional[int] = ..., waiting: _Optional[int] = ..., placements: _Optional[_Iterable[_Union[TaskPlacement, _Mapping]]] = ..., stuck_pod_name: _Optional[str] = ..., message: _Optional[str] = ...) -> None: ...

class TaskPlacement(_message.Message):
    __slots__ = ("pod_name", "node", "pipelined")
    POD_NAME_FIELD_NUMBER: _ClassVar[int]
    NODE_FIELD_NUMBER: _ClassVar[int]
    PIPELINED_FIELD_NUMBER: _ClassVar[int]
    pod_name: str
    node: str
    pipelined: bool
    def __init__(self, pod_name: _Optional[str] = ..., node: _Optional[str] = ..., pipelined: _Optional[bool] = ...) -> None: ...

class PlanSummary(_message.Message):
    __slots__ = ("frag_before_percent", "frag_after_percent", "freed_node_count", "moved_card_count", "resolved_scope", "resource", "before", "after", "cost")
    FRAG_BEFORE_PERCENT_FIELD_NUMBER: _ClassVar[int]
    FRAG_AFTER_PERCENT_FIELD_NUMBER: _ClassVar[int]
    FREED_NODE_COUNT_FIELD_NUMBER: _ClassVar[int]
    MOVED_CARD_COUNT_FIELD_NUMBER: _ClassVar[int]
    RESOLVED_SCOPE_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_FIELD_NUMBER: _ClassVar[int]
    BEFORE_FIELD_NUMBER: _ClassVar[int]
    AFTER_FIELD_NUMBER: _ClassVar[int]
    COST_FIELD_NUMBER: _ClassVar[int]
    frag_before_percent: float
    frag_after_percent: float
    freed_node_count: int
    moved_card_count: float
    resolved_scope: ResolvedScope
    resource: str
    before: Fragmentation
    after: Fragmentation
    cost: PlanCost
    def __init__(self, frag_before_percent: _Optional[float] = ..., frag_after_percent: _Optional[float] = ..., freed_node_count: _Optional[int] = ..., moved_card_count: _Optional[float] = ..., resolved_scope: _Optional[_Union[ResolvedScope, _Mapping]] = ..., resource: _Optional[str] = ..., before: _Optional[_Union[Fragmentation, _Mapping]] = ..., after: _Optional[_Union[Fragmentation, _Mapping]] = ..., cost: _Optional[_Union[PlanCost, _Mapping]] = ...) -> None: ...

class PlanCost(_message.Message):
    __slots__ = ("affected_workloads", "pod_groups_below_min_available", "affected_cards", "moved_cards", "moved_pods")
    AFFECTED_WORKLOADS_FIELD_NUMBER: _ClassVar[int]
    POD_GROUPS_BELOW_MIN_AVAILABLE_FIELD_NUMBER: _ClassVar[int]
    AFFECTED_CARDS_FIELD_NUMBER: _ClassVar[int]
    MOVED_CARDS_FIELD_NUMBER: _ClassVar[int]
    MOVED_PODS_FIELD_NUMBER: _ClassVar[int]
    affected_workloads: int
    pod_groups_below_min_available: int
    affected_cards: float
    moved_cards: float
    moved_pods: int
    def __init__(self, affected_workloads: _Optional[int] = ..., pod_groups_below_min_available: _Optional[int] = ..., affected_cards: _Optional[float] = ..., moved_cards: _Optional[float] = ..., moved_pods: _Optional[int] = ...) -> None: ...

class ResolvedScope(_message.Message):
    __slots__ = ("pod_group_count", "node_count")
    POD_GROUP_COUNT_FIELD_NUMBER: _ClassVar[int]
    NODE_COUNT_FIELD_NUMBER: _ClassVar[int]
    pod_group_count: int
    node_count: int
    def __init__(self, pod_group_count: _Optional[int] = ..., node_count: _Optional[int] = ...) -> None: ...

class WorkloadMove(_message.Message):
    __slots__ = ("namespace", "pod_group_name", "owner", "cards", "pods")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    POD_GROUP_NAME_FIELD_NUMBER: _ClassVar[int]
    OWNER_FIELD_NUMBER: _ClassVar[int]
    CARDS_FIELD_NUMBER: _ClassVar[int]
    PODS_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    pod_group_name: str
    owner: WorkloadOwner
    cards: float
    pods: _containers.RepeatedCompositeFieldContainer[PodMove]
    def __init__(self, namespace: _Optional[str] = ..., pod_group_name: _Optional[str] = ..., owner: _Optional[_Union[WorkloadOwner, _Mapping]] = ..., cards: _Optional[float] = ..., pods: _Optional[_Iterable[_Union[PodMove, _Mapping]]] = ...) -> None: ...

class WorkloadOwner(_message.Message):
    __slots__ = ("api_version", "kind", "name", "uid")
    API_VERSION_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    UID_FIELD_NUMBER: _ClassVar[int]
    api_version: str
    kind: str
    name: str
    uid: str
    def __init__(self, api_version: _Optional[str] = ..., kind: _Optional[str] = ..., name: _Optional[str] = ..., uid: _Optional[str] = ...) -> None: ...

class PodMove(_message.Message):
    __slots__ = ("name", "from_node", "to_node", "cards")
    NAME_FIELD_NUMBER: _ClassVar[int]
    FROM_NODE_FIELD_NUMBER: _ClassVar[int]
    TO_NODE_FIELD_NUMBER: _ClassVar[int]
    CARDS_FIELD_NUMBER: _ClassVar[int]
    name: str
    from_node: str
    to_node: str
    cards: float
    def __init__(self, name: _Optional[str] = ..., from_node: _Optional[str] = ..., to_node: _Optional[str] = ..., cards: _Optional[float] = ...) -> None: ...

class Condition(_message.Message):
    __slots__ = ("type", "status", "reason", "message", "last_transition_time", "observed_generation")
    TYPE_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    LAST_TRANSITION_TIME_FIELD_NUMBER: _ClassVar[int]
    OBSERVED_GENERATION_FIELD_NUMBER: _ClassVar[int]
    type: str
    status: str
    reason: str
    message: str
    last_transition_time: _timestamp_pb2.Timestamp
    observed_generation: int
    def __init__(self, type: _Optional[str] = ..., status: _Optional[str] = ..., reason: _Optional[str] = ..., message: _Optional[str] = ..., last_transition_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., observed_generation: _Optional[int] = ...) -> None: ...

class CandidateExplanation(_message.Message):
    __slots__ = ("node", "selected", "reason", "message")
    NODE_FIELD_NUMBER: _ClassVar[int]
    SELECTED_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    node: str
    selected: bool
    reason: str
    message: str
    def __init__(self, node: _Optional[str] = ..., selected: _Optional[bool] = ..., reason: _Optional[str] = ..., message: _Optional[str] = ...) -> None: ...

class PendingVerdict(_message.Message):
    __slots__ = ("pod_group", "verdict", "message", "since")
    POD_GROUP_FIELD_NUMBER: _ClassVar[int]
    VERDICT_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    SINCE_FIELD_NUMBER: _ClassVar[int]
    pod_group: str
    verdict: str
    message: str
    since: _timestamp_pb2.Timestamp
    def __init__(self, pod_group: _Optional[str] = ..., verdict: _Optional[str] = ..., message: _Optional[str] = ..., since: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...
