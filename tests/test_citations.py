"""Every citation in the project points at a public source.

Facts in modules, data files and docs are cited by public URL or ``owner/repo path@tag``
(a GitHub issue as ``owner/repo#N``), never by research notes that users of gen do not have:
no ``reference/<notes>.md``, the notes' shared folder, ``(reference §2.2)`` or "the reference
names ...". This test scans gen/, templates/, docs/, tests/, bench/, README.md and
CONTRIBUTING.md so such citations cannot creep back.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.helpers import REPO

SCANNED_DIRS = ("gen", "templates", "docs", "tests", "bench")
SCANNED_FILES = ("README.md", "CONTRIBUTING.md")
SELF = Path(__file__).resolve()

PRIVATE_CITATION = re.compile(
    r"""
      shared[/]reference                    # the notes' folder, with or without /work/
    | /work/shared                          # the workspace's shared folder
    | \breference/[\w.-]+\.md\b             # reference/vllm.md, reference/mig.md, ...
    | \breferences?\s*§                     # (reference §2.2), reference §1.2/§1.6
    | \bthe\ reference\ (?:names|gives|puts|covers|says|states|lists)\b
    | \b(?:given\ by|according\ to|per)\ the\ reference\b
    | \bthe\ reference's\ (?:"|worked|figures?|tables?|numbers?)
    """,
    re.IGNORECASE | re.VERBOSE,
)


def _scanned() -> list[Path]:
    paths: list[Path] = []
    for folder in SCANNED_DIRS:
        for path in sorted((REPO / folder).rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts and path.resolve() != SELF:
                paths.append(path)
    paths.extend(REPO / name for name in SCANNED_FILES if (REPO / name).is_file())
    return paths


_LINE_PREFIX = re.compile(r"^\s*(?:#+|//|\*|\||>)?\s*")


def _violations(text: str) -> list[tuple[int, str]]:
    """``(line number, line)`` of each private citation; a phrase wrapped onto the next line
    (comment markers and indentation dropped) counts for the line where it starts."""
    lines = text.splitlines()
    found = []
    for index, line in enumerate(lines):
        following = lines[index + 1] if index + 1 < len(lines) else ""
        head = line.rstrip()
        joined = f"{head} {_LINE_PREFIX.sub('', following)}"
        spans_break = any(
            match.start() < len(head) < match.end() for match in PRIVATE_CITATION.finditer(joined)
        )
        if spans_break or PRIVATE_CITATION.search(line):
            found.append((index + 1, line.strip()))
    return found


@pytest.mark.parametrize(
    "line",
    [
        "also NVIDIA's Multi-Process Service (reference/vllm.md §3.1).",
        "(see ``reference/dra.md`` §3):",
        "(``shared" "/reference/vllm.md`` §2.1–2.7)::",  # split: this file cites nothing
        "# see /work/shared" "/reference/vllm.md §2.3 for the per-model sources.",
        "# shared" "/reference/mig.md for the full citations):",
        "| `reference/dra-2026.md` |",
        "(reference §2.2). B200/GB200 placements",
        "(not behind --api-key, reference §1.2/§1.6);",
        'env["VLLM_NO_USAGE_STATS"] = "1"  # reference §1.3',
        "The reference names no tag; 0.17.1 is a published tag",
        "null where the reference gives none.",
        "workspaces. The reference puts it at ~0.5–2 GiB",
        "# Every MIG-capable GPU the reference covers, by catalog id.",
        '"""Spot checks of figures given by the reference and the driver."""',
        "(4.156 bits at group 128; the reference's \"≈0.52 bytes\").",
        "# ---- sanity anchors from the reference's worked examples (§2.4) ----",
    ],
)
def test_pattern_flags_private_citations(line: str) -> None:
    assert PRIVATE_CITATION.search(line), line


@pytest.mark.parametrize(
    "line",
    [
        "Resolve cross-document references and defaults into an immutable per-cluster Plan.",
        "References are checked here, each error located where the reference is written:",
        "# the reference may sit in any file; re-dump everything",
        "hint='store it in a Secret and reference it (auth.hf_token / '",
        "a ResourceClaim reference to a claim template",
        "**Secrets by reference only.** The Hugging Face token and API keys reach pods",
        "Written for gen from the upstream API reference.",
        "Ordering follows semver 2.0.0 §11; build metadata is ignored by comparison.",
        "and last blocks for Meta's FP8 405B, per the Llama 3 paper §6.2).",
        "(NVIDIA/mig-parted ``api/spec/v1/spec.go``@v0.15.0)",
        "https://docs.nvidia.com/datacenter/tesla/mig-user-guide/",
        "kubernetes-sigs/dra-driver-nvidia-gpu cmd/gpu-kubelet-plugin/deviceinfo.go@v25.12.0",
        "| `GEN003` | a reference to something that does not exist (GPU class, cluster) |",
    ],
)
def test_pattern_spares_ordinary_prose(line: str) -> None:
    assert not PRIVATE_CITATION.search(line), line


def test_wrapped_phrase_is_found_where_it_starts() -> None:
    text = "# Engine counts are null where the reference\n# gives none. Fine.\n"
    assert _violations(text) == [(1, "# Engine counts are null where the reference")]
    assert _violations("# the reference\n# may sit in any file\n") == []


def test_scan_covers_the_project() -> None:
    rels = {path.relative_to(REPO).as_posix() for path in _scanned()}
    for expected in ("README.md", "gen/data/gpus.yaml", "docs/gitops.md", "gen/serving/fit.py"):
        assert expected in rels
    assert any(rel.startswith("templates/") for rel in rels)
    assert "tests/test_citations.py" not in rels


def test_no_private_citations() -> None:
    found: list[str] = []
    for path in _scanned():
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        rel = path.relative_to(REPO).as_posix()
        found.extend(f"{rel}:{number}: {line}" for number, line in _violations(text))
    assert not found, (
        "cite a public source (a URL, or owner/repo path@tag), not private notes:\n"
        + "\n".join(found)
    )
