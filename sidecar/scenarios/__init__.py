"""Clusters to plan on when there is no live scheduler: the seeded generator behind the demo
and the tests, replays of the public GPU traces placed by the mirror core (`Mirror.allocate`),
and the columnar task-table builder both use. Above the mirror, beside the service."""
