from __future__ import annotations

import time
from decimal import Decimal

import pytest

from gen.dra.cel import (
    SelectorResult,
    compile_selector,
    evaluate,
    explain_miss,
)
from gen.dra.devices import Device, device_from_resourceslice_entry
from gen.errors import CELCompileError, CELRuntimeError, DeviceError, VersionError
from gen.k8s.semver import Version, parse_version

NV = "gpu.nvidia.com"
MEM = f"device.capacity['{NV}'].memory"
ATTR = f"device.attributes['{NV}']"

H100_ENTRY = {
    "name": "gpu-0",
    "attributes": {
        "type": {"string": "gpu"},
        "uuid": {"string": "GPU-4f1e0c2a-0000-0000-0000-000000000000"},
        "productName": {"string": "NVIDIA H100 80GB HBM3"},
        "brand": {"string": "Nvidia"},
        "architecture": {"string": "Hopper"},
        "cudaComputeCapability": {"version": "9.0.0"},
        "driverVersion": {"version": "580.65.6"},
        "cudaDriverVersion": {"version": "13.0.0"},
        "resource.kubernetes.io/pciBusID": {"string": "0000:1b:00.0"},
        "resource.kubernetes.io/pcieRoot": {"string": "pci0000:15"},
    },
    "capacity": {"memory": {"value": "81559Mi"}},
}
MIG_ENTRY = {
    "name": "gpu-0-mig-1g10gb-9-0",
    "attributes": {
        "type": {"string": "mig"},
        "parentUUID": {"string": "GPU-4f1e0c2a-0000-0000-0000-000000000000"},
        "profile": {"string": "1g.10gb"},
        "productName": {"string": "NVIDIA H100 80GB HBM3"},
        "architecture": {"string": "Hopper"},
        "cudaComputeCapability": {"version": "9.0.0"},
        "driverVersion": {"version": "580.65.6"},
    },
    "capacity": {
        "memory": {"value": "9856Mi"},
        "multiprocessors": {"value": "16"},
        "copyEngines": {"value": "1"},
        "memorySlice0": {"value": "1"},
    },
}


@pytest.fixture
def h100() -> Device:
    """A full H100 as the NVIDIA DRA driver publishes it."""
    return device_from_resourceslice_entry(H100_ENTRY, NV)


@pytest.fixture
def mig() -> Device:
    """A 1g.10gb MIG slice of an H100."""
    return device_from_resourceslice_entry(MIG_ENTRY, NV)


# --- devices ---------------------------------------------------------------------------------


def test_device_entry_qualifies_names(h100: Device) -> None:
    """Unqualified names go to the driver's domain; qualified ones keep theirs."""
    assert h100.attributes[f"{NV}/productName"] == "NVIDIA H100 80GB HBM3"
    assert h100.attributes["resource.kubernetes.io/pcieRoot"] == "pci0000:15"
    assert h100.attributes[f"{NV}/driverVersion"] == Version(580, 65, 6)
    assert h100.capacity[f"{NV}/memory"] == Decimal(81559 * 2**20)


def test_device_shape_key_ignores_name_only(h100: Device) -> None:
    """Devices differing only by name share a shape key; True and 1 do not collide."""
    twin = Device(h100.driver, "gpu-1", h100.attributes, h100.capacity)
    assert twin.shape_key() == h100.shape_key()
    assert twin != h100
    a = Device(NV, "a", {f"{NV}/x": True}, {})
    b = Device(NV, "a", {f"{NV}/x": 1}, {})
    assert a.shape_key() != b.shape_key()


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ({"attributes": {}}, "non-empty string 'name'"),
        ({"name": "d", "attributes": {"x": {"string": "a", "int": 1}}}, "exactly one of"),
        ({"name": "d", "attributes": {"x": {"int": "1"}}}, "wrong type"),
        ({"name": "d", "attributes": {"x": {"version": "1.0"}}}, "semantic version"),
        ({"name": "d", "attributes": {"x": {"float": 1.0}}}, "unknown field 'float'"),
        ({"name": "d", "attributes": {"x": {"strings": ["a"]}}}, "list attributes"),
        ({"name": "d", "capacity": {"memory": "80Gi"}}, "must be {value: <quantity>}"),
        ({"name": "d", "capacity": {"memory": {"value": "80GB"}}}, "regular expression"),
        ({"name": "d", "allowMultipleAllocations": "yes"}, "must be true or false"),
    ],
)
def test_device_entry_errors(entry: dict[str, object], message: str) -> None:
    """Malformed device entries raise DeviceError with a clear message."""
    with pytest.raises(DeviceError, match=message):
        device_from_resourceslice_entry(entry, NV)


def test_allow_multiple_allocations_follows_the_gate() -> None:
    """device.allowMultipleAllocations exists where DRAConsumableCapacity is on (its default
    from 1.36, or declared); unset reads false; off, it is cel-go's undefined field."""
    shared = device_from_resourceslice_entry({"name": "d", "allowMultipleAllocations": True}, NV)
    plain = device_from_resourceslice_entry({"name": "d"}, NV)
    expression = "device.allowMultipleAllocations"
    assert evaluate(expression, shared, 36).matched
    assert not evaluate(expression, plain, 36).matched
    assert evaluate(expression, shared, 35, consumable_capacity=True).matched
    for minor, gate in ((35, None), (37, False)):
        with pytest.raises(CELCompileError, match="undefined field 'allowMultipleAllocations' "
                           r"\(a field of the DRAConsumableCapacity feature gate"):
            compile_selector(expression, minor, gate)


# --- semver ----------------------------------------------------------------------------------


def test_semver_ordering_and_normalize() -> None:
    """Prereleases sort before releases; normalize pads and strips like semver(s, true)."""
    assert parse_version("1.0.0-alpha") < parse_version("1.0.0-alpha.1") < parse_version("1.0.0")
    assert parse_version("1.0.0-2") < parse_version("1.0.0-10") < parse_version("1.0.0-a")
    assert parse_version("1.2.3+build") == parse_version("1.2.3")
    assert parse_version("v01.2", normalize=True) == Version(1, 2, 0)
    with pytest.raises(VersionError):
        parse_version("01.2.3")


# --- selectors on real devices ---------------------------------------------------------------


def test_h100_memory_below_80gi(h100: Device) -> None:
    """81559Mi is less than 80Gi, so the classic ">= 80Gi" selector is false on an H100."""
    assert evaluate(f"{MEM}.compareTo(quantity('80Gi')) >= 0", h100) == SelectorResult(False)
    assert evaluate(f"{MEM}.compareTo(quantity('79Gi')) >= 0", h100) == SelectorResult(True)


def test_nvidia_device_class_selector(h100: Device, mig: Device) -> None:
    """The chart's gpu.nvidia.com class matches the full GPU, not the MIG slice."""
    expr = f"device.driver == '{NV}' && {ATTR}.type == 'gpu'"
    assert evaluate(expr, h100).matched
    assert not evaluate(expr, mig).matched


def test_mig_profile(mig: Device, h100: Device) -> None:
    """A profile selector matches the MIG slice and errors on a full GPU (no profile)."""
    expr = f"{ATTR}.profile == '1g.10gb'"
    assert evaluate(expr, mig).matched
    assert evaluate(expr, h100) == SelectorResult(False, "CEL runtime error: no such key: profile")


def test_missing_key_is_runtime_error(h100: Device) -> None:
    """An unknown key raises CELRuntimeError "no such key" (evaluate() reports it instead)."""
    selector = compile_selector(f"{ATTR}.index == 0")
    with pytest.raises(CELRuntimeError, match=r"^CEL runtime error: no such key: index$"):
        selector.evaluate(h100)


def test_unknown_domain_is_empty_map(h100: Device) -> None:
    """An unknown domain is an empty map: lookups fail, has() and optionals work, in is false."""
    other = "device.attributes['other.vendor']"
    assert evaluate(f"{other}.x == 1", h100).error == "CEL runtime error: no such key: x"
    assert evaluate(f"has({other}.x)", h100) == SelectorResult(False)
    assert evaluate(f"{other}.?x.orValue(7) == 7", h100).matched
    assert evaluate("'other.vendor' in device.attributes", h100) == SelectorResult(False)
    assert evaluate(f"'{NV}' in device.attributes", h100).matched
    assert evaluate("size(device.attributes) == 2", h100).matched
    assert evaluate("device.capacity['x'].?memory.hasValue() == false", h100).matched


def test_guard_protects_other_drivers() -> None:
    """A driver guard short-circuits the error a foreign device would raise."""
    foreign = Device("other.vendor", "dev-0", {"other.vendor/model": "x"}, {})
    expr = f"device.driver == '{NV}' && {ATTR}.productName == 'x'"
    assert evaluate(expr, foreign) == SelectorResult(False)
    assert (
        evaluate(f"{ATTR}.productName == 'x' && device.driver == '{NV}'", foreign).matched is False
    )


def test_optionals_and_has(h100: Device) -> None:
    """has(), .?x.orValue() and 'x' in map test optional attributes."""
    assert evaluate(f"has({ATTR}.productName)", h100).matched
    assert evaluate(f"!has({ATTR}.addressingMode)", h100).matched
    assert evaluate(f"{ATTR}.?addressingMode.orValue('None') == 'None'", h100).matched
    assert evaluate(f"'uuid' in {ATTR}", h100).matched


def test_quantity_library(h100: Device) -> None:
    """quantity() methods behave like Kubernetes' Quantity library."""
    true_exprs = [
        f"{MEM} == quantity('81559Mi')",
        "quantity('1Gi') == quantity('1024Mi')",
        f"{MEM}.isLessThan(quantity('80Gi'))",
        f"{MEM}.isGreaterThan(quantity('79Gi'))",
        f"{MEM}.add(quantity('1Mi')).compareTo(quantity('81560Mi')) == 0",
        f"{MEM}.sub(1).isLessThan({MEM})",
        "quantity('5').add(3) == quantity('8')",
        f"{MEM}.asInteger() == 85520809984",
        "quantity('1.5').asApproximateFloat() == 1.5",
        "sign(quantity('-2')) == -1 && sign(quantity('0')) == 0",
        "quantity('1.5').isInteger() == false && quantity('2k').isInteger()",
        "isQuantity('80Gi') && !isQuantity('80GB')",
    ]
    for expr in true_exprs:
        assert evaluate(expr, h100) == SelectorResult(True), expr
    assert "cannot convert" in str(evaluate("quantity('1.5').asInteger() == 1", h100).error)
    assert "regular expression" in str(evaluate("quantity('8GB') == quantity('1')", h100).error)


def test_semver_library(h100: Device) -> None:
    """semver() and version attributes compare as Kubernetes' semver library does."""
    cc = f"{ATTR}.cudaComputeCapability"
    true_exprs = [
        f"{cc}.compareTo(semver('9.0.0')) >= 0",
        f"{cc}.isGreaterThan(semver('8.9.0'))",
        f"{ATTR}.driverVersion.isLessThan(semver('590.0.0'))",
        f"{ATTR}.driverVersion == semver('580.65.6')",
        f"{ATTR}.driverVersion.major() == 580 && {ATTR}.driverVersion.minor() == 65",
        f"{ATTR}.driverVersion.patch() == 6",
        "semver('1.0.0-rc.1').isLessThan(semver('1.0.0'))",
        "isSemver('1.2.3') && !isSemver('1.2') && isSemver('v1.2', true)",
        "semver('v1.2', true) == semver('1.2.0')",
    ]
    for expr in true_exprs:
        assert evaluate(expr, h100) == SelectorResult(True), expr


def test_string_extension_and_bind(h100: Device) -> None:
    """Strings v2 functions, matches and cel.bind are available."""
    true_exprs = [
        f"{ATTR}.productName.lowerAscii().matches('^.*h100.*$')",
        f"{ATTR}.architecture.upperAscii() == 'HOPPER'",
        f"{ATTR}.productName.split(' ')[1] == 'H100'",
        f"{ATTR}.productName.indexOf('H100') == 7",
        f"{ATTR}.productName.substring(0, 6) == 'NVIDIA'",
        f"{ATTR}.productName.replace('NVIDIA ', '').startsWith('H100')",
        "' x '.trim() == 'x'",
        f"cel.bind(g, {ATTR}, g.architecture == 'Hopper' && g.brand == 'Nvidia')",
        f"{ATTR}.exists(k, k == 'uuid')",
    ]
    for expr in true_exprs:
        assert evaluate(expr, h100) == SelectorResult(True), expr
    # join() is there too, but a DRA selector cannot afford it: Kubernetes prices it by the
    # size of the list's elements, which it knows only for device values (never a list), so
    # the 1.36 API server refuses it as too complex (the judge's oracle, tools/judge/oracle.py).
    with pytest.raises(CELCompileError, match="too complex, exceeds cost limit"):
        compile_selector("['a', 'b'].join('-') == 'a-b'")


# --- compile-time checks ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("expr", "message"),
    [
        ("device.driver ==", "compilation failed: ERROR: <input>:1:"),
        ("device.drivr == 'x'", "undefined field 'drivr'"),
        ("device.driver == 1", "no matching overload"),
        ("quantity('1Gi') < quantity('2Gi')", "no matching overload"),
        (f"{MEM} > 1", "no matching overload"),
        ("semver('1.0.0').compareTo(quantity('1'))", "no matching overload"),
        ("nosuch(1)", "undeclared reference"),
        ("1 + 1", "must evaluate to bool or the unknown type, not int"),
        ("device.driver", "not string"),
    ],
)
def test_compile_errors(expr: str, message: str) -> None:
    """Syntax, type and result-type errors are CELCompileError at compile time."""
    with pytest.raises(CELCompileError, match=message):
        compile_selector(expr)


def test_non_bool_dyn_result_is_runtime_error(h100: Device) -> None:
    """A dyn result that is not a bool fails at run time, as in Kubernetes."""
    result = evaluate(f"{ATTR}.productName", h100)
    assert result == SelectorResult(
        False, "CEL result of type string could not be converted to bool"
    )


def test_length_limit() -> None:
    """Expressions longer than 10 Ki bytes are rejected before compiling."""
    longest = "true" + " " * (10 * 1024 - 4)
    assert compile_selector(longest).expression == longest
    with pytest.raises(CELCompileError, match="Too long: may not be more than 10240 bytes"):
        compile_selector(longest + " ")


def test_compile_is_cached() -> None:
    """compile_selector returns the same object for the same expression."""
    expr = f"device.driver == '{NV}'"
    assert compile_selector(expr) is compile_selector(expr)


def test_hostile_expressions_finish_quickly() -> None:
    """Doubling strings and nested comprehensions are refused by the cost limit, fast."""
    doubling = "cel.bind(a0, '" + "x" * 60 + "', "
    doubling += "".join(f"cel.bind(a{i}, a{i - 1} + a{i - 1}, " for i in range(1, 28))
    doubling += "size(a27) > 0" + ")" * 28
    big = "[" + ",".join(["0"] * 2000) + "]"
    nested = f"{big}.all(a, {big}.all(b, a == b))"
    start = time.perf_counter()
    for expr in (doubling, nested):
        with pytest.raises(CELCompileError, match="too complex, exceeds cost limit"):
            compile_selector(expr)
    assert time.perf_counter() - start < 5


def test_small_nested_loops_are_allowed(h100: Device) -> None:
    """Nested comprehensions within the cost limit compile and run."""
    small = "[" + ",".join(["0"] * 10) + "]"
    assert evaluate(f"{small}.all(a, {small}.all(b, a == b))", h100).matched


# --- explanations ----------------------------------------------------------------------------


def test_explain_false_conjunct(h100: Device) -> None:
    """A false && chain names the first false operand and the device value it reads."""
    expr = f"device.driver == '{NV}' && {MEM}.compareTo(quantity('80Gi')) >= 0"
    assert explain_miss(expr, h100) == (
        f"{MEM}.compareTo(quantity('80Gi')) >= 0 is false (memory = 81559Mi)"
    )


def test_explain_capacity_used_as_attribute(h100: Device) -> None:
    """'no such key: memory' on attributes points to device.capacity."""
    expr = f"{ATTR}.memory.compareTo(quantity('80Gi')) >= 0"
    reason = explain_miss(expr, h100)
    assert reason is not None
    assert "no such key: memory" in reason
    assert f"memory is a capacity: use device.capacity['{NV}'].memory" in reason


def test_explain_missing_attribute_and_match(h100: Device, mig: Device) -> None:
    """A key the device lacks suggests a guard; a match has no explanation."""
    expr = f"{ATTR}.profile == '1g.10gb'"
    assert "guard it with has(...)" in str(explain_miss(expr, h100))
    assert explain_miss(expr, mig) is None
    assert explain_miss("device.driver ==", h100) is not None


def test_evaluation_on_another_thread() -> None:
    """A selector evaluated on the main thread gives the same result on a worker thread
    (cel-expr-python keeps an activation's values in its thread's arena: an activation made on
    one thread failed on another, "No PyCelArena found", and lint reported GEN206 and GEN204
    for a library caller's threads). Found by tools/judge, whose control planes judge side by
    side on threads."""
    import threading

    from gen.dra.cel import evaluate
    from gen.dra.devices import Device

    device = Device("gpu.nvidia.com", "gpu-0", {"gpu.nvidia.com/type": "gpu"}, {})
    expression = "device.attributes['gpu.nvidia.com'].type == 'gpu'"
    assert evaluate(expression, device).matched is True  # the activation is cached here
    results = []
    worker = threading.Thread(target=lambda: results.append(evaluate(expression, device)))
    worker.start()
    worker.join()
    assert [(r.matched, r.error) for r in results] == [(True, None)]
