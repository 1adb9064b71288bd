"""Names in the contract that are not messages: the extender intake's session and its age trailer.

Every front door and client shares them from here (the lowest layer), so a client needs no service.
"""

from __future__ import annotations

#: the session Volcano's extender plugin keeps current (onSessionOpen each cycle)
LATEST = "latest"
#: the trailer carrying the age in seconds of ``LATEST`` on every call made on it
AGE_METADATA = "repack-session-age-seconds"
