"""A serving workload split into pools by prompt length when that is cheaper (issue 27, point 6; Mélange's idea).

A serving workload with a request trace (``trace``) and ``mix_by_size`` auto (the default with a trace) or on is
also planned as one workload per prompt-length range (:func:`optimizer.sizing.buckets.size_buckets`): each range
its requests' mean lengths and its share of the demand, the same targets, engine, floors and redundancy (each pool
is served and made redundant on its own), solved together in one MILP, so each range may take another GPU type and
purchase option. ``auto`` keeps the split only when it costs less than one pool; ``on`` keeps it. The chosen plan
says the routing rule (which prompt lengths go to which instances) and what the split saved or would have cost.

Not split: a workload with a demand profile file (its hours are not split by size), plans maximising ROI, a trace
whose requests fall in one range.
"""

from __future__ import annotations

from typing import Any


def split_request(plan) -> tuple[Any, dict[str, list], list[str]]:
    """(the plan with its splittable serving workloads replaced by one per prompt-length range, or None when none
    splits; workload name -> its ranges (optimizer.sizing.buckets.SizeBucket); notes on workloads left whole).
    Raises InputError("workloads[i].trace") for an unreadable trace."""
    from gpuopt.kernel.errors import InputError
    from optimizer.sizing.buckets import size_buckets
    from optimizer.sizing.serving import load_trace

    if plan.objective == "roi":
        return None, {}, []
    items, split, notes = [], {}, []
    for i, item in enumerate(plan.workloads):
        mode = item.mix_by_size or "auto"
        if item.task != "serve" or not item.trace or mode == "off":
            items.append(item)
            continue
        if item.demand_profile is not None:
            notes.append(f"{item.name}: not split by prompt length (its demand profile's hours are not split by "
                         "size; give tokens_per_second, request_rate or an inline demand to try it)")
            items.append(item)
            continue
        try:
            t = load_trace(str(plan.resolve_path(item.trace)))
        except InputError as exc:
            raise InputError(plan.field_path(i, "trace"), exc.message, exc.accepted) from None
        buckets = size_buckets(t.lengths)
        if len(buckets) < 2:
            items.append(item)
            continue
        split[item.name] = buckets
        for b in buckets:
            upd: dict[str, Any] = {"name": f"{item.name}/{b.label}", "trace": None, "input_tokens": b.mean_input,
                                   "output_tokens": b.mean_output, "mix_by_size": "off"}
            if item.request_rate is not None:
                upd["request_rate"] = item.request_rate * b.share
            elif item.demand is not None:
                upd["demand"] = [x * b.token_share for x in item.demand]
            else:
                upd["tokens_per_second"] = (item.tokens_per_second or 1.0) * b.token_share
            items.append(item.model_copy(update=upd))
    if not split:
        return None, {}, notes
    new = plan.model_copy(update={"workloads": items})
    new._profiles = None  # the demand profiles are read again: one per pool
    return new, split, notes


def choose(one, mixed, split: dict[str, list], modes: dict[str, str]):
    """The plan to present of ``one`` (every workload one pool) and ``mixed`` (split by prompt length), both
    RecommendResults: the split when a workload asked for it (``on``) or when it is feasible and cheaper, with notes
    giving the routing rule and the saving; else ``one``, with a note of what the split would have cost."""
    forced = any(modes.get(name) == "on" for name in split)
    a, b = one.plan, mixed.plan
    take_mixed = forced or (b.feasible and (not a.feasible or b.total_usd < a.total_usd - 0.005))
    table = {"kept": "split" if take_mixed else "one pool",
             "one_pool_usd": a.total_usd if a.feasible else None, "split_usd": b.total_usd if b.feasible else None,
             "pools": {name: [{"pool": f"{name}/{bk.label}", "prompt_tokens_min": bk.input_lo,
                               "prompt_tokens_max": None if bk.input_hi is None else bk.input_hi - 1,
                               "share_of_requests": round(bk.share, 4), "share_of_output_tokens": round(bk.token_share, 4),
                               "mean_input_tokens": bk.mean_input, "mean_output_tokens": bk.mean_output,
                               **({"instances": sorted({f"{ln.count:g} x {ln.instance_type} ({ln.pricing})"
                                                        for ln in b.lines if f"{name}/{bk.label}" in
                                                        (getattr(ln, "workloads", None) or [])})}
                                  if take_mixed else {})}
                              for bk in buckets] for name, buckets in split.items()}}
    (b if take_mixed else a).size_mix = table
    names = ", ".join(split)
    if not take_mixed:
        if b.feasible and a.feasible:
            one.plan.notes.append(
                f"a mix by prompt length ({names}: {', '.join(str(len(v)) for v in split.values())} pools) would "
                f"cost {b.total_usd - a.total_usd:,.2f} USD more: one pool per workload kept (--mix-by-size on "
                "forces the split)")
        return one
    for name, buckets in split.items():
        for bk in buckets:
            sub = f"{name}/{bk.label}"
            where = sorted({f"{ln.count:g} x {ln.instance_type} ({ln.pricing})" for ln in b.lines
                            if sub in (getattr(ln, "workloads", None) or [])})
            b.notes.append(f"{name}: route {bk.rule()} to pool {sub}: " + ("; ".join(where) or "no instance"))
    if a.feasible:
        saved = a.total_usd - b.total_usd
        b.notes.append(f"mix by prompt length ({names}): {abs(saved):,.2f} USD "
                       + (f"less ({100 * saved / a.total_usd:.1f} %)" if saved >= 0 else
                          "more (forced by --mix-by-size on)")
                       + f" than one pool per workload ({a.total_usd:,.2f} USD)")
    return mixed
