"""Apple Silicon: the chip catalog and GPU memory budgets (``chips``, a facts module), the
per-cluster decisions (``decide``: devices, fit, server configuration, or the error that
prevents one, made once and recorded in the Plan), launchd jobs for native Macs
(``launchd``), the builder and its lint rules (GEN6xx)."""
