"""tools/vllm_facts.py: what it reads from a vLLM source tree, and how it writes the data file.

The tree is a small vLLM look-alike written here: the same files, classes and call shapes
that vLLM's ``vllm serve`` parser is built from, so each rule of the reading shows in a test.
"""

from __future__ import annotations

import ast
import textwrap
import zipfile
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from gen.serving.vllm_releases import expand
from tests.helpers import write_tree
from tools import vllm_facts

ARGPARSE_PLAIN = """
    from argparse import ArgumentParser, BooleanOptionalAction
    class FlexibleArgumentParser(ArgumentParser):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
"""
ARGPARSE_ENABLE_DISABLE = """
    from argparse import ArgumentParser, BooleanOptionalAction
    class EnableDisableAction(BooleanOptionalAction):
        _inverse_prefixes = {"--enable-": "--disable-", "--disable-": "--enable-"}
    class FlexibleArgumentParser(ArgumentParser):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.register("action", BooleanOptionalAction, EnableDisableAction)
"""
BATCH_DEFAULTS = """
    @classmethod
    def get_batch_defaults(cls, world_size):
        try:
            device_memory = current_platform.get_device_total_memory()
            device_name = current_platform.get_device_name().lower()
            is_gb10 = current_platform.is_device_capability((12, 1))
        except Exception:
            device_memory = 0
            device_name = ""
            is_gb10 = False
        if device_memory >= 160 * GiB_bytes:
            default_max_num_batched_tokens = {
                UsageContext.LLM_CLASS: 16384, UsageContext.OPENAI_API_SERVER: 16384}
            default_max_num_seqs = {
                UsageContext.LLM_CLASS: 1024, UsageContext.OPENAI_API_SERVER: 1024}
        elif device_memory >= 70 * GiB_bytes and "a100" not in device_name and not is_gb10:
            default_max_num_batched_tokens = {
                UsageContext.LLM_CLASS: 16384, UsageContext.OPENAI_API_SERVER: 8192}
            default_max_num_seqs = {
                UsageContext.LLM_CLASS: 1024, UsageContext.OPENAI_API_SERVER: 1024}
        else:
            default_max_num_batched_tokens = {
                UsageContext.LLM_CLASS: 8192, UsageContext.OPENAI_API_SERVER: 2048}
            default_max_num_seqs = {
                UsageContext.LLM_CLASS: 256, UsageContext.OPENAI_API_SERVER: 256}
        if current_platform.is_tpu():
            default_max_num_batched_tokens = {UsageContext.LLM_CLASS: 512}
        return default_max_num_batched_tokens, default_max_num_seqs
"""


def _arg_utils(batch_defaults: str) -> str:
    """vllm/engine/arg_utils.py of the look-alike, with ``batch_defaults`` in EngineArgs."""
    method = textwrap.indent(textwrap.dedent(batch_defaults).strip("\n"), "    ")
    return textwrap.dedent('''
            import argparse
            from vllm.config import ModelConfig
            from vllm.config.cache import CacheConfig
            def get_kwargs(cls):
                return {}
            class EngineArgs:
                @staticmethod
                def add_cli_args(parser):
                    cache_kwargs = get_kwargs(CacheConfig)
                    model_kwargs = get_kwargs(ModelConfig)
                    group = parser.add_argument_group("Cache")
                    group.add_argument("--kv-cache-dtype", **cache_kwargs["cache_dtype"])
                    group.add_argument(
                        "--enable-prefix-caching",
                        **{**cache_kwargs["enable_prefix_caching"], "default": None})
                    group.add_argument("--quantization", "-q", **model_kwargs["quantization"])
                    eager_kwargs = model_kwargs["enforce_eager"]
                    group.add_argument("--enforce-eager", **eager_kwargs)
                    parser.add_argument("--disable-log-stats", action="store_true")
                    parser.add_argument("--enable-lora", action=argparse.BooleanOptionalAction)
                    return parser
''') + method + "\n" + textwrap.dedent('''
            class AsyncEngineArgs(EngineArgs):
                @staticmethod
                def add_cli_args(parser):
                    parser = EngineArgs.add_cli_args(parser)
                    parser.add_argument(
                        "--enable-log-requests", action=argparse.BooleanOptionalAction)
                    return parser
        ''')


READY_TIMEOUT_GETTER = 'int(os.environ.get("VLLM_ENGINE_READY_TIMEOUT_S", "600"))'


def vllm_tree(root: Path, *, argparse_utils: str = ARGPARSE_PLAIN,
              batch_defaults: str = BATCH_DEFAULTS,
              ready_timeout_getter: str = READY_TIMEOUT_GETTER) -> Path:
    """A vLLM look-alike release 0.99.0 under ``root``."""
    return write_tree(root, {
        "vllm-0.99.0.dist-info/METADATA": "Metadata-Version: 2.1\nName: vllm\nVersion: 0.99.0\n",
        "vllm/__init__.py": "",
        "vllm/utils/argparse_utils.py": argparse_utils,
        "vllm/entrypoints/cli/serve.py": """
            from vllm.entrypoints.openai.cli_args import make_arg_parser
            class ServeSubcommand:
                def subparser_init(self, subparsers):
                    serve_parser = subparsers.add_parser("serve")
                    serve_parser = make_arg_parser(serve_parser)
                    return serve_parser
        """,
        "vllm/entrypoints/openai/cli_args.py": """
            from dataclasses import dataclass, field
            from vllm.engine.arg_utils import AsyncEngineArgs
            @dataclass
            class BaseFrontendArgs:
                chat_template: str | None = None
                enable_auto_tool_choice: bool = False
                log_error_stack: bool | str | None = None
                @classmethod
                def _customize_cli_kwargs(cls, frontend_kwargs):
                    frontend_kwargs["chat_template"]["type"] = str
                    return frontend_kwargs
                @classmethod
                def add_cli_args(cls, parser):
                    from vllm.engine.arg_utils import get_kwargs
                    frontend_kwargs = get_kwargs(cls)
                    frontend_kwargs = cls._customize_cli_kwargs(frontend_kwargs)
                    frontend_group = parser.add_argument_group(title="Frontend")
                    for key, value in frontend_kwargs.items():
                        extra_flags = value.pop("flags", [])
                        frontend_group.add_argument(
                            *extra_flags, f"--{key.replace('_', '-')}", **value)
                    return parser
            @dataclass
            class FrontendArgs(BaseFrontendArgs):
                port: int = 8000
                middleware: list[str] = field(default_factory=list)
                disable_fastapi_docs: bool = False
                @classmethod
                def _customize_cli_kwargs(cls, frontend_kwargs):
                    frontend_kwargs = super()._customize_cli_kwargs(frontend_kwargs)
                    frontend_kwargs["port"]["flags"] = ["-p"]
                    frontend_kwargs["disable_fastapi_docs"]["action"] = "store_true"
                    return frontend_kwargs
            def make_arg_parser(parser):
                parser.add_argument("model_tag", nargs="?")
                parser.add_argument("--headless", action="store_true")
                parser = FrontendArgs.add_cli_args(parser)
                parser = AsyncEngineArgs.add_cli_args(parser)
                return parser
        """,
        "vllm/engine/arg_utils.py": _arg_utils(batch_defaults),
        "vllm/config/__init__.py": "from vllm.config.model import ModelConfig\n",
        "vllm/config/cache.py": """
            from typing import ClassVar, Literal
            from pydantic import Field
            CacheDType = Literal["auto", "fp8"]
            class CacheConfig:
                DEFAULT_BLOCK_SIZE: ClassVar[int] = 16
                gpu_memory_utilization: float = Field(default=0.92, gt=0, le=1)
                cache_dtype: CacheDType | str = "auto"
                enable_prefix_caching: bool | None = None
        """,
        "vllm/config/model.py": """
            from typing import TYPE_CHECKING, Any, Literal
            if TYPE_CHECKING:
                from vllm.model_executor.layers.quantization import QuantizationMethods
            else:
                QuantizationMethods = Any
            ModelDType = Literal["auto", "half"]
            class ModelConfig:
                quantization: QuantizationMethods | str | None = None
                dtype: ModelDType | torch.dtype = "auto"
                enforce_eager: bool = False
        """,
        "vllm/model_executor/layers/quantization/__init__.py": """
            from typing import Literal
            OnlineMethods = Literal["fp8_per_tensor"]
            QuantizationMethods = Literal["awq", "fp8", OnlineMethods]
        """,
        "vllm/config/vllm.py": """
            class VllmConfig:
                def _set_cudagraph_sizes(self):
                    max_cudagraph_capture_size = self.compilation_config.max_cudagraph_capture_size
                    if max_cudagraph_capture_size is None:
                        decode_query_len = 1 + self.num_speculative_tokens
                        default_max_graph_size = (
                            1024 if current_platform.is_device_capability_family(100) else 512
                        )
                        max_cudagraph_capture_size = min(
                            self.scheduler_config.max_num_seqs * decode_query_len * 2,
                            default_max_graph_size,
                        )
        """,
        "vllm/envs.py": f"""
            import os
            from typing import TYPE_CHECKING
            if TYPE_CHECKING:
                VLLM_ENGINE_READY_TIMEOUT_S: int = 600
                VLLM_MAIN_CUDA_VERSION: str = "13.0"
                VLLM_USE_FLASHINFER_SAMPLER: bool = True
                VLLM_USE_V2_MODEL_RUNNER: bool | None = None
                VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS: bool = True
            environment_variables = {{
                "VLLM_ENGINE_READY_TIMEOUT_S": lambda: {ready_timeout_getter},
                "VLLM_MAIN_CUDA_VERSION": lambda: (
                    os.getenv("VLLM_MAIN_CUDA_VERSION", "").lower() or "13.0"),
                "VLLM_USE_FLASHINFER_SAMPLER": lambda: (
                    bool(int(os.environ["VLLM_USE_FLASHINFER_SAMPLER"]))
                    if "VLLM_USE_FLASHINFER_SAMPLER" in os.environ else True),
                "VLLM_USE_V2_MODEL_RUNNER": lambda: maybe_convert_bool(
                    os.getenv("VLLM_USE_V2_MODEL_RUNNER", None)),
                "VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS": lambda: bool(
                    int(os.getenv("VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS", "1"))),
            }}
        """,
    })


@pytest.fixture(autouse=True)
def _small_parser(monkeypatch: pytest.MonkeyPatch) -> None:
    """The look-alike has 21 options, not vLLM's hundreds."""
    monkeypatch.setattr(vllm_facts, "MIN_SERVE_OPTIONS", 10)


PLAIN_FLAGS = {
    "--headless", "--chat-template", "--enable-auto-tool-choice", "--no-enable-auto-tool-choice",
    "--log-error-stack", "--port", "-p", "--middleware", "--disable-fastapi-docs",
    "--kv-cache-dtype", "--enable-prefix-caching", "--no-enable-prefix-caching",
    "--quantization", "-q", "--enforce-eager", "--no-enforce-eager", "--disable-log-stats",
    "--enable-lora", "--no-enable-lora", "--enable-log-requests", "--no-enable-log-requests",
}


def _serve_options(root: Path) -> set[str]:
    sources = vllm_facts._Sources(root)
    interpreter = vllm_facts._ServeOptions(sources, vllm_facts._inverse_prefixes(sources))
    module = sources.module("vllm.entrypoints.cli.serve")
    assert module is not None
    command = module.names["ServeSubcommand"]
    assert isinstance(command, ast.ClassDef)
    found = sources.method(vllm_facts._Class(module, command), "subparser_init")
    assert found is not None
    interpreter.run(module, found[1], {}, found[0], found[0])
    return interpreter.flags


def test_serve_options_follow_the_parser_vllm_builds(tmp_path: Path) -> None:
    """Options come from every function the serve parser passes through, with --no-x for each
    boolean field (not for bool | str | None, not for store_true edits), aliases and -p."""
    assert _serve_options(vllm_tree(tmp_path)) == PLAIN_FLAGS


def test_enable_disable_action_adds_the_inverse_forms(tmp_path: Path) -> None:
    """A release whose parser swaps in EnableDisableAction accepts --disable-x for --enable-x."""
    flags = _serve_options(vllm_tree(tmp_path, argparse_utils=ARGPARSE_ENABLE_DISABLE))
    assert flags - PLAIN_FLAGS == {"--disable-auto-tool-choice", "--disable-prefix-caching",
                                   "--disable-lora", "--disable-log-requests"}


def test_release_facts_of_the_look_alike(tmp_path: Path) -> None:
    """Value sets (nested Literals, TYPE_CHECKING imports), defaults and both rules."""
    facts = vllm_facts.release_facts("0.99.0", vllm_tree(tmp_path))
    assert facts["quantizations"] == ["awq", "fp8", "fp8_per_tensor"]
    assert facts["kv_cache_dtypes"] == ["auto", "fp8"]
    assert facts["dtypes"] == ["auto", "half"]
    assert facts["defaults"] == {
        "gpu_memory_utilization": 0.92, "block_size": 16, "VLLM_USE_FLASHINFER_SAMPLER": True,
        "VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS": True, "VLLM_MAIN_CUDA_VERSION": "13.0",
        "VLLM_USE_V2_MODEL_RUNNER": None, "VLLM_ENGINE_READY_TIMEOUT_S": 600}
    tiers = facts["batch_defaults"]["tiers"]
    assert tiers[0] == {"min_memory_gib": 160,
                        "offline": {"max_num_batched_tokens": 16384, "max_num_seqs": 1024},
                        "api_server": {"max_num_batched_tokens": 16384, "max_num_seqs": 1024}}
    assert tiers[1]["name_excludes"] == ["a100"] and tiers[1]["capability_excludes"] == [[12, 1]]
    assert tiers[2]["api_server"] == {"max_num_batched_tokens": 2048, "max_num_seqs": 256}
    assert len(tiers) == 3  # the TPU branch is not a GPU tier
    assert len(facts["batch_defaults"]["sha256"]) == 64
    graphs = facts["cuda_graph_capture"]
    assert (graphs["limit"], graphs["limit_by_capability_family"]) == (512, {100: 1024})
    assert facts["sources"]["quantizations"] == [
        "vllm/model_executor/layers/quantization/__init__.py"]
    assert "vllm/entrypoints/openai/cli_args.py" in facts["sources"]["flags"]


def test_a_new_batch_condition_must_be_encoded_by_hand(tmp_path: Path) -> None:
    """A tier condition the tool does not know stops it instead of being dropped."""
    edited = BATCH_DEFAULTS.replace('"a100" not in device_name', '"h20" in device_name')
    with pytest.raises(vllm_facts.FactError, match=r"h20.*re-encode"):
        vllm_facts.release_facts("0.99.0", vllm_tree(tmp_path, batch_defaults=edited))


def test_an_env_default_must_agree_with_its_getter(tmp_path: Path) -> None:
    """The declared default and the getter's fallback are read twice and must agree."""
    getter = 'int(os.environ.get("VLLM_ENGINE_READY_TIMEOUT_S", "300"))'
    with pytest.raises(vllm_facts.FactError, match=r"declared 600.*300"):
        vllm_facts.release_facts("0.99.0", vllm_tree(tmp_path, ready_timeout_getter=getter))


def test_the_wheel_metadata_must_be_the_release(tmp_path: Path) -> None:
    """A tree unpacked from another release is refused."""
    with pytest.raises(vllm_facts.FactError, match=r"not vllm 0\.98\.0"):
        vllm_facts.release_facts("0.98.0", vllm_tree(tmp_path))


def test_unpack_keeps_sources_and_marks_the_tree_complete(tmp_path: Path) -> None:
    """Compiled libraries are left out; .complete is written; a complete tree is reused."""
    wheel = tmp_path / "vllm-0.99.0-cp38-abi3-manylinux_2_28_x86_64.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr("vllm/envs.py", "X = 1\n")
        archive.writestr("vllm/_C.abi3.so", b"\x7fELF....")
        archive.writestr("vllm/libcuda.so.12", b"whatever")
        archive.writestr("vllm/bin/tool", b"\x7fELF\x02")
    target = tmp_path / "cache" / "0.99.0"
    vllm_facts.unpack_wheel(wheel, target)
    files = sorted(p.relative_to(target).as_posix() for p in target.rglob("*") if p.is_file())
    assert files == [".complete", "vllm/envs.py"]
    assert [p.name for p in target.parent.iterdir()] == ["0.99.0"]  # no staging left

    def refuse(version: str, into: Path) -> Path:
        raise AssertionError("downloaded again")

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(vllm_facts, "download_wheel", refuse)
        assert vllm_facts.source_tree("0.99.0", tmp_path / "cache") == target


def test_check_fails_when_the_data_file_differs(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """The tool writes the data file, --check then passes, and fails after an edit."""
    root = vllm_tree(tmp_path / "src")
    data = tmp_path / "vllm-releases.yaml"
    monkeypatch.setattr(vllm_facts, "ROOT", tmp_path)
    monkeypatch.setattr(vllm_facts, "DATA", data)
    monkeypatch.setattr(vllm_facts, "released_versions", lambda: ["0.99.0"])
    monkeypatch.setattr(vllm_facts, "upload_dates", lambda: {"0.99.0": "2026-01-02"})
    monkeypatch.setattr(vllm_facts, "source_tree", lambda _version, _cache: root)
    assert vllm_facts.main([]) == 0
    assert vllm_facts.main(["--check"]) == 0
    release = yaml.safe_load(data.read_text())["releases"][0]
    assert release["version"] == "0.99.0" and release["released"] == "2026-01-02"
    data.write_text(data.read_text().replace("--headless", "--headles"))
    assert vllm_facts.main(["--check"]) == 1
    assert "differs from what the wheels say" in capsys.readouterr().out


_NAMES = st.sampled_from(["--a", "--b", "--c", "--d", "-e", "fp8", "awq"])
_FACTS = st.fixed_dictionaries({
    **{g: st.lists(_NAMES, unique=True).map(sorted) for g in vllm_facts.SETS},
    "defaults": st.fixed_dictionaries({"block_size": st.sampled_from([16, 32]),
                                       "VLLM_X": st.sampled_from([True, False, None])}),
    "sources": st.fixed_dictionaries({"flags": st.sampled_from([["a.py"], ["a.py", "b.py"]])}),
    "batch_defaults": st.fixed_dictionaries({"tiers": st.lists(
        st.fixed_dictionaries({"min_memory_gib": st.sampled_from([70, 160])}), max_size=2)}),
    "cuda_graph_capture": st.fixed_dictionaries({"limit": st.sampled_from([512, 1024])}),
})


@settings(max_examples=60, deadline=None)
@given(st.lists(_FACTS, min_size=1, max_size=5))
def test_expand_undoes_encode(releases: list[dict[str, Any]]) -> None:
    """The loader's expansion of the tool's change list gives every release back in full."""
    named = [(f"0.{i}.0", "2026-01-01", facts) for i, facts in enumerate(releases)]
    encoded = vllm_facts.encode(named)
    again = yaml.safe_load(vllm_facts.render(encoded))["releases"]
    expanded = expand(again)
    assert [{k: v for k, v in e.items() if k not in ("version", "released")}
            for e in expanded] == releases
    assert all(set(e) <= {"version", "released", *releases[0]} for e in encoded)


def test_too_few_options_means_the_reading_broke(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """A parser the tool no longer follows shows as a count far below vLLM's, and stops it."""
    monkeypatch.setattr(vllm_facts, "MIN_SERVE_OPTIONS", 100)
    with pytest.raises(vllm_facts.FactError, match="only 21 serve options"):
        vllm_facts.release_facts("0.99.0", vllm_tree(tmp_path))
