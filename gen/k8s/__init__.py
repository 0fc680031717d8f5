"""Kubernetes value types, as the API server parses them: ``quantity`` (resource.Quantity)
and ``semver`` (the versions DRA attributes carry); ``versions``, a version's minor and the
resource.k8s.io version per minor. Kernel layer: imports nothing of gen
but the error tree."""
