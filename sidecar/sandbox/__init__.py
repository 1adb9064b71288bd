"""A Kubernetes API server emulator with a simulated Volcano control plane, for tests and demos.

It lets the watcher and kubectl run against real Kubernetes semantics (CRD schemas, PDB-guarded
evictions, Volcano PodGroups) on machines where no kube-apiserver or etcd can be installed.
"""
