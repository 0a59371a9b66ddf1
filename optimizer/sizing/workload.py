"""The workload record, the replica-sizing record and their validation (part of :mod:`optimizer.sizing`).

:class:`Workload` is one ML workload to size (task, model, precision, lengths, demand, training and serving options);
:func:`validate_workload` checks its fields and names the first bad one; :class:`ReplicaSizing` is what sizing answers
for one replica on one GPU model. Also here: the task and precision names, the ZeRO and LoRA constants, the serving
request lengths and latency targets a workload implies, and the LoRA adapter parameter count its validation needs.

Formulas and constants come from ``shared/FORMULAS.md`` (section numbers cited as "F§n") and the papers it cites.
No pandas here (this module is imported by every ``gpuopt`` command): plain floats only.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from gpuopt.kernel.errors import InputError
from optimizer.sizing.specs import ModelSpec

GIB = 2**30

TASKS = ("serve", "train", "finetune", "lora")
#: Tasks sized as training (tokens to process, FLOPs, GPU-hours); "lora" trains adapters on a frozen base.
TRAINING_TASKS = ("train", "finetune", "lora")
#: Tasks that train every parameter (mixed-precision Adam on all weights).
FULL_TRAINING_TASKS = ("train", "finetune")

#: Bytes per parameter of the served weights (F§4, Transformer Math 101). int8/int4 are weight-only
#: quantization (GPTQ/AWQ/bitsandbytes style): matmuls and the KV cache stay in 16-bit.
PRECISION_BYTES: dict[str, float] = {"fp32": 4.0, "bf16": 2.0, "fp16": 2.0, "int8": 1.0, "int4": 0.5}

#: Training is mixed precision: 16-bit weights and gradients, fp32 Adam states (ZeRO paper's K = 12).
TRAINING_PRECISIONS = ("bf16", "fp16", "fp8")
ZERO_K = 12  # fp32 master weights + momentum + variance, bytes/param (Rajbhandari et al. 2020, arXiv 1910.02054)
ZERO_STAGES = (0, 1, 2, 3)

# ----------------------------------------------------------------------------------------------- LoRA / QLoRA
#: LoRA (Hu et al. 2021, arXiv 2106.09685) target matrices, by the short name of the projection they adapt:
#: attention q (h -> a*d), k and v (h -> kv*d), o (a*d -> h); MLP gate and up (h -> I), down (I -> h). HF module
#: names (``q_proj`` ... ``down_proj``) are accepted too.
LORA_TARGETS = ("q", "k", "v", "o", "gate", "up", "down")
LORA_MAX_RANK = 4096
#: Frozen-base precisions for task "lora": 16-bit LoRA, or a quantized base (int8: LLM.int8; int4: QLoRA NF4).
LORA_PRECISIONS = ("bf16", "fp16", "int8", "int4")
#: Bytes per trainable adapter parameter: bf16 weight 2 + bf16 gradient 2 + fp32 Adam states K = 12 (ZeRO paper's
#: mixed-precision Adam, Rajbhandari et al. 2020; F§4 "LoRA/QLoRA: ... + 16 B/param on the adapter parameters").
LORA_ADAPTER_BYTES_PER_PARAM = 2 + 2 + ZERO_K
#: QLoRA base weights, bytes/param: NF4 4 bits + quantization constants with double quantization, 8/64 + 32/(64*256)
#: = 0.127 bits/param (one 8-bit absmax per 64-weight block, one fp32 constant per 256 blocks; Dettmers et al. 2023,
#: "QLoRA", arXiv 2305.14314, section 3 "Double Quantization" -- recalled from the paper): (4 + 0.127) / 8 = 0.516.
QLORA_NF4_BYTES_PER_PARAM = (4 + 8 / 64 + 32 / (64 * 256)) / 8
#: Frozen-base bytes/param for LoRA, by precision. int8 = LLM.int8 (bitsandbytes) 1 B; its per-row scales are
#: negligible. For int8/int4 only the linear layers are quantized: the input embedding and the output head stay
#: 16-bit (bitsandbytes replaces nn.Linear modules only and transformers keeps lm_head out of the conversion).
LORA_BASE_BYTES: dict[str, float] = {"bf16": 2.0, "fp16": 2.0, "int8": 1.0, "int4": QLORA_NF4_BYTES_PER_PARAM}
#: LoRA training FLOPs per active parameter per token (DERIVED): forward 2N + backward through the frozen weights for
#: the activation gradients 2N, no weight gradients (Transformer Math 101: backward ~ 4N = 2N activation gradients
#: + 2N weight gradients). Full training is 6.
LORA_FLOPS_PER_PARAM_TOKEN = 4.0

#: Default tokens per sequence when ``context_tokens`` is not given: min(model max_context, 4096).
DEFAULT_CONTEXT = 4096

#: Fraction of a GPU's memory a replica may fill. vLLM's ``--gpu-memory-utilization`` default is 0.9 (vLLM engine
#: arguments docs); the rest is left for the CUDA context, NCCL buffers and allocator fragmentation. The same 0.9
#: is used for training (chosen to match; PyTorch reserves comparable amounts, not a published constant).
USABLE_FRACTION = 0.90

#: Default MFU (model FLOPs / peak dense BF16 FLOPs) per GPU class, used for training and for the compute bound of
#: decode. Published training MFU: Megatron-LM on A100-80GB 41.5-56.3% (README table), PaLM 46.2% (Chowdhery et
#: al. 2022), end-to-end range ~35-64% (F§3). Chosen conservatively below those tuned, large-scale runs: 0.40 on
#: NVLink/fabric datacenter GPUs; 0.35 on PCIe datacenter cards; 0.30 on GeForce cards (no published MFU table;
#: lower clocks under sustained load and less tuned stacks -- an assumption, not a measurement).
DEFAULT_MFU: dict[str, float] = {"datacenter_nvlink": 0.40, "datacenter_pcie": 0.35, "consumer": 0.30}


@dataclass(frozen=True)
class Workload:
    """One ML workload to size.

    Attributes:
        task: ``"serve"``, ``"train"`` (pre-training), ``"finetune"`` (full fine-tune; sized like train) or
            ``"lora"`` (LoRA / QLoRA adapters on a frozen base).
        model: the architecture (``optimizer.sizing.specs.load_model`` / ``model_from_params``).
        precision: serving weight precision, one of ``PRECISION_BYTES``; train/finetune must be ``bf16``/``fp16``
            (mixed precision with fp32 Adam states); lora: the frozen base's, one of ``LORA_PRECISIONS``.
        context_tokens: serving: the context window the engine is started with (vLLM ``max_model_len``): the
            replica must hold one sequence of that many tokens in its KV cache, and requests fit in it; it is not
            the request length (``input_tokens``/``output_tokens``; issue 27). Training: sequence length. None:
            serving, the requests' own length; training ``min(model.max_context, 4096)``. Must not exceed
            ``model.max_context``.
        concurrency: serving: sequences decoded together per replica (the decode batch), >= 1, or None (default):
            the largest batch that fits memory and the latency targets.
        tokens_per_second: serving demand, generated tokens/s for the whole fleet (used by the planner; >= 0).
        tokens: train/finetune/lora: tokens to process (required, > 0).
        deadline_hours: wall-clock limit (used by the planner; > 0).
        zero_stage: ZeRO stage 0..3 over the data-parallel GPUs; None (default): the framework's (Megatron's
            distributed optimizer 1, FSDP/DeepSpeed 3; LoRA 3).
        micro_batch_size: training sequences per GPU per micro-batch, >= 1; None: searched (LoRA: 1).
        activation_recompute: full activation checkpointing (store only each layer's input); None: searched
            (LoRA: True).
        mfu: the user's measured MFU (0 < mfu <= 1), replacing the training model's throughput (train/finetune) or
            ``DEFAULT_MFU`` (lora).
        framework: train/finetune: ``megatron``, ``fsdp`` or ``deepspeed`` (:mod:`optimizer.sizing.training`); None: by
            task (:func:`training_framework`).
        optimizer: ``adam`` (default), ``adam8bit``, ``adafactor``, ``sgd``
            (:data:`optimizer.sizing.training.OPTIMIZERS`).
        offload: ``none`` (default), ``optimizer`` (ZeRO-Offload to CPU memory) or ``params`` (stage 3 only).
        global_batch_tokens: tokens per optimizer step; None: 4M (Llama 2's), rounded to whole micro-batches.
        lora_rank: task "lora": adapter rank r, 1..4096 (ignored by other tasks).
        lora_targets: task "lora": matrices that get adapters, from ``LORA_TARGETS`` (or the HF ``*_proj`` names);
            default all seven (ignored by other tasks).

    Serving (issue 10; :mod:`optimizer.sizing.serving`):
        engine: ``vllm`` (default), ``sglang`` or ``tensorrt-llm``: its memory share, batching caps and KV policy.
        input_tokens, output_tokens: mean prompt and generated tokens per request (default 1024 and 128, vLLM
            ``benchmark_serving``'s random-dataset lengths, whatever ``context_tokens``, the window, says).
        scenario: ``chat`` (default: p99 TTFT <= 2 s, TPOT <= 50 ms, a chat product's pace, issue 26),
            ``server`` (2 s, 200 ms, MLPerf's server limits), ``interactive`` (450 ms, 40 ms) or ``offline`` (no
            target: the largest batch that fits); sources: :data:`optimizer.sizing.serving.SCENARIOS`.
        ttft_slo_ms, tpot_slo_ms: p99 targets overriding the scenario's.
        request_rate: demand in requests/s (the fleet's tokens/s = rate x output_tokens); exclusive with
            tokens_per_second.
        concurrency: sequences per replica; None (default) = the largest batch that fits the KV cache and meets the
            targets.
        precision_options: precisions the planner may choose from per GPU (empty: ``precision`` only).
        measured: an :class:`optimizer.sizing.serving.Measurements` of the user's own benchmark, or None.
        prefix_cache_hit_rate: serve: share of input tokens served from the engine's prefix cache (vLLM automatic
            prefix caching, SGLang RadixAttention), 0 <= h < 1: their prefill is not recomputed.
        speculative_tokens, acceptance_rate: serve: speculative decoding -- ``k`` draft tokens proposed per step,
            each accepted with probability ``acceptance_rate`` (the user's assumption; required with k > 0).
        disaggregate: serve: ``off`` (default), ``on`` or ``auto`` -- prefill and decode on separate replicas
            (:mod:`optimizer.sizing.disaggregated`).
        serve_phase: serve: ``prefill`` or ``decode`` -- size only that pool of a disaggregated deployment
            (:func:`optimizer.sizing.disaggregated.pool_sizing`; the planner's split of a workload into pools that
            may run on different GPU types, gpuopt.phase_mix); None (default): the whole service.
        length_mix: serve: a trace's mix of request sizes, ((share of requests, input, output), ...) per
            prompt-length range (:mod:`optimizer.sizing.buckets`); replicas are sized for the mix, not the mean.

    Task ``"lora"`` fine-tunes low-rank adapters on a frozen base model; with ``precision="int4"`` it is QLoRA
    (4-bit NF4 base weights), with ``"int8"`` an 8-bit base, with ``"bf16"``/``"fp16"`` plain LoRA.
    """

    task: str
    model: ModelSpec
    precision: str = "bf16"
    context_tokens: int | None = None
    concurrency: int | None = None
    tokens_per_second: float | None = None
    tokens: float | None = None
    deadline_hours: float | None = None
    zero_stage: int | None = None
    micro_batch_size: int | None = None
    activation_recompute: bool | None = None
    mfu: float | None = None
    lora_rank: int = 16
    lora_targets: tuple[str, ...] = LORA_TARGETS
    engine: str = "vllm"
    input_tokens: int | None = None
    output_tokens: int | None = None
    scenario: str = "chat"
    ttft_slo_ms: float | None = None
    tpot_slo_ms: float | None = None
    request_rate: float | None = None
    precision_options: tuple[str, ...] = ()
    measured: Any = None
    framework: str | None = None
    optimizer: str = "adam"
    offload: str = "none"
    global_batch_tokens: float | None = None
    prefix_cache_hit_rate: float = 0.0
    speculative_tokens: int = 0
    acceptance_rate: float | None = None
    disaggregate: str = "off"
    length_mix: tuple = ()
    serve_phase: str | None = None


def lora_zero_stage(w: Workload) -> int:
    """The ZeRO stage of a LoRA replica: the workload's, else 3."""
    return 3 if w.zero_stage is None else w.zero_stage


def lora_defaults(w: Workload) -> Workload:
    """A LoRA workload with its unset training options at their LoRA defaults: ZeRO-3, micro-batch 1, full
    activation recompute (the sizing of LoRA replicas keeps the ZeRO-paper model of issue 5)."""
    from dataclasses import replace

    return replace(w, zero_stage=lora_zero_stage(w), micro_batch_size=w.micro_batch_size or 1,
                   activation_recompute=True if w.activation_recompute is None else w.activation_recompute)


def training_framework(w: Workload) -> str:
    """The framework family a training workload is sized for: the workload's, else ``megatron`` for pre-training
    (task train: the stack of the published large-scale runs, NeMo / Megatron-Core) and ``fsdp`` for full
    fine-tuning (task finetune: PyTorch FSDP, what HF Trainer / accelerate / torchtune run)."""
    if w.framework:
        return w.framework
    return "megatron" if w.task == "train" else "fsdp"


@dataclass(frozen=True)
class ReplicaSizing:
    """Memory and throughput of one replica of a workload on ``gpus_per_replica`` GPUs of ``gpu_model``.

    Attributes:
        task: the workload's task.
        gpu_model: canonical GPU name.
        gpus_per_replica: GPUs the replica spans; a float: 0 < g <= 1 is a share of one GPU (fractional-GPU
            instances), otherwise a whole number.
        memory_gib_per_replica: everything the replica needs, summed over its GPUs, GiB.
        memory_gib_per_gpu: what the most loaded GPU needs, GiB (for g <= 1: the whole replica).
        usable_gib_per_gpu: memory the replica may fill on each GPU: ``memory_gib x min(g, 1) x USABLE_FRACTION``.
        fits: ``memory_gib_per_gpu <= usable_gib_per_gpu``.
        breakdown_gib: per replica, GiB: weights, kv_cache, gradients, optimizer_states, activations, overhead;
            task "lora" adds adapter_weights (weights = the frozen base, gradients/optimizer_states = the adapters').
        tokens_per_second_per_replica: serve: generated tokens/s of the whole decode batch; train: tokens/s.
        flops_per_second_per_replica: train/finetune/lora: effective model FLOP/s after MFU and scaling; serve: None.
        assumptions: the constants used, each with its source.
        tensor_parallel: serve: GPUs one layer is split over (inside one instance: one NVLink or PCIe domain);
            1 for a share of one GPU. Train/finetune: the job's layout (``training_layout`` has it all); LoRA: 1.
        pipeline_parallel: serve: pipeline stages, each on its own instance with ``1/pipeline_parallel`` of the
            layers (``gpus_per_replica = tensor_parallel x pipeline_parallel``); 1 otherwise.
        time_per_output_token_ms: serve: mean time between two tokens of one sequence (TPOT), ms: one decode
            iteration with the prefill work it carries (optimizer.sizing.serving); None for training.
        ttft_ms, concurrency, precision, engine, input_tokens, output_tokens, ttft_target_ms, tpot_target_ms,
            estimate_source, kv_capacity_sequences, meets_targets: serve only (None otherwise): mean time to first token (ms), the
            batch, the serving precision and engine, the request lengths, the p99 targets (None: none), where the
            numbers come from (the model, or the user's measurement), how many sequences the KV cache holds, and
            whether the batch meets the targets. ``fits`` is False for a serving replica whose weights do not fit or
            that misses the targets (at every batch, or at the given concurrency).
        request_rate, utilization: serve with latency targets (issue 27): the replica is sized at its operating
            point -- ``request_rate`` requests/s (Poisson) is the highest rate whose p99 TTFT (with queueing) and
            TPOT meet the targets, ``utilization`` its share of the saturation rate; tokens/s = rate x output
            tokens. None offline (sized at saturation) or at a given concurrency.
        disaggregated: a disaggregated unit (prefill and decode replicas, :mod:`optimizer.sizing.disaggregated`):
            its split as a dict; the sizing is then of the whole unit. None for a co-located replica.
    """

    task: str
    gpu_model: str
    gpus_per_replica: float
    memory_gib_per_replica: float
    memory_gib_per_gpu: float
    usable_gib_per_gpu: float
    fits: bool
    breakdown_gib: dict[str, float]
    tokens_per_second_per_replica: float
    flops_per_second_per_replica: float | None
    assumptions: tuple[str, ...]
    tensor_parallel: int = 1
    pipeline_parallel: int = 1
    time_per_output_token_ms: float | None = None
    ttft_ms: float | None = None
    concurrency: int | None = None
    precision: str | None = None
    engine: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    ttft_target_ms: float | None = None
    tpot_target_ms: float | None = None
    estimate_source: str | None = None
    kv_capacity_sequences: int | None = None
    meets_targets: bool | None = None
    request_rate: float | None = None
    utilization: float | None = None
    disaggregated: dict | None = None
    # train/finetune (issue 11, optimizer.sizing.training): the parallel layout, MFU, step time (s), global batch
    # (tokens), goodput (on-demand and spot; optimizer.sizing.goodput) and the GPU count the throughput is for (job
    # scale)
    training_layout: dict | None = None
    mfu: float | None = None
    step_time_s: float | None = None
    global_batch_tokens: float | None = None
    goodput: float | None = None
    goodput_spot: float | None = None
    job_gpus: int | None = None
    framework: str | None = None


# ----------------------------------------------------------------------------------------------- validation


def is_int(x: object) -> bool:
    """A whole number (``int``, not ``bool``)."""
    return isinstance(x, int) and not isinstance(x, bool)


def is_number(x: object) -> bool:
    """A finite ``int`` or ``float``, not ``bool``."""
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def effective_context(w: Workload) -> int:
    """Tokens per sequence the workload uses: ``w.context_tokens`` or ``min(model.max_context, 4096)``."""
    if w.context_tokens is None:
        return min(w.model.max_context, DEFAULT_CONTEXT)
    return w.context_tokens


def validate_workload(w: Workload) -> None:
    """Check a workload's fields; raise on the first bad one.

    Context longer than the model's ``max_context`` is rejected (not clamped): the model was not trained on
    longer sequences, and silently sizing a shorter context would under-size the replica. Estimated models
    (``--params``) have max_context 131072.

    Task "lora" also checks ``lora_rank`` (whole number 1..4096) and ``lora_targets`` (a non-empty list of
    ``LORA_TARGETS`` names, no repeats, at least one present in the model: Falcon and GPT-NeoX have no ``gate``);
    other tasks ignore the two fields. Its precision is the frozen base's: ``LORA_PRECISIONS``.

    Raises:
        InputError(field): field is one of task, model, precision, context_tokens, concurrency,
            tokens_per_second, tokens, deadline_hours, zero_stage, micro_batch_size, activation_recompute, mfu,
            lora_rank, lora_targets; the error lists the accepted values.
    """
    if w.task not in TASKS:
        raise InputError("task", f"unknown task {w.task!r}", accepted=", ".join(TASKS))
    if not isinstance(w.model, ModelSpec):
        raise InputError("model", "not a ModelSpec", accepted="optimizer.sizing.specs.load_model(...) or model_from_params(...)")
    if w.task == "serve":
        from optimizer.sizing.serving import SERVE_PRECISIONS

        if w.precision not in SERVE_PRECISIONS:
            raise InputError("precision", f"unknown serving precision {w.precision!r}",
                             accepted=", ".join(SERVE_PRECISIONS))
    elif w.task not in FULL_TRAINING_TASKS and w.precision not in PRECISION_BYTES:
        raise InputError("precision", f"unknown precision {w.precision!r}", accepted=", ".join(PRECISION_BYTES))
    training = w.task in TRAINING_TASKS
    if w.task == "lora" and w.precision not in LORA_PRECISIONS:
        raise InputError(
            "precision",
            f"lora keeps the frozen base weights in 16-bit, int8 or int4 (QLoRA), not {w.precision!r}",
            accepted=", ".join(LORA_PRECISIONS),
        )
    if w.task in FULL_TRAINING_TASKS and w.precision not in TRAINING_PRECISIONS:
        raise InputError(
            "precision",
            f"{w.task} is sized as mixed-precision training (16-bit weights, fp32 optimizer states; fp8 matmuls "
            f"with --precision fp8), not {w.precision!r}",
            accepted=", ".join(TRAINING_PRECISIONS),
        )
    if w.context_tokens is not None:
        if not is_int(w.context_tokens) or w.context_tokens <= 0:
            raise InputError("context_tokens", f"must be a whole number > 0, got {w.context_tokens!r}",
                             accepted=f"1..{w.model.max_context}")
        if w.context_tokens > w.model.max_context:
            raise InputError("context_tokens",
                             f"{w.context_tokens} exceeds {w.model.name}'s max_context {w.model.max_context}",
                             accepted=f"1..{w.model.max_context}")
    if w.concurrency is not None and (not is_int(w.concurrency) or w.concurrency < 1):
        raise InputError("concurrency", f"must be a whole number >= 1, got {w.concurrency!r}", accepted=">= 1")
    if w.tokens_per_second is not None and (not is_number(w.tokens_per_second) or w.tokens_per_second < 0):
        raise InputError("tokens_per_second", f"must be a number >= 0, got {w.tokens_per_second!r}", accepted=">= 0")
    if training:
        if w.tokens is None:
            raise InputError("tokens", f"{w.task} needs the number of tokens to process", accepted="> 0, e.g. 2e12")
        if not is_number(w.tokens) or w.tokens <= 0:
            raise InputError("tokens", f"must be a number > 0, got {w.tokens!r}", accepted="> 0, e.g. 2e12")
    elif w.tokens is not None and (not is_number(w.tokens) or w.tokens < 0):
        raise InputError("tokens", f"must be a number >= 0, got {w.tokens!r}", accepted=">= 0")
    if w.deadline_hours is not None and (not is_number(w.deadline_hours) or w.deadline_hours <= 0):
        raise InputError("deadline_hours", f"must be a number > 0, got {w.deadline_hours!r}", accepted="> 0")
    if w.zero_stage is not None and (not is_int(w.zero_stage) or w.zero_stage not in ZERO_STAGES):
        raise InputError("zero_stage", f"unknown ZeRO stage {w.zero_stage!r}", accepted="0, 1, 2, 3")
    if w.micro_batch_size is not None and (not is_int(w.micro_batch_size) or w.micro_batch_size < 1):
        raise InputError("micro_batch_size", f"must be a whole number >= 1, got {w.micro_batch_size!r}",
                         accepted=">= 1")
    from optimizer.sizing.training import FRAMEWORKS, OFFLOADS, OPTIMIZERS

    if w.framework is not None and w.framework not in FRAMEWORKS:
        raise InputError("framework", f"unknown training framework {w.framework!r}", accepted=", ".join(FRAMEWORKS))
    if w.optimizer not in OPTIMIZERS:
        raise InputError("optimizer", f"unknown optimizer {w.optimizer!r}", accepted=", ".join(OPTIMIZERS))
    if w.offload not in OFFLOADS:
        raise InputError("offload", f"unknown offload {w.offload!r}", accepted=", ".join(OFFLOADS))
    if w.offload == "params" and w.zero_stage not in (None, 3):
        raise InputError("offload", "parameters are offloaded only with ZeRO stage 3", accepted="none, optimizer")
    if w.global_batch_tokens is not None and (not is_number(w.global_batch_tokens) or w.global_batch_tokens <= 0):
        raise InputError("global_batch_tokens", f"must be a number > 0, got {w.global_batch_tokens!r}",
                         accepted="> 0, e.g. 4194304")
    if w.activation_recompute is not None and not isinstance(w.activation_recompute, bool):
        raise InputError("activation_recompute", f"must be true or false, got {w.activation_recompute!r}",
                         accepted="true, false")
    if w.mfu is not None and (not is_number(w.mfu) or not 0 < w.mfu <= 1):
        raise InputError("mfu", f"must be in (0, 1], got {w.mfu!r}", accepted="0 < mfu <= 1, e.g. 0.4")
    if w.task == "serve":
        _validate_serving(w)
    if w.task == "lora":
        targets = check_lora_targets(w.lora_rank, w.lora_targets)
        if lora_adapter_params(w.model, w.lora_rank, targets) == 0:
            present = [t for t in LORA_TARGETS if t != "gate" or w.model.gated_mlp]
            raise InputError("lora_targets", f"{w.model.name} has none of {', '.join(targets)} (2-matrix MLP: no gate)",
                             accepted=", ".join(present))


#: Default mean prompt and output tokens per request: vLLM ``benchmarks/benchmark_serving.py`` random dataset
#: defaults ``--random-input-len 1024 --random-output-len 128``.
DEFAULT_INPUT_TOKENS = 1024
DEFAULT_OUTPUT_TOKENS = 128


def output_length(output_tokens: int | None, input_tokens: int | None = None,
                  context_tokens: int | None = None) -> int:
    """Mean output tokens per request: as given, else :data:`DEFAULT_OUTPUT_TOKENS`. The context window
    (``context_tokens``) does not set it (issue 27: users mean the window, vLLM's ``max_model_len``, not the
    request); the other arguments are kept for callers that pass them."""
    return int(output_tokens) if output_tokens is not None else DEFAULT_OUTPUT_TOKENS


def serve_lengths(w: Workload) -> tuple[int, int]:
    """Mean (input, output) tokens per request of a serving workload: as given, else the defaults 1024 / 128
    (vLLM ``benchmark_serving``'s random dataset). ``context_tokens`` is the window, not the request (issue 27)."""
    inp = w.input_tokens if w.input_tokens is not None else DEFAULT_INPUT_TOKENS
    return int(inp), output_length(w.output_tokens)


def latency_targets(w: Workload) -> tuple[float | None, float | None]:
    """The p99 (TTFT ms, TPOT ms) a serving replica must meet: the explicit targets, else the scenario's
    (:data:`optimizer.sizing.serving.SCENARIOS`: chat 2,000 / 50 ms (default), server 2,000 / 200 ms, interactive
    450 / 40 ms, offline none)."""
    from optimizer.sizing.serving import SCENARIOS

    ttft, tpot = SCENARIOS.get(w.scenario, (None, None))
    return (w.ttft_slo_ms if w.ttft_slo_ms is not None else ttft,
            w.tpot_slo_ms if w.tpot_slo_ms is not None else tpot)


def _validate_serving(w: Workload) -> None:
    """The serving fields of :func:`validate_workload` (precision, engine, scenario, lengths, targets, rate)."""
    from optimizer.sizing.serving import SCENARIOS, SERVE_PRECISIONS, load_engine

    if w.precision not in SERVE_PRECISIONS:
        raise InputError("precision", f"unknown serving precision {w.precision!r}", accepted=", ".join(SERVE_PRECISIONS))
    opts = w.precision_options
    if not isinstance(opts, (tuple, list)) or any(p not in SERVE_PRECISIONS for p in opts):
        raise InputError("precision", f"unknown serving precision in {list(opts)!r}", accepted=", ".join(SERVE_PRECISIONS))
    if not isinstance(w.engine, str):
        raise InputError("engine", f"must be a name, got {w.engine!r}", accepted="vllm, vllm-v0, sglang, tensorrt-llm")
    load_engine(w.engine)
    if not isinstance(w.scenario, str) or w.scenario not in SCENARIOS:
        raise InputError("scenario", f"unknown scenario {w.scenario!r}", accepted=", ".join(SCENARIOS))
    for name in ("input_tokens", "output_tokens"):
        v = getattr(w, name)
        if v is not None and (not is_int(v) or v < 1):
            raise InputError(name, f"must be a whole number >= 1, got {v!r}", accepted=">= 1")
    for name in ("ttft_slo_ms", "tpot_slo_ms"):
        v = getattr(w, name)
        if v is not None and (not is_number(v) or v <= 0):
            raise InputError(name, f"must be a number of milliseconds > 0, got {v!r}", accepted="> 0, e.g. 2000")
    if w.request_rate is not None and (not is_number(w.request_rate) or w.request_rate <= 0):
        raise InputError("request_rate", f"must be a number of requests/s > 0, got {w.request_rate!r}",
                         accepted="> 0 (as recommend takes it)")
    h = w.prefix_cache_hit_rate
    if not is_number(h) or not 0.0 <= h < 1.0:
        raise InputError("prefix_cache_hit_rate", f"must be a share of input tokens, got {h!r}", accepted="0 <= x < 1")
    k = w.speculative_tokens
    if not is_int(k) or not 0 <= k <= 16:
        raise InputError("speculative_tokens", f"must be a whole number of draft tokens per step, got {k!r}",
                         accepted="0..16 (0: no speculative decoding)")
    a = w.acceptance_rate
    if k > 0 and a is None:
        raise InputError("acceptance_rate", "speculative decoding needs the share of draft tokens the target model "
                                            "accepts (your measurement or assumption)", accepted="0 < x < 1")
    if a is not None and (not is_number(a) or not 0.0 < a < 1.0):
        raise InputError("acceptance_rate", f"must be a probability, got {a!r}", accepted="0 < x < 1")
    if a is not None and k == 0:
        raise InputError("acceptance_rate", "is an option of speculative decoding",
                         accepted="with speculative_tokens >= 1")
    from optimizer.sizing.serving import DISAGGREGATE_MODES

    if w.disaggregate not in DISAGGREGATE_MODES:
        raise InputError("disaggregate", f"unknown mode {w.disaggregate!r}", accepted=", ".join(DISAGGREGATE_MODES))
    if w.serve_phase not in (None, "prefill", "decode"):
        raise InputError("serve_phase", f"unknown pool {w.serve_phase!r}", accepted="prefill, decode")
    inp, out = serve_lengths(w)
    if w.context_tokens is not None and inp + out > w.context_tokens:
        raise InputError("context_tokens", f"the {w.context_tokens}-token window does not hold a request of "
                                           f"{inp} input + {out} output tokens (--context is the window, vLLM's "
                                           "max_model_len; the request lengths are --input-tokens/--output-tokens)",
                         accepted=f">= {inp + out}")
    if inp + out > w.model.max_context:
        raise InputError("input_tokens", f"input + output tokens {inp + out} exceed {w.model.name}'s max_context "
                                         f"{w.model.max_context}", accepted=f"input + output <= {w.model.max_context}")


def with_request_rate(w: Workload) -> Workload:
    """``w`` with its demand in output tokens/s: ``request_rate x output_tokens`` when a request rate is given.

    Raises:
        InputError("request_rate"): both a request rate and tokens/s are given.
    """
    if w.task != "serve" or w.request_rate is None:
        return w
    if w.tokens_per_second is not None:
        raise InputError("request_rate", "give the demand as requests/s or as tokens/s, not both",
                         accepted="--request-rate or --tokens-per-second")
    from dataclasses import replace

    return replace(w, tokens_per_second=w.request_rate * serve_lengths(w)[1])


_LORA_ACCEPTED = ", ".join(LORA_TARGETS) + " (or q_proj, k_proj, ... down_proj)"


def check_lora_targets(rank: object, targets: object) -> tuple[str, ...]:
    """Check a LoRA rank and target list; return the targets as ``LORA_TARGETS`` short names, in the given order.

    Raises:
        InputError("lora_rank"): not a whole number in 1..LORA_MAX_RANK.
        InputError("lora_targets"): not a list of strings, empty, an unknown name or a repeated one.
    """
    if not is_int(rank) or not 1 <= rank <= LORA_MAX_RANK:
        raise InputError("lora_rank", f"must be a whole number in 1..{LORA_MAX_RANK}, got {rank!r}",
                         accepted=f"1..{LORA_MAX_RANK}, e.g. 8, 16, 64")
    if isinstance(targets, str) or not isinstance(targets, (tuple, list)) or not targets:
        raise InputError("lora_targets", f"must be a non-empty list of target names, got {targets!r}",
                         accepted=_LORA_ACCEPTED)
    out: list[str] = []
    for t in targets:
        key = t.strip().lower() if isinstance(t, str) else t
        if isinstance(key, str) and key.endswith("_proj"):
            key = key[: -len("_proj")]
        if key not in LORA_TARGETS:
            raise InputError("lora_targets", f"unknown LoRA target {t!r}", accepted=_LORA_ACCEPTED)
        if key in out:
            raise InputError("lora_targets", f"LoRA target {t!r} given twice", accepted=_LORA_ACCEPTED)
        out.append(key)
    return tuple(out)


def lora_adapter_params(model: ModelSpec, rank: int = 16, targets: tuple[str, ...] | list[str] = LORA_TARGETS) -> int:
    """Trainable LoRA parameters: ``sum over layers and target matrices of r * (d_in + d_out)``.

    A LoRA adapter on a ``d_in -> d_out`` matrix is ``A`` (r x d_in) and ``B`` (d_out x r) (Hu et al. 2021, arXiv
    2106.09685, section 4.1). Shapes (d = head_dim): q ``h -> a*d``, k and v ``h -> kv*d``, o ``a*d -> h``, gate and
    up ``h -> I``, down ``I -> h``; MLP targets count once per MoE expert (Mixtral: 8 per layer); ``gate`` counts 0
    on a 2-matrix MLP (``model.gated_mlp`` False: Falcon, GPT-NeoX). A fused QKV matrix (Falcon, GPT-NeoX) is
    counted as separate q, k, v projections (PEFT on ``query_key_value`` would have r*(h + (a + 2 kv)*d), a little
    fewer). Example: Llama-2-7B, r = 16, all seven targets: 32 x (4 x 16 x 8192 + 3 x 16 x 15104) = 39,976,960.

    Raises:
        InputError("lora_rank" | "lora_targets") as :func:`validate_workload`.
    """
    targets = check_lora_targets(rank, targets)
    m = model
    h, q_out, kv_out, inter = m.hidden_size, m.heads * m.head_dim, m.kv_heads * m.head_dim, m.intermediate_size
    dims = {"q": (h, q_out), "k": (h, kv_out), "v": (h, kv_out), "o": (q_out, h),
            "gate": (h, inter) if m.gated_mlp else (0, 0), "up": (h, inter), "down": (inter, h)}
    experts = max(1, m.experts)
    per_layer = 0
    for t in targets:
        d_in, d_out = dims[t]
        per_layer += rank * (d_in + d_out) * (experts if t in ("gate", "up", "down") else 1)
    return m.layers * per_layer
