"""A serving workload planned as two pools, prefill and decode, on different GPU types when that is cheaper (issue
27, point 5: "prefill and decode pools (possibly different GPU types) with KV transfer over the fabric").

Engines run prefill and decode on separate replicas (NVIDIA Dynamo, SGLang, vLLM's KV connectors; DistServe, OSDI
2024; Splitwise, ISCA 2024 -- which puts prefill on compute-rich and decode on bandwidth-rich GPUs). A unit of both
pools on one offer is a candidate of the planner itself (``--disaggregate``, optimizer.planning.candidates). Here a
serving workload with ``disaggregate`` auto or on is also planned as two workloads, ``NAME/prefill`` and
``NAME/decode`` (``serve_phase``, sized by :func:`optimizer.sizing.disaggregated.pool_sizing`), each carrying the
workload's whole demand with its own floors and N+1, solved together in one MILP so each pool takes the GPU type and
purchase option that serve it cheapest. The KV cache of every request moves from one pool to the other, so both pools
of a workload must share one provider's region: when the MILP puts them apart, both are pinned to the region of the
decode pool's dearest line (``region``) and the split planned again. The split is kept when it costs less than the
plan with one pool per workload (co-located replicas, or units of both pools on one offer); the plan says which
instances run which pool, in which region, and what the split saved.

Not split: plans maximising ROI, workloads already one pool (``serve_phase``), workloads also split by prompt length
(gpuopt.size_mix runs on the plan first).
"""

from __future__ import annotations

from typing import Any

PHASES = ("prefill", "decode")


def split_request(plan, only: set[str] | None = None) -> tuple[Any, list[str]]:
    """(the plan with each serving workload whose ``disaggregate`` is auto or on replaced by its prefill and decode
    pools, or None when none is; the names split). ``only``: split only these workloads."""
    if plan.objective == "roi":
        return None, []
    items, split = [], []
    for item in plan.workloads:
        if (item.task != "serve" or (item.disaggregate or "off") == "off" or item.serve_phase is not None
                or (only is not None and item.name not in only)):
            items.append(item)
            continue
        split.append(item.name)
        for phase in PHASES:
            items.append(item.model_copy(update={"name": f"{item.name}/{phase}", "serve_phase": phase,
                                                 "disaggregate": "off", "mix_by_size": "off"}))
    if not split:
        return None, []
    new = plan.model_copy(update={"workloads": items})
    new._profiles = None  # the demand profiles are read again: one per pool
    return new, split


def pool_regions(result, names: list[str]) -> dict[str, dict[str, set]]:
    """Per split workload, per pool: the (provider, region) pairs of the lines it runs on."""
    out: dict[str, dict[str, set]] = {}
    for name in names:
        out[name] = {ph: {(str(ln.provider), str(ln.region)) for ln in result.plan.lines
                          if f"{name}/{ph}" in (getattr(ln, "workloads", None) or [])} for ph in PHASES}
    return out


def pin(plan, result, names: list[str]) -> tuple[Any, list[str]]:
    """(``plan`` -- a split plan -- with both pools of each workload whose pools ``result`` ran in more than one
    region pinned to the region of its decode pool's dearest line; the workloads pinned)."""
    regions = pool_regions(result, names)
    pinned: dict[str, str] = {}
    for name, pools in regions.items():
        if len(pools["prefill"] | pools["decode"]) <= 1:
            continue
        lines = [ln for ln in result.plan.lines if f"{name}/decode" in (getattr(ln, "workloads", None) or [])]
        if not lines:
            continue
        top = max(lines, key=lambda ln: ln.total_usd)
        pinned[name] = f"{top.provider}/{top.region}"
    if not pinned:
        return plan, []
    items = [it.model_copy(update={"region": pinned[it.name.rsplit("/", 1)[0]]})
             if it.serve_phase and it.name.rsplit("/", 1)[0] in pinned else it for it in plan.workloads]
    new = plan.model_copy(update={"workloads": items})
    new._profiles = None
    return new, sorted(pinned)


def colocated(result, names: list[str]) -> bool:
    """Whether each split workload's two pools run in one provider's region."""
    return all(len(p["prefill"] | p["decode"]) <= 1 for p in pool_regions(result, names).values())


def choose(one, split, names: list[str]):
    """The plan to present of ``one`` (one pool per workload) and ``split`` (prefill and decode pools, co-located;
    None when it could not be planned so), both RecommendResults: the split when feasible and cheaper, with notes
    giving which instances run which pool and the saving, and ``disaggregated_pools`` in the JSON; else ``one``,
    with a note of what the split would have cost."""
    a = one.plan
    b = split.plan if split is not None else None
    take = b is not None and b.feasible and (not a.feasible or b.total_usd < a.total_usd - 0.005)
    chosen = split if take else one

    def where(plan, name, ph):
        return sorted({f"{ln.count:g} x {ln.instance_type} ({ln.pricing})" for ln in plan.lines
                       if f"{name}/{ph}" in (getattr(ln, "workloads", None) or [])})

    table: dict[str, Any] = {"kept": "pools" if take else "one pool",
                             "one_pool_usd": a.total_usd if a.feasible else None,
                             "pools_usd": b.total_usd if b is not None and b.feasible else None, "workloads": {}}
    for name in names:
        entry: dict[str, Any] = {}
        if take:
            reg = pool_regions(split, [name])[name]
            entry["region"] = "/".join(sorted(reg["prefill"] | reg["decode"])[0]) if reg["prefill"] | reg["decode"] \
                else None
            for ph in PHASES:
                entry[ph] = where(b, name, ph)
        table["workloads"][name] = entry
    chosen.plan.disaggregated_pools = table
    names_txt = ", ".join(names)
    if not take:
        if b is not None and b.feasible and a.feasible:
            a.notes.append(f"prefill and decode pools on their own GPU types ({names_txt}) would cost "
                           f"{b.total_usd - a.total_usd:,.2f} USD more: one pool per workload kept")
        elif b is None or not b.feasible:
            a.notes.append(f"prefill and decode pools on their own GPU types ({names_txt}): no plan keeps both pools "
                           "of a workload in one region under the targets; one pool per workload kept")
        return one
    for name in names:
        e = table["workloads"][name]
        b.notes.append(f"{name}: disaggregated across GPU types in {e['region']}: prefill pool {name}/prefill on "
                       f"{'; '.join(e['prefill']) or 'no instance'}, decode pool {name}/decode on "
                       f"{'; '.join(e['decode']) or 'no instance'}; each prompt's KV cache moves over the region's "
                       "network (optimizer/sizing/disaggregated.py)")
    if a.feasible:
        saved = a.total_usd - b.total_usd
        b.notes.append(f"prefill and decode pools ({names_txt}): {saved:,.2f} USD less ({100 * saved / a.total_usd:.1f} "
                       f"%) than one pool per workload ({a.total_usd:,.2f} USD)")
    return split


def plan_pools(plan, one, plan_once, *, explain: bool = True, solver_given: bool = False):
    """``one`` (the plan of ``plan`` as given), or the plan with prefill and decode pools of the workloads that ask
    for disaggregation (:func:`split_request`) where that is cheaper (:func:`choose`). ``plan_once`` plans a
    request (gpuopt.api._plan_once). The pools of a workload are planned anywhere first, then, when they land in
    different regions, pinned to one (:func:`pin`) and planned again; a split whose pools still part is dropped."""
    from optimizer.planning import progress

    split, names = split_request(plan)
    if split is None:
        return one
    progress.update("planning prefill and decode pools on their own GPU types")
    res = plan_once(split, explain=False, solver_given=solver_given)
    if res.plan.feasible and not colocated(res, names):
        pinned_plan, pinned = pin(split, res, names)
        if pinned:
            split = pinned_plan
            res = plan_once(split, explain=False, solver_given=solver_given)
    if res.plan.feasible and not colocated(res, names):
        res = None
    chosen = choose(one, res, names)
    if chosen is not one and explain:  # explain the plan presented
        notes, table = list(chosen.plan.notes), chosen.plan.disaggregated_pools
        chosen = plan_once(split, explain=True, solver_given=solver_given)
        chosen.plan.notes.extend(n for n in notes if n not in chosen.plan.notes)
        chosen.plan.disaggregated_pools = table
    return chosen
