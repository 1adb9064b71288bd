"""A small Kubernetes to test the watcher on without one: an in-memory fake of the watcher's
cluster port (``cluster.FakeCluster``) and a simulated Volcano acting on it (``plane``: scheduler,
kubelet, workload rebuilds), started from a Snapshot's objects (``objects``).

For unit, crash and fault tests and ``repack-sidecar demo --execute``; nothing else in the product
imports it. Everything shaped by HTTP, kubectl, CRD schemas, RBAC or admission is tested on the
real control plane (``realcluster``), never here.
"""
