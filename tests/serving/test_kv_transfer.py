"""The KV-transfer contract: vLLM's config JSON per role, and reading it back from args."""

from __future__ import annotations

import json

import pytest

from gen.serving.kv_transfer import CONNECTORS, kv_transfer_config, parse_kv_transfer_config


@pytest.mark.parametrize(("connector", "vllm_class", "sidecar"), [
    ("nixl", "NixlConnector", "nixlv2"),
    ("mooncake", "MooncakeConnector", "mooncake"),
    ("lmcache", "LMCacheConnectorV1", "shared-storage"),
])
def test_connector_rows(connector: str, vllm_class: str, sidecar: str) -> None:
    """Each connector's vLLM class and the sidecar's protocol for it."""
    assert CONNECTORS[connector].vllm_class == vllm_class
    assert CONNECTORS[connector].sidecar == sidecar
    assert json.loads(kv_transfer_config(connector, "prefill")) == {
        "kv_connector": vllm_class, "kv_role": "kv_producer"}
    assert json.loads(kv_transfer_config(connector, "decode")) == {
        "kv_connector": vllm_class, "kv_role": "kv_consumer"}


def test_parse_the_last_flag_in_both_spellings() -> None:
    """argparse keeps the last value; '--kv_transfer_config' and '=' forms count."""
    args = ("--kv-transfer-config", '{"kv_connector":"A","kv_role":"kv_both"}',
            '--kv_transfer_config={"kv_connector":"B","kv_role":"kv_consumer"}')
    assert parse_kv_transfer_config(args) == (2, {"kv_connector": "B", "kv_role": "kv_consumer"})
    assert parse_kv_transfer_config(("--max-num-seqs", "8")) == (-1, None)
    assert parse_kv_transfer_config(("--kv-transfer-config", "not json")) == (0, {})
