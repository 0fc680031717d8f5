"""The fleet: profiles loaded with their positions, resolved into the immutable Plan, and
what every capability shares — names, labels and tolerations (``manifests``), where a
service can land (``placement``) and whether its model fits there (``sizing``), and the
generated-file header (``generated``). Capabilities meet here and in ``gen.pipeline``."""
