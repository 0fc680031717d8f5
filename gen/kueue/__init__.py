"""Kueue quotas: ResourceFlavors, ClusterQueues, LocalQueues and the Kueue install's
Configuration for clusters with ``quota_engine: kueue``, and the rules for a workload that
Kueue can never admit."""
