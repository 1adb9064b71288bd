"""``python -m bench.timeline``: see bench/timeline/__init__.py and docs/benchmarks.md."""

from __future__ import annotations

import sys

from bench.timeline.run import main

if __name__ == "__main__":
    sys.exit(main())
