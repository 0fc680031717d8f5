"""The render cache (gen.emit.cache): it can make a render faster, never different.

A cached render of an edited fleet equals a ``no_cache`` render of the same fleet byte for
byte (the whole out/ tree, records included); a hand edit or a deletion in out/ is still
found; a no-op render skips every cluster and rewrites nothing; the records are the same
bytes in another folder under another hash seed; gen's version and template overrides
invalidate.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gen.emit.cache import CACHE_DIR, FLEET_RECORD, Fingerprinter, parse_record, record_path
from gen.emit.render import BUILTIN_TEMPLATES, make_environment
from gen.errors import GenError, StaleOutputError
from gen.pipeline import RenderResult, load_plan, render
from tests.helpers import REPO, copy_fleet, snapshot_tree, stat_tree

CLUSTERS = ("edge-l4", "mac-lab", "prod-us-east", "research-eu", "research-multinode",
            "shared-lab")


def _render(root: Path, **kwargs: Any) -> RenderResult:
    templates = root / "templates"
    kwargs.setdefault("validator", "embedded")
    return render(root / "profiles", root / "out", base=root,
                  templates_dir=templates if templates.is_dir() else None, **kwargs)


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The example fleet, rendered once (out/ and its cache)."""
    root = copy_fleet(tmp_path_factory.mktemp("base") / "fleet")
    _render(root)
    return root


def _copy(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst)
    return dst


# --------------------------------------------------------------------------- edits

# (file under the fleet root, pattern with one group: the value replaced, values to try)
EDITS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("profiles/services/qwen-7b-edge.yaml", r"^replicas: (\d+)$", ("1", "2", "4")),
    ("profiles/services/llama-8b-mig.yaml", r"^replicas: (\d+)$", ("1", "3")),
    ("profiles/services/llama-70b.yaml", r"^  max_replicas: (\d+)$", ("2", "3", "6")),
    ("profiles/services/qwen-32b.yaml", r"^  max_model_len: (\d+)$", ("16384", "8192")),
    ("profiles/services/llama-8b-vulkan.yaml", r"^  memory: (\S+)$", ("12Gi", "16Gi")),
    ("profiles/clusters/edge-l4.yaml", r"^    nodes: (\d+)$", ("2", "4", "9")),
    ("profiles/clusters/prod-us-east.yaml", r"^    nodes: (\d+)$", ("3", "5")),
    ("profiles/clusters/research-eu.yaml", r"^    nodes: (\d+)$", ("1", "3")),
    ("profiles/gpu-classes/h100.yaml", r'^  min_compute_capability: "([^"]+)"$',
     ("8.0", "9.0")),
    ("profiles/services/llama-70b-mac.yaml", r"^max_context: (\d+)$", ("65536",)),
    ("profiles/services/llama-70b-mac.yaml", r"^  port: (\d+)$", ("8080",)),
    # a template override: a real change (an annotation) and one the output cannot show
    ("templates/core/namespace.yaml.j2", r'sync-wave: "(-?\d+)"', ("-21", "-20")),
)

LINT_EDITS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    # edits that reach the findings (and their lines), not the output: a warning (GEN103)
    # in a cluster, comments that move the lines below them (in the cluster, in the shared
    # MIG layout, in the shared GPU class), a layout error silenced inline (its marker must
    # stay on the finding's line), suppressions in gen.yaml and in a profile
    ("profiles/clusters/prod-us-east.yaml", r"^    mig_layout: (h100-mixed)$",
     ("h100-mixed\n    previous_mig_layout: all-1g",)),
    ("profiles/clusters/prod-us-east.yaml", r"^(kind: Cluster)$", ("# moved\nkind: Cluster",)),
    ("profiles/mig-layouts/h100-mixed.yaml", r"^(kind: MIGLayout)$",
     ("# moved\nkind: MIGLayout",)),
    ("profiles/gpu-classes/h100.yaml", r"^(kind: GPUClass)$", ("# moved\nkind: GPUClass",)),
    ("profiles/mig-layouts/h100-mixed.yaml", r"^  1g\.10gb: (.+)$",
     ("3  # gen: ignore[GEN101] testing the cache", "2", "3")),
    ("gen.yaml", r"^  ignore: (.*)$",
     ("[{rule: GEN103, reason: planned}]", "[]",
      "[{rule: GEN101, reason: tested, paths: ['profiles/mig-layouts/*']}]")),
    ("profiles/clusters/prod-us-east.yaml", r"^(allocation: dra)$",
     ("allocation: dra\nlint: {ignore: [{rule: GEN103, reason: planned}]}",)),
)


ALL_EDITS = EDITS + LINT_EDITS
"""What the property tests draw from: edits that reach the output, and edits that reach only
the findings (their lines, their suppressions), which the pre-build key must see too."""


def _apply(root: Path, edit: int, value: int) -> None:
    rel, pattern, values = ALL_EDITS[edit]
    target = root / rel
    if rel == "gen.yaml" and not target.exists():
        target.write_text("lint:\n  ignore: []\n", encoding="utf-8")
    if rel.startswith("templates/") and not target.exists():
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(BUILTIN_TEMPLATES / rel.removeprefix("templates/"), target)
    text = target.read_text(encoding="utf-8")
    new = values[value % len(values)]
    edited, n = re.subn(pattern, lambda m: m.group(0).replace(m.group(1), new, 1), text,
                        count=1, flags=re.MULTILINE)
    assert n == 1, (rel, pattern)
    if rel.startswith("templates/") and edited == text:
        edited += "{# an override the output cannot show #}\n"
    target.write_text(edited, encoding="utf-8")


def _outcome(root: Path, **kwargs: object) -> tuple[str, list[str], dict[str, bytes]]:
    """What a render did: 'ok' or the error's class, its findings (every field, in their
    order) and the whole out/ tree after it."""
    try:
        findings = list(_render(root, **kwargs).findings)
        status = "ok"
    except GenError as err:
        status, findings = type(err).__name__, list(err.findings)
    return status, [repr(f) for f in findings], snapshot_tree(root / "out")


EDIT_LISTS = st.lists(
    st.tuples(st.integers(0, len(ALL_EDITS) - 1), st.integers(0, 5)), min_size=1, max_size=3)


def _cached_equals_uncached(rendered: Path, tmp: Path, edits: list[tuple[int, int]]) -> None:
    cached = _copy(rendered, tmp / "cached")
    uncached = _copy(rendered, tmp / "uncached")
    for root in (cached, uncached):
        for edit, value in edits:
            _apply(root, edit, value)
    assert _outcome(cached) == _outcome(uncached, no_cache=True)
    # and once more, with nothing changed since: the cache now vouches for everything
    assert _outcome(cached) == _outcome(uncached, no_cache=True)


@pytest.mark.slow  # hypothesis: edited fleets rendered with and without the cache
@settings(max_examples=6, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture,
                                 HealthCheck.too_slow])
@given(edits=EDIT_LISTS)
def test_cached_render_equals_uncached(
    rendered: Path, tmp_path_factory: pytest.TempPathFactory, edits: list[tuple[int, int]]
) -> None:
    """For random edits, a cached render writes exactly what a full render writes."""
    _cached_equals_uncached(rendered, tmp_path_factory.mktemp("edit"), edits)


@pytest.mark.slow
@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture,
                                 HealthCheck.too_slow])
@given(edits=EDIT_LISTS)
def test_cached_render_equals_uncached_long(
    rendered: Path, tmp_path_factory: pytest.TempPathFactory, edits: list[tuple[int, int]]
) -> None:
    """The same, over many more edits."""
    _cached_equals_uncached(rendered, tmp_path_factory.mktemp("edit"), edits)


def _fingerprints(root: Path) -> dict[str, str | None]:
    templates = root / "templates"
    plan = load_plan(root / "profiles", base=root)
    fingerprinter = Fingerprinter(make_environment(templates if templates.is_dir() else None))
    return {c.name: fingerprinter.fingerprint(c) for c in plan.clusters}


# Which clusters each edit reaches (the example fleet's services name their clusters).
REACHES = {
    0: {"edge-l4"}, 1: {"prod-us-east"}, 2: {"prod-us-east"}, 3: {"research-eu"},
    4: {"mac-lab"}, 5: {"edge-l4"}, 6: {"prod-us-east"}, 7: {"research-eu"},
    8: {"prod-us-east", "shared-lab"}, 9: {"research-eu"}, 10: {"research-eu"},
    11: set(CLUSTERS),
}


@pytest.mark.parametrize("edit", range(len(EDITS)))
def test_an_edit_changes_the_fingerprints_of_the_clusters_it_reaches_only(
    rendered: Path, tmp_path: Path, edit: int
) -> None:
    """Editing a field a cluster uses changes that cluster's fingerprint, no other's."""
    root = _copy(rendered, tmp_path / "fleet")
    before = _fingerprints(root)
    _, _, values = EDITS[edit]
    # a value other than the current one (the first that differs)
    original = (root / EDITS[edit][0]).read_text(encoding="utf-8") if (
        root / EDITS[edit][0]).exists() else ""
    for index in range(len(values)):
        _apply(root, edit, index)
        if (root / EDITS[edit][0]).read_text(encoding="utf-8") != original:
            break
    after = _fingerprints(root)
    assert all(v is not None for v in (*before.values(), *after.values()))
    changed = {name for name in before if before[name] != after[name]}
    assert changed == REACHES[edit]


def test_check_after_a_hand_edit_exits_1_and_names_the_file(rendered: Path,
                                                            tmp_path: Path) -> None:
    """The fingerprint still matches, but the file no longer hashes to its record."""
    root = _copy(rendered, tmp_path / "fleet")
    target = root / "out/edge-l4/workloads/edge/deployment-qwen-7b.yaml"
    target.write_bytes(target.read_bytes().replace(b"replicas: 3", b"replicas: 30"))
    with pytest.raises(StaleOutputError) as err:
        _render(root, check=True)
    assert "~ edge-l4/workloads/edge/deployment-qwen-7b.yaml" in err.value.message
    proc = subprocess.run(
        [sys.executable, "-m", "gen", "render", "--check", "--validator", "embedded"],
        cwd=root, capture_output=True, text=True, check=False,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert proc.returncode == 1, proc.stderr
    assert "edge-l4/workloads/edge/deployment-qwen-7b.yaml" in proc.stderr
    result = _render(root)  # render repairs it; the other clusters stay cached
    assert result.skipped == ("mac-lab", "prod-us-east", "research-eu", "research-multinode",
            "shared-lab")
    assert snapshot_tree(root / "out") == snapshot_tree(rendered / "out")


@pytest.mark.parametrize("victim", [
    "out/edge-l4/workloads/edge/service-qwen-7b.yaml",
    "out/edge-l4/kustomization.yaml",
    "out/_hosts/llama-70b-mac/README.md",
])
def test_a_deleted_file_is_found(rendered: Path, tmp_path: Path, victim: str) -> None:
    root = _copy(rendered, tmp_path / "fleet")
    (root / victim).unlink()
    with pytest.raises(StaleOutputError) as err:
        _render(root, check=True)
    assert f"+ {victim.removeprefix('out/')}" in err.value.message
    _render(root)
    assert snapshot_tree(root / "out") == snapshot_tree(rendered / "out")


def test_an_extra_gen_file_is_found(rendered: Path, tmp_path: Path) -> None:
    """A file with gen's header in a cached cluster's folder: stale, then pruned."""
    root = _copy(rendered, tmp_path / "fleet")
    extra = root / "out/edge-l4/workloads/edge/service-extra.yaml"
    extra.write_bytes((root / "out/edge-l4/workloads/edge/service-qwen-7b.yaml").read_bytes())
    with pytest.raises(StaleOutputError) as err:
        _render(root, check=True)
    assert "- edge-l4/workloads/edge/service-extra.yaml" in err.value.message
    _render(root)
    assert not extra.exists()


def test_a_noop_render_skips_every_cluster_and_rewrites_nothing(rendered: Path,
                                                                tmp_path: Path) -> None:
    root = _copy(rendered, tmp_path / "fleet")
    # without the fleet record: the per-cluster path skips every cluster, and writes the
    # fleet record again, nothing else
    (root / "out" / FLEET_RECORD).unlink()
    result = _render(root)
    assert result.skipped == CLUSTERS
    assert not result.fast_path
    assert result.changes.empty
    assert snapshot_tree(root / "out") == snapshot_tree(rendered / "out")
    # with it: the fleet fast path, which touches nothing
    before = stat_tree(root / "out")
    result = _render(root)
    assert result.skipped == CLUSTERS
    assert result.fast_path
    assert result.changes.empty
    assert stat_tree(root / "out") == before
    check = _render(root, check=True)
    assert check.skipped == CLUSTERS
    full = _render(root, check=True, no_cache=True)
    assert full.skipped == ()
    assert full.outputs == check.outputs
    assert full.objects == check.objects


def test_validation_is_not_skipped_on_a_record_that_was_not_validated(
    rendered: Path, tmp_path: Path
) -> None:
    root = _copy(rendered, tmp_path / "fleet")
    shutil.rmtree(root / "out" / CACHE_DIR)
    _render(root, validator="none")
    record = parse_record((root / "out" / record_path("edge-l4")).read_bytes())
    assert record is not None and not record.validated
    assert _render(root, validator="none").skipped == CLUSTERS
    assert _render(root).skipped == ()
    assert snapshot_tree(root / "out") == snapshot_tree(rendered / "out")


def test_cluster_selection_keeps_the_other_records(rendered: Path, tmp_path: Path) -> None:
    root = _copy(rendered, tmp_path / "fleet")
    _apply(root, 0, 0)  # qwen-7b-edge replicas: edge-l4 only
    result = _render(root, clusters=("edge-l4",))
    assert result.skipped == ()
    records = sorted(p.name for p in (root / "out" / CACHE_DIR).iterdir()
                     if p.name != "_stat.json")  # machine-local
    assert records == [".gitignore", "_fleet.json", "_trust.json",
                       *(f"{c}.json" for c in CLUSTERS)]
    assert _render(root).skipped == CLUSTERS


@pytest.mark.slow  # renders in fresh interpreters
def test_records_are_deterministic(rendered: Path, tmp_path: Path) -> None:
    """A fresh copy rendered in another folder under another hash seed: the same bytes."""
    root = copy_fleet(tmp_path / "elsewhere" / "fleet")
    subprocess.run(
        [sys.executable, "-m", "gen", "render", "-q", "--validator", "embedded"],
        cwd=root, check=True, capture_output=True,
        env={**os.environ, "PYTHONPATH": str(REPO), "PYTHONHASHSEED": "12345"},
    )
    assert snapshot_tree(root / "out") == snapshot_tree(rendered / "out")
    record = json.loads((root / "out" / record_path("prod-us-east")).read_bytes())
    assert str(tmp_path) not in json.dumps(record)
    assert set(record) == {"cluster", "env", "files", "fingerprint", "format", "objects",
                           "validated", "prebuild", "lint", "lint_once"}


def test_check_fails_on_stale_records(rendered: Path, tmp_path: Path) -> None:
    """A damaged or missing record, which a render would rewrite, fails --check (by name),
    though every manifest is current; a render repairs them and --check passes again."""
    root = _copy(rendered, tmp_path / "fleet")
    (root / "out" / record_path("edge-l4")).write_text("{not json", encoding="utf-8")
    (root / "out" / record_path("mac-lab")).unlink()
    with pytest.raises(StaleOutputError) as info:
        _render(root, check=True)
    message = info.value.format_message()
    assert "manifests are current" in message
    assert record_path("edge-l4") in message and record_path("mac-lab") in message
    assert record_path("prod-us-east") not in message
    _render(root)  # repairs the records
    assert snapshot_tree(root / "out") == snapshot_tree(rendered / "out")
    assert _render(root, check=True).changes.empty


def _fresh_clone(src: Path, dst: Path) -> Path:
    """A copy of a rendered fleet as Git would check it out: without the checkout's own
    cache files (fleet record, stat table, trust list), which are git-ignored."""
    root = _copy(src, dst)
    for own in ("_fleet.json", "_stat.json", "_trust.json"):
        (root / "out" / CACHE_DIR / own).unlink(missing_ok=True)
    return root


def test_a_fresh_clone_under_another_gen_stays_clean(
    rendered: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A fresh clone rendered by a gen whose code differs (same output) rewrites no record:
    the records hold no code digest; it renders what it cannot trust, finds the same
    records, and trusts them from then on (its own, git-ignored trust list)."""
    from gen.emit.cache import env

    root = _fresh_clone(rendered, tmp_path / "fleet")
    records = {c: (root / "out" / record_path(c)).read_bytes() for c in CLUSTERS}
    monkeypatch.setattr(env, "code_digest", lambda: "0" * 64)
    assert _render(root, check=True).skipped == ()  # --check passes: nothing is stale
    result = _render(root)
    assert result.skipped == () and result.changes.empty
    assert {c: (root / "out" / record_path(c)).read_bytes() for c in CLUSTERS} == records
    (root / "out" / FLEET_RECORD).unlink()  # past the fast path: the records themselves
    assert _render(root).skipped == CLUSTERS


def test_a_new_gen_version_invalidates(rendered: Path, tmp_path: Path,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    root = _copy(rendered, tmp_path / "fleet")
    monkeypatch.setattr("gen.emit.cache.env.__version__", "99.0.0")
    result = _render(root)
    assert result.skipped == ()
    assert result.changes.empty
    assert _render(root).skipped == CLUSTERS


def test_a_template_override_invalidates_the_clusters_that_render_it(
    rendered: Path, tmp_path: Path
) -> None:
    root = _copy(rendered, tmp_path / "fleet")
    override = root / "templates/vllm/pdb.yaml.j2"
    override.parent.mkdir(parents=True)
    override.write_text((BUILTIN_TEMPLATES / "vllm/pdb.yaml.j2").read_text("utf-8")
                        + "{# same output #}\n", encoding="utf-8")
    result = _render(root)
    users = {c.name for c in load_plan(root / "profiles", base=root).clusters
             if any(s.template == "vllm/pdb.yaml.j2" for s in c.manifests)}
    assert users and set(CLUSTERS) - set(result.skipped) == users
    assert result.changes.empty


def test_a_change_in_gen_s_code_invalidates_every_record(
    rendered: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """gen's code, not only its version, is in every record's env and in the fleet's input
    digest: an emitter changed without a version bump must not trust older records. The
    fingerprint is the inputs' alone (it does not change with the code)."""
    from gen.emit import cache
    from gen.emit.cache import env

    plan = load_plan(rendered / "profiles", base=rendered)
    cluster = plan.clusters[0]
    before = Fingerprinter(make_environment(None)).fingerprint(cluster)
    digest = cache.input_digest(rendered / "profiles", None, rendered, {})
    found = cache.read_record(rendered / "out", cluster.name)
    assert found is not None and cache.trusted(*found, frozenset())
    monkeypatch.setattr(env, "code_digest", lambda: "0" * 64)
    assert not cache.trusted(*found, frozenset())
    assert cache.trusted(*found, frozenset({hashlib.sha256(found[1]).hexdigest()}))
    assert Fingerprinter(make_environment(None)).fingerprint(cluster) == before
    assert cache.input_digest(rendered / "profiles", None, rendered, {}) != digest


def test_the_fleet_record_is_kept_out_of_git(rendered: Path, tmp_path: Path) -> None:
    """The cache folder's .gitignore names the fleet record (it changes with every input,
    so committing it would make concurrent changes conflict) and the stat table (inodes and
    times are the machine's own), and nothing else."""
    import subprocess as sp

    ignore = (rendered / "out" / CACHE_DIR / ".gitignore").read_text(encoding="utf-8")
    assert [line for line in ignore.splitlines() if not line.startswith("#")] == [
        "/_fleet.json", "/_stat.json", "/_trust.json"]
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    root = _copy(rendered, tmp_path / "fleet")
    (root / "out" / CACHE_DIR / "_stat.json").write_text("{}", encoding="utf-8")
    sp.run(["git", "init", "-q", str(root)], check=True)
    listed = sp.run(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=all",
                     "out/.gen-cache"], check=True, capture_output=True, text=True).stdout
    assert "_fleet.json" not in listed and "_stat.json" not in listed
    assert "_trust.json" not in listed
    assert "prod-us-east.json" in listed


def test_every_cluster_plan_field_is_hashed_or_shown_by_the_specs(rendered: Path) -> None:
    """A field added to ClusterPlan (a new decision) must be classified: hashed by the
    fingerprint, or reaching the bytes only through the specs the builders make. The parts
    hashed are the ones the fingerprint's docstring lists, and each hashed field changes it."""
    import dataclasses

    from gen.emit.cache.fingerprint import FIELDS_HASHED, FIELDS_SHOWN_BY_SPECS
    from gen.fleet.plan import ClusterPlan

    names = {f.name for f in dataclasses.fields(ClusterPlan)}
    assert names == FIELDS_HASHED | FIELDS_SHOWN_BY_SPECS
    assert not FIELDS_HASHED & FIELDS_SHOWN_BY_SPECS
    cluster = load_plan(rendered / "profiles", base=rendered).clusters[0]
    fingerprinter = Fingerprinter(make_environment(None))
    before = fingerprinter.fingerprint(cluster)
    for changed in (dataclasses.replace(cluster, minor=cluster.minor - 1),
                    dataclasses.replace(cluster, mig_strategy=cluster.mig_strategy + "-changed"),
                    dataclasses.replace(cluster, dra_api_version="resource.k8s.io/v0")):
        assert fingerprinter.fingerprint(changed) != before
