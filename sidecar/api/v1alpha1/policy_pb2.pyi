import datetime

from google.protobuf import timestamp_pb2 as _timestamp_pb2
from sidecar.api.v1alpha1 import plan_pb2 as _plan_pb2
from sidecar.api.v1alpha1 import snapshot_pb2 as _snapshot_pb2
from sidecar.api.v1alpha1 import spec_pb2 as _spec_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class RepackPolicySpec(_message.Message):
    __slots__ = ("run_template", "schedule", "time_zone", "starting_deadline_seconds", "when_pending", "concurrency_policy", "suspend", "successful_runs_history_limit", "failed_runs_history_limit")
    RUN_TEMPLATE_FIELD_NUMBER: _ClassVar[int]
    SCHEDULE_FIELD_NUMBER: _ClassVar[int]
    TIME_ZONE_FIELD_NUMBER: _ClassVar[int]
    STARTING_DEADLINE_SECONDS_FIELD_NUMBER: _ClassVar[int]
    WHEN_PENDING_FIELD_NUMBER: _ClassVar[int]
    CONCURRENCY_POLICY_FIELD_NUMBER: _ClassVar[int]
    SUSPEND_FIELD_NUMBER: _ClassVar[int]
    SUCCESSFUL_RUNS_HISTORY_LIMIT_FIELD_NUMBER: _ClassVar[int]
    FAILED_RUNS_HISTORY_LIMIT_FIELD_NUMBER: _ClassVar[int]
    run_template: RunTemplate
    schedule: str
    time_zone: str
    starting_deadline_seconds: int
    when_pending: PendingTrigger
    concurrency_policy: str
    suspend: bool
    successful_runs_history_limit: int
    failed_runs_history_limit: int
    def __init__(self, run_template: _Optional[_Union[RunTemplate, _Mapping]] = ..., schedule: _Optional[str] = ..., time_zone: _Optional[str] = ..., starting_deadline_seconds: _Optional[int] = ..., when_pending: _Optional[_Union[PendingTrigger, _Mapping]] = ..., concurrency_policy: _Optional[str] = ..., suspend: _Optional[bool] = ..., successful_runs_history_limit: _Optional[int] = ..., failed_runs_history_limit: _Optional[int] = ...) -> None: ...

class RunTemplate(_message.Message):
    __slots__ = ("metadata", "spec")
    METADATA_FIELD_NUMBER: _ClassVar[int]
    SPEC_FIELD_NUMBER: _ClassVar[int]
    metadata: RunTemplateMetadata
    spec: _spec_pb2.RepackSpec
    def __init__(self, metadata: _Optional[_Union[RunTemplateMetadata, _Mapping]] = ..., spec: _Optional[_Union[_spec_pb2.RepackSpec, _Mapping]] = ...) -> None: ...

class RunTemplateMetadata(_message.Message):
    __slots__ = ("labels", "annotations")
    class LabelsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    class AnnotationsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    LABELS_FIELD_NUMBER: _ClassVar[int]
    ANNOTATIONS_FIELD_NUMBER: _ClassVar[int]
    labels: _containers.ScalarMap[str, str]
    annotations: _containers.ScalarMap[str, str]
    def __init__(self, labels: _Optional[_Mapping[str, str]] = ..., annotations: _Optional[_Mapping[str, str]] = ...) -> None: ...

class PendingTrigger(_message.Message):
    __slots__ = ("min_pending_seconds", "queues", "namespaces", "selector", "retry_seconds")
    MIN_PENDING_SECONDS_FIELD_NUMBER: _ClassVar[int]
    QUEUES_FIELD_NUMBER: _ClassVar[int]
    NAMESPACES_FIELD_NUMBER: _ClassVar[int]
    SELECTOR_FIELD_NUMBER: _ClassVar[int]
    RETRY_SECONDS_FIELD_NUMBER: _ClassVar[int]
    min_pending_seconds: int
    queues: _containers.RepeatedScalarFieldContainer[str]
    namespaces: _containers.RepeatedScalarFieldContainer[str]
    selector: _snapshot_pb2.LabelSelector
    retry_seconds: int
    def __init__(self, min_pending_seconds: _Optional[int] = ..., queues: _Optional[_Iterable[str]] = ..., namespaces: _Optional[_Iterable[str]] = ..., selector: _Optional[_Union[_snapshot_pb2.LabelSelector, _Mapping]] = ..., retry_seconds: _Optional[int] = ...) -> None: ...

class RepackPolicyStatus(_message.Message):
    __slots__ = ("last_schedule_time", "last_successful_time", "last_trigger", "active", "last_outcome", "waiting", "triggers", "conditions", "observed_generation", "last_check_time")
    LAST_SCHEDULE_TIME_FIELD_NUMBER: _ClassVar[int]
    LAST_SUCCESSFUL_TIME_FIELD_NUMBER: _ClassVar[int]
    LAST_TRIGGER_FIELD_NUMBER: _ClassVar[int]
    ACTIVE_FIELD_NUMBER: _ClassVar[int]
    LAST_OUTCOME_FIELD_NUMBER: _ClassVar[int]
    WAITING_FIELD_NUMBER: _ClassVar[int]
    TRIGGERS_FIELD_NUMBER: _ClassVar[int]
    CONDITIONS_FIELD_NUMBER: _ClassVar[int]
    OBSERVED_GENERATION_FIELD_NUMBER: _ClassVar[int]
    LAST_CHECK_TIME_FIELD_NUMBER: _ClassVar[int]
    last_schedule_time: _timestamp_pb2.Timestamp
    last_successful_time: _timestamp_pb2.Timestamp
    last_trigger: PolicyTrigger
    active: _containers.RepeatedScalarFieldContainer[str]
    last_outcome: PolicyOutcome
    waiting: _containers.RepeatedCompositeFieldContainer[_plan_pb2.PendingVerdict]
    triggers: _containers.RepeatedCompositeFieldContainer[TriggerRecord]
    conditions: _containers.RepeatedCompositeFieldContainer[_plan_pb2.Condition]
    observed_generation: int
    last_check_time: _timestamp_pb2.Timestamp
    def __init__(self, last_schedule_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., last_successful_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., last_trigger: _Optional[_Union[PolicyTrigger, _Mapping]] = ..., active: _Optional[_Iterable[str]] = ..., last_outcome: _Optional[_Union[PolicyOutcome, _Mapping]] = ..., waiting: _Optional[_Iterable[_Union[_plan_pb2.PendingVerdict, _Mapping]]] = ..., triggers: _Optional[_Iterable[_Union[TriggerRecord, _Mapping]]] = ..., conditions: _Optional[_Iterable[_Union[_plan_pb2.Condition, _Mapping]]] = ..., observed_generation: _Optional[int] = ..., last_check_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class PolicyTrigger(_message.Message):
    __slots__ = ("kind", "run", "time", "scheduled_time", "pod_group", "message")
    KIND_FIELD_NUMBER: _ClassVar[int]
    RUN_FIELD_NUMBER: _ClassVar[int]
    TIME_FIELD_NUMBER: _ClassVar[int]
    SCHEDULED_TIME_FIELD_NUMBER: _ClassVar[int]
    POD_GROUP_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    kind: str
    run: str
    time: _timestamp_pb2.Timestamp
    scheduled_time: _timestamp_pb2.Timestamp
    pod_group: str
    message: str
    def __init__(self, kind: _Optional[str] = ..., run: _Optional[str] = ..., time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., scheduled_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., pod_group: _Optional[str] = ..., message: _Optional[str] = ...) -> None: ...

class PolicyOutcome(_message.Message):
    __slots__ = ("run", "phase", "reason", "message", "completion_time")
    RUN_FIELD_NUMBER: _ClassVar[int]
    PHASE_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    COMPLETION_TIME_FIELD_NUMBER: _ClassVar[int]
    run: str
    phase: str
    reason: str
    message: str
    completion_time: _timestamp_pb2.Timestamp
    def __init__(self, run: _Optional[str] = ..., phase: _Optional[str] = ..., reason: _Optional[str] = ..., message: _Optional[str] = ..., completion_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class TriggerRecord(_message.Message):
    __slots__ = ("pod_group", "pod_group_uid", "attempt", "run", "time")
    POD_GROUP_FIELD_NUMBER: _ClassVar[int]
    POD_GROUP_UID_FIELD_NUMBER: _ClassVar[int]
    ATTEMPT_FIELD_NUMBER: _ClassVar[int]
    RUN_FIELD_NUMBER: _ClassVar[int]
    TIME_FIELD_NUMBER: _ClassVar[int]
    pod_group: str
    pod_group_uid: str
    attempt: int
    run: str
    time: _timestamp_pb2.Timestamp
    def __init__(self, pod_group: _Optional[str] = ..., pod_group_uid: _Optional[str] = ..., attempt: _Optional[int] = ..., run: _Optional[str] = ..., time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...
