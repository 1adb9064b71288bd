"""The RepackRun controller: reads the cluster, asks the sidecar, writes the run's status.

* ``kit`` — the controller kit: the narrow cluster ``port`` (``kube``: on the official client),
  informers and their ``cache`` (the cluster as a Snapshot), the work queue, the Lease, the
  ``controller`` loop and its ``Reconciled`` requeues, and ``status`` (resourceVersion-checked
  status writes, the one way a run ends).
* ``dryrun``, ``execute`` (admission, journal, eviction, placement, the pass, the result) and
  ``ttl`` — the reconcilers; ``source`` (which view a run is planned on), ``plannerwait`` (riding
  out a sidecar restart), ``sidecarport`` (what the watcher asks of the sidecar: the gRPC client
  or the service in process), ``supplement`` (what Volcano's session lacks, pushed to the sidecar).
* ``gate`` — the placement gate: the admission webhook that holds rebuilt pods until nominated.
* ``runner`` wires them for ``repack-sidecar watch``; ``args`` holds its flags; ``observer`` and
  ``metrics`` report.

It sits beside the gRPC client and server, so it never imports them: the CLI hands it a
``Sidecar`` (the sidecar's ``RepackClient`` or ``InProcessSidecar``). Nothing is imported here so
that ``repack-sidecar`` builds its parser (``watcher.args``) without loading the Kubernetes client.
"""
