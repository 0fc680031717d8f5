"""Inputs the models refuse, each at its field, with words that say what to write."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from gen.models import Cluster, InferenceService
from gen.models.cluster import GitOps, Monitoring

_POOL = {"name": "p", "gpu": "l4", "nodes": 1, "driver_version": "580.95.05"}


def _cluster(**fields: Any) -> Cluster:
    return Cluster.model_validate({"kind": "Cluster", "name": "c", "kubernetes_version": "1.33",
                                   "allocation": "dra", "node_pools": [_POOL], **fields})


def _gitops(**fields: Any) -> GitOps:
    return GitOps.model_validate({"engine": "flux", "repo_url": "https://h/r.git", **fields})


def _llama(**fields: Any) -> InferenceService:
    return InferenceService.model_validate({**_LLAMA, **fields})


def _error(call: Any) -> str:
    with pytest.raises(ValidationError) as info:
        call()
    return str(info.value)


@pytest.mark.parametrize(("value", "words"), [
    ("/out", "is absolute"), ("/", "is absolute"), ("../out", "leaves the repository"),
    ("deploy/../../out", "leaves the repository"),
])
def test_path_prefix_stays_inside_the_repository(value: str, words: str) -> None:
    """An absolute path_prefix or one that climbs out is refused."""
    assert words in _error(lambda: _gitops(path_prefix=value))


@pytest.mark.parametrize("value", ["out", "deploy/out", "./out", "out/"])
def test_relative_path_prefixes_are_kept(value: str) -> None:
    """The near misses: relative folders."""
    assert _gitops(path_prefix=value).path_prefix == value


@pytest.mark.parametrize("url", [
    "https://deploy:secret@github.com/o/r.git", "https://token1234@github.com/o/r.git",
    "ssh://git:secret@github.com/o/r.git",
])
def test_repository_urls_with_credentials(url: str) -> None:
    """Credentials in repo_url are refused, pointing at the engine's Secret, never echoed."""
    text = _error(lambda: _gitops(repo_url=url))
    assert "engine the repository credentials as a Secret" in text
    assert "secret@" not in text.split("input_value")[0]


@pytest.mark.parametrize("url", ["ssh://git@github.com/o/r.git", "git@github.com:o/r.git",
                                 "https://github.com/o/r.git"])
def test_repository_urls_without_credentials(url: str) -> None:
    """The near misses: ssh's user name is not a credential."""
    assert _gitops(repo_url=url).repo_url == url


def test_prometheus_and_destination_urls_with_credentials() -> None:
    """The other URLs gen renders refuse credentials too."""
    assert "TriggerAuthentication" in _error(
        lambda: Monitoring.model_validate({"prometheus_url": "http://u:p@prometheus:9090"}))
    assert "cluster Secret" in _error(lambda: _gitops(destination_server="https://u:p@k8s"))


@pytest.mark.parametrize(("entry", "words"), [
    ("resource.k8s.io/v1beta2=true", "without '=true'"),
    ("resource.k8s.io/v1beta2\nx/v1", "line break"),
    ("resource.k8s.io/v1beta2 resource.k8s.io/v1", "space"),
    ("api/all", "enables a set of versions"),
    ("resource.k8s.io", "not an API group/version"),
    ("Resource.k8s.io/v1", "not an API group/version"),
    ("resource.k8s.io/v1beta", "not an API group/version"),
])
def test_runtime_config_entries_are_group_versions(entry: str, words: str) -> None:
    """Each runtime_config entry is one API group/version, refused at its index."""
    text = _error(lambda: _cluster(runtime_config=[entry]))
    assert "runtime_config.0" in text and words in text


@pytest.mark.parametrize("entry", ["resource.k8s.io/v1beta2", "v1", "batch/v1",
                                   "resource.k8s.io/v1alpha3"])
def test_runtime_config_group_versions_are_kept(entry: str) -> None:
    """The near misses: group/versions and the core group's bare version."""
    assert _cluster(runtime_config=[entry]).runtime_config == (entry,)


def test_storage_classes_one_default_each_once() -> None:
    """At most one default StorageClass, and no class twice."""
    rwx = ["ReadWriteOnce", "ReadWriteMany"]
    assert "more than one default" in _error(lambda: _cluster(storage={"classes": [
        {"name": "a", "access_modes": rwx, "default": True},
        {"name": "b", "access_modes": rwx, "default": True}]}))
    assert "more than once" in _error(lambda: _cluster(storage={"classes": [
        {"name": "a", "access_modes": rwx}, {"name": "a", "access_modes": rwx}]}))


_LLAMA: dict[str, Any] = {"kind": "InferenceService", "name": "s", "model": "org/repo",
                          "engine": "llama-server", "clusters": ["c"]}


@pytest.mark.parametrize(("value", "words"), [
    ("~/m.gguf", "'~'"), ("$HOME/m.gguf", "'$HOME'"), ("-m.gguf", "'-m.gguf'"),
    ("a b.gguf", "'a b.gguf'"), ("/m.gguf", "an empty part"), ("q//m.gguf", "an empty part"),
    ("../m.gguf", "'..'"), (".hidden/m.gguf", "'.hidden'"),
    ("https://hf.co/o/r/resolve/main/m.gguf", "not a URL"), ("model.bin.x", ".gguf file"),
])
def test_gguf_file_is_a_plain_path_in_the_repository(value: str, words: str) -> None:
    """gguf_file names a file of the repository: no URL, home, variable, option or '..'."""
    assert words in _error(lambda: _llama(gguf_file=value))


@pytest.mark.parametrize("value", ["Meta-Llama-3.1-8B-Instruct-Q8_0.gguf",
                                   "UD-Q4_K_XL/model-00001-of-00002.gguf", "m+v2.gguf"])
def test_gguf_files_of_the_hub_are_kept(value: str) -> None:
    """The near misses: the Hub's own names, in folders too."""
    assert _llama(gguf_file=value).gguf_file == value


def test_vllm_without_gpu_is_decided_once_pools_are_known() -> None:
    """The model no longer refuses a vllm service without 'gpu': on an Apple VM pool the
    reason is GEN601, elsewhere resolve's GEN002 (tests/corpus: apple.yaml)."""
    service = _llama(engine="vllm")
    assert service.gpu is None


def test_addressing_mode_is_one_nvml_reports_and_nvidia_only() -> None:
    """addressing_mode takes NVML's names (ATS, HMM, None); an apple-vm pool has none."""
    assert _cluster(node_pools=[{**_POOL, "addressing_mode": "HMM"}]).node_pools[0] \
        .addressing_mode == "HMM"
    assert "'ATS', 'HMM' or 'None'" in _error(
        lambda: _cluster(node_pools=[{**_POOL, "addressing_mode": "hmm"}]))
    apple = {"name": "m", "platform": "apple-vm", "nodes": 1, "addressing_mode": "None",
             "apple_vm": {"chip": "m2-ultra", "host_memory_gb": 192, "vm_memory_gb": 24,
                          "resource_name": "squat.ai/dri", "sharing": 1}}
    assert "'addressing_mode' is what NVML reports on NVIDIA nodes" in _error(
        lambda: _cluster(node_pools=[apple]))
