"""Security lint rules (GEN5xx) fire at the line to change."""

from __future__ import annotations

from pathlib import Path

import pytest

from gen.errors import ProfileValidationError
from tests.helpers import LINT_BASE, lint_fleet


def test_literal_token_in_profile(tmp_path: Path) -> None:
    """A Hugging Face token pasted into a profile is GEN501 at its key."""
    service = LINT_BASE["service.yaml"] + "serving: {max_model_len: 32768, extra_args: " \
        "['--revision=hf_abcdefghijklmnopqrstuvwxyz0123456789']}\n"
    service = service.replace("serving: {max_model_len: 32768}\n", "", 1)
    (finding,) = [
        f for f in lint_fleet(tmp_path, **{"service.yaml": service}) if f.rule == "GEN501"
    ]
    assert finding.key_path == "serving.extra_args[0]"
    assert "hf_abc" not in finding.message


def test_literal_token_in_a_mapping_key(tmp_path: Path) -> None:
    """A token pasted as a key (here a node label's name) is GEN501 at the key."""
    token = "hf_abcdefghijklmnopqrstuvwxyz0123456789"
    cluster = LINT_BASE["cluster.yaml"].replace(
        "    nodes: 2\n", f"    nodes: 2\n    labels: {{{token}: x}}\n", 1)
    findings = [f for f in lint_fleet(tmp_path, **{"cluster.yaml": cluster})
                if f.rule == "GEN501"]
    (finding,) = findings
    assert finding.key_path.endswith("labels.<redacted>")  # the key path never echoes it
    assert finding.location is not None and finding.location.line == 10


def test_token_where_a_secret_name_belongs(tmp_path: Path) -> None:
    """A token pasted as a Secret's name fails the name's syntax too: GEN501 is the one
    error there, and no error of the run echoes the token."""
    token = "hf_abcdefghijklmnopqrstuvwxyz0123456789"
    service = LINT_BASE["service.yaml"] + f"auth: {{hf_token: {{name: {token}, key: t}}}}\n"
    with pytest.raises(ProfileValidationError) as info:
        lint_fleet(tmp_path, **{"service.yaml": service})
    (finding,) = info.value.findings
    assert (finding.rule, finding.key_path) == ("GEN501", "auth.hf_token.name")
    assert token not in info.value.format_message()


def test_plain_label_key_is_not_a_secret(tmp_path: Path) -> None:
    """The near miss: an ordinary label key."""
    cluster = LINT_BASE["cluster.yaml"].replace(
        "    nodes: 2\n", "    nodes: 2\n    labels: {hf_cache: x}\n", 1)
    assert [f for f in lint_fleet(tmp_path, **{"cluster.yaml": cluster})
            if f.rule == "GEN501"] == []


@pytest.mark.parametrize("flag", ["--api_key=abc", "--hf_token", "--api-key=abc", "--hf_token=x"])
def test_secret_flags_in_every_spelling_vllm_reads(tmp_path: Path, flag: str) -> None:
    """vLLM reads '--api_key' as '--api-key': every spelling is refused in extra_args."""
    service = LINT_BASE["service.yaml"].replace(
        "serving: {max_model_len: 32768}", f"serving: {{max_model_len: 32768, extra_args: "
        f"['{flag}']}}")
    with pytest.raises(ProfileValidationError) as info:
        lint_fleet(tmp_path, **{"service.yaml": service})
    (finding,) = info.value.findings
    assert finding.key_path == "serving.extra_args"
    assert "takes a secret" in finding.message


def test_api_key_file_flag_is_fine(tmp_path: Path) -> None:
    """The near miss: a flag that only starts like one."""
    service = LINT_BASE["service.yaml"].replace(
        "serving: {max_model_len: 32768}",
        "serving: {max_model_len: 32768, extra_args: ['--api_key_file=/k']}")
    assert [f.rule for f in lint_fleet(tmp_path, **{"service.yaml": service})
            if f.rule.startswith("GEN5")] == []
