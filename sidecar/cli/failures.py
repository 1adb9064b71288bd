"""What the command line says when something fails: one line a person can act on, never a traceback.

Exit 2 for usage and bad input (the flag or field is named), exit 1 for the environment (a port in
use, a sidecar that does not answer, a file that cannot be read).
"""

from __future__ import annotations

import sys

from sidecar.cli.parser import PROG

#: gRPC codes that mean "the sidecar did not answer" rather than "the sidecar said no"
UNREACHABLE = ("UNAVAILABLE", "DEADLINE_EXCEEDED")
#: gRPC codes whose details name the bad field (the sidecar's InputError)
BAD_INPUT = ("INVALID_ARGUMENT", "NOT_FOUND", "FAILED_PRECONDITION", "OUT_OF_RANGE")


def say(message: str) -> None:
    """One line on stderr, newlines folded so the line stays one line."""
    text = " ".join(message.split())
    print(f"{PROG}: error: {text if len(text) <= 2000 else text[:2000] + '…'}", file=sys.stderr)


def rpc_failure(target: str, code: str, details: str, *, timeout: float | None = None) -> tuple[str, int]:
    """The line and exit code for a failed call to the sidecar at ``target``."""
    if code in UNREACHABLE:
        waited = f" within {timeout:g} s" if timeout is not None else ""
        return (
            f"{target}: the sidecar did not answer{waited} ({code}: {details}); check that `{PROG} serve` is "
            f"running there, that host and port are right (serve's default is 127.0.0.1:50151) and that nothing "
            f"blocks the connection",
            1,
        )
    if code in BAD_INPUT:
        return details, 2
    return f"{target}: {code}: {details}", 1
