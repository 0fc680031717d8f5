"""The gen CLI: exit codes, messages on stderr without tracebacks, schema, lint JSON, --check."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from gen.cli import VERSION
from tests.helpers import REPO, invoke, snapshot_tree, write_tree


def _render(runner: CliRunner, root: Path, *extra: str) -> Result:
    return invoke(runner, "render", "--profiles", root / "profiles", "--out", root / "out",
                   "--validator", "embedded", *extra)


def _add_unknown_key(root: Path) -> tuple[Path, int]:
    """Add 'gpuz: 1' under a service's gpu: mapping; return the file and that line."""
    path = root / "profiles/services/qwen-7b-edge.yaml"
    lines = path.read_text().splitlines(keepends=True)
    at = next(i for i, line in enumerate(lines) if line.startswith("gpu:"))
    lines.insert(at + 1, "  gpuz: 1\n")
    path.write_text("".join(lines))
    return path, at + 2


def test_version(runner: CliRunner) -> None:
    """--version prints 'gen <version>' and exits 0."""
    result = invoke(runner, "--version")
    assert result.exit_code == 0
    assert result.stdout == f"gen {VERSION}\n"


def test_help_lists_commands(runner: CliRunner) -> None:
    """--help lists render, lint and schema."""
    result = invoke(runner, "--help")
    assert result.exit_code == 0
    for command in ("render", "lint", "schema"):
        assert command in result.stdout


@pytest.mark.parametrize("args", [
    ("--bogus",),
    ("render", "--bogus"),
    ("render", "--diff"),
    ("render", "--validator", "maybe"),
    ("lint", "--format", "xml"),
    ("no-such-command",),
])
def test_usage_errors_exit_2(runner: CliRunner, fleet: Path, args: tuple[str, ...]) -> None:
    """Unknown options, bad choices, unknown commands and --diff without --check exit 2."""
    extra = ("--profiles", fleet / "profiles") if args[0] in ("render", "lint") else ()
    result = invoke(runner, *args, *extra)
    assert result.exit_code == 2, result.output
    assert "Usage" in result.stderr or "Error" in result.stderr
    assert not (Path.cwd() / "--bogus").exists()


def test_diff_without_check_says_why(runner: CliRunner, fleet: Path) -> None:
    """--diff alone is a usage error that names --check, and writes nothing."""
    result = _render(runner, fleet, "--diff")
    assert result.exit_code == 2
    assert "--check" in result.stderr
    assert not (fleet / "out").exists()


def test_schema_is_valid_json_and_committed(runner: CliRunner) -> None:
    """'gen schema' prints valid JSON equal to the committed schema/gen-profile.schema.json."""
    result = invoke(runner, "schema")
    assert result.exit_code == 0
    schema = json.loads(result.stdout)
    committed = (REPO / "schema/gen-profile.schema.json").read_text(encoding="utf-8")
    assert schema == json.loads(committed), "run: gen schema -o schema/gen-profile.schema.json"
    assert result.stdout == committed


def test_render_writes_and_reports(runner: CliRunner, fleet: Path) -> None:
    """render exits 0, lists added files, and a second render reports 'unchanged'."""
    first = _render(runner, fleet)
    assert first.exit_code == 0, first.output
    assert "+ edge-l4/kustomization.yaml" in first.stdout
    second = _render(runner, fleet)
    assert second.exit_code == 0
    assert "unchanged" in second.stdout


def test_lint_clean_fleet(runner: CliRunner, fleet: Path) -> None:
    """lint of the example fleet exits 0; the JSON form has version, findings and summary."""
    result = invoke(runner, "lint", "--profiles", fleet / "profiles", "--format", "json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert set(data) == {"version", "findings", "suppressed", "summary"}
    assert data["version"] == 1
    assert set(data["summary"]) == {"error", "warning", "info", "suppressed"}
    assert data["summary"]["error"] == 0
    counts = data["summary"]
    assert counts["error"] + counts["warning"] + counts["info"] == len(data["findings"])
    assert counts["suppressed"] == len(data["suppressed"])
    keys = {"rule", "severity", "message", "path", "line", "column", "key_path", "hint",
            "related"}
    assert all(set(f) == keys for f in data["findings"])


def test_lint_json_on_unknown_key(runner: CliRunner, fleet: Path) -> None:
    """lint --format json reports invalid profiles as located findings and exits 1."""
    _, line = _add_unknown_key(fleet)
    result = invoke(runner, "lint", "--profiles", fleet / "profiles", "--format", "json")
    assert result.exit_code == 1
    data = json.loads(result.stdout)
    assert data["version"] == 1 and data["summary"]["error"] == 1
    (finding,) = data["findings"]
    assert finding == {
        "rule": "GEN002", "severity": "error", "message": "unknown key 'gpuz'",
        "path": "profiles/services/qwen-7b-edge.yaml", "line": line, "column": 3,
        "key_path": "gpu.gpuz", "hint": finding["hint"], "related": [],
    }
    assert "gpu_class" in finding["hint"]


@pytest.mark.parametrize("command", ["render", "lint"])
def test_unknown_key_exit_1_located_out_untouched(runner: CliRunner, fleet: Path,
                                                  command: str) -> None:
    """An unknown key: exit 1, file:line and key path on stderr, no traceback, out/ untouched."""
    assert _render(runner, fleet).exit_code == 0
    before = snapshot_tree(fleet / "out")
    _, line = _add_unknown_key(fleet)
    args: list[str | Path] = (["--out", fleet / "out", "--validator", "embedded"]
                              if command == "render" else [])
    result = invoke(runner, command, "--profiles", fleet / "profiles", *args)
    assert result.exit_code == 1
    text = result.stderr if command == "render" else result.stdout
    rel = "profiles/services/qwen-7b-edge.yaml"  # relative to the fleet repo, not the cwd
    assert f"{rel}:{line}:3: error GEN002: gpu.gpuz: unknown key" in text
    assert snapshot_tree(fleet / "out") == before


@pytest.mark.parametrize("command", ["render", "lint"])
def test_broken_yaml_exit_1_located_out_untouched(runner: CliRunner, fleet: Path,
                                                  command: str) -> None:
    """Broken YAML: exit 1, file:line:col on the output, no traceback, out/ untouched."""
    assert _render(runner, fleet).exit_code == 0
    before = snapshot_tree(fleet / "out")
    write_tree(fleet, {"profiles/broken.yaml": "kind: Cluster\nname: [x\n"})
    args: list[str | Path] = ["--out", fleet / "out"] if command == "render" else []
    result = invoke(runner, command, "--profiles", fleet / "profiles", *args)
    assert result.exit_code == 1
    where = "profiles/broken.yaml:2:7: error GEN001: YAML syntax error"
    assert where in result.output
    assert snapshot_tree(fleet / "out") == before


def test_missing_profiles_folder(runner: CliRunner, tmp_path: Path) -> None:
    """A profiles folder that does not exist is exit 1 with a message, not a traceback."""
    result = invoke(runner, "render", "--profiles", tmp_path / "nope", "--out", tmp_path / "out")
    assert result.exit_code == 1
    assert "does not exist" in result.stderr
    assert not (tmp_path / "out").exists()


def test_check_lists_added_changed_removed(runner: CliRunner, fleet: Path) -> None:
    """render --check exits 1 on a stale out/, listing + added, ~ changed and - removed files."""
    assert _render(runner, fleet).exit_code == 0
    assert _render(runner, fleet, "--check").exit_code == 0
    out = fleet / "out"
    before = snapshot_tree(out)
    changed = out / "edge-l4/workloads/edge/service-qwen-7b.yaml"
    changed.write_text(changed.read_text().replace("port: 8000", "port: 8001"))
    (out / "edge-l4/kustomization.yaml").unlink()
    stale = out / "edge-l4/workloads/edge/configmap-stale.yaml"
    stale.write_text("# Generated by gen from profiles/x.yaml. Do not edit.\nkind: ConfigMap\n")
    edited = snapshot_tree(out)
    result = _render(runner, fleet, "--check")
    assert result.exit_code == 1
    lines = result.stderr.splitlines()
    assert "+ edge-l4/kustomization.yaml" in lines
    assert "~ edge-l4/workloads/edge/service-qwen-7b.yaml" in lines
    assert "- edge-l4/workloads/edge/configmap-stale.yaml" in lines
    assert "1 added, 1 changed, 1 removed" in result.stderr
    assert "@@" not in result.stderr
    assert snapshot_tree(out) == edited != before


def test_check_diff_prints_unified_diff(runner: CliRunner, fleet: Path) -> None:
    """render --check --diff adds a unified diff of the stale files."""
    assert _render(runner, fleet).exit_code == 0
    changed = fleet / "out/edge-l4/workloads/edge/service-qwen-7b.yaml"
    changed.write_text(changed.read_text().replace("port: 8000", "port: 8001"))
    result = _render(runner, fleet, "--check", "--diff")
    assert result.exit_code == 1
    rel = "edge-l4/workloads/edge/service-qwen-7b.yaml"
    assert f"--- a/{rel}\n+++ b/{rel}\n" in result.stderr
    assert "-    port: 8001\n+    port: 8000\n" in result.stderr


WIDGET_CRD = """
    apiVersion: apiextensions.k8s.io/v1
    kind: CustomResourceDefinition
    metadata: {name: widgets.example.com}
    spec:
      group: example.com
      names: {kind: Widget, plural: widgets}
      scope: Namespaced
      versions:
        - {name: v1, served: true, storage: true,
           schema: {openAPIV3Schema: {type: object, properties: {spec: {type: object}}}}}
"""


def test_crds_beside_profiles_and_crds_option(runner: CliRunner, fleet: Path) -> None:
    """crds/ beside --profiles is read by default; --crds DIR names another folder."""
    write_tree(fleet, {"templates/core/namespace.yaml.j2": """
        apiVersion: example.com/v1
        kind: Widget
        metadata: {name: {{ name|tojson }}}
        spec: {}
    """})
    failed = _render(runner, fleet)
    assert failed.exit_code == 1
    assert "GEN020" in failed.stderr and "no CRD for it" in failed.stderr
    write_tree(fleet, {"elsewhere/widget.yaml": WIDGET_CRD})
    assert _render(runner, fleet, "--crds", str(fleet / "elsewhere")).exit_code == 0, \
        failed.stderr
    write_tree(fleet, {"crds/widget.yaml": WIDGET_CRD, "crds/junk.yaml": "kind: [\n"})
    linted = invoke(runner, "lint", "--profiles", fleet / "profiles")
    assert linted.exit_code == 1
    assert "crds/junk.yaml:" in linted.stdout and "GEN023" in linted.stdout
    (fleet / "crds/junk.yaml").unlink()
    assert _render(runner, fleet).exit_code == 0
