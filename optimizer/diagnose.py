"""Why a workload cannot be planned: the memory one replica needs against the largest instance offered, and the
GPUs a replica would fit on (the "GPU it would take" of an infeasible plan). Pure functions over the workload and
the offers; nothing here solves."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

    from optimizer.sizing import Workload


def no_fit_reason(workload: "Workload", offers: "pd.DataFrame", rejected: dict) -> dict:
    """Why no offer can host one replica: the memory one replica needs vs the largest instance offered."""
    from optimizer.planning.candidates import MAX_GPUS_PER_REPLICA
    from optimizer.sizing import size_replica
    from optimizer.sizing.specs import load_gpu

    if offers.empty:
        return {"kind": "no_offers", "message": "no offers match the filters (provider, region, GPU, pricing)"}
    if workload.task == "serve":
        why = _serving_reason(workload, rejected)
        if why and why["kind"] == "needs_multi_node":  # where one node would hold it (GPUs someone sells)
            fits = gpus_that_fit(workload, offered=offers.attrs.get("catalog_gpus"))
            if fits:
                why["message"] += "; one node would hold it on " + ", ".join(f"{n:g} x {g}" for g, n in fits[:4])
            why["gpus_that_fit"] = [{"gpu_model": g, "gpus_per_replica": n} for g, n in fits]
        if why:
            return why
    counts = {k: v for k, v in rejected.items() if v}
    if workload.task in ("train", "finetune") and counts.get("precision_unsupported") and \
            counts["precision_unsupported"] >= counts.get("does_not_fit", 0) + counts.get("no_cluster_fabric", 0):
        need = {"fp8": "FP8 tensor cores (Ada, Hopper, Blackwell)", "bf16": "bf16 (Ampere and later)"}.get(
            workload.precision, workload.precision)
        return {"kind": "precision_unsupported",
                "message": f"no offered GPU trains in {workload.precision}: it needs {need}; "
                           f"{counts['precision_unsupported']:,} offers were left out for it (widen --gpu, or "
                           "--precision bf16 / fp16)"}
    mem = offers.assign(total=offers["gpu_count"] * offers["gpu_memory_gib"]).sort_values("total", ascending=False)
    top = mem.iloc[0]
    need = None
    try:
        s = size_replica(workload, load_gpu(top["gpu_model"]), float(top["gpu_count"]))
        need = s.memory_gib_per_replica
    except Exception:  # the largest instance may carry a GPU without a datasheet row
        pass
    msg = "no offered GPU can hold one replica"
    if need is not None:
        msg += (f": one replica needs about {need:,.1f} GiB of GPU memory; the largest offered instance, "
                f"{top['provider']} {top['instance_type']} ({top['gpu_count']:g} x {top['gpu_model']}), has {top['total']:,.0f} GiB "
                + (f"and multi-instance replicas of up to {MAX_GPUS_PER_REPLICA} GPUs over NVLink-class instances did not "
                   "fit either" if workload.task not in ("train", "finetune") else
                   "and jobs of up to 16,384 GPUs over instances with a cluster fabric did not fit either"))
    if rejected.get("no_spec"):
        msg += f"; {rejected['no_spec']} offers were skipped because their GPU has no datasheet row"
    # only GPUs some provider in the price data sells (the catalog's, before the plan's filters: api sets
    # offers.attrs["catalog_gpus"]); a datasheet row alone (GB300, B300, MI355X) is not something to buy
    fits = gpus_that_fit(workload, offered=offers.attrs.get("catalog_gpus"))
    if fits:
        msg += "; it would fit on " + ", ".join(f"{n:g} x {g}" for g, n in fits[:4]) + \
            " (widen --gpu/--provider/--region, or lower --precision/--context/--concurrency)"
    return {"kind": "no_gpu_fits", "message": msg, "memory_gib_per_replica": need,
            "gpus_that_fit": [{"gpu_model": g, "gpus_per_replica": n} for g, n in fits]}


def _serving_reason(workload: "Workload", rejected: dict) -> dict | None:
    """Why no offer serves when memory is not the cause (issue 10): no allowed precision runs on the offered GPUs,
    or the replicas that fit meet the latency targets at no batch. None when memory is the cause."""
    from optimizer.sizing import latency_targets
    from optimizer.sizing.specs import known_gpus, load_gpu

    counts = {k: v for k, v in rejected.items() if v}
    if counts.get("no_disaggregated_unit"):  # --disaggregate on where no offer has room for two pools
        return {"kind": "no_disaggregated_unit",
                "message": f"{counts['no_disaggregated_unit']} offers have one GPU per instance and no cluster fabric: "
                           "no room for separate prefill and decode replicas (--disaggregate on)"
                           + ("; the others miss the targets or hold no replica" if len(counts) > 1 else "")
                           + ": use --disaggregate auto (co-located where it cannot split) or widen --gpu/--provider "
                           "to multi-GPU instances or a cluster fabric"}
    if counts.get("no_pool_fabric"):  # a prefill or decode pool (gpuopt.phase_mix) where no offer has a fabric
        return {"kind": "no_pool_fabric",
                "message": f"{counts['no_pool_fabric']} offers have no cluster fabric to move the KV cache between "
                           "the prefill and decode pools" + ("; the others miss the targets or hold no replica"
                                                             if len(counts) > 1 else "")}
    if counts.get("precision_unsupported") and not counts.get("misses_latency_target") and \
            counts["precision_unsupported"] >= counts.get("does_not_fit", 0) + counts.get("no_cluster_fabric", 0):
        from optimizer.sizing.serving import supported_precisions

        wanted = workload.precision_options or (workload.precision,)
        gpus = [g for g in known_gpus() if any(p in supported_precisions(load_gpu(g)) for p in wanted)]
        return {"kind": "precision_unsupported",
                "message": f"no offered GPU runs {'/'.join(wanted)}: bf16 needs Ampere or later (Volta and Turing "
                           f"have no bf16: serve them in fp16), fp8 FP8 tensor cores (Ada, Hopper, Blackwell, MI300X, "
                           f"Gaudi2), fp4 Blackwell; GPUs that do: {', '.join(gpus)} (widen --gpu, or let the planner "
                           "choose: --precision auto, or fp16)"}
    layout = {k: counts.get(k, 0) for k in ("not_whole_node", "no_cluster_fabric", "no_fabric_bandwidth")}
    if sum(layout.values()) and not counts.get("misses_latency_target"):
        # the weights fit over several instances, but not as engines run replicas (issue 31): say that rule, not memory
        parts = [f"{n:,} {why}" for n, why in ((layout["not_whole_node"], "are smaller than one node of their GPU"),
                                               (layout["no_cluster_fabric"], "have no cluster fabric"),
                                               (layout["no_fabric_bandwidth"], "have a fabric of no stated bandwidth"))
                 if n]
        return {"kind": "needs_multi_node",
                "message": "no offered instance holds one replica alone, and replicas span instances only node by "
                           "node over a cluster fabric (engines run a replica on one node): of the offers that would "
                           "need several, " + ", ".join(parts) + " (widen --gpu/--provider to larger nodes or a "
                           "cluster fabric, or lower --precision/--context)"}
    if counts.get("misses_latency_target"):  # some offers hold the model: the targets, not memory, rule them out
        ttft, tpot = latency_targets(workload)
        goal = ", ".join(x for x in (f"p99 TTFT <= {ttft:g} ms" if ttft else "",
                                     f"p99 TPOT <= {tpot:g} ms" if tpot else "") if x)
        return {"kind": "misses_latency_target",
                "message": f"{counts['misses_latency_target']} offers hold the model but meet {goal} at no batch (the "
                           "others have too little memory, need a cluster fabric or run none of the precisions): "
                           + ("lower --concurrency (it is fixed), " if workload.concurrency is not None else "")
                           + "relax --ttft-ms/--tpot-ms or --scenario, shorten --input-tokens, use a faster precision "
                           "(--precision bf16,fp8) or widen --gpu"}
    return None


def gpus_that_fit(workload: "Workload", max_gpus: int = 8,
                  offered: "set[str] | None" = None) -> list[tuple[str, float]]:
    """GPU models of the spec table on which one replica fits within ``max_gpus`` GPUs and one node of the GPU
    (``optimizer.sizing.node_gpus``: 8 on an HGX board, 4 on a GB200 tray, 1 on a GH200 -- a replica on one node,
    issue 31), fewest GPUs then most memory first: the "GPU that would fit" of an infeasible plan. ``offered``: only
    these GPU models (the ones the price data sells), None for every row of the table."""
    from optimizer.sizing import min_gpus_per_replica, node_gpus
    from optimizer.sizing.specs import known_gpus, load_gpu

    out = []
    for name in known_gpus():
        if offered is not None and name not in offered:
            continue
        try:
            s = min_gpus_per_replica(workload, load_gpu(name), max_gpus=min(max_gpus, node_gpus(name)))
        except Exception:  # a GPU the workload cannot use (e.g. a precision it lacks)
            continue
        if s is not None:
            out.append((name, float(s.gpus_per_replica), -load_gpu(name).memory_gib))
    out.sort(key=lambda t: (t[1], t[2], t[0]))
    return [(n, g) for n, g, _ in out]
