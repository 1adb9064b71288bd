"""The benefit over time (issue 37, part 3): ``python -m bench.timeline``.

openb's arrivals and departures replayed through Volcano's allocate cycle (the mirror's
``allocate_job``, the project's default scheduler conf) for four variants on the same arrivals:
no repack, the planner on a schedule, the whenPending trigger with the targeted planner, and the
same trigger with a first-fit-decreasing drain. Modules by concept: ``workload`` (the arrivals),
``engine`` (the event loop and executed moves), ``live`` (the scheduler's view for the planner),
``targeted`` (plans for one waiting job), ``variants`` (when each repack runs), ``metrics``,
``report`` (table, plots, page) and ``run`` (the command). docs/benchmarks.md has the numbers.
"""

from __future__ import annotations

from bench.timeline.run import main

__all__ = ["main"]
