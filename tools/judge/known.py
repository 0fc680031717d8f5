"""Disagreements between gen and the upstream components that are documented, with the reason.

Each key is a case id (:class:`tools.judge.report.Verdict.case`); the value is the reason, which
``docs/conformance.md`` repeats for users. A case listed here that agrees again is reported as
stale, so the list cannot outlive the difference it explains.
"""

from __future__ import annotations

__all__ = ["KNOWN"]

KNOWN: dict[str, str] = {}


# --- the fast oracle (tools/judge/oracle.py) ----------------------------------------------

_COST_LIST_ELEMENTS = (
    "the 1.36 API server refuses this selector as too complex and gen accepts it: Kubernetes' "
    "cost of isSorted/sum/min/max/indexOf/lastIndexOf/join on a list of strings or bytes is the "
    "list size times the element size (kubernetes/apiserver pkg/cel/library/cost.go@v0.36.3), "
    "which DRA's size estimator knows only for values read from the device "
    "(kubernetes/dynamic-resource-allocation cel/compile.go@v0.36.3 sizeEstimator): for a literal "
    "list it is unbounded; gen's estimate (gen/dra/cel/_cost.py) bounds it by the literals"
)
_COST_UNBOUNDED_EQUALITY = (
    "the 1.36 API server refuses this selector as too complex and gen accepts it: cel-go prices "
    "== and != by the smaller operand size (google/cel-go checker/cost.go@v0.26.0 functionCost), "
    "unbounded when neither operand has a size it knows (a URL accessor's string, an optional, a "
    "format, a semver compared with !=) and Kubernetes' library does not price the comparison "
    "(pkg/cel/library/cost.go@v0.36.3 handles == of IP, CIDR, quantity, semver, format and URL "
    "only); gen bounds such values by 64 characters"
)
_COST_SLICE_WRAP = (
    "the 1.36 API server refuses this selector as too complex and gen accepts it (and fails at "
    "run time): cel-go sizes slice(start, end) of literal indexes as end - start in uint64 "
    "(google/cel-go ext/lists.go@v0.26.0 estimateListSlice), which wraps when start > end"
)
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
    ("cel:cost.yaml:TestListsCost/['012345678901', '012345678901', '012345678901', '01"
     "2345678901', '012345678901'].isSorted()"),
    ("cel:cost.yaml:TestListsCost/['012345678901', '012345678901', '012345678901', '01"
     "2345678901', '012345678901'].max()"),
    ("cel:cost.yaml:TestListsCost/['012345678901', '012345678901', '012345678901', '01"
     "2345678901', '012345678901'].min()"),
    ("cel:cost.yaml:TestListsCost/[bytes('012345678901'), bytes('012345678901'), bytes"
     "('012345678901'), bytes('012345678901'), bytes('012345678901')].isSorted()"),
    ("cel:cost.yaml:TestListsCost/[bytes('012345678901'), bytes('012345678901'), bytes"
     "('012345678901'), bytes('012345678901'), bytes('012345678901')].max()"),
    ("cel:cost.yaml:TestListsCost/[bytes('012345678901'), bytes('012345678901'), bytes"
     "('012345678901'), bytes('012345678901'), bytes('012345678901')].min()"),
    ("cel:cost.yaml:TestIndexOfCost/['012345678901', '012345678901', '012345678901', '"
     "012345678901', '012345678901'].indexOf('x')"),
    ("cel:cost.yaml:TestIndexOfCost/['012345678901', '012345678901', '012345678901', '"
     "012345678901', '012345678901'].lastIndexOf('x')"),
    ("cel:cost.yaml:TestIndexOfCost/[bytes('012345678901'), bytes('012345678901'), byt"
     "es('012345678901'), bytes('012345678901'), bytes('012345678901')].indexOf(bytes("
     "'x'))"),
    ("cel:cost.yaml:TestIndexOfCost/[bytes('012345678901'), bytes('012345678901'), byt"
     "es('012345678901'), bytes('012345678901'), bytes('012345678901')].lastIndexOf(by"
     "tes('x'))"),
    'cel:cost.yaml:TestStringLibrary/join with separator',
    'cel:cost.yaml:TestStringLibrary/join',
    "cel:validation.yaml:TestValidationExpressions/stdlib_list_functions/self.strings.min()_==_'a'",
    "cel:validation.yaml:TestValidationExpressions/stdlib_list_functions/self.strings.max()_==_'c'",
    'cel:validation.yaml:TestValidationExpressions/stdlib_list_functions/self.strings.isSorted()',
    ('cel:validation.yaml:TestValidationExpressions/stdlib_list_functions/self.emptyStrings.is'
     'Sorted()'),
    ('cel:validation.yaml:TestValidationExpressions/stdlib_list_functions/self.unsortedStrings'
     '.isSorted()_==_false'),
    ('cel:validation.yaml:TestValidationExpressions/stdlib_list_functions/self.strings'
     ".indexOf('b')_==_1"),
    ('cel:validation.yaml:TestValidationExpressions/stdlib_list_functions/self.strings'
     ".lastIndexOf('b')_==_2"),
    ('cel:validation.yaml:TestValidationExpressions/stdlib_list_functions/self.strings'
     ".indexOf('x')_==_-1"),
    ('cel:validation.yaml:TestValidationExpressions/stdlib_list_functions/self.strings'
     ".lastIndexOf('x')_==_-1"),
    ('cel:validation.yaml:TestValidationExpressions/stdlib_list_functions/self.emptySt'
     "rings.min()_==_'a'"),
    ('cel:validation.yaml:TestValidationExpressions/stdlib_list_functions/self.emptySt'
     "rings.max()_==_'c'"),
    "cel:validation.yaml:TestValidationExpressions/listSets/self.val1.join('-')_==_'a-b-c'",
    "cel:validation.yaml:TestValidationExpressions/listSets/['a',_'b',_'c'].join('-')_==_'a-b-c'",
    "cel:validation.yaml:TestValidationExpressions/listSets/self.val1.join()_==_'abc'",
    "cel:validation.yaml:TestValidationExpressions/listSets/['a',_'b',_'c'].join()_==_'abc'",
], _COST_LIST_ELEMENTS))
KNOWN.update(dict.fromkeys([
    'cel:cost.yaml:TestURLsCost/url..getScheme()',
    'cel:cost.yaml:TestURLsCost/url..getHostname()',
    'cel:cost.yaml:TestURLsCost/url..getHost()',
    'cel:cost.yaml:TestURLsCost/url..getPort()',
    'cel:cost.yaml:TestURLsCost/url..getEscapedPath()',
    'cel:cost.yaml:TestURLsCost/url..getQuery()',
    'cel:cost.yaml:TestNameFormatCost/format.named',
    'cel:cost.yaml:TestNameFormatCost/format.dns1123Subdomain.validate',
    'cel:cost.yaml:TestNameFormatCost/format.dns1123label.validate',
    'cel:cost.yaml:TestNameFormatCost/format.dns1123label.validate#2',
    'cel:format.yaml:TestFormat/example_usage_dns1123Label',
    'cel:format.yaml:TestFormat/example_usage_dns1123Subdomain',
    'cel:format.yaml:TestFormat/example_usage_qualifiedName',
    'cel:format.yaml:TestFormat/example_usage_dns1123LabelPrefix',
    'cel:format.yaml:TestFormat/example_usage_dns1123SubdomainPrefix',
    'cel:format.yaml:TestFormat/example_usage_dns1035LabelPrefix',
    'cel:format.yaml:TestFormat/example_usage_uri',
    'cel:format.yaml:TestFormat/example_usage_uuid',
    'cel:format.yaml:TestFormat/example_usage_byte',
    'cel:format.yaml:TestFormat/example_usage_date',
    'cel:format.yaml:TestFormat/example_usage_datetime',
    'cel:format.yaml:TestFormat/dns1123Label',
    'cel:format.yaml:TestFormat/dns1123Subdomain',
    'cel:format.yaml:TestFormat/dns1035Label',
    'cel:format.yaml:TestFormat/qualifiedName',
    'cel:format.yaml:TestFormat/dns1123LabelPrefix',
    'cel:format.yaml:TestFormat/dns1123SubdomainPrefix',
    'cel:format.yaml:TestFormat/dns1035LabelPrefix',
    'cel:format.yaml:TestFormat/dns1123Label_Success',
    'cel:format.yaml:TestFormat/dns1123Subdomain_Success',
    'cel:format.yaml:TestFormat/dns1035Label_Success',
    'cel:format.yaml:TestFormat/qualifiedName_Success',
    'cel:format.yaml:TestFormat/byte_success',
    'cel:format.yaml:TestFormat/byte_failure',
    'cel:format.yaml:TestFormat/date_success',
    'cel:format.yaml:TestFormat/date_failure',
    'cel:format.yaml:TestFormat/datetime_success',
    'cel:format.yaml:TestFormat/datetime_failure',
    'cel:format.yaml:TestFormat/labelValue_success',
    'cel:format.yaml:TestFormat/labelValue_failure',
    'cel:semver.yaml:TestCompareHelper/v1.NE(v)',
], _COST_UNBOUNDED_EQUALITY))
KNOWN.update(dict.fromkeys([
    ('cel:validation.yaml:TestValidationExpressions/ext_lists_version_3/[1,2,3,4].slice(3,_0)_'
     '!=_[1,2]'),
], _COST_SLICE_WRAP))
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
