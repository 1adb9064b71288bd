"""The gRPC front door: app (lifecycle, health, reflection, drain), a thin servicer over
sidecar.service, interceptors (access log, load shedding), Prometheus metrics, config."""
