"""The side-by-side benchmark's projects come from gen's render and say the same thing.

No peer is installed here: the Helm chart and the Kapitan project are checked as files, and
the Jinja2 + PyYAML generator (which needs only what gen's own venv has) is run and its
objects compared with gen's, object by object.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import gen
from tests.helpers import REPO

sys.path.insert(0, str(REPO / "bench"))
from fleet import FLEETS, write_fleet
from peers import build


@pytest.fixture(scope="module", params=FLEETS)
def rendered(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory,
             ) -> tuple[Path, dict[str, Any], build.Export]:
    root = tmp_path_factory.mktemp("peers")
    profiles = write_fleet(root, 2, 4, serving=request.param == "serving")
    gen.render(profiles, root / "out", validator="embedded", jobs=1)
    expected = build.read_tree(root / "out")
    minors = {c.name: c.minor for c in gen.load_plan(profiles).clusters}
    return root, expected, build.export(expected, minors)


def test_export_holds_every_object_gen_wrote(rendered: tuple[Path, dict[str, Any],
                                                             build.Export]) -> None:
    _, expected, exp = rendered
    assert exp.object_count() == len(expected) > 50
    assert set(exp.clusters) == {"c0000", "c0001"}
    paths = {r["path"] for c in exp.clusters.values() for rs in c["objects"].values()
             for r in rs}
    assert paths == set(expected)
    # shapes are shared: far fewer templates than objects
    assert len(exp.shapes) < len(expected) / 2


def test_projects_are_written_for_every_shape_and_cluster(
        rendered: tuple[Path, dict[str, Any], build.Export]) -> None:
    root, _, exp = rendered
    projects = build.write_all(exp, root / "projects")
    chart = projects["helm"]
    assert "apiVersion: v2" in (chart / "Chart.yaml").read_text()
    templates = sorted(p.stem for p in (chart / "templates").glob("*.yaml"))
    assert templates == sorted(exp.shapes)
    for t in (chart / "templates").glob("*.yaml"):
        text = t.read_text()
        assert text.count("{{- range") == 1
        assert text.rstrip().endswith("{{- end }}")
        assert "GENBENCHVAR" not in text
    values = json.loads((root / "projects" / "helm" / "values" / "c0000.json").read_text())
    assert set(values) <= set(exp.shapes)
    kapitan = projects["kapitan"]
    ast.parse((kapitan / "components" / "gen" / "__init__.py").read_text())
    targets = sorted(p.stem for p in (kapitan / "inventory" / "targets").glob("*.yml"))
    assert targets == ["c0000", "c0001"]


@pytest.mark.slow
def test_jinja_generator_produces_gens_objects(
        rendered: tuple[Path, dict[str, Any], build.Export]) -> None:
    root, expected, exp = rendered
    project = build.write_jinja(exp, root / "jinja")
    out = root / "jinja-out"
    subprocess.run([sys.executable, str(REPO / "bench" / "peers" / "drivers" / "jinja_render.py"),
                    str(project), str(out)], check=True, capture_output=True, timeout=120)
    result = build.compare(expected, build.read_tree(out))
    assert result["ok"], result
    assert result["equal"] == len(expected)


def test_compare_reports_a_changed_a_missing_and_an_extra_object() -> None:
    expected = {"a.yaml": {"x": 1}, "b.yaml": {"y": [1, 2]}, "c.yaml": {"z": "1"}}
    actual = {"a.yaml": {"x": 1.0}, "b.yaml": {"y": [1, 2]}, "d.yaml": {}}
    result = build.compare(expected, actual)
    assert not result["ok"]
    assert result["differ"] == ["a.yaml"]  # 1 and 1.0 are different data
    assert result["missing"] == ["c.yaml"]
    assert result["extra"] == ["d.yaml"]
    assert result["equal"] == 1


def test_template_text_is_escaped_out_of_constants() -> None:
    objects = {f"c{i:04d}/x.yaml": {"kind": "ConfigMap", "data": {"t": "{{ .Values.x }} ${a}"},
                                    "n": i} for i in range(2)}
    exp = build.export(objects, {"c0000": 34, "c0001": 34})
    (shape,) = exp.shapes.values()
    assert shape.kinds == ["str", "raw"]  # the delimiters became a variable, as did n
