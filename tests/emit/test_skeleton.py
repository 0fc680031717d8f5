"""gen.emit.skeleton: the cached-skeleton shortcut gives exactly the data a full parse gives."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import jinja2
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gen.emit import skeleton, yamlfast
from gen.emit.render import make_environment, render_manifest
from gen.errors import SourceLocation, TemplateError
from gen.fleet.plan import ManifestSpec
from gen.pipeline import load_plan
from tests.helpers import REPO, copy_fleet

sys.path.insert(0, str(REPO / "bench"))
from fleet import write_fleet

ORIGIN = SourceLocation("profiles/x.yaml", 1, 1)


def _both(env: jinja2.Environment, name: str, context: dict[str, Any]) -> tuple[Any, Any]:
    template = env.get_template(name)
    fast = skeleton.render_data(env, template, context, yamlfast.load_all)
    real = yamlfast.load_all(template.render(**context))
    return fast, real


@pytest.mark.parametrize("fleet", ["example", "bench"])
def test_every_manifest_of_a_fleet_parses_the_same(fleet: str, tmp_path: Path) -> None:
    root = copy_fleet(tmp_path) if fleet == "example" else tmp_path
    profiles = root / "profiles" if fleet == "example" else write_fleet(root, 4, 6)
    plan = load_plan(profiles, base=root)
    env = make_environment(None)
    hits = texts = 0
    for cluster in plan.clusters:
        for spec in cluster.manifests:
            fast, real = _both(env, spec.template, dict(spec.context))
            if fast is not None:
                hits += 1
                assert fast == real, spec.template
            shaped = skeleton.render_shape(env, env.get_template(spec.template),
                                           dict(spec.context), yamlfast.load_all)
            assert shaped is not None
            if shaped[1] is None:  # a value dump hands to PyYAML (a long annotation)
                assert yamlfast.dump(real[0]) == yamlfast.dump_slow(real[0]), spec.template
            else:
                texts += 1
                assert shaped[1] == yamlfast.dump(real[0]), spec.template  # per-shape text
    assert hits == sum(len(c.manifests) for c in plan.clusters)  # built-ins are all plain
    assert texts > hits * 0.9


def _builtin_shapes() -> list[tuple[str, Any]]:
    """Every distinct skeleton the built-in templates render to in the example and bench
    fleets, compiled: (template, (plans, placeholder count, canonical text))."""
    import tempfile

    shapes: dict[str, tuple[str, Any]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for fleet in ("example", "bench"):
            root = Path(tmp) / fleet
            root.mkdir()
            if fleet == "example":
                root = copy_fleet(root)
                profiles = root / "profiles"
            else:
                profiles = write_fleet(root, 4, 6)
            env = make_environment(None)
            for cluster in load_plan(profiles, base=root).clusters:
                for spec in cluster.manifests:
                    recorded: tuple[list[str], list[Any]] = ([], [])
                    token = skeleton._recording.set(recorded)
                    try:
                        text = env.get_template(spec.template).render(**spec.context)
                    finally:
                        skeleton._recording.reset(token)
                    if text not in shapes:
                        shapes[text] = (spec.template, skeleton._compile(text, yamlfast.load_all))
    return sorted(shapes.values(), key=lambda item: item[0])


BUILTIN_SHAPES = _builtin_shapes()


def test_every_builtin_shape_has_its_canonical_text() -> None:
    templates = {name for name, _ in BUILTIN_SHAPES}
    assert len(templates) >= 20  # every built-in template the two fleets use
    refused = set()
    for name, compiled in BUILTIN_SHAPES:
        assert compiled is not None, name
        if compiled[2] is None:  # only where a key is a placeholder: the order of keys moves
            refused.add(name)
            assert "{{ key|tojson }}:" in (REPO / "templates" / name).read_text()
    assert len(refused) <= 2, refused


def _env(templates: dict[str, str]) -> jinja2.Environment:
    env = make_environment(None)
    env.loader = jinja2.DictLoader(templates)
    return env


JSONISH = st.recursive(
    st.one_of(st.text(), st.integers(), st.booleans(), st.none(),
              st.floats(allow_nan=False, allow_infinity=False),
              st.sampled_from(["x\x85y", "a\u2028b", "yes", "1e5", "\ud83d\ude00", "\ud83d"])),
    lambda inner: st.one_of(st.lists(inner, max_size=3),
                            st.dictionaries(st.text(max_size=5), inner, max_size=3)),
    max_leaves=12,
)
SHAPES = {
    "value": "apiVersion: v1\nkind: X\nmetadata: {name: n}\nv: {{ v|tojson }}\n",
    "item": "items:\n- {{ v|tojson }}\n- {{ w|tojson }}\n",
    "flow": "items: [{{ v|tojson }}, {{ w|tojson }}]\n",
    "key": "m:\n  {{ k|tojson }}: {{ v|tojson }}\n  fixed: {{ w|tojson }}\n",
    "loop": "l:\n{% for x in v %}- {{ x|tojson }}\n{% endfor %}end: {{ w|tojson }}\n",
    "nested": ("a:\n- - {{ v|tojson }}\n  - 1\n- x: {{ w|tojson }}\n  y: [2]\n"
               "- - - {{ k|tojson }}\n"),
}


@settings(max_examples=int(os.environ.get("GEN_FUZZ_EXAMPLES", "150")), deadline=None,
          derandomize="GEN_FUZZ_EXAMPLES" not in os.environ,
          suppress_health_check=[HealthCheck.too_slow])
@given(shape=st.sampled_from(sorted(SHAPES)), v=JSONISH, w=JSONISH,
       k=st.one_of(st.text(max_size=6), st.integers(), st.sampled_from(["fixed", "yes"])))
def test_any_values_in_any_position_parse_the_same(shape: str, v: Any, w: Any, k: Any) -> None:
    env = _env({"t.j2": SHAPES[shape]})
    if shape == "loop" and not isinstance(v, list):
        v = [v]
    try:
        real = yamlfast.load_all(env.get_template("t.j2").render(v=v, w=w, k=k))
    except (yamlfast.DuplicateKeyError, ValueError, yaml.YAMLError) as err:
        with pytest.raises(type(err)):  # the shortcut steps aside; the full parse reports
            fast = skeleton.render_data(env, env.get_template("t.j2"), {"v": v, "w": w, "k": k},
                                        yamlfast.load_all)
            assert fast is None
            yamlfast.load_all(env.get_template("t.j2").render(v=v, w=w, k=k))
        return
    shaped = skeleton.render_shape(env, env.get_template("t.j2"), {"v": v, "w": w, "k": k},
                                   yamlfast.load_all)
    if shaped is None:
        return
    fast, text = shaped
    assert fast == real
    if text is not None:  # the per-shape text: dump's bytes (a key placeholder: never here)
        assert shape != "key"
        assert text == yamlfast.dump(real[0])


VALUES = st.recursive(
    st.one_of(st.text(max_size=20), st.integers(), st.booleans(), st.none(),
              st.floats(allow_nan=False, allow_infinity=False),
              st.sampled_from(["", "yes", "1e5", "a: b", "- x", "#c", "x" * 600, "multi\nline",
                               "trail\n", "é", "💥", "0.90", "null", "~"])),
    lambda inner: st.one_of(st.lists(inner, max_size=3),
                            st.dictionaries(st.text(min_size=1, max_size=6), inner, max_size=3)),
    max_leaves=10,
)


@pytest.mark.slow  # 150-example differential run
@settings(max_examples=int(os.environ.get("GEN_FUZZ_EXAMPLES", "150")), deadline=None,
          derandomize="GEN_FUZZ_EXAMPLES" not in os.environ,
          suppress_health_check=[HealthCheck.too_slow])
@given(shape=st.sampled_from(BUILTIN_SHAPES), data=st.data())
def test_builtin_shapes_filled_with_any_values_are_dump_byte_for_byte(
    shape: tuple[str, Any], data: st.DataObject,
) -> None:
    """Any value (a mapping, a list, empty ones, None, strings needing quotes or PyYAML's
    path) in every placeholder of every built-in shape: the filled text is ``dump``'s."""
    name, (plans, count, text, *_) = shape
    if text is None:
        return
    values = [data.draw(VALUES) for _ in range(count)]
    (doc,) = [skeleton._fill(plan, values) for plan in plans]
    filled = text.fill(values)
    assert filled is None or filled == yamlfast.dump(doc), name
    if filled is None:  # it steps aside only where dump writes PyYAML's text
        assert yamlfast.dump(doc) == yamlfast.dump_slow(doc)


@pytest.mark.parametrize("source", [
    "a: {{ x|tojson|lower }}\n",                  # a filter after tojson
    "a: {{ x }}\n",                               # no tojson
    "{% if x|tojson == '1' %}a: 1{% endif %}\n",  # tojson steering a branch
    "{% set y = x|tojson %}a: {{ y|tojson }}\n",  # double encoding
    "{% filter upper %}a: {{ x|tojson }}{% endfilter %}\n",
    "{% include 'other.j2' %}\n",
    "{% macro m() %}{% endmacro %}a: {{ x|tojson }}\n",
])
def test_templates_that_could_transform_a_value_are_not_plain(source: str) -> None:
    assert not skeleton.is_plain(source)


def test_plain_templates() -> None:
    assert skeleton.is_plain("{% for i in xs %}- {{ i.name|tojson }}\n{% endfor %}")
    assert skeleton.is_plain("{% if a %}a: {{ a|default('x')|tojson }}{% else %}b: 1{% endif %}")


@pytest.mark.parametrize("source", [
    "a: 1\n# was {{ x|tojson }}\n",              # a value in a comment
    "s: |\n  echo {{ x|tojson }}\n",             # a value inside a block string
    "s: pre-{{ x|tojson }}\n",                   # a value glued into a plain scalar
])
def test_values_outside_whole_scalars_take_the_full_parse(source: str) -> None:
    env = _env({"t.j2": source})
    template = env.get_template("t.j2")
    assert skeleton.render_data(env, template, {"x": "v"}, yamlfast.load_all) is None
    # set on the environment by env.extend(), which mypy cannot see
    assert env.gen_plain_templates["t.j2"] is False  # type: ignore[attr-defined]


def test_a_value_that_duplicates_a_key_is_still_an_error(tmp_path: Path) -> None:
    """Two keys made equal by values: the full parse reports GEN011, as without the cache."""
    (tmp_path / "core").mkdir()
    (tmp_path / "core" / "namespace.yaml.j2").write_text(
        "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {{ name|tojson }}\n"
        "  labels:\n    {{ name|tojson }}: a\n    team-a: b\n")
    spec = ManifestSpec(template="core/namespace.yaml.j2", origin=ORIGIN,
                        context={"name": "team-a", "labels": {}})
    with pytest.raises(TemplateError) as info:
        render_manifest(make_environment(tmp_path), "c1", spec)
    assert info.value.findings[0].rule == "GEN011"
    assert "duplicate key" in info.value.findings[0].message
    assert "(rendered line 7)" in info.value.findings[0].message  # the second team-a


def test_threads_rendering_at_once_keep_their_values_apart(tmp_path: Path) -> None:
    """Each thread records its own values (a library user may render from threads)."""
    from concurrent.futures import ThreadPoolExecutor

    root = copy_fleet(tmp_path)
    plan = load_plan(root / "profiles", base=root)
    specs = [(c.name, s) for c in plan.clusters for s in c.manifests] * 3
    env = make_environment(None)
    alone = [render_manifest(env, name, spec).data for name, spec in specs]
    with ThreadPoolExecutor(8) as pool:
        together = list(pool.map(lambda item: render_manifest(env, *item).data, specs))
    assert together == alone


def _same_tree(a: Any, b: Any) -> bool:
    """Equal, with the same types and key order all the way down."""
    if type(a) is not type(b):
        return False
    if type(a) is dict:
        return list(a) == list(b) and all(_same_tree(a[k], b[k]) for k in a)
    if type(a) is list:
        return len(a) == len(b) and all(_same_tree(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


@settings(max_examples=60, deadline=None, derandomize=True)
@given(st.lists(st.one_of(st.text(max_size=5), st.integers(), st.none(),
                          st.lists(st.integers(), max_size=2)), min_size=64, max_size=64))
def test_the_compiled_filler_builds_what_fill_builds(pool: list[Any]) -> None:
    checked = 0
    for name, compiled in BUILTIN_SHAPES:
        assert compiled is not None
        plans, count, _, fillers, _ = compiled
        values = [pool[i % len(pool)] for i in range(count)]
        for plan, fill in zip(plans, fillers, strict=True):
            made = skeleton.filler(plan)
            if fill is None:  # a key is a value (namespace labels, annotations): _fill stays
                assert made is None and compiled[2] is None, name
                continue
            expected = skeleton._fill(plan, values)
            assert made is not None and _same_tree(made(values), expected), name
            assert _same_tree(fill(values), expected), name
            checked += 1
    assert checked >= 20


def test_a_filler_shares_the_fixed_parts_and_refuses_keys_from_values() -> None:
    fixed = {"a": [1, 2]}
    plan = ("d", ((("s", "x"), ("s", fixed)), (("s", "y"), ("p", 0))))
    fill = skeleton.filler(plan)
    assert fill is not None
    doc = fill(["v"])
    assert doc == {"x": {"a": [1, 2]}, "y": "v"} and doc["x"] is fixed
    assert skeleton.filler(("d", ((("p", 0), ("s", 1)),))) is None


def _at(doc: Any, path: tuple[Any, ...]) -> Any:
    for key in path:
        doc = doc[key]
    return doc


def test_holes_say_where_every_value_sits(tmp_path: Path) -> None:
    """For every manifest of the example fleet: each value of ``render_filled``'s holes sits at
    its path; everything else is the same in every object of the shape (the parse of the
    skeleton); a key written from a value gives no holes."""
    root = copy_fleet(tmp_path)
    plan = load_plan(root / "profiles", base=root)
    env = make_environment(None)
    holed = total = 0
    for cluster in plan.clusters:
        for spec in cluster.manifests:
            filled = skeleton.render_filled(env, env.get_template(spec.template),
                                            dict(spec.context), yamlfast.load_all)
            assert filled is not None
            total += 1
            if filled.holes is None:
                continue
            holed += 1
            (doc,) = filled.docs
            shape = filled.holes.shape
            assert len(shape.paths) == len(filled.holes.values) == len(filled.holes.texts)
            for path, value, text in zip(shape.paths, *filled.holes[1:], strict=True):
                assert _at(doc, path) is value
                assert yamlfast.load_all(text) == [value]
    assert holed > total * 0.9
    env = _env({"k.j2": "a:\n  {{ key|tojson }}: {{ v|tojson }}\n"})
    keyed = skeleton.render_filled(env, env.get_template("k.j2"), {"key": "x", "v": 1},
                                   yamlfast.load_all)
    assert keyed is not None and keyed.holes is None


def test_objects_of_one_shape_share_its_digest_and_paths() -> None:
    env = _env({"t.j2": "a: {{ v|tojson }}\nb:\n- {{ w|tojson }}\n- fixed\n"})
    one, two = (skeleton.render_filled(env, env.get_template("t.j2"), c, yamlfast.load_all)
                for c in ({"v": 1, "w": "x"}, {"v": [1, 2], "w": None}))
    assert one is not None and two is not None and one.holes and two.holes
    assert one.holes.shape == two.holes.shape
    assert one.holes.shape.paths == (("a",), ("b", 0))
    assert one.holes.shape.tree == {"a": skeleton.HOLE, "b": {0: skeleton.HOLE}}
    assert two.holes.values == ([1, 2], None)
