"""Sizing of one replica: how much GPU memory one replica of a workload needs on a GPU model, and how fast it runs
there; the smallest replica that fits; ``gpuopt estimate`` (part of :mod:`optimizer.sizing`).

A *replica* is one copy of the model spread over ``gpus`` GPUs of one model: for serving, tensor parallel inside one
instance and, when one instance is too small, pipeline stages across instances (``pipeline_parallel``); for training,
ZeRO data parallel (stage 0-3), across instances only over a cluster fabric. The planner (``optimizer/model.py``)
turns replicas into instances and gives the instances' network (:func:`optimizer.sizing.network.offer_network`); this
module only answers "does a replica fit on g GPUs of type X laid out so, and what is its throughput?".

Formulas and constants come from ``shared/FORMULAS.md`` (section numbers cited as "F§n") and the papers it cites.
Units: bytes and GiB (2**30 B) for memory, GB/s (1e9 B/s) for bandwidth, FLOP/s, tokens/s, hours.
Every result carries ``assumptions``: the constants used, each with its source.

No pandas here (this module is imported by every ``gpuopt`` command): plain floats only.
"""

from __future__ import annotations

from functools import lru_cache

import dataclasses
import math

from gpuopt.kernel.errors import InputError
from optimizer.sizing.memory import (
    activation_bytes_per_gpu,
    embedding_params,
    gpu_share,
    lora_base_weight_bytes,
    model_state_parts,
)
from optimizer.sizing.network import (
    DEFAULT_NODE_NETWORK,
    GPUS_PER_NODE,
    PIPELINE_VALUES_PER_TOKEN_PER_HIDDEN,
    NodeNetwork,
)
from optimizer.sizing.specs import GpuSpec, known_gpus, load_gpu
from optimizer.sizing.throughput import (
    data_parallel_efficiency,
    peak_flops_and_note,
    replica_mfu,
    train_flops,
)
from optimizer.sizing.training_job import estimate_training, size_training
from optimizer.sizing.workload import (
    FULL_TRAINING_TASKS,
    GIB,
    LORA_ADAPTER_BYTES_PER_PARAM,
    LORA_BASE_BYTES,
    LORA_FLOPS_PER_PARAM_TOKEN,
    QLORA_NF4_BYTES_PER_PARAM,
    TRAINING_TASKS,
    USABLE_FRACTION,
    ZERO_K,
    ReplicaSizing,
    Workload,
    check_lora_targets,
    is_int,
    is_number,
    latency_targets,
    lora_adapter_params,
    lora_defaults,
    serve_lengths,
    validate_workload,
)


def _check_gpus(gpus: float) -> float:
    if not is_number(gpus) or gpus <= 0 or (gpus > 1 and not float(gpus).is_integer()):
        raise InputError("gpus", f"GPUs per replica must be a share 0 < g <= 1 or a whole number, got {gpus!r}",
                         accepted="0 < g <= 1, or 1, 2, 3, ...")
    return float(gpus)


# ----------------------------------------------------------------------------------------------- sizing


def size_replica(w: Workload, gpu: GpuSpec, gpus: float, *, pipeline_parallel: int = 1,
                 network: NodeNetwork | None = None) -> ReplicaSizing:
    """Memory and throughput of one replica of ``w`` spread over ``gpus`` GPUs of type ``gpu``.

    Serving (issue 10; :mod:`optimizer.sizing.serving`, fitted on the published measurements of
    ``shared/data/perf/serving.csv`` by ``benchmarks/serving_fit.py``): tensor parallel over the g GPUs of one
    instance (g <= 1: a share of one GPU with that share of its memory, bandwidth and FLOPs), or ``pipeline_parallel``
    p stages of t = g / p GPUs, one instance each (vLLM distributed serving docs: "the tensor parallel size is the
    number of GPUs you want to use in each node, and the pipeline parallel size is the number of nodes"). Per GPU of
    the most loaded stage:

    * weights: the stage's ``ceil(L/p)`` blocks (+ the embedding or the head) at the precision's bytes per parameter
      (embeddings 16-bit), over t; activations: the engine's iteration budget; the KV cache: the engine's memory
      share less the rest, paged (:func:`optimizer.sizing.serving.memory_per_gpu`);
    * the batch: ``w.concurrency``, else the largest that fits the KV cache and the engine's caps and meets the
      workload's p99 TTFT/TPOT targets (:func:`latency_targets`; :func:`optimizer.sizing.serving.best_point`);
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
    :func:`optimizer.sizing.training.search` (TP/PP/CP/EP/DP, ZeRO stage, micro-batch, recompute), memory as the
    frameworks count it, step time, MFU and goodput; ``pipeline_parallel`` > 1 fixes its pipeline stages.

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
    if w.task == "serve" and len(w.length_mix) > 1:
        return _size_mixture(w, gpu, gpus, pipeline_parallel=pipeline_parallel, network=network)
    if w.task == "lora":
        w = lora_defaults(w)
    pp = _check_pipeline(w, g, pipeline_parallel)
    net = network or DEFAULT_NODE_NETWORK
    m = w.model
    share = min(g, 1.0)  # share of one GPU's memory and bandwidth each GPU slot gives the replica
    n = max(1, int(g))  # GPUs the model is split over
    peak, peak_note = peak_flops_and_note(gpu, w.precision)
    mfu = replica_mfu(w, gpu)
    usable = gpu.memory_gib * share * USABLE_FRACTION
    assumptions = [
        f"usable memory = {USABLE_FRACTION:.0%} of the GPU's {gpu.memory_gib:g} GiB (x share {share:g}) "
        "(vLLM --gpu-memory-utilization default 0.9)",
        f"{gpu.name}: {gpu.memory_bandwidth_gbps:g} GB/s, {peak_note}, interconnect {gpu.link_label} "
        f"({gpu.link_gbps_one_way:g} GB/s one way) ({gpu.source})",
    ]
    keys = ("weights", "kv_cache", "gradients", "optimizer_states", "activations", "overhead")
    if w.task == "lora":
        keys = ("weights", "adapter_weights") + keys[1:]
    parts = dict.fromkeys(keys, 0.0)

    tp_used, tpot_ms, serve_extra, fits_override = 1, None, {}, None
    if w.task == "serve":
        from optimizer.sizing import serving as sv

        eng = sv.engine_for(w)
        inp, out = serve_lengths(w)
        tp_used = max(1, int(g / pp))
        if not sv.tp_supported(m, tp_used):
            ok = [t for t in range(1, GPUS_PER_NODE + 1) if sv.tp_supported(m, t)]
            raise InputError("tensor_parallel", f"{m.name}'s {m.heads} attention heads and {m.kv_heads} KV heads do "
                                                f"not split over {tp_used} GPUs", accepted=", ".join(map(str, ok)))
        spec = gpu if g >= 1 else gpu_share(gpu, g)
        layout = sv.Layout(tp_used, pp)
        ttft_t, tpot_t = latency_targets(w)
        hop = ((net.hop_latency_s, PIPELINE_VALUES_PER_TOKEN_PER_HIDDEN * m.hidden_size * 2.0
                / (net.gbps_per_node * 1e9)) if pp > 1 else (0.0, 0.0))
        corr = None
        if w.measured is not None:  # the rows nearest the batch the replica is sized to run at (issue 31, point 6)
            def batch_of(c):
                p = sv.best_point(m, spec, layout, w.precision, eng, inp, out, ttft_slo_ms=ttft_t, tpot_slo_ms=tpot_t,
                                  hop=hop, scale=c, window=w.context_tokens)
                if p is None:
                    return None
                o = _operating_capacity(w, spec, layout, eng, inp, out, hop, c) \
                    if sv.meets_targets(p, ttft_t, tpot_t) else None
                return o.batch if o is not None else p.batch

            corr = w.measured.correction_at(m, spec, layout, w.precision, eng, inp, out, batch_of,
                                            concurrency=w.concurrency)
        pt = sv.best_point(m, spec, layout, w.precision, eng, inp, out, ttft_slo_ms=ttft_t, tpot_slo_ms=tpot_t,
                           concurrency=w.concurrency, hop=hop, scale=corr, window=w.context_tokens)
        mem = sv.memory_per_gpu(m, spec, layout, w.precision, eng)
        shown = pt or sv.point(m, spec, layout, w.precision, eng, w.concurrency or 1, inp, out, hop=hop, scale=corr)
        held = sv.tokens_held(eng, inp, out)
        parts["weights"] = mem["weights"]
        parts["activations"] = mem["activations"]
        # at least one sequence of the context window (vLLM's max_model_len) must fit the KV cache
        parts["kv_cache"] = max(shown.batch * held, float(w.context_tokens or 0)) * mem["kv_per_token"]
        usable = spec.memory_gib * eng.memory_fraction
        meets = pt is not None and sv.meets_targets(pt, ttft_t, tpot_t)
        fits_override = meets
        tokens_per_s, tpot_ms = shown.tokens_per_second, shown.tpot_ms
        opp = _operating_capacity(w, spec, layout, eng, inp, out, hop, corr) if meets else None
        if opp is not None:  # sized at the operating point: the highest rate whose p99s meet the targets
            tokens_per_s, tpot_ms = opp.rate * out, opp.tpot_ms
        elif meets and w.concurrency is None and (ttft_t is not None or tpot_t is not None):
            meets = fits_override = False  # no rate meets the p99 targets once the TPOT tail is counted
        flops_per_s = None
        cap = sv.max_batch_memory(m, spec, layout, w.precision, eng, inp, out) \
            if sv.window_fits(m, spec, layout, w.precision, eng, w.context_tokens) else 0  # the window: no start
        serve_extra = {"ttft_ms": shown.ttft_ms, "concurrency": shown.batch, "precision": w.precision,
                       "engine": eng.name, "input_tokens": inp, "output_tokens": out,
                       "ttft_target_ms": ttft_t, "tpot_target_ms": tpot_t,
                       "estimate_source": corr.source if corr else "model (optimizer/sizing/serving.py fit)",
                       "kv_capacity_sequences": cap, "meets_targets": meets}
        if opp is not None:
            serve_extra.update(ttft_ms=opp.ttft_ms, concurrency=max(1, round(opp.batch)), request_rate=opp.rate,
                               utilization=opp.utilization)
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
            f"{sv.P99_OVER_MEAN_TTFT} (TTFT; MLPerf server runs, DERIVED), x the simulation's tail for TPOT at the "
            f"operating point (1.1 + 4 r^0.6 u^0.25, at least {sv.P99_OVER_MEAN_TPOT}; benchmarks/tail_fit.py)",
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
            *([f"sized at the operating point: {opp.rate:,.3g} requests/s (Poisson) per replica, "
               f"{opp.utilization:.0%} of the {opp.max_rate:,.3g} it saturates at, is the highest rate whose p99s "
               f"meet the targets (mean-field continuous batching with M/D/1 queueing for a slot, "
               f"optimizer/sizing/operating.py): mean batch {opp.batch:,.1f}, TTFT {opp.ttft_ms:,.0f} ms with "
               f"queueing, TPOT {opp.tpot_ms:.1f} ms, {opp.rate * out:,.0f} tokens/s"] if opp is not None else []),
            f"layout TP {tp_used} x PP {pp}" + (f" ({net.fabric or 'unknown network'} {net.gbps_per_node:g} GB/s per "
                                                f"node between stages, {net.hop_latency_s * 1e6:.1f} us per hop)"
                                                if pp > 1 else ""),
        ]
        if eng.prefix_hit:
            assumptions.append(
                f"prefix cache: {eng.prefix_hit:.0%} of input tokens served from cache (your assumption; vLLM "
                "automatic prefix caching, SGLang RadixAttention): their prefill is not recomputed, so TTFT and the "
                "prefill share of each iteration shrink; every running sequence still holds its whole context in the "
                "KV cache (cached blocks are shared, idle ones evicted first), so the batch the cache holds is "
                "unchanged, and the rate holds only while the cached prefixes fit the KV cache left over")
        if eng.spec_tokens:
            plain1 = sv.point(m, spec, layout, w.precision, sv.load_engine(w.engine), 1, inp, out, hop=hop)
            spec1 = sv.point(m, spec, layout, w.precision, eng, 1, inp, out, hop=hop)
            if spec1.step_ms >= plain1.step_ms:
                assumptions.append(
                    f"WARNING: speculative decoding is slower than none here: {eng.spec_tokens} draft tokens at "
                    f"acceptance {eng.acceptance:g} give {spec1.step_ms:.1f} ms per token at batch 1 against "
                    f"{plain1.step_ms:.1f} ms without (fewer draft tokens, or a higher acceptance rate, pay)")
            dc = eng.draft_cost if eng.draft_cost is not None else 1.0 / m.layers
            assumptions.append(
                f"speculative decoding: {eng.spec_tokens} draft tokens per step, each accepted with probability "
                f"{eng.acceptance:g} (your assumption): {sv.tokens_per_verification(eng.spec_tokens, eng.acceptance):.2f} "
                "tokens per verification step, (1 - a^(k+1)) / (1 - a) (Leviathan et al., ICML 2023); the "
                f"verification reads the weights and KV cache once and computes {eng.spec_tokens + 1} tokens per "
                f"sequence; each draft token costs {dc:.3f} of a decode iteration (one transformer layer: an "
                "EAGLE-style draft head, arXiv 2401.15077); the draft's weights are left out of memory. At large "
                "batches the iteration turns compute-bound and the gain shrinks or reverses")
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
        targets = check_lora_targets(w.lora_rank, w.lora_targets)
        base = lora_base_weight_bytes(m, w.precision)
        parts["weights"] = base / n if w.zero_stage == 3 else base
        a_w, a_g, a_o = model_state_parts(float(adapters), w.zero_stage, n)
        parts["adapter_weights"], parts["gradients"], parts["optimizer_states"] = a_w, a_g, a_o
        act, act_note = activation_bytes_per_gpu(w)
        parts["activations"] = act
        bpp = LORA_BASE_BYTES[w.precision]
        quantized = bpp < 2.0
        largest_matrix = float(m.hidden_size * max(m.heads * m.head_dim, m.intermediate_size))
        if w.zero_stage == 3:  # as for training, also on one GPU (conservative; keeps memory non-increasing in g)
            block = max(0.0, (m.params_total - embedding_params(m)) / m.layers)
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
    from optimizer.sizing.serving import P99_OVER_MEAN_TPOT, P99_OVER_MEAN_TTFT

    # the keys users give (--tpot-ms / --ttft-ms, plan files' tpot_ms / ttft_ms), not the Workload's attributes
    field = "tpot_ms" if tpot_t is not None and best[1] * P99_OVER_MEAN_TPOT > tpot_t else "ttft_ms"
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
    if not is_int(tp) or not 1 <= tp <= GPUS_PER_NODE:
        raise InputError("tensor_parallel", f"must be a whole number 1..{GPUS_PER_NODE} (GPUs of one node), got {tp!r}",
                         accepted=f"1..{GPUS_PER_NODE}")
    if not is_int(pp) or pp < 1:
        raise InputError("pipeline_parallel", f"must be a whole number >= 1, got {pp!r}", accepted=">= 1")
    s = size_replica(w, gpu, float(tp * pp), pipeline_parallel=pp)
    return s if s.fits else None


def _node_note(net: NodeNetwork, gpus: float) -> str:
    """The node-network clause of the data-parallel assumption line."""
    where = "crossed" if gpus > net.gpus_per_node else "not crossed"
    return (f" (node network {net.gbps_per_node:g} GB/s {net.fabric or 'unknown fabric'} beyond {net.gpus_per_node} "
            f"GPUs: {where}; {net.source})")


def _check_pipeline(w: Workload, g: float, stages: object) -> int:
    """Check a pipeline stage count for ``size_replica``; return it.

    Raises:
        InputError("pipeline_parallel"): not a whole number >= 1; > 1 for a training task (ZeRO data parallel
        replicas), for a share of a GPU, for a GPU count that is not a multiple of it, or above the model's layers.
    """
    if not is_int(stages) or stages < 1:
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
    if not is_int(max_gpus) or max_gpus < 1:
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
        if sizing is not None and w.task == "serve":
            sizing = _most_per_gpu(w, spec, sizing, max_gpus)
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
        if sizing.utilization is not None:  # sized at the operating point (issue 27)
            out["sized_request_rate_per_replica"] = sizing.request_rate
            out["sized_utilization"] = sizing.utilization
    if w.task in TRAINING_TASKS:
        flops = train_flops(w)
        out["train_flops"] = flops
        out["gpu_hours"] = gpu_hours(w, sizing)
        out["wall_hours_one_replica"] = flops / sizing.flops_per_second_per_replica / 3600.0
    out["assumptions"] = sizing.assumptions
    return out


def _most_per_gpu(w: Workload, gpu: GpuSpec, smallest: ReplicaSizing, max_gpus: int) -> ReplicaSizing:
    """A serving replica under latency targets (no fixed concurrency) whose smallest size meets them only at batch
    1 -- no batching, a vanishing rate (Llama-3.1-70B on 2 x A100 under a 50 ms TPOT: 0.16 tokens/s), which is no
    answer: of the tensor-parallel sizes from it up to one node (:data:`GPUS_PER_NODE`), the one giving the most
    tokens/s per GPU at its operating point, as the planner chooses a replica inside an instance
    (optimizer.planning.candidates); ties keep the smaller. A smallest replica that batches is kept (a 7B model on
    one 24 GB card, even where TP2 gives more per GPU: the planner weighs that per offer). ``smallest`` when it is
    the pick."""
    from optimizer.sizing import serving as sv

    ttft_t, tpot_t = latency_targets(w)
    if w.concurrency is not None or (ttft_t is None and tpot_t is None) or smallest.pipeline_parallel > 1 \
            or (smallest.concurrency or 0) > 1:
        return smallest
    best = smallest
    g = int(smallest.gpus_per_replica) * 2
    while g <= min(GPUS_PER_NODE, max_gpus):
        if sv.tp_supported(w.model, g):
            s = size_replica(w, gpu, float(g))
            if s.fits and s.tokens_per_second_per_replica / g > \
                    best.tokens_per_second_per_replica / best.gpus_per_replica * (1 + 1e-9):
                best = s
        g *= 2
    if best is smallest:
        return smallest
    per = smallest.tokens_per_second_per_replica / smallest.gpus_per_replica
    return dataclasses.replace(best, assumptions=best.assumptions + (
        f"replica of {best.gpus_per_replica:g} GPUs (TP{best.tensor_parallel}): the most tokens/s per GPU under the "
        f"targets of TP{smallest.tensor_parallel}..TP{min(GPUS_PER_NODE, max_gpus)} in one node (the smallest "
        f"that holds the model, {smallest.gpus_per_replica:g} GPUs, meets them only at batch 1: {per:,.3g} tokens/s "
        "per GPU; --tensor-parallel to choose)",))


def _size_mixture(w: Workload, gpu: GpuSpec, gpus: float, *, pipeline_parallel: int, network) -> ReplicaSizing:
    """A serving replica of a trace's mix of request sizes (``w.length_mix``: (share of requests, input, output)
    per prompt-length range, :mod:`optimizer.sizing.buckets`): each range sized alone at its lengths, and the
    replica's request rate the harmonic mix ``1 / sum(share_b / rate_b)`` -- each request takes its own range's
    share of the replica's time (Mélange's load model, arXiv 2404.14527 s.5) -- so long prompts cost what they cost
    instead of the mean length's; tokens/s = that rate x the mix's mean output. Memory is the range's that needs
    the most; TTFT and TPOT the request-weighted means of the ranges' at their sized loads, the batch by Little's law
    (rate x mean output x TPOT); fits when every range fits."""
    import dataclasses

    parts = []
    for share, inp, out in w.length_mix:
        wb = dataclasses.replace(w, input_tokens=int(inp), output_tokens=int(out), length_mix=())
        parts.append((share, float(out), size_replica(wb, gpu, gpus, pipeline_parallel=pipeline_parallel,
                                                      network=network)))
    fits = all(s.fits and s.tokens_per_second_per_replica > 0 for _, _, s in parts)
    load = sum(share * out / s.tokens_per_second_per_replica for share, out, s in parts
               if s.tokens_per_second_per_replica > 0)  # replica-seconds per request
    mean_out = sum(share * out for share, out, _ in parts)
    rate = 1.0 / load if load > 0 and fits else 0.0
    worst = max(parts, key=lambda p: p[2].memory_gib_per_gpu)[2]
    inp_mean = round(sum(share * s.input_tokens for share, _, s in parts))
    note = ("request-size mix of the trace: " + "; ".join(
        f"{100 * share:.0f} % of {s.input_tokens:,} in / {s.output_tokens:,} out at "
        f"{s.tokens_per_second_per_replica / max(out, 1.0):,.3g} requests/s alone" for share, out, s in parts)
        + f" -> {rate:,.3g} requests/s mixed (harmonic: each request its own range's share of the replica's time)")
    # the mix's own figures: TTFT and TPOT the request-weighted means of the ranges' (each at its own load), the
    # batch by Little's law at the mixed rate
    ttft = sum(share * (s.ttft_ms or 0.0) for share, _, s in parts)
    tpot = sum(share * (s.time_per_output_token_ms or 0.0) for share, _, s in parts)
    batch = max(1, round(rate * mean_out * tpot / 1e3)) if rate > 0 else worst.concurrency
    return dataclasses.replace(
        worst, fits=fits, meets_targets=fits, tokens_per_second_per_replica=rate * mean_out,
        time_per_output_token_ms=tpot, ttft_ms=ttft, concurrency=batch,
        input_tokens=inp_mean, output_tokens=round(mean_out), request_rate=rate if worst.request_rate else None,
        utilization=None, assumptions=(note,) + tuple(worst.assumptions))


def _operating_capacity(w: Workload, spec: GpuSpec, layout, eng, inp: float, out: float, hop, corr):
    """The replica's operating point at the highest request rate whose p99 TTFT and TPOT meet ``w``'s targets
    (:func:`optimizer.sizing.operating.max_rate_within`, the means x the MLPerf p99/mean ratios); None for a
    workload with no target (offline: sized at saturation), a given concurrency, or a replica that does not
    start."""
    from optimizer.sizing import operating as op
    from optimizer.sizing import serving as sv

    ttft_t, tpot_t = latency_targets(w)
    if w.concurrency is not None or (ttft_t is None and tpot_t is None):
        return None
    key = (w.model, spec, layout, w.precision, eng, inp, out, hop, corr, w.context_tokens, ttft_t, tpot_t)
    try:
        return _capacity_cached(*key)
    except TypeError:  # something unhashable (a user's measurement): computed each time
        return _capacity(*key)


def _capacity(m, spec, layout, precision, eng, inp, out, hop, corr, window, ttft_t, tpot_t):
    """:func:`_operating_capacity`'s work on hashable inputs."""
    from optimizer.sizing import operating as op
    from optimizer.sizing import serving as sv

    e = op.replica_engine(m, spec, layout, precision, eng, inp, out, hop=hop, scale=corr, window=window)
    if e is None:
        return None
    return op.max_rate_within(e, ttft_t, tpot_t, p99_over_mean=(sv.P99_OVER_MEAN_TTFT, sv.P99_OVER_MEAN_TPOT))


#: The same replica shape is sized again and again (every plan, alternative and test of a process): its
#: operating-point capacity is kept (frozen, hashable inputs; a few KB each).
_capacity_cached = lru_cache(maxsize=4096)(_capacity)


def operating_point(w: Workload, gpu: GpuSpec, gpus_per_replica: float, pipeline_parallel: int, rate: float, *,
                    network=None, simulate: bool = True, trace=None, replicas: int = 1):
    """A serving replica of ``w`` on ``gpu`` (``gpus_per_replica`` GPUs, ``pipeline_parallel`` stages) at ``rate``
    requests/s (issue 27): its batch, TTFT and TPOT (mean, p50/p90/p99) and how close it runs to saturation
    (:mod:`optimizer.sizing.operating`; the simulation when ``simulate``, else the mean field). ``trace``: a
    :class:`optimizer.sizing.serving.TraceLengths` with arrival times -- its requests, dealt round-robin over
    ``replicas`` replicas, are replayed instead of Poisson arrivals (each request its own lengths). None when the
    replica does not start (weights, context window)."""
    from optimizer.sizing import operating as op
    from optimizer.sizing import serving as sv

    net = network or DEFAULT_NODE_NETWORK
    m = w.model
    g = float(gpus_per_replica)
    pp = max(1, int(pipeline_parallel))
    spec = gpu if g >= 1 else gpu_share(gpu, g)
    layout = sv.Layout(max(1, int(g / pp)), pp)
    eng = sv.engine_for(w)
    inp, out = serve_lengths(w)
    hop = ((net.hop_latency_s, PIPELINE_VALUES_PER_TOKEN_PER_HIDDEN * m.hidden_size * 2.0
            / (net.gbps_per_node * 1e9)) if pp > 1 else (0.0, 0.0))
    corr = None
    if w.measured is not None:  # the rows nearest the mean batch at this rate (issue 31, point 6)
        def batch_of(c):
            e = op.replica_engine(m, spec, layout, w.precision, eng, inp, out, hop=hop, scale=c,
                                  window=w.context_tokens)
            return None if e is None or rate <= 0 else op.mean_field(e, rate).batch

        corr = w.measured.correction_at(m, spec, layout, w.precision, eng, inp, out, batch_of,
                                        concurrency=w.concurrency)
    e = op.replica_engine(m, spec, layout, w.precision, eng, inp, out, hop=hop, scale=corr, window=w.context_tokens)
    if e is None:
        return None
    if w.concurrency is not None:  # a fixed batch: the engine runs at most that many sequences at once
        import dataclasses

        e = dataclasses.replace(e, cap=max(1, min(e.cap, int(w.concurrency))))
    if rate <= 0:
        return op.mean_field(e, 0.0)
    if rate < 1e-6 * e.max_rate():  # a vanishing load: no queue, and simulated times would lose their precision
        import dataclasses

        mf = op.mean_field(e, rate)
        return dataclasses.replace(mf, method="mean-field (vanishing load: no queue)",
                                   ttft_p50_ms=mf.ttft_ms, ttft_p90_ms=mf.ttft_ms, ttft_p99_ms=mf.ttft_ms,
                                   tpot_p50_ms=mf.tpot_ms, tpot_p90_ms=mf.tpot_ms, tpot_p99_ms=mf.tpot_ms)
    if trace is not None and trace.arrivals:
        arr, lens = list(trace.arrivals[::replicas]), list(trace.lengths[::replicas])
        return op.simulate(e, rate, arrivals=arr, lengths=lens, n_requests=len(arr),
                           warmup=min(op.SIM_WARMUP, len(arr) // 10), time_budget_s=2.0)
    return op.simulate(e, rate) if simulate else op.mean_field(e, rate)


def replicas_at_load(w: Workload, gpu: GpuSpec, gpus_per_replica: float, pipeline_parallel: int, rate: float,
                     max_replicas: int = 10000, trace=None):
    """(replicas, operating point): the fewest replicas whose share of ``rate`` requests/s (split evenly) runs with
    p99 TTFT and TPOT within the workload's targets (:func:`optimizer.sizing.workload.latency_targets`; offline:
    below saturation), by the simulation -- of Poisson arrivals, or of ``trace``'s own arrival times dealt
    round-robin over the replicas (:func:`operating_point`). (None, None) when the replica does not start or one
    replica per ``max_replicas`` still misses them (or, with a trace, when it has fewer requests than replicas)."""
    ttft_t, tpot_t = latency_targets(w)

    def ok(pt) -> bool:
        if pt is None or pt.saturated:
            return False
        return (ttft_t is None or (pt.ttft_p99_ms or math.inf) <= ttft_t) and \
            (tpot_t is None or (pt.tpot_p99_ms or math.inf) <= tpot_t)

    first = operating_point(w, gpu, gpus_per_replica, pipeline_parallel, rate, simulate=False)
    if first is None:
        return None, None
    n = max(1, math.ceil(rate / first.max_rate - 1e-9)) if first.max_rate > 0 else 1
    while n <= max_replicas:
        if trace is not None and len(trace.arrivals) < 20 * n:
            return None, None  # too few requests left per replica to read a p99 from
        pt = operating_point(w, gpu, gpus_per_replica, pipeline_parallel, rate / n, trace=trace, replicas=n)
        if ok(pt):
            return n, pt
        n = n + 1 if n < 16 else math.ceil(n * 1.1)
    return None, None


#: Fractions of a configuration's saturation rate the latency curve samples (``gpuopt estimate --sweep``).
SWEEP_LOADS = (0.05, 0.15, 0.3, 0.45, 0.6, 0.7, 0.8, 0.9)


def latency_curve(w: Workload, gpu: GpuSpec, *, precisions: tuple[str, ...] | None = None,
                  tensor_parallels: tuple[int, ...] = (1, 2, 4, 8),
                  loads: tuple[float, ...] = SWEEP_LOADS) -> tuple[list[dict], list[str]]:
    """The throughput/latency curve of serving ``w`` on ``gpu`` (issue 27, ``estimate --sweep``): for each precision
    (default ``w.precision``) and tensor-parallel size that holds the model, the simulated operating point
    (:func:`operating_point`) at each share of its saturation rate in ``loads``. Each point: precision,
    tensor_parallel, rate (requests/s per replica), utilization, tokens_per_second_per_gpu, tokens_per_second_per_user
    (1000 / p50 TPOT), ttft/tpot p50 and p99 (ms), meets_targets (p99 within the workload's targets) and ``pareto``:
    no other point has at least its tokens/s per GPU and per user (one of them strictly more; AIConfigurator's axes).
    Returns (points, notes: the configurations left out and why)."""
    import dataclasses

    from optimizer.sizing import serving as sv

    ttft_t, tpot_t = latency_targets(w)
    out, notes = [], []
    for prec in precisions or (w.precision,):
        wp = dataclasses.replace(w, precision=prec)
        for tp in tensor_parallels:
            if tp > GPUS_PER_NODE or not sv.tp_supported(w.model, tp):
                continue
            try:
                sv.matmul_peak_flops(gpu, prec)
                zero = operating_point(wp, gpu, tp, 1, 0.0)
            except InputError as exc:
                notes.append(f"{prec}: {exc.message}")
                break
            if zero is None:
                notes.append(f"{prec} TP{tp}: does not hold the model (weights, or the context window)")
                continue
            for f in loads:
                pt = operating_point(wp, gpu, tp, 1, f * zero.max_rate)
                if pt is None or pt.saturated or pt.tpot_p50_ms is None:
                    continue
                out.append({"precision": prec, "tensor_parallel": tp, "rate": pt.rate, "utilization": pt.utilization,
                            "tokens_per_second_per_gpu": pt.tokens_per_second / tp,
                            "tokens_per_second_per_user": 1e3 / pt.tpot_p50_ms,
                            "ttft_p50_ms": pt.ttft_p50_ms, "ttft_p99_ms": pt.ttft_p99_ms,
                            "tpot_p50_ms": pt.tpot_p50_ms, "tpot_p99_ms": pt.tpot_p99_ms,
                            "meets_targets": (ttft_t is None or pt.ttft_p99_ms <= ttft_t)
                            and (tpot_t is None or pt.tpot_p99_ms <= tpot_t)})
    g_, u_ = "tokens_per_second_per_gpu", "tokens_per_second_per_user"
    for p in out:
        p["pareto"] = not any(q is not p and q[g_] >= p[g_] and q[u_] >= p[u_] and (q[g_] > p[g_] or q[u_] > p[u_])
                              for q in out)
    return out, notes
