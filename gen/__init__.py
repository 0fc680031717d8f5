"""gen: validated GitOps manifests for GPU inference fleets (library API: gen.pipeline)."""

from gen._version import __version__ as __version__
