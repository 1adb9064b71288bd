"""Volcano repack sidecar. Packages in layer order (tests/project/test_architecture.py keeps it):

api (generated contract) < errors, dispatch, logs < snapshot < mirror < repack
< scenarios | service < server | client < cli.
"""
