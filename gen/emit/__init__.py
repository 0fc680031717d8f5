"""From manifests to out/: render (Jinja → canonical YAML, ``render``, ``skeleton``,
``yamlfast``), validate (``validate`` with jsonschema-rs; ``crd_schemas``, ``crd_convert``
and ``crd_rules`` for custom resources; ``kubeconform``), write (``output``, the only code
that touches out/; ``files``, a render's files by their paths' text), run in worker processes
(``parallel``), and SARIF for lint (``sarif``).
Knows no capability."""
