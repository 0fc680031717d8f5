"""``==`` / ``!=`` / ``in`` with Kubernetes' ``Semver`` and ``Quantity`` values, and
``isInteger()`` / ``asInteger()`` from how apimachinery stores a quantity.

Kubernetes: ``Semver.Equal`` / ``Quantity.Equal`` answer "no such overload" for another type
(staging/src/k8s.io/apiserver/pkg/cel/semver.go and quantity.go @ v1.36.0); cel-go's ``==``
returns that error, its ``!=`` answers true whenever ``Equal`` is not true, ``null`` is
compared first (google/cel-go interpreter/interpretable.go ``evalEq``/``evalNe``,
common/types/util.go ``Equal`` @ v0.26.0); list elements stop only at ``False``
(common/types/list.go ``Equal``) and ``in`` at the first ``True`` (``Contains``).
"""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pytest

from gen.dra.cel import compile_selector, evaluate
from gen.dra.devices import Device
from gen.errors import CELCompileError
from gen.k8s.semver import parse_version
from tests.helpers import lint_fleet

NV = "gpu.nvidia.com"
DEVICE = Device(
    NV,
    "gpu-0",
    {f"{NV}/driverVersion": parse_version("570.124.6"), f"{NV}/index": 0, f"{NV}/model": "H100"},
    {f"{NV}/memory": Decimal(80 * 2**30), f"{NV}/huge": Decimal(2**50)},
)
A = f"device.attributes['{NV}']"
C = f"device.capacity['{NV}']"
OVERLOAD = "CEL runtime error: no such overload"


@pytest.mark.parametrize(
    ("expression", "matched", "error"),
    [
        # the common mistake: a version attribute compared with a string
        (f"{A}.driverVersion == '570.124.6'", False, OVERLOAD),
        (f"{A}['driverVersion'] == '570.124.6' || false", False, OVERLOAD),
        (f"{A}.driverVersion == {A}.index", False, OVERLOAD),
        (f"{A}.?driverVersion.orValue('') == ''", False, OVERLOAD),
        ("dyn(quantity('1')) == 1", False, OVERLOAD),
        (f"semver('1.0.0') == {A}.model", False, OVERLOAD),
        # an error || true is true in CEL
        (f"{A}.driverVersion == '570.124.6' || true", True, None),
        # String.Equal / Int.Equal of another type is false, not an error
        (f"'570.124.6' == {A}.driverVersion", False, None),
        (f"{A}.model == {A}.driverVersion", False, None),
        # != is true whenever Equal is not true
        (f"{A}.driverVersion != '570.124.6'", True, None),
        # null is compared before Equal
        (f"{A}.driverVersion == null", False, None),
        # the fixes
        (f"{A}.driverVersion == semver('570.124.6')", True, None),
        (f"semver('570.124.6') == {A}.driverVersion", True, None),
        (f"{A}.driverVersion == semver('570.124.7')", False, None),
        (f"{A}.driverVersion.isGreaterThan(semver('570.0.0'))", True, None),
        # list elements: an error is not False; in: only True counts
        (f"[{A}.driverVersion] == ['570.124.6']", True, None),
        (f"[{A}.driverVersion, {A}.index] == [dyn('570.124.6'), dyn(2)]", False, None),
        (f"{A}.driverVersion in ['570.124.6']", False, None),
        # other attribute comparisons are untouched
        (f"{A}.model == 'H100' && {A}.index == 0", True, None),
    ],
)
def test_equality_with_a_version_or_quantity(
    expression: str, matched: bool, error: str | None
) -> None:
    result = evaluate(expression, DEVICE)
    assert (result.matched, result.error) == (matched, error)


@pytest.mark.parametrize(
    ("expression", "matched"),
    [
        # equal values, stored differently: still equal
        ("quantity('1') == quantity('1000m')", True),
        ("!(quantity('1') == quantity('1000m'))", False),
        ("quantity('1') in [quantity('1000m')]", True),
        ("[quantity('1')] == [quantity('1000m')]", True),
        (f"{C}.memory == quantity('80Gi')", True),
        (f"{C}.memory != quantity('81920Mi')", False),
    ],
)
def test_quantity_equality_is_by_value(expression: str, matched: bool) -> None:
    assert evaluate(expression, DEVICE).matched is matched


def test_inequality_of_two_computed_quantities_is_too_complex() -> None:
    """``!=`` of two quantity() values: Kubernetes prices ``==`` of quantities (cost 1) but not
    ``!=``, and cel-go prices that by sizes it does not know for either side, so the 1.36 API
    server refuses the selector as too complex (the judge's oracle, tools/judge/oracle.py);
    gen does too. Against a device capacity (a size DRA declares) it is fine."""
    with pytest.raises(CELCompileError, match="too complex, exceeds cost limit"):
        compile_selector("quantity('1') != quantity('1000m')")
    compile_selector(f"{C}.memory != quantity('1')")


@pytest.mark.parametrize(
    ("text", "integer"),
    [
        ("1000m", False),  # int64Amount (1000, -3): AsInt64 refuses a negative scale
        ("1.0", False),  # (10, -1)
        ("0.0", False),  # (0, -1)
        ("1Pi", False),  # a binary suffix past the fast path's precision: inf.Dec
        ("0.5Mi", False),  # a binary fraction: inf.Dec
        ("9999999999999999999999999999999999999G", False),  # 37 digits: inf.Dec
        ("1e20", False),  # (1, 20) overflows int64
        ("1", True),
        ("0", True),
        ("1k", True),
        ("1Ti", True),
        ("80Gi", True),
    ],
)
def test_is_integer_follows_the_storage(text: str, integer: bool) -> None:
    assert evaluate(f"quantity('{text}').isInteger()", DEVICE).matched is integer
    result = evaluate(f"quantity('{text}').asInteger() >= 0", DEVICE)
    if integer:
        assert (result.matched, result.error) == (True, None)
    else:
        assert result.error == "CEL runtime error: cannot convert value to integer"


@pytest.mark.parametrize(
    ("expression", "matched"),
    [
        ("quantity('500m').add(quantity('500m')).isInteger()", False),  # (1000, -3)
        ("quantity('1m').add(quantity('1')).isInteger()", False),  # (1001, -3)
        ("quantity('1').add(1).isInteger()", True),  # (2, 0)
        ("quantity('1Pi').sub(quantity('1Pi')).isInteger()", False),  # inf.Dec stays one
        ("quantity('50k').add(20).sub(quantity('100k')).sub(-50000).asInteger() == 20", True),
        (f"{C}.memory.isInteger()", True),  # published as 80Gi
        (f"{C}.huge.isInteger()", False),  # published as 1Pi
    ],
)
def test_is_integer_after_arithmetic_and_on_capacity(expression: str, matched: bool) -> None:
    result = evaluate(expression, DEVICE)
    assert (result.matched, result.error) == (matched, None)


CLASSES = (
    "kind: GPUClass\nname: h100\nmatch: {{product: h100-sxm5-80gb}}\ncel: [\"{cel}\"]\n"
    "---\nkind: GPUClass\nname: mig-3g\ndevice_type: mig\nmatch: {{mig_profile: 3g.40gb}}\n"
)


def test_version_compared_with_a_string_is_gen206_at_the_selector(tmp_path: Path) -> None:
    """The mistake is GEN206 at the class's cel entry, with the fix in the message."""
    cel = f"{A}.driverVersion == '580.95.5'"
    findings = lint_fleet(tmp_path, **{"classes.yaml": CLASSES.format(cel=cel)})
    found = [f for f in findings if f.rule == "GEN206"]
    assert found, [f.format() for f in findings]
    assert {f.key_path for f in found} == {"cel[0]"}
    assert all(f.location is not None and f.location.path.endswith("classes.yaml")
               for f in found)
    message = found[0].message
    assert "no such overload" in message
    assert "driverVersion is a version (580.95.5)" in message
    assert f"{A}.driverVersion with semver('580.95.5')" in message


def test_version_compared_with_semver_is_no_gen206(tmp_path: Path) -> None:
    """The near miss: the same comparison written with semver() runs."""
    cel = f"{A}.driverVersion == semver('580.95.5')"
    findings = lint_fleet(tmp_path, **{"classes.yaml": CLASSES.format(cel=cel)})
    assert not [f for f in findings if f.rule == "GEN206"], [f.format() for f in findings]
