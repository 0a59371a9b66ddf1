"""Compute formulas of one replica: training FLOPs (6·N·D, LoRA 4·N·D), peak FLOP/s and MFU, the pipeline bubble
and decode cycle, and ZeRO data-parallel scaling efficiency (part of :mod:`optimizer.sizing`).

Formulas and constants come from ``shared/FORMULAS.md`` (section numbers cited as "F§n") and the papers it cites.
Units: FLOP, FLOP/s, seconds, GB/s (1e9 B/s).
"""

from __future__ import annotations

from gpuopt.kernel.errors import InputError
from optimizer.sizing.memory import lora_base_weight_bytes
from optimizer.sizing.network import DEFAULT_NODE_NETWORK, NodeNetwork
from optimizer.sizing.specs import GpuSpec
from optimizer.sizing.workload import (
    DEFAULT_MFU,
    LORA_FLOPS_PER_PARAM_TOKEN,
    TRAINING_TASKS,
    Workload,
    effective_context,
    is_int,
    lora_adapter_params,
    lora_defaults,
    validate_workload,
)


def flops_per_param_token(w: Workload) -> float:
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
    return flops_per_param_token(w) * w.model.params_active * float(w.tokens)


def peak_flops_and_note(gpu: GpuSpec, precision: str) -> tuple[float, str]:
    """Peak dense FLOP/s for the matmuls of a precision, and a note on which datasheet number it is."""
    if precision == "fp32":
        if gpu.fp32_tflops:
            return gpu.fp32_tflops * 1e12, f"FP32 {gpu.fp32_tflops:g} TFLOP/s"
        return gpu.fp16_tflops_dense * 1e12, f"no FP32 figure; BF16 {gpu.fp16_tflops_dense:g} TFLOP/s used"
    return gpu.fp16_tflops_dense * 1e12, f"dense FP16/BF16 tensor {gpu.fp16_tflops_dense:g} TFLOP/s"


def replica_mfu(w: Workload, gpu: GpuSpec) -> float:
    """The MFU a replica is sized at (LoRA, data-parallel efficiency): the workload's mfu, else :data:`DEFAULT_MFU`
    of the GPU's class."""
    return w.mfu if w.mfu is not None else DEFAULT_MFU[gpu.gpu_class]


def pipeline_bubble_fraction(stages: int, microbatches: int) -> float:
    """Idle fraction of each stage when ONE batch of m micro-batches runs through p pipeline stages (fill and
    drain): ``(p - 1) / (m + p - 1)`` (GPipe, Huang et al. 2019, arXiv 1811.06965; Megatron-LM writes the same idle
    time against the ideal time as (p - 1)/m, Narayanan et al. 2021, arXiv 2104.04473 s.2.2; F§9). 0 for p = 1.

    Raises:
        InputError("pipeline_parallel" | "microbatches") for a count < 1.
    """
    if not is_int(stages) or stages < 1:
        raise InputError("pipeline_parallel", f"must be a whole number >= 1, got {stages!r}", accepted=">= 1")
    if not is_int(microbatches) or microbatches < 1:
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
    peak, _ = peak_flops_and_note(gpu, w.precision)
    t_compute = flops_per_param_token(w) * w.model.params_active * w.micro_batch_size * s / (peak * replica_mfu(w, gpu))
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
