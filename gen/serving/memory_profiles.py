"""How vLLM sizes its KV pool, release range by release range: the table check_fit budgets with.

vLLM changed three things under gen's budget after 0.21, and each row of
:data:`MEMORY_PROFILES` says which holds for a range of releases, with the source file of the
release it was read in (``vllm-project/vllm <path> @ v0.X.Y``, read in the release wheels):

* which model runner runs the model (:func:`model_runner_for`): the V1 runner
  (``vllm/v1/worker/gpu_model_runner.py``) or Model Runner V2 (``vllm/v1/worker/gpu/``), chosen
  by ``VllmConfig.use_v2_model_runner`` in ``vllm/config/vllm.py``;
* whether that runner's CUDA-graph estimate is subtracted from the pool: the V1 runner's from
  0.21 (``VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS`` on by default), Model Runner V2's only from
  0.29, where ``profile_cudagraph_memory`` stops returning 0
  (``vllm/v1/worker/gpu/model_runner.py``, ``vllm/v1/worker/gpu/cudagraph_utils.py``);
* what the profile run's sampler costs: the V1 runner's dummy top-k/top-p run, Model Runner V2's
  plain dummy pass, and from 0.33 V2's second "warmup-param" pass over fp32 logits.

Non-KV memory itself is counted two ways: up to 0.26 as weights + torch peak increase + non-torch
increase, from 0.27 as the drop in free memory since the worker's snapshot + the transient peak
headroom (``vllm/utils/mem_utils.py`` ``memory_profiling`` @ v0.27.0). Both are budgeted with the
same terms; the second also charges the runner's own persistent buffers, which is why its
non-torch figure is larger.

Figures tagged ``[fitted on …]`` were chosen to match the start-ups of the calibration corpus
(``tests/serving/data/vllm_startup_logs.yaml``) of that range; ``[unvalidated]`` ones have no
public log of a catalog model behind them yet and say what they were derived from.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal

from gen.serving.memory import (
    CUDA_GRAPH_BYTES,
    FLASHINFER_SAMPLER_VOCAB_BUFFERS,
    NCCL_BYTES,
    NON_TORCH_BYTES,
    SAMPLER_VOCAB_BUFFERS,
)
from gen.serving.model_catalog import LLMSpec

__all__ = [
    "MEMORY_PROFILES",
    "PINNED_VLLM_VERSION",
    "MemoryProfile",
    "ModelRunner",
    "ReleaseNumbers",
    "format_version",
    "memory_profile_for",
    "model_runner_for",
    "parse_vllm_version",
]

ReleaseNumbers = tuple[int, int, int]
"""A vLLM release as (major, minor, patch): gen.serving.vllm_releases.VllmVersion.release."""
ModelRunner = Literal["v1", "v2"]
V2Rule = Literal["never", "allowlist-dense", "allowlist", "allowlist-or-dense", "all"]
"""Which models Model Runner V2 runs by default in a range: none; an architecture allowlist for
unquantized dense models; the allowlist whatever the model; the allowlist or any dense model;
every model."""

PINNED_VLLM_VERSION: ReleaseNumbers = (0, 33, 0)
"""The release of the vLLM image gen pins (gen/data/pins.yaml): what a request budgets with
unless it names another release (a service: its image's, gen.serving.image)."""

_GIB = 1 << 30

_V2_ARCHITECTURES_0_22 = frozenset({"Qwen3ForCausalLM"})
"""[vllm] DEFAULT_V2_MODEL_RUNNER_ARCHITECTURES in vllm/config/vllm.py: @ v0.22.0 Qwen3 only;
@ v0.23.0 Llama and Mistral added; @ v0.24.0 three MoE architectures added."""
_V2_ARCHITECTURES_0_23 = _V2_ARCHITECTURES_0_22 | {"LlamaForCausalLM", "MistralForCausalLM"}
_V2_ARCHITECTURES_0_24 = _V2_ARCHITECTURES_0_23 | {
    "DeepseekV2ForCausalLM", "Qwen2MoeForCausalLM", "GraniteMoeForCausalLM",
}
_V2_ARCHITECTURES_0_25 = frozenset({
    "DeepseekV2ForCausalLM", "Qwen2MoeForCausalLM", "GraniteMoeForCausalLM",
})
"""[vllm] @ v0.25.0 the list keeps only the MoE ones: every dense model defaults to V2 besides
them."""


@dataclass(frozen=True)
class MemoryProfile:
    """vLLM's memory accounting over one range of releases (``since`` ≤ version < next row).

    Byte figures are per GPU. ``v1_sampler_buffers`` / ``flashinfer_sampler_buffers``: the V1
    runner's dummy sampler peak in fp32 vocabulary-sized buffers per request (PyTorch top-k/top-p,
    FlashInfer's); ``v2_sampler_buffers``: Model Runner V2's, and ``v2_warmup_sampler`` whether V2
    runs its fp32 warm-up pass too (then the V1 figures of the sampler in use apply).
    """

    since: ReleaseNumbers
    label: str
    v2_rule: V2Rule
    v2_architectures: frozenset[str]
    v1_cudagraph_estimate: bool
    v2_cudagraph_estimate: bool
    non_kv_rule: str
    non_torch_bytes: int
    nccl_bytes: int
    v1_sampler_buffers: float
    flashinfer_sampler_buffers: float
    v2_sampler_buffers: float
    v2_warmup_sampler: bool
    flashinfer_min_sms: int
    dc_blackwell_cudagraph_bytes: int
    source: str


# Up to 0.26 every row budgets with gen.serving.memory's figures, [fitted on 0.10–0.19 logs]
# (llm-d-benchmark's H100 table and the A100 logs of dennislee22/vLLM-benchmarking):
# SAMPLER_VOCAB_BUFFERS, FLASHINFER_SAMPLER_VOCAB_BUFFERS, NON_TORCH_BYTES, NCCL_BYTES and
# CUDA_GRAPH_BYTES.

_V2_SAMPLER = 2.0
"""[fitted on 0.27 logs] Model Runner V2's dummy pass samples without top-k/top-p ("the sampler
may skip top_k, top_p", vllm/v1/worker/gpu/model_runner.py _dummy_sampler_run @ v0.27.0): two
buffers match enginrect/llmso (RTX 4090, Qwen2.5-0.5B: 0.25–0.31 GiB peak activation) and
kubesimplify's RTX PRO 6000 Qwen3-32B runs."""

_NON_TORCH_FREE_DROP, _NCCL_FREE_DROP = 3 * _GIB // 8, _GIB // 8
"""[fitted on 0.27 logs] From 0.27 the free-memory drop charges what the profile leaves
allocated besides the weights: "consumed memory (weights + non-torch)" less the weights is
0.30–0.56 GiB on one RTX 4090 (enginrect/llmso), 0.50 GiB less activation per TP-2 rank
(kubesimplify)."""

_DC_BLACKWELL_GRAPHS = 2 * CUDA_GRAPH_BYTES
"""[unvalidated] Data-centre Blackwell captures up to 1024 tokens from 0.28
(`default_max_graph_size = 1024 if is_data_center_blackwell`, vllm/config/vllm.py @ v0.28.0),
twice the 512 of the 0.73 GiB estimate gen's 0.75 GiB comes from: gen doubles it. No B200 log
of a catalog model was found."""

_NO_SM_FLOOR = 0
"""No SM floor for FlashInfer's sampler: [vllm] it is refused with ≤ 16 SMs only from 0.33
(flashinfer_sampler_supported, vllm/v1/sample/ops/topk_topp_sampler.py @ v0.33.0)."""

_BEFORE_0_21 = MemoryProfile(
    since=(0, 0, 0), label="0.10–0.20", v2_rule="never", v2_architectures=frozenset(),
    v1_cudagraph_estimate=False, v2_cudagraph_estimate=False,
    non_kv_rule="weights + torch peak increase + non-torch increase",
    non_torch_bytes=NON_TORCH_BYTES, nccl_bytes=NCCL_BYTES,
    v1_sampler_buffers=SAMPLER_VOCAB_BUFFERS,
    flashinfer_sampler_buffers=FLASHINFER_SAMPLER_VOCAB_BUFFERS,
    v2_sampler_buffers=_V2_SAMPLER, v2_warmup_sampler=False, flashinfer_min_sms=_NO_SM_FLOOR,
    dc_blackwell_cudagraph_bytes=CUDA_GRAPH_BYTES,
    source="[fitted on 0.10–0.19 logs] the CUDA-graph estimate was opt-in "
           "(VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS default 0)",
)
_V0_21 = replace(
    _BEFORE_0_21, since=(0, 21, 0), label="0.21", v1_cudagraph_estimate=True,
    source="vllm-project/vllm vllm/envs.py @ v0.21.0 (VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS "
           "on, VLLM_USE_V2_MODEL_RUNNER '0')",
)
_V0_25 = replace(
    _V0_21, since=(0, 25, 0), label="0.25–0.26", v2_rule="allowlist-or-dense",
    v2_architectures=_V2_ARCHITECTURES_0_25,
    source="vllm-project/vllm vllm/config/vllm.py @ v0.25.0 (listed, or not MoE); "
           "vllm/v1/worker/gpu/model_runner.py @ v0.26.0 (profile_cudagraph_memory returns 0)",
)
_V0_27 = replace(
    _V0_25, since=(0, 27, 0), label="0.27",
    non_kv_rule="free-memory drop since the worker snapshot + transient peak headroom",
    non_torch_bytes=_NON_TORCH_FREE_DROP, nccl_bytes=_NCCL_FREE_DROP,
    source="vllm-project/vllm vllm/utils/mem_utils.py @ v0.27.0 (total_consumed + "
           "transient_peak_headroom); vllm/v1/worker/gpu_worker.py @ v0.27.0",
)
_V0_28 = replace(
    _V0_27, since=(0, 28, 0), label="0.28", dc_blackwell_cudagraph_bytes=_DC_BLACKWELL_GRAPHS,
    source="vllm-project/vllm vllm/config/vllm.py @ v0.28.0 (data-centre Blackwell captures to "
           "1024 tokens)",
)
_V0_29 = replace(
    _V0_28, since=(0, 29, 0), label="0.29–0.32", v2_rule="all", v2_architectures=frozenset(),
    v2_cudagraph_estimate=True,
    source="vllm-project/vllm vllm/config/vllm.py @ v0.29.0 (V2 for every model); "
           "vllm/v1/worker/gpu/cudagraph_utils.py @ v0.29.0 (V2's CUDA-graph profiler)",
)

MEMORY_PROFILES: tuple[MemoryProfile, ...] = (
    _BEFORE_0_21,
    _V0_21,
    replace(_V0_21, since=(0, 22, 0), label="0.22", v2_rule="allowlist-dense",
            v2_architectures=_V2_ARCHITECTURES_0_22,
            source="vllm-project/vllm vllm/config/vllm.py @ v0.22.0 (_is_default_v2_model_"
                   "runner_model: listed, not MoE, not quantized)"),
    replace(_V0_21, since=(0, 23, 0), label="0.23", v2_rule="allowlist-dense",
            v2_architectures=_V2_ARCHITECTURES_0_23,
            source="vllm-project/vllm vllm/config/vllm.py @ v0.23.0"),
    replace(_V0_21, since=(0, 24, 0), label="0.24", v2_rule="allowlist",
            v2_architectures=_V2_ARCHITECTURES_0_24,
            source="vllm-project/vllm vllm/config/vllm.py @ v0.24.0 (listed architectures only)"),
    _V0_25,
    _V0_27,
    _V0_28,
    _V0_29,
    replace(_V0_29, since=(0, 33, 0), label="0.33", v2_warmup_sampler=True,
            flashinfer_min_sms=17,
            source="vllm-project/vllm vllm/v1/worker/gpu/model_runner.py @ v0.33.0 (the "
                   "sampler's warmup-param pass); vllm/v1/sample/ops/topk_topp_sampler.py @ "
                   "v0.33.0 (FlashInfer refused with ≤ 16 SMs) [unvalidated: no 0.33 log of a "
                   "catalog model]"),
)



def format_version(version: ReleaseNumbers) -> str:
    """``(0, 33, 0)`` → ``"0.33.0"``."""
    return ".".join(str(part) for part in version)


def memory_profile_for(version: ReleaseNumbers) -> MemoryProfile:
    """The row of :data:`MEMORY_PROFILES` that holds for ``version``."""
    rows = [row for row in MEMORY_PROFILES if row.since <= version]
    return rows[-1]


def model_runner_for(model: LLMSpec, version: ReleaseNumbers) -> ModelRunner:
    """The model runner vLLM ``version`` picks by default for ``model``."""
    profile = memory_profile_for(version)
    listed = (model.architecture or "") in profile.v2_architectures
    dense = not model.experts
    unquantized = model.quantization is None
    rule = profile.v2_rule
    v2 = (rule == "all"
          or (rule == "allowlist" and listed)
          or (rule == "allowlist-dense" and listed and dense and unquantized)
          or (rule == "allowlist-or-dense" and (listed or dense)))
    return "v2" if v2 else "v1"


def parse_vllm_version(text: str) -> ReleaseNumbers:
    """``"0.27.1"``, ``"0.10.1.1"``, ``"v0.28.0-cu129"`` → ``(0, 27, 1)``, ``(0, 10, 1)``,
    ``(0, 28, 0)``: the release numbers of :meth:`gen.serving.vllm_releases.VllmVersion.parse`.

    Raises:
        VersionError: ``text`` is not a vLLM version.
    """
    from gen.serving.vllm_releases import VllmVersion as Parsed

    return Parsed.parse(text).release
