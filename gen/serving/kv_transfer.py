"""The KV-transfer contract of a disaggregated service: one connector, two roles.

A prefill pod computes a prompt's KV cache and hands it to a decode pod; both vLLM engines
must run the same connector, the prefill side as ``kv_producer`` and the decode side as
``kv_consumer``, and the routing sidecar on the decode pod must speak that connector's
protocol. This module holds that contract as data, as the pinned releases define it:

- vLLM v0.33.0 ``vllm/config/kv_transfer.py`` (``KVTransferConfig``: ``kv_connector``,
  ``kv_role`` one of ``kv_producer | kv_consumer | kv_both``; a connector without a role
  is refused) and ``vllm/distributed/kv_transfer/kv_connector/factory.py`` (the registered
  class names ``NixlConnector``, ``LMCacheConnectorV1``, ``MooncakeConnector``);
  ``--kv-transfer-config`` takes that config as JSON (vllm-project/vllm,
  vllm/engine/arg_utils.py, v0.33.0).
- vLLM v0.33.0 ``vllm/envs.py``: ``VLLM_NIXL_SIDE_CHANNEL_HOST`` (default ``localhost``:
  a prefill pod must advertise its pod IP, or decode pods cannot reach its side channel),
  ``VLLM_NIXL_SIDE_CHANNEL_PORT`` (5600), ``VLLM_MOONCAKE_BOOTSTRAP_PORT`` (8998).
- llm-d/llm-d-router v0.10.0 ``pkg/sidecar/constants/constants.go`` and
  ``pkg/sidecar/proxy/options.go``: the sidecar's ``--kv-connector`` values ``nixlv2``,
  ``shared-storage``, ``sglang``, ``mooncake``, ``offloading``, and
  ``--mooncake-bootstrap-port`` (default 8998) for Mooncake.

Pure: no I/O; the builders and the lint read the same rows.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from gen.fleet.endpoints import Role

__all__ = [
    "CONNECTORS",
    "KV_ROLES",
    "ConnectorSpec",
    "kv_transfer_config",
    "parse_kv_transfer_config",
]

KV_ROLES: dict[Role, str] = {"prefill": "kv_producer", "decode": "kv_consumer"}
"""The ``kv_role`` each side runs (vLLM KVTransferConfig.kv_role)."""

NIXL_SIDE_CHANNEL_PORT = 5600
"""vLLM's default ``VLLM_NIXL_SIDE_CHANNEL_PORT`` (vllm/envs.py, v0.33.0)."""
MOONCAKE_BOOTSTRAP_PORT = 8998
"""vLLM's default ``VLLM_MOONCAKE_BOOTSTRAP_PORT`` (vllm/envs.py, v0.33.0), the port the
sidecar queries on prefill pods (``--mooncake-bootstrap-port``, default 8998, llm-d-router
pkg/sidecar/proxy/options.go, v0.10.0)."""


@dataclass(frozen=True)
class ConnectorSpec:
    """What one connector needs on both sides.

    Attributes:
        vllm_class: the name vLLM's connector factory registers (``kv_connector``).
        sidecar: the routing sidecar's ``--kv-connector`` protocol for it.
        ports: (name, port) the prefill pods listen on for the transfer (container ports:
            decode pods connect to them).
        env: what the engine reads beyond the config; ``POD_IP`` is the pod's IP.
        heterogeneous_tp: vLLM plans transfers between unequal TP sizes when one divides
            the other (``_get_tp_ratio`` asserts the divisibility at the handshake).
    """

    vllm_class: str
    sidecar: str
    ports: tuple[tuple[str, int], ...]
    env: tuple[tuple[str, str], ...]
    heterogeneous_tp: bool


CONNECTORS: dict[str, ConnectorSpec] = {
    # NixlConnector: vllm/distributed/kv_transfer/kv_connector/v1/nixl (v0.33.0); the side
    # channel host is read in nixl/base_scheduler.py from VLLM_NIXL_SIDE_CHANNEL_HOST; TP
    # ratios in nixl/tp_mapping.py (_get_tp_ratio: one size must divide the other).
    "nixl": ConnectorSpec(
        vllm_class="NixlConnector", sidecar="nixlv2",
        ports=(("nixl", NIXL_SIDE_CHANNEL_PORT),),
        env=(("VLLM_NIXL_SIDE_CHANNEL_HOST", "POD_IP"),
             ("VLLM_NIXL_SIDE_CHANNEL_PORT", str(NIXL_SIDE_CHANNEL_PORT))),
        heterogeneous_tp=True,
    ),
    # MooncakeConnector: kv_connector/v1/mooncake/mooncake_connector.py (v0.33.0), which has
    # its own _get_tp_ratio with the same divisibility assertions.
    "mooncake": ConnectorSpec(
        vllm_class="MooncakeConnector", sidecar="mooncake",
        ports=(("mooncake", MOONCAKE_BOOTSTRAP_PORT),),
        env=(("VLLM_MOONCAKE_BOOTSTRAP_PORT", str(MOONCAKE_BOOTSTRAP_PORT)),),
        heterogeneous_tp=True,
    ),
    # LMCacheConnectorV1: kv_connector/v1/lmcache_connector.py (v0.33.0) loads the adapter
    # of the 'lmcache' package (lmcache.integration.vllm.vllm_v1_adapter); the prefill
    # stores the cache in LMCache's backend and the decode reads it there, which is the
    # sidecar's shared-storage protocol (prefill first, then decode).
    "lmcache": ConnectorSpec(
        vllm_class="LMCacheConnectorV1", sidecar="shared-storage",
        ports=(), env=(), heterogeneous_tp=False,
    ),
}


def kv_transfer_config(connector: str, role: Role) -> str:
    """The ``--kv-transfer-config`` JSON of one side, as vLLM parses it."""
    spec = CONNECTORS[connector]
    return json.dumps({"kv_connector": spec.vllm_class, "kv_role": KV_ROLES[role]},
                      separators=(",", ":"))


KV_FLAG = "--kv-transfer-config"
_KV_FLAGS = frozenset({KV_FLAG, "--kv_transfer_config"})


def parse_kv_transfer_config(args: tuple[str, ...]) -> tuple[int, dict[str, object] | None]:
    """The index and the parsed value of the last ``--kv-transfer-config`` in ``args``
    (argparse keeps the last), ``(-1, None)`` when there is none; a value that is not a
    JSON object parses to ``{}``."""
    found, value = -1, None
    for i, arg in enumerate(args):
        flag, eq, inline = arg.partition("=")
        if flag not in _KV_FLAGS:
            continue
        text = inline if eq else (args[i + 1] if i + 1 < len(args) else "")
        try:
            parsed = json.loads(text)
        except ValueError:
            parsed = {}
        found, value = i, parsed if isinstance(parsed, dict) else {}
    return found, value
