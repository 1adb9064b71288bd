"""Execute: replan on the live cluster, evict through the Eviction API, suggest where the rebuilt
pods go, and verify the result — with the run's status as the journal.

``reconciler`` drives a run one pass at a time: ``serial`` admission (one run at a time, then a
cooldown), ``journal`` (the relocation and result records), ``eviction``, ``placement`` (recognise
rebuilt pods, select and nominate their nodes on one sidecar session per pass), ``progress`` (the
pass itself) and ``result`` (how a run ends). ``events`` maps Pod and run events to the runs they
concern.
"""
