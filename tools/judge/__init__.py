"""gen's judge: the upstream components, built from their Go modules at pinned versions, decide
whether gen's verdicts are right.

``python tools/judge`` builds what is missing (:mod:`tools.judge.build`, cached by version outside
the repository), runs each category of the differential corpus and prints one line per category,
then ``judge: N/M agree``. Differences that are deliberate, or limits of the harness, are listed
in ``docs/conformance.md`` and in :data:`tools.judge.known.KNOWN`; any other difference fails the
run.

gen itself never imports this package: it is CI's and the developers' tool.
"""
