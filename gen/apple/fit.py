"""The unified-memory fit of a model on an Apple GPU, term by term, as llama.cpp allocates it.

An Apple GPU (a native Mac under Metal, or the Venus GPU of a krunkit VM) has no memory of its
own: the model server allocates its buffers in unified memory, and what it may use is a cap
(the Mac's Metal working-set size, or the VM's VRAM window; :mod:`gen.apple.chips`). llama.cpp
allocates everything at start-up, in three device buffers it logs one by one, so gen's terms
are those buffers (the log lines are ggml-org/llama.cpp ``src/llama-model.cpp``
"model buffer size", ``src/llama-kv-cache.cpp`` "KV buffer size", ``src/llama-context.cpp``
"compute buffer size"; on Metal ``ggml_metal_device_init`` also logs the cap as
``recommendedMaxWorkingSetSize``)::

    budget   = gpu_memory_utilization × cap                   (gen's margin below the cap)
    weights  = the GGUF's tensors                              ("model buffer size")
    kv       = 2 (K,V) × kv_heads × head_dim × 2 bytes (f16)   ("KV buffer size")
               × (full layers × n_ctx + sliding layers × min(n_ctx, slots × window + ubatch))
    compute  = ubatch × 4 bytes × (vocab + 4 × hidden + 2 × MLP width)   ("compute buffer size")
    runtime  = a fixed allowance for the backend's own objects
    fits     ⇔ weights + kv + compute + runtime ≤ budget

**Slots.** llama-server serves ``--parallel N`` requests at once, one slot each, and splits
``--ctx-size`` (``-c``) evenly between them (ggml-org/llama.cpp ``src/llama-context.cpp``:
``n_ctx_seq = n_ctx / n_seq_max`` unless the KV cache is unified, each padded to 256 tokens;
``common/common.cpp`` passes ``--parallel`` as ``n_seq_max``). An explicit ``--parallel``
keeps the cache split (``kv_unified`` defaults to false); only an unset one makes the server
pick 4 unified slots (``tools/server/server.cpp``: "n_parallel is set to auto, using
n_parallel = 4 and kv_unified = true"). So gen renders ``-c N × max_model_len --parallel N``
and budgets the KV cache of ``N × max_model_len`` tokens: every slot can hold a full
``max_model_len`` request, as vLLM's ``max_model_len`` promises. The number of slots is
``serving.max_num_seqs`` when the profile sets it, else 1: llama.cpp reserves the KV cache of
every slot up front, so vLLM's default of 64 sequences would multiply it by 64.

vllm-metal and vllm-mlx grow their KV cache as requests arrive; gen budgets one full
``max_model_len`` sequence for them (slots = 1), the weights and the same compute allowance.

The compute and runtime terms are gen's estimates [derived]: llama.cpp sizes the compute buffer
from the graph of one micro-batch (``-ub``, default 512 tokens) with flash attention, whose
largest tensors are the fp32 logits (``vocab`` per token) and the MLP's hidden activations.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from gen.apple.chips import GIB, MIB
from gen.serving.fit import BudgetTerm

if TYPE_CHECKING:
    from gen.serving.model_catalog import LLMSpec

__all__ = [
    "KV_ELEMENT_BYTES",
    "N_CTX_PAD",
    "RUNTIME_BYTES",
    "UBATCH_TOKENS",
    "AppleFitReport",
    "AppleGPU",
    "apple_fit",
    "compute_bytes",
    "kv_bytes",
    "kv_tokens",
]

KV_ELEMENT_BYTES = 2
"""llama.cpp's default KV cache type is f16 (``--cache-type-k`` / ``-v``: ``f16``)."""
N_CTX_PAD = 256
"""llama.cpp pads the context, and each slot's share of it, to a multiple of 256 tokens."""
UBATCH_TOKENS = 512
"""llama.cpp's default physical batch (``-ub, --ubatch-size``: 512)."""
_LOGIT_BYTES = 4
"""The compute buffer's tensors are fp32."""
RUNTIME_BYTES = 512 * MIB
"""The backend's own objects outside the three logged buffers (pipelines, command buffers,
the CPU-side graph) [unverified: gen's allowance, not measured]."""

GPUKind = Literal["metal", "venus"]


@dataclass(frozen=True)
class AppleGPU:
    """The GPU one Apple model server sees, and the cap its memory comes from.

    Attributes:
        name: for messages, e.g. ``Apple M2 Ultra (192 GB)``.
        memory_bytes: the cap: Metal's working set on a Mac, the VRAM window in a VM.
        kind: ``metal`` (native macOS) or ``venus`` (krunkit VM, Vulkan through Mesa Venus).
        source: where the cap comes from, in words (shown with the budget).
    """

    name: str
    memory_bytes: int
    kind: GPUKind
    source: str

    @property
    def memory_mib(self) -> int:
        """The cap in MiB."""
        return self.memory_bytes // MIB


def kv_bytes(model: LLMSpec, n_ctx: int, slots: int = 1) -> int:
    """Bytes of llama.cpp's KV cache for ``n_ctx`` tokens over ``slots`` sequences (f16).

    Full-attention layers hold every token; sliding-window layers hold at most
    ``slots × window + ubatch`` (llama.cpp's SWA cache, ``src/llama-kv-cache-iswa.cpp``)
    [derived].
    """
    per_token_layer = 2 * model.kv_heads * model.head_dim * KV_ELEMENT_BYTES
    tokens = model.full_attention_layers * n_ctx
    if model.sliding_window_layers and model.sliding_window:
        window = min(n_ctx, slots * model.sliding_window + UBATCH_TOKENS)
        tokens += model.sliding_window_layers * window
    return per_token_layer * tokens


def compute_bytes(model: LLMSpec) -> int:
    """gen's estimate of llama.cpp's compute buffer for one micro-batch [derived]."""
    width = (model.intermediate_size or 4 * model.hidden_size) * (model.experts_per_token or 1)
    vocab = model.vocab_size or 0
    return UBATCH_TOKENS * _LOGIT_BYTES * (vocab + 4 * model.hidden_size + 2 * width)


@dataclass(frozen=True)
class AppleFitReport:
    """The answer of :func:`apple_fit`.

    Attributes:
        fits: weights, KV cache, compute buffer and runtime fit the budget.
        errors: why not (empty when it fits).
        max_model_len: the context per slot asked for.
        slots: concurrent sequences (llama-server ``--parallel``).
        n_ctx: the KV cache's tokens, ``slots × max_model_len`` (llama-server ``-c``).
        terms: budget, weights, kv, compute, runtime, headroom, in that order.
        max_model_len_fit: the longest context per slot that fits with ``slots`` slots
            (capped at the model's maximum; 0 when not even one token fits).
        max_slots_fit: how many slots of ``max_model_len`` fit (0 when none).
    """

    fits: bool
    errors: tuple[str, ...]
    model: str
    engine: str
    device: AppleGPU
    gpu_memory_utilization: float
    max_model_len: int
    slots: int
    n_ctx: int
    terms: tuple[BudgetTerm, ...]
    max_model_len_fit: int
    max_slots_fit: int

    def term(self, name: str) -> int:
        """The bytes of one term by name (``budget``, ``weights``, ``kv``, ...)."""
        for t in self.terms:
            if t.name == name:
                return t.bytes
        raise KeyError(name)

    @property
    def headroom(self) -> int:
        """Budget left after every term (negative: does not fit)."""
        return self.term("headroom")

    def to_json(self) -> dict[str, Any]:
        """The documented JSON form (``gen apple fit --json``), schema version 1.

        Keys: ``schema_version``, ``fits``, ``errors``, ``model``, ``engine``, ``device``
        (``name``, ``kind``, ``cap_bytes``, ``cap_source``), ``settings``
        (``max_model_len``, ``slots``, ``n_ctx``, ``gpu_memory_utilization``), ``terms``
        (a list of ``{name, bytes, source}``: budget, weights, kv, compute, runtime,
        headroom), ``max_model_len_fit``, ``max_slots_fit``.
        """
        return {
            "schema_version": 1,
            "fits": self.fits,
            "errors": list(self.errors),
            "model": self.model,
            "engine": self.engine,
            "device": {"name": self.device.name, "kind": self.device.kind,
                       "cap_bytes": self.device.memory_bytes,
                       "cap_source": self.device.source},
            "settings": {"max_model_len": self.max_model_len, "slots": self.slots,
                         "n_ctx": self.n_ctx,
                         "gpu_memory_utilization": self.gpu_memory_utilization},
            "terms": [t.to_json() for t in self.terms],
            "max_model_len_fit": self.max_model_len_fit,
            "max_slots_fit": self.max_slots_fit,
        }

    def format(self) -> str:
        """The human-readable budget, one term a line with what to compare it with."""
        verdict = "fits" if self.fits else "does NOT fit"
        sign = {"budget": " ", "headroom": "="}
        lines = [
            f"{self.model} with {self.engine} on {self.device.name}: {verdict}",
            f"  max_model_len={self.max_model_len} per slot × {self.slots} slot(s) = "
            f"n_ctx {self.n_ctx}",
            f"  cap {self.device.memory_bytes / GIB:.2f} GiB: {self.device.source}",
            "",
        ]
        for t in self.terms:
            lines.append(f"  {sign.get(t.name, '−')} {t.name:<9}{t.bytes / GIB:10.2f} GiB"
                         f"   {t.source}")
        lines += [
            "",
            f"  longest max_model_len with {self.slots} slot(s): {self.max_model_len_fit}",
            f"  slots of {self.max_model_len} tokens that fit: {self.max_slots_fit}",
        ]
        lines += [f"  error: {e}" for e in self.errors]
        return "\n".join(lines)


def _pad(tokens: int) -> int:
    return -(-tokens // N_CTX_PAD) * N_CTX_PAD


def kv_tokens(length: int, slots: int = 1, *, engine: str = "llama-server") -> int:
    """Tokens of KV cache llama-server allocates for ``-c slots × length --parallel slots``.

    llama.cpp pads ``n_ctx`` to 256, gives each slot ``pad256(n_ctx / slots)`` tokens and
    sets ``n_ctx`` to ``slots ×`` that (ggml-org/llama.cpp ``src/llama-context.cpp``:
    ``n_ctx = GGML_PAD(n_ctx, 256)``, ``n_ctx_seq = GGML_PAD(n_ctx / n_seq_max, 256)``).
    Other engines hold ``length`` tokens of one sequence.
    """
    if engine != "llama-server":
        return length
    return slots * _pad(_pad(slots * length) // slots)


def _log_name(device: AppleGPU) -> str:
    return "Metal" if device.kind == "metal" else "Vulkan0"


def _need(model: LLMSpec, length: int, slots: int, engine: str) -> int:
    return (model.weight_bytes + kv_bytes(model, kv_tokens(length, slots, engine=engine), slots)
            + compute_bytes(model) + RUNTIME_BYTES)


def _largest(limit: int, fits: Any) -> int:
    """The largest n in [0, limit] with fits(n) (fits is monotone, fits(0) assumed)."""
    low, high = 0, limit
    while low < high:
        mid = (low + high + 1) // 2
        if fits(mid):
            low = mid
        else:
            high = mid - 1
    return low


def apple_fit(
    model: LLMSpec,
    device: AppleGPU,
    *,
    engine: str = "llama-server",
    max_model_len: int | None = None,
    slots: int = 1,
    gpu_memory_utilization: float = 0.90,
) -> AppleFitReport:
    """Budget ``model`` on one Apple GPU with ``slots`` slots of ``max_model_len`` tokens.

    ``max_model_len`` defaults to the model's maximum. Pure: "does not fit" is in the report.
    """
    length = model.max_context if max_model_len is None else max_model_len
    slots = max(1, slots)
    log = _log_name(device)
    budget = int(device.memory_bytes * gpu_memory_utilization)
    weights = model.weight_bytes
    kv = kv_bytes(model, kv_tokens(max(length, 0), slots, engine=engine), slots)
    compute = compute_bytes(model)
    used = weights + kv + compute + RUNTIME_BYTES
    per_token = 2 * model.kv_heads * model.head_dim * KV_ELEMENT_BYTES * model.full_attention_layers
    llama = engine == "llama-server"
    if device.kind != "metal":
        cap = " (krunkit's VRAM window)"
    elif llama:
        cap = " (log: ggml_metal_device_init: recommendedMaxWorkingSetSize)"
    else:
        cap = " (Metal's recommendedMaxWorkingSetSize)"
    if llama:
        sources = (
            f"the GGUF's tensors; log: load_tensors: {log} model buffer size",
            f"{slots} × {length} tokens (n_ctx padded to 256 per slot), f16, "
            f"~{per_token:,} bytes/token; log: llama_kv_cache: {log} KV buffer size",
            f"one {UBATCH_TOKENS}-token micro-batch (gen's estimate); "
            f"log: llama_context: {log} compute buffer size",
        )
    else:
        sources = (
            "the checkpoint's weights, loaded whole",
            f"one full sequence of {length} tokens, 16-bit, ~{per_token:,} bytes/token "
            f"({engine} grows its KV cache on demand)",
            f"one {UBATCH_TOKENS}-token batch of activations (gen's estimate)",
        )
    terms = (
        BudgetTerm("budget", budget, f"{gpu_memory_utilization:.2f} × the cap{cap}"),
        BudgetTerm("weights", weights, sources[0]),
        BudgetTerm("kv", kv, sources[1]),
        BudgetTerm("compute", compute, sources[2]),
        BudgetTerm("runtime", RUNTIME_BYTES, "backend objects outside those buffers (gen's "
                "allowance)"),
        BudgetTerm("headroom", budget - used, "budget − the four terms above"),
    )
    errors: list[str] = []
    if length < 1:
        errors.append(f"max_model_len must be at least 1, got {length}")
    elif length > model.max_context:
        errors.append(f"max_model_len {length} exceeds the model's context of "
                      f"{model.max_context} tokens (llama.cpp caps each slot at n_ctx_train)")
    max_len = _largest(model.max_context,
                       lambda n: _need(model, n, slots, engine) <= budget)
    max_slots = 0
    if 1 <= length <= model.max_context:
        max_slots = _largest(
            4096, lambda n: n == 0 or _need(model, length, n, engine) <= budget)
    if weights + compute + RUNTIME_BYTES > budget:
        errors.append(
            f"the weights ({weights / GIB:.2f} GiB) with the compute buffer and runtime "
            f"({(compute + RUNTIME_BYTES) / GIB:.2f} GiB) exceed the budget of "
            f"{budget / GIB:.2f} GiB ({gpu_memory_utilization:.2f} × "
            f"{device.memory_bytes / GIB:.2f} GiB)"
        )
    elif used > budget:
        errors.append(
            f"{slots} slot(s) × {length} tokens need {kv / GIB:.2f} GiB of KV cache, "
            f"{(used - budget) / GIB:.2f} GiB more than the budget of {budget / GIB:.2f} GiB "
            f"leaves after the weights; the longest max_model_len with {slots} slot(s) is "
            f"{max_len}, and {max_slots} slot(s) of {length} tokens fit"
        )
    return AppleFitReport(
        fits=not errors, errors=tuple(errors), model=model.id, engine=engine, device=device,
        gpu_memory_utilization=gpu_memory_utilization, max_model_len=length, slots=slots,
        n_ctx=slots * length, terms=terms, max_model_len_fit=max_len, max_slots_fit=max_slots,
    )
