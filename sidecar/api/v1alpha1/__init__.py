"""Generated from proto/volcano/repack/v1alpha1 by sidecar.api.codegen."""
