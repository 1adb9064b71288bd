import datetime

from google.protobuf import timestamp_pb2 as _timestamp_pb2
from sidecar.api.v1alpha1 import plan_pb2 as _plan_pb2
from sidecar.api.v1alpha1 import snapshot_pb2 as _snapshot_pb2
from sidecar.api.v1alpha1 import spec_pb2 as _spec_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class FailureCode(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    FAILURE_CODE_UNSPECIFIED: _ClassVar[FailureCode]
    UNSCHEDULABLE: _ClassVar[FailureCode]
    UNSCHEDULABLE_AND_UNRESOLVABLE: _ClassVar[FailureCode]
FAILURE_CODE_UNSPECIFIED: FailureCode
UNSCHEDULABLE: FailureCode
UNSCHEDULABLE_AND_UNRESOLVABLE: FailureCode

class CheckPendingRequest(_message.Message):
    __slots__ = ("snapshot", "session_id", "spec", "pod_groups", "max_plans")
    SNAPSHOT_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    SPEC_FIELD_NUMBER: _ClassVar[int]
    POD_GROUPS_FIELD_NUMBER: _ClassVar[int]
    MAX_PLANS_FIELD_NUMBER: _ClassVar[int]
    snapshot: _snapshot_pb2.Snapshot
    session_id: str
    spec: _spec_pb2.RepackSpec
    pod_groups: _containers.RepeatedScalarFieldContainer[str]
    max_plans: int
    def __init__(self, snapshot: _Optional[_Union[_snapshot_pb2.Snapshot, _Mapping]] = ..., session_id: _Optional[str] = ..., spec: _Optional[_Union[_spec_pb2.RepackSpec, _Mapping]] = ..., pod_groups: _Optional[_Iterable[str]] = ..., max_plans: _Optional[int] = ...) -> None: ...

class CheckPendingResponse(_message.Message):
    __slots__ = ("verdicts", "warnings")
    VERDICTS_FIELD_NUMBER: _ClassVar[int]
    WARNINGS_FIELD_NUMBER: _ClassVar[int]
    verdicts: _containers.RepeatedCompositeFieldContainer[_plan_pb2.PendingVerdict]
    warnings: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, verdicts: _Optional[_Iterable[_Union[_plan_pb2.PendingVerdict, _Mapping]]] = ..., warnings: _Optional[_Iterable[str]] = ...) -> None: ...

class EvaluateRequest(_message.Message):
    __slots__ = ("snapshot", "session_id", "resources")
    SNAPSHOT_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    RESOURCES_FIELD_NUMBER: _ClassVar[int]
    snapshot: _snapshot_pb2.Snapshot
    session_id: str
    resources: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, snapshot: _Optional[_Union[_snapshot_pb2.Snapshot, _Mapping]] = ..., session_id: _Optional[str] = ..., resources: _Optional[_Iterable[str]] = ...) -> None: ...

class EvaluateResponse(_message.Message):
    __slots__ = ("resources", "warnings")
    RESOURCES_FIELD_NUMBER: _ClassVar[int]
    WARNINGS_FIELD_NUMBER: _ClassVar[int]
    resources: _containers.RepeatedCompositeFieldContainer[_plan_pb2.Fragmentation]
    warnings: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, resources: _Optional[_Iterable[_Union[_plan_pb2.Fragmentation, _Mapping]]] = ..., warnings: _Optional[_Iterable[str]] = ...) -> None: ...

class PlanRequest(_message.Message):
    __slots__ = ("snapshot", "session_id", "spec")
    SNAPSHOT_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    SPEC_FIELD_NUMBER: _ClassVar[int]
    snapshot: _snapshot_pb2.Snapshot
    session_id: str
    spec: _spec_pb2.RepackSpec
    def __init__(self, snapshot: _Optional[_Union[_snapshot_pb2.Snapshot, _Mapping]] = ..., session_id: _Optional[str] = ..., spec: _Optional[_Union[_spec_pb2.RepackSpec, _Mapping]] = ...) -> None: ...

class PlanResponse(_message.Message):
    __slots__ = ("status",)
    STATUS_FIELD_NUMBER: _ClassVar[int]
    status: _plan_pb2.RepackStatus
    def __init__(self, status: _Optional[_Union[_plan_pb2.RepackStatus, _Mapping]] = ...) -> None: ...

class FilterRequest(_message.Message):
    __slots__ = ("snapshot", "session_id", "task_uid", "task", "nodes")
    SNAPSHOT_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    TASK_UID_FIELD_NUMBER: _ClassVar[int]
    TASK_FIELD_NUMBER: _ClassVar[int]
    NODES_FIELD_NUMBER: _ClassVar[int]
    snapshot: _snapshot_pb2.Snapshot
    session_id: str
    task_uid: str
    task: _snapshot_pb2.Task
    nodes: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, snapshot: _Optional[_Union[_snapshot_pb2.Snapshot, _Mapping]] = ..., session_id: _Optional[str] = ..., task_uid: _Optional[str] = ..., task: _Optional[_Union[_snapshot_pb2.Task, _Mapping]] = ..., nodes: _Optional[_Iterable[str]] = ...) -> None: ...

class FilterResponse(_message.Message):
    __slots__ = ("feasible_nodes", "future_idle_only_nodes", "failures", "message", "warnings")
    FEASIBLE_NODES_FIELD_NUMBER: _ClassVar[int]
    FUTURE_IDLE_ONLY_NODES_FIELD_NUMBER: _ClassVar[int]
    FAILURES_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    WARNINGS_FIELD_NUMBER: _ClassVar[int]
    feasible_nodes: _containers.RepeatedScalarFieldContainer[str]
    future_idle_only_nodes: _containers.RepeatedScalarFieldContainer[str]
    failures: _containers.RepeatedCompositeFieldContainer[FailureGroup]
    message: str
    warnings: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, feasible_nodes: _Optional[_Iterable[str]] = ..., future_idle_only_nodes: _Optional[_Iterable[str]] = ..., failures: _Optional[_Iterable[_Union[FailureGroup, _Mapping]]] = ..., message: _Optional[str] = ..., warnings: _Optional[_Iterable[str]] = ...) -> None: ...

class FailureGroup(_message.Message):
    __slots__ = ("reasons", "nodes", "code")
    REASONS_FIELD_NUMBER: _ClassVar[int]
    NODES_FIELD_NUMBER: _ClassVar[int]
    CODE_FIELD_NUMBER: _ClassVar[int]
    reasons: _containers.RepeatedScalarFieldContainer[str]
    nodes: _containers.RepeatedScalarFieldContainer[str]
    code: FailureCode
    def __init__(self, reasons: _Optional[_Iterable[str]] = ..., nodes: _Optional[_Iterable[str]] = ..., code: _Optional[_Union[FailureCode, str]] = ...) -> None: ...

class PrioritizeRequest(_message.Message):
    __slots__ = ("snapshot", "session_id", "task_uid", "task", "nodes")
    SNAPSHOT_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    TASK_UID_FIELD_NUMBER: _ClassVar[int]
    TASK_FIELD_NUMBER: _ClassVar[int]
    NODES_FIELD_NUMBER: _ClassVar[int]
    snapshot: _snapshot_pb2.Snapshot
    session_id: str
    task_uid: str
    task: _snapshot_pb2.Task
    nodes: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, snapshot: _Optional[_Union[_snapshot_pb2.Snapshot, _Mapping]] = ..., session_id: _Optional[str] = ..., task_uid: _Optional[str] = ..., task: _Optional[_Union[_snapshot_pb2.Task, _Mapping]] = ..., nodes: _Optional[_Iterable[str]] = ...) -> None: ...

class PrioritizeResponse(_message.Message):
    __slots__ = ("scores", "failures", "warnings")
    SCORES_FIELD_NUMBER: _ClassVar[int]
    FAILURES_FIELD_NUMBER: _ClassVar[int]
    WARNINGS_FIELD_NUMBER: _ClassVar[int]
    scores: _containers.RepeatedCompositeFieldContainer[NodeScore]
    failures: _containers.RepeatedCompositeFieldContainer[FailureGroup]
    warnings: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, scores: _Optional[_Iterable[_Union[NodeScore, _Mapping]]] = ..., failures: _Optional[_Iterable[_Union[FailureGroup, _Mapping]]] = ..., warnings: _Optional[_Iterable[str]] = ...) -> None: ...

class NodeScore(_message.Message):
    __slots__ = ("node", "score", "plugins")
    class PluginsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: float
        def __init__(self, key: _Optional[str] = ..., value: _Optional[float] = ...) -> None: ...
    NODE_FIELD_NUMBER: _ClassVar[int]
    SCORE_FIELD_NUMBER: _ClassVar[int]
    PLUGINS_FIELD_NUMBER: _ClassVar[int]
    node: str
    score: float
    plugins: _containers.ScalarMap[str, float]
    def __init__(self, node: _Optional[str] = ..., score: _Optional[float] = ..., plugins: _Optional[_Mapping[str, float]] = ...) -> None: ...

class OpenSessionRequest(_message.Message):
    __slots__ = ("snapshot", "ttl_seconds", "publish_as")
    SNAPSHOT_FIELD_NUMBER: _ClassVar[int]
    TTL_SECONDS_FIELD_NUMBER: _ClassVar[int]
    PUBLISH_AS_FIELD_NUMBER: _ClassVar[int]
    snapshot: _snapshot_pb2.Snapshot
    ttl_seconds: int
    publish_as: str
    def __init__(self, snapshot: _Optional[_Union[_snapshot_pb2.Snapshot, _Mapping]] = ..., ttl_seconds: _Optional[int] = ..., publish_as: _Optional[str] = ...) -> None: ...

class OpenSessionResponse(_message.Message):
    __slots__ = ("session_id", "expires_at", "node_count", "task_count", "warnings")
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    EXPIRES_AT_FIELD_NUMBER: _ClassVar[int]
    NODE_COUNT_FIELD_NUMBER: _ClassVar[int]
    TASK_COUNT_FIELD_NUMBER: _ClassVar[int]
    WARNINGS_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    expires_at: _timestamp_pb2.Timestamp
    node_count: int
    task_count: int
    warnings: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, session_id: _Optional[str] = ..., expires_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., node_count: _Optional[int] = ..., task_count: _Optional[int] = ..., warnings: _Optional[_Iterable[str]] = ...) -> None: ...

class CloseSessionRequest(_message.Message):
    __slots__ = ("session_id",)
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    def __init__(self, session_id: _Optional[str] = ...) -> None: ...

class CloseSessionResponse(_message.Message):
    __slots__ = ("closed",)
    CLOSED_FIELD_NUMBER: _ClassVar[int]
    closed: bool
    def __init__(self, closed: _Optional[bool] = ...) -> None: ...

class PipelineRequest(_message.Message):
    __slots__ = ("session_id", "task_uid", "node")
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    TASK_UID_FIELD_NUMBER: _ClassVar[int]
    NODE_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    task_uid: str
    node: str
    def __init__(self, session_id: _Optional[str] = ..., task_uid: _Optional[str] = ..., node: _Optional[str] = ...) -> None: ...

class PipelineResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class SupplementRequest(_message.Message):
    __slots__ = ("namespaces", "pdbs")
    NAMESPACES_FIELD_NUMBER: _ClassVar[int]
    PDBS_FIELD_NUMBER: _ClassVar[int]
    namespaces: _containers.RepeatedCompositeFieldContainer[_snapshot_pb2.Namespace]
    pdbs: _containers.RepeatedCompositeFieldContainer[_snapshot_pb2.PodDisruptionBudget]
    def __init__(self, namespaces: _Optional[_Iterable[_Union[_snapshot_pb2.Namespace, _Mapping]]] = ..., pdbs: _Optional[_Iterable[_Union[_snapshot_pb2.PodDisruptionBudget, _Mapping]]] = ...) -> None: ...

class SupplementResponse(_message.Message):
    __slots__ = ("namespace_count", "pdb_count", "latest_updated")
    NAMESPACE_COUNT_FIELD_NUMBER: _ClassVar[int]
    PDB_COUNT_FIELD_NUMBER: _ClassVar[int]
    LATEST_UPDATED_FIELD_NUMBER: _ClassVar[int]
    namespace_count: int
    pdb_count: int
    latest_updated: bool
    def __init__(self, namespace_count: _Optional[int] = ..., pdb_count: _Optional[int] = ..., latest_updated: _Optional[bool] = ...) -> None: ...
