"""The mirror core: Volcano's allocate-time Filter and node order, replayed on a snapshot.

Fidelity target: Volcano v1.14.1 on its Kubernetes v1.34.1 scheduler libraries
(``VOLCANO_RELEASE``), the release go/plugin and the real control plane build;
``volcano-oracle`` runs its compiled code.

Split like the Kubernetes scheduler plugins, so each rule can be read next to its upstream:

- ``core``: the front door (``Mirror``): subjects, Filter, Prioritize, allocate, feasibility classes;
- ``predicates``: Volcano's predicate order and how the checks' results combine;
- ``podchecks``: the registry of checks (switch, pod-level, domain rule, reasons), read by all the others;
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
- ``kernels``: hot loops (Cython, with numpy forms; the loops that specify them are in tests/mirror);
- ``domaincount``: the per-domain rule of topology spread and required anti-affinity, written once.
"""

#: The release the mirror follows: the one go/plugin (and so ``volcano-oracle``) and the real
#: control plane build, whose go.mod files pin it; tests/mirror/test_fidelity_target.py keeps the
#: go.mod files, these names and README's "Fidelity target" line in step.
VOLCANO_RELEASE = "v1.14.1"
KUBERNETES_RELEASE = "v1.34.1"
