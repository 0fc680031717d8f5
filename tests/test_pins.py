"""gen/data/pins.yaml: every pin is complete and cited, code reads its defaults from it, the
examples run what it pins, and docs/versions.md is its render."""

from __future__ import annotations

import datetime
import importlib.util
import re
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from gen.errors import CatalogLookupError
from gen.models.cluster import DRADriver, GPUOperator
from gen.pins import kubernetes_minors, pin, pins
from tests.helpers import REPO

EXAMPLE_CLUSTERS = sorted((REPO / "profiles" / "clusters").glob("*.yaml"))
INIT_CLUSTER = REPO / "gen" / "data" / "init" / "profiles" / "cluster.yaml"


def _tool(name: str, monkeypatch: pytest.MonkeyPatch) -> Any:
    spec = importlib.util.spec_from_file_location(name, REPO / "tools" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, name, module)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("row", pins(), ids=lambda row: row.id)
def test_every_pin_has_a_version_a_date_and_a_source(row: Any) -> None:
    """A version, a release date, an https page of the release, how it was confirmed and
    what gen uses it for."""
    assert row.version.strip() == row.version and row.version
    assert datetime.date(2020, 1, 1) <= row.released <= datetime.date(2100, 1, 1)
    assert re.fullmatch(r"https://[^\s]+", row.source), row.source
    assert row.confirmed in ("upstream", "third-party")
    assert len(row.evidence) > 20 and len(row.use) > 10


def test_the_data_file_lists_each_id_once_in_its_order() -> None:
    """pins() keeps the file's order, and no id is written twice (YAML would keep the last)."""
    text = (REPO / "gen" / "data" / "pins.yaml").read_text(encoding="utf-8")
    keys = re.findall(r"^  ([a-z0-9-]+):$", text, flags=re.MULTILINE)
    assert keys == [row.id for row in pins()]
    assert len(set(keys)) == len(keys)


def test_an_unknown_id_is_a_catalog_error_naming_the_closest() -> None:
    """A typo is a CatalogLookupError that suggests the pin meant."""
    with pytest.raises(CatalogLookupError, match=r"'argocd'.*did you mean argo-cd"):
        pin("argocd")


def test_kubernetes_minors_are_supported_and_newest_first() -> None:
    """Three minors, newest first; each newest patch belongs to its minor and was released
    before the minor's end of life."""
    minors = kubernetes_minors()
    assert [m.minor for m in minors] == ["1.37", "1.36", "1.35"]
    for minor in minors:
        assert minor.patch.startswith(minor.minor + ".")
        assert minor.released <= minor.patch_released < minor.end_of_life
        assert minor.source.endswith(f"/v{minor.patch}")


def test_chart_defaults_are_the_pins() -> None:
    """A Cluster that names no chart version gets the pinned GPU Operator and DRA driver."""
    assert GPUOperator().version == pin("gpu-operator").version
    assert DRADriver().version == pin("dra-driver").version


def test_images_come_from_the_pins_and_never_float() -> None:
    """The Apple images are the pinned releases; the llama.cpp one names a build."""
    from gen.apple.chips import (
        GENERIC_DEVICE_PLUGIN_IMAGE,
        LLAMA_CPP_SERVER_VULKAN_IMAGE,
        RAMALAMA_IMAGE,
    )
    from gen.apple.launchd import VLLM_MLX_VERSION

    assert RAMALAMA_IMAGE.endswith(":" + pin("ramalama").version)
    assert re.fullmatch(r"ghcr\.io/ggml-org/llama\.cpp:server-vulkan-b\d+",
                        LLAMA_CPP_SERVER_VULKAN_IMAGE)
    assert LLAMA_CPP_SERVER_VULKAN_IMAGE.endswith(pin("llama-cpp-server-vulkan").version)
    assert GENERIC_DEVICE_PLUGIN_IMAGE.endswith("@" + pin("generic-device-plugin").version)
    assert pin("vllm-mlx").version == VLLM_MLX_VERSION


def test_the_judge_builds_the_pinned_releases() -> None:
    """tools/judge reads its versions from the pins, and its Go modules require them."""
    from tools.judge.pins import COMPONENTS

    kubernetes = pin("judge-kubernetes").version
    assert COMPONENTS["controlplane"].version == kubernetes
    assert COMPONENTS["kubeconform"].version == pin("kubeconform").version
    staging = "v0." + kubernetes.removeprefix("v1.")
    assert COMPONENTS["oracle"].version == staging
    controlplane = (REPO / "tools/judge/controlplane/go.mod").read_text(encoding="utf-8")
    assert f"\tk8s.io/kubernetes {kubernetes}\n" in controlplane
    assert f"\tgo.etcd.io/etcd/server/v3 {pin('judge-etcd').version}\n" in controlplane
    oracle = (REPO / "tools/judge/oracle/go.mod").read_text(encoding="utf-8")
    assert f"\tk8s.io/dynamic-resource-allocation {staging}\n" in oracle


def test_docs_and_citations_name_the_pinned_releases() -> None:
    """Install lines in the docs and the mig-parted schema citation follow the pins."""
    ci = (REPO / "docs" / "ci.md").read_text(encoding="utf-8")
    assert f"kubeconform/cmd/kubeconform@{pin('kubeconform').version}" in ci
    gitops = (REPO / "docs" / "gitops.md").read_text(encoding="utf-8")
    assert f"argoproj/argo-cd/{pin('argo-cd').version}/manifests/install.yaml" in gitops
    validation = (REPO / "docs" / "validation.md").read_text(encoding="utf-8")
    for row in ("argo-cd", "flux-source-controller", "flux-kustomize-controller",
                "flux-helm-controller", "keda", "prometheus-operator"):
        repo = pin(row).source.removeprefix("https://github.com/").split("/releases")[0]
        assert re.search(rf"{re.escape(repo)} `[^`]+` @ {re.escape(pin(row).version)} \|",
                         validation), row
    migparted = (REPO / "gen" / "nvidia" / "migparted.py").read_text(encoding="utf-8")
    assert f"``api/spec/v1/spec.go``@{pin('mig-parted').version}" in migparted


def _clusters(path: Path) -> list[dict[str, Any]]:
    docs = yaml.safe_load_all(path.read_text(encoding="utf-8"))
    return [d for d in docs if d and d.get("kind") == "Cluster"]


@pytest.mark.parametrize("path", [*EXAMPLE_CLUSTERS, INIT_CLUSTER],
                         ids=lambda p: p.relative_to(REPO).as_posix())
def test_examples_run_a_supported_minor_and_the_pinned_charts(path: Path) -> None:
    """Every example cluster and `gen init`'s run a supported Kubernetes minor, name the
    pinned charts if they name any, and give NVIDIA pools the driver the pinned GPU Operator
    installs."""
    supported = {m.minor for m in kubernetes_minors()}
    for cluster in _clusters(path):
        minor = ".".join(cluster["kubernetes_version"].split(".")[:2])
        assert minor in supported, (path.name, cluster["kubernetes_version"])
        for key, pin_id in (("gpu_operator", "gpu-operator"), ("dra_driver", "dra-driver")):
            if "version" in cluster.get(key, {}):
                assert cluster[key]["version"] == pin(pin_id).version, (path.name, key)
        for pool in cluster.get("node_pools", []):
            if "driver_version" in pool:
                assert pool["driver_version"] == pin("nvidia-driver").version, pool["name"]


def test_the_examples_spread_over_the_supported_minors() -> None:
    """The example fleet exercises every supported minor, and the main example the newest."""
    minors = {".".join(c["kubernetes_version"].split(".")[:2])
              for path in EXAMPLE_CLUSTERS for c in _clusters(path)}
    assert minors == {m.minor for m in kubernetes_minors()}
    (prod,) = _clusters(REPO / "profiles" / "clusters" / "prod-us-east.yaml")
    assert prod["kubernetes_version"] == kubernetes_minors()[0].patch


def test_versions_doc_is_generated_from_the_pins(monkeypatch: pytest.MonkeyPatch) -> None:
    """docs/versions.md equals `python tools/versions_doc.py`'s output, and shows each pin."""
    tool = _tool("versions_doc", monkeypatch)
    page = (REPO / "docs" / "versions.md").read_text(encoding="utf-8")
    assert tool.render(page) == page
    for row in pins():
        assert f"[`{row.version}`]({row.source})" in page
    assert tool.main(["--check"]) == 0


def test_versions_doc_check_fails_on_a_stale_page(monkeypatch: pytest.MonkeyPatch,
                                                   tmp_path: Path) -> None:
    """--check exits 1 when the tables differ from the pins; a page without markers is an
    error that names it."""
    tool = _tool("versions_doc", monkeypatch)
    stale = tmp_path / "versions.md"
    page = (REPO / "docs" / "versions.md").read_text(encoding="utf-8")
    stale.write_text(page.replace(pin("keda").version, "v0.0.1"), encoding="utf-8")
    monkeypatch.setattr(tool, "PAGE", stale)
    monkeypatch.setattr(tool, "ROOT", tmp_path)
    assert tool.main(["--check"]) == 1
    stale.write_text("# no markers\n", encoding="utf-8")
    with pytest.raises(SystemExit, match=r"versions\.md: the markers"):
        tool.main(["--check"])
