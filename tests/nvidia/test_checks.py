"""MIG lint rules (GEN1xx) fire at the line to change."""

from __future__ import annotations

from pathlib import Path

from gen.errors import Finding, Severity
from tests.helpers import LINT_BASE, errors_of, lint_fleet


def test_impossible_mig_layout(tmp_path: Path) -> None:
    """A layout that needs more than the 8 memory slices of an H100 is GEN101 in the layout
    file (what to edit), the pool that uses it as the related location."""
    findings = lint_fleet(tmp_path, **{"layout.yaml": LINT_BASE["layout.yaml"].replace(
        "{3g.40gb: 1, 2g.20gb: 1, 1g.10gb: 2}", "{3g.40gb: 2, 2g.20gb: 1}")})
    errors = errors_of(findings)
    assert errors and all(f.rule in ("GEN101", "GEN304") for f in errors)
    mig = [f for f in errors if f.rule == "GEN101"]
    assert mig[0].location is not None and mig[0].location.path.endswith("layout.yaml")
    assert mig[0].location.line == 4
    assert mig[0].key_path.startswith("profiles")
    (used,) = mig[0].related
    assert used.path.endswith("cluster.yaml") and used.line == 16
    assert used.note == "used by pool 'mig' of cluster 'prod'"

def test_layout_change_warns_with_runbook(tmp_path: Path) -> None:
    """Changing a pool's layout is a warning that names the runbook."""
    cluster = LINT_BASE["cluster.yaml"].replace(
        "mig_layout: mixed", "mig_layout: mixed\n    previous_mig_layout: all-1g"
    )
    findings = lint_fleet(tmp_path, **{"cluster.yaml": cluster})
    (warning,) = [f for f in findings if f.rule == "GEN103"]
    assert warning.severity is Severity.WARNING
    assert "mig-runbook.md" in warning.hint


# --- dynamic MIG (GEN110–GEN119) ------------------------------------------------------------

DYNAMIC = """\
kind: Cluster
name: prod
kubernetes_version: "{version}"
allocation: {allocation}
dra_driver:
  version: "{chart}"
  feature_gates: {gates}
node_pools:
  - name: h100
    gpu: h100-sxm5-80gb
    gpus_per_node: 8
    nodes: 2
    driver_version: "580.95.05"
    mig: dynamic
    labels: {labels}
{extra}"""

_LABELS = '{nvidia.com/gpu.deploy.mig-manager: "false"}'


def _dynamic(tmp_path: Path, *, version: str = "1.36.1", allocation: str = "dra",
             chart: str = "25.12.0", gates: str = "{}", labels: str = _LABELS,
             extra: str = "") -> list[Finding]:
    cluster = DYNAMIC.format(version=version, allocation=allocation, chart=chart, gates=gates,
                             labels=labels, extra=extra)
    tmp_path.mkdir(parents=True, exist_ok=True)
    service = LINT_BASE["service.yaml"]
    # The base layout stays for an extra pool that names it (mig_layout: mixed).
    layout = LINT_BASE["layout.yaml"] if "mig_layout:" in extra else ""
    return lint_fleet(tmp_path, **{"cluster.yaml": cluster, "layout.yaml": layout,
                                   "service.yaml": service})


def _rules(findings: list[Finding]) -> set[str]:
    return {f.rule for f in findings if f.rule.startswith("GEN11")}


def _line(tmp_path: Path, finding: Finding) -> str:
    assert finding.location is not None
    text = (tmp_path / "profiles" / "cluster.yaml").read_text().splitlines()
    return text[finding.location.line - 1]


def test_dynamic_pool_near_miss_is_clean(tmp_path: Path) -> None:
    """A dynamic pool on 1.36 with chart 25.12.0 and the mig-manager label: no GEN11x."""
    assert _rules(_dynamic(tmp_path)) == set()


def test_gen110_dynamic_pool_without_dra(tmp_path: Path) -> None:
    """A dynamic pool on a device-plugin cluster is GEN110 at its mig line."""
    (f,) = [f for f in _dynamic(tmp_path, allocation="device-plugin") if f.rule == "GEN110"]
    assert "mig: dynamic" in _line(tmp_path, f)


def test_gen111_dynamic_pool_on_a_gpu_without_mig(tmp_path: Path) -> None:
    """'mig: dynamic' on L4s is GEN111 (near miss: the H100 pool above)."""
    cluster = DYNAMIC.format(version="1.36.1", allocation="dra", chart="25.12.0", gates="{}",
                             labels=_LABELS, extra="").replace("h100-sxm5-80gb", "l4")
    findings = lint_fleet(tmp_path, **{"cluster.yaml": cluster, "layout.yaml": ""})
    (f,) = [f for f in findings if f.rule == "GEN111"]
    assert "mig: dynamic" in _line(tmp_path, f)


def test_gen112_not_before_1_33(tmp_path: Path) -> None:
    """1.32 has no partitionable devices: GEN112 at kubernetes_version."""
    (f,) = [f for f in _dynamic(tmp_path, version="1.32.4") if f.rule == "GEN112"]
    assert "kubernetes_version" in _line(tmp_path, f)


def test_gen113_chart_without_dynamic_mig(tmp_path: Path) -> None:
    """Chart 25.8.1 has no DynamicMIG gate: GEN113 at dra_driver.version; v0.4.1 has it."""
    (f,) = [f for f in _dynamic(tmp_path, chart="25.8.1") if f.rule == "GEN113"]
    assert "25.8.1" in _line(tmp_path, f)
    assert "GEN113" not in _rules(_dynamic(tmp_path / "near", chart="0.4.1"))


def test_gen114_gate_declared_against_the_pools(tmp_path: Path) -> None:
    """DynamicMIG declared off beside a dynamic pool, or on without one, is GEN114 at it."""
    (f,) = [f for f in _dynamic(tmp_path, gates="{DynamicMIG: false}") if f.rule == "GEN114"]
    assert "DynamicMIG" in _line(tmp_path, f)
    cluster = LINT_BASE["cluster.yaml"].replace(
        "allocation: dra\n", "allocation: dra\ndra_driver:\n  feature_gates: {DynamicMIG: true}\n")
    (tmp_path / "b").mkdir()
    (g,) = [f for f in lint_fleet(tmp_path / "b", **{"cluster.yaml": cluster})
            if f.rule == "GEN114"]
    assert g.severity is Severity.ERROR and "no pool says 'mig: dynamic'" in g.message
    assert "GEN114" not in _rules(_dynamic(tmp_path / "c", gates="{DynamicMIG: true}"))


_L4_POOL = """\
  - name: l4
    gpu: l4
    gpus_per_node: 1
    nodes: 1
    driver_version: "580.95.05"
"""


def test_gen115_non_mig_pool_on_chart_25_12(tmp_path: Path) -> None:
    """An L4 pool beside dynamic MIG on 25.12.0 is GEN115 at its gpu line; 0.4.0 fixes it."""
    (f,) = [f for f in _dynamic(tmp_path, extra=_L4_POOL) if f.rule == "GEN115"]
    assert "gpu: l4" in _line(tmp_path, f)
    assert "GEN115" not in _rules(_dynamic(tmp_path / "near", chart="0.4.0", extra=_L4_POOL))


def test_gen116_static_layout_beside_dynamic(tmp_path: Path) -> None:
    """A static layout in a dynamic-MIG cluster is GEN116 at its mig_layout line."""
    pool = ("  - name: mig\n    gpu: h100-sxm5-80gb\n    nodes: 1\n"
            '    driver_version: "580.95.05"\n    mig_layout: mixed\n')
    cluster = DYNAMIC.format(version="1.36.1", allocation="dra", chart="25.12.0", gates="{}",
                             labels=_LABELS, extra=pool)
    findings = lint_fleet(tmp_path, **{"cluster.yaml": cluster})
    (f,) = [f for f in findings if f.rule == "GEN116"]
    assert "mig_layout: mixed" in _line(tmp_path, f)


def test_gen117_mig_capable_pool_without_mig_dynamic(tmp_path: Path) -> None:
    """A whole-GPU A100 pool beside a dynamic one is GEN117 at its gpu line."""
    pool = ("  - name: a100\n    gpu: a100-sxm4-80gb\n    nodes: 1\n"
            '    driver_version: "580.95.05"\n')
    (f,) = [f for f in _dynamic(tmp_path, extra=pool) if f.rule == "GEN117"]
    assert "gpu: a100-sxm4-80gb" in _line(tmp_path, f)


_STATIC_POOL = ("  - name: mig\n    gpu: h100-sxm5-80gb\n    nodes: 1\n"
                '    driver_version: "580.95.05"\n    mig_layout: mixed\n')


def test_gen118_not_needed_where_gen_turns_mig_manager_off(tmp_path: Path) -> None:
    """Every MIG pool dynamic: gen renders mig-manager off, so no label is needed."""
    assert "GEN118" not in _rules(_dynamic(tmp_path, labels="{gen.dev/pool: h100}"))


def test_gen118_mig_manager_label(tmp_path: Path) -> None:
    """Beside a static layout (mig-manager stays on), a dynamic pool without
    nvidia.com/gpu.deploy.mig-manager: "false" is GEN118 at its labels."""
    (f,) = [f for f in _dynamic(tmp_path, labels="{gen.dev/pool: h100}", extra=_STATIC_POOL)
            if f.rule == "GEN118"]
    assert "labels" in _line(tmp_path, f)
    assert "static MIG layouts" in f.message
    assert "GEN118" not in _rules(_dynamic(
        tmp_path / "near", labels='{nvidia.com/gpu.deploy.mig-manager: "false", a: b}',
        extra=_STATIC_POOL))


def test_gen118_mig_manager_label_declared_on(tmp_path: Path) -> None:
    """The label declared "true" beside a static layout is GEN118 at the label itself."""
    labels = '\n      gen.dev/pool: h100\n      nvidia.com/gpu.deploy.mig-manager: "true"'
    (f,) = [f for f in _dynamic(tmp_path, labels=labels, extra=_STATIC_POOL)
            if f.rule == "GEN118"]
    assert 'nvidia.com/gpu.deploy.mig-manager: "true"' in _line(tmp_path, f)


def test_gen119_conflicting_driver_gates(tmp_path: Path) -> None:
    """MPSSupport beside DynamicMIG stops the driver: GEN119 at the MPSSupport gate."""
    (f,) = [f for f in _dynamic(tmp_path, gates="{MPSSupport: true}") if f.rule == "GEN119"]
    assert "MPSSupport" in _line(tmp_path, f)
    assert "GEN119" not in _rules(_dynamic(tmp_path / "near",
                                           gates="{TimeSlicingSettings: true}"))


def test_driver_values_carry_dynamic_mig_only_when_possible() -> None:
    """gen sets DynamicMIG for dynamic pools and drops a user's gate everywhere else."""
    from gen.models.cluster import Cluster
    from gen.nvidia.dynamic import driver_gates

    def cluster(version: str, mig: str | None, gates: dict[str, bool]) -> Cluster:
        pool = {"name": "p", "gpu": "h100-sxm5-80gb", "nodes": 1, "driver_version": "580.95.05"}
        if mig:
            pool["mig"] = mig
        return Cluster.model_validate({
            "kind": "Cluster", "name": "c", "kubernetes_version": version, "allocation": "dra",
            "dra_driver": {"feature_gates": gates}, "node_pools": [pool],
        })

    assert driver_gates(cluster("1.36.1", "dynamic", {})) == {"DynamicMIG": True}
    assert driver_gates(cluster("1.32.4", None, {"DynamicMIG": True})) == {}
    assert driver_gates(cluster("1.35.0", "dynamic", {"MPSSupport": False})) == {
        "MPSSupport": False}


def test_hint_command_reproduces_the_problem(tmp_path: Path) -> None:
    """The 'gen mig check' of a GEN101 hint is the failing per-GPU entry's layout: run as
    written, it fails (it used to check the first entry, a valid one, and exit 0)."""
    import shlex

    from click.testing import CliRunner

    from gen.cli import cli

    layout = LINT_BASE["layout.yaml"].replace(
        "profiles: {3g.40gb: 1, 2g.20gb: 1, 1g.10gb: 2}",
        "per_gpu:\n  - {gpus: [0, 1, 2, 3], profiles: {3g.40gb: 1, 2g.20gb: 1, 1g.10gb: 2}}\n"
        "  - {gpus: [4, 5, 6, 7], profiles: {3g.40gb: 3}}")
    (finding, *_) = [f for f in lint_fleet(tmp_path, **{"layout.yaml": layout})
                     if f.rule == "GEN101"]
    assert finding.location is not None and finding.location.line == 6  # the second entry
    command = finding.hint.removeprefix("check with: ")
    assert command == "gen mig check --gpu h100-sxm5-80gb 3g.40gb=3"
    result = CliRunner().invoke(cli, shlex.split(command)[1:])
    assert result.exit_code == 1


def test_layout_no_pool_uses_is_still_checked(tmp_path: Path) -> None:
    """An 'l4'-style layout with a profile that does not exist, used by no pool, is GEN101
    at the profile in its own file."""
    layout = LINT_BASE["layout.yaml"] + (
        "---\nkind: MIGLayout\nname: spare\ngpu: h100-sxm5-80gb\nprofiles: {9g.999gb: 4}\n")
    (finding,) = [f for f in lint_fleet(tmp_path, **{"layout.yaml": layout})
                  if f.rule == "GEN101"]
    assert finding.key_path == "profiles.9g.999gb"
    assert finding.location is not None and finding.location.line == 9
    assert "used by no pool yet" in finding.message


def test_valid_layout_no_pool_uses_is_clean(tmp_path: Path) -> None:
    """The near miss: a valid spare layout."""
    layout = LINT_BASE["layout.yaml"] + (
        "---\nkind: MIGLayout\nname: spare\ngpu: h100-sxm5-80gb\nprofiles: {1g.10gb: 7}\n")
    assert errors_of(lint_fleet(tmp_path, **{"layout.yaml": layout})) == []


def test_unused_layout_on_a_gpu_without_mig(tmp_path: Path) -> None:
    """A spare layout for the L4 (no MIG): GEN104 at its gpu line."""
    layout = LINT_BASE["layout.yaml"] + (
        "---\nkind: MIGLayout\nname: spare\ngpu: l4\nprofiles: {1g.6gb: 4}\n")
    (finding,) = [f for f in lint_fleet(tmp_path, **{"layout.yaml": layout})
                  if f.rule == "GEN104"]
    assert finding.key_path == "gpu" and finding.location is not None
    assert finding.location.line == 8
