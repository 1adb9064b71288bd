"""The controller kit: what any RepackRun reconciler stands on (controller-runtime's role).

``port`` (the narrow cluster interface; ``kube`` implements it on the official client, and
``sidecar.fake`` in memory), ``informer`` and ``cache``, ``workqueue``, ``lease``, ``controller``
with ``requeue``, and ``status``. Nothing here knows Execute, DryRun or the placement gate.
"""
