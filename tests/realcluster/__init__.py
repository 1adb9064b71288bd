"""The real control plane built from Go modules, for the cluster-facing tests (see launcher.py)."""
