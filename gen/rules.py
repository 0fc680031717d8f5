"""Every lint rule id gen can report, with its title.

Rule ids are stable (``GEN0xx`` input and output, ``GEN1xx`` MIG, ``GEN2xx`` DRA,
``GEN3xx`` serving / fit, ``GEN5xx`` security, ``GEN6xx`` Apple Silicon).
"""

from __future__ import annotations

__all__ = ["RULES"]

RULES: dict[str, str] = {
    "GEN101": "MIG layout cannot exist on the GPU (profile, count or placement)",
    "GEN102": "MIG layout needs a newer driver than the node pool has",
    "GEN103": "MIG layout change on a pool: follow the runbook",
    "GEN104": "MIG layout used on a GPU without MIG",
    "GEN201": "DRA API version not served by the cluster as configured",
    "GEN202": "field behind a feature gate the cluster does not enable (silently dropped)",
    "GEN203": "CEL selector does not compile",
    "GEN204": "claim cannot be satisfied by any device of the cluster",
    "GEN205": "fleet cannot hold all replicas at once",
    "GEN206": "CEL selector errors at run time on a device",
    "GEN207": "DRA sharing needs a driver feature gate",
    "GEN208": "allocation mode or alternatives not supported by the cluster",
    "GEN301": "model does not fit the device memory",
    "GEN302": "parallelism does not match the model or the claim",
    "GEN303": "container CUDA runtime newer than the node driver supports",
    "GEN304": "service has no node pool it can run on",
    "GEN501": "literal secret in a profile",
    "GEN502": "workload opts out of Pod Security 'restricted'",
    "GEN601": "engine vllm on an Apple VM node pool (vLLM has no Vulkan backend)",
    "GEN602": "model does not fit the Apple GPU memory (krunkit VM window or Mac Metal budget)",
    "GEN603": "unknown Apple chip",
    "GEN604": "chip and memory size Apple does not sell together",
    "GEN605": "krunkit VM sizing or device resource impossible",
    "GEN606": "llama-server service has no Apple VM node pool in the cluster",
    "GEN607": "pod asks for more than an Apple VM node has (memory, devices)",
    "GEN608": "setting the Apple engine cannot take",
    "GEN609": "Apple VM pool without node labels",
    "GEN610": "EndpointSlice to Macs in an Argo CD cluster (excluded by default)",
}
