"""The built-in GPU catalog: contents, identities and look-ups."""

from __future__ import annotations

import pytest

from gen.errors import CatalogLookupError
from gen.nvidia.gpus import GPU, GPUCatalog, gpu_catalog, normalize_pci_id

# Every MIG-capable GPU the catalog's sources cover (MIG User Guide, mig-parted's
# config-default.yaml, pci.ids), by catalog id.
MIG_GPUS = [
    "a30",
    "a100-sxm4-40gb",
    "a100-pcie-40gb",
    "a100-sxm4-80gb",
    "a100-pcie-80gb",
    "a800-sxm4-40gb",
    "a800-pcie-40gb",
    "a800-sxm4-80gb",
    "a800-pcie-80gb",
    "h100-pcie-80gb",
    "h100-sxm5-80gb",
    "h800-sxm5-80gb",
    "h800-pcie-80gb",
    "h100-nvl",
    "h800-nvl",
    "h100-sxm5-94gb",
    "h100-96gb",
    "gh200-96gb",
    "h20",
    "h200-sxm",
    "h200-nvl",
    "gh200-144gb",
    "b200",
    "gb200",
    "b300",
    "gb300",
    "rtx-pro-6000-server",
    "rtx-pro-6000-workstation",
    "rtx-pro-6000-max-q",
]
PLAIN_GPUS = ["t4", "a10", "a10g", "l4", "l40s", "rtx-4090", "rtx-6000-ada", "rtx-3090",
              "rtx-a5000", "rtx-a6000"]
ALL_GPUS = gpu_catalog().all()


def test_catalog_is_cached() -> None:
    """gpu_catalog() parses the data once and returns the same object."""
    assert gpu_catalog() is gpu_catalog()


@pytest.mark.parametrize("gpu_id", MIG_GPUS)
def test_mig_gpus_present(gpu_id: str) -> None:
    """Every MIG-capable GPU of those sources is in the catalog with a MIG table."""
    gpu = gpu_catalog().lookup(gpu_id)
    assert gpu.mig_capable
    assert gpu.mig_units in (4, 8, 12)
    assert gpu.mig_compute_slices in (4, 7)


@pytest.mark.parametrize("gpu_id", PLAIN_GPUS)
def test_plain_gpus_have_no_mig(gpu_id: str) -> None:
    """Common inference GPUs without MIG have no MIG table."""
    gpu = gpu_catalog().lookup(gpu_id)
    assert not gpu.mig_capable
    assert gpu.mig_units == 0
    assert gpu.mig_profiles == ()
    assert gpu.mig_profile("1g.10gb") is None


def test_units_per_placement_class() -> None:
    """The grid is 8 units for S7 GPUs, 4 for the A30 and 12 for the RTX PRO 6000."""
    catalog = gpu_catalog()
    assert catalog.lookup("h100-sxm5-80gb").mig_units == 8
    assert catalog.lookup("b200").mig_units == 8
    assert catalog.lookup("a30").mig_units == 4
    assert catalog.lookup("rtx-pro-6000-server").mig_units == 12


@pytest.mark.parametrize("gpu", ALL_GPUS, ids=lambda g: g.id)
def test_identity_fields(gpu: GPU) -> None:
    """Every GPU has lowercase 0xDDDD PCI ids, an NVIDIA product name, memory and a CC."""
    assert gpu.vendor == "nvidia"
    assert not gpu.unified_memory
    assert gpu.pci_device_ids
    for pci in gpu.pci_device_ids:
        assert normalize_pci_id(pci) == pci
    assert gpu.product_name.startswith(("NVIDIA ", "Tesla "))
    assert gpu.memory_mib > 10_000
    major, minor = gpu.compute_capability.split(".")
    assert major.isdigit() and minor.isdigit()
    assert gpu.architecture in {"Turing", "Ampere", "Ada Lovelace", "Hopper", "Blackwell"}


@pytest.mark.parametrize("gpu", [g for g in ALL_GPUS if g.mig_capable], ids=lambda g: g.id)
def test_profile_tables_fit_their_grid(gpu: GPU) -> None:
    """Each profile's placements lie inside the grid and its max count can be placed."""
    for profile in gpu.mig_profiles:
        assert profile.starts == tuple(sorted(set(profile.starts)))
        assert all(s >= 0 and s + profile.size <= gpu.mig_units for s in profile.starts)
        assert 1 <= profile.compute_slices <= gpu.mig_compute_slices
        assert 1 <= profile.max_count <= len(profile.starts)
        assert 0 < profile.memory_mib <= gpu.memory_mib


def test_known_figures() -> None:
    """Spot checks of figures from public captures, NVIDIA's docs and the driver."""
    catalog = gpu_catalog()
    h100 = catalog.lookup("h100-sxm5-80gb")
    assert h100.product_name == "NVIDIA H100 80GB HBM3"
    assert h100.memory_mib == 81559
    assert h100.compute_capability == "9.0"
    assert h100.architecture == "Hopper"
    one = h100.mig_profile("1g.10gb")
    assert one is not None
    assert (one.memory_mib, one.memory_measured, one.sms, one.gi_profile_id) == (9984, True, 16, 19)
    assert catalog.lookup("a30").product_name == "NVIDIA A30"


def test_profile_names_are_per_gpu() -> None:
    """1g.10gb is a 2-unit profile on an A100-40GB but a 1-unit one on an H100."""
    catalog = gpu_catalog()
    a100 = catalog.lookup("a100-sxm4-40gb").mig_profile("1g.10gb")
    h100 = catalog.lookup("h100-sxm5-80gb").mig_profile("1g.10gb")
    assert a100 is not None and h100 is not None
    assert (a100.size, a100.max_count) == (2, 4)
    assert (h100.size, h100.max_count) == (1, 7)
    h200 = catalog.lookup("h200-sxm").mig_profile("1g.35gb")
    gb300 = catalog.lookup("gb300").mig_profile("1g.35gb")
    assert h200 is not None and gb300 is not None
    assert (h200.size, gb300.size) == (2, 1)


def test_media_flags() -> None:
    """+me and +me.all profiles carry their media flag; -me and +gfx do not."""
    rtx = gpu_catalog().lookup("rtx-pro-6000-server")
    flags = {p.name: p.media for p in rtx.mig_profiles}
    assert flags["1g.24gb+me"] == "me"
    assert flags["1g.24gb+me.all"] == "me.all"
    assert flags["2g.48gb+me.all"] == "me.all"
    assert flags["1g.24gb-me"] == ""
    assert flags["1g.24gb+gfx"] == ""


@pytest.mark.parametrize(
    "text",
    [
        "h100-sxm5-80gb",
        "H100-SXM5-80GB",
        "0x2330",
        "0X2330",
        "2330",
        "0x233010DE",
        "0x233010de",
        "233010de",
        "10de:2330",
        "NVIDIA H100 80GB HBM3",
        "nvidia h100 80gb hbm3",
        "  NVIDIA  H100 80GB HBM3 ",
        "H100 SXM5 80GB",
    ],
)
def test_lookup_forms(text: str) -> None:
    """A GPU is found by id, PCI id in every form, product name or marketing name."""
    assert gpu_catalog().lookup(text).id == "h100-sxm5-80gb"


@pytest.mark.parametrize("gpu", ALL_GPUS, ids=lambda g: g.id)
def test_lookup_every_pci_id(gpu: GPU) -> None:
    """Every PCI id of every GPU, with and without the 10DE suffix, finds that GPU."""
    catalog = gpu_catalog()
    for pci in gpu.pci_device_ids:
        assert catalog.lookup(pci) is gpu
        assert catalog.lookup(pci.upper().replace("0X", "0x") + "10DE") is gpu
        assert catalog.lookup(pci[2:] + "10de") is gpu
    assert catalog.lookup(gpu.product_name.upper()) is gpu


def test_lookup_other_product_names() -> None:
    """The GH200 96GB answers to both names the driver gives its module."""
    catalog = gpu_catalog()
    assert catalog.lookup("NVIDIA GH200 120GB").id == "gh200-96gb"
    assert catalog.lookup("NVIDIA GH200 480GB").id == "gh200-96gb"


def test_lookup_unknown_suggests_nearest() -> None:
    """An unknown name raises CatalogLookupError naming the nearest catalog names."""
    with pytest.raises(CatalogLookupError, match="h100-sxm5-80gb"):
        gpu_catalog().lookup("h100-sxm5-80")
    with pytest.raises(CatalogLookupError, match="unknown GPU 'zzz'"):
        gpu_catalog().lookup("zzz")
    with pytest.raises(CatalogLookupError):
        gpu_catalog().lookup("0x9999")


def test_find_returns_none() -> None:
    """find() answers None instead of raising."""
    assert gpu_catalog().find("no-such-gpu") is None
    assert gpu_catalog().find("l4") is not None


def test_with_gpus_extends_the_catalog() -> None:
    """Another module can add GPUs (e.g. Apple chips) to a copy of the catalog."""
    chip = GPU(
        id="m3-ultra",
        name="Apple M3 Ultra",
        vendor="apple",
        pci_device_ids=(),
        product_name="Apple M3 Ultra",
        memory_mib=524288,
        architecture="Apple",
        compute_capability="",
        unified_memory=True,
    )
    extended = gpu_catalog().with_gpus([chip])
    assert extended.lookup("m3-ultra") is chip
    assert extended.all()[-1] is chip
    assert gpu_catalog().find("m3-ultra") is None


def test_duplicate_names_rejected() -> None:
    """A catalog refuses two GPUs that share a PCI id or a name."""
    gpu = gpu_catalog().lookup("l4")
    with pytest.raises(ValueError, match="names both"):
        GPUCatalog(
            [
                gpu,
                GPU(
                    id="l4-copy",
                    name="copy",
                    vendor="nvidia",
                    pci_device_ids=gpu.pci_device_ids,
                    product_name="copy",
                    memory_mib=1,
                    architecture="Ada Lovelace",
                    compute_capability="8.9",
                ),
            ]
        )


def test_pg506_96gb_is_in_the_catalog() -> None:
    """0x20B6 (PG506-96GB, in the GPU Operator's default MIG config) has the 96GB profiles."""
    gpu = gpu_catalog().lookup("0x20B610DE")
    assert gpu.id == "pg506-96gb" and gpu.architecture == "Ampere"
    assert {"1g.12gb", "3g.48gb", "7g.96gb"} <= set(gpu.mig_profile_names)


def test_brand_as_the_driver_reports_it() -> None:
    """NVML's brand names: GeForce for an RTX 4090, NvidiaRTX for an RTX 6000 Ada."""
    catalog = gpu_catalog()
    assert catalog.lookup("rtx-4090").brand == "GeForce"
    assert catalog.lookup("rtx-6000-ada").brand == "NvidiaRTX"
    assert catalog.lookup("h100-sxm5-80gb").brand == "Nvidia"


def test_engine_counts_from_the_mig_user_guide() -> None:
    """A100 7g.40gb: 7 copy engines, 5 NVDECs, 1 JPEG, 1 OFA; RTX PRO +me.all: 4 JPEGs."""
    a100 = gpu_catalog().lookup("a100-sxm4-40gb").mig_profile("7g.40gb")
    assert a100 is not None
    assert (a100.copy_engines, a100.decoders, a100.encoders, a100.jpegs, a100.ofas) == (
        7, 5, 0, 1, 1)
    rtx = gpu_catalog().lookup("rtx-pro-6000-server").mig_profile("1g.24gb+me.all")
    assert rtx is not None and rtx.jpegs == 4


def test_every_s7_gpu_has_gi_profile_ids() -> None:
    """The DRA driver names MIG devices with the GI profile id: every S7 GPU has them."""
    for gpu in gpu_catalog().all():
        if gpu.mig_units == 8:
            assert {p.gi_profile_id for p in gpu.mig_profiles} == {19, 20, 15, 14, 9, 5, 0}


def test_unmeasured_memory_holds_the_measured_slices() -> None:
    """H100 7g.80gb (unmeasured) holds at least two measured 3g.40gb halves."""
    gpu = gpu_catalog().lookup("h100-sxm5-80gb")
    seven, three = gpu.mig_profile("7g.80gb"), gpu.mig_profile("3g.40gb")
    assert seven is not None and three is not None
    assert seven.memory_mib >= 2 * three.memory_mib and not seven.memory_measured
