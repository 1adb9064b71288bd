from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class Snapshot(_message.Message):
    __slots__ = ("name", "nodes", "tasks", "task_columns", "profiles", "pod_groups", "pdbs", "namespaces", "scheduler_config", "warnings")
    NAME_FIELD_NUMBER: _ClassVar[int]
    NODES_FIELD_NUMBER: _ClassVar[int]
    TASKS_FIELD_NUMBER: _ClassVar[int]
    TASK_COLUMNS_FIELD_NUMBER: _ClassVar[int]
    PROFILES_FIELD_NUMBER: _ClassVar[int]
    POD_GROUPS_FIELD_NUMBER: _ClassVar[int]
    PDBS_FIELD_NUMBER: _ClassVar[int]
    NAMESPACES_FIELD_NUMBER: _ClassVar[int]
    SCHEDULER_CONFIG_FIELD_NUMBER: _ClassVar[int]
    WARNINGS_FIELD_NUMBER: _ClassVar[int]
    name: str
    nodes: _containers.RepeatedCompositeFieldContainer[Node]
    tasks: _containers.RepeatedCompositeFieldContainer[Task]
    task_columns: TaskColumns
    profiles: _containers.RepeatedCompositeFieldContainer[TaskProfile]
    pod_groups: _containers.RepeatedCompositeFieldContainer[PodGroup]
    pdbs: _containers.RepeatedCompositeFieldContainer[PodDisruptionBudget]
    namespaces: _containers.RepeatedCompositeFieldContainer[Namespace]
    scheduler_config: SchedulerConfig
    warnings: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, name: _Optional[str] = ..., nodes: _Optional[_Iterable[_Union[Node, _Mapping]]] = ..., tasks: _Optional[_Iterable[_Union[Task, _Mapping]]] = ..., task_columns: _Optional[_Union[TaskColumns, _Mapping]] = ..., profiles: _Optional[_Iterable[_Union[TaskProfile, _Mapping]]] = ..., pod_groups: _Optional[_Iterable[_Union[PodGroup, _Mapping]]] = ..., pdbs: _Optional[_Iterable[_Union[PodDisruptionBudget, _Mapping]]] = ..., namespaces: _Optional[_Iterable[_Union[Namespace, _Mapping]]] = ..., scheduler_config: _Optional[_Union[SchedulerConfig, _Mapping]] = ..., warnings: _Optional[_Iterable[str]] = ...) -> None: ...

class Node(_message.Message):
    __slots__ = ("name", "labels", "taints", "unschedulable", "allocatable")
    class LabelsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    class AllocatableEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: float
        def __init__(self, key: _Optional[str] = ..., value: _Optional[float] = ...) -> None: ...
    NAME_FIELD_NUMBER: _ClassVar[int]
    LABELS_FIELD_NUMBER: _ClassVar[int]
    TAINTS_FIELD_NUMBER: _ClassVar[int]
    UNSCHEDULABLE_FIELD_NUMBER: _ClassVar[int]
    ALLOCATABLE_FIELD_NUMBER: _ClassVar[int]
    name: str
    labels: _containers.ScalarMap[str, str]
    taints: _containers.RepeatedCompositeFieldContainer[Taint]
    unschedulable: bool
    allocatable: _containers.ScalarMap[str, float]
    def __init__(self, name: _Optional[str] = ..., labels: _Optional[_Mapping[str, str]] = ..., taints: _Optional[_Iterable[_Union[Taint, _Mapping]]] = ..., unschedulable: _Optional[bool] = ..., allocatable: _Optional[_Mapping[str, float]] = ...) -> None: ...

class Taint(_message.Message):
    __slots__ = ("key", "value", "effect")
    KEY_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    EFFECT_FIELD_NUMBER: _ClassVar[int]
    key: str
    value: str
    effect: str
    def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ..., effect: _Optional[str] = ...) -> None: ...

class Namespace(_message.Message):
    __slots__ = ("name", "labels")
    class LabelsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    NAME_FIELD_NUMBER: _ClassVar[int]
    LABELS_FIELD_NUMBER: _ClassVar[int]
    name: str
    labels: _containers.ScalarMap[str, str]
    def __init__(self, name: _Optional[str] = ..., labels: _Optional[_Mapping[str, str]] = ...) -> None: ...

class Task(_message.Message):
    __slots__ = ("uid", "namespace", "name", "node", "status", "pod_group", "requests", "priority", "profile", "role", "nonzero_requests")
    class Status(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        STATUS_UNSPECIFIED: _ClassVar[Task.Status]
        Pending: _ClassVar[Task.Status]
        Allocated: _ClassVar[Task.Status]
        Pipelined: _ClassVar[Task.Status]
        Binding: _ClassVar[Task.Status]
        Bound: _ClassVar[Task.Status]
        Running: _ClassVar[Task.Status]
        Releasing: _ClassVar[Task.Status]
        Succeeded: _ClassVar[Task.Status]
        Failed: _ClassVar[Task.Status]
        Unknown: _ClassVar[Task.Status]
    STATUS_UNSPECIFIED: Task.Status
    Pending: Task.Status
    Allocated: Task.Status
    Pipelined: Task.Status
    Binding: Task.Status
    Bound: Task.Status
    Running: Task.Status
    Releasing: Task.Status
    Succeeded: Task.Status
    Failed: Task.Status
    Unknown: Task.Status
    class RequestsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: float
        def __init__(self, key: _Optional[str] = ..., value: _Optional[float] = ...) -> None: ...
    UID_FIELD_NUMBER: _ClassVar[int]
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    NODE_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    POD_GROUP_FIELD_NUMBER: _ClassVar[int]
    REQUESTS_FIELD_NUMBER: _ClassVar[int]
    PRIORITY_FIELD_NUMBER: _ClassVar[int]
    PROFILE_FIELD_NUMBER: _ClassVar[int]
    ROLE_FIELD_NUMBER: _ClassVar[int]
    NONZERO_REQUESTS_FIELD_NUMBER: _ClassVar[int]
    uid: str
    namespace: str
    name: str
    node: str
    status: Task.Status
    pod_group: str
    requests: _containers.ScalarMap[str, float]
    priority: int
    profile: TaskProfile
    role: str
    nonzero_requests: NonZeroRequests
    def __init__(self, uid: _Optional[str] = ..., namespace: _Optional[str] = ..., name: _Optional[str] = ..., node: _Optional[str] = ..., status: _Optional[_Union[Task.Status, str]] = ..., pod_group: _Optional[str] = ..., requests: _Optional[_Mapping[str, float]] = ..., priority: _Optional[int] = ..., profile: _Optional[_Union[TaskProfile, _Mapping]] = ..., role: _Optional[str] = ..., nonzero_requests: _Optional[_Union[NonZeroRequests, _Mapping]] = ...) -> None: ...

class NonZeroRequests(_message.Message):
    __slots__ = ("cpu", "memory")
    CPU_FIELD_NUMBER: _ClassVar[int]
    MEMORY_FIELD_NUMBER: _ClassVar[int]
    cpu: float
    memory: float
    def __init__(self, cpu: _Optional[float] = ..., memory: _Optional[float] = ...) -> None: ...

class TaskProfile(_message.Message):
    __slots__ = ("labels", "scheduler_name", "owner_kind", "node_selector", "required_node_affinity", "preferred_node_affinity", "tolerations", "host_ports", "pod_affinity", "preferred_pod_affinity", "pod_anti_affinity", "preferred_pod_anti_affinity", "topology_spread_constraints")
    class LabelsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    class NodeSelectorEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    LABELS_FIELD_NUMBER: _ClassVar[int]
    SCHEDULER_NAME_FIELD_NUMBER: _ClassVar[int]
    OWNER_KIND_FIELD_NUMBER: _ClassVar[int]
    NODE_SELECTOR_FIELD_NUMBER: _ClassVar[int]
    REQUIRED_NODE_AFFINITY_FIELD_NUMBER: _ClassVar[int]
    PREFERRED_NODE_AFFINITY_FIELD_NUMBER: _ClassVar[int]
    TOLERATIONS_FIELD_NUMBER: _ClassVar[int]
    HOST_PORTS_FIELD_NUMBER: _ClassVar[int]
    POD_AFFINITY_FIELD_NUMBER: _ClassVar[int]
    PREFERRED_POD_AFFINITY_FIELD_NUMBER: _ClassVar[int]
    POD_ANTI_AFFINITY_FIELD_NUMBER: _ClassVar[int]
    PREFERRED_POD_ANTI_AFFINITY_FIELD_NUMBER: _ClassVar[int]
    TOPOLOGY_SPREAD_CONSTRAINTS_FIELD_NUMBER: _ClassVar[int]
    labels: _containers.ScalarMap[str, str]
    scheduler_name: str
    owner_kind: str
    node_selector: _containers.ScalarMap[str, str]
    required_node_affinity: _containers.RepeatedCompositeFieldContainer[NodeSelectorTerm]
    preferred_node_affinity: _containers.RepeatedCompositeFieldContainer[PreferredSchedulingTerm]
    tolerations: _containers.RepeatedCompositeFieldContainer[Toleration]
    host_ports: _containers.RepeatedCompositeFieldContainer[HostPort]
    pod_affinity: _containers.RepeatedCompositeFieldContainer[PodAffinityTerm]
    preferred_pod_affinity: _containers.RepeatedCompositeFieldContainer[WeightedPodAffinityTerm]
    pod_anti_affinity: _containers.RepeatedCompositeFieldContainer[PodAffinityTerm]
    preferred_pod_anti_affinity: _containers.RepeatedCompositeFieldContainer[WeightedPodAffinityTerm]
    topology_spread_constraints: _containers.RepeatedCompositeFieldContainer[TopologySpreadConstraint]
    def __init__(self, labels: _Optional[_Mapping[str, str]] = ..., scheduler_name: _Optional[str] = ..., owner_kind: _Optional[str] = ..., node_selector: _Optional[_Mapping[str, str]] = ..., required_node_affinity: _Optional[_Iterable[_Union[NodeSelectorTerm, _Mapping]]] = ..., preferred_node_affinity: _Optional[_Iterable[_Union[PreferredSchedulingTerm, _Mapping]]] = ..., tolerations: _Optional[_Iterable[_Union[Toleration, _Mapping]]] = ..., host_ports: _Optional[_Iterable[_Union[HostPort, _Mapping]]] = ..., pod_affinity: _Optional[_Iterable[_Union[PodAffinityTerm, _Mapping]]] = ..., preferred_pod_affinity: _Optional[_Iterable[_Union[WeightedPodAffinityTerm, _Mapping]]] = ..., pod_anti_affinity: _Optional[_Iterable[_Union[PodAffinityTerm, _Mapping]]] = ..., preferred_pod_anti_affinity: _Optional[_Iterable[_Union[WeightedPodAffinityTerm, _Mapping]]] = ..., topology_spread_constraints: _Optional[_Iterable[_Union[TopologySpreadConstraint, _Mapping]]] = ...) -> None: ...

class Requirement(_message.Message):
    __slots__ = ("key", "operator", "values")
    KEY_FIELD_NUMBER: _ClassVar[int]
    OPERATOR_FIELD_NUMBER: _ClassVar[int]
    VALUES_FIELD_NUMBER: _ClassVar[int]
    key: str
    operator: str
    values: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, key: _Optional[str] = ..., operator: _Optional[str] = ..., values: _Optional[_Iterable[str]] = ...) -> None: ...

class LabelSelector(_message.Message):
    __slots__ = ("match_labels", "match_expressions")
    class MatchLabelsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    MATCH_LABELS_FIELD_NUMBER: _ClassVar[int]
    MATCH_EXPRESSIONS_FIELD_NUMBER: _ClassVar[int]
    match_labels: _containers.ScalarMap[str, str]
    match_expressions: _containers.RepeatedCompositeFieldContainer[Requirement]
    def __init__(self, match_labels: _Optional[_Mapping[str, str]] = ..., match_expressions: _Optional[_Iterable[_Union[Requirement, _Mapping]]] = ...) -> None: ...

class NodeSelectorTerm(_message.Message):
    __slots__ = ("match_expressions", "match_fields")
    MATCH_EXPRESSIONS_FIELD_NUMBER: _ClassVar[int]
    MATCH_FIELDS_FIELD_NUMBER: _ClassVar[int]
    match_expressions: _containers.RepeatedCompositeFieldContainer[Requirement]
    match_fields: _containers.RepeatedCompositeFieldContainer[Requirement]
    def __init__(self, match_expressions: _Optional[_Iterable[_Union[Requirement, _Mapping]]] = ..., match_fields: _Optional[_Iterable[_Union[Requirement, _Mapping]]] = ...) -> None: ...

class PreferredSchedulingTerm(_message.Message):
    __slots__ = ("weight", "preference")
    WEIGHT_FIELD_NUMBER: _ClassVar[int]
    PREFERENCE_FIELD_NUMBER: _ClassVar[int]
    weight: int
    preference: NodeSelectorTerm
    def __init__(self, weight: _Optional[int] = ..., preference: _Optional[_Union[NodeSelectorTerm, _Mapping]] = ...) -> None: ...

class Toleration(_message.Message):
    __slots__ = ("key", "operator", "value", "effect")
    KEY_FIELD_NUMBER: _ClassVar[int]
    OPERATOR_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    EFFECT_FIELD_NUMBER: _ClassVar[int]
    key: str
    operator: str
    value: str
    effect: str
    def __init__(self, key: _Optional[str] = ..., operator: _Optional[str] = ..., value: _Optional[str] = ..., effect: _Optional[str] = ...) -> None: ...

class HostPort(_message.Message):
    __slots__ = ("port", "protocol", "host_ip")
    PORT_FIELD_NUMBER: _ClassVar[int]
    PROTOCOL_FIELD_NUMBER: _ClassVar[int]
    HOST_IP_FIELD_NUMBER: _ClassVar[int]
    port: int
    protocol: str
    host_ip: str
    def __init__(self, port: _Optional[int] = ..., protocol: _Optional[str] = ..., host_ip: _Optional[str] = ...) -> None: ...

class PodAffinityTerm(_message.Message):
    __slots__ = ("label_selector", "namespaces", "namespace_selector", "topology_key")
    LABEL_SELECTOR_FIELD_NUMBER: _ClassVar[int]
    NAMESPACES_FIELD_NUMBER: _ClassVar[int]
    NAMESPACE_SELECTOR_FIELD_NUMBER: _ClassVar[int]
    TOPOLOGY_KEY_FIELD_NUMBER: _ClassVar[int]
    label_selector: LabelSelector
    namespaces: _containers.RepeatedScalarFieldContainer[str]
    namespace_selector: LabelSelector
    topology_key: str
    def __init__(self, label_selector: _Optional[_Union[LabelSelector, _Mapping]] = ..., namespaces: _Optional[_Iterable[str]] = ..., namespace_selector: _Optional[_Union[LabelSelector, _Mapping]] = ..., topology_key: _Optional[str] = ...) -> None: ...

class WeightedPodAffinityTerm(_message.Message):
    __slots__ = ("weight", "term")
    WEIGHT_FIELD_NUMBER: _ClassVar[int]
    TERM_FIELD_NUMBER: _ClassVar[int]
    weight: int
    term: PodAffinityTerm
    def __init__(self, weight: _Optional[int] = ..., term: _Optional[_Union[PodAffinityTerm, _Mapping]] = ...) -> None: ...

class TopologySpreadConstraint(_message.Message):
    __slots__ = ("max_skew", "topology_key", "when_unsatisfiable", "label_selector", "min_domains", "node_affinity_policy", "node_taints_policy", "match_label_keys")
    MAX_SKEW_FIELD_NUMBER: _ClassVar[int]
    TOPOLOGY_KEY_FIELD_NUMBER: _ClassVar[int]
    WHEN_UNSATISFIABLE_FIELD_NUMBER: _ClassVar[int]
    LABEL_SELECTOR_FIELD_NUMBER: _ClassVar[int]
    MIN_DOMAINS_FIELD_NUMBER: _ClassVar[int]
    NODE_AFFINITY_POLICY_FIELD_NUMBER: _ClassVar[int]
    NODE_TAINTS_POLICY_FIELD_NUMBER: _ClassVar[int]
    MATCH_LABEL_KEYS_FIELD_NUMBER: _ClassVar[int]
    max_skew: int
    topology_key: str
    when_unsatisfiable: str
    label_selector: LabelSelector
    min_domains: int
    node_affinity_policy: str
    node_taints_policy: str
    match_label_keys: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, max_skew: _Optional[int] = ..., topology_key: _Optional[str] = ..., when_unsatisfiable: _Optional[str] = ..., label_selector: _Optional[_Union[LabelSelector, _Mapping]] = ..., min_domains: _Optional[int] = ..., node_affinity_policy: _Optional[str] = ..., node_taints_policy: _Optional[str] = ..., match_label_keys: _Optional[_Iterable[str]] = ...) -> None: ...

class TaskColumns(_message.Message):
    __slots__ = ("uid", "name", "namespace", "node", "status", "pod_group", "priority", "profile", "requests", "role", "nonzero_cpu", "nonzero_memory")
    UID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    NODE_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    POD_GROUP_FIELD_NUMBER: _ClassVar[int]
    PRIORITY_FIELD_NUMBER: _ClassVar[int]
    PROFILE_FIELD_NUMBER: _ClassVar[int]
    REQUESTS_FIELD_NUMBER: _ClassVar[int]
    ROLE_FIELD_NUMBER: _ClassVar[int]
    NONZERO_CPU_FIELD_NUMBER: _ClassVar[int]
    NONZERO_MEMORY_FIELD_NUMBER: _ClassVar[int]
    uid: _containers.RepeatedScalarFieldContainer[str]
    name: _containers.RepeatedScalarFieldContainer[str]
    namespace: _containers.RepeatedScalarFieldContainer[int]
    node: _containers.RepeatedScalarFieldContainer[int]
    status: _containers.RepeatedScalarFieldContainer[Task.Status]
    pod_group: _containers.RepeatedScalarFieldContainer[int]
    priority: _containers.RepeatedScalarFieldContainer[int]
    profile: _containers.RepeatedScalarFieldContainer[int]
    requests: _containers.RepeatedCompositeFieldContainer[ResourceColumn]
    role: _containers.RepeatedScalarFieldContainer[str]
    nonzero_cpu: _containers.RepeatedScalarFieldContainer[float]
    nonzero_memory: _containers.RepeatedScalarFieldContainer[float]
    def __init__(self, uid: _Optional[_Iterable[str]] = ..., name: _Optional[_Iterable[str]] = ..., namespace: _Optional[_Iterable[int]] = ..., node: _Optional[_Iterable[int]] = ..., status: _Optional[_Iterable[_Union[Task.Status, str]]] = ..., pod_group: _Optional[_Iterable[int]] = ..., priority: _Optional[_Iterable[int]] = ..., profile: _Optional[_Iterable[int]] = ..., requests: _Optional[_Iterable[_Union[ResourceColumn, _Mapping]]] = ..., role: _Optional[_Iterable[str]] = ..., nonzero_cpu: _Optional[_Iterable[float]] = ..., nonzero_memory: _Optional[_Iterable[float]] = ...) -> None: ...

class ResourceColumn(_message.Message):
    __slots__ = ("resource", "values")
    RESOURCE_FIELD_NUMBER: _ClassVar[int]
    VALUES_FIELD_NUMBER: _ClassVar[int]
    resource: str
    values: _containers.RepeatedScalarFieldContainer[float]
    def __init__(self, resource: _Optional[str] = ..., values: _Optional[_Iterable[float]] = ...) -> None: ...

class OwnerReference(_message.Message):
    __slots__ = ("api_version", "kind", "name", "uid", "controller")
    API_VERSION_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    UID_FIELD_NUMBER: _ClassVar[int]
    CONTROLLER_FIELD_NUMBER: _ClassVar[int]
    api_version: str
    kind: str
    name: str
    uid: str
    controller: bool
    def __init__(self, api_version: _Optional[str] = ..., kind: _Optional[str] = ..., name: _Optional[str] = ..., uid: _Optional[str] = ..., controller: _Optional[bool] = ...) -> None: ...

class PodGroup(_message.Message):
    __slots__ = ("namespace", "name", "min_member", "min_task_member", "labels", "owner_references", "phase", "queue")
    class MinTaskMemberEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: int
        def __init__(self, key: _Optional[str] = ..., value: _Optional[int] = ...) -> None: ...
    class LabelsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    MIN_MEMBER_FIELD_NUMBER: _ClassVar[int]
    MIN_TASK_MEMBER_FIELD_NUMBER: _ClassVar[int]
    LABELS_FIELD_NUMBER: _ClassVar[int]
    OWNER_REFERENCES_FIELD_NUMBER: _ClassVar[int]
    PHASE_FIELD_NUMBER: _ClassVar[int]
    QUEUE_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    name: str
    min_member: int
    min_task_member: _containers.ScalarMap[str, int]
    labels: _containers.ScalarMap[str, str]
    owner_references: _containers.RepeatedCompositeFieldContainer[OwnerReference]
    phase: str
    queue: str
    def __init__(self, namespace: _Optional[str] = ..., name: _Optional[str] = ..., min_member: _Optional[int] = ..., min_task_member: _Optional[_Mapping[str, int]] = ..., labels: _Optional[_Mapping[str, str]] = ..., owner_references: _Optional[_Iterable[_Union[OwnerReference, _Mapping]]] = ..., phase: _Optional[str] = ..., queue: _Optional[str] = ...) -> None: ...

class PodDisruptionBudget(_message.Message):
    __slots__ = ("namespace", "name", "selector", "disruptions_allowed")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    SELECTOR_FIELD_NUMBER: _ClassVar[int]
    DISRUPTIONS_ALLOWED_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    name: str
    selector: LabelSelector
    disruptions_allowed: int
    def __init__(self, namespace: _Optional[str] = ..., name: _Optional[str] = ..., selector: _Optional[_Union[LabelSelector, _Mapping]] = ..., disruptions_allowed: _Optional[int] = ...) -> None: ...

class SchedulerConfig(_message.Message):
    __slots__ = ("actions", "tiers")
    ACTIONS_FIELD_NUMBER: _ClassVar[int]
    TIERS_FIELD_NUMBER: _ClassVar[int]
    actions: _containers.RepeatedScalarFieldContainer[str]
    tiers: _containers.RepeatedCompositeFieldContainer[SchedulerTier]
    def __init__(self, actions: _Optional[_Iterable[str]] = ..., tiers: _Optional[_Iterable[_Union[SchedulerTier, _Mapping]]] = ...) -> None: ...

class SchedulerTier(_message.Message):
    __slots__ = ("plugins",)
    PLUGINS_FIELD_NUMBER: _ClassVar[int]
    plugins: _containers.RepeatedCompositeFieldContainer[SchedulerPlugin]
    def __init__(self, plugins: _Optional[_Iterable[_Union[SchedulerPlugin, _Mapping]]] = ...) -> None: ...

class SchedulerPlugin(_message.Message):
    __slots__ = ("name", "arguments", "enable_predicate", "enable_node_order")
    class ArgumentsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    NAME_FIELD_NUMBER: _ClassVar[int]
    ARGUMENTS_FIELD_NUMBER: _ClassVar[int]
    ENABLE_PREDICATE_FIELD_NUMBER: _ClassVar[int]
    ENABLE_NODE_ORDER_FIELD_NUMBER: _ClassVar[int]
    name: str
    arguments: _containers.ScalarMap[str, str]
    enable_predicate: bool
    enable_node_order: bool
    def __init__(self, name: _Optional[str] = ..., arguments: _Optional[_Mapping[str, str]] = ..., enable_predicate: _Optional[bool] = ..., enable_node_order: _Optional[bool] = ...) -> None: ...
