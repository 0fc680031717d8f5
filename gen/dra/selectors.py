"""Compile a GPUClass's structured match into DRA CEL selectors.

Every expression is guarded by ``device.driver == '<driver>'`` so that devices of other
drivers (whose attribute domains are empty maps) never raise "no such key". Capacities
are compared with ``quantity().compareTo``, versions with ``semver().compareTo``, and an
optional capacity (``memory`` is absent on some unified-memory GPUs) with ``has()``.

:func:`class_cel` is which devices a class selects, decided in one place: the DRA builder
writes it into the DeviceClass, and the DRA rules compile (GEN203) and evaluate (GEN204–
GEN206) the same expressions.
"""

from __future__ import annotations

from gen.models import GPUClass

__all__ = ["cel_string", "class_cel", "class_selectors", "semver_literal"]


def cel_string(value: str) -> str:
    """A CEL single-quoted string literal."""
    escaped = value.replace("\\", "\\\\").replace("'", "\\'").replace("\n", "\\n")
    return f"'{escaped}'"


def semver_literal(version: str) -> str:
    """'8.0' → '8.0.0', '570.124.06' → '570.124.6' (the driver normalises to semver)."""
    parts = [str(int(p)) for p in version.split(".")]
    while len(parts) < 3:
        parts.append("0")
    return ".".join(parts[:3])


def class_selectors(
    gpu_class: GPUClass, product_name: str | tuple[str, ...] | None = None
) -> tuple[str, ...]:
    """The CEL selectors of a class: one structured expression, then the raw ones.

    ``product_name`` may list several names: one PCI id sold under several products (the
    GH200 0x2342 reports "NVIDIA GH200 480GB" or "NVIDIA GH200 120GB") matches any of them.
    """
    driver = gpu_class.driver
    attrs = f"device.attributes[{cel_string(driver)}]"
    caps = f"device.capacity[{cel_string(driver)}]"
    terms = [f"device.driver == {cel_string(driver)}"]
    if driver == "gpu.nvidia.com":
        terms.append(f"{attrs}.type == {cel_string(gpu_class.device_type)}")
    match = gpu_class.match
    product = product_name or match.product
    if isinstance(product, tuple) and len(product) > 1:
        names = ", ".join(cel_string(p) for p in product)
        terms.append(f"{attrs}.productName in [{names}]")
    elif product:
        one = product[0] if isinstance(product, tuple) else product
        terms.append(f"{attrs}.productName == {cel_string(one)}")
    if match.architecture:
        terms.append(f"{attrs}.architecture == {cel_string(match.architecture)}")
    if match.mig_profile:
        terms.append(f"{attrs}.profile == {cel_string(match.mig_profile)}")
    if match.min_memory:
        terms.append(
            f"has({caps}.memory) && "
            f"{caps}.memory.compareTo(quantity({cel_string(match.min_memory)})) >= 0"
        )
    if match.min_compute_capability:
        lit = semver_literal(match.min_compute_capability)
        terms.append(
            f"{attrs}.cudaComputeCapability.compareTo(semver({cel_string(lit)})) >= 0"
        )
    if match.min_driver_version:
        lit = semver_literal(match.min_driver_version)
        terms.append(f"{attrs}.driverVersion.compareTo(semver({cel_string(lit)})) >= 0")
    return (" && ".join(terms), *gpu_class.cel)


def _product_name(gpu_class: GPUClass) -> str | tuple[str, ...] | None:
    """The product name(s) the driver reports for the class's product: the name itself when
    the profile writes one the driver reports, every name of the catalog GPU for a catalog
    id or PCI id, or the profile's text when the catalog does not know it."""
    from gen.nvidia.gpus import gpu_catalog

    product = gpu_class.match.product
    if product is None:
        return None
    gpu = gpu_catalog().find(product)
    if gpu is None:
        return product
    exact = [n for n in gpu.product_names if n.casefold() == product.strip().casefold()]
    return exact[0] if exact else gpu.product_names


def class_cel(gpu_class: GPUClass) -> tuple[str, ...]:
    """The CEL selectors of a class as its DeviceClass carries them, product names resolved
    through the GPU catalog."""
    return class_selectors(gpu_class, _product_name(gpu_class))
