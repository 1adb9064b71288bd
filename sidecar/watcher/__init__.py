"""The RepackRun controller: reads the cluster, asks a planner, writes the run's status.

It sits beside the gRPC client and server, so it never imports them: the CLI hands it a
``Planner`` (the sidecar's ``RepackClient`` or a ``dryrun.InProcessPlanner``). Nothing is
imported here so that ``repack-sidecar`` builds its parser (``watcher.args``) without loading
the Kubernetes client.
"""
