"""What a plan request brings besides its workloads (gpuopt.api.plan_request): the commitments the team owns
(``--owned``, issue 26 point 7) and the quantized checkpoints its serving precisions assume (issue 26 point 6); a
request trace's lengths and request-size mix (``--trace``, issue 27)."""

from __future__ import annotations

from gpuopt.kernel.errors import InputError


def owned_commitments(plan, filtered, offers) -> tuple[list, list[str]]:
    """The commitments of ``plan.owned`` (providers.owned.load_owned_file) the plan can count -- instance
    commitments of an instance type in the price data, and savings plans (a spend per hour) covering on-demand offers
    the plan may use (optimizer.planning.owned.owned_plan_offers) -- and notes on the others."""
    if not plan.owned:
        return [], []
    from providers.owned import load_owned_file

    known: dict[str, set[str]] = {}
    for prov, it in offers[["provider", "instance_type"]].drop_duplicates().itertuples(index=False):
        known.setdefault(str(prov), set()).add(str(it))
    rows = load_owned_file(plan.resolve_path(plan.owned), known_types=known)
    # an owned commitment is used only where the plan may place instances: the offers left after its provider,
    # region, region-group and GPU filters (a breaker's --region-group eu plan ran on an owned us-east-1 RI)
    allowed = {(str(p_), str(r_), str(t_)) for p_, r_, t_ in
               filtered[["provider", "region", "instance_type"]].drop_duplicates().itertuples(index=False)}
    keep, notes = [], []
    od = filtered[filtered["pricing"].astype(str) == "on_demand"][["provider", "region", "instance_type"]]
    od_keys = set(od.drop_duplicates().itertuples(index=False, name=None))
    for c in rows:
        if c.is_spend:
            from optimizer.planning.owned import plan_covers

            if not c.usd_per_hour:
                notes.append(f"owned {c.commitment_discount_id}: a savings plan of unknown spend per hour: not counted "
                             "(give usd_per_hour)")
            elif not any(plan_covers(c, *k) for k in od_keys):
                notes.append(f"owned {c.commitment_discount_id} ({c.provider} savings plan, {c.usd_per_hour:g} USD/h): "
                             "covers no on-demand offer this plan may use (its provider, region or family is outside "
                             "the plan's filters): not used")
            else:
                keep.append(c)
            continue
        if not c.count:
            notes.append(f"owned {c.commitment_discount_id}: its instance count is unknown: not counted (give count)")
            continue
        if (c.provider, c.region, c.instance_type) not in allowed:
            notes.append(f"owned {c.commitment_discount_id}: {c.instance_type} in {c.provider} {c.region} is outside "
                         "this plan's providers, regions, region groups or GPUs: not used")
            continue
        keep.append(c)
    return keep, notes


def checkpoint_notes(ws, result, asked: list) -> list[str]:
    """For each serving workload whose replicas run a quantized precision (fp8, int8, int4; its own sizing, not a
    line it shares): the checkpoint it assumes -- the one the user named when it is in the table, else the one with
    the best published recovery (optimizer.sizing.checkpoints) -- or that none with a published comparison is known,
    its quality then the user's to check. ``asked``: the model each workload named, in order."""
    from optimizer.sizing.checkpoints import AUTO_MIN_RECOVERY_PCT, checkpoints_for, native_precision, serves_variant

    used_by = {d.get("name"): {str(s.get("precision") or "") for s in d.get("sizing") or []}
               for d in (getattr(result, "workloads", None) or [])}
    out = []
    for w, named in zip(ws, asked):
        if w.workload.task != "serve":
            continue
        model = w.workload.model.name
        repo = str(named or "").lower()
        for prec in sorted(used_by.get(w.name, set()) & {"fp8", "int8", "int4"}):
            cands = [c for c in checkpoints_for(model) if c.precision == prec and (prec == "fp8" or c.weight_only)
                     and serves_variant(c, named or None)]
            mine = [c for c in cands if c.checkpoint.lower() == repo]
            best = mine[0] if mine else max(cands, key=lambda c: -1.0 if c.recovery_pct is None else c.recovery_pct,
                                            default=None)
            if best is not None and best.recovery_pct is not None:
                out.append(f"{w.name}: {prec} replicas assume the published checkpoint {best.describe()}; "
                           f"source {best.source}" + ("" if best.recovery_pct >= AUTO_MIN_RECOVERY_PCT else
                                                      f" (below the {AUTO_MIN_RECOVERY_PCT:g} % that --precision auto "
                                                      "asks: check its quality on your task)"))
            elif native_precision(model) and native_precision(model)[0] == prec:
                out.append(f"{w.name}: {prec} replicas run the publisher's own checkpoint: "
                           f"{native_precision(model)[1]}")
            elif prec == "fp8":
                out.append(f"{w.name}: fp8 replicas quantize the 16-bit checkpoint on load (vLLM online dynamic FP8; "
                           "FP8 W8A8 keeps 99 % or more of the accuracy across model sizes, arXiv 2411.02355)")
            else:
                out.append(f"{w.name}: no published {prec} checkpoint of {model} with an accuracy comparison is known "
                           "to gpuopt: evaluate your quantized model's quality before serving it")
    return out


def expert_layout_notes(ws, result) -> list[str]:
    """For each serving workload of a mixture-of-experts model whose replicas span several GPUs: how the replica
    lays its experts out -- expert parallel over the GPUs of the node (or NVLink domain), attention tensor parallel
    (vLLM ``--tensor-parallel-size N --enable-expert-parallel``; SGLang ``--tp N --ep-size N``, its DeepSeek-V3
    recipe on one 8 x H200 node), with the pipeline size when a replica spans nodes. Expert parallel only when the
    experts split evenly over the GPUs (E divisible by N: vLLM and SGLang place E / N experts on each rank); else the
    experts stay tensor parallel (Mixtral's 8 experts over 16 GPUs). Sizing counts the experts' weights split evenly
    over the same GPUs either way; the note tells an operator which flags run the plan's layout (issue 31)."""
    out = []
    sizing = {d.get("name"): d.get("sizing") or [] for d in (getattr(result, "workloads", None) or [])}
    for w in ws:
        m = w.workload.model
        experts = int(getattr(m, "experts", 0) or 0)
        if w.workload.task != "serve" or experts <= 1:
            continue
        layouts = sorted({(int(r.get("tensor_parallel") or 1), int(r.get("pipeline_parallel") or 1))
                          for r in sizing.get(w.name, []) if int(r.get("tensor_parallel") or 1) > 1})
        for tp, pp in layouts:
            stages = f", {pp} pipeline stages over the nodes' cluster fabric" if pp > 1 else ""
            vpp = f" --pipeline-parallel-size {pp}" if pp > 1 else ""
            spp = f" --pp-size {pp}" if pp > 1 else ""
            head = f"{w.name}: {m.name} is a mixture of experts ({experts} experts, {m.experts_per_token} a token): "
            if experts % tp == 0:
                out.append(head + f"each replica runs its experts expert parallel over the {tp} GPUs of a node "
                           f"(EP{tp}, {experts // tp} expert{'s' if experts // tp > 1 else ''} a GPU) and attention "
                           f"tensor parallel (TP{tp}){stages} "
                           f"(vLLM --tensor-parallel-size {tp}{vpp} --enable-expert-parallel; SGLang --tp {tp} "
                           f"--ep-size {tp}{spp})")
            else:
                out.append(head + f"its {experts} experts do not split evenly over {tp} GPUs, so each replica keeps "
                           f"them tensor parallel with attention (TP{tp}, no expert parallel){stages} (vLLM "
                           f"--tensor-parallel-size {tp}{vpp}; SGLang --tp {tp}{spp})")
    return out


def mixed_replica_notes(ws, result) -> list[str]:
    """For each serving workload with ``mixed_replicas`` whose plan runs replicas of more than one shape in one
    region: the shapes and the routing rule they need (issue 31). Replicas of different speeds behind one endpoint
    need requests weighted by each replica's tokens/s: a router that spreads requests evenly (round robin, least
    requests) loads the slow replicas past their latency targets first. Shape: GPU model, GPUs per replica, TP x PP,
    precision (the plan's lines)."""
    out = []
    mixed = {w.name for w in ws if getattr(w, "mixed_replicas", False) and w.workload.task == "serve"}
    if not mixed:
        return out
    shapes: dict[tuple[str, str, str], dict[tuple, int]] = {}
    for ln in getattr(result, "lines", None) or []:
        get = ln.get if isinstance(ln, dict) else (lambda k, _l=ln: getattr(_l, k, None))
        names = [n for n in (get("workloads") or []) if n in mixed]
        if len(names) != 1:
            continue  # a line two workloads share says nothing of one workload's replicas
        sh = (str(get("instance_type")), str(get("gpu_model")), int(get("tensor_parallel") or 1),
              int(get("pipeline_parallel") or 1), str(get("precision") or ""))
        d = shapes.setdefault((names[0], str(get("provider")), str(get("region"))), {})
        d[sh] = d.get(sh, 0) + int(get("replicas") or 0)
    for (name, prov, reg), d in sorted(shapes.items()):
        if len({(g, tp, pp, pr) for _i, g, tp, pp, pr in d}) < 2:
            continue
        parts = ", ".join(f"{n} x {g} TP{tp}" + (f" PP{pp}" if pp > 1 else "") + f" {pr} ({it})"
                          for (it, g, tp, pp, pr), n in sorted(d.items()))
        out.append(f"{name}: --mixed-replicas: {prov} {reg} runs replicas of {len(d)} shapes ({parts}); route "
                   "requests in proportion to each replica's tokens/s (weighted round robin, the sizing table's "
                   "tokens/s per replica), not evenly")
    return out


def trace_lengths(trace, input_tokens, output_tokens):
    """(input, output, note, the TraceLengths or None) from a request trace CSV (``--trace``; optimizer.sizing.serving.load_trace) or as given.

    Raises: InputError("trace") for a bad file or when input/output tokens are given too."""
    if trace is None:
        return input_tokens, output_tokens, "", None
    if input_tokens is not None or output_tokens is not None:
        raise InputError("trace", "give the request lengths as --trace or as --input-tokens/--output-tokens, not both",
                         accepted="one of them")
    from optimizer.sizing.serving import load_trace

    t = load_trace(str(trace))
    return t.mean_input, t.mean_output, t.describe(), t


def trace_mix(trace) -> tuple | None:
    """A trace's request-size mix as Workload.length_mix (optimizer.sizing.buckets), None without a trace."""
    if trace is None or not trace.lengths:
        return None
    from optimizer.sizing.buckets import size_buckets

    return tuple((b.share, b.mean_input, b.mean_output) for b in size_buckets(trace.lengths))


def check_regions(plan, offers) -> None:
    """Raise InputError("workloads[i].region") when a workload's ``region`` (provider/region) has no offer in
    the catalog the plan reads (``offers``), naming the provider's regions closest to it."""
    import difflib

    items = [(i, it) for i, it in enumerate(plan.workloads) if it.region]
    if not items:
        return
    have = {f"{p}/{r}".lower() for p, r in zip(offers["provider"].astype(str), offers["region"].astype(str))}
    for i, it in items:
        if it.region in have:
            continue
        prov = it.region.split("/", 1)[0]
        same = sorted(x for x in have if x.startswith(prov + "/")) or sorted(have)
        near = difflib.get_close_matches(it.region, same, n=5, cutoff=0.0)
        raise InputError(plan.field_path(i, "region"), f"no offer in {it.region}", accepted=", ".join(near))
