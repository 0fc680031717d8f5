"""GitOps delivery: the Argo CD and Flux bootstrap, the platform charts (GPU Operator, DRA
driver) and the stage ordering that wrap every other capability's manifests."""
