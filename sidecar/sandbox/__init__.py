"""A Kubernetes sandbox: an in-memory API server emulator (``apiserver``) for tests and demos."""
