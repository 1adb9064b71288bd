"""Repacking: the guide's RepackRun, planned against the mirror core. Where each rule lives:

* ``spec.py``: RepackSpec validation and defaults (RunSpec).
* ``scope.py``: scope.podGroups / scope.nodes selection.
* ``fragmentation.py``: the fragmentation measure (Evaluate, before and after a plan).
* ``candidates.py``: which nodes may be emptied, and why the others may not.
* ``cost.py``: gang-aware interruption cost, its five dimensions and their normalisation.
* ``receivers.py``: where a leaving pod goes (receiver rules 1-4; kernel ext/receivers.pyx).
* ``search.py``: placing one candidate's pods, backtracking within a budget (the Filter-based
  search, and the same search in one kernel pass for pods whose checks are domain rules);
  ``nodelevel.py`` binds that kernel to a planning loop.
* ``ranking.py``: a round's candidate scores, kept from round to round (kernel ext/ranking.pyx).
* ``limits.py``: maxPerRun budgets, PodDisruptionBudgets and the bulk capacity bound.
* ``planner.py``: the incremental loop.
* ``exact.py``: ``planner.strategy: Exact`` (a MILP on small scopes).
* ``status.py``: PlanResult -> RepackRun status.
"""
