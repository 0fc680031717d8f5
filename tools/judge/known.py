"""Disagreements between gen and the upstream components that are documented, with the reason.

Each key is a case id (:class:`tools.judge.report.Verdict.case`); the value is the reason, which
``docs/conformance.md`` repeats for users. A case listed here that agrees again is reported as
stale, so the list cannot outlive the difference it explains.
"""

from __future__ import annotations

__all__ = ["KNOWN"]

KNOWN: dict[str, str] = {}


# --- the fast oracle (tools/judge/oracle.py) ----------------------------------------------

_CONSUMABLE_CAPACITY = (
    "gen does not model DRAConsumableCapacity (beta, on by default from 1.36): with it the DRA "
    "environment declares device.allowMultipleAllocations "
    "(kubernetes/dynamic-resource-allocation cel/compile.go@v0.36.3 newCompiler); gen refuses "
    "the field on every version (the upstream test runs with the gate off)"
)
_STRING_OF_IP = (
    "a documented deviation (docs/cel.md, Deviations; tests/dra/cel/corpus/net.yaml "
    "known_difference): gen's checker (cel-expr-python) cannot add overloads to the standard "
    "string() conversion, so string() of an IP or CIDR does not compile in gen"
)
_NET_TYPE_NAMES = (
    "both refuse it, for different reasons: gen's checker does not declare net.IP / net.CIDR "
    "(docs/cel.md, Deviations), and the 1.36 API server finds type(...) == net.IP too complex "
    "(a type value has no size cel-go's estimator knows)"
)

KNOWN.update(dict.fromkeys([
    'cel:dra.yaml:TestCEL/allow_multiple_allocations_disabled',
], _CONSUMABLE_CAPACITY))
KNOWN.update(dict.fromkeys([
    'cel:net.yaml:TestIP/converting_an_IP_address_to_a_string',
    'cel:net.yaml:TestCIDR/converting_a_CIDR_to_a_string',
], _STRING_OF_IP))
KNOWN.update(dict.fromkeys([
    'cel:net.yaml:TestIP/type_of_IP_is_net.IP',
    'cel:net.yaml:TestCIDR/type_of_CIDR_is_net.CIDR',
], _NET_TYPE_NAMES))
