"""A train/finetune job on one GPU model: its options checked, the fastest parallel layout that fits
(:func:`optimizer.sizing.training.search`), its throughput, memory, MFU and goodput, and ``gpuopt estimate``'s numbers
for it (issue 11; part of :mod:`optimizer.sizing`).

Units: GiB (2**30 B) for memory, tokens/s, FLOP/s, seconds, hours.
"""

from __future__ import annotations

import dataclasses
import math

from gpuopt.kernel.errors import InputError
from gpuopt.kernel.words import plural
from optimizer.sizing.memory import gpu_share
from optimizer.sizing.network import DEFAULT_NODE_NETWORK, NodeNetwork
from optimizer.sizing.specs import GpuSpec
from optimizer.sizing.throughput import train_flops
from optimizer.sizing.workload import (
    GIB,
    USABLE_FRACTION,
    ReplicaSizing,
    Workload,
    effective_context,
    is_int,
    training_framework,
)


def training_setup(w: Workload, gpu: GpuSpec, network: NodeNetwork | None = None):
    """The :class:`optimizer.sizing.training.TrainSetup` of a train/finetune workload on ``gpu`` over ``network``."""
    from optimizer.sizing.training import TrainSetup

    seq = effective_context(w)
    gbs = None
    if w.global_batch_tokens:
        gbs = max(1, int(round(float(w.global_batch_tokens) / seq)))
    from optimizer.sizing.training import DEFAULT_FINETUNE_BATCH_SEQS, reference_network

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
    from optimizer.sizing.serving import gpu_generation
    from optimizer.sizing.training import peak_flops

    m = w.model
    if w.precision == "bf16" and gpu_generation(gpu) in ("volta", "turing"):
        raise InputError("precision", f"{gpu.name} has no bf16 ({gpu_generation(gpu).title()}): train in fp16",
                         accepted="fp16")
    peak_flops(gpu, w.precision)
    node = (network or DEFAULT_NODE_NETWORK).gpus_per_node
    if tensor_parallel is not None:
        if not is_int(tensor_parallel) or not 1 <= tensor_parallel <= node:
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
        if not is_int(pipeline_parallel) or not 1 <= pipeline_parallel <= m.layers:
            raise InputError("pipeline_parallel", f"must be a whole number 1..{m.layers} ({m.name}'s layers), got "
                                                  f"{pipeline_parallel!r}", accepted=f"1..{m.layers}")
        from optimizer.sizing.training import DEFAULT_ZERO_STAGE

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
    from optimizer.sizing import training as tr

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
    (:func:`optimizer.sizing.training.search`; TP/PP fixed when given; ZeRO stage, micro-batch and recompute fixed when
    the workload gives them), its tokens/s, MFU, step time and memory per GPU, and the goodput of a job of that size
    (:func:`optimizer.sizing.goodput.training_goodput`). ``gpus`` <= 1 is a share of one GPU (its memory and FLOPs).

    ``fits`` is False when no layout fits; the numbers are then those of the layout that needs the least memory.
    ``flops_per_second_per_replica`` is in :func:`train_flops` units (6 N_active x tokens/s), the planner's work
    rate; ``w.mfu`` (the user's measured MFU) replaces the model's tokens/s by ``mfu x peak / model FLOPs per
    token``.

    Raises:
        InputError("precision"): fp8 on a GPU without FP8; ("gpus"): more than 16,384 GPUs;
        ("tensor_parallel"/"pipeline_parallel"): a layout that does not divide the GPUs.
    """
    from optimizer.sizing import goodput as gp
    from optimizer.sizing import training as tr

    spec = gpu if gpus >= 1 else gpu_share(gpu, gpus)
    n = max(1, int(gpus))
    setup = training_setup(w, spec, network)
    net = setup.network
    check_training_options(w, spec, tensor_parallel=tensor_parallel, pipeline_parallel=pipeline_parallel, network=net)
    for name, val in (("context_parallel", context_parallel), ("expert_parallel", expert_parallel)):
        if val is not None and (not is_int(val) or val < 1):
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
        f"({'FP8' if w.precision == 'fp8' else 'BF16/FP16'} peak: the MFU denominator), {gpu.link_label} "
        f"{gpu.link_gbps_one_way:g} GB/s one way ({gpu.source})",
        f"layout {lay.describe()} = the fastest that fits of {tried} tried (TP inside a node, PP across nodes, CP "
        f"for long sequences, EP for MoE, DP with the ZeRO stage; optimizer.sizing.training.search)"
        + ("" if best else " -- NONE FITS: shown is the layout needing the least memory"),
        f"{setup.framework} ({'Megatron-Core/NeMo kernels' if fam == 'megatron' else 'PyTorch FSDP-style stack'}), "
        f"{w.precision}, optimizer {w.optimizer}, offload {w.offload}; global batch {st.global_batch_seqs:,} x "
        f"{setup.seq_len:,} = {gbs_tokens:,} tokens ({st.microbatches} micro-batches per data-parallel rank"
        + ("" if w.global_batch_tokens else
           ("; default 64 sequences, Llama 2's fine-tuning batch" if w.task == "finetune" else
            f"; default {tr.default_batch_tokens(setup, n):,.0f} tokens: Llama 2's 4M, or "
            f"{tr.DEFAULT_BATCH_TOKENS_PER_GPU:,} per GPU past 2,048 GPUs as Llama 3 405B's 16M on 8,192")
           + ("" if abs(gbs_tokens - tr.default_batch_tokens(setup, n)) <= setup.seq_len * lay.dp * lay.micro_batch
              else f", raised to {gbs_tokens:,} for one micro-batch per data-parallel rank")) + ")",
        (f"step {step_s:.3g} s at the given MFU (the model's own: {st.step_s:.3g} s = {time_parts} s); " if w.mfu
         is not None else f"step {st.step_s:.3g} s = {time_parts} (s); ") + f"compute: matmuls at {tr.FIT.matmul[fam]:.3g} x the "
        f"{ceil_note}{tr.generation_note(spec, fam)}, attention at {tr.FIT.attention:.3g} x the bf16 ceiling"
        f"{' x ' + format(tr.attention_speedup(spec), 'g') + ' (Blackwell Ultra softmax)' if tr.attention_speedup(spec) != 1 else ''}, "
        f"fixed {tr.FIT.layer_fixed_s * 1e3:.2g} ms per layer"
        + (f" + {tr.FIT.moe_layer_fixed_s * 1e3:.2g} ms per MoE layer + {tr.FIT.expert_fixed_s * 1e3:.2g} ms per "
           f"expert the GPU holds ({min(m.experts / max(1, lay.ep), tr.EXPERT_FIXED_MAX_LOCAL):g} here, at most "
           f"{tr.EXPERT_FIXED_MAX_LOCAL}: the fitted runs' range)" if m.experts > 1 else "")
        + f" per micro-batch and {tr.FIT.step_fixed_s:.2g} s per step, element-wise "
        f"{tr.FIT.elementwise[fam] + (tr.FIT.fp8_extra if w.precision == 'fp8' else 0):.3g} B per hidden element per "
        f"token-layer over {gpu.memory_bandwidth_gbps:g} GB/s; data-parallel traffic hidden behind "
        f"{tr.FIT.overlap:.0%} of compute, their ring latency counted (NCCL 22.4 us a network step, Megatron's "
        f"buckets); TP collectives {tr.FIT.tp_exposed:.0%} exposed"
        + (f"; stragglers {tr.FIT.straggler:g} x sqrt(2 ln nodes) of the step" if tr.FIT.straggler else "")
        + f" ({tr.FIT.source})",
        f"memory per GPU: model states as {setup.framework} counts them (optimizer.sizing.training.model_state_bytes: "
        "Megatron distributed optimizer 6 + 12/d B/param; DeepSpeed 4P + 16P/N (ZeRO-1/2), 18P/N + 4 x largest "
        "layer (ZeRO-3); FSDP 16P/N + the gathered unit), activations s*b*h*(18 + 4*I/h)/t per layer (Megatron-LM "
        "theoretical_memory_usage; Korthikanti et al. 2022), 2*s*b*h/t for each recomputed layer (all of them, or "
        "with Megatron's block recompute the fewest a stage that fit); fp32 logits",
        f"network between nodes: {net.fabric or 'unknown'} {net.gbps_per_node:g} GB/s per {net.gpus_per_node}-GPU "
        f"node ({net.source})",
        (f"MFU {mfu:.3f}: given (--mfu); tokens/s = MFU x peak / {tr.model_flops_per_token(m, setup.seq_len):.3g} "
         "FLOPs per token" if w.mfu is not None else
         f"MFU {mfu:.3f} = (6 N_active + 12 L h s) x tokens/s / peak (llm-foundry / Megatron convention; F§1, F§3)"),
        good.describe(),
        "spot: " + good_spot.describe(),
    ]
    bubble = st.parts_s.get("pipeline_bubble", 0.0)
    if bubble > 0.2 * st.step_s:
        assumptions.insert(0, f"WARNING: the pipeline bubble is {bubble / st.step_s:.0%} of the step ({st.microbatches} "
                              f"micro-batch(es) per data-parallel rank over {lay.pp} stages): a larger "
                              "--global-batch-tokens (or fewer GPUs) keeps the GPUs busy")
    if m.estimated and m.is_moe:
        assumptions.append(f"{m.name}: {m.source}; tensor parallelism not checked against the heads")
    elif m.estimated:
        assumptions.append(f"{m.name}: shape guessed from the parameter count (optimizer.sizing.specs.model_from_params): "
                           f"{m.layers} layers, hidden {m.hidden_size}, {m.heads} heads, MLP {m.intermediate_size}; "
                           "tensor parallelism not checked against the heads")
    if lay.offload != "none":
        ll = tr.largest_layer_of(m)
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


TRAIN_GPU_COUNTS = tuple(2**k for k in range(15))  # 1, 2, 4, ... 16,384 (optimizer.sizing.training.MAX_TRAIN_GPUS)
#: The default scale of ``gpuopt estimate --task train`` without ``--gpus`` or a deadline (issue 28): the fewest of
#: 1, 2, 4, 8 GPUs, then whole power-of-two numbers of 8-GPU nodes, whose wall time is at most 30 days -- a month,
#: the budget period teams plan a pre-training run in -- at most :data:`DEFAULT_SCALE_MAX_GPUS`. The fewest GPUs
#: that merely hold the job (``--gpus fewest``) can run for years: Llama-2-7B's 2T tokens on 2 A100s.
DEFAULT_SCALE_HOURS = 30 * 24.0
#: The default scale's cap, GPUs: 4,096 (512 nodes of 8), twice the 2,048 A100s Meta pre-trained LLaMA and Llama 2
#: on (Touvron et al. 2023); a job that needs more to finish in a month is shown at the cap, its wall time said.
DEFAULT_SCALE_MAX_GPUS = 4096
#: ``gpus`` value asking for the fewest GPUs that hold the job (the scale before issue 28).
FEWEST = "fewest"


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


def estimate_training(w: Workload, gpu: GpuSpec, *, gpus: int | str | None = None, tensor_parallel: int | None = None,
                      pipeline_parallel: int | None = None, network: NodeNetwork | None = None,
                      context_parallel: int | None = None, expert_parallel: int | None = None) -> dict:
    """``gpuopt estimate`` for train/finetune (issue 11): the job on ``gpus`` GPUs; with ``w.deadline_hours`` the
    fewest of 1, 2, 4, ... 16,384 that hold it and finish in time (wall time with the goodput lost to failures and
    checkpoints); ``gpus="fewest"`` the fewest that hold it; else (issue 28) the default scale: the fewest that
    finish within :data:`DEFAULT_SCALE_HOURS` (30 days), at most :data:`DEFAULT_SCALE_MAX_GPUS` -- said first in the
    assumptions, and ``scale`` says which rule chose the count (default, fewest, deadline, given).

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
    fewest = isinstance(gpus, str) and gpus.strip().lower() == FEWEST
    if isinstance(gpus, str) and not fewest:
        raise InputError("gpus", f"must be a whole number 1..16384 or {FEWEST!r}, got {gpus!r}",
                         accepted=f"1..16384, {FEWEST}")
    if fewest and w.deadline_hours:
        raise InputError("gpus", "--gpus fewest and --deadline-hours each choose the GPU count",
                         accepted="one of --gpus fewest, --gpus N, --deadline-hours")
    if fewest:
        gpus = None
    deadline = w.deadline_hours
    default_scale = gpus is None and not fewest and not deadline and bool(w.tokens)
    if default_scale:
        deadline = DEFAULT_SCALE_HOURS
    if gpus is not None:
        if not is_int(gpus) or gpus < 1:
            raise InputError("gpus", f"must be a whole number >= 1, got {gpus!r}", accepted=f"1..16384, {FEWEST}")
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
        smallest = int(s.gpus_per_replica)
        if deadline:
            start = counts.index(int(s.gpus_per_replica))
            best = (out["wall_hours"], s, out)
            for c in counts[start + 1:]:
                if out["wall_hours"] <= deadline:
                    break
                if default_scale and c > max(DEFAULT_SCALE_MAX_GPUS, smallest):
                    break
                cand = size(c)
                if not cand.fits:
                    continue
                nums = _train_numbers(w, cand)
                s, out = cand, nums
                if nums["wall_hours"] < best[0]:
                    best = (nums["wall_hours"], cand, nums)
            if out["wall_hours"] > deadline:  # none meets it: the count with the shortest wall time
                _, s, out = best
    scale_note: tuple = ()
    if default_scale:
        n = out["gpus"]
        scale_note = ((f"scale: {plural(n, 'GPU', ',')}, the default -- the fewest of 1, 2, 4, 8 GPUs or "
                       "power-of-two 8-GPU nodes "
                       f"that finish within {DEFAULT_SCALE_HOURS / 24:g} days (at most {DEFAULT_SCALE_MAX_GPUS:,})"
                       + ("" if out["wall_hours"] <= DEFAULT_SCALE_HOURS else
                          f"; NOT within {DEFAULT_SCALE_HOURS / 24:g} days even at {n:,} GPUs")
                       + f"; the fewest that hold it: {smallest:,} (--gpus fewest); --gpus N or --deadline-hours to "
                         "choose"),)
    elif fewest:
        scale_note = (f"scale: {plural(out['gpus'], 'GPU', ',')}, the fewest that hold the job (--gpus fewest)",)
    out["scale"] = ("default" if default_scale else FEWEST if fewest else "given" if gpus is not None
                    else "deadline")
    if w.deadline_hours:
        out["meets_deadline"] = out["wall_hours"] <= w.deadline_hours
    gbs = out["layout"].get("global_batch_tokens") or 0
    if w.tokens and gbs and float(w.tokens) < gbs:
        scale_note += (f"the job's {float(w.tokens):,.0f} tokens are less than one global batch ({gbs:,.0f} tokens): "
                       "the times are pro rata of a step; a job this small runs a smaller batch "
                       "(--global-batch-tokens)",)
    out["assumptions"] = scale_note + s.assumptions + (
        (f"deadline {w.deadline_hours:g} h: " + ("met" if out["meets_deadline"] else
         "NOT met" + (" with the GPUs given (--gpus)" if gpus is not None else
                      " even at the largest GPU count tried")) + f" with {plural(out['gpus'], 'GPU', ',')} "
         f"({out['wall_hours']:,.1f} h)",)
        if w.deadline_hours else ())
    return out
