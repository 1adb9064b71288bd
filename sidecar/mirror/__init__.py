"""The mirror core: Volcano's allocate-time Filter and node order, replayed on a snapshot.

Fidelity target: Volcano master ed72c7c8 (v1.16 line) on Kubernetes 1.36.1 scheduler libraries.

Split like the Kubernetes scheduler plugins, so each rule can be read next to its upstream:

- ``core``: the front door (``Mirror``): subjects, Filter, Prioritize, allocate, feasibility classes;
- ``predicates``: Volcano's predicate order and how the checks' results combine;
- ``nodechecks``: resource dimensions, NodeUnschedulable, NodeAffinity, TaintToleration (cached per constraint set);
- ``interpod``: InterPodAffinity (affinity, anti-affinity, existing pods' anti-affinity);
- ``spread``: PodTopologySpread (DoNotSchedule);
- ``podindex``: which pods a selector or term matches, and their counts per topology domain;
- ``explain``: Volcano's fit-error wording and status codes (one table), the grouped reason lists;
- ``types``: the subject, result types and per-check codes the modules share;
- ``scoring``: node order (binpack, nodeorder plugins);
- ``resourcescores``: binpack, LeastAllocated/MostAllocated and BalancedAllocation formulas;
- ``selectors``: label selectors, node selector terms and tolerations;
- ``simulation``: tentative moves with exact rollback; also host ports (NodePorts);
- ``conf``: volcano-scheduler.conf;
- ``kernels``: hot loops (Cython, with Python twins).
"""
