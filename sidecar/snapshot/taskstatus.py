"""Volcano's TaskStatus bit flags (``pkg/scheduler/api/types.go``), defined once.

The numbers are the contract's (``snapshot.proto`` ``Task.Status``), so a decoded column and a
message compare directly. Sets that rules test together are named here too, so no module
spells a status as a literal.
"""

from __future__ import annotations

from sidecar.api.v1alpha1 import snapshot_pb2 as pb

_S = pb.Task.Status

PENDING = int(_S.Value("Pending"))
ALLOCATED = int(_S.Value("Allocated"))
PIPELINED = int(_S.Value("Pipelined"))
BINDING = int(_S.Value("Binding"))
BOUND = int(_S.Value("Bound"))
RUNNING = int(_S.Value("Running"))
RELEASING = int(_S.Value("Releasing"))
SUCCEEDED = int(_S.Value("Succeeded"))
FAILED = int(_S.Value("Failed"))
UNKNOWN = int(_S.Value("Unknown"))

#: the tasks a gang counts as started: JobInfo.ReadyTaskNum (pkg/scheduler/api/job_info.go)
READY_MASK = ALLOCATED | BINDING | BOUND | RUNNING | SUCCEEDED
#: a task in one of these no longer holds anything on its node (NodeInfo.AddTask skips it)
TERMINATED_MASK = SUCCEEDED | FAILED
#: every valid status (STATUS_UNSPECIFIED is not one)
VALID = frozenset(int(v) for v in _S.values() if v != 0)
