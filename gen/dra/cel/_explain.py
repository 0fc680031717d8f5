"""Cheap human reasons for lint messages: why a selector is false or fails on a device."""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal

from gen.dra.cel._engine import compile_selector
from gen.dra.cel._source import split_conjuncts
from gen.dra.devices import Device
from gen.errors import CELCompileError, CELRuntimeError
from gen.k8s.quantity import QuantityFormat, format_quantity
from gen.k8s.semver import Version

__all__ = ["Miss", "diagnose_miss", "explain_miss"]

_NO_SUCH_KEY = re.compile(r"no such key: (\S+)")
# device.capacity['d'].name, device.attributes["d"]['name'], ...
_REFERENCE = re.compile(
    r"device\s*\.\s*(?P<map>attributes|capacity)\s*\[\s*(?P<q>['\"])(?P<domain>[^'\"]+)(?P=q)\s*\]"
    r"\s*(?:\.\s*\??\s*(?P<dot>[A-Za-z_][A-Za-z0-9_]*)|\[\s*(['\"])(?P<key>[^'\"]+)\5\s*\])"
)


def _show(value: object) -> str:
    if isinstance(value, Decimal):
        return format_quantity(value, QuantityFormat.BINARY_SI)
    if isinstance(value, str):
        return repr(value)
    return str(value).lower() if isinstance(value, bool) else str(value)


Reads = tuple[tuple[str, str | None], ...]
"""(name, the device's value as shown, or None when the device lacks it), in source order."""


def _reads(text: str, device: Device) -> Reads:
    """The device data the CEL source ``text`` reads, with the device's values."""
    found: list[tuple[str, str | None]] = []
    for match in _REFERENCE.finditer(text):
        name = match["dot"] or match["key"]
        qualified = f"{match['domain']}/{name}"
        table = device.capacity if match["map"] == "capacity" else device.attributes
        value = table.get(qualified)
        item = (name, _show(value) if value is not None else None)
        if item not in found:
            found.append(item)
    return tuple(found)


def _shown(reads: Reads) -> str:
    """`` (memory = 81559Mi, productName = 'NVIDIA H100')``, or nothing."""
    items = [f"{name} = {value}" if value is not None else f"{name} is not set"
             for name, value in reads]
    return f" ({', '.join(items)})" if items else ""


def _missing_key(name: str, device: Device) -> str:
    """Where ``name`` really lives on the device, or that it is absent."""
    for qualified in sorted(device.capacity):
        domain, _, key = qualified.partition("/")
        if key == name:
            return f"{name} is a capacity: use device.capacity['{domain}'].{name}"
    for qualified in sorted(device.attributes):
        domain, _, key = qualified.partition("/")
        if key == name:
            return (
                f"{name} is an attribute of domain {domain}: "
                f"use device.attributes['{domain}'].{name}"
            )
    return (
        f"device {device.name} has no attribute or capacity {name}: guard it with "
        f"has(...) or .?{name}.orValue(...)"
    )


def _versions_read(text: str, device: Device) -> list[tuple[str, str, Version]]:
    """(domain, name, value) of each version attribute that ``text`` reads."""
    found = []
    for match in _REFERENCE.finditer(text):
        name = match["dot"] or match["key"]
        value = device.attributes.get(f"{match['domain']}/{name}")
        if match["map"] == "attributes" and isinstance(value, Version):
            item = (match["domain"], name, value)
            if item not in found:
                found.append(item)
    return found


def _version_hint(text: str, device: Device) -> str:
    """How to compare a version attribute: Kubernetes' ``Semver`` equals only a ``Semver``."""
    versions = _versions_read(text, device)
    if not versions:
        return ""
    domain, name, value = versions[0]
    return (
        f": {name} is a version ({value}), equal only to a version: compare "
        f"device.attributes['{domain}'].{name} with semver('{value}'), or use "
        f".isGreaterThan(semver(...)) / .isLessThan(semver(...)) / .compareTo(semver(...))"
    )


def _explain_error(error: str, text: str, device: Device) -> str:
    match = _NO_SUCH_KEY.search(error)
    if match is not None:
        return f"{error}: {_missing_key(match[1], device)}"
    hint = _version_hint(text, device) if error.endswith("no such overload") else ""
    return f"{error}{hint or _shown(_reads(text, device))}"


@dataclass(frozen=True)
class Miss:
    """Why a selector does not select a device, as data (:func:`diagnose_miss`)."""

    text: str
    """The reason for a person (what :func:`explain_miss` returns)."""
    conjunct: int | None = None
    """Index of the first false top-level ``&&`` operand; None when the selector does not
    compile, errors at run time, or is false as a whole."""
    source: str = ""
    """The CEL source that is false: that operand, or the whole expression."""
    reads: Reads = ()
    """The device data ``source`` reads, with the device's values."""


def diagnose_miss(expression: str, device: Device) -> Miss | None:
    """Why ``expression`` is false or fails on ``device``, as data; None if it matches.

    A compile error is returned as its message. A run-time "no such key: X" says where X
    really is (a capacity, another domain) or that the device lacks it. A false top-level
    ``a && b && ...`` names the first false operand and the device values it reads.
    """
    try:
        selector = compile_selector(expression)
    except CELCompileError as err:
        return Miss(err.message)
    try:
        if selector.evaluate(device):
            return None
    except CELRuntimeError as err:
        return Miss(_explain_error(err.message, expression, device))
    for index, part in enumerate(split_conjuncts(expression)):
        try:
            if not compile_selector(part).evaluate(device):
                reads = _reads(part, device)
                return Miss(f"{part} is false{_shown(reads)}", index, part.strip(), reads)
        except (CELCompileError, CELRuntimeError):
            continue
    reads = _reads(expression, device)
    return Miss(f"{expression.strip()} is false{_shown(reads)}", None, expression.strip(), reads)


def explain_miss(expression: str, device: Device) -> str | None:
    """A short reason why ``expression`` is false or fails on ``device``; None if it matches
    (the text of :func:`diagnose_miss`)."""
    miss = diagnose_miss(expression, device)
    return None if miss is None else miss.text
