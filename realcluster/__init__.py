"""The real control plane to test on: etcd, kube-apiserver, kube-controller-manager, KWOK, and
Volcano's controllers and scheduler, built from Go modules by ``go/controlplane/build.sh`` and
started on loopback (``launcher``); a controller double for Kthena's ModelServing, whose module is
not served (``modelserving``); the user guide's example manifests (``guide/``).

Not part of the product (the wheel holds ``sidecar`` only): the tests on the real control plane
use it, and so can a person, with ``python -m realcluster up`` (see ``__main__``).
"""
