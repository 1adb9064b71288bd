"""Shared benchmark helpers: medians over repeats, and a results table with ratios."""

from __future__ import annotations

import json
import os
import platform
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

#: where benchmark results go by default; ``REPACK_BENCH_OUT`` overrides it (the smoke tests point it at a
#: temporary folder, so a toy-size run never replaces real numbers)
OUT = Path(__file__).resolve().parent / "out"


def out_dir() -> Path:
    return Path(os.environ.get("REPACK_BENCH_OUT") or OUT)


def median_seconds(fn: Callable[[], Any], repeats: int, warmup: int = 1) -> tuple[float, list[float]]:
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), times


def machine() -> str:
    import os

    return f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"


def save(name: str, data: dict[str, Any]) -> Path:
    out = out_dir()
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"{name}.json"
    path.write_text(json.dumps(data, indent=2) + "\n")
    return path
