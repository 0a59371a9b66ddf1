"""Training performance model (issue 11): parallel layout, step time, MFU and memory of a training job.

For a model, a GPU, a GPU count and a global batch, :func:`search` tries the parallel layouts real frameworks run --
tensor parallel (TP) inside a node, pipeline parallel (PP, interleaved stages), context parallel (CP) for long
sequences, expert parallel (EP) for mixture-of-experts, data parallel (DP) with a ZeRO/FSDP stage, micro-batch size
and activation recomputation -- and keeps the fastest one that fits the GPU's memory. For one layout :func:`step`
gives the time of one optimizer step from

* compute: matmul FLOPs at the GPU's measured matmul ceiling (MAMF, stas00/ml-engineering; F§3) x a fitted fraction
  per framework family; attention FLOPs (12 L h s per token, the llm-foundry/Megatron MFU convention; F§1) at a
  fitted fraction of the bf16 ceiling; memory-bound element-wise work (norms, activations, residuals, casts) as fitted
  bytes per hidden element per token and layer over the GPU's memory bandwidth -- which is why MFU rises with the
  hidden size and why a GPU with more FLOPs per byte (H100 vs A100, fp8 vs bf16) reaches a lower MFU;
* communication: TP all-gathers/reduce-scatters (sequence parallel) over NVLink; DP gradient reduce-scatter and
  parameter all-gather (volume by ZeRO stage, per micro-batch for stages 2/3) over NVLink inside a node or the
  offer's fabric across nodes, hidden behind compute up to a fitted overlap; CP ring-attention exchanges hidden
  behind attention; EP all-to-alls; the optimizer update (memory-bound);
* the pipeline bubble ``(p - 1) / v`` micro-batch times per step (Narayanan et al. 2021, interleaved 1F1B; F§9);

and the memory per GPU as the frameworks count it: :func:`model_state_bytes` (Megatron distributed optimizer
6 + 12/d bytes/param; DeepSpeed's estimator 4 + 16/N for ZeRO-1/2 and 18/N + 4 x largest layer for ZeRO-3; PyTorch
FSDP 16/N + the gathered unit), the optimizer's states (Adam, 8-bit Adam, Adafactor, SGD), CPU offload, and the
activations by recompute policy (Megatron-LM ``theoretical_memory_usage``; Korthikanti et al. 2022; F§5).

The fitted constants (:data:`FIT`) come from ``benchmarks/training_fit.py --refit`` on the published runs of
``shared/data/perf/training.csv``; the script prints the fit on the whole set. Nothing here is per row.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from gpuopt.kernel.errors import InputError
from optimizer.sizing.network import DEFAULT_NODE_NETWORK, NCCL_NET_STEP_LATENCY_S
from optimizer.sizing.serving import gpu_generation

if TYPE_CHECKING:  # pragma: no cover
    from optimizer.sizing.network import NodeNetwork
    from optimizer.sizing.specs import GpuSpec, ModelSpec

GIB = 2**30

TRAIN_PRECISIONS = ("bf16", "fp16", "fp8")
#: Framework families. ``megatron``: Megatron-Core / NeMo / Megatron-Bridge (Transformer Engine kernels, distributed
#: optimizer, TP/PP/CP/EP); ``fsdp``: PyTorch FSDP/FSDP2 stacks (llm-foundry, torchtitan, HF Trainer/accelerate);
#: ``deepspeed``: DeepSpeed ZeRO (memory as DeepSpeed's estimator counts it; speed as ``fsdp``: the calibration set
#: has no DeepSpeed throughput row).
FRAMEWORKS = ("megatron", "fsdp", "deepspeed")
#: Default ZeRO stage per framework: Megatron's distributed optimizer shards the optimizer states only (ZeRO-1,
#: Megatron-LM docs "Distributed Optimizer"); FSDP's default FULL_SHARD and DeepSpeed's usual large-model setting are
#: stage 3.
DEFAULT_ZERO_STAGE = {"megatron": 1, "fsdp": 3, "deepspeed": 3}
#: Optimizer states, bytes per parameter: (fp32 master weights, moments). Adam/AdamW: fp32 master 4 + m 4 + v 4
#: (ZeRO paper K = 12; F§4); 8-bit Adam (bitsandbytes): master 4 + m 1 + v 1 (Transformer Math 101: 6 B/param);
#: Adafactor: master 4 + factored second moment (row and column sums: O(rows + cols) per matrix, ~0 per parameter;
#: Shazeer & Stern 2018, arXiv 1804.04235), no first moment by default; SGD with momentum: master 4 + momentum 4
#: (Transformer Math 101: 8 B/param).
OPTIMIZERS: dict[str, tuple[float, float]] = {"adam": (4.0, 8.0), "adam8bit": (4.0, 2.0), "adafactor": (4.0, 0.0),
                                              "sgd": (4.0, 4.0)}
OPTIMIZER_ALIASES = {"adamw": "adam", "adam-8bit": "adam8bit", "adamw8bit": "adam8bit", "8bit-adam": "adam8bit",
                     "paged_adamw_8bit": "adam8bit", "sgd-momentum": "sgd"}
#: Offload: ``optimizer`` moves the fp32 master weights and optimizer states (and the gradients' fp32 copy) to CPU
#: memory (ZeRO-Offload); ``params`` also the parameters (ZeRO-Infinity / ZeRO-3 offload_param; stage 3 only).
OFFLOADS = ("none", "optimizer", "params")
#: Host link per GPU, one direction, GB/s: PCIe Gen4 x16 = 16 GT/s x 16 lanes x 128/130 / 8 = 31.5 GB/s (PCI-SIG
#: PCIe 4.0 specification); the transfers of an offloaded optimizer cross it.
PCIE_GBPS_ONE_WAY = 31.5
#: Adam update traffic per parameter of the local optimizer shard, bytes (DERIVED): read fp32 master, grad, m, v
#: (16) + write master, m, v (12) + write the 16-bit weight (2) = 30; memory-bound.
OPTIMIZER_STEP_BYTES_PER_PARAM = 30.0

def optimizer_step_bytes(optimizer: str) -> float:
    """Bytes the optimizer update moves per parameter of the local shard (DERIVED, memory-bound): read the fp32
    master (4), the gradient (4) and the moments, write the master and the moments, write the 16-bit weight (2):
    ``14 + 2 x moments`` -- Adam 30 (:data:`OPTIMIZER_STEP_BYTES_PER_PARAM`), 8-bit Adam 18, SGD 22, Adafactor 14."""
    return 14.0 + 2.0 * OPTIMIZERS[optimizer][1]


#: Measured matmul ceilings ("maximum achievable matmul FLOPS", fraction of the dense datasheet peak), bf16 and fp8,
#: from stas00/ml-engineering compute/accelerator/README.md (F§3): A100 SXM 271.2/312, A100 PCIe 252.9/312, H100 SXM
#: 794.5/989, GH200 828.6/989, B200 1745/2250, MI300X 668.4/1300, Gaudi 2 418.7/432; fp8: H100 1402.6/1979, H200
#: 1453.4/1979, B200 3432.5/4500.
MAMF: dict[tuple[str, str], float] = {
    ("A100 40GB SXM4", "bf16"): 0.869, ("A100 80GB SXM4", "bf16"): 0.869,
    ("A100 40GB PCIe", "bf16"): 0.811, ("A100 80GB PCIe", "bf16"): 0.811,
    ("H100 SXM5 80GB", "bf16"): 0.803, ("H200 SXM 141GB", "bf16"): 0.803,
    ("H100 SXM5 80GB", "fp8"): 0.709, ("H200 SXM 141GB", "fp8"): 0.734,
    ("B200 (HGX/DGX, 1000 W)", "bf16"): 0.776, ("B200 (HGX/DGX, 1000 W)", "fp8"): 0.763,
    ("Instinct MI300X", "bf16"): 0.514, ("Gaudi 2", "bf16"): 0.969,
    ("GH200 96GB HBM3 (GPU side of Grace Hopper superchip)", "bf16"): 0.838,
    ("GH200 144GB HBM3e (GPU side of Grace Hopper superchip)", "bf16"): 0.838,
}
#: Attention kernels on Blackwell Ultra (B300, GB300) run faster than the fitted fraction of the bf16 ceiling: the
#: chip doubles the SFU throughput of the softmax's exponentials (MUFU.EX2), which bound the attention loop on Blackwell;
#: NVIDIA measured ~35 % more attention forward (FPROP) throughput in FP8 on GB300 than on GB200 (NVIDIA technical
#: blog, "Making Softmax More Efficient with NVIDIA Blackwell Ultra", 2026).
ATTENTION_SPEEDUP = {"blackwell-ultra": 1.35}


def attention_speedup(gpu: "GpuSpec") -> float:
    """How much faster attention runs on ``gpu`` than the fitted fraction says (:data:`ATTENTION_SPEEDUP`)."""
    return ATTENTION_SPEEDUP["blackwell-ultra"] if "blackwell ultra" in (gpu.architecture or "").lower() else 1.0


#: The most experts a GPU holds among the fitted runs (DeepSeek-V3 at EP 8: 256 / 8): the fixed time per expert
#: held (:attr:`TrainFit.expert_fixed_s`) counts at most this many -- not extrapolated past the calibration set.
EXPERT_FIXED_MAX_LOCAL = 32
#: Attention throughput by head dimension, relative to 128: FlashAttention-3's forward pass on an H100 (BF16) reaches
#: 476-497 TFLOPs/s at head dim 64 where it reaches 638-648 at 128 and 612-642 at 256, sequence lengths 4k-16k (Shah et
#: al. 2024, arXiv 2407.08608, Fig. "Attention forward speed, head dim 64/128/256 (H100 80GB SXM5)"): 0.75 at 64 and
#: below, 1 at 128 and above, linear between (the fit's attention fraction is of 128-wide heads: all runs but one model).
ATTENTION_HEAD_DIM = ((64, 0.75), (128, 1.0))


def attention_head_dim_factor(head_dim: int) -> float:
    """Attention speed at ``head_dim`` relative to 128-wide heads (:data:`ATTENTION_HEAD_DIM`, FlashAttention-3)."""
    (d0, f0), (d1, f1) = ATTENTION_HEAD_DIM
    if head_dim <= d0:
        return f0
    if head_dim >= d1:
        return f1
    return f0 + (f1 - f0) * (head_dim - d0) / (d1 - d0)


#: A GPU without a measured ceiling: the mean of the NVIDIA ones measured (bf16: A100 SXM/PCIe, H100, GH200, B200 =
#: 0.819; fp8: H100, H200, B200 = 0.735) -- an estimate, said so in the assumptions.
MAMF_DEFAULT = {"bf16": 0.819, "fp8": 0.735}

#: Default global batch when none is given, tokens: 4M (4,194,304 = 2^22), Llama 2's pre-training batch (Touvron et
#: al. 2023, section 2.2: "a global batch-size of 4M tokens"); the search rounds it to whole micro-batches.
DEFAULT_GLOBAL_BATCH_TOKENS = 4 * 1024 * 1024
#: Default pre-training batch per GPU of a large job, tokens: 2,048 -- Llama 3 405B's 16M-token batch on 8,192 H100s
#: (arXiv 2407.21783, Table 4); the default batch is the larger of this x GPUs and 4M (up to 2,048 GPUs: 4M).
DEFAULT_BATCH_TOKENS_PER_GPU = 2048
#: Context parallelism is tried only while each rank keeps at least this many tokens of a sequence: NeMo's
#: Llama 3.1 405B recipe runs CP 2 at 8,192 tokens (training.csv, Megatron-Bridge rows), torchtitan CP 8 at 262,144
#: (the llama3 long-context runs); below 4,096 tokens per rank the ring's exchanges stop hiding behind attention.
CP_MIN_TOKENS = 4096
#: Default global batch of a full fine-tune, sequences: 64, Llama 2's supervised fine-tuning (Touvron et al. 2023,
#: section 3.1: "batch size of 64 and sequence length of 4096 tokens").
DEFAULT_FINETUNE_BATCH_SEQS = 64
#: Largest job the search lays out (issue 11): 16,384 GPUs, the scale of Llama 3 405B's pre-training.
MAX_TRAIN_GPUS = 16384


@dataclass(frozen=True)
class TrainFit:
    """Constants fitted by ``benchmarks/training_fit.py --refit`` on ``shared/data/perf/training.csv``.

    Attributes:
        matmul: fraction of the measured matmul ceiling (MAMF) a framework family's GEMMs reach in training.
        elementwise: bytes moved per hidden element per token per layer (forward + backward) by the memory-bound
            ops of a framework family (norms, activations, residual adds, dropout, rotary), over the memory bandwidth.
        fp8_extra: extra bytes per hidden element per token per layer in fp8 training (casts, amax/scales).
        attention: fraction of the bf16 ceiling the attention FLOPs (12 L h s per token) run at.
        overlap: fraction of the step's compute time that data-parallel communication can hide behind.
        tp_exposed: fraction of the tensor-parallel collectives not hidden behind compute.
        moe_elementwise: extra bytes per hidden element per routed token per MoE layer (permute, unpermute, router).
        layer_fixed_s: time per transformer layer per micro-batch (forward + backward) that does not shrink with the
            model: kernel launches and the host between them, s.
        moe_layer_fixed_s: the same, extra, per MoE layer (router, token counts synced to the host for dropless
            routing, permute/unpermute and grouped-GEMM launches), s.
        step_fixed_s: time per optimizer step that does not shrink with the model (optimizer and gradient-clipping
            launches, loss reduction, data loader, logging), s.
        generation: factor on the matmul fraction by GPU generation (``serving.gpu_generation``; Hopper 1): the
            same framework's GEMMs reach another share of the measured ceiling on another generation (kernel
            maturity; the ceiling of a GPU without a MAMF measurement is the NVIDIA mean).
        straggler: relative spread of one node's step time (jitter, stragglers); a synchronous step waits for the
            slowest of n nodes, ``1 + straggler x sqrt(2 ln n)`` times the mean (the expected maximum of n normal
            draws, Gumbel's extreme-value asymptote).
    """

    matmul: dict = field(default_factory=dict)
    elementwise: dict = field(default_factory=dict)
    fp8_extra: float = 0.0
    attention: float = 0.5
    overlap: float = 0.8
    tp_exposed: float = 1.0
    moe_elementwise: float = 0.0
    layer_fixed_s: float = 0.0
    moe_layer_fixed_s: float = 0.0
    step_fixed_s: float = 0.0
    straggler: float = 0.0
    generation: dict = field(default_factory=dict)
    expert_fixed_s: float = 0.0
    source: str = ""


FIT = TrainFit(
    matmul={"megatron": 0.8274, "fsdp": 0.8667},
    elementwise={"megatron": 35.34, "fsdp": 595.48},
    fp8_extra=0.00,
    attention=0.4578,
    overlap=0.0598,
    tp_exposed=0.9996,
    moe_elementwise=11.24,
    layer_fixed_s=0.00000,
    moe_layer_fixed_s=0.00169,
    expert_fixed_s=0.000314,
    step_fixed_s=0.0785,
    straggler=0.0000,
    generation={"megatron.ampere": 0.7547, "megatron.blackwell": 0.9912, "fsdp.ampere": 1.1671},
    source="benchmarks/training_fit.py --refit on shared/data/perf/training.csv and benchmarks/data/training_added.csv "
           "(231 runs)",
)


def speed_family(framework: str) -> str:
    """The fitted family a framework's speed uses: ``megatron``, else ``fsdp`` (DeepSpeed: no throughput rows)."""
    return "megatron" if framework == "megatron" else "fsdp"


@dataclass(frozen=True)
class TrainLayout:
    """One parallel layout of a training job.

    GPUs = ``tp x cp x dp x pp``; ranks ordered TP (innermost, inside one node), CP, DP, PP (outermost, across
    nodes): Megatron-Core's default order. ``ep`` divides ``dp x cp`` (experts are spread over data-parallel ranks);
    ``vp`` virtual stages per pipeline rank (interleaved 1F1B); ``zero_stage`` shards optimizer states (1), gradients
    (2) and parameters (3) over the ``dp x cp`` ranks; ``micro_batch`` sequences per micro-batch; ``recompute`` full
    activation recomputation -- of every layer, or with ``recompute_layers`` > 0 of that many layers per pipeline
    stage, the rest keeping their activations (Megatron-Core ``--recompute-granularity full --recompute-method block
    --recompute-num-layers N``); ``offload`` one of :data:`OFFLOADS`.
    """

    tp: int = 1
    pp: int = 1
    dp: int = 1
    cp: int = 1
    ep: int = 1
    vp: int = 1
    zero_stage: int = 1
    micro_batch: int = 1
    recompute: bool = False
    offload: str = "none"
    recompute_layers: int = 0

    @property
    def gpus(self) -> int:
        return self.tp * self.pp * self.dp * self.cp

    def recompute_share(self, layers: int) -> float:
        """Share of a stage's layers recomputed in the backward pass (0..1) for a model of ``layers`` layers."""
        if not self.recompute:
            return 0.0
        stage = math.ceil(layers / self.pp)
        return min(1.0, self.recompute_layers / stage) if self.recompute_layers else 1.0

    @classmethod
    def from_dict(cls, d: dict) -> "TrainLayout":
        """The layout of an :meth:`as_dict` mapping (extra keys, e.g. framework or precision, are ignored)."""
        return cls(tp=d["tensor_parallel"], pp=d["pipeline_parallel"], dp=d["data_parallel"],
                   cp=d["context_parallel"], ep=d["expert_parallel"], vp=d["virtual_stages"], zero_stage=d["zero_stage"],
                   micro_batch=d["micro_batch_size"], recompute=d["activation_recompute"], offload=d["offload"],
                   recompute_layers=d.get("recompute_layers", 0))

    def as_dict(self) -> dict:
        return {"tensor_parallel": self.tp, "pipeline_parallel": self.pp, "data_parallel": self.dp,
                "context_parallel": self.cp, "expert_parallel": self.ep, "virtual_stages": self.vp,
                "zero_stage": self.zero_stage, "micro_batch_size": self.micro_batch,
                "activation_recompute": self.recompute, "offload": self.offload,
                "recompute_layers": self.recompute_layers if self.recompute else 0}

    def describe(self) -> str:
        parts = [f"TP{self.tp}", f"PP{self.pp}" + (f"x{self.vp}v" if self.vp > 1 else ""), f"DP{self.dp}"]
        if self.cp > 1:
            parts.append(f"CP{self.cp}")
        if self.ep > 1:
            parts.append(f"EP{self.ep}")
        if self.recompute and self.recompute_layers:
            n = self.recompute_layers
            rec = f"recompute of {n} layer{'s' if n != 1 else ''}" + (" a stage" if self.pp > 1 else "") + (
                f" ({n // self.vp} a virtual stage)" if self.vp > 1 else "") + ", the rest kept"
        else:
            rec = "full recompute" if self.recompute else "no full recompute"
        text = " ".join(parts) + f", ZeRO-{self.zero_stage}, micro-batch {self.micro_batch}, " + rec
        return text + (f", offload {self.offload}" if self.offload != "none" else "")


@dataclass(frozen=True)
class TrainSetup:
    """What is trained and on what: the model, the GPU, the network between nodes, the numeric precision
    (:data:`TRAIN_PRECISIONS`), the framework (:data:`FRAMEWORKS`), the optimizer (:data:`OPTIMIZERS`), the sequence
    length (tokens) and the global batch (sequences per optimizer step; None = :data:`DEFAULT_GLOBAL_BATCH_TOKENS`
    rounded to whole micro-batches of the layout)."""

    model: "ModelSpec"
    gpu: "GpuSpec"
    network: "NodeNetwork"
    precision: str = "bf16"
    framework: str = "megatron"
    optimizer: str = "adam"
    seq_len: int = 4096
    global_batch_seqs: int | None = None
    usable_fraction: float = 0.90
    default_batch: float = 0.0  # tokens; 0: DEFAULT_GLOBAL_BATCH_TOKENS (pre-training)


@dataclass(frozen=True)
class StepTime:
    """One optimizer step of a layout: times in s (per GPU, the slowest pipeline stage), memory in bytes per GPU."""

    layout: TrainLayout
    step_s: float
    microbatches: int
    global_batch_seqs: int
    tokens_per_second_per_gpu: float
    mfu: float
    parts_s: dict
    memory: dict
    memory_bytes: float
    fits: bool

    @property
    def memory_gib(self) -> float:
        return self.memory_bytes / GIB


# ----------------------------------------------------------------------------------------------- model shape


def expert_params(m: "ModelSpec") -> float:
    """Parameters in the routed experts (0 for a dense model): layers x experts x (3 if gated else 2) x h x I_moe."""
    if m.experts <= 1:
        return 0.0
    inter = m.moe_intermediate_size or m.intermediate_size
    total = m.layers * m.experts * (3 if m.gated_mlp else 2) * m.hidden_size * inter
    return min(float(total), 0.98 * m.params_total)


def model_flops_per_token(m: "ModelSpec", seq_len: int) -> float:
    """Model FLOPs per trained token: ``6 N_active + 12 L (heads x head_dim) s`` -- the MFU numerator of
    llm-foundry (``3 x (2 N s + 4 L d s^2)`` per sequence, scripts/train/benchmarking/README.md) and Megatron-LM
    (Korthikanti et al. 2022: ``72 B s L h^2 (1 + s/(6h) + ...)``); F§1. No recomputation counted (MFU, not HFU)."""
    return 6.0 * m.params_active + 12.0 * m.layers * m.heads * m.head_dim * seq_len


def largest_layer_of(m: "ModelSpec") -> float:
    """Parameters of the largest single layer: a transformer block or the embedding (V x h)."""
    embed = float(m.vocab_size * m.hidden_size)
    block = max(0.0, (m.params_total - (1 if m.tied_embeddings else 2) * embed) / m.layers)
    return max(block, embed)


def _ffn_activation_width(m: "ModelSpec") -> float:
    """The MLP's hidden width an activation of one token carries: dense ``I``; MoE ``I_moe x top_k``."""
    if m.experts > 1:
        return float((m.moe_intermediate_size or m.intermediate_size) * m.experts_per_token)
    return float(m.intermediate_size)


# ----------------------------------------------------------------------------------------------- memory


def model_state_bytes(params: float, zero_stage: int, shards: int, *, framework: str = "megatron",
                      optimizer: str = "adam", offload: str = "none", largest_layer: float = 0.0) -> dict:
    """Bytes per GPU of weights, gradients and optimizer states for ``params`` parameters held by this GPU's
    model-parallel shard, sharded over ``shards`` data-parallel ranks.

    * ``megatron`` (bf16 params, fp32 main grads): stage 0 18 B/param; stage 1 (distributed optimizer) ``6 + 12/d``
      (Megatron-LM docs, "Distributed Optimizer" table); stage 2 ``2 + 16/d``; stage 3 (Megatron-FSDP) ``18/d``.
    * ``deepspeed``: stage 0 ``16`` (ZeRO paper baseline, 2+2+K); stages 1 and 2 ``4 P + 16 P / N`` and stage 3
      ``18 P / N + 4 x largest layer`` -- DeepSpeed's estimators (docs/code-docs/source/memory.rst; F§4); offload
      optimizer: stage 1/2 ``2 P``, stage 3 ``2 P / N + 4 x largest layer``; offload params (stage 3): ``4 x largest``.
    * ``fsdp`` (MixedPrecision: sharded fp32 params are the master copy, fp32 sharded grads, bf16 compute copies):
      stage 3 (FULL_SHARD) ``(4 + 4 + moments) / d + 4 x largest layer`` (the gathered bf16 unit and its prefetched
      neighbour, DERIVED); stage 2 (SHARD_GRAD_OP) ``2 P + (4 + 4 + moments) / d``; stage 0/1 as DDP ``2+2+K``.

    The optimizer's bytes (:data:`OPTIMIZERS`) replace Adam's 12 (master 4 + moments). Returns dict of weights,
    gradients, optimizer_states, overhead (bytes).

    Raises:
        InputError("zero_stage" | "optimizer" | "offload" | "framework") for values outside the accepted ones.
    """
    if zero_stage not in (0, 1, 2, 3):
        raise InputError("zero_stage", f"unknown ZeRO stage {zero_stage!r}", accepted="0, 1, 2, 3")
    if optimizer not in OPTIMIZERS:
        raise InputError("optimizer", f"unknown optimizer {optimizer!r}", accepted=", ".join(OPTIMIZERS))
    if offload not in OFFLOADS:
        raise InputError("offload", f"unknown offload {offload!r}", accepted=", ".join(OFFLOADS))
    if framework not in FRAMEWORKS:
        raise InputError("framework", f"unknown framework {framework!r}", accepted=", ".join(FRAMEWORKS))
    if offload == "params" and zero_stage != 3:
        raise InputError("offload", "parameters are offloaded only with ZeRO stage 3", accepted="none, optimizer")
    p, d = float(params), max(1, int(shards))
    master, moments = OPTIMIZERS[optimizer]
    opt = master + moments  # Adam: 12
    out = {"weights": 0.0, "gradients": 0.0, "optimizer_states": 0.0, "overhead": 0.0}
    if framework == "megatron":
        grads = 4.0
        if zero_stage == 0:
            out.update(weights=2 * p, gradients=grads * p, optimizer_states=opt * p)
        elif zero_stage == 1:
            out.update(weights=2 * p, gradients=grads * p, optimizer_states=opt * p / d)
        elif zero_stage == 2:
            out.update(weights=2 * p, gradients=grads * p / d, optimizer_states=opt * p / d)
        else:
            out.update(weights=2 * p / d, gradients=grads * p / d, optimizer_states=opt * p / d,
                       overhead=4.0 * largest_layer)
    elif framework == "deepspeed":
        if zero_stage == 0:
            out.update(weights=2 * p, gradients=2 * p, optimizer_states=opt * p)
        elif zero_stage in (1, 2):
            out.update(weights=2 * p, gradients=2 * p + 4 * p / d, optimizer_states=opt * p / d)
        else:
            out.update(weights=2 * p / d, gradients=4 * p / d, optimizer_states=opt * p / d,
                       overhead=4.0 * largest_layer)
    else:  # fsdp
        if zero_stage in (0, 1):
            out.update(weights=2 * p, gradients=2 * p, optimizer_states=opt * p)
        elif zero_stage == 2:
            out.update(weights=2 * p + master * p / d, gradients=4 * p / d, optimizer_states=moments * p / d)
        else:
            out.update(weights=master * p / d, gradients=4 * p / d, optimizer_states=moments * p / d,
                       overhead=4.0 * largest_layer)
    if offload != "none":
        # the fp32 master, the moments and (DeepSpeed, FSDP) the fp32 gradient copy live in CPU memory; the GPU keeps
        # 16-bit params (sharded under stage 3) and, for stage 3 param offload, only the gathered layer (DeepSpeed
        # estimator); Megatron keeps its fp32 gradient buffer on the GPU
        out["optimizer_states"] = 0.0
        if zero_stage == 3:
            out["weights"] = 0.0 if offload == "params" else 2 * p / d
            out["gradients"] = 0.0
        elif framework == "megatron":
            pass  # Megatron's --optimizer-cpu-offload moves the optimizer states and master weights; grads stay
        else:
            out["weights"], out["gradients"] = 2 * p, 0.0
            out["overhead"] = 0.0
    return out


def activation_bytes(setup: TrainSetup, layout: TrainLayout) -> float:
    """Activation bytes on the most loaded GPU (the first pipeline stage), 16-bit activations, flash attention.

    Per layer and micro-batch with sequence parallelism (Megatron-LM ``theoretical_memory_usage.py``,
    ``compute_activation_memory``: ``s b h (18 + 4 I / h) / t``; Korthikanti et al. 2022, F§5), s = the GPU's
    ``seq_len / cp`` tokens, I = the MLP width a token carries (MoE: I_moe x top-k); with full recomputation only
    each layer's input ``2 s b h / t`` is kept, plus one layer's working set during its recompute. The first stage
    holds ``min(pp, microbatches)`` micro-batches in flight for its ``L / pp`` layers -- L layers' worth -- times the
    interleaving penalty ``1 + (pp - 1) / (pp v)`` (same source); + the fp32 logits ``4 s b V / t`` on the last
    stage (counted once).
    """
    m, L = setup.model, setup.model.layers
    s = setup.seq_len / layout.cp
    b, h, t = layout.micro_batch, m.hidden_size, layout.tp
    per_layer = s * b * h * (18.0 + 4.0 * _ffn_activation_width(m) / h) / t
    stage_layers = math.ceil(L / layout.pp)
    mbs = _microbatches(setup, layout)
    in_flight = min(layout.pp, mbs) if layout.pp > 1 else 1
    penalty = 1.0 + (layout.pp - 1) / (layout.pp * layout.vp) if layout.pp > 1 and layout.vp > 1 else 1.0
    if layout.recompute:
        n_rec = min(stage_layers, layout.recompute_layers) if layout.recompute_layers else stage_layers
        stored = (2.0 * s * b * h / t * n_rec + per_layer * (stage_layers - n_rec)) * in_flight * penalty
        acts = stored + per_layer
    else:
        acts = per_layer * stage_layers * in_flight * penalty
    logits = 4.0 * s * b * m.vocab_size / t
    return acts + logits


def _shard_params(m: "ModelSpec", layout: TrainLayout) -> tuple[float, float]:
    """(parameters on one GPU after TP/PP/EP, of which expert parameters)."""
    experts = expert_params(m)
    dense = m.params_total - experts
    share = math.ceil(m.layers / layout.pp) / m.layers  # the most loaded stage's layers
    embed = float(m.vocab_size * m.hidden_size)
    per_stage_dense = dense
    if layout.pp > 1:  # the first stage also holds the embedding (the last the head): one V x h
        per_stage_dense = max(0.0, dense - (1 if m.tied_embeddings else 2) * embed) * share + embed
    exp = experts * share / (layout.ep * layout.tp)
    return per_stage_dense / layout.tp + exp, exp


def memory_per_gpu(setup: TrainSetup, layout: TrainLayout) -> dict:
    """Bytes per GPU by part (weights, gradients, optimizer_states, activations, overhead) of ``layout``
    (:func:`model_state_bytes` over the ``dp x cp`` ranks -- experts' states over ``dp x cp / ep`` --, and
    :func:`activation_bytes`)."""
    m = setup.model
    p_gpu, p_exp = _shard_params(m, layout)
    d = layout.dp * layout.cp
    largest = largest_layer_of(m) / layout.tp
    dense = model_state_bytes(p_gpu - p_exp, layout.zero_stage, d, framework=setup.framework,
                              optimizer=setup.optimizer, offload=layout.offload, largest_layer=largest)
    parts = dict(dense)
    if p_exp > 0:
        exp = model_state_bytes(p_exp, layout.zero_stage, max(1, d // layout.ep), framework=setup.framework,
                                optimizer=setup.optimizer, offload=layout.offload, largest_layer=0.0)
        for k in ("weights", "gradients", "optimizer_states"):
            parts[k] += exp[k]
    if layout.zero_stage == 2 and layout.pp > 1:
        # under a pipeline schedule the gradients accumulate unsharded over the micro-batches and are
        # reduce-scattered on the last one (PyTorch pipelining, stage.py backward_maybe_with_nosync: "we need to
        # accumulate gradients on previous steps and reduce them on the last step"; Megatron's distributed
        # optimizer alike): the stage's whole gradient buffer is held, as at stage 1
        def grads(params: float, shards: int) -> float:
            return model_state_bytes(params, 1, shards, framework=setup.framework, optimizer=setup.optimizer,
                                     offload=layout.offload, largest_layer=largest)["gradients"] if params > 0 else 0.0

        parts["gradients"] = grads(p_gpu - p_exp, d) + grads(p_exp, max(1, d // layout.ep))
    parts["activations"] = activation_bytes(setup, layout)
    return parts


# ----------------------------------------------------------------------------------------------- time


def mamf(gpu: "GpuSpec", precision: str) -> tuple[float, str]:
    """The GPU's measured matmul ceiling as a fraction of its dense peak for ``precision`` (bf16/fp16 -> bf16),
    and where it comes from (:data:`MAMF`, else :data:`MAMF_DEFAULT`, an estimate)."""
    kind = "fp8" if precision == "fp8" else "bf16"
    if (gpu.spec_row, kind) in MAMF:
        return MAMF[(gpu.spec_row, kind)], f"MAMF {kind} {MAMF[(gpu.spec_row, kind)]:.3f} (stas00/ml-engineering)"
    if gpu_generation(gpu) == "blackwell" and ("B200 (HGX/DGX, 1000 W)", kind) in MAMF:
        # GB200, B300, GB300: the same Blackwell tensor cores as the measured B200 (a breaker's find: the NVIDIA mean,
        # 0.819, put the unmeasured Blackwells above the measured one, 0.776)
        v = MAMF[("B200 (HGX/DGX, 1000 W)", kind)]
        return v, (f"MAMF {kind} {v:.3f} (no measurement for {gpu.name}: the B200's, another Blackwell; "
                   "stas00/ml-engineering; an estimate)")
    vendor = "Instinct" if gpu.spec_row.startswith("Instinct") else None
    same = [v for (row, k), v in MAMF.items() if k == "bf16" and vendor and row.startswith(vendor)]
    if same:
        # another AMD Instinct's measurement, not the NVIDIA mean (a breaker's find: MI325X, the MI300X's CDNA 3
        # chip with more memory, trained at MFU 0.66 on the NVIDIA mean where the MI300X's 0.514 gives 0.40);
        # fp8 has no AMD measurement, so the bf16 ratio stands for it too
        v = sum(same) / len(same)
        return v, (f"MAMF {kind} {v:.3f} (no measurement for {gpu.name}: the measured AMD Instinct GPUs' bf16 "
                   "ratio, stas00/ml-engineering; an estimate)")
    return MAMF_DEFAULT[kind], (f"MAMF {kind} {MAMF_DEFAULT[kind]:.3f} (no measurement for {gpu.name}: mean of the "
                                "measured NVIDIA GPUs, an estimate)")


def generation_factor(gpu: "GpuSpec", family: str, fit: TrainFit = FIT) -> float:
    """The factor :attr:`TrainFit.generation` puts on ``family``'s matmul share on ``gpu``'s generation: the fitted
    one; Hopper 1 (the reference); a generation the calibration set has no run of (Volta, Turing, Ada, AMD...) the
    family's lowest fitted factor, at most 1 -- never more efficient than a generation that was measured."""
    gen = gpu_generation(gpu)
    key = f"{family}.{gen}"
    if key in fit.generation:
        return fit.generation[key]
    if gen == "hopper":
        return 1.0
    return min([v for k, v in fit.generation.items() if k.startswith(family + ".")] + [1.0])


def generation_note(gpu: "GpuSpec", family: str, fit: TrainFit = FIT) -> str:
    """`` x F (framework on generation)`` when :func:`generation_factor` scales the matmul share, else ``""``."""
    f = generation_factor(gpu, family, fit)
    return "" if f == 1.0 else f" x {f:.3g} ({family} on {gpu_generation(gpu)}; at most the ceiling)"


def peak_flops(gpu: "GpuSpec", precision: str) -> float:
    """Dense peak FLOP/s of the training precision's matmuls (fp8: the FP8 peak; the MFU denominator, as
    llm-foundry and the NVIDIA recipes compute FP8 MFU).

    Raises:
        InputError("precision"): fp8 on a GPU without FP8 tensor cores; an unknown precision.
    """
    if precision not in TRAIN_PRECISIONS:
        raise InputError("precision", f"unknown training precision {precision!r}", accepted=", ".join(TRAIN_PRECISIONS))
    if precision == "fp8":
        if not gpu.fp8_tflops_dense:
            raise InputError("precision", f"{gpu.name} has no FP8 tensor cores (its datasheet lists no FP8 peak)",
                             accepted="bf16, fp16")
        return gpu.fp8_tflops_dense * 1e12
    return gpu.fp16_tflops_dense * 1e12


def _microbatches(setup: TrainSetup, layout: TrainLayout) -> int:
    per_step = layout.dp * layout.micro_batch
    gbs = global_batch(setup, layout)
    return max(1, gbs // per_step)


def default_batch_tokens(setup: TrainSetup, gpus: int = 0) -> float:
    """The global batch, tokens, when none is given: the setup's ``default_batch`` (fine-tuning:
    :data:`DEFAULT_FINETUNE_BATCH_SEQS` sequences), else pre-training's :data:`DEFAULT_GLOBAL_BATCH_TOKENS`, grown
    with the job to :data:`DEFAULT_BATCH_TOKENS_PER_GPU` per GPU of ``gpus`` -- teams raise the batch with the scale
    (Llama 2: 4M tokens on 2,048 A100s; Llama 3 405B: 16M on 8,192 H100s), else a 4M batch leaves a large job one
    micro-batch per rank and a pipeline bubble of most of the step (a fresh user's find: 70B on 4,096 B200s at MFU
    0.26, 0.44 with 16M)."""
    if setup.default_batch:
        return setup.default_batch
    return max(DEFAULT_GLOBAL_BATCH_TOKENS, DEFAULT_BATCH_TOKENS_PER_GPU * gpus)


def global_batch(setup: TrainSetup, layout: TrainLayout) -> int:
    """Sequences per optimizer step: the setup's, else :func:`default_batch_tokens` / seq_len rounded to a whole
    number of micro-batches per data-parallel rank (at least one)."""
    if setup.global_batch_seqs:
        return setup.global_batch_seqs
    unit = layout.dp * layout.micro_batch
    want = default_batch_tokens(setup, layout.gpus) / setup.seq_len
    return unit * max(1, round(want / unit))


def _dp_bandwidth(setup: TrainSetup, layout: TrainLayout, group: int) -> float:
    """GB/s one way a GPU gets in a collective over ``group`` ranks strided by ``tp`` (TP innermost): NVLink inside
    a node; across nodes the node's NICs shared by the ``min(tp, gpus_per_node)`` groups that run at once (NCCL runs
    one ring per NIC, busbw ~ the node's bandwidth; F§9)."""
    gpu, net = setup.gpu, setup.network
    link = gpu.link_gbps_one_way or 16.0
    if layout.tp * group <= net.gpus_per_node:
        return link
    return min(link, net.gbps_per_node / max(1, min(layout.tp, net.gpus_per_node)))


#: Gradient bucket of Megatron-Core's data-parallel collectives, parameters: ``max(40,000,000, 1,000,000 x dp)``
#: ("larger DP sizes need larger buckets to ensure collectives do not become latency-bound";
#: megatron/core/distributed/distributed_data_parallel_config.py, ``bucket_size``); PyTorch FSDP reduces per wrapped
#: unit, of the same order for the models that need a cluster.
DP_BUCKET_MIN_PARAMS = 40_000_000
DP_BUCKET_PARAMS_PER_RANK = 1_000_000


def _dp_latency_s(setup: TrainSetup, layout: TrainLayout, group: int, params: float) -> float:
    """The latency part of one pass (a reduce-scatter or an all-gather) of the data-parallel collectives over
    ``group`` ranks, s: NCCL's ring takes ``n - 1`` steps per bucket, each crossing the network once per node of
    the ring, at NCCL's own network step latency (:data:`optimizer.sizing.network.NCCL_NET_STEP_LATENCY_S`,
    22.4 us: tuning.cc base + hardware latency of a NET ring step); ``params / bucket`` buckets
    (:data:`DP_BUCKET_MIN_PARAMS`). Grows with the ring (the scale effect of issue 28); 0 inside one node."""
    per_node = max(1, setup.network.gpus_per_node // max(1, layout.tp * layout.cp))
    nodes = math.ceil(group / per_node)
    if nodes <= 1:
        return 0.0
    buckets = math.ceil(params / max(DP_BUCKET_MIN_PARAMS, DP_BUCKET_PARAMS_PER_RANK * group))
    return buckets * (nodes - 1) * NCCL_NET_STEP_LATENCY_S


def _all_to_all_s(setup: TrainSetup, layout: TrainLayout, volume: float) -> float:
    """Time of the expert-parallel all-to-alls that move ``volume`` bytes of this GPU's tokens (dispatch + combine,
    forward and backward), s. A token goes to each of the ``ep`` ranks alike: ``(g - 1) / ep`` of the volume stays in
    the NVLink domain (g = the EP group's ranks in it, consecutive data-parallel ranks strided by ``tp``), ``(ep - g) /
    ep`` crosses the node network, where every GPU of the node sends at once and gets ``1 / gpus_per_node`` of the
    node's NICs (an all-to-all has no ring to pipeline through them, unlike the data-parallel collectives of
    :func:`_dp_bandwidth`); the two run at once over different links (Megatron-Core MoE, DeepEP: NVLink and RDMA
    dispatch overlap)."""
    net, ep = setup.network, layout.ep
    node = max(1, net.gpus_per_node)
    inside = max(1, min(ep, node // max(1, layout.tp)))
    link = (setup.gpu.link_gbps_one_way or 16.0) * 1e9
    nic = net.gbps_per_node / node * 1e9
    return max(volume * (inside - 1) / ep / link, volume * (ep - inside) / ep / nic)


def reference_network(gpu: "GpuSpec") -> "NodeNetwork":
    """The node network of the vendor's reference cluster for ``gpu``'s generation, for estimates without an offer:

    * Ampere and older: DGX A100, 8 x 200 Gb/s HDR InfiniBand (200 GB/s per 8-GPU node; DGX A100 datasheet);
    * Hopper, B200: DGX H100/H200/B200, 8 x 400 Gb/s NDR (400 GB/s per node; DGX datasheets, ConnectX-7);
    * B300 (HGX/DGX B300): 8 x 800 Gb/s ConnectX-8 SuperNICs (800 GB/s per node; rillor.com "ConnectX-7 vs
      ConnectX-8 and NVLink5": "B300-class HGX systems move to eight ConnectX-8 SuperNICs at 800 Gb/s");
    * GB200 / GB300 NVL72: the "node" is the rack's 72-GPU NVLink domain (NVIDIA multi-node tuning guide,
      "Understanding your Grace-Blackwell systems": 72x1, 18 trays of 4 GPUs, all on NVLink 5) -- collectives among
      up to 72 GPUs run on NVLink; between racks one NIC per GPU: GB200 ConnectX-7 400 Gb/s (72 x 50 GB/s =
      3,600 GB/s per rack), GB300 ConnectX-8 800 Gb/s (NVIDIA Enterprise RA "NVL72 AI factory", components: 4
      ConnectX-8 per 4-GPU tray; 72 x 100 = 7,200 GB/s per rack).

    The calibration fit (``benchmarks/training_fit.py``) uses the same."""
    import dataclasses

    name = (gpu.spec_row or gpu.name).upper()
    if "NVL72" in name:
        per_gpu = 100.0 if name.startswith("GB300") else 50.0
        return dataclasses.replace(DEFAULT_NODE_NETWORK, gbps_per_node=72 * per_gpu, gpus_per_node=72,
                                   source=f"default: a 72-GPU NVLink domain (NVL72 rack), {int(per_gpu * 8)} Gb/s "
                                          "per GPU between racks")
    if name.startswith("B300"):
        return dataclasses.replace(DEFAULT_NODE_NETWORK, gbps_per_node=800.0,
                                   source="default: 8 x 800 Gb/s ConnectX-8 per 8-GPU node (HGX/DGX B300)")
    if gpu_generation(gpu) in ("hopper", "blackwell"):
        return dataclasses.replace(DEFAULT_NODE_NETWORK, gbps_per_node=400.0,
                                   source="default: 8 x 400 Gb/s InfiniBand NDR per 8-GPU node (DGX H100/H200/B200)")
    return DEFAULT_NODE_NETWORK


def step(setup: TrainSetup, layout: TrainLayout, fit: TrainFit = FIT) -> StepTime:
    """Time of one optimizer step of ``layout``, its tokens/s per GPU and MFU, and its memory (module docstring).

    Raises:
        InputError("precision"): as :func:`peak_flops`.
    """
    m, gpu = setup.model, setup.gpu
    fam = speed_family(setup.framework)
    peak = peak_flops(gpu, setup.precision)
    peak16 = gpu.fp16_tflops_dense * 1e12
    ceil_p, _ = mamf(gpu, setup.precision)
    ceil16, _ = mamf(gpu, "bf16")
    bw = gpu.memory_bandwidth_gbps * 1e9
    s = setup.seq_len
    L = m.layers
    tp, pp, cp, ep, vp = layout.tp, layout.pp, layout.cp, layout.ep, layout.vp
    tok = layout.micro_batch * s / cp  # tokens of one micro-batch on one GPU (before the TP split of the matmuls)
    share = layout.recompute_share(L)
    r_full = 1.0 + share / 3.0  # recomputed layers run their forward again
    stage = math.ceil(L / pp) / L  # the slowest stage's share of the layers
    f_mm = 6.0 * m.params_active * tok / tp * stage
    f_attn = 12.0 * L * m.heads * m.head_dim * s * tok / tp * stage
    # a share of the measured ceiling: never above it
    t_mm = f_mm * r_full / (peak * ceil_p * min(1.0, fit.matmul[fam] * generation_factor(gpu, fam, fit)))
    t_attn = f_attn * r_full / (
        peak16 * ceil16 * fit.attention * attention_speedup(gpu) * attention_head_dim_factor(m.head_dim))
    k = fit.elementwise[fam] + (fit.fp8_extra if setup.precision == "fp8" else 0.0)
    t_elem = k * L * stage * tok * m.hidden_size / tp * r_full / bw
    moe_layers = L if m.experts > 1 else 0
    t_moe = fit.moe_elementwise * moe_layers * stage * tok * m.experts_per_token * m.hidden_size / tp / bw
    # tensor parallel (sequence parallel): per layer 4 all-gathers/reduce-scatters forward, 4 backward (+4 recompute)
    t_tp = 0.0
    if tp > 1:
        link = gpu.link_gbps_one_way or 16.0
        colls = 8 + 4 * share
        t_tp = fit.tp_exposed * colls * (tp - 1) / tp * tok * m.hidden_size * 2.0 * L * stage / (link * 1e9)
    # context parallel (ring attention): K and V chunks passed cp-1 times forward, K, V and their grads backward
    t_cp = 0.0
    if cp > 1:
        kv = 2.0 * m.kv_heads * m.head_dim * tok * 2.0 / tp
        vol = 3.0 * kv * (cp - 1) * L * stage
        t_cp = max(0.0, vol / (_dp_bandwidth(setup, layout, cp) * 1e9) - t_attn)
    # expert parallel: dispatch + combine all-to-all, forward and backward
    t_ep = 0.0
    if ep > 1 and m.experts > 1:
        t_ep = _all_to_all_s(setup, layout, 4.0 * tok * m.experts_per_token * m.hidden_size * 2.0 / tp
                             * moe_layers * stage)
    # fixed per layer and micro-batch (forward + backward; recompute runs the forward again)
    # held at the fitted range's top: the runs hold 2-32 experts a GPU (a breaker's find: 128 held at EP 1 made
    # the term 27x a run's step, an extrapolation no run supports)
    local_experts = min(m.experts / max(1, ep), EXPERT_FIXED_MAX_LOCAL) if m.experts > 1 else 0.0
    t_fixed = (fit.layer_fixed_s * L + (fit.moe_layer_fixed_s + fit.expert_fixed_s * local_experts) * moe_layers
               ) * stage * r_full
    t_mb = t_mm + t_attn + t_elem + t_moe + t_tp + t_cp + t_ep + t_fixed
    mbs = _microbatches(setup, layout)
    gbs = layout.dp * layout.micro_batch * mbs
    # pipeline: point-to-point of each micro-batch's activations (forward and backward) and the bubble
    t_p2p = 0.0
    if pp > 1:
        hop_bw = setup.network.gbps_per_node / max(1, setup.network.gpus_per_node) if layout.gpus > setup.network.gpus_per_node else (gpu.link_gbps_one_way or 16.0)
        # each of the vp model chunks sends its activations on (forward) and their gradients back: the interleaved
        # schedule multiplies the point-to-point volume by vp (Narayanan et al. 2021, s.2.2.2)
        t_p2p = 2.0 * vp * tok * m.hidden_size * 2.0 / tp / (hop_bw * 1e9)
    bubble = (pp - 1) / vp * (t_mb + t_p2p) if pp > 1 else 0.0
    compute = mbs * (t_mb + t_p2p)
    # data parallel: gradients reduce-scattered / all-reduced and parameters all-gathered over dp x cp ranks
    p_gpu, p_exp = _shard_params(m, layout)
    d = layout.dp * cp
    # experts' parameters reduce over their own data-parallel group, the dp x cp / ep ranks holding the same experts,
    # strided by tp x ep (Megatron-Core's expert-data-parallel group): past one node each of its rings runs through
    # one GPU's share of the NICs (EP 8 on 8-GPU nodes: one GPU a node)
    d_e = max(1, d // max(1, ep)) if p_exp > 0 else 1
    t_dp = 0.0
    # stage 2: DeepSpeed/Megatron reduce-scatter each micro-batch and all-gather once; FSDP SHARD_GRAD_OP
    # all-gathers in each forward and reduce-scatters in each backward
    stage2 = 2.0 * mbs if setup.framework == "fsdp" else mbs + 1.0
    if pp > 1:  # a pipeline schedule syncs gradients on the last micro-batch only (see memory_per_gpu)
        stage2 = 2.0
    rounds = {0: 2.0, 1: 2.0, 2: stage2, 3: 3.0 * mbs}[layout.zero_stage]
    for params, group, lay in ((p_gpu - p_exp, d, layout), (p_exp, d_e, dataclasses.replace(layout, tp=tp * ep))):
        if group > 1 and params > 0:
            t_dp += rounds * ((group - 1) / group * 2.0 * params / (_dp_bandwidth(setup, lay, group) * 1e9)
                              + _dp_latency_s(setup, lay, group, params))
    dp_exposed = max(0.0, t_dp - fit.overlap * compute)
    local = (p_gpu - p_exp) / (d if layout.zero_stage >= 1 else 1) + p_exp / (d_e if layout.zero_stage >= 1 else 1)
    t_opt = optimizer_step_bytes(setup.optimizer) * local / bw if layout.offload == "none" else 0.0
    t_off = 0.0
    if layout.offload != "none":  # gradients down, updated 16-bit weights up the PCIe link, not overlapped
        t_off = (4.0 + 2.0) * local / (PCIE_GBPS_ONE_WAY * 1e9)
        if layout.offload == "params":
            t_off += 2.0 * 2.0 * p_gpu * mbs / (PCIE_GBPS_ONE_WAY * 1e9)
    step_s = compute + bubble + dp_exposed + t_opt + t_off + fit.step_fixed_s
    nodes = math.ceil(layout.gpus / max(1, setup.network.gpus_per_node))
    t_wait = step_s * fit.straggler * math.sqrt(2.0 * math.log(nodes)) if nodes > 1 else 0.0
    step_s += t_wait
    tokens = gbs * s
    tps_gpu = tokens / step_s / layout.gpus
    mfu = model_flops_per_token(m, s) * tps_gpu / peak
    mem = memory_per_gpu(setup, layout)
    total = sum(mem.values())
    usable = gpu.memory_gib * GIB * setup.usable_fraction
    parts = {"matmul": mbs * t_mm, "attention": mbs * t_attn, "elementwise": mbs * (t_elem + t_moe),
             "fixed_per_layer": mbs * t_fixed, "fixed_per_step": fit.step_fixed_s, "stragglers": t_wait,
             "tensor_parallel": mbs * t_tp, "context_parallel": mbs * t_cp, "expert_parallel": mbs * t_ep,
             "pipeline_p2p": mbs * t_p2p, "pipeline_bubble": bubble, "data_parallel_exposed": dp_exposed,
             "data_parallel_total": t_dp, "optimizer": t_opt, "offload": t_off}
    return StepTime(layout=layout, step_s=step_s, microbatches=mbs, global_batch_seqs=gbs,
                    tokens_per_second_per_gpu=tps_gpu, mfu=mfu, parts_s=parts, memory=mem, memory_bytes=total,
                    fits=total <= usable)


# ----------------------------------------------------------------------------------------------- layout search


def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def _pow2_upto(n: int) -> list[int]:
    out, k = [], 1
    while k <= n:
        out.append(k)
        k *= 2
    return out


def layouts(setup: TrainSetup, gpus: int, *, tp: int | None = None, pp: int | None = None, cp: int | None = None,
            ep: int | None = None, zero_stage: int | None = None, micro_batch: int | None = None,
            recompute: bool | None = None, offload: str = "none") -> list[TrainLayout]:
    """Every layout of ``gpus`` GPUs the search considers; a given value fixes that dimension.

    Megatron: TP 1, 2, 4, 8 up to one node's GPUs, dividing the attention heads and KV heads (Megatron's rule; not
    checked for a model known only by its parameter count, whose heads are a guess); PP: divisors of the GPUs up to
    the layer count (uneven stages allowed, the slowest timed), interleaved with v = 2, 4, 8 virtual stages when the
    layers (or layers + 2) divide into p x v and the micro-batches are a multiple of p; CP 1, 2, 4, ... while each
    rank keeps >= :data:`CP_MIN_TOKENS` tokens. FSDP and DeepSpeed (what HF Trainer, accelerate and llm-foundry
    run): data parallel only unless TP/PP/CP are given; DeepSpeed's pipeline only with ZeRO 0/1. EP:
    divisors of the experts that divide ``dp x cp`` (MoE only); DP: what is left. ZeRO stage: the framework's
    default (:data:`DEFAULT_ZERO_STAGE`) unless given; micro-batch 1, 2, 4, 8, 16 unless given; recompute both ways
    unless given.
    """
    m, net = setup.model, setup.network
    node = max(1, net.gpus_per_node)
    plain = setup.framework in ("fsdp", "deepspeed")  # HF/llm-foundry FSDP, DeepSpeed ZeRO: data parallel only
    if tp:
        tps = [tp]
    elif plain:
        tps = [1]
    else:
        tps = [t for t in (1, 2, 4, 8) if t <= node and (m.estimated or (
            m.heads % t == 0 and (m.kv_heads % t == 0 or t % m.kv_heads == 0)))]
    if pp:
        pps = [pp]
    elif plain:
        pps = [1]
    else:
        pps = [p for p in _divisors(gpus) if p <= m.layers and p <= 128]
    cps = [cp] if cp else [c for c in (1, 2, 4, 8, 16, 32) if c == 1 or (
        not plain and c <= gpus and setup.seq_len / c >= CP_MIN_TOKENS)]
    zs = [zero_stage] if zero_stage is not None else [DEFAULT_ZERO_STAGE[setup.framework]]
    mbs = [micro_batch] if micro_batch else [1, 2, 4, 8, 16]
    recs = [recompute] if recompute is not None else [False, True]
    default_seqs = max(1, round(default_batch_tokens(setup, gpus) / setup.seq_len))
    out = []
    for t in tps:
        for p in pps:
            for c in cps:
                if gpus % (t * p * c):
                    continue
                dp = gpus // (t * p * c)
                if m.experts > 1:
                    eps = [ep] if ep else [e for e in _divisors(m.experts) if (dp * c) % e == 0]
                else:
                    eps = [1]
                # interleaved 1F1B (Megatron-Core): whole layers per virtual stage -- L, or L + 2 with the
                # embedding and the loss counted as layers (--account-for-embedding/loss-in-pipeline-split) --
                # and a number of micro-batches that is a multiple of the stages (checked below); DeepSpeed's
                # pipeline engine has no interleaving
                vps = [1]
                if p > 1 and setup.framework == "megatron":
                    vps = [v for v in (1, 2, 4, 8) if v == 1 or m.layers % (p * v) == 0 or (m.layers + 2) % (p * v) == 0]
                for e in eps:
                    if (dp * c) % e:
                        continue
                    for v in vps:
                        for z in zs:
                            if setup.framework == "deepspeed" and p > 1 and z > 1:
                                continue  # DeepSpeed's PipelineEngine runs ZeRO stage 0 or 1 only
                            for b in mbs:
                                if setup.global_batch_seqs and setup.global_batch_seqs % (dp * b):
                                    continue
                                if not setup.global_batch_seqs and b > 1 and dp * b > default_seqs:
                                    continue  # the default batch: a larger micro-batch may not grow it
                                if v > 1:
                                    lay = TrainLayout(tp=t, pp=p, dp=dp, cp=c, ep=e, vp=v, micro_batch=b)
                                    mb_count = _microbatches(setup, lay)
                                    if mb_count < p or mb_count % p:
                                        continue
                                for r in recs:
                                    out.append(TrainLayout(tp=t, pp=p, dp=dp, cp=c, ep=e, vp=v, zero_stage=z,
                                                           micro_batch=b, recompute=r, offload=offload))
    return out


def least_recompute(setup: TrainSetup, layout: TrainLayout, fit: TrainFit = FIT) -> StepTime | None:
    """The step of ``layout`` (full recompute of every layer) with the fewest layers per stage recomputed that still
    fits memory (Megatron-Core's block recompute, ``--recompute-num-layers``); None when no partial one fits or the
    layout does not recompute. Activation memory falls linearly with the recomputed layers (:func:`activation_bytes`),
    so the count is solved, then checked."""
    stage = math.ceil(setup.model.layers / layout.pp)
    if not layout.recompute or layout.recompute_layers or stage < 2 or setup.framework != "megatron":
        return None  # HF Trainer / DeepSpeed checkpoint every layer; Megatron-Core's block recompute is Megatron's
    vp = max(1, layout.vp)
    usable = setup.gpu.memory_gib * GIB * setup.usable_fraction
    one = sum(memory_per_gpu(setup, dataclasses.replace(layout, recompute_layers=1)).values())
    full = sum(memory_per_gpu(setup, layout).values())
    if one <= usable:
        n = 1
    else:
        per_layer = (one - full) / (stage - 1)
        if per_layer <= 0:
            return None
        n = 1 + math.ceil((one - usable) / per_layer - 1e-9)
    # with virtual stages Megatron counts --recompute-num-layers per model chunk: a multiple of vp a rank
    n = vp * math.ceil(n / vp)
    if n >= stage:
        return None
    st = step(setup, dataclasses.replace(layout, recompute_layers=n), fit)
    return st if st.fits else None


def search(setup: TrainSetup, gpus: int, **fixed) -> tuple[StepTime | None, StepTime | None, int]:
    """The fastest layout of ``gpus`` GPUs that fits memory, the smallest-memory layout tried (to say why nothing
    fits), and how many layouts were tried. ``fixed``: keyword arguments of :func:`layouts`.

    Raises:
        InputError("gpus"): not a whole number 1..MAX_TRAIN_GPUS; ("precision") as :func:`peak_flops`.
    """
    if not isinstance(gpus, int) or isinstance(gpus, bool) or not 1 <= gpus <= MAX_TRAIN_GPUS:
        raise InputError("gpus", f"must be a whole number 1..{MAX_TRAIN_GPUS}, got {gpus!r}",
                         accepted=f"1..{MAX_TRAIN_GPUS}")
    peak_flops(setup.gpu, setup.precision)
    best = smallest = None
    cands = layouts(setup, gpus, **fixed)
    partial = fixed.get("recompute") is None  # a recompute the user did not fix may cover only some layers
    for lay in cands:
        st = step(setup, lay)
        if smallest is None or st.memory_bytes < smallest.memory_bytes:
            smallest = st
        if st.fits and partial and lay.recompute:
            st = least_recompute(setup, lay) or st
        if st.fits and (best is None or st.tokens_per_second_per_gpu > best.tokens_per_second_per_gpu * (1 + 1e-12)):
            best = st
    return best, smallest, len(cands)


# ----------------------------------------------------------------------------------------------- estimators


def deepspeed_zero2_estimate(total_params: float, gpus_per_node: int = 1, nodes: int = 1, *,
                             offload_optimizer: bool = False, buffer_factor: float = 1.5) -> tuple[float, float]:
    """(CPU bytes per node, GPU bytes per GPU) as DeepSpeed's ``estimate_zero2_model_states_mem_needs`` computes
    them (deepspeed/runtime/zero/stage_1_and_2.py; docs/code-docs/source/memory.rst):
    GPU ``2 P`` with the optimizer offloaded, else ``4 P + 16 P / N``; CPU ``P x max(4 x gpus_per_node, 16) x 1.5``
    offloaded, else ``P x 4 x gpus_per_node x 1.5``.
    Example (memory.rst, t5-3b, 2851M params, 8 GPUs): 127.45 GB CPU, 5.31 / 15.93 GB GPU (GiB printed as "GB").
    """
    n = gpus_per_node * nodes
    if offload_optimizer:
        return total_params * max(4 * gpus_per_node, 16) * buffer_factor, 2.0 * total_params
    return total_params * 4 * gpus_per_node * buffer_factor, 4.0 * total_params + 16.0 * total_params / n


def deepspeed_zero3_estimate(total_params: float, largest_layer_params: float, gpus_per_node: int = 1,
                             nodes: int = 1, *, offload_params: bool = False, offload_optimizer: bool = False,
                             zero_init: bool = True, buffer_factor: float = 1.5) -> tuple[float, float]:
    """(CPU bytes per node, GPU bytes per GPU) as DeepSpeed's ``estimate_zero3_model_states_mem_needs``
    (deepspeed/runtime/zero/stage3.py; memory.rst): GPU ``4 LL`` + (no offload ``18 P / N``; optimizer offload
    ``2 P / N``; both offloaded 0); CPU with both offloaded ``P x 18 x gpus_factor x 1.5`` (zero_init) else
    ``P x max(4 x gpus_per_node, 18 x gpus_factor) x 1.5``; optimizer only ``P x 16 x gpus_factor x 1.5`` (zero_init)
    else ``P x max(4 x gpus_per_node, 16 x gpus_factor) x 1.5``; none ``LL x 4 x gpus_per_node x 1.5`` (zero_init)
    else ``P x 4 x gpus_per_node x 1.5``; gpus_factor = 1 / nodes.
    Example (memory.rst, t5-3b, 2851M params, 32M largest layer, 8 GPUs): GPU 0.12 / 0.79 / 6.10 GB.
    """
    n = gpus_per_node * nodes
    ll = 4.0 * largest_layer_params
    gf = 1.0 / nodes
    P = total_params
    if offload_params and offload_optimizer:
        gpu = ll
        cpu = P * 18 * gf * buffer_factor if zero_init else P * max(4 * gpus_per_node, 18 * gf) * buffer_factor
    elif offload_optimizer:
        gpu = ll + 2.0 * P / n
        cpu = P * 16 * gf * buffer_factor if zero_init else P * max(4 * gpus_per_node, 16 * gf) * buffer_factor
    else:
        gpu = ll + 18.0 * P / n
        cpu = largest_layer_params * 4 * gpus_per_node * buffer_factor if zero_init else (
            P * 4 * gpus_per_node * buffer_factor)
    return cpu, gpu


#: Bytes per parameter of each dtype accelerate's estimator knows (accelerate ``estimate-memory``).
ACCELERATE_DTYPE_BYTES = {"float32": 4.0, "float16": 2.0, "bfloat16": 2.0, "int8": 1.0, "int4": 0.5}


def accelerate_estimate(total_params: float, dtype: str = "float32") -> dict:
    """What ``accelerate estimate-memory`` prints for a model (HF Accelerate docs, "Model memory estimator";
    F§4): the load size ``P x bytes(dtype)`` and "Training using Adam" = 4 x the load size ("1x model, 1x
    gradients, 2x optimizer"), bytes. Checked on memory.csv rows 29-31 (idefics-80b: 297.12 / 148.56 / 74.28 GB
    load, 1.16 TB / 594.24 / 297.12 GB Adam; printed GiB as "GB").

    Raises:
        InputError("dtype"): a dtype outside :data:`ACCELERATE_DTYPE_BYTES`.
    """
    if dtype not in ACCELERATE_DTYPE_BYTES:
        raise InputError("dtype", f"unknown dtype {dtype!r}", accepted=", ".join(ACCELERATE_DTYPE_BYTES))
    load = total_params * ACCELERATE_DTYPE_BYTES[dtype]
    return {"load_bytes": load, "training_adam_bytes": 4.0 * load}
