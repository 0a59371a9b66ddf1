"""The serving performance model: tokens/s, TTFT and TPOT of one replica of a model on a GPU, by engine and precision.

One replica is ``tensor_parallel`` GPUs in one instance (NVLink or PCIe) times ``pipeline_parallel`` instances. The
engine batches continuously (vLLM, SGLang, TensorRT-LLM in-flight batching): every iteration decodes one token for
each running sequence and spends the rest of its token budget on the prompts of new ones (chunked prefill). In the
steady state, with B sequences running, input I and output O tokens per request:

* **memory** per GPU (:func:`memory_per_gpu`): the weights of the stage's layers split over TP; the engine's
  activation workspace; the rest of the engine's memory share is the paged KV cache. A sequence holds ``I + O/2``
  tokens on average where the engine pages the cache on demand (vLLM, SGLang), ``I + O`` where it reserves the whole
  request at admission (TensorRT-LLM's default ``GUARANTEED_NO_EVICT`` scheduler);
* **decode step** (:func:`decode_step_s`): the bytes moved (the weights the batch touches, the KV cache of the batch)
  over the memory bandwidth, and the FLOPs (``2 N_active`` per token plus attention ``4 L c h_q d``) over the tensor
  peak of the precision, blended ``(t_mem^p + t_flop^p)^(1/p)``; two all-reduces per layer across TP over NVLink or
  PCIe (Megatron-LM, Shoeybi et al. 2019); a fixed launch/scheduling time per layer;
* **prefill** (:func:`prefill_s`): ``2 N_active I + 2 L I^2 h_q d`` FLOPs at the prefill efficiency;
* **TPOT** = decode step + the prefill work the step carries: ``B/O`` new requests start per step, so
  ``TPOT = t_step + (B/O) t_prefill``; **tokens/s** = ``B / TPOT``; **TTFT** = the request's own prefill (through
  every pipeline stage) + one iteration like any other (``TPOT``); no queueing.

The efficiencies are fitted on ``shared/data/perf/serving.csv`` by ``benchmarks/serving_fit.py`` as general
relations (memory-bandwidth efficiency by GPU generation; compute efficiency by phase and precision class; all-reduce
latency by interconnect; an engine factor), never a constant per row; the fit's figures are in the README. The
engine's batch limits and memory shares are the engines' documented defaults (:data:`ENGINES`).

Units: seconds, bytes, FLOP, tokens; GiB = 2**30 bytes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any

from gpuopt.kernel.errors import InputError
from gpuopt.kernel.inputs import MAX_QUANTITY
from optimizer.sizing import physical
from optimizer.sizing.specs import GpuSpec, ModelSpec

GIB = 2**30

# ----------------------------------------------------------------------------------------------------- precisions
#: Serving precisions: weights / KV cache / matmul.
SERVE_PRECISIONS = ("bf16", "fp16", "fp8", "int8", "int4", "fp4")

#: Bytes per parameter of the quantized linear layers (embeddings and the output head stay 16-bit: ModelOpt and
#: vLLM quantize the linear layers of the blocks, not ``lm_head``/``embed_tokens``).
#: fp8: 1 B (per-tensor scales negligible). int8: 1 B (per-channel scales negligible). int4 (AWQ/GPTQ, group
#: size 128 with a 16-bit scale and a 4-bit zero point per group, AWQ paper arXiv 2306.00978): 0.5 + (2 + 0.5)/128
#: = 0.5195 B (DERIVED). fp4 (NVFP4: 4-bit values with one FP8 scale per 16, NVIDIA "Introducing NVFP4" blog
#: 2025): 0.5 + 1/16 = 0.5625 B (DERIVED).
WEIGHT_BYTES: dict[str, float] = {"bf16": 2.0, "fp16": 2.0, "fp8": 1.0, "int8": 1.0, "int4": 0.5 + 2.5 / 128,
                                  "fp4": 0.5 + 1.0 / 16}
#: KV-cache bytes per element: 16-bit, except fp8 and fp4 checkpoints that serve an FP8 KV cache (TensorRT-LLM
#: perf-overview "FP8 KV cache"; vLLM ``--kv-cache-dtype fp8``). Weight-only int8/int4 keep a 16-bit cache.
KV_BYTES: dict[str, float] = {"bf16": 2.0, "fp16": 2.0, "fp8": 1.0, "int8": 2.0, "int4": 2.0, "fp4": 1.0}
#: The tensor-core peak each precision's matmuls run at: 16-bit for bf16/fp16 and for weight-only int8/int4
#: (the weights are dequantized to 16-bit in the kernel: AWQ, GPTQ/Marlin), FP8 for fp8, FP4 for fp4.
MATMUL_PEAK: dict[str, str] = {"bf16": "fp16", "fp16": "fp16", "fp8": "fp8", "int8": "fp16", "int4": "fp16",
                               "fp4": "fp4"}
#: Blackwell's dense FP4 peak is twice its FP8 peak: DGX B200 datasheet, 72 PFLOPS FP8 training and 144 PFLOPS FP4
#: inference per 8 GPUs (both with sparsity) -> 9 / 4.5 PFLOPS dense per GPU.
FP4_OVER_FP8 = 2.0

# ----------------------------------------------------------------------------------------------------- scenarios
#: Latency targets by scenario, (TTFT ms, TPOT ms) at the 99th percentile.
#: ``chat`` (the default, issue 26: a product target, not a benchmark limit): p99 TPOT <= 50 ms = 20 tokens/s per
#: user, the low end of the 20-50 tokens/s that MLCommons gives as fluent reading when it set MLPerf's Llama-2-70B
#: interactive limit (MLCommons blog "MLPerf Inference v5.0", Llama 2 70B interactive: 450 ms TTFT, 40 ms TPOT from
#: that range; its server limit of 200 ms is ~240 words a minute, "human reading speed" as a lower bound, not a
#: product's pace), and p99 TTFT <= 2 s, MLPerf's server TTFT limit for Llama-2-70B and Llama-3.1-8B (MLPerf
#: Inference rules; ``loadgen/mlperf.conf`` llama2-70b.Server.ttft_latency = 2000).
#: ``server``: MLPerf Inference llama2-70b server (p99 TTFT <= 2 s, p99 TPOT <= 200 ms); ``interactive``: MLPerf
#: llama2-70b interactive (450 ms, 40 ms) (shared/data/perf README; MLPerf Inference rules). ``offline`` has none:
#: maximum throughput, every request queued (batch work).
SCENARIOS: dict[str, tuple[float | None, float | None]] = {
    "chat": (2000.0, 50.0),
    "offline": (None, None),
    "server": (2000.0, 200.0),
    "interactive": (450.0, 40.0),
}
#: What each scenario's targets are taken from (shown with the targets in every plan).
SCENARIO_SOURCES: dict[str, str] = {
    "chat": "chat targets: 20 tokens/s per user (MLCommons' 20-50 tokens/s reading range), MLPerf server TTFT",
    "server": "MLPerf server targets",
    "interactive": "MLPerf interactive targets",
    "offline": "offline: no latency target",
}
DEFAULT_SCENARIO = "chat"
#: The scenarios a serving plan is also priced under, beside its own (issue 26: "every serving plan shows beside it
#: what the interactive and the batch (offline) targets would cost").
ALTERNATIVE_SCENARIOS: tuple[str, ...] = ("interactive", "chat", "offline")

#: 99th percentile over mean under Poisson arrivals, for checking p99 targets against the model's steady-state
#: means (DERIVED: median over the calibration set's 7 MLPerf server rows that give both, TensorRT-LLM on 8x H100 /
#: H200 and 1x B200, Llama-2-70B and Mixtral-8x7B, MLPerf v4.0/v4.1, rows 2, 4, 6, 12, 14, 16, 18; TTFT ratios 1.49
#: to 3.49, TPOT 1.13 to 1.21; e.g. H200 Llama-2-70B: TTFT 413 / 753 ms, TPOT 165 / 195 ms). Printed by
#: ``benchmarks/serving_fit.py``.
P99_OVER_MEAN_TTFT = 1.73
P99_OVER_MEAN_TPOT = 1.15

# ----------------------------------------------------------------------------------------------------- engines


@dataclass(frozen=True)
class EngineProfile:
    """What an engine does with a GPU's memory and how it batches; its speed relative to the fitted model.

    Attributes:
        name: ``vllm``, ``sglang`` or ``tensorrt-llm``.
        memory_fraction: share of each GPU's memory the engine fills with weights, activations and KV cache.
        reserve_full_request: True when the scheduler reserves a request's whole ``I + O`` tokens of KV cache at
            admission; False when pages are allocated as tokens are generated (average ``I + O/2``).
        max_batch_large: the engine's default cap on running sequences on a "large" GPU (>= 70 GiB, not named in
            ``small_names``).
        max_batch_small: the same on other GPUs.
        max_num_tokens: the default token budget of one iteration (prefill chunk + decode tokens) on a large GPU.
        max_num_tokens_small: the same on other GPUs.
        small_names: GPU name prefixes the engine treats as small whatever their memory.
        speed: step-time multiplier relative to the fitted TensorRT-LLM profile (1.0 = as fast), fitted.
        source: where each default comes from.
        step_overhead_s: host time the engine adds to every iteration on the critical path (scheduling, sampling,
            Python between kernels), s; fitted on published rate sweeps by ``benchmarks/latency_fit.py``.
        seq_overhead_s: host time added per running sequence per iteration, s; fitted the same way. Both are
            added to every iteration of :func:`point` (so to throughput and latency alike).
        prefix_hit, spec_tokens, acceptance, draft_cost: the workload's serving options (:func:`engine_for`):
            share of input tokens served from the prefix cache; speculative decoding's draft tokens per step, their
            acceptance probability and a draft token's cost as a share of a target decode iteration (None: one
            transformer layer's, 1 / L -- an EAGLE-style draft head, Li et al. 2024, arXiv 2401.15077).
    """

    name: str
    memory_fraction: float
    reserve_full_request: bool
    max_batch_large: int
    max_batch_small: int
    max_num_tokens: int
    speed: float
    source: str
    max_num_tokens_small: int = 0
    small_names: tuple[str, ...] = ()
    step_overhead_s: float = 0.0
    seq_overhead_s: float = 0.0
    prefix_hit: float = 0.0
    spec_tokens: int = 0
    acceptance: float = 0.0
    draft_cost: float | None = None

    def _large(self, gpu: GpuSpec) -> bool:
        return gpu.memory_gib >= 70 and not gpu.name.upper().startswith(self.small_names)

    def max_batch(self, gpu: GpuSpec) -> int:
        """The engine's default cap on running sequences on ``gpu``."""
        return self.max_batch_large if self._large(gpu) else self.max_batch_small

    def max_tokens(self, gpu: GpuSpec) -> int:
        """The engine's default token budget of one iteration on ``gpu``."""
        return self.max_num_tokens if self._large(gpu) else (self.max_num_tokens_small or self.max_num_tokens)


ENGINES: dict[str, EngineProfile] = {
    "vllm": EngineProfile(
        name="vllm", memory_fraction=0.90, reserve_full_request=False, max_batch_large=1024, max_batch_small=256,
        max_num_tokens=8192, max_num_tokens_small=2048, small_names=("A100",), speed=1.0,
        step_overhead_s=0.0, seq_overhead_s=0.0,
        source="vLLM (V1 engine, 0.8 and later) engine arguments: --gpu-memory-utilization 0.9; "
               "vllm/engine/arg_utils.py default batch: max_num_seqs 1024 and max_num_batched_tokens 8192 (API "
               "server) on GPUs of >= 70 GiB other than A100, else 256 / 2048; PagedAttention allocates KV blocks "
               "on demand (Kwon et al. 2023); host time per iteration fitted on 16 published V1 rate sweeps: 0 ms "
               "(V1 overlaps it with the GPU; benchmarks/latency_fit.py, grid 0-20 ms)"),
    "sglang": EngineProfile(
        name="sglang", memory_fraction=0.88, reserve_full_request=False, max_batch_large=1024, max_batch_small=256,
        max_num_tokens=8192, speed=1.0,
        source="SGLang server arguments: --mem-fraction-static ~0.88 on 80 GB GPUs; RadixAttention pages KV on "
               "demand; speed taken equal to TensorRT-LLM: the calibration set's row 704 (LMSYS, Llama-3-8B A100 "
               "offline) measured SGLang and TensorRT-LLM at par"),
    "tensorrt-llm": EngineProfile(
        name="tensorrt-llm", memory_fraction=0.90, reserve_full_request=True, max_batch_large=2048,
        max_batch_small=2048, max_num_tokens=8192, speed=1.0,
        source="TensorRT-LLM: kv_cache_free_gpu_mem_fraction 0.9; GUARANTEED_NO_EVICT default capacity scheduler "
               "(reserves a request's whole KV at admission; performance tuning guide 'Useful runtime options'); "
               "trtllm-build max_batch_size 2048, max_num_tokens 8192"),
}
#: vLLM's V0 engine (before 0.8): the V1 profile's memory and token budget, its own batch cap and host time.
ENGINES["vllm-v0"] = replace(
    ENGINES["vllm"], name="vllm-v0", max_batch_large=256, max_batch_small=256, step_overhead_s=0.012,
    seq_overhead_s=0.00002,
    source="vLLM's V0 engine (before 0.8): max_num_seqs 256; scheduling, sampling and detokenization on the "
           "critical path of every iteration (vLLM blog 'vLLM V1: A Major Upgrade to vLLM's Core Architecture', "
           "2025-01-27): 12 ms per iteration + 0.02 ms per running sequence of host time, fitted on 47 published "
           "V0 rate sweeps (AccelMark, vLLM 0.7.3; benchmarks/latency_fit.py)")
ENGINES = {k: ENGINES[k] for k in ("vllm", "vllm-v0", "sglang", "tensorrt-llm")}  # the order errors list them in
DEFAULT_ENGINE = "vllm"
#: Modes of ``--disaggregate`` (optimizer.sizing.disaggregated): off (default), auto, on.
DISAGGREGATE_MODES = ("off", "auto", "on")


def engine_aliases(name: str) -> str:
    """The canonical engine name of ``name`` (``trt-llm``, ``trtllm``, ``nim`` -> ``tensorrt-llm``)."""
    key = str(name or "").strip().lower().replace("_", "-").replace(" ", "-")
    return {"trt-llm": "tensorrt-llm", "trtllm": "tensorrt-llm", "tensorrtllm": "tensorrt-llm",
            "nim": "tensorrt-llm", "vllm0": "vllm-v0", "vllm-0": "vllm-v0"}.get(key, key)


#: Benchmark-client backends that name the API, not the engine behind it (vLLM benchmark_serving ``--backend
#: openai-chat``): a measurement with one of these is taken to be of the engine estimated.
_API_BACKENDS = ("openai", "openai-chat", "openai-completions", "openai-audio", "openai-embeddings")


def engine_for(w) -> EngineProfile:
    """The engine profile of serving workload ``w`` (:func:`load_engine` of ``w.engine``) with its serving options:
    ``prefix_cache_hit_rate``, ``speculative_tokens`` and ``acceptance_rate``. Raises InputError as load_engine."""
    eng = load_engine(w.engine)
    h = float(getattr(w, "prefix_cache_hit_rate", 0.0) or 0.0)
    k = int(getattr(w, "speculative_tokens", 0) or 0)
    if not h and not k:
        return eng
    return replace(eng, prefix_hit=h, spec_tokens=k, acceptance=float(getattr(w, "acceptance_rate", 0.0) or 0.0))


def tokens_per_verification(k: int, acceptance: float) -> float:
    """Expected tokens one speculative step yields with ``k`` draft tokens each accepted with probability
    ``acceptance`` (i.i.d.): ``(1 - a^(k+1)) / (1 - a)`` -- the accepted prefix plus the target's own token
    (Leviathan, Kalman and Matias, "Fast Inference from Transformers via Speculative Decoding", ICML 2023, eq. 1).
    1 without speculation (k = 0)."""
    if k <= 0:
        return 1.0
    a = min(max(acceptance, 0.0), 1.0 - 1e-12)
    return (1.0 - a ** (k + 1)) / (1.0 - a)


def decode_iteration_s(m: ModelSpec, gpu: GpuSpec, layout: Layout, precision: str, batch: float, context: float,
                       fit: "ServingFit", engine: EngineProfile) -> float:
    """GPU time of one decode iteration of ``batch`` sequences, s: :func:`decode_step_s`, or with speculative
    decoding (``engine.spec_tokens`` = k > 0) the target's verification of k + 1 tokens per sequence -- the
    weights and each sequence's KV cache read once, k + 1 tokens' FLOPs (as ``decode_step_s`` of ``batch x (k+1)``
    tokens over ``context / (k+1)``) -- plus k draft tokens at ``draft_cost`` of a plain iteration each. The
    iteration yields :func:`tokens_per_verification` tokens per sequence."""
    plain = decode_step_s(m, gpu, layout, precision, batch, context, fit, engine.name)
    k = engine.spec_tokens
    if k <= 0:
        return plain
    verify = decode_step_s(m, gpu, layout, precision, batch * (k + 1), context / (k + 1), fit, engine.name)
    dc = engine.draft_cost if engine.draft_cost is not None else 1.0 / m.layers
    return verify + k * dc * plain


def load_engine(name: str | None) -> EngineProfile:
    """The profile of engine ``name`` (``vllm``, ``vllm-v0`` (vLLM before 0.8), ``sglang``, ``tensorrt-llm``;
    ``trt-llm`` accepted), default vLLM.

    Raises:
        InputError("engine"): an unknown engine, listing the accepted ones.
    """
    key = engine_aliases(name or DEFAULT_ENGINE)
    if key not in ENGINES:
        raise InputError("engine", f"unknown serving engine {name!r}", accepted=", ".join(ENGINES))
    return ENGINES[key]


# ----------------------------------------------------------------------------------------------------- the fit


@dataclass(frozen=True)
class ServingFit:
    """The fitted efficiencies (``benchmarks/serving_fit.py`` prints how they were found and how well they fit).

    Attributes:
        bandwidth_efficiency: achieved / peak memory bandwidth in decode, by GPU generation.
        decode_compute_efficiency: achieved / peak tensor FLOP/s of decode's matmuls at large batch.
        prefill_compute_efficiency: achieved / peak tensor FLOP/s in prefill, by matmul precision (fp16, fp8, fp4).
        blend: exponent p of the roofline blend ``(t_mem^p + t_flop^p)^(1/p)`` (p -> inf is the pure roofline).
        allreduce_latency_s: fixed time of one all-reduce, by interconnect (``nvlink``, ``pcie``).
        layer_overhead_s: fixed time per layer per iteration (kernel launches, scheduling).
        allreduce_bw_efficiency: achieved / one-way link bandwidth of the ring all-reduce, by interconnect.
        engine_speed: step-time multiplier per engine relative to TensorRT-LLM: 1.0 for all three (the calibration
            set has no vLLM or SGLang row with stated lengths to fit one on; see ``ENGINES``).
        weight_only_bw_efficiency: weight-only int4/int8 (W4A16, W8A16): the share of the fitted decode bandwidth
            the dequantizing kernels reach on the weights; fitted by ``benchmarks/weight_only_fit.py``.
        weight_only_compute_efficiency: their share of the decode compute efficiency (dequantization in the GEMM).
    """

    bandwidth_efficiency: dict[str, float]
    decode_compute_efficiency: float
    prefill_compute_efficiency: dict[str, float]
    blend: float
    allreduce_latency_s: dict[str, float]
    layer_overhead_s: float
    allreduce_bw_efficiency: dict[str, float] = field(default_factory=lambda: {"nvlink": 1.0, "pcie": 1.0})
    engine_speed: dict[str, float] = field(default_factory=lambda: {"tensorrt-llm": 1.0, "sglang": 1.0,
                                                                    "vllm": 1.0})
    weight_only_bw_efficiency: dict[str, float] = field(default_factory=lambda: {"int4": 1.0, "int8": 1.0})
    weight_only_compute_efficiency: dict[str, float] = field(default_factory=lambda: {"int4": 1.0, "int8": 1.0})


#: The shipped fit (``python benchmarks/serving_fit.py --refit`` reproduces it; figures in the README).
FIT = ServingFit(
    bandwidth_efficiency={"ampere": 0.95, "ada": 0.84, "hopper": 0.93, "blackwell": 0.61, "other": 0.60},
    decode_compute_efficiency=0.53,
    prefill_compute_efficiency={"fp16": 0.69, "fp8": 0.60, "fp4": 0.44},
    blend=1.0,
    allreduce_latency_s={"nvlink": 20e-6, "pcie": 47e-6},
    layer_overhead_s=17e-6,
    allreduce_bw_efficiency={"nvlink": 0.45, "pcie": 0.48},
    # benchmarks/weight_only_fit.py: joint fit on TensorRT-Model-Optimizer's H200 (TRT-LLM 0.15) and H100 (0.11)
    # INT4-AWQ/BF16 tables; W8A16 has no such rows and takes the same factors (an assumption)
    weight_only_bw_efficiency={"int4": 0.65, "int8": 0.65},
    weight_only_compute_efficiency={"int4": 1.0, "int8": 1.0},
)
#: ``other`` (AMD, Intel Gaudi, Volta, Turing): no rows in the calibration set; 0.60 is an assumption below every
#: fitted generation, not a measurement.

GENERATIONS = ("volta", "turing", "ampere", "ada", "hopper", "blackwell", "other")


#: NVIDIA generations without BF16 tensor cores (issue 26: two T4s were labelled "bf16"): Volta (the V100 datasheet
#: lists FP16 tensor FLOPS and no BF16; shared/data/reference/gpu_specs.csv: "No TF32/BF16/FP8") and Turing (the T4
#: datasheet lists FP16, INT8 and INT4 tensor performance only); BF16 tensor cores arrived with Ampere ("NVIDIA A100
#: Tensor Core GPU Architecture" whitepaper: "BF16 ... new in A100").
NO_BF16_GENERATIONS: tuple[str, ...] = ("volta", "turing")


def gpu_generation(gpu: GpuSpec) -> str:
    """The GPU's generation from its datasheet row's ``architecture`` (``"Hopper (GH100)"`` -> ``hopper``);
    ``other`` for non-NVIDIA parts or an unknown architecture."""
    arch = (gpu.architecture or "").lower()
    for gen, word in (("volta", "volta"), ("turing", "turing"), ("ampere", "ampere"), ("ada", "ada"),
                      ("hopper", "hopper"), ("blackwell", "blackwell")):
        if word in arch:
            return gen
    name = gpu.name.upper()
    if name.startswith(("B200", "GB200", "B100")):
        return "blackwell"
    return "other"


def matmul_peak_flops(gpu: GpuSpec, precision: str) -> float:
    """Dense tensor-core peak, FLOP/s, that ``precision``'s matmuls run at on ``gpu`` (:data:`MATMUL_PEAK`).

    Raises:
        InputError("precision"): fp8 on a GPU without FP8 tensor cores (the datasheet lists no FP8 peak: Ampere,
            Volta, Turing), fp4 on a GPU that is not Blackwell, bf16 on Volta or Turing
            (:data:`NO_BF16_GENERATIONS`); an unknown precision.
    """
    if precision not in SERVE_PRECISIONS:
        raise InputError("precision", f"unknown serving precision {precision!r}", accepted=", ".join(SERVE_PRECISIONS))
    kind = MATMUL_PEAK[precision]
    if precision == "bf16" and gpu_generation(gpu) in NO_BF16_GENERATIONS:
        raise InputError("precision", f"{gpu.name} ({gpu_generation(gpu).title()}) has no BF16 tensor cores: serve it "
                                      "as fp16 (the same bytes and peak)", accepted="fp16, int8, int4")
    if kind == "fp16":
        return gpu.fp16_tflops_dense * 1e12
    if not gpu.fp8_tflops_dense:
        ok = ", ".join(p for p in SERVE_PRECISIONS if MATMUL_PEAK[p] == "fp16")
        need = "Blackwell FP4 tensor cores" if kind == "fp4" else \
            "FP8 tensor cores (Ada, Hopper, Blackwell, MI300X, Gaudi 2)"
        raise InputError("precision", f"{gpu.name} has no FP8 tensor cores (its datasheet lists no FP8 peak): "
                                      f"{precision} needs {need}", accepted=ok)
    if kind == "fp8":
        return gpu.fp8_tflops_dense * 1e12
    if gpu_generation(gpu) != "blackwell":
        ok = ", ".join(p for p in SERVE_PRECISIONS if p != "fp4")
        raise InputError("precision", f"fp4 needs Blackwell FP4 tensor cores; {gpu.name} has none", accepted=ok)
    return gpu.fp8_tflops_dense * 1e12 * FP4_OVER_FP8


def supported_precisions(gpu: GpuSpec) -> tuple[str, ...]:
    """The serving precisions ``gpu`` runs (:func:`matmul_peak_flops` does not refuse)."""
    out = []
    for p in SERVE_PRECISIONS:
        try:
            matmul_peak_flops(gpu, p)
        except InputError:
            continue
        out.append(p)
    return tuple(out)


# ----------------------------------------------------------------------------------------------------- the model


def _embedding_params(m: ModelSpec) -> float:
    return float(m.vocab_size * m.hidden_size * (1 if m.tied_embeddings else 2))


def _expert_params(m: ModelSpec) -> float:
    """Parameters of all routed MoE experts (0 for a dense model). From the table's exact counts: the inactive share
    of the experts is ``N_total - N_active = (E - k)/E x routed``, so ``routed = (N_total - N_active) E / (E - k)``
    (DERIVED; exact when the routed experts are equal in size, as in Mixtral, Qwen3 MoE and DeepSeek)."""
    if m.experts <= 1 or m.experts_per_token >= m.experts:
        return 0.0
    return max(0.0, m.params_total - m.params_active) * m.experts / (m.experts - m.experts_per_token)


def weight_bytes(m: ModelSpec, precision: str) -> float:
    """Bytes of the model's weights at ``precision``: the blocks' linear layers at :data:`WEIGHT_BYTES`, the
    embedding and output head at 2 B (DERIVED; see :data:`WEIGHT_BYTES`)."""
    embed = _embedding_params(m)
    return max(0.0, m.params_total - embed) * WEIGHT_BYTES[precision] + embed * 2.0


def _touched_expert_fraction(m: ModelSpec, tokens: float) -> float:
    """Expected share of a layer's experts that ``tokens`` tokens route to, each to ``k`` of ``E`` experts chosen
    uniformly: ``1 - (1 - k/E)^tokens`` (DERIVED; balanced routing, as MoE training's load-balancing loss aims for)."""
    if m.experts <= 1:
        return 1.0
    return 1.0 - (1.0 - m.experts_per_token / m.experts) ** max(tokens, 1.0)


@dataclass(frozen=True)
class Layout:
    """A replica's shape: ``tensor_parallel`` GPUs per stage, ``pipeline_parallel`` stages (one instance each)."""

    tensor_parallel: int = 1
    pipeline_parallel: int = 1

    @property
    def gpus(self) -> int:
        return self.tensor_parallel * self.pipeline_parallel


def tp_supported(m: ModelSpec, tp: int) -> bool:
    """Whether the engines split ``m`` over ``tp`` GPUs: the attention heads divide evenly, and the KV heads divide
    evenly or are replicated whole (vLLM ``ModelConfig.verify_with_parallel_config``: "Total number of attention heads
    must be divisible by tensor parallel size"; ``get_num_kv_heads``: ``max(1, kv_heads // tp)`` with ``tp %
    kv_heads == 0`` when ``tp > kv_heads``). MLA models cache no per-head KV: only the heads count."""
    if tp <= 1:
        return True
    if m.heads % tp:
        return False
    if m.kv_latent_dim:
        return True
    return m.kv_heads % tp == 0 or tp % m.kv_heads == 0


def _stage_layers(m: ModelSpec, pp: int) -> int:
    return math.ceil(m.layers / pp)


def memory_per_gpu(m: ModelSpec, gpu: GpuSpec, layout: Layout, precision: str, engine: EngineProfile
                   ) -> dict[str, float]:
    """Memory of the most loaded GPU, bytes: ``weights`` (the stage's blocks split over TP, + the embedding or
    head), ``activations`` (the engine's workspace for one iteration of ``max_num_tokens`` tokens: the MLP's
    ``3 I/TP`` and the attention's ``4 h`` 16-bit values per token, DERIVED from what a forward pass holds at
    once), ``kv_budget`` (what is left of ``memory_fraction`` for the KV cache; < 0: the weights do not fit),
    ``kv_per_token`` (one token's KV cache on this GPU: the stage's layers, ``ceil(kv_heads/TP)`` heads),
    ``usable`` (``memory_fraction`` x the GPU's memory)."""
    tp, pp = layout.tensor_parallel, layout.pipeline_parallel
    layers = _stage_layers(m, pp)
    embed = _embedding_params(m)
    block = max(0.0, m.params_total - embed) / m.layers
    stage_embed = embed if pp == 1 else min(embed, float(m.vocab_size * m.hidden_size))
    weights = (layers * block * WEIGHT_BYTES[precision] + stage_embed * 2.0) / tp
    mlp_width = (m.moe_intermediate_size or m.intermediate_size) * max(1, m.experts_per_token)
    act = engine.max_tokens(gpu) * (3.0 * mlp_width / tp + 4.0 * m.hidden_size) * 2.0
    usable = gpu.memory_gib * GIB * engine.memory_fraction
    kv_tok = m.kv_bytes_per_token(KV_BYTES[precision], tp, layers)
    return {"weights": weights, "activations": act, "kv_budget": usable - weights - act,
            "kv_per_token": float(kv_tok), "usable": usable}


def tokens_held(engine: EngineProfile, input_tokens: float, output_tokens: float) -> float:
    """KV-cache tokens one running sequence holds on average: ``I + O`` when the engine reserves the whole request,
    ``I + O/2`` when it pages on demand (see :class:`EngineProfile`)."""
    return input_tokens + (output_tokens if engine.reserve_full_request else output_tokens / 2.0)


def max_batch_memory(m: ModelSpec, gpu: GpuSpec, layout: Layout, precision: str, engine: EngineProfile,
                     input_tokens: float, output_tokens: float) -> int:
    """The most sequences the KV cache holds (0 when the weights do not fit)."""
    mem = memory_per_gpu(m, gpu, layout, precision, engine)
    if mem["kv_budget"] <= 0:
        return 0
    per_seq = tokens_held(engine, input_tokens, output_tokens) * mem["kv_per_token"]
    return int(mem["kv_budget"] // per_seq) if per_seq > 0 else 0


def decode_step_s(m: ModelSpec, gpu: GpuSpec, layout: Layout, precision: str, batch: float, context: float,
                  fit: ServingFit = FIT, engine: str = "tensorrt-llm") -> float:
    """Time of one decode iteration of ``batch`` sequences holding ``context`` tokens each, on one pipeline stage, s.

    ``t = speed x [(t_mem^p + t_flop^p)^(1/p) + t_allreduce + L_stage x layer_overhead]`` with
    ``t_mem = (weights read + batch x context x KV/token) / (BW x eff_bw(generation))`` (MoE: the experts the
    batch's tokens touch, :func:`_touched_expert_fraction`), ``t_flop = batch x (2 N_active + 4 L c h_q d) / TP /
    (peak(precision) x eff_decode)``, ``t_allreduce = 2 L_stage (latency(interconnect) + 2 (TP-1)/TP x batch x h x 2 B
    / link)`` (two all-reduces per layer, Megatron-LM; ring all-reduce bytes, NCCL busbw definition, F§9).
    """
    tp, pp = layout.tensor_parallel, layout.pipeline_parallel
    layers = _stage_layers(m, pp)
    frac = layers / m.layers
    mem = _weights_read(m, precision, batch) * frac / tp
    kv = batch * context * m.kv_bytes_per_token(KV_BYTES[precision], tp, layers)
    bw = gpu.memory_bandwidth_gbps * 1e9 * fit.bandwidth_efficiency.get(gpu_generation(gpu),
                                                                        fit.bandwidth_efficiency["other"])
    # weight-only int4/int8: dequantizing kernels reach less of the bandwidth and FLOPs (weight_only_fit.py)
    f_bw = fit.weight_only_bw_efficiency.get(precision, 1.0)
    f_c = fit.weight_only_compute_efficiency.get(precision, 1.0)
    t_mem = mem / (bw * f_bw) + kv / bw
    flops = batch * (2.0 * m.params_active + 4.0 * m.layers * context * m.heads * m.head_dim) * frac / tp
    t_flop = flops / (matmul_peak_flops(gpu, precision) * fit.decode_compute_efficiency * f_c)
    p = fit.blend
    core = (t_mem ** p + t_flop ** p) ** (1.0 / p)
    comm = _allreduce_s(m, gpu, tp, layers, batch, fit)
    return fit.engine_speed.get(engine, 1.0) * (core + comm + layers * fit.layer_overhead_s)


def _weights_read(m: ModelSpec, precision: str, tokens: float) -> float:
    """Bytes of weights one iteration over ``tokens`` tokens reads: all of them for a dense model; for MoE the
    non-expert weights and the touched share of the experts'."""
    total = weight_bytes(m, precision)
    experts = _expert_params(m) * WEIGHT_BYTES[precision]
    return total - experts + experts * _touched_expert_fraction(m, tokens)


def _allreduce_s(m: ModelSpec, gpu: GpuSpec, tp: int, layers: int, tokens: float, fit: ServingFit) -> float:
    if tp <= 1:
        return 0.0
    link = (gpu.link_gbps_one_way or 32.0) * 1e9 * fit.allreduce_bw_efficiency.get(
        gpu.interconnect, fit.allreduce_bw_efficiency["pcie"])
    lat = fit.allreduce_latency_s.get(gpu.interconnect, fit.allreduce_latency_s["pcie"])
    return 2.0 * layers * (lat + 2.0 * (tp - 1) / tp * tokens * m.hidden_size * 2.0 / link)


def prefill_s(m: ModelSpec, gpu: GpuSpec, layout: Layout, precision: str, input_tokens: float,
              fit: ServingFit = FIT, engine: str = "tensorrt-llm", latency: bool = False) -> float:
    """Compute time of one request's prefill of ``input_tokens`` on the replica, s:
    ``(2 N_active I + 2 L I^2 h_q d) / (TP x PP x peak x eff_prefill) + all-reduces of I tokens`` (FLOPs: Kaplan et
    al. 2020 with the causal attention term; the weights are read once per iteration and shared, so prefill is
    compute-bound). That is the replica's busy time per request (the stages work on different requests' chunks at
    once); ``latency=True``: the time one prompt takes to cross every stage, not divided by PP (for TTFT)."""
    tp, pp = layout.tensor_parallel, layout.pipeline_parallel
    flops = 2.0 * m.params_active * input_tokens + 2.0 * m.layers * input_tokens ** 2 * m.heads * m.head_dim
    kind = MATMUL_PEAK[precision]
    eff = fit.prefill_compute_efficiency[kind]
    t = flops / (tp * (1 if latency else pp) * matmul_peak_flops(gpu, precision) * eff)
    comm = _allreduce_s(m, gpu, tp, m.layers, input_tokens, fit) - (2.0 * m.layers * fit.allreduce_latency_s.get(
        gpu.interconnect, fit.allreduce_latency_s["pcie"]) if tp > 1 else 0.0)
    return fit.engine_speed.get(engine, 1.0) * (t + comm)


@dataclass(frozen=True)
class ServingPoint:
    """One replica at one batch: what the model predicts.

    Attributes:
        batch: sequences running at once (the decode batch).
        tokens_per_second: output tokens/s of the replica.
        tpot_ms: mean time per output token, ms.
        ttft_ms: mean time to first token, ms (the request's prefill + one iteration, ``tpot_ms``; plus
            ``queue_ms``).
        step_ms: one decode iteration, ms (without the prefill it carries).
        prefill_ms: one request's prefill compute, ms.
        queue_ms: time a request waits for a free slot before its prefill, included in ``ttft_ms`` (a closed loop
            of more users than the replica runs at once; 0 otherwise).
    """

    batch: int
    tokens_per_second: float
    tpot_ms: float
    ttft_ms: float
    step_ms: float
    prefill_ms: float
    queue_ms: float = 0.0


def point(m: ModelSpec, gpu: GpuSpec, layout: Layout, precision: str, engine: EngineProfile, batch: int,
          input_tokens: float, output_tokens: float, fit: ServingFit = FIT, static: bool = False,
          hop: tuple[float, float] = (0.0, 0.0), scale: Correction | None = None) -> ServingPoint:
    """The steady state of continuous batching at ``batch`` running sequences (see the module docstring).

    Pipeline stages (``pipeline_parallel`` p > 1) keep ``min(p, B)`` micro-batches in flight (vLLM
    ``max_concurrent_batches = pipeline_parallel_size``): a token of a sequence takes one trip through every stage,
    ``TPOT = max(m t_stage, p t_stage + (p-1) t_hop + t_return)`` with micro-batches of ``b = ceil(B/m)``;
    ``hop = (latency s, s per sequence)`` of one stage-to-stage transfer (``t_hop = latency + b x per-sequence``;
    ``t_return`` = latency). ``scale``: the user's measurement's correction (:class:`Correction`).
    ``static=True``: a static batch (TensorRT-LLM <= v0.6 ``gptSessionBenchmark``): all B prompts first, then O
    steps: tokens/s = ``B O / (B t_prefill + O t_step)``.
    """
    pp = layout.pipeline_parallel
    context = input_tokens + output_tokens / 2.0
    if pp > 1:
        inflight = min(pp, batch)
        b = math.ceil(batch / inflight)
        stage = decode_iteration_s(m, gpu, layout, precision, b, context, fit, engine)
        t_hop = hop[0] + b * hop[1]
        step = max(inflight * stage, pp * stage + (pp - 1) * t_hop + hop[0])
    else:
        step = decode_iteration_s(m, gpu, layout, precision, batch, context, fit, engine)
    # the engine's host time on every iteration's critical path (benchmarks/latency_fit.py); a speculative
    # iteration gives each sequence tokens_per_verification tokens: the time per output token
    step = (step + engine.step_overhead_s + engine.seq_overhead_s * batch) / tokens_per_verification(
        engine.spec_tokens, engine.acceptance)
    # prefix cache: the cached share of the prompt is not recomputed (its KV blocks are reused)
    fresh = 1.0 - engine.prefix_hit
    pre = fresh * prefill_s(m, gpu, layout, precision, input_tokens, fit, engine.name)
    # one prompt crosses every stage, its I tokens' hidden states over each hop
    own = pre if pp == 1 else fresh * prefill_s(m, gpu, layout, precision, input_tokens, fit, engine.name,
                                                latency=True) + (pp - 1) * (hop[0] + input_tokens * hop[1]) + hop[0]
    if static:
        total = batch * pre + output_tokens * step
        tps = batch * output_tokens / total
        tpot = step
        ttft = batch * pre + step  # every prompt of the batch first, then the first decode step
    else:
        tpot = step + batch / max(output_tokens, 1.0) * pre
        tps = batch / tpot
        # the request's own prefill, then the first token comes out of an iteration that decodes the whole batch
        # and carries the other requests' prefill chunks, like every TPOT (chunked prefill)
        ttft = own + tpot
    pt = ServingPoint(batch=int(batch), tokens_per_second=tps, tpot_ms=1e3 * tpot, ttft_ms=1e3 * ttft,
                      step_ms=1e3 * step, prefill_ms=1e3 * pre)
    return scale.apply(pt) if scale is not None else pt


def window_fits(m: ModelSpec, gpu: GpuSpec, layout: Layout, precision: str, engine: EngineProfile,
                window: float | None) -> bool:
    """True when the KV cache holds one sequence of the context window ``window`` (tokens; None: no window
    asked). vLLM refuses to start otherwise ("The model's max seq len ... is larger than the maximum number of tokens
    that can be stored in KV cache"; ``max_model_len``)."""
    if not window:
        return True
    mem = memory_per_gpu(m, gpu, layout, precision, engine)
    return mem["kv_budget"] > 0 and mem["kv_budget"] >= float(window) * mem["kv_per_token"]


def batch_cap(m: ModelSpec, gpu: GpuSpec, layout: Layout, precision: str, engine: EngineProfile,
              input_tokens: float, output_tokens: float, window: float | None = None) -> int:
    """The largest batch the engine runs: KV-cache capacity (:func:`max_batch_memory`), the engine's sequence cap
    and its iteration token budget (each running sequence takes one of :meth:`EngineProfile.max_tokens` per step);
    0 when the KV cache cannot hold one sequence of the context window ``window`` (:func:`window_fits`)."""
    if not window_fits(m, gpu, layout, precision, engine, window):
        return 0
    mem_b = max_batch_memory(m, gpu, layout, precision, engine, input_tokens, output_tokens)
    return max(0, min(mem_b, engine.max_batch(gpu), engine.max_tokens(gpu)))


def best_point(m: ModelSpec, gpu: GpuSpec, layout: Layout, precision: str, engine: EngineProfile,
               input_tokens: float, output_tokens: float, *, ttft_slo_ms: float | None = None,
               tpot_slo_ms: float | None = None, concurrency: int | None = None, fit: ServingFit = FIT,
               static: bool = False, hop: tuple[float, float] = (0.0, 0.0),
               scale: Correction | None = None, window: float | None = None) -> ServingPoint | None:
    """The batch the replica runs and its numbers: ``concurrency`` when given (capped by :func:`batch_cap`), else the
    largest batch whose p99 TTFT and TPOT (means x :data:`P99_OVER_MEAN_TTFT` / :data:`P99_OVER_MEAN_TPOT`) meet the
    targets. None when the weights do not fit, the KV cache cannot hold one sequence of the context ``window``,
    or not even one sequence meets the targets.
    """
    cap = batch_cap(m, gpu, layout, precision, engine, input_tokens, output_tokens, window)
    if cap < 1:
        return None
    if concurrency is not None:
        b = min(int(concurrency), cap)
        pt = point(m, gpu, layout, precision, engine, b, input_tokens, output_tokens, fit, static, hop, scale)
        if concurrency > cap:  # closed loop with more users than slots: the rest wait in the queue
            wait = (concurrency - cap) / cap * output_tokens * pt.tpot_ms
            pt = replace(pt, ttft_ms=pt.ttft_ms + wait, queue_ms=wait)
        return pt

    def ok(b: int) -> bool:
        pt = point(m, gpu, layout, precision, engine, b, input_tokens, output_tokens, fit, static, hop, scale)
        return meets_targets(pt, ttft_slo_ms, tpot_slo_ms)

    lo = largest_batch(ok, cap)  # TPOT and TTFT grow with the batch
    if lo is None:
        return None
    if lo == cap:
        return point(m, gpu, layout, precision, engine, cap, input_tokens, output_tokens, fit, static, hop, scale)
    pp = layout.pipeline_parallel
    if pp > 1 and lo > pp and lo % pp:  # pipeline stages run equal micro-batches: a whole number per stage
        lo -= lo % pp
    return point(m, gpu, layout, precision, engine, lo, input_tokens, output_tokens, fit, static, hop, scale)


def largest_batch(ok, cap: int) -> int | None:
    """The largest batch b in 1..``cap`` with ``ok(b)``, for a predicate that holds up to some batch and not above
    (latency grows with the batch): bisection; None when not even ``ok(1)``."""
    if ok(cap):
        return cap
    if not ok(1):
        return None
    lo, hi = 1, cap
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if ok(mid):
            lo = mid
        else:
            hi = mid
    return lo


def meets_targets(pt: ServingPoint, ttft_slo_ms: float | None, tpot_slo_ms: float | None) -> bool:
    """Whether ``pt``'s p99 TTFT and TPOT (means x :data:`P99_OVER_MEAN_TTFT` / :data:`P99_OVER_MEAN_TPOT`) meet
    the targets (None: no target)."""
    if tpot_slo_ms is not None and pt.tpot_ms * P99_OVER_MEAN_TPOT > tpot_slo_ms:
        return False
    return ttft_slo_ms is None or pt.ttft_ms * P99_OVER_MEAN_TTFT <= ttft_slo_ms


def describe_fit(fit: ServingFit = FIT) -> str:
    """One line naming the fitted constants (for assumptions lists)."""
    bw = ", ".join(f"{k} {v:.2f}" for k, v in fit.bandwidth_efficiency.items())
    pre = ", ".join(f"{k} {v:.2f}" for k, v in fit.prefill_compute_efficiency.items())
    return (f"serving model fitted on shared/data/perf/serving.csv (benchmarks/serving_fit.py): bandwidth efficiency "
            f"{bw}; decode compute efficiency {fit.decode_compute_efficiency:.2f}; prefill {pre}; roofline blend "
            f"p={fit.blend:.2f}; all-reduce {fit.allreduce_latency_s['nvlink'] * 1e6:.0f} us + bytes at "
            f"{fit.allreduce_bw_efficiency['nvlink']:.2f} of the link (NVLink), "
            f"{fit.allreduce_latency_s['pcie'] * 1e6:.0f} us + {fit.allreduce_bw_efficiency['pcie']:.2f} (PCIe); "
            f"{fit.layer_overhead_s * 1e6:.0f} us per layer per step; weight-only int4/int8 kernels at "
            f"{fit.weight_only_bw_efficiency.get('int4', 1.0):.2f} of the bandwidth on the weights "
            "(benchmarks/weight_only_fit.py)")


def as_dict(pt: ServingPoint) -> dict[str, Any]:
    return {"concurrency": pt.batch, "tokens_per_second_per_replica": pt.tokens_per_second, "ttft_ms": pt.ttft_ms,
            "tpot_ms": pt.tpot_ms}


# ----------------------------------------------------------------------------------------------------- measured
@dataclass(frozen=True)
class Correction:
    """Factors that bring the model to a user's measurement: measured / estimated at the measured point.

    Attributes:
        tokens_per_second, ttft, tpot: multipliers (1.0 where the measurement gives no figure).
        source: ``"measured: FILE row N (setup, concurrency C) ..."`` or ``"measured: FILE rows N and M (...),
            interpolated at ..."`` -- what the output names as the estimate's source (:meth:`Measurements.correction`).
        applied: False when the nearest row cannot be estimated on this replica's GPU (factors 1; ``source`` says
            why): the model alone.
        rows: the file's row numbers used (two when interpolated).
        concurrency: the operating concurrency the rows were chosen at (None: not known).
    """

    tokens_per_second: float = 1.0
    ttft: float = 1.0
    tpot: float = 1.0
    source: str = ""
    applied: bool = True
    rows: tuple[int, ...] = ()
    concurrency: float | None = None

    def apply(self, pt: ServingPoint) -> ServingPoint:
        return replace(pt, tokens_per_second=pt.tokens_per_second * self.tokens_per_second,
                       ttft_ms=pt.ttft_ms * self.ttft, tpot_ms=pt.tpot_ms * self.tpot)


#: Column names accepted in a measurements file, canonical name -> aliases (vLLM ``benchmark_serving.py
#: --save-result`` JSON keys, GenAI-Perf / AIPerf export names, gpuopt's own).
MEASURED_COLUMNS: dict[str, tuple[str, ...]] = {
    "model": ("model", "model_id", "hf_repo", "model_names"),
    "gpu": ("gpu", "gpu_model"),
    "tensor_parallel": ("tensor_parallel", "tp", "tensor_parallel_size"),
    "pipeline_parallel": ("pipeline_parallel", "pp", "pipeline_parallel_size"),
    "precision": ("precision", "dtype"),
    "engine": ("engine", "backend"),
    "input_tokens": ("input_tokens", "input_len", "random_input_len", "isl", "synthetic_input_tokens_mean",
                     "mean_input_tokens", "input_lens", "input_sequence_length"),
    "output_tokens": ("output_tokens", "output_len", "random_output_len", "osl", "output_tokens_mean",
                      "mean_output_tokens", "output_lens", "output_sequence_length"),
    "concurrency": ("concurrency", "max_concurrency"),
    "request_rate": ("request_rate",),
    "output_tokens_per_second": ("output_tokens_per_second", "output_throughput", "output_token_throughput",
                                 "tokens_per_second"),
    "ttft_ms": ("ttft_ms", "mean_ttft_ms", "time_to_first_token_ms", "time_to_first_token"),
    "tpot_ms": ("tpot_ms", "mean_tpot_ms", "mean_itl_ms", "inter_token_latency_ms", "inter_token_latency"),
}


@dataclass(frozen=True)
class Measurement:
    """One benchmark result of the user's: the replica's setup and what it measured (output tokens/s of the whole
    replica, mean TTFT and TPOT in ms; None where not given). ``gpu``, ``layout``, ``precision`` None: not in the file
    (a vLLM ``--save-result`` JSON has none): taken to be the replica being estimated; ``engine`` None: the file names
    the client API (``openai-chat``), taken to be the engine estimated."""

    model: ModelSpec
    gpu: GpuSpec | None
    layout: Layout | None
    precision: str | None
    engine: str | None
    input_tokens: int
    output_tokens: int
    concurrency: int | None
    tokens_per_second: float | None
    ttft_ms: float | None
    tpot_ms: float | None
    row: int
    #: other rows of the same point, averaged into this one (their figures within :data:`MEASURED_AGREE`)
    also: tuple[int, ...] = ()

    @property
    def rows_text(self) -> str:
        """"row 3", or "rows 3, 7 (their mean)" for averaged rows."""
        if not self.also:
            return f"row {self.row}"
        return f"rows {', '.join(map(str, (self.row, *self.also)))} (their mean)"


@dataclass(frozen=True)
class Measurements:
    """A user's measurements file (``--measured FILE``), read by :func:`load_measurements`."""

    path: str
    rows: tuple[Measurement, ...]

    def correction(self, m: ModelSpec, gpu: GpuSpec, layout: Layout, precision: str, engine: EngineProfile,
                   fit: ServingFit = FIT, *, input_tokens: float | None = None, output_tokens: float | None = None,
                   concurrency: float | None = None) -> Correction | None:
        """The correction for a replica of ``m`` served by ``engine`` running ``concurrency`` sequences (its
        operating point; None: not known) at ``input_tokens`` / ``output_tokens`` (None: not ranked on).

        The rows of the same model and engine are ranked on the replica's setup, each key before the next (issue 31,
        point 6): the same GPU, the same layout (TP x PP), the same precision, the engine named (not only the client
        API), the nearest lengths (``|ln(I_row / I)| + |ln(O_row / O)|``, 0 when equal); ties in file order. Of the
        rows of the best setup, the concurrency decides (:func:`_by_concurrency`): a row measured at the operating
        concurrency is used; between two measured concurrencies the factors of the two nearest (one below, one
        above) are interpolated linearly in ln(concurrency) (:func:`_interpolate`); outside the measured range the
        nearest row's factors are used and the model scales them (said: not extrapolated). Each row's factors are
        measured / estimated at that row's own setup, lengths and concurrency, so at a measured point the estimate
        reproduces the measurement. ``source`` names the file, the row(s), their setup and concurrencies. None when
        no row is of this model and engine (the model alone estimates)."""
        rows = [r for r in self.rows if r.model.name == m.name and r.engine in (engine.name, None)]
        if not rows:
            return None

        def rank(r: Measurement) -> tuple:
            return (r.gpu is not None and r.gpu.name != gpu.name, r.layout is not None and r.layout != layout,
                    r.precision is not None and r.precision != precision, r.engine is None,
                    _length_gap(r, input_tokens, output_tokens))

        best = min(rows, key=rank)
        group = [r for r in rows if _setup(r) == _setup(best)]
        chosen, where = _by_concurrency(group, concurrency)
        r_gpu, r_layout, r_prec = best.gpu or gpu, best.layout or layout, best.precision or precision
        r_eng = ENGINES[best.engine or engine.name]
        factors = []
        for r in chosen:
            try:  # a row without GPU/layout/precision is this replica's: its bounds are this replica's (issue 33)
                physical.check_row(r.rows_text, measured_roofline(r.model, r_gpu, r_layout, r_prec), r)
                est = best_point(r.model, r_gpu, r_layout, r_prec, r_eng, r.input_tokens, r.output_tokens,
                                 concurrency=r.concurrency, fit=fit)
            except InputError as exc:  # the row cannot be that replica's (fp8 measured, estimated on an A100)
                return Correction(source=f"model (optimizer/sizing/serving.py fit); {self.path} {r.rows_text} does "
                                         f"not apply on {r_gpu.name}: {exc.message}", applied=False)
            if est is None:
                return None
            factors.append((r.tokens_per_second / est.tokens_per_second if r.tokens_per_second else None,
                            r.ttft_ms / est.ttft_ms if r.ttft_ms else None,
                            r.tpot_ms / est.tpot_ms if r.tpot_ms else None))
        if len(chosen) == 2:
            t = math.log(concurrency / chosen[0].concurrency) / math.log(chosen[1].concurrency / chosen[0].concurrency)
            f_tps, f_ttft, f_tpot = (_interpolate(a, b, t) for a, b in zip(*factors))
        else:
            f_tps, f_ttft, f_tpot = (1.0 if f is None else f for f in factors[0])
        pp = f" PP{r_layout.pipeline_parallel}" if r_layout.pipeline_parallel > 1 else ""
        concs = " and ".join(f"{r.concurrency:g}" for r in chosen if r.concurrency is not None)
        setup = (f"{r_eng.name} {r_gpu.name} TP{r_layout.tensor_parallel}{pp} {r_prec}, {best.input_tokens} in / "
                 f"{best.output_tokens} out" + (f", concurrency {concs}" if concs else ""))
        names = chosen[0].rows_text if len(chosen) == 1 else \
            "rows " + " and ".join(r.rows_text.split(" ", 1)[1] for r in chosen)
        rk = rank(best)
        here = f"{gpu.name} TP{layout.tensor_parallel}" + (f" PP{layout.pipeline_parallel}"
                                                           if layout.pipeline_parallel > 1 else "") + f" {precision}"
        differs = [what for what, d in zip(("GPU", "layout", "precision"), rk[:3]) if d] + \
            (["request lengths"] if rk[4] > 0 else [])
        scaled = "" if not differs else (f"; measured with a different {', '.join(differs)} than this replica's "
                                        f"({here}): its measured/model ratios scale the model's estimate here")
        return Correction(f_tps, f_ttft, f_tpot, f"measured: {self.path} {names} ({setup}){where}{scaled}",
                          rows=tuple(r.row for r in chosen), concurrency=concurrency)

    def correction_at(self, m: ModelSpec, gpu: GpuSpec, layout: Layout, precision: str, engine: EngineProfile,
                      input_tokens: float, output_tokens: float, batch_of, *, concurrency: int | None = None,
                      fit: ServingFit = FIT) -> Correction | None:
        """:meth:`correction` at the replica's operating point: ``concurrency`` when the workload gives one (a
        closed loop of that many users, as a benchmark's ``--max-concurrency``), else the batch the replica is sized
        to run at, which the correction itself moves: ``batch_of(correction or None)`` gives it (the mean running
        batch at the operating rate, or the largest batch meeting the targets). The batch is found with the model
        alone, then again with the rows chosen at it, until the whole batch repeats (at most
        :data:`MEASURED_SETTLE_PASSES` passes; a batch seen before ends the search where it is)."""
        kw = dict(fit=fit, input_tokens=input_tokens, output_tokens=output_tokens)
        if concurrency is not None:
            return self.correction(m, gpu, layout, precision, engine, concurrency=concurrency, **kw)
        corr = self.correction(m, gpu, layout, precision, engine, **kw)
        if corr is None or not corr.applied:
            return corr
        seen: list[int] = []
        c = batch_of(None)
        for _ in range(MEASURED_SETTLE_PASSES):
            if c is None:
                break
            c = max(1, round(c))
            if c in seen:
                break
            seen.append(c)
            nxt = self.correction(m, gpu, layout, precision, engine, concurrency=c, **kw)
            if nxt is None or not nxt.applied:
                return nxt
            if corr.concurrency is not None and nxt.rows == corr.rows and \
                    (nxt.tokens_per_second, nxt.ttft, nxt.tpot) == (corr.tokens_per_second, corr.ttft, corr.tpot):
                corr = nxt  # the same figures: the batch will not move
                break
            corr = nxt
            c = batch_of(corr)
        return corr


#: Passes of :meth:`Measurements.correction_at` (the batch with the model alone, then with the rows chosen there).
MEASURED_SETTLE_PASSES = 4


def _setup(r: Measurement) -> tuple:
    """A measured row's setup without its concurrency (the rows among which the concurrency decides)."""
    return (r.gpu.name if r.gpu else None, r.layout, r.precision, r.engine, r.input_tokens, r.output_tokens)


def _length_gap(r: Measurement, input_tokens: float | None, output_tokens: float | None) -> float:
    """How far a row's lengths are from the replica's: ``|ln(I_row / I)| + |ln(O_row / O)|`` (0: the same; a length
    not given counts 0)."""
    gap = 0.0
    for mine, theirs in ((input_tokens, r.input_tokens), (output_tokens, r.output_tokens)):
        if mine:
            gap += abs(math.log(theirs / float(mine)))
    return round(gap, 12)


def _by_concurrency(group: list[Measurement], concurrency: float | None) -> tuple[list[Measurement], str]:
    """The row(s) of one setup for the operating ``concurrency`` and the words that say how: the row measured at it;
    the two nearest around it (one below, one above: interpolated); the nearest end of the measured range when it
    lies outside (not extrapolated); the first row when the concurrency or the rows' is not known."""
    placed = sorted((r for r in group if r.concurrency is not None), key=lambda r: r.concurrency)
    if concurrency is None or not placed:
        return [group[0]], ""
    c = float(concurrency)
    for r in placed:
        if r.concurrency == c:
            return [r], f" at the operating concurrency {c:g}"
    lo, hi = placed[0].concurrency, placed[-1].concurrency
    if c < lo or c > hi:
        near = placed[0] if c < lo else placed[-1]
        span = f"{lo:g}" if lo == hi else f"{lo:g}-{hi:g}"
        return [near], (f", the nearest: the operating concurrency {c:g} is outside the measured {span}, its factors "
                        f"kept and the model scales them (not extrapolated)")
    below = max((r for r in placed if r.concurrency < c), key=lambda r: r.concurrency)
    above = min((r for r in placed if r.concurrency > c), key=lambda r: r.concurrency)
    return [below, above], f", interpolated at the operating concurrency {c:g} (factors linear in ln concurrency)"


def _interpolate(a: float | None, b: float | None, t: float) -> float:
    """A factor between two rows' (``t`` = 0 at the lower concurrency, 1 at the upper; the weight is linear in
    ln concurrency). Why the factor measured / model and why ln concurrency: the model carries the curve's shape
    (concave throughput, TTFT's queueing), the factor varies slowly. On NVIDIA NIM 1.8.0's Llama-3.3-70B, 2x H100
    TP2 fp8, 5000/500 runs (``data/perf/serving.csv`` rows 692, 693, 695, 696: concurrency 5, 25, 100, 150),
    interpolating the factor in ln concurrency misses the middle rows by -1.4 % / -0.8 % (tokens/s), +1.4 % /
    +1.1 % (TPOT), -27 % / +3.6 % (TTFT); linear in concurrency -6.0 % / -1.7 %, +5.7 % / +1.9 %, -21 % / +15 %;
    interpolating the measured figures themselves in ln concurrency -4.7 % / -6.9 % (tokens/s) but +55 % / -13 %
    (TPOT) and 5.6x / 3.4x (TTFT). Benchmark sweeps space concurrency geometrically (NVIDIA's GenAI-Perf
    walkthrough of a NIM, docs.omniverse.nvidia.com/services/latest/services/usd-code/performance.html: 1, 5, 25,
    50, 100, 150, 200, 250; AIPerf's concurrency sweep in aws-samples/sample-genai-on-eks-starter-kit: 1, 8, 16, 32,
    64, ...), where ln concurrency is the even scale. A figure only one row gives takes that row's factor; neither: 1.
    """
    if a is None and b is None:
        return 1.0
    if a is None or b is None:
        return b if a is None else a
    return a + t * (b - a)


def _ratio(a: float, b: float) -> float:
    """a / b as a float; inf when it overflows one (JSON integers have no bound)."""
    try:
        return float(a) / float(b)
    except (OverflowError, ZeroDivisionError):
        return math.inf


def _flat(obj: dict) -> dict:
    """A result object's keys, lower case, for :data:`MEASURED_COLUMNS`: a statistic object ``{"avg": x, "p99": ...}``
    (GenAI-Perf / AIPerf exports) gives its ``avg``; another nested object (``input_config``) lends its keys; a list
    of numbers (vLLM's ``input_lens``) its mean, a list of names (``model``) its first; vLLM's totals
    (``total_input_tokens`` / ``completed``) give the mean lengths."""
    out: dict = {}
    for k, v in obj.items():
        key = str(k).strip().lower()
        if isinstance(v, dict):
            if "avg" in v:
                avg = v["avg"]  # GenAI-Perf's mean sequence lengths are fractional: whole tokens
                out[key] = round(avg) if key.endswith("sequence_length") and isinstance(avg, (int, float)) and \
                    not isinstance(avg, bool) and math.isfinite(avg) else avg
            else:
                for k2, v2 in v.items():
                    out.setdefault(str(k2).strip().lower(), v2)
        elif isinstance(v, list) and v:
            nums = [x for x in v if isinstance(x, (int, float)) and not isinstance(x, bool)]
            mean = _ratio(sum(nums), len(nums)) if nums and len(nums) == len(v) else None
            # a mean that is not finite (Infinity in the list) is kept as such: num() refuses it naming the column
            out[key] = v[0] if mean is None else (round(mean) if math.isfinite(mean) else mean)
        else:
            out[key] = v
    for k in ("model", "model_id", "model_names"):
        if isinstance(out.get(k), list) and out[k]:
            out[k] = out[k][0]
    done = out.get("completed")
    if isinstance(done, (int, float)) and done > 0:
        for total, mean in (("total_input_tokens", "mean_input_tokens"), ("total_output_tokens", "mean_output_tokens")):
            if isinstance(out.get(total), (int, float)) and math.isfinite(_ratio(out[total], done)):
                out.setdefault(mean, round(_ratio(out[total], done)))
    return out


def load_measurements(path: str) -> Measurements:
    """Read a measurements file: CSV with a header, or JSON (one object, or a list of objects; vLLM
    ``benchmark_serving.py --save-result`` files are one object each; GenAI-Perf statistic objects give their
    ``avg``, :func:`_flat`). Columns by :data:`MEASURED_COLUMNS`; the model, input/output tokens and at least one of
    output tokens/s, TTFT, TPOT are required; the engine defaults to vLLM; a row without gpu, tensor_parallel or
    precision is taken to be of the replica being estimated.

    Raises:
        InputError("measured"): the file is missing or unreadable, a row lacks a required column or has a bad
            value (the message names the row and the column), or figures beyond the GPUs' roofline or against
            its own TPOT and concurrency (:func:`optimizer.sizing.physical.check_figures`, naming row and line).
    """
    import csv as _csv
    from pathlib import Path

    from optimizer.sizing.specs import load_gpu, load_model

    from gpuopt.kernel.inputs import load_json, parse_decimal, read_text

    p = Path(path)
    if p.is_dir():
        raise InputError("measured", f"{path} is a folder; give the benchmark file in it",
                         accepted="a CSV or JSON file of benchmark results")
    if not p.is_file():
        raise InputError("measured", f"no such file: {path}", accepted="a CSV or JSON file of benchmark results")
    # UTF-8 with or without a byte-order mark (Excel's "CSV UTF-8"), bounded size and nesting, duplicate keys
    # refused; NaN/Infinity allowed where vLLM writes them (a std of one request): every figure used is checked
    text = read_text(p, "measured", "measurements file")
    lines_of: list[int] = []
    try:
        if p.suffix.lower() == ".json" or text.lstrip().startswith(("{", "[")):
            data = load_json(text, str(path), "measured", allow_nonfinite=True)
            raw = data if isinstance(data, list) else [data]
        else:
            lines = text.splitlines()
            from providers._input import check_unique_columns

            # the JSON reader refuses a key given twice; the CSV reader the same of a column (issue 30: the last of
            # two output_tokens_per_second columns won silently)
            check_unique_columns([h.strip().lower() for h in next(_csv.reader(lines[:1]), [])], str(path),
                                 line=1, field="measured")
            rdr = _csv.DictReader(lines)
            raw = [(rec, lines_of.append(rdr.line_num))[0] for rec in rdr]  # each row's line for the bounds' errors
    except (_csv.Error, ValueError) as exc:
        if isinstance(exc, InputError):
            raise
        raise InputError("measured", f"cannot read {path}: {exc}", accepted="CSV with a header, or JSON") from None
    rows = []
    for i, obj in enumerate(raw, start=1):
        if not isinstance(obj, dict):
            raise InputError("measured", f"{path} row {i}: not an object", accepted="a list of objects")
        low = _flat(obj)

        def get(col: str, _low=low):
            for alias in MEASURED_COLUMNS[col]:
                v = _low.get(alias)
                if v not in (None, ""):
                    return v
            return None

        def num(col: str, *, whole: bool = False, _i=i):
            v = get(col)
            if v is None:
                return None
            try:
                if isinstance(v, bool):
                    raise ValueError
                x = parse_decimal(v) if isinstance(v, str) else float(v)  # a CSV cell: no "1_8.5" (issue 33)
            except (TypeError, ValueError):
                raise InputError("measured", f"{path} row {_i}: {col} {v!r} is not a number",
                                 accepted="a number > 0") from None
            if not math.isfinite(x) or x <= 0 or (whole and not x.is_integer()) or x > MAX_QUANTITY:
                raise InputError("measured", f"{path} row {_i}: {col} {v!r:.40} must be a {'whole ' if whole else ''}"
                                             f"number > 0 and at most {MAX_QUANTITY:g}", accepted="a number > 0")
            return int(x) if whole else x

        if get("model") is None:
            raise InputError("measured", f"{path} row {i}: no model column", accepted=", ".join(MEASURED_COLUMNS["model"]))
        inp, out = num("input_tokens", whole=True), num("output_tokens", whole=True)
        if inp is None or out is None:
            raise InputError("measured", f"{path} row {i}: input and output tokens are required",
                             accepted="input_tokens/input_len and output_tokens/output_len")
        tps, ttft, tpot = num("output_tokens_per_second"), num("ttft_ms"), num("tpot_ms")
        for col, v in (("ttft_ms", ttft), ("tpot_ms", tpot)):
            if v is not None and v > MEASURED_MAX_LATENCY_MS:
                raise InputError("measured", f"{path} row {i}: {col} {v:g} ms is beyond any benchmark's wait (more "
                                             f"than {MEASURED_MAX_LATENCY_MS / 3.6e6:g} h)",
                                 accepted=f"0 < {col} <= {MEASURED_MAX_LATENCY_MS:g} ms")
        if not (tps or ttft or tpot):
            raise InputError("measured", f"{path} row {i}: no measured figure",
                             accepted="output_tokens_per_second, ttft_ms and/or tpot_ms")
        precision = get("precision")
        precision = None if precision is None else str(precision).strip().lower()
        if precision is not None and precision not in SERVE_PRECISIONS:
            raise InputError("measured", f"{path} row {i}: precision {precision!r}", accepted=", ".join(SERVE_PRECISIONS))
        try:
            model = load_model(str(get("model")))
            gpu = None if get("gpu") is None else load_gpu(str(get("gpu")))
            backend = str(get("engine") or DEFAULT_ENGINE).strip().lower()
            engine = None if backend in _API_BACKENDS else load_engine(backend).name
        except InputError as exc:
            raise InputError("measured", f"{path} row {i}: {exc.field}: {exc.message}", accepted=exc.accepted) from None
        tp = num("tensor_parallel", whole=True)
        pp = num("pipeline_parallel", whole=True)
        layout = None if tp is None and pp is None else Layout(tp or 1, pp or 1)
        conc = num("concurrency", whole=True)
        if inp + out > model.max_context:
            raise InputError("measured", f"{path} row {i}: input + output tokens {inp + out} exceed {model.name}'s "
                                         f"max_context {model.max_context}", accepted=f"<= {model.max_context}")
        if layout is not None and (not 1 <= layout.tensor_parallel <= 8 or not tp_supported(model, layout.tensor_parallel)
                                   or layout.pipeline_parallel > model.layers):
            raise InputError("measured", f"{path} row {i}: TP{layout.tensor_parallel} x PP{layout.pipeline_parallel} "
                                         f"is not a layout of {model.name}",
                             accepted="tensor_parallel 1..8 dividing the heads, pipeline_parallel <= layers")
        if gpu is not None and precision is not None:
            try:
                matmul_peak_flops(gpu, precision)
            except InputError as exc:
                raise InputError("measured", f"{path} row {i}: {exc.message}", accepted=exc.accepted) from None
        row = Measurement(model, gpu, layout, precision, engine, inp, out, conc, tps, ttft, tpot, i)
        # within the roofline of the row's GPU, layout and precision, else the loosest (issue 33, point 3)
        physical.check_row(f"{path} row {i}" + (f" (line {lines_of[i - 1]})" if lines_of else ""),
                           measured_roofline(model, gpu, layout, precision), row,
                           request_rate=physical.finite_number(get("request_rate")))  # vLLM's "inf": none
        rows.append(row)
    if not rows:
        raise InputError("measured", f"{path} has no rows", accepted="at least one benchmark result")
    return Measurements(str(path), _one_per_point(rows, str(path)))


#: The longest TTFT or TPOT a measured row may state, ms: 6 hours, vLLM benchmark_serving's client timeout
#: (backend_request_func.py, ``AIOHTTP_TIMEOUT = aiohttp.ClientTimeout(total=6 * 60 * 60)``) -- a request waited on
#: longer was not measured (issue 30: a TTFT of 1e12 ms was taken and the error blamed the TTFT target).
MEASURED_MAX_LATENCY_MS = 6 * 3600 * 1000.0
#: Rows of one point (model, GPU, layout, precision, engine, lengths, concurrency) whose figures are within this
#: ratio of each other are averaged (repeated runs of a benchmark); further apart they are refused.
MEASURED_AGREE = 1.25


def measured_roofline(model: ModelSpec, gpu: GpuSpec | None, layout: Layout | None,
                      precision: str | None) -> physical.Roofline | None:
    """The roofline a measured row is checked against (:mod:`optimizer.sizing.physical`): its GPU, layout and
    precision, else the loosest -- every GPU of the datasheet table, 8 GPUs, every precision (None: no bound)."""
    from optimizer.sizing.specs import known_gpus, load_gpu

    gpus = [gpu] if gpu is not None else [load_gpu(n) for n in known_gpus()]
    tp, n = (layout.tensor_parallel, layout.gpus) if layout is not None else (8, 8)
    return physical.roofline(model, gpus, n, tp, [precision] if precision else list(SERVE_PRECISIONS),
                             peak_of=matmul_peak_flops, bytes_of=weight_bytes,
                             gpu_label=None if gpu is not None else physical.FASTEST)


def _one_per_point(rows: list[Measurement], path: str) -> tuple[Measurement, ...]:
    """One measurement per point: rows of the same setup whose figures agree within :data:`MEASURED_AGREE` are
    averaged (``also`` names the others), rows that disagree are refused naming both (issue 30: of 100 and 9,000
    tokens/s the first was used without a word).

    Raises: InputError("measured") for two rows of one point that disagree."""
    import dataclasses

    groups: dict[tuple, list[Measurement]] = {}
    for r in rows:
        key = (r.model.name, r.gpu.name if r.gpu else None, r.layout, r.precision, r.engine, r.input_tokens,
               r.output_tokens, r.concurrency)
        groups.setdefault(key, []).append(r)
    out = []
    for grp in groups.values():
        first = grp[0]
        if len(grp) == 1:
            out.append(first)
            continue
        means = {}
        for col in ("tokens_per_second", "ttft_ms", "tpot_ms"):
            vals = [getattr(r, col) for r in grp if getattr(r, col) is not None]
            if vals and max(vals) / min(vals) > MEASURED_AGREE:
                hi = max(grp, key=lambda r: getattr(r, col) or 0.0)
                lo = min((r for r in grp if getattr(r, col) is not None), key=lambda r: getattr(r, col))
                raise InputError("measured", f"{path} rows {lo.row} and {hi.row} measure the same point "
                                             f"({first.model.name}, {first.input_tokens} in / {first.output_tokens} "
                                             f"out) and disagree: {col} {getattr(lo, col):g} vs {getattr(hi, col):g}",
                                 accepted=f"one row per point, or repeated runs within {MEASURED_AGREE:g}x")
            means[col] = sum(vals) / len(vals) if vals else None
        out.append(dataclasses.replace(first, also=tuple(r.row for r in grp[1:]), **means))
    return tuple(sorted(out, key=lambda r: r.row))


# request traces: optimizer/sizing/trace.py (re-exported here, where callers import them from)
from optimizer.sizing.trace import (MAX_REQUEST_TOKENS, TRACE_ARRIVAL_COLUMNS, TRACE_COLUMNS,  # noqa: E402,F401
                                    TraceLengths, load_trace)
