"""Kubernetes value types, as the API server parses them: ``quantity`` (resource.Quantity)
and ``semver`` (the versions DRA attributes carry). Kernel layer: imports nothing of gen
but the error tree."""
