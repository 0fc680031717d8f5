"""gen: validated GitOps manifests for GPU inference fleets (library API: gen.pipeline)."""

__version__ = "0.1.0"
