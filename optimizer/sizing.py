"""Sizing: how much GPU memory one replica of a workload needs on a GPU model, and how fast it runs there.

A *replica* is one copy of the model spread over ``gpus`` GPUs of one model: for serving, tensor parallel inside one
instance and, when one instance is too small, pipeline stages across instances (``pipeline_parallel``); for training,
ZeRO data parallel (stage 0-3), across instances only over a cluster fabric. The planner (``optimizer/model.py``)
turns replicas into instances and gives the instances' network (:func:`offer_network`); this module only answers
"does a replica fit on g GPUs of type X laid out so, and what is its throughput?".

Formulas and constants come from ``shared/FORMULAS.md`` (section numbers cited as "F§n") and the papers it cites.
Units: bytes and GiB (2**30 B) for memory, GB/s (1e9 B/s) for bandwidth, FLOP/s, tokens/s, hours.
Every result carries ``assumptions``: the constants used, each with its source.

No pandas here (this module is imported by every ``gpuopt`` command): plain floats only.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from gpuopt.kernel.errors import InputError
from optimizer.specs import GpuSpec, ModelSpec, known_gpus, load_gpu

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

#: GPUs per node when no offer says (``gpuopt estimate``, :data:`DEFAULT_NODE_NETWORK`); a replica of more GPUs spans
#: nodes: its gradient traffic crosses the node network, a serving replica becomes one pipeline stage per node.
GPUS_PER_NODE = 8
#: Node-to-node bandwidth per GPU when no offer says, one direction, GB/s: one 200 Gb/s InfiniBand HDR NIC per GPU
#: (DGX A100 and Azure ND A100 v4: 8 x 200 Gb/s per 8-GPU node). Chosen as typical; AWS p4d has less
#: (4 x 100 Gb/s per node), p5 more (3200 Gb/s): with an offer, its fabric's bandwidth is used (:func:`offer_network`). NCCL runs one ring per NIC, so across nodes the collectives' bus bandwidth is about the
#: node's total, 8 x 25 = 200 GB/s (DERIVED from the busbw definition, F§9).
INTER_NODE_GBPS_PER_GPU = 25.0

# ----------------------------------------------------------------------------------------------- layouts across nodes
#: Latency of one NCCL point-to-point transfer between two nodes, s: NCCL's own cost model for a network step
#: (NVIDIA/nccl src/graph/tuning.cc: ``baseLat`` Ring/Simple 8.4 us + ``hwLat`` NET Ring/Simple 14 us = 22.4 us).
NCCL_NET_STEP_LATENCY_S = (8.4 + 14.0) * 1e-6
#: One-way latency of a small message through the kernel TCP/IP stack, s: "10-30 us" one way (Kentino, "Latency
#: dissection: where every microsecond goes in an AI cluster network"; RDMA/kernel bypass is < 1 us); the upper end.
KERNEL_TCP_ONE_WAY_S = 30e-6
#: Time of one hop between pipeline stages on a cluster fabric, s (DERIVED): vLLM's ``send_tensor_dict`` first sends
#: the tensors' metadata over the CPU (gloo, TCP) group, then the tensors over NCCL (vllm/distributed/parallel_state.py
#: ``GroupCoordinator.send_tensor_dict``): one kernel-TCP message + one NCCL network step = 52.4 us.
CLUSTER_HOP_LATENCY_S = KERNEL_TCP_ONE_WAY_S + NCCL_NET_STEP_LATENCY_S
#: The same on plain Ethernet (DERIVED): NCCL's socket transport goes through the kernel TCP stack too, so one more
#: kernel-TCP one-way time = 82.4 us.
ETHERNET_HOP_LATENCY_S = 2 * KERNEL_TCP_ONE_WAY_S + NCCL_NET_STEP_LATENCY_S
#: Node-to-node bandwidth assumed when an offer's network is unknown (fabric "" and not documented), GB/s: 25 Gbit/s
#: / 8, the slowest documented 8-GPU instance without a cluster fabric (providers.facts DEFAULT_GBPS_BY_FABRIC
#: "ethernet": AWS p3.16xlarge). Used only for pipeline-parallel serving, whose per-token traffic is small.
UNKNOWN_NETWORK_GBPS_PER_NODE = 25.0 / 8.0
#: Values handed from one pipeline stage to the next per token: vLLM's models return
#: ``IntermediateTensors({"hidden_states": ..., "residual": ...})`` on every rank but the last (e.g.
#: vllm/model_executor/models/llama.py), i.e. 2 vectors of ``hidden_size``.
PIPELINE_VALUES_PER_TOKEN_PER_HIDDEN = 2


@dataclass(frozen=True)
class NodeNetwork:
    """The network between the instances (nodes) a replica spans, as sizing uses it.

    Attributes:
        gbps_per_node: node-to-node bandwidth of one instance, one direction, GB/s (10**9 BYTES/s), all the NICs
            that carry GPU traffic (providers.facts.fabric_gbps_per_node). NCCL runs one ring per NIC, so a
            collective across nodes gets about this as its bus bandwidth (F§9, busbw).
        gpus_per_node: GPUs per instance; a replica of more GPUs crosses this network.
        hop_latency_s: fixed time of one point-to-point transfer between two instances, s
            (:data:`CLUSTER_HOP_LATENCY_S` or :data:`ETHERNET_HOP_LATENCY_S`).
        fabric: the offer's ``fabric`` ("efa", "infiniband", "rdma", "tcpxo", "tcpx", "ethernet"; "" unknown).
        cluster: a cluster fabric (every fabric but "ethernet" and unknown): training may span instances over it.
        source: where the bandwidth comes from.
    """

    gbps_per_node: float
    gpus_per_node: int
    hop_latency_s: float
    fabric: str = ""
    cluster: bool = False
    source: str = ""


#: The network assumed when no offer is given (``gpuopt estimate``): 8-GPU nodes, 8 x 200 Gb/s InfiniBand HDR
#: (``GPUS_PER_NODE x INTER_NODE_GBPS_PER_GPU`` = 200 GB/s per node), a cluster fabric -- gpuopt's behaviour before
#: offers carried a fabric.
DEFAULT_NODE_NETWORK = NodeNetwork(
    gbps_per_node=GPUS_PER_NODE * INTER_NODE_GBPS_PER_GPU, gpus_per_node=GPUS_PER_NODE,
    hop_latency_s=CLUSTER_HOP_LATENCY_S, fabric="infiniband", cluster=True,
    source="default: 8 x 200 Gb/s InfiniBand HDR per 8-GPU node (DGX A100, Azure ND A100 v4)")


def offer_network(offer: Mapping[str, Any]) -> NodeNetwork:
    """The network between the instances of one offer (a normalized offer row as a dict).

    * fabric: the offer's ``fabric`` column. A frame without the column (built before it existed) gets
      ``providers.facts.fabric_of(provider, instance_type)``, which is what the price store fills in for such files.
      A missing or empty value is unknown, and unknown is not a cluster fabric.
    * cluster: ``providers.facts.is_cluster_fabric`` (every fabric but "ethernet"; never "").
    * gbps_per_node: ``providers.facts.fabric_gbps_per_node(provider, instance_type, fabric)`` (GB/s, bytes); when
      it knows none (0.0 for an unknown fabric), :data:`UNKNOWN_NETWORK_GBPS_PER_NODE`.
    * hop_latency_s: :data:`CLUSTER_HOP_LATENCY_S` on a cluster fabric, else :data:`ETHERNET_HOP_LATENCY_S`.
    * gpus_per_node: the offer's whole GPUs (``int(gpu_count)``, at least 1).
    """
    from providers.facts import fabric_gbps_per_node, fabric_of, is_cluster_fabric

    provider, itype = str(offer.get("provider") or ""), str(offer.get("instance_type") or "")
    if "fabric" in offer:
        raw = offer.get("fabric")
        fabric = raw.strip().lower() if isinstance(raw, str) else ""
    else:
        fabric = fabric_of(provider, itype)
    cluster = bool(fabric) and is_cluster_fabric(fabric)
    gbps = fabric_gbps_per_node(provider, itype, fabric) if fabric else 0.0
    source = f"{fabric} {gbps * 8:g} Gbit/s per node (providers.facts)"
    if not gbps or gbps <= 0:
        gbps = UNKNOWN_NETWORK_GBPS_PER_NODE
        source = f"network unknown: {gbps * 8:g} Gbit/s assumed (slowest documented 8-GPU instance without a fabric)"
    try:
        per_node = max(1, int(float(offer.get("gpu_count") or 1)))
    except (TypeError, ValueError):
        per_node = 1
    return NodeNetwork(gbps_per_node=float(gbps), gpus_per_node=per_node,
                       hop_latency_s=CLUSTER_HOP_LATENCY_S if cluster else ETHERNET_HOP_LATENCY_S,
                       fabric=fabric, cluster=cluster, source=source)


@dataclass(frozen=True)
class Workload:
    """One ML workload to size.

    Attributes:
        task: ``"serve"``, ``"train"`` (pre-training), ``"finetune"`` (full fine-tune; sized like train) or
            ``"lora"`` (LoRA / QLoRA adapters on a frozen base).
        model: the architecture (``optimizer.specs.load_model`` / ``model_from_params``).
        precision: serving weight precision, one of ``PRECISION_BYTES``; train/finetune must be ``bf16``/``fp16``
            (mixed precision with fp32 Adam states); lora: the frozen base's, one of ``LORA_PRECISIONS``.
        context_tokens: serving: tokens per sequence (prompt + output) kept in the KV cache; training: sequence
            length. None: ``min(model.max_context, 4096)``. Must not exceed ``model.max_context``.
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
        framework: train/finetune: ``megatron``, ``fsdp`` or ``deepspeed`` (:mod:`optimizer.training`); None: by
            task (:func:`training_framework`).
        optimizer: ``adam`` (default), ``adam8bit``, ``adafactor``, ``sgd`` (:data:`optimizer.training.OPTIMIZERS`).
        offload: ``none`` (default), ``optimizer`` (ZeRO-Offload to CPU memory) or ``params`` (stage 3 only).
        global_batch_tokens: tokens per optimizer step; None: 4M (Llama 2's), rounded to whole micro-batches.
        lora_rank: task "lora": adapter rank r, 1..4096 (ignored by other tasks).
        lora_targets: task "lora": matrices that get adapters, from ``LORA_TARGETS`` (or the HF ``*_proj`` names);
            default all seven (ignored by other tasks).

    Serving (issue 10; :mod:`optimizer.serving`):
        engine: ``vllm`` (default), ``sglang`` or ``tensorrt-llm``: its memory share, batching caps and KV policy.
        input_tokens, output_tokens: mean prompt and generated tokens per request (default 1024 and 128, vLLM
            ``benchmark_serving``'s random-dataset lengths; with only ``context_tokens``: output 128, input the rest).
        scenario: ``server`` (default: p99 TTFT <= 2 s, TPOT <= 200 ms, MLPerf's server targets), ``interactive``
            (450 ms, 40 ms) or ``offline`` (no target: the largest batch that fits).
        ttft_slo_ms, tpot_slo_ms: p99 targets overriding the scenario's.
        request_rate: demand in requests/s (the fleet's tokens/s = rate x output_tokens); exclusive with
            tokens_per_second.
        concurrency: sequences per replica; None (default) = the largest batch that fits the KV cache and meets the
            targets.
        precision_options: precisions the planner may choose from per GPU (empty: ``precision`` only).
        measured: an :class:`optimizer.serving.Measurements` of the user's own benchmark, or None.

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
    scenario: str = "server"
    ttft_slo_ms: float | None = None
    tpot_slo_ms: float | None = None
    request_rate: float | None = None
    precision_options: tuple[str, ...] = ()
    measured: Any = None
    framework: str | None = None
    optimizer: str = "adam"
    offload: str = "none"
    global_batch_tokens: float | None = None


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
            iteration with the prefill work it carries (optimizer.serving); None for training.
        ttft_ms, concurrency, precision, engine, input_tokens, output_tokens, ttft_target_ms, tpot_target_ms,
            estimate_source, kv_capacity_sequences, meets_targets: serve only (None otherwise): mean time to first token (ms), the
            batch, the serving precision and engine, the request lengths, the p99 targets (None: none), where the
            numbers come from (the model, or the user's measurement), how many sequences the KV cache holds, and
            whether the batch meets the targets. ``fits`` is False for a serving replica whose weights do not fit or
            that misses the targets (at every batch, or at the given concurrency).
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
    # train/finetune (issue 11, optimizer.training): the parallel layout, MFU, step time (s), global batch (tokens),
    # goodput (on-demand and spot; optimizer.goodput) and the GPU count the throughput is for (job scale)
    training_layout: dict | None = None
    mfu: float | None = None
    step_time_s: float | None = None
    global_batch_tokens: float | None = None
    goodput: float | None = None
    goodput_spot: float | None = None
    job_gpus: int | None = None
    framework: str | None = None


# ----------------------------------------------------------------------------------------------- validation


def _is_int(x: object) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def _is_number(x: object) -> bool:
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
        raise InputError("model", "not a ModelSpec", accepted="optimizer.specs.load_model(...) or model_from_params(...)")
    if w.task == "serve":
        from optimizer.serving import SERVE_PRECISIONS

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
        if not _is_int(w.context_tokens) or w.context_tokens <= 0:
            raise InputError("context_tokens", f"must be a whole number > 0, got {w.context_tokens!r}",
                             accepted=f"1..{w.model.max_context}")
        if w.context_tokens > w.model.max_context:
            raise InputError("context_tokens",
                             f"{w.context_tokens} exceeds {w.model.name}'s max_context {w.model.max_context}",
                             accepted=f"1..{w.model.max_context}")
    if w.concurrency is not None and (not _is_int(w.concurrency) or w.concurrency < 1):
        raise InputError("concurrency", f"must be a whole number >= 1, got {w.concurrency!r}", accepted=">= 1")
    if w.tokens_per_second is not None and (not _is_number(w.tokens_per_second) or w.tokens_per_second < 0):
        raise InputError("tokens_per_second", f"must be a number >= 0, got {w.tokens_per_second!r}", accepted=">= 0")
    if training:
        if w.tokens is None:
            raise InputError("tokens", f"{w.task} needs the number of tokens to process", accepted="> 0, e.g. 2e12")
        if not _is_number(w.tokens) or w.tokens <= 0:
            raise InputError("tokens", f"must be a number > 0, got {w.tokens!r}", accepted="> 0, e.g. 2e12")
    elif w.tokens is not None and (not _is_number(w.tokens) or w.tokens < 0):
        raise InputError("tokens", f"must be a number >= 0, got {w.tokens!r}", accepted=">= 0")
    if w.deadline_hours is not None and (not _is_number(w.deadline_hours) or w.deadline_hours <= 0):
        raise InputError("deadline_hours", f"must be a number > 0, got {w.deadline_hours!r}", accepted="> 0")
    if w.zero_stage is not None and (not _is_int(w.zero_stage) or w.zero_stage not in ZERO_STAGES):
        raise InputError("zero_stage", f"unknown ZeRO stage {w.zero_stage!r}", accepted="0, 1, 2, 3")
    if w.micro_batch_size is not None and (not _is_int(w.micro_batch_size) or w.micro_batch_size < 1):
        raise InputError("micro_batch_size", f"must be a whole number >= 1, got {w.micro_batch_size!r}",
                         accepted=">= 1")
    from optimizer.training import FRAMEWORKS, OFFLOADS, OPTIMIZERS

    if w.framework is not None and w.framework not in FRAMEWORKS:
        raise InputError("framework", f"unknown training framework {w.framework!r}", accepted=", ".join(FRAMEWORKS))
    if w.optimizer not in OPTIMIZERS:
        raise InputError("optimizer", f"unknown optimizer {w.optimizer!r}", accepted=", ".join(OPTIMIZERS))
    if w.offload not in OFFLOADS:
        raise InputError("offload", f"unknown offload {w.offload!r}", accepted=", ".join(OFFLOADS))
    if w.offload == "params" and w.zero_stage not in (None, 3):
        raise InputError("offload", "parameters are offloaded only with ZeRO stage 3", accepted="none, optimizer")
    if w.global_batch_tokens is not None and (not _is_number(w.global_batch_tokens) or w.global_batch_tokens <= 0):
        raise InputError("global_batch_tokens", f"must be a number > 0, got {w.global_batch_tokens!r}",
                         accepted="> 0, e.g. 4194304")
    if w.activation_recompute is not None and not isinstance(w.activation_recompute, bool):
        raise InputError("activation_recompute", f"must be true or false, got {w.activation_recompute!r}",
                         accepted="true, false")
    if w.mfu is not None and (not _is_number(w.mfu) or not 0 < w.mfu <= 1):
        raise InputError("mfu", f"must be in (0, 1], got {w.mfu!r}", accepted="0 < mfu <= 1, e.g. 0.4")
    if w.task == "serve":
        _validate_serving(w)
    if w.task == "lora":
        targets = _lora_targets(w.lora_rank, w.lora_targets)
        if lora_adapter_params(w.model, w.lora_rank, targets) == 0:
            present = [t for t in LORA_TARGETS if t != "gate" or w.model.gated_mlp]
            raise InputError("lora_targets", f"{w.model.name} has none of {', '.join(targets)} (2-matrix MLP: no gate)",
                             accepted=", ".join(present))


#: Default mean prompt and output tokens per request: vLLM ``benchmarks/benchmark_serving.py`` random dataset
#: defaults ``--random-input-len 1024 --random-output-len 128``.
DEFAULT_INPUT_TOKENS = 1024
DEFAULT_OUTPUT_TOKENS = 128


def output_length(output_tokens: int | None, input_tokens: int | None, context_tokens: int | None) -> int:
    """Mean output tokens per request: as given; with only a context, :data:`DEFAULT_OUTPUT_TOKENS` or half the
    context; else :data:`DEFAULT_OUTPUT_TOKENS`."""
    if output_tokens is not None:
        return int(output_tokens)
    if input_tokens is None and context_tokens is not None:
        return max(1, min(DEFAULT_OUTPUT_TOKENS, int(context_tokens) // 2))
    return DEFAULT_OUTPUT_TOKENS


def serve_lengths(w: Workload) -> tuple[int, int]:
    """Mean (input, output) tokens per request of a serving workload: as given; else from ``context_tokens``
    (output :data:`DEFAULT_OUTPUT_TOKENS` or half the context, input the rest); else the defaults 1024 / 128."""
    out = output_length(w.output_tokens, w.input_tokens, w.context_tokens)
    inp = w.input_tokens
    if inp is None:
        inp = max(1, w.context_tokens - out) if w.context_tokens is not None else DEFAULT_INPUT_TOKENS
    return int(inp), int(out)


def latency_targets(w: Workload) -> tuple[float | None, float | None]:
    """The p99 (TTFT ms, TPOT ms) a serving replica must meet: the explicit targets, else the scenario's
    (:data:`optimizer.serving.SCENARIOS`: server 2,000 / 200 ms, interactive 450 / 40 ms, offline none)."""
    from optimizer.serving import SCENARIOS

    ttft, tpot = SCENARIOS.get(w.scenario, (None, None))
    return (w.ttft_slo_ms if w.ttft_slo_ms is not None else ttft,
            w.tpot_slo_ms if w.tpot_slo_ms is not None else tpot)


def _validate_serving(w: Workload) -> None:
    """The serving fields of :func:`validate_workload` (precision, engine, scenario, lengths, targets, rate)."""
    from optimizer.serving import SCENARIOS, SERVE_PRECISIONS, load_engine

    if w.precision not in SERVE_PRECISIONS:
        raise InputError("precision", f"unknown serving precision {w.precision!r}", accepted=", ".join(SERVE_PRECISIONS))
    opts = w.precision_options
    if not isinstance(opts, (tuple, list)) or any(p not in SERVE_PRECISIONS for p in opts):
        raise InputError("precision", f"unknown serving precision in {list(opts)!r}", accepted=", ".join(SERVE_PRECISIONS))
    if not isinstance(w.engine, str):
        raise InputError("engine", f"must be a name, got {w.engine!r}", accepted="vllm, sglang, tensorrt-llm")
    load_engine(w.engine)
    if not isinstance(w.scenario, str) or w.scenario not in SCENARIOS:
        raise InputError("scenario", f"unknown scenario {w.scenario!r}", accepted=", ".join(SCENARIOS))
    for name in ("input_tokens", "output_tokens"):
        v = getattr(w, name)
        if v is not None and (not _is_int(v) or v < 1):
            raise InputError(name, f"must be a whole number >= 1, got {v!r}", accepted=">= 1")
    for name in ("ttft_slo_ms", "tpot_slo_ms"):
        v = getattr(w, name)
        if v is not None and (not _is_number(v) or v <= 0):
            raise InputError(name, f"must be a number of milliseconds > 0, got {v!r}", accepted="> 0, e.g. 2000")
    if w.request_rate is not None and (not _is_number(w.request_rate) or w.request_rate < 0):
        raise InputError("request_rate", f"must be a number of requests/s >= 0, got {w.request_rate!r}",
                         accepted=">= 0")
    if w.context_tokens is not None and w.input_tokens is not None and w.output_tokens is not None \
            and w.context_tokens != w.input_tokens + w.output_tokens:
        raise InputError("context_tokens", f"{w.context_tokens} is not input + output tokens "
                                           f"({w.input_tokens} + {w.output_tokens}): give one or the other",
                         accepted="--context, or --input-tokens and --output-tokens")
    inp, out = serve_lengths(w)
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


def _lora_targets(rank: object, targets: object) -> tuple[str, ...]:
    """Check a LoRA rank and target list; return the targets as ``LORA_TARGETS`` short names, in the given order.

    Raises:
        InputError("lora_rank"): not a whole number in 1..LORA_MAX_RANK.
        InputError("lora_targets"): not a list of strings, empty, an unknown name or a repeated one.
    """
    if not _is_int(rank) or not 1 <= rank <= LORA_MAX_RANK:
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
    targets = _lora_targets(rank, targets)
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


def _embedding_params(m: ModelSpec) -> float:
    """Input embedding + output head parameters: ``V*h`` (tied) or ``2*V*h``."""
    return float(m.vocab_size * m.hidden_size * (1 if m.tied_embeddings else 2))


def lora_base_weight_bytes(model: ModelSpec, precision: str) -> float:
    """Bytes of the frozen base weights of a LoRA run: ``params_total x LORA_BASE_BYTES[precision]`` for 16-bit;
    for int8/int4 the linear weights at 1 / 0.516 B/param (LLM.int8; QLoRA NF4 with double quantization) and the
    embedding and output head (``V*h``, x2 untied) at 2 B/param, as bitsandbytes quantizes nn.Linear layers only.

    Raises:
        InputError("precision"): not one of ``LORA_PRECISIONS``.
    """
    if precision not in LORA_BASE_BYTES:
        raise InputError("precision", f"unknown LoRA base precision {precision!r}", accepted=", ".join(LORA_PRECISIONS))
    bpp = LORA_BASE_BYTES[precision]
    if bpp >= 2.0:
        return model.params_total * bpp
    embed = min(_embedding_params(model), model.params_total)
    return (model.params_total - embed) * bpp + embed * 2.0


def _check_gpus(gpus: float) -> float:
    if not _is_number(gpus) or gpus <= 0 or (gpus > 1 and not float(gpus).is_integer()):
        raise InputError("gpus", f"GPUs per replica must be a share 0 < g <= 1 or a whole number, got {gpus!r}",
                         accepted="0 < g <= 1, or 1, 2, 3, ...")
    return float(gpus)


# ----------------------------------------------------------------------------------------------- formulas


def model_state_bytes_per_gpu(params: float, zero_stage: int, n_gpus: int) -> float:
    """Bytes of model states (16-bit weights + 16-bit gradients + fp32 Adam states) per GPU under ZeRO.

    ZeRO paper (Rajbhandari et al. 2020, arXiv 1910.02054, section 5 / Fig. 1), K = 12, Psi = params,
    N = n_gpus: stage 0 (plain data parallel) ``16 Psi``; stage 1 (P_os) ``4 Psi + 12 Psi / N``;
    stage 2 (P_os+g) ``2 Psi + 14 Psi / N``; stage 3 (P_os+g+p) ``16 Psi / N``.
    Paper's example: Psi = 7.5e9, N = 64 -> 120 / 31.4 / 16.6 / 1.9 GB (decimal).

    Raises:
        InputError("params" | "zero_stage" | "gpus") for params <= 0, a stage outside 0..3, n_gpus < 1.
    """
    return sum(_model_state_parts(params, zero_stage, n_gpus))


def _model_state_parts(params: float, zero_stage: int, n_gpus: int) -> tuple[float, float, float]:
    """(weights, gradients, optimizer states) bytes per GPU; see :func:`model_state_bytes_per_gpu`."""
    if not _is_number(params) or params <= 0:
        raise InputError("params", f"must be > 0, got {params!r}", accepted="> 0")
    if not _is_int(zero_stage) or zero_stage not in ZERO_STAGES:
        raise InputError("zero_stage", f"unknown ZeRO stage {zero_stage!r}", accepted="0, 1, 2, 3")
    if not _is_int(n_gpus) or n_gpus < 1:
        raise InputError("gpus", f"must be a whole number >= 1, got {n_gpus!r}", accepted=">= 1")
    p, n = float(params), n_gpus
    weights = 2 * p / n if zero_stage >= 3 else 2 * p
    grads = 2 * p / n if zero_stage >= 2 else 2 * p
    optim = ZERO_K * p / n if zero_stage >= 1 else ZERO_K * p
    return weights, grads, optim


def _flops_per_param_token(w: Workload) -> float:
    """6 for full training (train/finetune), 4 for LoRA (see :data:`LORA_FLOPS_PER_PARAM_TOKEN`)."""
    return LORA_FLOPS_PER_PARAM_TOKEN if w.task == "lora" else 6.0


def train_flops(w: Workload) -> float:
    """Model FLOPs to process ``w.tokens``: ``6 * N * D`` for train/finetune, ``4 * N * D`` for lora.

    N = active parameters (all parameters for dense models; top-k experts for MoE), D = ``w.tokens``.
    Full training: forward 2ND + backward 4ND (EleutherAI Transformer Math 101; Kaplan et al. 2020, arXiv
    2001.08361). Check: GPT-3 6 x 175e9 x 300e9 = 3.15e23 vs published 3.14e23 (F§1).
    LoRA (DERIVED from Transformer Math 101's split, where the backward's 4ND is 2ND for activation gradients and
    2ND for weight gradients): forward 2ND + activation gradients through the frozen weights 2ND, no weight
    gradients = 4ND. The adapters' own 6 x N_adapter x D is left out (Llama-2-7B, r = 16, all targets: N_adapter =
    0.6% of N, so ~0.9% of 4ND).
    These are model FLOPs: activation recomputation reruns the forward (hardware FLOPs 6ND for LoRA, 8ND for full
    training) and is accounted for by the MFU, not added here (F§3, MFU vs HFU).

    Raises:
        InputError: as :func:`validate_workload`, or ("task") for a serving workload.
    """
    validate_workload(w)
    if w.task not in TRAINING_TASKS:
        raise InputError("task", "training FLOPs are for train/finetune/lora workloads",
                         accepted=", ".join(TRAINING_TASKS))
    return _flops_per_param_token(w) * w.model.params_active * float(w.tokens)


def _peak_flops(gpu: GpuSpec, precision: str) -> tuple[float, str]:
    """Peak dense FLOP/s for the matmuls of a precision, and a note on which datasheet number it is."""
    if precision == "fp32":
        if gpu.fp32_tflops:
            return gpu.fp32_tflops * 1e12, f"FP32 {gpu.fp32_tflops:g} TFLOP/s"
        return gpu.fp16_tflops_dense * 1e12, f"no FP32 figure; BF16 {gpu.fp16_tflops_dense:g} TFLOP/s used"
    return gpu.fp16_tflops_dense * 1e12, f"dense FP16/BF16 tensor {gpu.fp16_tflops_dense:g} TFLOP/s"


def _mfu(w: Workload, gpu: GpuSpec) -> float:
    return w.mfu if w.mfu is not None else DEFAULT_MFU[gpu.gpu_class]


def pipeline_bubble_fraction(stages: int, microbatches: int) -> float:
    """Idle fraction of each stage when ONE batch of m micro-batches runs through p pipeline stages (fill and
    drain): ``(p - 1) / (m + p - 1)`` (GPipe, Huang et al. 2019, arXiv 1811.06965; Megatron-LM writes the same idle
    time against the ideal time as (p - 1)/m, Narayanan et al. 2021, arXiv 2104.04473 s.2.2; F§9). 0 for p = 1.

    Raises:
        InputError("pipeline_parallel" | "microbatches") for a count < 1.
    """
    if not _is_int(stages) or stages < 1:
        raise InputError("pipeline_parallel", f"must be a whole number >= 1, got {stages!r}", accepted=">= 1")
    if not _is_int(microbatches) or microbatches < 1:
        raise InputError("microbatches", f"must be a whole number >= 1, got {microbatches!r}", accepted=">= 1")
    return (stages - 1) / (microbatches + stages - 1)


def pipeline_decode_cycle_s(stage_s: float, hop_s: float, return_s: float, stages: int, microbatches: int) -> float:
    """Continuous decode through a pipeline: the time in which every sequence of the replica gets one token, s.

    One micro-batch's trip is ``p`` stage times, ``p - 1`` hops that carry its activations to the next stage and
    one return hop (the sampled tokens go back to the first stage, where the scheduler is: latency only). Each
    stage serves the ``m`` micro-batches in flight one after the other, so (DERIVED)::

        cycle = max(m x t_stage, p x t_stage + (p - 1) x t_hop + t_return)

    With ``m = p`` in flight -- vLLM's engine keeps ``pipeline_parallel_size`` batches in flight
    (``VllmConfig.max_concurrent_batches``: "PP requires PP-size concurrent batches to fill the pipeline"; one
    scheduler per virtual engine in the V0 engine) -- the stages idle only during the hops. With ``m = 1`` each stage
    idles ``(p - 1)/p`` of the cycle, which is :func:`pipeline_bubble_fraction` at m = 1. ``p = 1``: ``t_stage``.

    Args:
        stage_s: one stage's time for one micro-batch, s. hop_s: one activation hop, s. return_s: the return hop,
        s. stages: p >= 1. microbatches: m >= 1 micro-batches in flight.
    """
    if stages <= 1:
        return stage_s
    return max(microbatches * stage_s, stages * stage_s + (stages - 1) * hop_s + return_s)


def data_parallel_efficiency(w: Workload, gpu: GpuSpec, gpus: float, network: NodeNetwork | None = None) -> float:
    """Training scaling efficiency of a ZeRO replica over ``gpus`` GPUs: ``t_compute / (t_compute + t_comm)``.

    Per optimizer step and GPU (no overlap of communication with compute assumed -- conservative):
    ``t_compute = 6 * N_active * b * s / (peak_bf16 * MFU)`` (F§1, F§3) and
    ``t_comm = c * 2 Psi bytes * (n - 1) / n / link`` where the ring collectives move ``2 (n-1)/n`` x the data
    per GPU (F§9, NCCL busbw) and ZeRO's volume is 2 Psi elements for stages 0-2 and 3 Psi for stage 3 (ZeRO
    paper section 7), i.e. c = 2 or 3 with 16-bit elements. ``link`` = the GPU's one-way GPU-to-GPU bandwidth
    (``GpuSpec.link_gbps_one_way``), capped at the node network's bandwidth ``network.gbps_per_node`` when the
    replica spans more GPUs than one node has (``network.gpus_per_node``): NCCL runs one ring per NIC, so across
    nodes the bus bandwidth is about the node's total (F§9). ``network`` is the offer's fabric
    (:func:`offer_network`, e.g. AWS p4d 4 x 100 Gb/s EFA = 50 GB/s, p5 3,200 Gb/s = 400 GB/s); None =
    :data:`DEFAULT_NODE_NETWORK` (8-GPU nodes, 200 GB/s). 1.0 for g <= 1. Worse on PCIe (32 GB/s) than NVLink
    (300-900 GB/s), and worse over a slower fabric.
    Check: Llama-2-7B on 2T tokens, A100-80GB, defaults -> ~189k GPU-hours vs 184,320 published (Llama 2 paper,
    Touvron et al. 2023, Table 2); Llama-2-70B -> ~2.1M vs 1,720,320 (+22%: Meta's MFU was above our 0.40).

    LoRA: ``t_compute`` with 4 instead of 6; only the adapters have gradients, so the collectives move
    ``c * 2 B * N_adapter`` (c = 2, or 3 for stage 3), plus for ZeRO-3 two all-gathers of the sharded frozen base
    (forward and backward) at its stored size (:func:`lora_base_weight_bytes`).
    """
    if gpus <= 1:
        return 1.0
    w = lora_defaults(w)
    n = gpus
    s = effective_context(w)
    peak, _ = _peak_flops(gpu, w.precision)
    t_compute = _flops_per_param_token(w) * w.model.params_active * w.micro_batch_size * s / (peak * _mfu(w, gpu))
    net = network or DEFAULT_NODE_NETWORK
    link = gpu.link_gbps_one_way
    if n > net.gpus_per_node:
        link = min(link, net.gbps_per_node)
    volume = 3.0 if w.zero_stage == 3 else 2.0
    if w.task == "lora":
        moved = volume * 2.0 * lora_adapter_params(w.model, w.lora_rank, w.lora_targets)
        if w.zero_stage == 3:
            moved += 2.0 * lora_base_weight_bytes(w.model, w.precision)
    else:
        moved = volume * 2.0 * w.model.params_total
    t_comm = moved * (n - 1) / n / (link * 1e9)
    return t_compute / (t_compute + t_comm)


def _activation_bytes_per_gpu(w: Workload) -> tuple[float, str]:
    """Training activation bytes on one GPU (its micro-batch), and the formula used (F§5, Korthikanti et al. 2022)."""
    w = lora_defaults(w)
    m = w.model
    s, b, h, L = effective_context(w), w.micro_batch_size, m.hidden_size, m.layers
    logits = 4.0 * s * b * m.vocab_size  # fp32 logits for the loss (DERIVED; large when V is large)
    if w.activation_recompute:
        stored = 2.0 * s * b * h * L  # full recompute: each layer's 16-bit input (Korthikanti et al. 2022)
        working = 34.0 * s * b * h  # one layer recomputed at a time in backward (flash-attention form)
        note = ("activations (full recompute): 2*s*b*h*L stored layer inputs + 34*s*b*h for the one layer being "
                "recomputed + 4*s*b*V fp32 logits (Korthikanti et al. 2022, arXiv 2205.05198; F§5)")
        return stored + working + logits, note
    note = ("activations (no recompute): 34*s*b*h*L, the Korthikanti et al. 2022 per-layer s*b*h*(34 + 5*a*s/h) "
            "without the 5*a*s/h attention-score term, which FlashAttention does not store; + 4*s*b*V fp32 logits (F§5)")
    return 34.0 * s * b * h * L + logits, note


def _largest_layer_params(m: ModelSpec) -> float:
    """Parameters of the largest single layer: a transformer block or the embedding (V x h)."""
    embed = float(m.vocab_size * m.hidden_size)
    block = max(0.0, (m.params_total - 2 * embed) / m.layers)
    return max(block, embed)


# ----------------------------------------------------------------------------------------------- sizing


def size_replica(w: Workload, gpu: GpuSpec, gpus: float, *, pipeline_parallel: int = 1,
                 network: NodeNetwork | None = None) -> ReplicaSizing:
    """Memory and throughput of one replica of ``w`` spread over ``gpus`` GPUs of type ``gpu``.

    Serving (issue 10; :mod:`optimizer.serving`, fitted on the published measurements of
    ``shared/data/perf/serving.csv`` by ``benchmarks/serving_fit.py``): tensor parallel over the g GPUs of one
    instance (g <= 1: a share of one GPU with that share of its memory, bandwidth and FLOPs), or ``pipeline_parallel``
    p stages of t = g / p GPUs, one instance each (vLLM distributed serving docs: "the tensor parallel size is the
    number of GPUs you want to use in each node, and the pipeline parallel size is the number of nodes"). Per GPU of
    the most loaded stage:

    * weights: the stage's ``ceil(L/p)`` blocks (+ the embedding or the head) at the precision's bytes per parameter
      (embeddings 16-bit), over t; activations: the engine's iteration budget; the KV cache: the engine's memory
      share less the rest, paged (:func:`optimizer.serving.memory_per_gpu`);
    * the batch: ``w.concurrency``, else the largest that fits the KV cache and the engine's caps and meets the
      workload's p99 TTFT/TPOT targets (:func:`latency_targets`; :func:`optimizer.serving.best_point`);
    * TPOT = one decode step (bytes and FLOPs, all-reduces over NVLink or PCIe) + the prefill work it carries;
      with p > 1 stages the engine keeps ``min(p, B)`` micro-batches in flight (vLLM ``max_concurrent_batches =
      pipeline_parallel_size``) and a token takes one trip through every stage: ``max(m t_stage, p t_stage + (p-1)
      t_hop + t_return)``, a hop carrying ``2 x h x 2 B`` per sequence (vLLM's hidden_states + residual) over the
      instances' network at ``network.gbps_per_node`` after ``network.hop_latency_s``; tokens/s = batch / TPOT;
    * ``fits``: the weights fit and some batch meets the targets; the breakdown's kv_cache is what the batch holds.

    ``network`` (:class:`NodeNetwork`, :func:`offer_network`) is the instances' fabric: bandwidth and hop latency
    for pipeline stages, node bandwidth for training replicas of more GPUs than one node has; None =
    :data:`DEFAULT_NODE_NETWORK`.

    Training / fine-tuning (train, finetune; issue 11): :func:`size_training` -- the job on g GPUs laid out by
    :func:`optimizer.training.search` (TP/PP/CP/EP/DP, ZeRO stage, micro-batch, recompute), memory as the frameworks
    count it, step time, MFU and goodput; ``pipeline_parallel`` > 1 fixes its pipeline stages.

    LoRA / QLoRA (task "lora"; same replica layout), per GPU:

    * weights: the frozen base, :func:`lora_base_weight_bytes` (bf16 2 B/param; int8 1; int4 = QLoRA NF4
      0.516 B/param; embeddings and output head 16-bit when quantized), divided by n under ZeRO-3, else replicated;
    * adapter_weights, gradients, optimizer_states: :func:`lora_adapter_params` x (2 + 2 + 12) B, split as
      :func:`model_state_bytes_per_gpu` (F§4 LoRA/QLoRA line);
    * activations as for training (F§5; the adapters' rank-r intermediates are left out);
    * overhead: ZeRO-3 gathers the largest layer at its stored size; a quantized base dequantizes one matrix at
      a time to 16-bit: 2 B x the largest linear matrix (DERIVED from how bitsandbytes runs a matmul);
    * FLOP/s as for training; tokens/s = FLOP/s / (4 N_active) (:func:`train_flops`).

    ``usable_gib_per_gpu = memory_gib x min(g, 1) x 0.9`` (vLLM gpu_memory_utilization default; serving: the
    engine's memory share).

    Args:
        w: a valid workload. gpu: the GPU model. gpus: 0 < g <= 1, or a whole number >= 1.
        pipeline_parallel: serving pipeline stages p (one instance each); g must be a whole multiple of p and p at
            most the model's layers. LoRA replicas are ZeRO data parallel: p must be 1; train/finetune: the job's
            pipeline stages (:func:`size_training`).
        network: the network between instances; None = :data:`DEFAULT_NODE_NETWORK`.

    Returns:
        ReplicaSizing (breakdown in GiB, summed over the replica's GPUs).

    Raises:
        InputError: as :func:`validate_workload`; ("gpus") for a bad GPU count; ("pipeline_parallel") for a bad
        stage count.
    """
    validate_workload(w)
    g = _check_gpus(gpus)
    if w.task in FULL_TRAINING_TASKS:
        return size_training(w, gpu, g, network=network,
                             pipeline_parallel=None if pipeline_parallel == 1 else pipeline_parallel)
    if w.task == "lora":
        w = lora_defaults(w)
    pp = _check_pipeline(w, g, pipeline_parallel)
    net = network or DEFAULT_NODE_NETWORK
    m = w.model
    share = min(g, 1.0)  # share of one GPU's memory and bandwidth each GPU slot gives the replica
    n = max(1, int(g))  # GPUs the model is split over
    peak, peak_note = _peak_flops(gpu, w.precision)
    mfu = _mfu(w, gpu)
    usable = gpu.memory_gib * share * USABLE_FRACTION
    assumptions = [
        f"usable memory = {USABLE_FRACTION:.0%} of the GPU's {gpu.memory_gib:g} GiB (x share {share:g}) "
        "(vLLM --gpu-memory-utilization default 0.9)",
        f"{gpu.name}: {gpu.memory_bandwidth_gbps:g} GB/s, {peak_note}, interconnect {gpu.interconnect} "
        f"({gpu.link_gbps_one_way:g} GB/s one way) ({gpu.source})",
    ]
    keys = ("weights", "kv_cache", "gradients", "optimizer_states", "activations", "overhead")
    if w.task == "lora":
        keys = ("weights", "adapter_weights") + keys[1:]
    parts = dict.fromkeys(keys, 0.0)

    tp_used, tpot_ms, serve_extra, fits_override = 1, None, {}, None
    if w.task == "serve":
        from optimizer import serving as sv

        eng = sv.load_engine(w.engine)
        inp, out = serve_lengths(w)
        tp_used = max(1, int(g / pp))
        if not sv.tp_supported(m, tp_used):
            ok = [t for t in range(1, GPUS_PER_NODE + 1) if sv.tp_supported(m, t)]
            raise InputError("tensor_parallel", f"{m.name}'s {m.heads} attention heads and {m.kv_heads} KV heads do "
                                                f"not split over {tp_used} GPUs", accepted=", ".join(map(str, ok)))
        spec = gpu if g >= 1 else _gpu_share(gpu, g)
        layout = sv.Layout(tp_used, pp)
        ttft_t, tpot_t = latency_targets(w)
        hop = ((net.hop_latency_s, PIPELINE_VALUES_PER_TOKEN_PER_HIDDEN * m.hidden_size * 2.0
                / (net.gbps_per_node * 1e9)) if pp > 1 else (0.0, 0.0))
        corr = w.measured.correction(m, spec, layout, w.precision, eng) if w.measured is not None else None
        pt = sv.best_point(m, spec, layout, w.precision, eng, inp, out, ttft_slo_ms=ttft_t, tpot_slo_ms=tpot_t,
                           concurrency=w.concurrency, hop=hop, scale=corr)
        mem = sv.memory_per_gpu(m, spec, layout, w.precision, eng)
        shown = pt or sv.point(m, spec, layout, w.precision, eng, w.concurrency or 1, inp, out, hop=hop, scale=corr)
        held = sv.tokens_held(eng, inp, out)
        parts["weights"] = mem["weights"]
        parts["activations"] = mem["activations"]
        parts["kv_cache"] = shown.batch * held * mem["kv_per_token"]
        usable = spec.memory_gib * eng.memory_fraction
        meets = pt is not None and sv.meets_targets(pt, ttft_t, tpot_t)
        fits_override = meets
        tokens_per_s, tpot_ms = shown.tokens_per_second, shown.tpot_ms
        flops_per_s = None
        cap = sv.max_batch_memory(m, spec, layout, w.precision, eng, inp, out)
        serve_extra = {"ttft_ms": shown.ttft_ms, "concurrency": shown.batch, "precision": w.precision,
                       "engine": eng.name, "input_tokens": inp, "output_tokens": out,
                       "ttft_target_ms": ttft_t, "tpot_target_ms": tpot_t,
                       "estimate_source": corr.source if corr else "model (optimizer/serving.py fit)",
                       "kv_capacity_sequences": cap, "meets_targets": meets}
        assumptions[0] = (f"usable memory = {eng.memory_fraction:.0%} of the GPU's {gpu.memory_gib:g} GiB"
                          f"{f' (x share {share:g})' if share < 1 else ''} ({eng.name}: {eng.source})")
        targets = ("no latency target (offline)" if ttft_t is None and tpot_t is None else
                   f"p99 TTFT <= {ttft_t:g} ms, p99 TPOT <= {tpot_t:g} ms" if ttft_t and tpot_t else
                   f"p99 TTFT <= {ttft_t:g} ms" if ttft_t else f"p99 TPOT <= {tpot_t:g} ms")
        why = ""
        if cap < 1:
            why = "the weights and activations do not fit the engine's memory"
        elif pt is None:
            why = f"no batch meets {targets} (batch 1: TTFT {shown.ttft_ms:.0f} ms, TPOT {shown.tpot_ms:.1f} ms)"
        elif not meets:
            why = f"at this batch it misses {targets}"
        assumptions += [
            f"requests of {inp} input + {out} output tokens (mean); scenario {w.scenario}: {targets} "
            f"(MLPerf Inference server 2 s / 200 ms, interactive 450 / 40 ms); p99 = mean x "
            f"{sv.P99_OVER_MEAN_TTFT} (TTFT), x {sv.P99_OVER_MEAN_TPOT} (TPOT) (MLPerf server runs, DERIVED)",
            f"weights {sv.WEIGHT_BYTES[w.precision]:.4g} B/param ({w.precision}; embeddings and head 16-bit), KV cache "
            f"{sv.KV_BYTES[w.precision]:g} B/element, matmuls at the {sv.MATMUL_PEAK[w.precision]} peak",
            f"paged KV cache: {held:g} tokens per running sequence ("
            + ("the whole request reserved at admission" if eng.reserve_full_request else "input + half the output "
               "on average, pages allocated on demand") + f"); room for {cap} sequences; engine caps "
            f"{eng.max_batch(spec)} sequences, {eng.max_tokens(spec)} tokens per iteration",
            (f"batch {shown.batch}" + ((" (given)" if shown.batch == w.concurrency else
                                         f" (given {w.concurrency}; the KV cache and the engine run {shown.batch} at "
                                         f"once, the other {w.concurrency - shown.batch} wait: TTFT includes "
                                         f"{shown.queue_ms:,.0f} ms of queueing)") if w.concurrency else
                                        " = the largest that fits memory and the targets")
             + f": TPOT {shown.tpot_ms:.1f} ms, TTFT {shown.ttft_ms:.0f} ms, {shown.tokens_per_second:,.0f} tokens/s"
             + (f" -- does not serve: {why}" if why else "")),
            sv.describe_fit(),
            f"layout TP {tp_used} x PP {pp}" + (f" ({net.fabric or 'unknown network'} {net.gbps_per_node:g} GB/s per "
                                                f"node between stages, {net.hop_latency_s * 1e6:.1f} us per hop)"
                                                if pp > 1 else ""),
        ]
        if w.precision == "bf16" and sv.gpu_generation(spec) in ("volta", "turing"):
            assumptions.append(f"{spec.name} has no bf16: the engines serve a bf16 checkpoint in fp16 (vLLM casts it "
                               "with a warning), the same bytes and speed")
        if corr is not None and corr.applied:
            assumptions.append(f"corrected by the user's benchmark ({corr.source}): tokens/s x "
                               f"{corr.tokens_per_second:.3f}, TTFT x {corr.ttft:.3f}, TPOT x {corr.tpot:.3f}")
        elif corr is not None:
            assumptions.append(corr.source)
        elif w.measured is not None:
            assumptions.append(f"{w.measured.path} has no row of {m.name} on {eng.name}: the model alone")
    elif w.task == "lora":
        adapters = lora_adapter_params(m, w.lora_rank, w.lora_targets)
        targets = _lora_targets(w.lora_rank, w.lora_targets)
        base = lora_base_weight_bytes(m, w.precision)
        parts["weights"] = base / n if w.zero_stage == 3 else base
        a_w, a_g, a_o = _model_state_parts(float(adapters), w.zero_stage, n)
        parts["adapter_weights"], parts["gradients"], parts["optimizer_states"] = a_w, a_g, a_o
        act, act_note = _activation_bytes_per_gpu(w)
        parts["activations"] = act
        bpp = LORA_BASE_BYTES[w.precision]
        quantized = bpp < 2.0
        largest_matrix = float(m.hidden_size * max(m.heads * m.head_dim, m.intermediate_size))
        if w.zero_stage == 3:  # as for training, also on one GPU (conservative; keeps memory non-increasing in g)
            block = max(0.0, (m.params_total - _embedding_params(m)) / m.layers)
            parts["overhead"] += max(block * bpp, m.vocab_size * m.hidden_size * 2.0)
        if quantized:
            parts["overhead"] += 2.0 * largest_matrix
        dp_eff = data_parallel_efficiency(w, gpu, g, net)
        flops_per_s = g * peak * mfu * dp_eff
        tokens_per_s = flops_per_s / (LORA_FLOPS_PER_PARAM_TOKEN * m.params_active)
        base_note = {
            "int4": f"QLoRA NF4 {QLORA_NF4_BYTES_PER_PARAM:.4f} B/param = (4 + 8/64 + 32/(64*256)) bits / 8, "
                    "blocksize-64 absmax double-quantized (Dettmers et al. 2023, arXiv 2305.14314, s.3)",
            "int8": "LLM.int8 1 B/param (bitsandbytes; per-row scales neglected)",
        }.get(w.precision, f"{bpp:g} B/param ({w.precision})")
        assumptions += [
            f"LoRA rank {w.lora_rank} on {', '.join(targets)}: {adapters:,} adapter params = sum over layers and "
            "targets of r*(d_in+d_out) (Hu et al. 2021, arXiv 2106.09685)"
            + (f"; MLP targets once per expert ({m.experts})" if m.experts > 1 else "")
            + ("; no gate matrix in a 2-matrix MLP" if "gate" in targets and not m.gated_mlp else ""),
            f"frozen base weights: {base_note}"
            + ("; embeddings and output head kept 16-bit (bitsandbytes quantizes nn.Linear only)" if quantized else "")
            + (f"; ZeRO-3: sharded over the replica's {n} GPU(s)" if w.zero_stage == 3
               else "; replicated on every GPU (ZeRO < 3)"),
            f"adapter states {LORA_ADAPTER_BYTES_PER_PARAM} B/param: bf16 weights 2 + grads 2 + fp32 Adam K={ZERO_K} "
            f"(ZeRO paper; F§4), ZeRO stage {w.zero_stage} over {n} GPU(s)",
            act_note,
            "overhead: "
            + ("ZeRO-3 gathered largest layer at its stored size (DeepSpeed largest_layer_mem; F§4)"
               if w.zero_stage == 3 else "no gathered layer (ZeRO stage < 3)")
            + ("; one dequantized 16-bit copy of the largest linear matrix (bitsandbytes dequantizes per matmul)"
               if quantized else ""),
            f"MFU {mfu:g} ({'given' if w.mfu is not None else f'default for {gpu.gpu_class}'}; Megatron-LM A100 "
            "41.5-56%, PaLM 46.2%, end-to-end 35-64% (F§3)); QLoRA's dequantization time not modelled",
            f"data-parallel efficiency {dp_eff:.3f}: adapter gradients only"
            + (", plus 2 all-gathers of the sharded frozen base (ZeRO-3)" if w.zero_stage == 3 else "")
            + f", over {gpu.link_gbps_one_way:g} GB/s one way{_node_note(net, g)}, no overlap (ZeRO paper s.7; F§9)",
            "LoRA FLOPs 4*N*D with N = active params (DERIVED): forward 2N + activation gradients 2N, no weight "
            "gradients for frozen weights (Transformer Math 101's 2N forward / 4N backward split); adapter FLOPs "
            "left out; model FLOPs at the MFU, activation recomputation (HFU 6ND) not added (F§3)",
        ]
    per_gpu_bytes = sum(parts.values())
    replica_mult = float(n) if g >= 1 else 1.0
    breakdown = {k: v * replica_mult / GIB for k, v in parts.items()}
    mem_per_gpu = per_gpu_bytes / GIB
    return ReplicaSizing(
        task=w.task,
        gpu_model=gpu.name,
        gpus_per_replica=g,
        memory_gib_per_replica=mem_per_gpu * replica_mult,
        memory_gib_per_gpu=mem_per_gpu,
        usable_gib_per_gpu=usable,
        fits=(mem_per_gpu <= usable) if fits_override is None else fits_override,
        breakdown_gib=breakdown,
        tokens_per_second_per_replica=tokens_per_s,
        flops_per_second_per_replica=flops_per_s,
        assumptions=tuple(assumptions),
        tensor_parallel=tp_used,
        pipeline_parallel=pp,
        time_per_output_token_ms=tpot_ms,
        **serve_extra,
    )


def training_setup(w: Workload, gpu: GpuSpec, network: NodeNetwork | None = None):
    """The :class:`optimizer.training.TrainSetup` of a train/finetune workload on ``gpu`` over ``network``."""
    from optimizer.training import TrainSetup

    seq = effective_context(w)
    gbs = None
    if w.global_batch_tokens:
        gbs = max(1, int(round(float(w.global_batch_tokens) / seq)))
    from optimizer.training import DEFAULT_FINETUNE_BATCH_SEQS, reference_network

    return TrainSetup(model=w.model, gpu=gpu, network=network or reference_network(gpu), precision=w.precision,
                      framework=training_framework(w), optimizer=w.optimizer, seq_len=seq, global_batch_seqs=gbs,
                      usable_fraction=USABLE_FRACTION,
                      default_batch=DEFAULT_FINETUNE_BATCH_SEQS * seq if w.task == "finetune" else 0.0)


def check_training_options(w: Workload, gpu: GpuSpec, *, tensor_parallel: int | None = None,
                           pipeline_parallel: int | None = None, network: NodeNetwork | None = None) -> None:
    """Refuse a training setup no framework runs, naming the field (one-line errors; issue 11).

    Raises:
        InputError("precision"): bf16 on a GPU without bf16 (Volta, Turing: fp16), fp8 without FP8 tensor cores;
        ("tensor_parallel"): beyond one node, or not dividing the attention and KV heads (Megatron's rule);
        ("pipeline_parallel"): more stages than layers, or with DeepSpeed and ZeRO 2/3; ("offload"): ZeRO 0,
        parameters with Megatron, an 8-bit optimizer (bitsandbytes keeps its states on the GPU); ("global_batch_tokens"):
        less than one sequence.
    """
    from optimizer.serving import gpu_generation
    from optimizer.training import peak_flops

    m = w.model
    if w.precision == "bf16" and gpu_generation(gpu) in ("volta", "turing"):
        raise InputError("precision", f"{gpu.name} has no bf16 ({gpu_generation(gpu).title()}): train in fp16",
                         accepted="fp16")
    peak_flops(gpu, w.precision)
    node = (network or DEFAULT_NODE_NETWORK).gpus_per_node
    if tensor_parallel is not None:
        if not _is_int(tensor_parallel) or not 1 <= tensor_parallel <= node:
            raise InputError("tensor_parallel", f"must be a whole number 1..{node} (inside one node), got "
                                                f"{tensor_parallel!r}", accepted=f"1..{node}")
        if not m.estimated and (m.heads % tensor_parallel or (m.kv_heads % tensor_parallel and
                                                              tensor_parallel % m.kv_heads)):
            ok = [t for t in range(1, node + 1) if m.heads % t == 0 and (m.kv_heads % t == 0 or t % m.kv_heads == 0)]
            raise InputError("tensor_parallel", f"{m.name}'s {m.heads} attention heads and {m.kv_heads} KV heads do "
                                                f"not split over {tensor_parallel} GPUs",
                             accepted=", ".join(map(str, ok)))
    fw = training_framework(w)
    if pipeline_parallel is not None:
        if not _is_int(pipeline_parallel) or not 1 <= pipeline_parallel <= m.layers:
            raise InputError("pipeline_parallel", f"must be a whole number 1..{m.layers} ({m.name}'s layers), got "
                                                  f"{pipeline_parallel!r}", accepted=f"1..{m.layers}")
        from optimizer.training import DEFAULT_ZERO_STAGE

        stage = w.zero_stage if w.zero_stage is not None else DEFAULT_ZERO_STAGE[fw]
        if fw == "deepspeed" and pipeline_parallel > 1 and stage > 1:
            raise InputError("pipeline_parallel", "DeepSpeed's pipeline engine runs ZeRO stage 0 or 1 only",
                             accepted="--zero-stage 0 or 1 with --pipeline-parallel, or no pipeline")
    if w.offload != "none":
        stage = w.zero_stage if w.zero_stage is not None else None
        if stage == 0:
            raise InputError("offload", "ZeRO-Offload needs ZeRO stage 1, 2 or 3", accepted="--zero-stage 1, 2, 3")
        if w.offload == "params" and fw == "megatron":
            raise InputError("offload", "Megatron offloads the optimizer, not the parameters",
                             accepted="none, optimizer (or --framework deepspeed/fsdp with --zero-stage 3)")
        if w.optimizer == "adam8bit":
            raise InputError("offload", "an 8-bit optimizer (bitsandbytes) keeps its states on the GPU; ZeRO-Offload "
                                        "runs DeepSpeed's CPU Adam", accepted="none (with adam8bit), or --optimizer adam")
    if fw == "fsdp" and w.zero_stage == 1:
        raise InputError("zero_stage", "PyTorch FSDP shards gradients and parameters (SHARD_GRAD_OP = 2, FULL_SHARD = "
                                       "3) or nothing (NO_SHARD = 0); it has no stage 1",
                         accepted="0, 2, 3 (or --framework megatron/deepspeed for stage 1)")
    if w.global_batch_tokens is not None and w.tokens is not None and w.global_batch_tokens > float(w.tokens):
        raise InputError("global_batch_tokens", f"{w.global_batch_tokens:g} tokens per step is more than the job's "
                                                f"{float(w.tokens):g} tokens (less than one optimizer step)",
                         accepted=f"<= {float(w.tokens):g}")
    if w.global_batch_tokens is not None and w.global_batch_tokens < effective_context(w):
        raise InputError("global_batch_tokens", f"{w.global_batch_tokens:g} tokens is less than one sequence of "
                                                f"{effective_context(w):,}", accepted=f">= {effective_context(w)}")


def _no_layout(w: Workload, gpu: GpuSpec, gpus: float, n: int, setup) -> ReplicaSizing:
    """A job of ``n`` GPUs that no layout splits (the global batch over the data-parallel ranks, the layers or the
    heads): ``fits`` False, no throughput, and the reason in the assumptions."""
    from optimizer import training as tr

    why = (f"no layout of {n} GPUs splits {w.model.name}: the global batch of {setup.global_batch_seqs:,} sequences "
           "does not divide over the data-parallel ranks and micro-batches" if setup.global_batch_seqs else
           f"no layout of {n} GPUs splits {w.model.name} ({w.model.layers} layers, {w.model.heads} heads)")
    mem = tr.memory_per_gpu(dataclasses.replace(setup, global_batch_seqs=None),
                            tr.TrainLayout(dp=n, zero_stage=w.zero_stage if w.zero_stage is not None else
                                           tr.DEFAULT_ZERO_STAGE[setup.framework], offload=w.offload))
    per = sum(mem.values())
    return ReplicaSizing(task=w.task, gpu_model=gpu.name, gpus_per_replica=float(gpus),
                         memory_gib_per_replica=per * n / GIB, memory_gib_per_gpu=per / GIB,
                         usable_gib_per_gpu=gpu.memory_gib * USABLE_FRACTION, fits=False,
                         breakdown_gib={**{k: v * n / GIB for k, v in mem.items()}, "kv_cache": 0.0},
                         tokens_per_second_per_replica=0.0,
                         flops_per_second_per_replica=0.0, assumptions=(why,), precision=w.precision, job_gpus=n,
                         framework=setup.framework)


def size_training(w: Workload, gpu: GpuSpec, gpus: float, *, network: NodeNetwork | None = None,
                  tensor_parallel: int | None = None, pipeline_parallel: int | None = None,
                  context_parallel: int | None = None, expert_parallel: int | None = None,
                  spot: bool = False) -> ReplicaSizing:
    """A train/finetune job of ``w`` on ``gpus`` GPUs: the fastest parallel layout that fits
    (:func:`optimizer.training.search`; TP/PP fixed when given; ZeRO stage, micro-batch and recompute fixed when the
    workload gives them), its tokens/s, MFU, step time and memory per GPU, and the goodput of a job of that size
    (:func:`optimizer.goodput.training_goodput`). ``gpus`` <= 1 is a share of one GPU (its memory and FLOPs).

    ``fits`` is False when no layout fits; the numbers are then those of the layout that needs the least memory.
    ``flops_per_second_per_replica`` is in :func:`train_flops` units (6 N_active x tokens/s), the planner's work
    rate; ``w.mfu`` (the user's measured MFU) replaces the model's tokens/s by ``mfu x peak / model FLOPs per
    token``.

    Raises:
        InputError("precision"): fp8 on a GPU without FP8; ("gpus"): more than 16,384 GPUs;
        ("tensor_parallel"/"pipeline_parallel"): a layout that does not divide the GPUs.
    """
    from optimizer import goodput as gp
    from optimizer import training as tr

    spec = gpu if gpus >= 1 else _gpu_share(gpu, gpus)
    n = max(1, int(gpus))
    setup = training_setup(w, spec, network)
    net = setup.network
    check_training_options(w, spec, tensor_parallel=tensor_parallel, pipeline_parallel=pipeline_parallel, network=net)
    for name, val in (("context_parallel", context_parallel), ("expert_parallel", expert_parallel)):
        if val is not None and (not _is_int(val) or val < 1):
            raise InputError(name, f"must be a whole number >= 1, got {val!r}", accepted=">= 1")
    if context_parallel is not None and context_parallel > 1 and setup.seq_len % (2 * context_parallel):
        raise InputError("context_parallel", f"Megatron's context parallelism splits a sequence into 2 x CP chunks: "
                                             f"{setup.seq_len} tokens do not divide by {2 * context_parallel}",
                         accepted="a --context divisible by 2 x --context-parallel")
    if expert_parallel is not None and expert_parallel > 1 and (w.model.experts <= 1 or
                                                                w.model.experts % expert_parallel):
        raise InputError("expert_parallel", f"{w.model.name} has {w.model.experts} expert(s): expert parallelism "
                                            "divides the experts", accepted=", ".join(
                                                str(d) for d in range(1, w.model.experts + 1)
                                                if w.model.experts % d == 0) or "1")
    for name, val in (("tensor_parallel", tensor_parallel), ("pipeline_parallel", pipeline_parallel),
                      ("context_parallel", context_parallel)):
        if val is not None and n % val:
            raise InputError(name, f"{val} does not divide the job's {n} GPUs",
                             accepted=", ".join(str(d) for d in range(1, min(n, 64) + 1) if n % d == 0))
    best, smallest, tried = tr.search(setup, n, tp=tensor_parallel, pp=pipeline_parallel, cp=context_parallel,
                                      ep=expert_parallel, zero_stage=w.zero_stage,
                                      micro_batch=w.micro_batch_size, recompute=w.activation_recompute,
                                      offload=w.offload)
    st = best or smallest
    if st is None:
        # nothing splits: the global batch does not divide over the data-parallel ranks and micro-batches, or the
        # layers and heads do not split over these GPUs -- not a job of this size (the planner moves on)
        return _no_layout(w, gpu, gpus, n, setup)
    m = w.model
    lay = st.layout
    peak = tr.peak_flops(spec, w.precision)
    tps_gpu = st.tokens_per_second_per_gpu
    mfu = st.mfu
    step_s = st.step_s
    if w.mfu is not None:
        tps_gpu = w.mfu * peak / tr.model_flops_per_token(m, setup.seq_len)
        mfu = w.mfu
        step_s = st.global_batch_seqs * setup.seq_len / (tps_gpu * n)
    tokens_per_s = tps_gpu * n
    good = gp.training_goodput(n, m.params_total, gpus_per_node=net.gpus_per_node)
    good_spot = gp.training_goodput(n, m.params_total, gpus_per_node=net.gpus_per_node, spot=True)
    fam = tr.speed_family(setup.framework)
    ceil_p, ceil_note = tr.mamf(spec, w.precision)
    gbs_tokens = st.global_batch_seqs * setup.seq_len
    time_parts = ", ".join(f"{k.replace('_', ' ')} {v:.3g}" for k, v in st.parts_s.items()
                           if v > 0 and k != "data_parallel_total")
    usable = spec.memory_gib * USABLE_FRACTION
    assumptions = [
        f"usable memory = {USABLE_FRACTION:.0%} of the GPU's {gpu.memory_gib:g} GiB"
        + (f" (x share {gpus:g})" if gpus < 1 else "") + " (the rest: CUDA context, NCCL buffers, allocator)",
        f"{gpu.name}: {gpu.memory_bandwidth_gbps:g} GB/s, {peak / 1e12:g} TFLOP/s dense {w.precision} "
        f"({'FP8' if w.precision == 'fp8' else 'BF16/FP16'} peak: the MFU denominator), NVLink/PCIe "
        f"{gpu.link_gbps_one_way:g} GB/s one way ({gpu.source})",
        f"layout {lay.describe()} = the fastest that fits of {tried} tried (TP inside a node, PP across nodes, CP "
        f"for long sequences, EP for MoE, DP with the ZeRO stage; optimizer.training.search)"
        + ("" if best else " -- NONE FITS: shown is the layout needing the least memory"),
        f"{setup.framework} ({'Megatron-Core/NeMo kernels' if fam == 'megatron' else 'PyTorch FSDP-style stack'}), "
        f"{w.precision}, optimizer {w.optimizer}, offload {w.offload}; global batch {st.global_batch_seqs:,} x "
        f"{setup.seq_len:,} = {gbs_tokens:,} tokens ({st.microbatches} micro-batches per data-parallel rank"
        + ("" if w.global_batch_tokens else
           ("; default 64 sequences, Llama 2's fine-tuning batch" if w.task == "finetune" else
            "; default 4M tokens, Llama 2's pre-training batch")
           + ("" if abs(gbs_tokens - tr.default_batch_tokens(setup)) <= setup.seq_len * lay.dp * lay.micro_batch
              else f", raised to {gbs_tokens:,} for one micro-batch per data-parallel rank")) + ")",
        (f"step {step_s:.3g} s at the given MFU (the model's own: {st.step_s:.3g} s = {time_parts} s); " if w.mfu
         is not None else f"step {st.step_s:.3g} s = {time_parts} (s); ") + f"compute: matmuls at {tr.FIT.matmul[fam]:.3g} x the "
        f"{ceil_note}, attention at {tr.FIT.attention:.3g} x the bf16 ceiling, element-wise "
        f"{tr.FIT.elementwise[fam] + (tr.FIT.fp8_extra if w.precision == 'fp8' else 0):.3g} B per hidden element per "
        f"token-layer over {gpu.memory_bandwidth_gbps:g} GB/s; data-parallel traffic hidden behind "
        f"{tr.FIT.overlap:.0%} of compute; TP collectives {tr.FIT.tp_exposed:.0%} exposed ({tr.FIT.source})",
        f"memory per GPU: model states as {setup.framework} counts them (optimizer.training.model_state_bytes: "
        "Megatron distributed optimizer 6 + 12/d B/param; DeepSpeed 4P + 16P/N (ZeRO-1/2), 18P/N + 4 x largest "
        "layer (ZeRO-3); FSDP 16P/N + the gathered unit), activations s*b*h*(18 + 4*I/h)/t per layer (Megatron-LM "
        "theoretical_memory_usage; Korthikanti et al. 2022), 2*s*b*h/t with full recompute; fp32 logits",
        f"network between nodes: {net.fabric or 'unknown'} {net.gbps_per_node:g} GB/s per {net.gpus_per_node}-GPU "
        f"node ({net.source})",
        (f"MFU {mfu:.3f}: given (--mfu); tokens/s = MFU x peak / {tr.model_flops_per_token(m, setup.seq_len):.3g} "
         "FLOPs per token" if w.mfu is not None else
         f"MFU {mfu:.3f} = (6 N_active + 12 L h s) x tokens/s / peak (llm-foundry / Megatron convention; F§1, F§3)"),
        good.describe(),
        "spot: " + good_spot.describe(),
    ]
    if m.estimated:
        assumptions.append(f"{m.name}: shape guessed from the parameter count (optimizer.specs.model_from_params): "
                           f"{m.layers} layers, hidden {m.hidden_size}, {m.heads} heads, MLP {m.intermediate_size}; "
                           "tensor parallelism not checked against the heads")
    if lay.offload != "none":
        ll = tr._largest_layer(m)
        per_node = min(n, net.gpus_per_node)
        nodes = max(1, math.ceil(n / net.gpus_per_node))
        if lay.zero_stage == 3:
            cpu, _ = tr.deepspeed_zero3_estimate(m.params_total, ll, per_node, nodes, offload_optimizer=True,
                                                 offload_params=lay.offload == "params")
        else:
            cpu, _ = tr.deepspeed_zero2_estimate(m.params_total, per_node, nodes, offload_optimizer=True)
        assumptions.append(
            f"offload: about {cpu / GIB:,.0f} GiB of CPU memory per node (DeepSpeed's estimator, "
            "additional_buffer_factor 1.5; check the instance's RAM); the PCIe transfers are in the step time, the "
            "CPU optimizer step is not: ZeRO-Offload reports 40 TFLOP/s per V100 on a 10B model with it (Ren et al. "
            "2021, arXiv 2101.06840), i.e. mostly hidden")
    parts = {"weights": st.memory["weights"], "kv_cache": 0.0, "gradients": st.memory["gradients"],
             "optimizer_states": st.memory["optimizer_states"], "activations": st.memory["activations"],
             "overhead": st.memory["overhead"]}
    per_gpu = sum(parts.values())
    return ReplicaSizing(
        task=w.task, gpu_model=gpu.name, gpus_per_replica=float(gpus),
        memory_gib_per_replica=per_gpu * n / GIB, memory_gib_per_gpu=per_gpu / GIB, usable_gib_per_gpu=usable,
        fits=best is not None, breakdown_gib={k: v * n / GIB for k, v in parts.items()},
        tokens_per_second_per_replica=tokens_per_s,
        flops_per_second_per_replica=6.0 * m.params_active * tokens_per_s,
        assumptions=tuple(assumptions), tensor_parallel=lay.tp, pipeline_parallel=lay.pp,
        precision=w.precision, training_layout=lay.as_dict(), mfu=mfu, step_time_s=step_s,
        global_batch_tokens=float(gbs_tokens), goodput=good.fraction, goodput_spot=good_spot.fraction, job_gpus=n,
        framework=setup.framework)


def _gpu_share(gpu: GpuSpec, share: float) -> GpuSpec:
    """A share of one GPU (fractional-GPU offers): that share of its memory, bandwidth and FLOPs."""
    from dataclasses import replace

    return replace(gpu, memory_gib=gpu.memory_gib * share, memory_bandwidth_gbps=gpu.memory_bandwidth_gbps * share,
                   fp16_tflops_dense=gpu.fp16_tflops_dense * share,
                   fp8_tflops_dense=None if gpu.fp8_tflops_dense is None else gpu.fp8_tflops_dense * share)


def _holding(w: Workload, gpu: GpuSpec, max_gpus: int, tensor_parallel: int | None,
             pipeline_parallel: int | None) -> ReplicaSizing | None:
    """The smallest serving replica whose weights and KV cache hold at least one sequence, targets met or not (the
    layout given, else 1, 2, 4, 8 GPUs, then pipeline stages of 8); None when none does."""
    if tensor_parallel is not None or pipeline_parallel is not None:
        tp, pp = tensor_parallel or 1, pipeline_parallel or 1
        layouts = [(tp, pp)]
    else:
        layouts = [(g, 1) if g <= GPUS_PER_NODE else (GPUS_PER_NODE, g // GPUS_PER_NODE)
                   for g in replica_sizes(max_gpus) if g <= GPUS_PER_NODE or g % GPUS_PER_NODE == 0]
    for tp, pp in layouts:
        try:
            s = size_replica(w, gpu, float(tp * pp), pipeline_parallel=pp)
        except InputError:
            continue
        if (s.kv_capacity_sequences or 0) >= 1:
            return s
    return None


def _raise_serving_unmet(w: Workload, gpu: GpuSpec, max_gpus: int, tensor_parallel: int | None,
                         pipeline_parallel: int | None) -> None:
    """Raise the reason no serving replica on ``gpu`` serves when its weights fit but no batch meets the latency
    targets (InputError naming ttft_slo_ms/tpot_slo_ms with the best TTFT/TPOT one sequence gets); return when
    memory is the cause (the caller says so)."""
    if tensor_parallel is not None or pipeline_parallel is not None:
        layouts = [(1 if tensor_parallel is None else tensor_parallel, 1 if pipeline_parallel is None else
                    pipeline_parallel)]
    else:
        layouts = [(min(g, GPUS_PER_NODE), _node_stages(w, g, DEFAULT_NODE_NETWORK) or 1)
                   for g in replica_sizes(max_gpus)]
        layouts = [(g // pp if pp > 1 else g, pp) for g, pp in layouts]
    best = None
    for tp, pp in layouts:
        try:
            s = size_replica(w, gpu, float(tp * pp), pipeline_parallel=pp)
        except InputError:
            continue
        if (s.kv_capacity_sequences or 0) >= 1 and (best is None or s.time_per_output_token_ms < best[1]):
            best = (s.ttft_ms, s.time_per_output_token_ms, tp, pp)
    if best is None:
        return
    ttft_t, tpot_t = latency_targets(w)
    from optimizer.serving import P99_OVER_MEAN_TPOT, P99_OVER_MEAN_TTFT

    field = "tpot_slo_ms" if tpot_t is not None and best[1] * P99_OVER_MEAN_TPOT > tpot_t else "ttft_slo_ms"
    raise InputError(field, f"{gpu.name} holds {w.model.name} but meets p99 TTFT <= {ttft_t or 0:g} ms, TPOT <= "
                            f"{tpot_t or 0:g} ms at no batch: one sequence gets p99 TTFT {best[0] * P99_OVER_MEAN_TTFT:,.0f} "
                            f"ms, TPOT {best[1] * P99_OVER_MEAN_TPOT:,.1f} ms (TP{best[2]} PP{best[3]})",
                     accepted="looser --ttft-ms/--tpot-ms or --scenario, shorter --input-tokens, fp8, a faster GPU")


def _sized_layout(w: Workload, gpu: GpuSpec, tensor_parallel: int | None,
                  pipeline_parallel: int | None) -> ReplicaSizing | None:
    """The sizing at a layout the user fixed (``--tensor-parallel``/``--pipeline-parallel``); None when it does not
    fit or meets no target.

    Raises:
        InputError("tensor_parallel"/"pipeline_parallel"): not a whole number >= 1, or TP above one node's GPUs;
        InputError("task"): a training task (its replicas are ZeRO data parallel).
    """
    if w.task != "serve":
        field = "tensor_parallel" if tensor_parallel is not None else "pipeline_parallel"
        raise InputError(field, f"{w.task} replicas are sized as ZeRO data parallel; a tensor- or pipeline-parallel "
                                "size is a serving option", accepted="--task serve")
    tp = 1 if tensor_parallel is None else tensor_parallel
    pp = 1 if pipeline_parallel is None else pipeline_parallel
    if not _is_int(tp) or not 1 <= tp <= GPUS_PER_NODE:
        raise InputError("tensor_parallel", f"must be a whole number 1..{GPUS_PER_NODE} (GPUs of one node), got {tp!r}",
                         accepted=f"1..{GPUS_PER_NODE}")
    if not _is_int(pp) or pp < 1:
        raise InputError("pipeline_parallel", f"must be a whole number >= 1, got {pp!r}", accepted=">= 1")
    s = size_replica(w, gpu, float(tp * pp), pipeline_parallel=pp)
    return s if s.fits else None


def _node_note(net: NodeNetwork, gpus: float) -> str:
    """The node-network clause of the data-parallel assumption line."""
    where = "crossed" if gpus > net.gpus_per_node else "not crossed"
    return (f" (node network {net.gbps_per_node:g} GB/s {net.fabric or 'unknown fabric'} beyond {net.gpus_per_node} "
            f"GPUs: {where}; {net.source})")


def _stage_params(m: ModelSpec, stages: int) -> float:
    """Parameters of the most loaded of ``stages`` pipeline stages: all of them for one stage; otherwise
    ``ceil(L/p)`` transformer blocks of ``(N_total - E)/L`` params + one ``V x h`` matrix (the first stage holds the
    input embedding, the last the output head; E = all embedding params, :func:`_embedding_params`)."""
    if stages <= 1:
        return m.params_total
    embed = _embedding_params(m)
    block = max(0.0, m.params_total - embed) / m.layers
    return math.ceil(m.layers / stages) * block + min(embed, float(m.vocab_size * m.hidden_size))


def _check_pipeline(w: Workload, g: float, stages: object) -> int:
    """Check a pipeline stage count for ``size_replica``; return it.

    Raises:
        InputError("pipeline_parallel"): not a whole number >= 1; > 1 for a training task (ZeRO data parallel
        replicas), for a share of a GPU, for a GPU count that is not a multiple of it, or above the model's layers.
    """
    if not _is_int(stages) or stages < 1:
        raise InputError("pipeline_parallel", f"must be a whole number >= 1, got {stages!r}", accepted=">= 1")
    if stages == 1:
        return 1
    if w.task != "serve":
        raise InputError("pipeline_parallel", f"{w.task} replicas are sized as ZeRO data parallel, not pipelined",
                         accepted="1")
    if g < stages or not float(g).is_integer() or int(g) % stages:
        raise InputError("pipeline_parallel", f"{g:g} GPUs do not split into {stages} equal stages",
                         accepted=f"a divisor of {g:g}")
    if stages > w.model.layers:
        raise InputError("pipeline_parallel", f"{w.model.name} has {w.model.layers} layers, fewer than {stages} stages",
                         accepted=f"1..{w.model.layers}")
    return stages


def replica_sizes(max_gpus: int) -> list[int]:
    """GPU counts tried for a replica: 1, 2, 4, 8, then multiples of 8 up to ``max_gpus``."""
    return [g for g in (1, 2, 4) if g <= max_gpus] + list(range(8, max_gpus + 1, 8))


def min_gpus_per_replica(w: Workload, gpu: GpuSpec, max_gpus: int = 64,
                         network: NodeNetwork | None = None) -> ReplicaSizing | None:
    """The sizing of the smallest replica of ``w`` that fits on ``gpu``, trying :func:`replica_sizes`
    (1, 2, 4, 8, 16, 24, ... <= max_gpus); None when none fits. Fractional GPUs are not tried here (call
    :func:`size_replica` with the offer's share).

    A serving replica of more GPUs than one node has (``network.gpus_per_node``, 8 by default) is laid out as
    vLLM's distributed serving docs say: tensor parallel over the GPUs of a node, one pipeline stage per node
    (16 GPUs = TP 8 x PP 2), never one tensor-parallel group across nodes. Train/finetune jobs are laid out by
    :func:`size_training`; LoRA replicas stay ZeRO data parallel over all their GPUs.

    Raises:
        InputError: as :func:`validate_workload`; ("max_gpus") when max_gpus < 1.
    """
    if not _is_int(max_gpus) or max_gpus < 1:
        raise InputError("max_gpus", f"must be a whole number >= 1, got {max_gpus!r}", accepted=">= 1")
    validate_workload(w)
    net = network or DEFAULT_NODE_NETWORK
    for g in replica_sizes(max_gpus):
        pp = _node_stages(w, g, net)
        if pp is None:
            continue
        try:
            sizing = size_replica(w, gpu, g, pipeline_parallel=pp, network=net)
        except InputError as exc:
            if exc.field == "tensor_parallel":  # the model's heads do not split over this many GPUs
                continue
            raise
        if sizing.fits:
            return sizing
    return None


def _node_stages(w: Workload, gpus: int, net: NodeNetwork) -> int | None:
    """Pipeline stages of a replica of ``gpus`` GPUs on nodes of ``net.gpus_per_node``: 1 within one node or for
    training (ZeRO data parallel); one stage per node for serving beyond one node; None when the GPUs do not fill
    whole nodes or there would be more stages than layers."""
    if w.task != "serve" or gpus <= net.gpus_per_node:
        return 1
    if gpus % net.gpus_per_node or gpus // net.gpus_per_node > w.model.layers:
        return None
    return gpus // net.gpus_per_node


def gpu_hours(w: Workload, sizing: ReplicaSizing) -> float:
    """GPU-hours to process ``w.tokens``: ``train_flops / (FLOP/s per replica / GPUs per replica) / 3600``
    (F§1 "Time and cost": GPU_hours = C / (peak x MFU x 3600), here with the replica's scaling efficiency too).

    Raises:
        InputError("task") for a serving workload or sizing (a serving replica runs as long as it serves).
    """
    if w.task not in TRAINING_TASKS or sizing.flops_per_second_per_replica is None:
        raise InputError("task", "GPU-hours are computed for train/finetune/lora workloads",
                         accepted=", ".join(TRAINING_TASKS))
    per_gpu = sizing.flops_per_second_per_replica / sizing.gpus_per_replica
    return train_flops(w) / per_gpu / 3600.0


TRAIN_GPU_COUNTS = tuple(2**k for k in range(15))  # 1, 2, 4, ... 16,384 (optimizer.training.MAX_TRAIN_GPUS)


def _train_numbers(w: Workload, s: ReplicaSizing) -> dict:
    """The numbers ``gpuopt estimate --task train|finetune`` prints for a job sized by :func:`size_training`."""
    n = int(s.gpus_per_replica) if s.gpus_per_replica >= 1 else 1
    flops = train_flops(w)
    compute_h = float(w.tokens) / s.tokens_per_second_per_replica / 3600.0
    wall = compute_h / s.goodput if s.goodput else math.inf
    layout = dict(s.training_layout or {})
    layout.update(framework=s.framework, precision=s.precision, optimizer=w.optimizer,
                  global_batch_tokens=s.global_batch_tokens)
    return {
        "gpus": n, "tokens_per_second_per_gpu": s.tokens_per_second_per_replica / max(s.gpus_per_replica, 1e-12)
        if s.gpus_per_replica >= 1 else s.tokens_per_second_per_replica,
        "mfu": s.mfu, "step_time_s": s.step_time_s, "memory_gib_per_gpu": s.memory_gib_per_gpu,
        "usable_gib_per_gpu": s.usable_gib_per_gpu, "fits": s.fits, "layout": layout,
        "goodput": s.goodput, "goodput_spot": s.goodput_spot, "train_flops": flops,
        "compute_hours": compute_h, "wall_hours": wall, "gpu_hours": wall * s.gpus_per_replica,
        "memory_gib_per_replica": s.memory_gib_per_replica, "gpus_per_replica": s.gpus_per_replica,
        "breakdown_gib": dict(s.breakdown_gib), "tokens_per_second_per_replica": s.tokens_per_second_per_replica,
        "wall_hours_one_replica": wall, "tensor_parallel": s.tensor_parallel, "pipeline_parallel": s.pipeline_parallel,
    }


def estimate_training(w: Workload, gpu: GpuSpec, *, gpus: int | None = None, tensor_parallel: int | None = None,
                      pipeline_parallel: int | None = None, network: NodeNetwork | None = None,
                      context_parallel: int | None = None, expert_parallel: int | None = None) -> dict:
    """``gpuopt estimate`` for train/finetune (issue 11): the job on ``gpus`` GPUs, else on the fewest of 1, 2, 4,
    ... 16,384 that hold it -- and, with ``w.deadline_hours``, the fewest of those that finish in time (wall time
    with the goodput lost to failures and checkpoints).

    Returns: dict with gpus, tokens_per_second_per_gpu, mfu, step_time_s, memory_gib_per_gpu, gpu_hours (gpus x
        wall hours), wall_hours, compute_hours (no goodput loss), goodput, goodput_spot, layout (tensor_parallel,
        pipeline_parallel, data_parallel, context_parallel, expert_parallel, virtual_stages, zero_stage,
        micro_batch_size, activation_recompute, offload, framework, precision, optimizer, global_batch_tokens),
        meets_deadline (with a deadline), breakdown_gib, train_flops, assumptions.

    Raises:
        InputError("gpus"): the given count cannot hold the job (the error gives the memory needed and usable);
        ("gpu"): not even 16,384 of these GPUs hold it; ("precision"): fp8 on a GPU without FP8; as
        :func:`size_training`.
    """
    def size(n: int) -> ReplicaSizing:
        return size_training(w, gpu, n, network=network, tensor_parallel=tensor_parallel,
                             pipeline_parallel=pipeline_parallel, context_parallel=context_parallel,
                             expert_parallel=expert_parallel)

    step_div = (tensor_parallel or 1) * (pipeline_parallel or 1) * (context_parallel or 1)
    if gpus is not None:
        if not _is_int(gpus) or gpus < 1:
            raise InputError("gpus", f"must be a whole number >= 1, got {gpus!r}", accepted="1..16384")
        s = size(gpus)
        if not s.fits and s.tokens_per_second_per_replica <= 0:  # no layout at all
            field = "global_batch_tokens" if w.global_batch_tokens else (
                "micro_batch_size" if w.micro_batch_size else "gpus")
            raise InputError(field, s.assumptions[0], accepted="a global batch (sequences) divisible by the "
                                                               "data-parallel ranks x micro-batch, other --gpus")
        if not s.fits:
            raise InputError("gpus", f"{gpus} x {gpu.name} cannot hold {w.model.name}: the leanest layout needs "
                                     f"{s.memory_gib_per_gpu:.1f} GiB per GPU, {s.usable_gib_per_gpu:.1f} GiB usable",
                             accepted="more --gpus, --zero-stage 3, --activation-recompute, --offload optimizer, a "
                                      "shorter --context or a larger GPU")
        out = _train_numbers(w, s)
    else:
        counts = [step_div * c for c in TRAIN_GPU_COUNTS if step_div * c <= TRAIN_GPU_COUNTS[-1]]
        s = None
        for c in counts:
            cand = size(c)
            if cand.fits:
                s = cand
                break
        if s is None:
            last = size(counts[-1])
            if last.tokens_per_second_per_replica <= 0 and w.global_batch_tokens:
                raise InputError("global_batch_tokens", last.assumptions[0],
                                 accepted="a global batch (sequences) with more divisors, or --gpus")
            raise InputError("gpu", f"{gpu.name} cannot hold {w.model.name} even on {counts[-1]:,} GPUs: the leanest "
                                    f"layout needs {last.memory_gib_per_gpu:.1f} GiB per GPU, "
                                    f"{last.usable_gib_per_gpu:.1f} GiB usable",
                             accepted="a larger GPU, --zero-stage 3, --offload optimizer, a shorter --context")
        out = _train_numbers(w, s)
        if w.deadline_hours:
            start = counts.index(int(s.gpus_per_replica))
            best = (out["wall_hours"], s, out)
            for c in counts[start + 1:]:
                if out["wall_hours"] <= w.deadline_hours:
                    break
                cand = size(c)
                if not cand.fits:
                    continue
                nums = _train_numbers(w, cand)
                s, out = cand, nums
                if nums["wall_hours"] < best[0]:
                    best = (nums["wall_hours"], cand, nums)
            if out["wall_hours"] > w.deadline_hours:  # none meets it: the count with the shortest wall time
                _, s, out = best
    if w.deadline_hours:
        out["meets_deadline"] = out["wall_hours"] <= w.deadline_hours
    out["assumptions"] = s.assumptions + (
        (f"deadline {w.deadline_hours:g} h: " + ("met" if out["meets_deadline"] else
         "NOT met" + (" with the GPUs given (--gpus)" if gpus is not None else
                      " even at the largest GPU count tried")) + f" with {out['gpus']:,} GPUs "
         f"({out['wall_hours']:,.1f} h)",)
        if w.deadline_hours else ())
    return out


def estimate(w: Workload, gpu: GpuSpec | str, max_gpus: int = 64, *, tensor_parallel: int | None = None,
             pipeline_parallel: int | None = None, gpus: int | None = None, context_parallel: int | None = None,
             expert_parallel: int | None = None) -> dict:
    """The smallest replica of ``w`` on ``gpu`` and what it does, for ``gpuopt estimate``.

    Returns:
        dict with keys memory_gib_per_replica, memory_gib_per_gpu, gpus_per_replica, breakdown_gib (GiB),
        tokens_per_second_per_replica; for train/finetune/lora also train_flops (FLOP), gpu_hours and
        wall_hours_one_replica (hours on one replica); and assumptions (tuple of str).

    Raises:
        InputError: as :func:`validate_workload`; ("gpu") for an unknown GPU name, or when the GPU cannot hold one
            replica even with ``max_gpus`` GPUs -- the error says how much a GPU would need and lists the GPUs
            that can hold it.
    """
    validate_workload(w)
    spec = load_gpu(gpu) if isinstance(gpu, str) else gpu
    if w.task in FULL_TRAINING_TASKS:
        return estimate_training(w, spec, gpus=gpus, tensor_parallel=tensor_parallel,
                                 pipeline_parallel=pipeline_parallel, context_parallel=context_parallel,
                                 expert_parallel=expert_parallel)
    if context_parallel is not None or expert_parallel is not None:
        raise InputError("context_parallel" if context_parallel is not None else "expert_parallel",
                         "context and expert parallelism are layouts of a training job", accepted="--task train or finetune")
    if gpus is not None:
        raise InputError("gpus", "--gpus sizes a training job (train, finetune)", accepted="--task train or finetune")
    if tensor_parallel is not None or pipeline_parallel is not None:
        sizing = _sized_layout(w, spec, tensor_parallel, pipeline_parallel)
    else:
        sizing = min_gpus_per_replica(w, spec, max_gpus)
    if sizing is None and w.task == "serve" and w.concurrency is not None:
        # the user fixed the batch: show what it gives on the smallest replica that holds it, targets met or not
        sizing = _holding(w, spec, max_gpus, tensor_parallel, pipeline_parallel)
    if sizing is None and w.task == "serve":
        _raise_serving_unmet(w, spec, max_gpus, tensor_parallel, pipeline_parallel)
    if sizing is None and (tensor_parallel is not None or pipeline_parallel is not None):
        tp, pp = tensor_parallel or 1, pipeline_parallel or 1
        s = size_replica(w, spec, float(tp * pp), pipeline_parallel=pp)
        raise InputError("tensor_parallel", f"TP{tp} x PP{pp} of {spec.name} does not hold {w.model.name}: each GPU "
                                            f"needs {s.memory_gib_per_gpu:.1f} GiB, {s.usable_gib_per_gpu:.1f} GiB "
                                            "usable", accepted="a larger --tensor-parallel/--pipeline-parallel, or "
                                                               "leave them out for the smallest replica that holds it")
    if sizing is None:
        top = replica_sizes(max_gpus)[-1]
        largest = size_replica(w, spec, top, pipeline_parallel=_node_stages(w, top, DEFAULT_NODE_NETWORK) or 1)

        def holds(name: str) -> bool:
            try:
                return min_gpus_per_replica(w, load_gpu(name), max_gpus) is not None
            except InputError:  # a precision that GPU lacks
                return False

        others = [name for name in known_gpus() if holds(name)]
        raise InputError(
            "gpu",
            f"{spec.name} cannot hold one replica even with {largest.gpus_per_replica:g} GPUs: each needs "
            f"{largest.memory_gib_per_gpu:.1f} GiB, {largest.usable_gib_per_gpu:.1f} GiB usable"
            + ("" if others else "; no known GPU can: lower the precision, context, concurrency or micro-batch"),
            accepted=", ".join(others) or None,
        )
    out: dict = {
        "memory_gib_per_replica": sizing.memory_gib_per_replica,
        "memory_gib_per_gpu": sizing.memory_gib_per_gpu,
        "gpus_per_replica": sizing.gpus_per_replica,
        "breakdown_gib": dict(sizing.breakdown_gib),
        "tokens_per_second_per_replica": sizing.tokens_per_second_per_replica,
    }
    if w.task == "serve":
        out["tensor_parallel"] = sizing.tensor_parallel
        out["pipeline_parallel"] = sizing.pipeline_parallel
        out["time_per_output_token_ms"] = sizing.time_per_output_token_ms
        out["tpot_ms"] = sizing.time_per_output_token_ms
        out["ttft_ms"] = sizing.ttft_ms
        out["concurrency"] = sizing.concurrency
        out["tokens_per_second_per_gpu"] = sizing.tokens_per_second_per_replica / sizing.gpus_per_replica
        for key in ("precision", "engine", "input_tokens", "output_tokens", "ttft_target_ms", "tpot_target_ms",
                    "kv_capacity_sequences", "meets_targets", "estimate_source"):
            out[key] = getattr(sizing, key)
        out["scenario"] = w.scenario
    if w.task in TRAINING_TASKS:
        flops = train_flops(w)
        out["train_flops"] = flops
        out["gpu_hours"] = gpu_hours(w, sizing)
        out["wall_hours_one_replica"] = flops / sizing.flops_per_second_per_replica / 3600.0
    out["assumptions"] = sizing.assumptions
    return out
