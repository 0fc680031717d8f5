"""Shared test helpers: inline file trees, copies of the example fleet, a base fleet to lint."""

from __future__ import annotations

import shutil
import textwrap
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from gen.errors import Finding, Severity
from gen.pipeline import lint

REPO = Path(__file__).resolve().parent.parent
"""The repository root (holds profiles/, schema/, out/)."""


def write_tree(root: Path, files: Mapping[str, str | bytes]) -> Path:
    """Write ``{relpath: text}`` under ``root``; text is dedented, bytes are written as they are."""
    for rel, content in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(textwrap.dedent(content).lstrip("\n"), encoding="utf-8")
    return root


def invoke(runner: CliRunner, *args: str | Path) -> Result:
    """Run the gen CLI; assert it printed no traceback and raised nothing but SystemExit."""
    from gen.cli import cli

    result = runner.invoke(cli, [str(a) for a in args])
    assert "Traceback" not in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result


def counting_reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every path the render cache reads a file of out/ at from now on (through
    :func:`gen.emit.cache.layout.read_all`), in order."""
    from gen.emit.cache import layout

    reads: list[str] = []
    real = layout.read_all

    def counted(path: str) -> bytes:
        reads.append(path)
        return real(path)

    monkeypatch.setattr(layout, "read_all", counted)
    return reads


def copy_fleet(root: Path) -> Path:
    """Copy the example fleet (profiles/ and schema/) into ``root``; return ``root``."""
    root.mkdir(parents=True, exist_ok=True)
    for folder in ("profiles", "schema"):
        shutil.copytree(REPO / folder, root / folder)
    return root


def snapshot_tree(root: Path) -> dict[str, bytes]:
    """Every file under ``root`` by POSIX relative path, with its bytes; not the render
    cache's stat table (``.gen-cache/_stat.json``), whose inodes and times are the machine's
    own and differ between two copies of one render."""
    return {
        rel: p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and not (rel := p.relative_to(root).as_posix()).endswith(
            ".gen-cache/_stat.json")
    }


def stat_tree(root: Path) -> dict[str, tuple[int, int]]:
    """Every file under ``root`` with its (inode, mtime_ns)."""
    out = {}
    for p in sorted(root.rglob("*")):
        if p.is_file():
            st = p.stat()
            out[p.relative_to(root).as_posix()] = (st.st_ino, st.st_mtime_ns)
    return out


APPLE_GGUF_MODEL = """\
    kind: Model
    name: org/Llama-8B-GGUF/llama-8b-q8_0.gguf
    parameters: 8030261248
    layers: 32
    hidden_size: 4096
    attention_heads: 32
    kv_heads: 8
    head_dim: 128
    max_context: 131072
    weight_dtype: int8
"""
"""An 8B GGUF model profile for the Apple VM (llama-server) tests."""

APPLE_VULKAN_SERVICE = """\
    kind: InferenceService
    name: llama-vk
    model: org/Llama-8B-GGUF/llama-8b-q8_0.gguf
    engine: llama-server
    clusters: [lab]
    node_pool: studio
    gpu: {gpu_class: apple-venus}
    serving: {max_model_len: 16384}
    auth: {api_key: {name: vk-key, key: key}}
    resources: {cpu: "2", memory: 8Gi}
"""
"""A llama-server (Vulkan) service on the ``studio`` Apple VM pool of cluster ``lab``."""


LINT_BASE = {
    "cluster.yaml": """\
        kind: Cluster
        name: prod
        kubernetes_version: "1.34.2"
        allocation: dra
        node_pools:
          - name: h100
            gpu: h100-sxm5-80gb
            gpus_per_node: 8
            nodes: 2
            driver_version: "580.95.05"
          - name: mig
            gpu: h100-sxm5-80gb
            gpus_per_node: 8
            nodes: 1
            driver_version: "580.95.05"
            mig_layout: mixed
        """,
    "layout.yaml": """\
        kind: MIGLayout
        name: mixed
        gpu: h100-sxm5-80gb
        profiles: {3g.40gb: 1, 2g.20gb: 1, 1g.10gb: 2}
        """,
    "classes.yaml": """\
        kind: GPUClass
        name: h100
        match: {product: h100-sxm5-80gb}
        ---
        kind: GPUClass
        name: mig-3g
        device_type: mig
        match: {mig_profile: 3g.40gb}
        """,
    "service.yaml": """\
        kind: InferenceService
        name: llama-70b
        model: meta-llama/Llama-3.1-70B-Instruct
        clusters: [prod]
        gpu: {gpu_class: h100, count: 4}
        parallelism: {tensor: 4}
        serving: {max_model_len: 32768}
        """,
}


LINT_BASE = {name: textwrap.dedent(text) for name, text in LINT_BASE.items()}
"""A clean two-pool DRA fleet (whole H100s and a mixed MIG layout) with one 70B service:
the base that the lint-rule tests change one file of."""


def lint_fleet(tmp_path: Path, **changes: str) -> list[Finding]:
    """Lint :data:`LINT_BASE` with some of its files replaced (``name=text``)."""
    files = {**LINT_BASE, **changes}
    root = tmp_path / "profiles"
    root.mkdir()
    for name, text in files.items():
        (root / name).write_text(text)
    return lint(root, base=tmp_path)


def errors_of(findings: list[Finding]) -> list[Finding]:
    """The findings of severity error."""
    return [f for f in findings if f.severity is Severity.ERROR]


def replaced_at(doc: Any, path: tuple[Any, ...], value: Any) -> Any:
    """``doc`` with the value at key path ``path`` replaced: copies along the path, shares
    the rest (rendered data is read-only)."""
    if not path:
        return value
    copied = dict(doc) if isinstance(doc, dict) else list(doc)
    copied[path[0]] = replaced_at(doc[path[0]], path[1:], value)
    return copied
