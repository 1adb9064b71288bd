"""Bad input over gRPC in gRPC's rich error model: the status carries a ``google.rpc.BadRequest``
naming the field, so a client reads the field path instead of parsing it out of the message
(which stays the sentence a person reads, ``field: problem``). ``grpcurl`` prints the details too.
"""

from __future__ import annotations

import grpc
from google.protobuf import any_pb2
from google.rpc import code_pb2, error_details_pb2, status_pb2
from grpc_status import rpc_status


def invalid_argument(field: str, problem: str, message: str) -> grpc.Status:
    """INVALID_ARGUMENT with ``message`` and one field violation (``field``, ``problem``); give
    its code, details and trailing metadata to ``context.abort``."""
    violation = error_details_pb2.BadRequest.FieldViolation(field=field, description=problem)
    detail = any_pb2.Any()
    detail.Pack(error_details_pb2.BadRequest(field_violations=[violation]))
    return rpc_status.to_status(status_pb2.Status(code=code_pb2.INVALID_ARGUMENT, message=message, details=[detail]))


def field_violation(call: grpc.Call) -> tuple[str, str] | None:
    """The first (field, problem) of the call's BadRequest detail, or None when it has none."""
    try:
        status = rpc_status.from_call(call)
    except ValueError:  # details that contradict the call's own code or message: not ours
        return None
    for detail in status.details if status is not None else ():
        if detail.Is(error_details_pb2.BadRequest.DESCRIPTOR):
            bad = error_details_pb2.BadRequest()
            detail.Unpack(bad)
            for v in bad.field_violations:
                return v.field, v.description
    return None
