"""A scheduler session as numpy columns, Volcano's ``api/`` package in our terms.

* ``decode.py``: Snapshot message -> ClusterState, every bad field named (InputError).
* ``validation.py``: what the API server would refuse in a pod's constraints (InputError).
* ``state.py``: ClusterState, the columns every algorithm reads.
* ``ledger.py``: NodeInfo accounting (Idle, Releasing, Pipelined, FutureIdle); kernel ext/ledger.pyx.
* ``taskstatus.py``: the TaskStatus flags and the sets rules test, defined once.
* ``holding.py``: which tasks and nodes hold a resource (fragmentation's occupied, receiver rule 1, Execute).
* ``kube.py``: Kubernetes objects (pods, nodes, PodGroups, PDBs) -> Snapshot, for the watcher and the fake's scheduler.
* ``units.py``: Volcano units and the 0.1 comparison tolerance (LessEqual).
* ``io.py``, ``forms.py``: snapshot and RepackRun files; the two task forms.
"""
