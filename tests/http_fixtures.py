"""Plain HTTP GETs on loopback for the probe and metrics tests (status and body; 0 when nothing answers)."""

from __future__ import annotations

import urllib.error
import urllib.request


def get(port: int, path: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=2) as reply:
            return reply.status, reply.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, err.read().decode()
    except OSError:
        return 0, ""
