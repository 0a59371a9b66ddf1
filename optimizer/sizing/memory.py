"""Memory formulas of one replica: model states under ZeRO, LoRA frozen-base bytes, training activations, a share of
one GPU (part of :mod:`optimizer.sizing`).

Formulas and constants come from ``shared/FORMULAS.md`` (section numbers cited as "F§n") and the papers it cites.
Units: bytes. The train/finetune memory as Megatron, DeepSpeed and FSDP count it is in :mod:`optimizer.sizing.training`.
"""

from __future__ import annotations

import math

from gpuopt.kernel.errors import InputError
from optimizer.sizing.specs import GpuSpec, ModelSpec
from optimizer.sizing.workload import (
    LORA_BASE_BYTES,
    LORA_PRECISIONS,
    ZERO_K,
    ZERO_STAGES,
    Workload,
    effective_context,
    is_int,
    is_number,
    lora_defaults,
)


def embedding_params(m: ModelSpec) -> float:
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
    embed = min(embedding_params(model), model.params_total)
    return (model.params_total - embed) * bpp + embed * 2.0


def model_state_bytes_per_gpu(params: float, zero_stage: int, n_gpus: int) -> float:
    """Bytes of model states (16-bit weights + 16-bit gradients + fp32 Adam states) per GPU under ZeRO.

    ZeRO paper (Rajbhandari et al. 2020, arXiv 1910.02054, section 5 / Fig. 1), K = 12, Psi = params,
    N = n_gpus: stage 0 (plain data parallel) ``16 Psi``; stage 1 (P_os) ``4 Psi + 12 Psi / N``;
    stage 2 (P_os+g) ``2 Psi + 14 Psi / N``; stage 3 (P_os+g+p) ``16 Psi / N``.
    Paper's example: Psi = 7.5e9, N = 64 -> 120 / 31.4 / 16.6 / 1.9 GB (decimal).

    Raises:
        InputError("params" | "zero_stage" | "gpus") for params <= 0, a stage outside 0..3, n_gpus < 1.
    """
    return sum(model_state_parts(params, zero_stage, n_gpus))


def model_state_parts(params: float, zero_stage: int, n_gpus: int) -> tuple[float, float, float]:
    """(weights, gradients, optimizer states) bytes per GPU; see :func:`model_state_bytes_per_gpu`."""
    if not is_number(params) or params <= 0:
        raise InputError("params", f"must be > 0, got {params!r}", accepted="> 0")
    if not is_int(zero_stage) or zero_stage not in ZERO_STAGES:
        raise InputError("zero_stage", f"unknown ZeRO stage {zero_stage!r}", accepted="0, 1, 2, 3")
    if not is_int(n_gpus) or n_gpus < 1:
        raise InputError("gpus", f"must be a whole number >= 1, got {n_gpus!r}", accepted=">= 1")
    p, n = float(params), n_gpus
    weights = 2 * p / n if zero_stage >= 3 else 2 * p
    grads = 2 * p / n if zero_stage >= 2 else 2 * p
    optim = ZERO_K * p / n if zero_stage >= 1 else ZERO_K * p
    return weights, grads, optim


def activation_bytes_per_gpu(w: Workload) -> tuple[float, str]:
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


def gpu_share(gpu: GpuSpec, share: float) -> GpuSpec:
    """A share of one GPU (fractional-GPU offers): that share of its memory, bandwidth and FLOPs."""
    from dataclasses import replace

    return replace(gpu, memory_gib=gpu.memory_gib * share, memory_bandwidth_gbps=gpu.memory_bandwidth_gbps * share,
                   fp16_tflops_dense=gpu.fp16_tflops_dense * share,
                   fp8_tflops_dense=None if gpu.fp8_tflops_dense is None else gpu.fp8_tflops_dense * share)


def _stage_params(m: ModelSpec, stages: int) -> float:
    """Parameters of the most loaded of ``stages`` pipeline stages: all of them for one stage; otherwise
    ``ceil(L/p)`` transformer blocks of ``(N_total - E)/L`` params + one ``V x h`` matrix (the first stage holds the
    input embedding, the last the output head; E = all embedding params, :func:`embedding_params`)."""
    if stages <= 1:
        return m.params_total
    embed = embedding_params(m)
    block = max(0.0, m.params_total - embed) / m.layers
    return math.ceil(m.layers / stages) * block + min(embed, float(m.vocab_size * m.hidden_size))
