"""The fleets the control plane judges: the example fleet, the acme fleet written from the docs,
the dynamic-MIG fixtures, and the lint corpus's mutations of the example fleet
(``tests/corpus/cases/*.yaml``) — each mutation judged only on the clusters whose rendered
objects it changes, since the others were judged with the example fleet already.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

from gen.emit.render import make_environment, render_cluster
from gen.errors import GenError
from gen.pipeline import load_plan
from tools.judge.live import Fleet

__all__ = ["CORPUS_GROUPS", "live_fleets"]

REPO = Path(__file__).resolve().parents[2]

CORPUS_GROUPS = ("dra", "dynamic-mig", "mig", "security", "serving", "render", "kueue",
                 "multinode", "multinode-rack", "disaggregation")
"""Corpus files whose cases change what the control plane decides on (DRA classes, claims,
capacity, MIG, Pod Security, workloads, Kueue queues, LeaderWorkerSet groups and
ComputeDomains); input, GitOps, CRD-folder and Apple cases do not."""


def _digests(profiles: Path, base: Path) -> dict[str, str]:
    """Cluster → digest of its rendered objects ({} when the fleet does not load)."""
    try:
        plan = load_plan(profiles, base=base)
    except GenError:
        return {}
    env = make_environment()
    digests = {}
    for cluster in plan.clusters:
        try:
            objects, _ = render_cluster(env, cluster)
        except GenError:
            continue
        text = json.dumps([o.data for o in objects], sort_keys=True, default=str)
        digests[cluster.name] = hashlib.sha256(text.encode()).hexdigest()
    return digests


def corpus_fleets(scratch: Path, groups: tuple[str, ...] = CORPUS_GROUPS
                  ) -> Iterator[tuple[Fleet, tuple[str, ...]]]:
    """(fleet, clusters to judge) for each corpus case of ``groups`` that changes a
    cluster's objects."""
    from tests.corpus.edits import apply_edit
    from tests.corpus.test_corpus import CASES

    base_digests = _digests(REPO / "profiles", REPO)
    for case in CASES:
        if case.group not in groups or case.mode not in ("lint", "render") or case.xfail:
            continue
        root = scratch / f"{case.group}-{case.name}"
        shutil.copytree(REPO / "profiles", root / "profiles", symlinks=True)
        for edit in (*case.setup, *case.edits):
            apply_edit(root, edit)
        changed = tuple(name for name, digest in _digests(root / "profiles", root).items()
                        if base_digests.get(name) != digest)
        if changed:
            yield Fleet(f"corpus/{case.group}.yaml:{case.name}", root / "profiles", root), changed


def live_fleets(scratch: Path) -> Iterator[tuple[Fleet, tuple[str, ...]]]:
    """Every fleet the control-plane categories judge, with the clusters to judge (() = all);
    the corpus's mutated fleets are written under ``scratch``. ``GEN_JUDGE_CORPUS=0`` leaves
    the corpus out (a quick run); ``GEN_JUDGE_CORPUS=serving,disaggregation`` judges only
    those corpus files."""
    yield Fleet("example", REPO / "profiles", REPO), ()
    acme = REPO / "tests" / "corpus" / "fleets" / "acme"
    yield Fleet("acme", acme / "profiles", acme), ()
    fixtures = REPO / "tests" / "fixtures"
    yield Fleet("fixtures/dynamic-mig", fixtures / "dynamic-mig", fixtures), ()
    chosen = os.environ.get("GEN_JUDGE_CORPUS", "1")
    if chosen == "1":
        yield from corpus_fleets(scratch)
    elif chosen != "0":
        groups = tuple(g for g in chosen.split(",") if g)
        unknown = sorted(set(groups) - set(CORPUS_GROUPS))
        if unknown:
            raise SystemExit(f"GEN_JUDGE_CORPUS: no corpus group {', '.join(unknown)}; "
                             f"known: {', '.join(CORPUS_GROUPS)}")
        yield from corpus_fleets(scratch, groups)
