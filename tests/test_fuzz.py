"""Fuzzing whole profiles: gen renders valid output, or exits 1 with a located message.

Valid fleets (:func:`tests.strategies.fleets`) must lint clean, render, pass strict
validation again file by file, and re-render without touching a file. Mutated fleets
(:func:`tests.strategies.mutations`) may render or fail, but only with exit 1 and findings
located at ``profiles/<file>:<line>``: never a traceback, never another exit code, never a
write outside out/, never a change to out/ when they fail, never a hang.

Examples are derandomized so that CI always runs the same ones, in well under 30 s.
``GEN_FUZZ_EXAMPLES=500 pytest tests/test_fuzz.py`` runs that many examples of each
property instead, randomized, for longer local runs.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import Any
from unittest import mock

import pytest
import yaml
from click.testing import CliRunner, Result
from hypothesis import HealthCheck, Phase, given, settings

from gen.cli import cli
from gen.emit.validate import SchemaValidator
from gen.errors import SourceLocation
from gen.fleet import loader
from gen.nvidia.mig import check_layout
from gen.pipeline import load_plan
from gen.serving.fit import FitDevice, FitRequest, check_fit
from tests.helpers import stat_tree
from tests.strategies import (
    Fleet,
    Mutated,
    alias_bomb,
    any_fleet,
    deep_nesting,
    fits,
    fleets,
    mig_layouts_for,
    models,
    mutations,
    nvidia_gpus,
    splits,
)

pytestmark = pytest.mark.slow  # whole-fleet property runs: minutes with GEN_FUZZ_EXAMPLES

EXTRA = int(os.environ.get("GEN_FUZZ_EXAMPLES", "0"))
HANG_SECONDS = 60
"""Hard stop for one gen command (a hang); the soft bound below is what a run must meet."""
SLOW_SECONDS = 20
PWNED = Path("/tmp/gen-pwned")  # what the unsafe-tag mutation would create if YAML ran it

_FINDING = re.compile(
    r"^(?:(?P<loc>[^\n]*?): )?(?P<sev>error|warning|info) (?P<rule>GEN\d{3}): ", re.MULTILINE
)


def fuzz_settings(examples: int) -> Callable[[Any], Any]:
    """Bounded, derandomized settings; GEN_FUZZ_EXAMPLES raises the example count."""
    return settings(
        max_examples=EXTRA or examples,
        deadline=None,
        derandomize=not EXTRA,
        database=None,
        print_blob=False,
        # Shrinking a fleet takes minutes (each example renders); the failing example is
        # printed as drawn. GEN_FUZZ_SHRINK=1 shrinks it.
        phases=[Phase.explicit, Phase.reuse, Phase.generate, Phase.target]
        + ([Phase.shrink] if os.environ.get("GEN_FUZZ_SHRINK") else []),
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                               HealthCheck.filter_too_much],
    )


class _Hang(BaseException):
    """Raised by the alarm: a BaseException so that CliRunner does not swallow it."""


@contextmanager
def _alarm(seconds: int) -> Iterator[None]:
    def fire(signum: int, frame: FrameType | None) -> None:
        raise _Hang(f"gen ran longer than {seconds} s")

    if threading.current_thread() is not threading.main_thread():
        yield  # signals need the main thread; the elapsed-time check still applies
        return
    previous = signal.signal(signal.SIGALRM, fire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def gen(*args: str) -> Result:
    """Run gen in-process; fail on a hang, an escaping exception or a traceback."""
    started = time.perf_counter()
    with _alarm(HANG_SECONDS):
        result = CliRunner().invoke(cli, list(args), prog_name="gen")
    elapsed = time.perf_counter() - started
    assert elapsed < SLOW_SECONDS, f"gen {' '.join(args)} took {elapsed:.1f} s"
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        import traceback

        trace = "".join(traceback.format_exception(*result.exc_info)) if result.exc_info else ""
        pytest.fail(f"gen {args[0]} raised {result.exception!r}\n{trace}\n{result.output}")
    assert "Traceback" not in result.output
    assert result.exit_code in (0, 1), (result.exit_code, result.output)
    return result


def write_profiles(root: Path, files: Mapping[str, bytes]) -> Path:
    """Replace root/profiles with ``files``."""
    profiles = root / "profiles"
    shutil.rmtree(profiles, ignore_errors=True)
    for rel, data in files.items():
        path = profiles / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    return profiles


def tree(root: Path, skip: str = "out") -> dict[str, bytes | None]:
    """Files (bytes) and folders (None) under ``root``, except the ``skip`` folder."""
    out: dict[str, bytes | None] = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if rel == skip or rel.startswith(f"{skip}/"):
            continue
        out[rel] = path.read_bytes() if path.is_file() else None
    return out


def minors(fleet: Fleet) -> dict[str, int]:
    """Cluster name → Kubernetes minor."""
    return {c["name"]: int(c["kubernetes_version"].lstrip("v").split(".")[1])
            for c in fleet.clusters}


def render(root: Path) -> Result:
    """``gen render`` of root/profiles into root/out with the embedded validator."""
    return gen("render", "--profiles", str(root / "profiles"), "--out", str(root / "out"),
               "--validator", "embedded")


def lint(root: Path) -> Result:
    """``gen lint`` of root/profiles."""
    return gen("lint", "--profiles", str(root / "profiles"))


# --------------------------------------------------------------------------- output checks


def _check_kustomizations(cluster_dir: Path) -> None:
    """Every object of out/<cluster>/ is listed exactly once, and every entry exists."""
    listed: list[Path] = []
    for kfile in sorted(cluster_dir.rglob("kustomization.yaml")):
        data = yaml.safe_load(kfile.read_text("utf-8"))
        assert data["kind"] == "Kustomization", kfile
        for entry in data["resources"]:
            assert ".." not in Path(entry).parts and not Path(entry).is_absolute(), entry
            target = kfile.parent / entry
            if target.is_dir():
                assert (target / "kustomization.yaml").is_file(), target
            else:
                assert target.is_file(), target
                listed.append(target)
    objects = sorted(p for p in cluster_dir.rglob("*.yaml") if p.name != "kustomization.yaml")
    assert sorted(listed) == objects, cluster_dir
    assert len(set(listed)) == len(listed), cluster_dir


_VALIDATOR = SchemaValidator()


def _paths_in(value: Any) -> Iterator[str]:
    """Every string under a ``path`` key (Argo CD source.path, Flux spec.path, volumes)."""
    if isinstance(value, dict):
        for key, item in value.items():
            if key == "path" and isinstance(item, str):
                yield item
            else:
                yield from _paths_in(item)
    elif isinstance(value, list):
        for item in value:
            yield from _paths_in(item)


def check_output(out: Path, cluster_minors: Mapping[str, int]) -> None:
    """One object per file, strict schema validation, kustomizations, the index, no '..'."""
    validator = _VALIDATOR
    index = (out / ".gen-files").read_text("utf-8").splitlines()
    listed = {line for line in index if line and not line.startswith("#")}
    files = {p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file()}
    cache = {f for f in files if f.startswith(".gen-cache/")}  # gen's own, never indexed
    assert listed == files - {".gen-files"} - cache
    for cluster, minor in cluster_minors.items():
        if (out / cluster).is_dir():
            _check_kustomizations(out / cluster)
        ids: set[tuple[str, str, str, str]] = set()
        for path in sorted(out.rglob("*.yaml")):
            rel = path.relative_to(out)
            owner = rel.parts[1] if rel.parts[0].startswith("_") else rel.parts[0]
            if owner != cluster or path.name == "kustomization.yaml":
                continue
            docs = [d for d in yaml.safe_load_all(path.read_text("utf-8")) if d is not None]
            assert len(docs) == 1, rel
            obj = docs[0]
            assert isinstance(obj, dict) and obj.get("apiVersion") and obj.get("kind"), rel
            meta = obj["metadata"]
            assert meta["name"], rel
            for where in _paths_in(obj):
                assert ".." not in where.split("/"), f"{rel}: path {where!r} leaves the repo"
            found = validator.validate(obj, minor, SourceLocation(str(rel)))
            assert not found, [f.format() for f in found]
            if not rel.parts[0].startswith("_"):
                key = (obj["apiVersion"].split("/")[0], obj["kind"], meta.get("namespace", ""),
                       meta["name"])
                assert key not in ids, f"{rel}: duplicate object {key}"
                ids.add(key)


def check_located(text: str, target: str | None) -> None:
    """Exit 1 output: error findings, each at profiles/<file>[:line[:col]]."""
    findings = list(_FINDING.finditer(text))
    errors = [m for m in findings if m["sev"] == "error"]
    assert errors, f"no located error in:\n{text}"
    for m in errors:
        loc = m["loc"] or ""
        assert loc.startswith("profiles/"), f"unlocated finding: {m.group(0)!r}\n{text}"
        # file names may hold ':' themselves: read the line and column from the right
        parts = re.fullmatch(r"(?P<path>.+?\.ya?ml)(?::(?P<line>\d+)(?::\d+)?)?", loc)
        assert parts is not None, f"not a profile location: {loc!r}\n{text}"
        if m["rule"] != "GEN001":  # whole-file read errors (size, encoding) may have no line
            assert parts["line"], f"no line in {loc!r}\n{text}"
    if target is not None:
        assert f"profiles/{target}" in text, f"{target} not named in:\n{text}"


# --------------------------------------------------------------------------- strategy sanity


def test_strategy_mig_layouts_are_valid() -> None:
    """Every MIG layout the fleet strategy may draw is physically valid on its GPU."""
    checked = 0
    for gpu in nvidia_gpus():
        for layout in mig_layouts_for(gpu):
            result = check_layout(gpu, layout, "580.65.06")
            assert not result.errors, (gpu.id, layout, result.errors)
            checked += 1
    assert checked > 50


def test_strategy_fit_rule_is_conservative() -> None:
    """Where the strategy says a model fits, gen's fit check agrees (at 4096 tokens)."""
    memories = sorted({g.memory_mib for g in nvidia_gpus()}
                      | {p.memory_mib for g in nvidia_gpus() for p in g.mig_profiles})
    for model in models():
        for memory in memories:
            for count in (1, 2, 4, 8):
                if not (splits(model, count) and fits(model, memory, count)):
                    continue
                for is_mig in (False, True) if count == 1 else (False,):
                    report = check_fit(FitRequest(
                        model=model, device=FitDevice("x", memory, is_mig), gpus=count,
                        tensor_parallel=count, max_model_len=4096, max_num_seqs=64,
                    ))
                    assert report.fits, (model.id, memory, count, report.errors)


# --------------------------------------------------------------------------- properties


@fuzz_settings(25)
@given(fleets())
def test_valid_fleets_lint_render_and_rerender(fleet: Fleet) -> None:
    """A valid fleet lints clean, renders strictly valid files, and re-renders nothing."""
    with tempfile.TemporaryDirectory(prefix="gen-fuzz-") as tmp:
        root = Path(tmp)
        write_profiles(root, fleet.files())
        outside = tree(root)
        result = lint(root)
        assert result.exit_code == 0, result.output
        result = render(root)
        assert result.exit_code == 0, result.output
        check_output(root / "out", minors(fleet))
        before = stat_tree(root / "out")
        again = render(root)
        assert again.exit_code == 0, again.output
        assert "unchanged" in again.stdout, again.stdout
        assert stat_tree(root / "out") == before
        assert tree(root) == outside, "gen wrote outside out/"


@pytest.fixture(scope="module")
def previous_out(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An out/ that gen rendered before (from ``gen init``'s fleet), copied into examples."""
    root = tmp_path_factory.mktemp("previous")
    shutil.copytree(Path(__file__).resolve().parent.parent / "gen/data/init/profiles",
                    root / "profiles")
    assert render(root).exit_code == 0
    return root / "out"


def _run_mutated(root: Path, mutated: Mutated) -> tuple[Result, Result]:
    limit = mutated.file_limit or loader.MAX_FILE_BYTES
    with mock.patch.object(loader, "MAX_FILE_BYTES", limit):
        return lint(root), render(root)


@fuzz_settings(100)
@given(any_fleet().flatmap(mutations))
def test_mutated_fleets_render_or_fail_located(previous_out: Path, mutated: Mutated) -> None:
    """A broken fleet renders valid output or exits 1 at profiles/<file>:<line>; out/ is kept."""
    with tempfile.TemporaryDirectory(prefix="gen-fuzz-") as tmp:
        root = Path(tmp)
        shutil.copytree(previous_out, root / "out")  # what an earlier render left
        out_before = tree(root / "out", skip="")
        stats_before = stat_tree(root / "out")
        write_profiles(root, mutated.files)
        outside = tree(root)
        linted, rendered = _run_mutated(root, mutated)
        note = f"mutation: {mutated.what}\nlint:\n{linted.output}\nrender:\n{rendered.output}"
        assert not PWNED.exists(), "YAML ran code"
        assert tree(root) == outside, f"gen wrote outside out/\n{note}"
        if mutated.must_fail:
            assert linted.exit_code == 1, note
            assert rendered.exit_code == 1, note
        target = mutated.target if mutated.located_in_target else None
        if linted.exit_code == 1:
            check_located(linted.stdout + linted.stderr, target)
        if rendered.exit_code == 1:
            check_located(rendered.stderr, target)
            assert tree(root / "out", skip="") == out_before, f"out/ changed\n{note}"
            assert stat_tree(root / "out") == stats_before, note
        else:
            # lint errors stop a render: the two must agree
            assert linted.exit_code == 0, note
            plan = load_plan(root / "profiles", base=root)
            check_output(root / "out", {c.name: c.minor for c in plan.clusters})


# --------------------------------------------------------------------------- hostile files


@pytest.mark.parametrize("text", [
    alias_bomb(9), alias_bomb(30, 2),
    deep_nesting(1000, "flow-list"), deep_nesting(1000, "flow-map"),
    deep_nesting(1500, "block-map"), deep_nesting(1500, "block-list"),
    deep_nesting(65, "flow-list"),
])
def test_hostile_yaml_is_refused_quickly(tmp_path: Path, text: str) -> None:
    """Alias bombs and deep nesting are refused by the loader's limits, located, fast."""
    write_profiles(tmp_path, {"clusters/bomb.yaml": text.encode()})
    started = time.perf_counter()
    result = render(tmp_path)
    assert time.perf_counter() - started < 5
    assert result.exit_code == 1
    check_located(result.stderr, "clusters/bomb.yaml")
    assert not (tmp_path / "out").exists()


# --------------------------------------------------------------------------- regressions


@pytest.mark.parametrize("scalar", [
    "!!float x", "!!bool maybe", "!!int", "!!float", "!!timestamp x", "!!int 0x",
    "2024-02-30", "!!timestamp 2024-01-01 25:61:61",
])
def test_scalar_yaml_cannot_convert_is_a_located_error(tmp_path: Path, scalar: str) -> None:
    """``name: !!float x`` used to escape as a ValueError traceback; now GEN001 at its line."""
    write_profiles(tmp_path, {"c.yaml": f"kind: Cluster\n\nname: {scalar}\n".encode()})
    result = render(tmp_path)
    assert result.exit_code == 1
    assert result.stderr.startswith("profiles/c.yaml:3:7: error GEN001: YAML syntax error: "
                                    "cannot read "), result.stderr


@pytest.mark.parametrize("name", [
    os.fsdecode(b"caf\xe9.yaml"), "new\nline.yaml", "sep\u2028.yaml", "tab\t.yaml",
])
def test_a_file_name_that_cannot_be_shown_is_refused(tmp_path: Path, name: str) -> None:
    """A file name that cannot go into messages and headers is refused, located, on one line.

    A non-UTF-8 name used to crash the render (UnicodeEncodeError writing the header); a
    line break in the name broke the rendered header comment and the message format.
    """
    shutil.copytree(Path(__file__).resolve().parent.parent / "gen/data/init/profiles",
                    tmp_path / "profiles")
    (tmp_path / "profiles/service.yaml").rename(tmp_path / "profiles" / name)
    for command in (render, lint):
        result = command(tmp_path)
        assert result.exit_code == 1
        text = result.stdout + result.stderr
        first = text.splitlines()[0]
        assert first.startswith("profiles/") and " error GEN001: file name " in first, text
    assert not (tmp_path / "out").exists()


def test_nul_byte_is_located(tmp_path: Path) -> None:
    """A NUL byte is reported at its line and column."""
    write_profiles(tmp_path, {"c.yaml": b"kind: Cluster\nname: a\x00b\n"})
    result = render(tmp_path)
    assert result.stderr.startswith("profiles/c.yaml:2:8: error GEN001: file contains NUL")


def test_an_oversized_file_is_not_read_whole(tmp_path: Path) -> None:
    """A file over the limit is refused after reading at most limit + 1 bytes."""
    write_profiles(tmp_path, {"big.yaml": b"# " + b"x" * 5000 + b"\n"})
    reads: list[int] = []
    real_open = Path.open

    def spy(self: Path, *args: Any, **kwargs: Any) -> Any:
        handle = real_open(self, *args, **kwargs)
        real_read = handle.read

        def read(n: int = -1) -> Any:
            reads.append(n)
            return real_read(n)

        handle.read = read
        return handle

    with mock.patch.object(loader, "MAX_FILE_BYTES", 100), \
            mock.patch.object(Path, "open", spy):
        result = render(tmp_path)
    assert result.exit_code == 1
    assert "profiles/big.yaml: error GEN001: file is 5003 bytes; the limit is 100" in (
        result.stderr)
    assert reads == [101]


def test_alias_bomb_is_measured_not_walked() -> None:
    """The expansion of a billion-laughs document is computed from its shared nodes."""
    import yaml as pyyaml

    def compose(text: str) -> pyyaml.Node:
        node = pyyaml.compose(text, Loader=pyyaml.SafeLoader)
        assert node is not None
        return node

    node = compose(alias_bomb(30, 2))
    assert loader._expanded_size(node, 10**6) == 10**6
    small = compose("a: &x [1, 2]\nb: [*x, *x]\n")
    assert loader._expanded_size(small, 10**6) == 1 + 3 + 1 + 2 * 3
    loop = compose("a: &x [*x]\n")
    assert loader._expanded_size(loop, 99) == 99


_MIG_FLEET = """\
kind: Cluster
name: c
kubernetes_version: "1.34"
allocation: dra
node_pools:
  - {name: p, gpu: h100-sxm5-80gb, gpus_per_node: 2, nodes: 1, driver_version: "580.95.05",
     mig_layout: l}
---
kind: MIGLayout
name: l
gpu: h100-sxm5-80gb
"""


@pytest.mark.parametrize(("layout", "where", "message"), [
    ("per_gpu:\n  - {gpus: [-1, 0], profiles: {1g.10gb: 7}}\n",
     "profiles/f.yaml:13:6: error GEN002: per_gpu[0].gpus: ", "none can be negative"),
    ("per_gpu:\n  - {gpus: [0], profiles: {1g.10gb: 7}}\n  - {gpus: [1], profiles: {1g.10gb: 0}}\n",
     "profiles/f.yaml:14:17: error GEN002: per_gpu[1].profiles: ", "every count is 0"),
    ("profiles: {1g.10gb: 0, 2g.20gb: 0}\n",
     "profiles/f.yaml:12:1: error GEN002: profiles: ", "every count is 0"),
])
def test_mig_layouts_mig_parted_rejects_are_profile_errors(
    tmp_path: Path, layout: str, where: str, message: str
) -> None:
    """A negative GPU index or an all-zero count map used to end lint and render with an
    unlocated 'invalid mig-parted config' (the ConfigMap builder's own check)."""
    write_profiles(tmp_path, {"f.yaml": (_MIG_FLEET + layout).encode()})
    for result in (lint(tmp_path), render(tmp_path)):
        assert result.exit_code == 1
        text = result.stdout + result.stderr
        assert "mig-parted config" not in text.splitlines()[0]
        assert where in text and message in text, text


@pytest.mark.parametrize(("quantity", "rule"), [
    ("1e5000", "GEN002"),        # past the exponents gen computes with: a profile error
    ("1" * 300 + "Gi", "GEN607"),  # exact, as Kubernetes parses it: far more than the VM has
])
def test_a_huge_quantity_is_located_at_its_line(tmp_path: Path, quantity: str, rule: str) -> None:
    """An Apple service's resources.memory of 1e5000 used to end lint with an unlocated
    'quantity exponent out of range' (300 digits: a decimal.Inexact traceback). A value gen
    cannot compute with is a profile error; one it can is judged like any other."""
    shutil.copytree(Path(__file__).resolve().parent.parent / "profiles", tmp_path / "profiles")
    path = tmp_path / "profiles/services/llama-8b-vulkan.yaml"
    text = path.read_text("utf-8")
    line = text[:text.index("memory: 8Gi")].count("\n") + 1
    path.write_text(text.replace("memory: 8Gi", f"memory: {quantity}"))
    result = lint(tmp_path)
    assert result.exit_code == 1
    assert result.stdout.startswith(
        f"profiles/services/llama-8b-vulkan.yaml:{line}:3: error {rule}: resources.memory: "
    ), result.stdout


_MODEL = """\
kind: Model
name: my/model
parameters: 7000000000
layers: 28
hidden_size: 3584
attention_heads: 28
kv_heads: 4
head_dim: 128
max_context: 32768
"""


@pytest.mark.parametrize(("extra", "message"), [
    (f"active_parameters: {10**400}\n", "active_parameters: at most 1,000,000,000,000,000"),
    (f"hidden_size: {10**400}\n", "hidden_size: at most 1,000,000"),
    ("experts: 8\n", "give both experts and experts_per_token"),
    ("experts_per_token: 2\n", "give both experts and experts_per_token"),
    ("experts: 2\nexperts_per_token: 8\n", "experts_per_token is more than experts"),
])
def test_a_model_profile_gen_cannot_size_is_a_profile_error(
    tmp_path: Path, extra: str, message: str
) -> None:
    """A Model with 10**400 parameters used to end in an OverflowError traceback, and one
    with experts but no experts_per_token in a ValueError traceback from the catalog."""
    shutil.copytree(Path(__file__).resolve().parent.parent / "gen/data/init/profiles",
                    tmp_path / "profiles")
    service = tmp_path / "profiles/service.yaml"
    service.write_text(service.read_text("utf-8").replace("Qwen/Qwen2.5-7B-Instruct", "my/model"))
    text = _MODEL.replace("hidden_size: 3584\n", "") if "hidden_size" in extra else _MODEL
    (tmp_path / "profiles/model.yaml").write_text(text + extra)
    for result in (lint(tmp_path), render(tmp_path)):
        assert result.exit_code == 1
        output = result.stdout + result.stderr
        assert output.startswith("profiles/model.yaml:") and message in output, output


@pytest.mark.parametrize(("field", "value", "message"), [
    ("gitops.path_prefix", "../../etc", "leaves the repository"),
    ("gitops.path_prefix", "a/../../b", "leaves the repository"),
    ("gitops.path_prefix", "/out/", "is absolute"),
    ("extended_resource_name", "Bad Name!", "is not an extended resource name"),
    ("extended_resource_name", "kubernetes.io/gpu", "is not an extended resource name"),
    ("extended_resource_name", "gpu", "is not an extended resource name"),
])
def test_values_the_api_server_or_git_would_refuse_are_profile_errors(
    tmp_path: Path, field: str, value: str, message: str
) -> None:
    """A path_prefix with '..' used to render an Argo CD path outside the repository, and a
    malformed extended_resource_name a DeviceClass the API server rejects."""
    shutil.copytree(Path(__file__).resolve().parent.parent / "gen/data/init/profiles",
                    tmp_path / "profiles")
    if field.startswith("gitops."):
        path = tmp_path / "profiles/cluster.yaml"
        path.write_text(path.read_text("utf-8").replace(
            "  engine: argocd\n", f"  engine: argocd\n  path_prefix: {value!r}\n"))
    else:
        path = tmp_path / "profiles/gpu-class.yaml"
        path.write_text(path.read_text("utf-8") + f"{field}: {value!r}\n")
    result = render(tmp_path)
    assert result.exit_code == 1
    assert result.stderr.startswith(f"profiles/{path.name}:") and message in result.stderr, (
        result.stderr)


def test_valid_extended_resource_names_and_path_prefixes_stay_valid() -> None:
    """The new checks accept what Kubernetes and Git accept."""
    from gen.models import GitOps, GPUClass

    for name in ("example.com/gpu", "gpu.example.com/h100_80GB", "a/b"):
        assert GPUClass(kind="GPUClass", name="x", extended_resource_name=name)
    for prefix in ("out", "deploy/out", "./out", "out/", "a..b/out"):
        assert GitOps(engine="flux", repo_url="https://git.example.com/f.git", path_prefix=prefix)


_TWO_GPUS = """\
kind: Cluster
name: c
kubernetes_version: "1.34"
allocation: {allocation}
node_pools:
  - {{name: big, gpu: h200-sxm, gpus_per_node: 8, nodes: 1, driver_version: "580.95.05"}}
  - {{name: small, gpu: l4, gpus_per_node: 1, nodes: 1, driver_version: "580.95.05"}}
---
kind: GPUClass
name: h200
match: {{product: h200-sxm}}
---
kind: InferenceService
name: qwen
model: Qwen/Qwen2.5-32B-Instruct
clusters: [c]
gpu: {{gpu_class: h200}}
serving: {{max_model_len: 8192}}
"""


def test_fit_is_checked_on_the_gpus_a_class_selects(tmp_path: Path) -> None:
    """An H200 class never gets the cluster's L4s: no GEN301 for them (found by the
    fuzzer: a valid fleet failed lint). A DRA claim cannot get them; device-plugin pods
    are kept off the L4 pool by their node selector (gen.fleet.placement.class_admits)."""
    for allocation in ("dra", "device-plugin"):
        write_profiles(tmp_path, {"f.yaml": _TWO_GPUS.format(allocation=allocation).encode()})
        result = lint(tmp_path)
        assert result.exit_code == 0, result.stdout
        assert "pool 'small'" not in result.stdout
        assert render(tmp_path).exit_code == 0
