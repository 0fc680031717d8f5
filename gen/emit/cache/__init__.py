"""The render cache, kept in ``out/.gen-cache/``: it can make a render faster, never
different.

A render skips a cluster (no templates rendered, no schema validation) only when both hold:

1. the cluster's fingerprint now equals the one its record was written with, so a full
   render would produce exactly the files the record lists, with the bytes it hashed;
2. every file the record lists is in out/ and still hashes to what was recorded, so out/
   already holds those bytes (a hand-edited or deleted file makes the cluster render);
   a file is taken as hashing so without being read only when its stat is the stat
   table's entry and the fleet record the table is bound to lists the same SHA-256
   (:mod:`~gen.emit.cache.stat`: any edit, rename, append or removal changes the stat).

The skipped cluster's files are then the bytes of out/ (read when something asks for
them, their hash checked then), which by (1) and (2) are the bytes a full render
writes. The fleet record extends the same argument to the whole render: when its input
digest and every file it lists match, nothing is loaded.
Every record is JSON only, never anything that runs code when loaded; a damaged one is a
miss, and a value that cannot be serialized canonically means the cluster is rendered.

The parts, one module each: :mod:`~gen.emit.cache.layout` (paths in out/),
:mod:`~gen.emit.cache.env` (gen's version, code and libraries),
:mod:`~gen.emit.cache.fingerprint`, :mod:`~gen.emit.cache.records` (a cluster's record),
:mod:`~gen.emit.cache.trust`, :mod:`~gen.emit.cache.prebuild` (the key before the build),
:mod:`~gen.emit.cache.fleet` (the input digest and fleet record),
:mod:`~gen.emit.cache.stat` (the stat table), :mod:`~gen.emit.cache.fast` (the fleet
fast path as a render takes it) and :mod:`~gen.emit.cache.parsed` (the parse cache: each
profile file's parsed documents, under the user's cache folder, never in out/).
"""

from gen.emit.cache._canonical import Uncacheable, canonical_json
from gen.emit.cache._trees import builtin_templates
from gen.emit.cache.env import code_digest, env_key, gen_versions
from gen.emit.cache.fast import (
    FastPath,
    fast_path,
    fleet_record_of,
    render_digest,
    vouched_outputs,
)
from gen.emit.cache.fingerprint import Fingerprinter
from gen.emit.cache.fleet import (
    FleetRecord,
    fleet_record_bytes,
    input_digest,
    parse_fleet_record,
    read_fleet_record,
    shown_path,
)
from gen.emit.cache.layout import (
    CACHE_DIR,
    CACHE_GITIGNORE,
    CACHE_GITIGNORE_BYTES,
    FLEET_RECORD,
    FORMAT,
    OWN_FILES,
    STAT_TABLE,
    TRUST_FILE,
    Reach,
    clusters_of,
    is_cache_path,
    record_path,
)
from gen.emit.cache.prebuild import PrebuildKey, prebuild_key, template_tree_digest
from gen.emit.cache.records import (
    CacheRecord,
    LintRecord,
    kept_records,
    new_record,
    parse_record,
    read_lint_record,
    read_record,
    record_bytes,
    same_but_env,
    stale_records,
    verified_files,
    verified_hashes,
)
from gen.emit.cache.stat import (
    SLEEP_BEFORE_SWAP_FILES,
    STAT_MARGIN_NS,
    StatTable,
    StatVouchers,
    VerifiedFiles,
    combined,
    file_text,
    read_stat_table,
    split_listing,
    stat_of,
    stat_vouchers,
    write_stat_table,
)
from gen.emit.cache.trust import read_trusted, trust_bytes, trusted

__all__ = [
    "CACHE_DIR",
    "CACHE_GITIGNORE",
    "CACHE_GITIGNORE_BYTES",
    "FLEET_RECORD",
    "FORMAT",
    "OWN_FILES",
    "SLEEP_BEFORE_SWAP_FILES",
    "STAT_MARGIN_NS",
    "STAT_TABLE",
    "TRUST_FILE",
    "CacheRecord",
    "FastPath",
    "Fingerprinter",
    "FleetRecord",
    "LintRecord",
    "PrebuildKey",
    "Reach",
    "StatTable",
    "StatVouchers",
    "Uncacheable",
    "VerifiedFiles",
    "builtin_templates",
    "canonical_json",
    "clusters_of",
    "code_digest",
    "combined",
    "env_key",
    "fast_path",
    "file_text",
    "fleet_record_bytes",
    "fleet_record_of",
    "gen_versions",
    "input_digest",
    "is_cache_path",
    "kept_records",
    "new_record",
    "parse_fleet_record",
    "parse_record",
    "prebuild_key",
    "read_fleet_record",
    "read_lint_record",
    "read_record",
    "read_stat_table",
    "read_trusted",
    "record_bytes",
    "record_path",
    "render_digest",
    "same_but_env",
    "shown_path",
    "split_listing",
    "stale_records",
    "stat_of",
    "stat_vouchers",
    "template_tree_digest",
    "trust_bytes",
    "trusted",
    "verified_files",
    "verified_hashes",
    "vouched_outputs",
    "write_stat_table",
]
