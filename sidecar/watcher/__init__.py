"""The RepackRun controller: reads the cluster, asks a planner, writes the run's status.

``informer`` (list+watch caches) and ``cluster`` (``ClusterCache``: the cached cluster as a
Snapshot) feed ``controller`` (work queue, one worker, ``Reconciler``s such as ``dryrun``), which
runs while ``lease`` (Lease leader election) says this replica leads; ``runner`` wires them for
``repack-sidecar watch`` and ``args`` holds its flags.

It sits beside the gRPC client and server, so it never imports them: the CLI hands it a
``Planner`` (the sidecar's ``RepackClient`` or a ``dryrun.InProcessPlanner``). Nothing is
imported here so that ``repack-sidecar`` builds its parser (``watcher.args``) without loading
the Kubernetes client.
"""
