"""Security lint rules (GEN5xx) fire at the line to change."""

from __future__ import annotations

from pathlib import Path

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
