"""Dynamic Resource Allocation: the CEL selector engine (``cel``), simulated devices and
ResourceSlices (``devices``, ``simulate``), class selectors (``selectors``), whether
claims can be satisfied (``satisfiability``), ``gen explain`` as data (``explain``), the
DeviceClass / ResourceClaimTemplate builder and its lint rules (GEN2xx)."""
