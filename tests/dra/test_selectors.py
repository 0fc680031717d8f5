"""Class selectors by product: one PCI id sold under several product names matches them all."""

from __future__ import annotations

from decimal import Decimal

import pytest

from gen.dra.cel import compile_selector
from gen.dra.devices import Device
from gen.dra.selectors import class_cel
from gen.models import GPUClass

DRIVER = "gpu.nvidia.com"


def _device(product: str) -> Device:
    return Device(DRIVER, "gpu-0", {f"{DRIVER}/type": "gpu", f"{DRIVER}/productName": product},
                  {f"{DRIVER}/memory": Decimal(97871 * 2**20)})


def _matches(product_in_class: str, reported: str) -> bool:
    cls = GPUClass.model_validate({"kind": "GPUClass", "name": "c",
                                   "match": {"product": product_in_class}})
    return bool(compile_selector(class_cel(cls)[0]).evaluate(_device(reported)))


@pytest.mark.parametrize("reported", ["NVIDIA GH200 480GB", "NVIDIA GH200 120GB"])
def test_pci_id_matches_every_product_name(reported: str) -> None:
    """A class by 0x2342 (or its catalog id) selects both GH200 module names."""
    assert _matches("0x2342", reported)
    assert _matches("gh200-96gb", reported)


def test_exact_product_name_stays_exact() -> None:
    """A class that writes one product name selects only that one (near miss)."""
    assert _matches("NVIDIA GH200 120GB", "NVIDIA GH200 120GB")
    assert not _matches("NVIDIA GH200 120GB", "NVIDIA GH200 480GB")
    assert not _matches("0x2342", "NVIDIA H100 80GB HBM3")
