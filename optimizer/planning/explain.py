"""Explain a solved plan (optimizer.planning): the rules it was held to, the binding constraints, the same demand priced
by strategy (each with its commitment), LP duals, the cheapest plan per provider, the plan at half and twice the
demand, and — when nothing fits — why, with the budget, deadline or limit it would take.

Every function here solves restricted copies of the problem; none changes the problem or prints.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

from gpuopt.kernel.records import HOURS_PER_MONTH
from optimizer.planning.milp import build_fleet_model, safe_name
from optimizer.planning.problem import Budgets, FleetProblem, FleetWorkload, cand_index, spot_group
from optimizer.planning.prune import prune_fleet
from optimizer.planning.solution import FleetSolution, money, spot_use
from optimizer.planning.solve import solve_cost
from optimizer.planning.solver import run_solver as solve_fleet
from optimizer.planning.solver import SOLVE_THREADS

STRATEGY_SETS = {
    "all_on_demand": {"on_demand"},
    "all_reserved_1y": {"reserved_1y"},
    "all_reserved_3y": {"reserved_3y"},
    "spot_where_allowed": {"on_demand", "spot"},
}


def rules(problem: FleetProblem) -> list[str]:
    """The rules the plan was held to, in words (the first lines of every output say them)."""
    out = []
    H = problem.horizon_months
    note = problem.horizon_note or f"horizon {H} months"
    out.append(f"{note}: totals are over {H} month{'s' if H != 1 else ''}")
    lv = problem.leftover_value
    out.append("commitments cost everything paid over their whole term (upfront + recurring)"
               + (f", less {100 * lv:.0f} % of the months that outlive the horizon" if lv else
                  "; months after the horizon are counted in full (leftover value 0)"))
    if any(w.allow_spot for w in problem.workloads):  # else there is no spot rule to hold (a fresh user asked)
        spot_jobs = [w for w in problem.workloads if w.allow_spot]
        counted = []
        if any(not w.training for w in spot_jobs):
            counted.append("serving: 90 % of their throughput counted")
        if any(w.training for w in spot_jobs):
            counted.append("training: their work after the goodput of spot reclaims, checkpoints and restarts "
                           "(optimizer.sizing.goodput)")
        by_gpu = getattr(problem.spot_capacity, "by_gpu", None) or {}
        out.append(f"spot: at most {int(problem.spot_capacity)} instances of one instance type per region"
                   + (" (" + ", ".join(f"{g}: {n}" for g, n in sorted(by_gpu.items())) + ", --spot-capacity-gpu)"
                      if by_gpu else "") + "; "
                   + "; ".join(counted) + "; never the only capacity behind min_replicas unless spot_only_ok")
    else:
        out.append("spot: not used (no workload allows it: --allow-spot)")
    if problem.quotas is not None:
        out.append(f"quotas: never above the {len(problem.quotas)} limit(s) of your --quota file (limit - used); a "
                   "region whose quota is too small is left for another (the notes say what each quota holds)")
    place = {"region": "each serving workload in one region of one provider",
             "provider": "each serving workload with one provider (any of its regions)",
             "any": "serving workloads may span providers and regions"}[problem.placement]
    out.append(f"placement: {place}" + ("; min_replicas instances in min(min_replicas, 3) distinct availability "
                                        "zones (a region without zones is one location; a region's regional offers "
                                        "count as up to its 3 zones)"
                                        if problem.spread == "zones" else "")
               + ("; each training job on one cluster (one instance type in one region), at most its job-scale GPUs "
                  "at once" if any(w.training for w in problem.workloads) else ""))
    serving = [w for w in problem.workloads if not w.training and not w.divisible]
    if serving:
        mixed = [w for w in serving if w.mixed_replicas]
        one = [w.name for w in serving if not w.mixed_replicas]
        text = "replicas: one node per replica when the model fits one (tensor/expert parallel inside it), across " \
            "instances only node by node over a cluster fabric"
        if one:
            text += ("; one replica shape (GPU, layout, precision) per region for " +
                     (", ".join(one) if len(one) < len(serving) else "every serving workload") +
                     " (--mixed-replicas to allow more)")
        for w in mixed:
            text += (f"; {w.name}: replicas of several shapes (--mixed-replicas), each shape carrying at least "
                     f"{w.min_replica_share:.0%} of the demand in every block it runs in, requests routed in "
                     "proportion to each replica's tokens/s")
        out.append(text)
    out += serving_rules(problem.workloads)
    out += training_rules(problem.workloads)
    return out


def serving_rules(workloads) -> list[str]:
    """One rule per serving workload: its latency targets, request lengths, engine and precisions (issue 10: the
    targets are stated in every output)."""
    from optimizer.sizing import latency_targets, serve_lengths
    from optimizer.sizing.serving import SCENARIO_SOURCES

    out = []
    for fw in workloads:
        w = getattr(fw, "workload", fw)
        if getattr(w, "task", "") != "serve":
            continue
        ttft, tpot = latency_targets(w)
        inp, outp = serve_lengths(w)
        src = SCENARIO_SOURCES.get(w.scenario, "") if w.scenario != "offline" else ""
        targets = ("no latency target (offline: the largest batch that fits)" if ttft is None and tpot is None else
                   ", ".join(x for x in (f"p99 TTFT <= {ttft:g} ms" if ttft else "",
                                         f"p99 TPOT <= {tpot:g} ms" if tpot else "") if x)
                   + (f" ({src})" if src and w.ttft_slo_ms is None and w.tpot_slo_ms is None else
                      f" ({', '.join(x for x in ('TTFT given' if w.ttft_slo_ms is not None else '', 'TPOT given' if w.tpot_slo_ms is not None else '') if x)}"
                      + (f", the rest {src})" if src else ")")))
        precisions = "/".join(w.precision_options or (w.precision,))
        note = ""
        if w.measured is not None:
            from optimizer.sizing.serving import load_engine

            eng = load_engine(w.engine).name
            rows = [r.row for r in w.measured.rows if r.model.name == w.model.name and r.engine in (eng, None)]
            note = (f"; corrected by your measurements where they apply ({w.measured.path}, row{'s' if len(rows) > 1 else ''} "
                    f"{', '.join(map(str, rows))})" if rows else
                    f"; {w.measured.path} has no row of {w.model.name} on {eng}: the model alone")
        out.append(f"serving {getattr(fw, 'name', 'workload')}: {targets}; requests of {inp:,} input + {outp:,} output "
                   f"tokens; engine {w.engine}; precision {precisions}{note}; each replica sized at the highest "
                   "Poisson request rate whose p99 TTFT (with the wait for a slot) and p99 TPOT meet the targets"
                   + ("; disaggregated prefill/decode units " + ("only" if w.disaggregate == "on" else
                      "where they need fewer instances") if getattr(w, "disaggregate", "off") != "off" else "")
                   + (f"; prefix cache: {100 * w.prefix_cache_hit_rate:.0f} % of prompt tokens (your assumption)"
                      if getattr(w, "prefix_cache_hit_rate", 0) else "")
                   + (f"; speculative decoding: {w.speculative_tokens} draft tokens at acceptance "
                      f"{w.acceptance_rate:g} (your assumption)" if getattr(w, "speculative_tokens", 0) else "")
                   + ("; sized for the trace's mix of request sizes (" + ", ".join(
                       f"{100 * sh:.0f} % {i:,}/{o:,}" for sh, i, o in w.length_mix) + ")"
                      if len(getattr(w, "length_mix", ()) or ()) > 1 else ""))
    return out


def training_rules(workloads) -> list[str]:
    """One rule per train/finetune workload (issue 11): how its throughput per GPU, layout and goodput are set."""
    from optimizer.sizing import goodput as gp
    from optimizer.sizing import training as tr
    from optimizer.sizing import effective_context, training_framework

    out = []
    for fw in workloads:
        w = getattr(fw, "workload", fw)
        if getattr(w, "task", "") not in ("train", "finetune"):
            continue
        out.append(
            f"training {getattr(fw, 'name', 'workload')}: {training_framework(w)}, {w.precision}, optimizer "
            f"{w.optimizer}, sequences of {effective_context(w):,} tokens, global batch "
            + (f"{w.global_batch_tokens:,.0f}" if w.global_batch_tokens else
               f"4M or {tr.DEFAULT_BATCH_TOKENS_PER_GPU:,} per GPU, the larger (default)")
            + " tokens; on each offer the fastest parallel layout that fits (optimizer.sizing.training, fitted by "
            f"{tr.FIT.source}) at the job's scale -- the GPUs that meet the deadline -- "
            "with data-parallel traffic over the offer's fabric; work counted after goodput: failures "
            f"{gp.FAILURE_RATE_PER_GPU_HOUR:.3g} per GPU-hour (Llama 3: 419 unexpected interruptions in 54 days on "
            "16,384 H100s), checkpoints at the Young/Daly interval, restarts of "
            f"{gp.RESTART_S / 60:.0f} min; spot adds reclaims per instance-hour at the AWS Spot Advisor's bucket "
            "of each instance type and region (pricing_cache/data/spot_interruption.csv, a copy of 2025-06-28; "
            "`gpuopt prices refresh-spot` refreshes it), else "
            f"{gp.SPOT_INTERRUPTIONS_PER_INSTANCE_HOUR:.3g} (a 20 % a month bucket)")
    return out


#: The least time (s) an explanation's solve is started with; with less left it is reported as not computed.
MIN_SOLVE_S = 0.3
_NO_TIME = "not computed: no time left within the explanation's limit"
_NO_TIME_MARGINAL = "shadow prices not computed: the LP relaxation could not be built and solved within the explanation's time"


def _share(t_end: float, left: int) -> float:
    """Seconds for the next of ``left`` solves sharing the time up to ``t_end`` (0 when none is left)."""
    import time as _time

    return max(0.0, t_end - _time.perf_counter()) / max(1, left)


def _enumerable(sub: FleetProblem) -> bool:
    """Whether the enumerations (``optimizer.planning.exact``, ``optimizer.planning.shared``) plan ``sub``: no MILP,
    they end when done (the strategies and provider alternatives they plan may use the rest of ``STRATEGIES_MIN_S``)."""
    from optimizer.planning.exact import separable
    from optimizer.planning.shared import applies

    return separable(sub) is None or applies(sub)


def _fits(sub: FleetProblem, seconds: float, allowed: set[str] | None = None) -> bool:
    """Whether a solve of ``sub`` can be started in ``seconds``: the enumeration (optimizer.planning.exact) needs no
    model and the placement search keeps to its time by itself; one MILP's model must be built, written and read back in
    time (``optimizer.planning.problem.model_seconds``)."""
    from optimizer.planning.exact import separable
    from optimizer.planning.problem import model_seconds, placed

    if seconds <= 0:
        return False
    if separable(sub, allowed) is None:
        # the enumeration: milliseconds for a few workloads (a fresh user saw one-provider plans of 0.01 s "not
        # computed"), and solve_cost stops it between workloads when the time given is over
        return True
    if seconds < MIN_SOLVE_S:
        return False
    if sub.placement != "any" and placed(sub):
        return True  # the placement search, which starts no node it could not finish
    return model_seconds(len(sub.blocks), sub.cands) <= seconds


def _restricted(problem: FleetProblem, subset: dict) -> FleetProblem:
    kept = subset if problem.capped else prune_fleet(
        subset, problem.workloads, problem.blocks, problem.work_flops, problem.spot_capacity, problem.placement,
        problem.spread, problem.single_slot_costs(), problem.payment_matters())[0]
    return problem.replace(budgets=Budgets(), budget_usd=None, objective="cost", cands=kept)


#: Strategies solved at once (threads; HiGHS releases the GIL while it solves, CBC runs as a subprocess): on the
#: example plan the reserved 1y and 3y strategies took 8.5 s and 6.7 s one after the other and 9.2 s side by side
#: on this 2-core machine, where the plan's explanations used 19 s of CPU in 16 s (benchmarks/bench_fleet.py, issue 25).
STRATEGY_WORKERS = 2


def strategies(problem: FleetProblem, solver, time_limit_s, gap_rel, plan_money: dict,
               deadline: float | None = None, enum_deadline: float | None = None,
               others_done=None) -> dict[str, dict[str, Any]]:
    """The same demand priced all on-demand, all reserved 1y / 3y, on-demand + spot where allowed, and the plan
    itself: each with its total over the horizon, average per month, upfront and commitment over the terms. Each
    strategy chooses its own regions under the same placement rule; the budgets are not applied (said in the notes);
    the strategies, :data:`STRATEGY_WORKERS` at once, share ``time_limit_s`` (or the time up to ``deadline``, a
    perf_counter instant); one stopped by it
    carries its status and gap, one that could not be started in the time left is ``not_computed``. A strategy the
    enumerations plan (``optimizer.planning.exact``, ``optimizer.planning.shared``: no MILP, they end when done) may run
    until ``enum_deadline`` when that is later (``STRATEGIES_MIN_S``). ``others_done`` (a threading.Event): the last
    strategy waits for it (at most until ``deadline``) before it starts, so the other explanation families, whose
    time ends at ``deadline``, are not starved of the CPU by two strategies at once."""
    import threading
    import time as _time
    from concurrent.futures import ThreadPoolExecutor

    out: dict[str, dict[str, Any]] = {}
    t_end = deadline if deadline is not None else _time.perf_counter() + time_limit_s
    # the enumerated ones (on-demand, spot) first: they take milliseconds, then the reserved ones side by side
    order = ("all_on_demand", "spot_where_allowed", "all_reserved_1y", "all_reserved_3y")
    sets = [(n, STRATEGY_SETS[n]) for n in order
            if not (n == "spot_where_allowed" and not any(w.allow_spot for w in problem.workloads))]
    lock = threading.Lock()
    started = [0]

    def one(name: str, allowed: set[str]) -> dict[str, Any]:
        SOLVE_THREADS.n = 1
        if others_done is not None and name == sets[-1][0] and len(sets) > STRATEGY_WORKERS:
            others_done.wait(timeout=max(0.0, t_end - _time.perf_counter()))
        with lock:  # the time up to the deadline, shared by the strategies not yet started on each worker
            left = -(-(len(sets) - started[0]) // STRATEGY_WORKERS)
            started[0] += 1
        time_limit_s = _share(t_end, left)
        base = problem.unpruned or problem.cands
        subset = {w: [c for c in cs if c.offer["pricing"] in allowed] for w, cs in base.items()}
        if any(not cs for cs in subset.values()):
            return {"status": "no_offers", "total_usd": None, "monthly_usd": None,
                    "note": "some workload has no offer of this pricing (or may not use it)"}
        sub = _restricted(problem, subset)
        if enum_deadline is not None and enum_deadline > t_end:
            # the comparison is part of every plan's output: each strategy may use the rest of STRATEGIES_MIN_S
            time_limit_s = max(time_limit_s, _share(enum_deadline, left))
        if not _fits(sub, time_limit_s):
            return {"status": "not_computed", "total_usd": None, "monthly_usd": None, "note": _NO_TIME}
        sol = solve_cost(sub, solver=solver, time_limit_s=time_limit_s, gap_rel=gap_rel)
        if sol.report.status == "not_solved":  # out of its time before any plan: said as such
            return {"status": "not_computed", "total_usd": None, "monthly_usd": None, "note": _NO_TIME}
        if sol.report.status not in ("optimal", "time_limit"):
            return {"status": sol.report.status, "total_usd": None, "monthly_usd": None}
        row = {"status": sol.report.status, **_money_keys(money(sub, sol))}
        if sol.report.status == "time_limit":
            row["gap"] = sol.report.gap
        return row

    with ThreadPoolExecutor(max_workers=STRATEGY_WORKERS) as pool:
        futures = {name: pool.submit(one, name, allowed) for name, allowed in sets}
    for name in STRATEGY_SETS:  # the output keeps its order
        if name in futures:
            out[name] = futures[name].result()
    out["this_plan"] = {"status": "plan", **_money_keys(plan_money)}
    base = out.get("all_on_demand", {}).get("total_usd")
    for v in out.values():
        if base and v.get("total_usd") is not None:
            v["savings_usd"] = round(base - v["total_usd"], 2)
            v["savings_pct"] = round(100.0 * (base - v["total_usd"]) / base, 2)
    return out


def _money_keys(mo: dict) -> dict:
    return {k: mo[k] for k in ("total_usd", "monthly_usd", "upfront_usd", "commitment_usd", "max_month_usd")}


def marginal(problem: FleetProblem, solver, time_limit_s, deadline: float | None = None) -> dict[str, Any]:
    """Shadow prices from the LP relaxation of the minimum-cost model: USD per month for one more token/s of
    demand in a block (top 5 blocks), and the monthly budget's dual. Empty when the LP could not be built and solved
    in ``time_limit_s`` (or by ``deadline``)."""
    import time as _time

    import pulp

    from optimizer.planning.problem import model_seconds

    if deadline is not None:
        time_limit_s = _share(deadline, 1)
    if model_seconds(len(problem.blocks), problem.cands) > time_limit_s:
        return {"note": _NO_TIME_MARGINAL}
    t0 = _time.perf_counter()
    m, V = build_fleet_model(problem.replace(objective="cost"), relax=True)
    # HiGHS in process when installed (it is a dependency): no solver process to start and no MPS file (a
    # one-block LP: 0.06-0.14 s with CBC, most of it the process); CBC otherwise. Both give the same duals
    # (tests/test_fleet.py: the LP without presolve).
    lp_solver = "highs" if "HiGHS" in pulp.listSolvers(onlyAvailable=True) else "cbc"
    rep = solve_fleet(m, solver=lp_solver, time_limit_s=max(MIN_SOLVE_S, time_limit_s - (_time.perf_counter() - t0)),
                      presolve=False)
    if rep.status != "optimal":
        return {"note": _NO_TIME_MARGINAL}
    names = {safe_name(w.name): w for w in problem.workloads}
    demand = []
    for name, con in m.constraints.items():
        if name.startswith("demand_") and con.pi is not None:
            wname, bi = name[len("demand_"):].rsplit("_", 1)
            b = problem.blocks[int(bi)]
            w = names.get(wname)
            d = b.demand.get(w.name, 0.0) if w else 0.0
            if d > 0:
                demand.append({"workload": w.name, "block": b.label or int(bi),
                               "months": f"{problem.period_of(b).start_month + 1}-{problem.period_of(b).end_month}",
                               "usd_per_month_per_token_per_s": round(float(con.pi) * 1000.0 / d / problem.months(b), 6) + 0.0})
    demand.sort(key=lambda x: -x["usd_per_month_per_token_per_s"])
    return {"lp_relaxation_cost_usd": round(float(pulp.value(m.objective) or 0.0), 2), "demand": demand[:5]}


def next_best(problem: FleetProblem, sol: FleetSolution, solver, time_limit_s, gap_rel,
              deadline: float | None = None, enum_deadline: float | None = None,
              plan_money: dict | None = None) -> list[dict[str, Any]]:
    """The cheapest plan on each provider alone, and what price change would flip the choice. The providers share
    ``time_limit_s`` or the time up to ``deadline`` (each gets the time left over the providers left); one stopped
    by its time gets its gap, one that could not be started says so. One the enumerations plan may run until
    ``enum_deadline`` when that is later (as the strategies). The provider a proven-optimal plan without budgets
    uses alone is that plan (``plan_money``): nothing is solved again for it (a fresh user read "gcp alone: not
    computed" under a plan all in GCP)."""
    import time as _time

    base = problem.unpruned or problem.cands
    providers = sorted({c.offer["provider"] for cs in base.values() for c in cs})
    # capacity blocks and savings plans are used through A (units on what was bought)
    used = sorted({k.split("|")[0] for k in [problem.slots[n].okey if n in problem.slots else n for n in sol.N]
                   + [ok for (_, ok, _) in sol.X] + [ok for (_, ok, _) in sol.A]})
    out = []
    t_end = deadline if deadline is not None else _time.perf_counter() + time_limit_s

    subsets = {p: {w: [c for c in cs if c.offer["provider"] == p] for w, cs in base.items()} for p in providers}
    # each provider's problem once; those needing a MILP are priced after the enumerated ones (milliseconds), so one
    # slow MILP does not leave the quick ones unpriced
    subs = {p: None if any(not cs for cs in s.values()) else _restricted(problem, s) for p, s in subsets.items()}
    enumerable = {p: sub is not None and _enumerable(sub) for p, sub in subs.items()}
    providers = sorted(providers, key=lambda p: (subs[p] is not None and not enumerable[p], p))
    for i, p in enumerate(providers):
        time_limit_s = _share(t_end, len(providers) - i)
        sub = subs[p]
        if sub is None:
            out.append({"provider": p, "total_usd": None, "monthly_usd": None, "note": "cannot host every workload alone"})
            continue
        if used == [p] and plan_money is not None and not problem.budgets.any() and \
                sol.report.status == "optimal" and (sol.report.gap or 0.0) <= gap_rel:
            out.append({"provider": p, **_money_keys(plan_money), "delta_usd": 0.0, "status": "optimal",
                        "note": "this plan: it uses this provider alone"})
            continue
        if enum_deadline is not None and enum_deadline > t_end and enumerable[p]:
            time_limit_s = max(time_limit_s, _share(enum_deadline, 1))  # they end when done
        if not _fits(sub, time_limit_s):
            out.append({"provider": p, "total_usd": None, "monthly_usd": None, "note": _NO_TIME})
            continue
        s = solve_cost(sub, solver=solver, time_limit_s=time_limit_s, gap_rel=gap_rel)
        if s.report.status not in ("optimal", "time_limit"):
            # not_solved: no plan found in the time given (a fresh user read "no plan (not_solved)" as "cannot")
            note = ("not computed: no plan found within the explanation's time limit" if s.report.status == "not_solved"
                    else f"no plan ({s.report.status})")
            out.append({"provider": p, "total_usd": None, "monthly_usd": None, "note": note})
            continue
        mo = money(sub, s)
        row = {"provider": p, **_money_keys(mo), "delta_usd": round(s.cost - sol.cost, 2), "status": s.report.status}
        if s.report.status == "time_limit":
            row["gap"] = s.report.gap
            row["note"] = f"priced within the explanation time, not proven optimal (gap {100 * (s.report.gap or 0):.1f} %)"
        if p not in used and s.cost > 0:
            # rounded up: a cut of the printed size is enough (16.105 % printed 16.1 % left it $3 dearer)
            fall = math.ceil(1000 * (1 - sol.cost / s.cost)) / 10
            row["flip"] = f"{p} alone would win if its prices fell {fall:.1f} %" + (
                f" (at most: its plan was priced within {100 * (s.report.gap or 0):.1f} % of its optimum)"
                if s.report.status == "time_limit" else "") + (
                " and it kept your budgets (priced without them)" if problem.budgets.any() else "")
        out.append(row)
    others = [r for r in out if r.get("total_usd") is not None and r["provider"] not in used]
    if others and len(used) == 1 and sol.cost > 0:
        best_other = min(others, key=lambda r: r["total_usd"])
        for r in out:
            if r["provider"] == used[0]:
                missing = sorted(x["provider"] for x in out if x.get("total_usd") is None
                                 and x["provider"] not in used and x.get("note") != "cannot host every workload alone")
                r["flip"] = (f"{used[0]} stays the choice until its prices rise "
                             f"{100 * (best_other['total_usd'] / sol.cost - 1):.1f} % (then {best_other['provider']})"
                             + (f" — among the providers priced; {', '.join(missing)} not priced"
                                if missing else ""))
    return sorted(out, key=lambda r: r["provider"])  # in the order of their names, as priced before


def demand_flip(problem: FleetProblem, sol: FleetSolution, solver, time_limit_s, gap_rel,
                deadline: float | None = None) -> list[dict[str, Any]]:
    """What a change in demand does to the choice: the plan re-solved with every serving demand and training job
    halved and doubled, side by side, each within ``time_limit_s`` or up to ``deadline`` (one not priced in the
    time left, or without a plan, has ``total_usd`` None and says why); when the providers or pricing models it uses
    change, the change is said."""
    import time as _time

    t_end = deadline if deadline is not None else _time.perf_counter() + time_limit_s

    def used(x: FleetSolution) -> tuple[str, ...]:
        # offer keys (provider|region|zone|type|pricing|payment); a slot's key may be its own ("owned:<id>")
        keys = [problem.slots[k].okey if k in problem.slots else k.split("@")[0] for k in x.N] + \
            [ok for (_, ok, _) in x.X] + [ok for (_, ok, _) in x.A]
        parts = [k.split("|") for k in keys]
        return tuple(sorted({f"{p[0]} {p[4]}" for p in parts if len(p) > 4}))

    base = used(sol)

    def one(factor: float) -> dict[str, Any] | None:
        SOLVE_THREADS.n = 1
        time_limit_s = _share(t_end, 1)
        blocks = [replace(b, demand={w: d * factor for w, d in b.demand.items()}) for b in problem.blocks]
        scaled = problem.replace(budgets=Budgets(), budget_usd=None, objective="cost", blocks=blocks,
                                 work_flops={w: f * factor for w, f in problem.work_flops.items()})
        missing = {"demand_factor": factor, "total_usd": None, "monthly_usd": None, "uses": [], "flips": False,
                   "status": "not_computed",
                   "note": f"at {factor:g}x the demand: not computed within the explanation's time"}
        if not _fits(scaled, time_limit_s):
            return missing
        s2 = solve_cost(scaled, solver=solver, time_limit_s=time_limit_s, gap_rel=gap_rel)
        if s2.report.status == "infeasible":
            return {**missing, "status": "infeasible",
                    "note": f"at {factor:g}x the demand no plan meets every constraint"}
        if s2.report.status not in ("optimal", "time_limit"):
            return missing
        now = used(s2)
        note = (f"at {factor:g}x the demand the plan would use {', '.join(now)} instead of {', '.join(base)}"
                if now != base else f"at {factor:g}x the demand the same providers and pricing models stay best")
        if problem.budgets.any() or problem.budget_usd is not None:
            # re-solved without the limits, as the strategies are (a fresh user read an all-upfront plan here as
            # one that kept a $50,000 monthly budget)
            note += " (priced without your budgets)"
        out = {"demand_factor": factor, "total_usd": round(s2.cost, 2),
               "monthly_usd": round(s2.cost / problem.horizon_months, 2), "uses": list(now), "flips": now != base,
               "status": s2.report.status, "note": note}
        if s2.report.status == "time_limit":  # priced in its time, not proven: said (as the strategies say it)
            out["gap"] = s2.report.gap
            out["note"] += f" (priced within the explanation time, not proven optimal: gap {100 * (s2.report.gap or 0):.1f} %)"
        return out

    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=2) as pool:  # side by side, each up to the deadline
        got = list(pool.map(one, (0.5, 2.0)))
    return got  # every factor, priced or with why not (a fresh user read a missing 2x as "no change")


def binding(problem: FleetProblem, sol: FleetSolution) -> list[str]:
    """Statements of the constraints that bind (budgets, committed capacity, redundancy floors, deadlines, spot
    caps)."""
    out = []
    mo = money(problem, sol)
    bg = problem.budgets
    for label, limit, used_ in (("budget (monthly)", bg.monthly, mo["max_month_usd"]),
                                ("budget_total", bg.total, mo["total_usd"]),
                                ("max_upfront", bg.upfront, mo["upfront_usd"]),
                                ("max_commitment", bg.commitment, mo["commitment_usd"])):
        if limit is None:
            continue
        head = limit - used_
        # slack alone does not tell whether the limit shaped the plan (a monthly budget may have swapped a term for
        # a cheaper-a-month one and still have room): say only what is left
        out.append(f"{label}: ${limit:,.2f}, ${head:,.2f} left"
                   + (" (at its limit)" if head < 0.005 * limit else ""))
    idx = cand_index(problem)
    for k, n in sol.N.items():
        s = problem.slots[k]
        peak = 0.0
        for bi in range(len(problem.blocks)):
            p = problem.period_of(problem.blocks[bi])
            if not (s.start_month <= p.start_month < s.end_month):
                continue
            use = sum(idx[(w, ok)].instances_per_unit * a for (w, ok, b2), a in sol.A.items() if ok == s.okey and b2 == bi)
            have = sum(sol.N.get(x, 0) for x in problem.covering(s.okey, p))
            peak = max(peak, use / have * n if have else 0.0)
        if peak >= n - 1e-9:
            what = f"owned {s.key[len('owned:'):]}" if s.key.startswith("owned:") else "committed"
            out.append(f"{what} {s.okey.split('|')[3]} ({s.okey.split('|')[1]}, from month {s.start_month + 1}): "
                       + (f"all {n} instances" if n > 1 else "its one instance") + " busy in the peak block (binding)")
    # the redundancy floor: blocks where a serving workload has exactly its min_replicas and would meet its demand
    # without one of its units (the floor, not the demand, sets what is bought there); spot replicas count only
    # when spot_only_ok, as in the model's floor rows
    for w in problem.workloads:
        m = int(w.min_replicas or 0)
        if w.training or m < 1:
            continue
        reps: dict[int, float] = {}
        cap: dict[int, float] = {}
        smallest: dict[int, float] = {}
        for store in (sol.A, sol.X):
            for (wn, ok, bi), x in store.items():
                if wn != w.name or x <= 1e-9:
                    continue
                c = idx[(wn, ok)]
                cap[bi] = cap.get(bi, 0.0) + c.throughput_per_unit * x
                smallest[bi] = min(smallest.get(bi, math.inf), c.throughput_per_unit)
                if c.offer["pricing"] != "spot" or w.spot_only_ok:
                    reps[bi] = reps.get(bi, 0.0) + c.replicas_per_unit * x
        active = [bi for bi, b in enumerate(problem.blocks) if problem.active(w, b)]
        floor = [bi for bi in active if bi in cap and reps.get(bi, 0.0) <= m + 1e-9 and
                 cap[bi] - smallest[bi] >= float(problem.blocks[bi].demand.get(w.name, 0.0)) * (1 + 1e-9)]
        if floor:
            out.append(f"{w.name}: the redundancy floor ({m} replica{'s' if m > 1 else ''}, --min-replicas) sets its "
                       f"capacity in {len(floor)} of {len(active)} blocks (more capacity than demand there; binding)")
        if w.redundancy > 0:  # the N+1 rule (issue 26): capacity above the demand beyond the floor
            n1 = [bi for bi in active if bi in cap and bi not in floor and
                  cap[bi] - smallest[bi] >= float(problem.blocks[bi].demand.get(w.name, 0.0)) * (1 + 1e-9)]
            if n1:
                out.append(f"{w.name}: the N+1 rule (the demand carried after losing its largest instance, "
                           f"--redundancy) sets its capacity in {len(n1)} of {len(active)} blocks (binding)")
    for w in problem.workloads:
        if w.training and w.deadline_hours is not None:
            out.append(f"{w.name}: must finish within {w.deadline_hours:g} h of the start of month {w.start_month + 1}")
    spot_full = spot_use(problem, sol)
    if any(v >= problem.spot_capacity - 1e-9 for v in spot_full.values()):
        out.append(f"spot capacity: some spot instance types are used up to the {problem.spot_capacity}-instance cap "
                   "(binding)")
    return out


def _min_of(problem: FleetProblem, what: str, solver, time_limit_s) -> tuple[float | None, bool]:
    """(the least any plan needs of ``what`` (monthly | upfront | commitment) with no budget rows, exact).

    First, when at most one serving workload is placed and the model is small, the problem as it is, placement rule
    included: when that MILP is solved to optimality the figure is exact (a budget of it admits a plan). Otherwise
    the least without the
    one-group placement rule, pruned across groups with the limits in place (then terms and payment options are
    compared only with their own kind: a term dearer over the horizon may pay less a month) and only then the limits
    taken off: a lower bound, which is what "needs at least" promises, flagged not exact."""
    import pulp

    from optimizer.planning.solve import as_unplaced

    def least(p: FleetProblem) -> tuple[float | None, str]:
        m, V = build_fleet_model(p.replace(budgets=Budgets(), budget_usd=None, objective="cost"), with_budgets=False)
        if what == "monthly":
            z = pulp.LpVariable("max_month", lowBound=0)
            for pi, terms in V.cash_terms.items():
                m += pulp.LpAffineExpression({**terms, z: -1.0}) <= 0, f"mm_{pi}"
            m.setObjective(pulp.LpAffineExpression({z: 1.0}))
        elif what == "upfront":
            m.setObjective(pulp.LpAffineExpression(V.upfront_terms) if V.upfront_terms else pulp.LpAffineExpression())
        elif what == "commitment":
            m.setObjective(pulp.LpAffineExpression(V.commitment_terms) if V.commitment_terms else
                           pulp.LpAffineExpression())
        rep = solve_fleet(m, solver=solver, time_limit_s=time_limit_s, gap_rel=0.001)
        if rep.status not in ("optimal", "time_limit"):
            return None, rep.status
        # the solver's best BOUND is what any plan needs at least (its objective is a plan's: an upper bound); the
        # figure is exact only when the two meet
        value = float(pulp.value(m.objective) or 0.0)
        if rep.bound is not None and rep.bound < value - 0.005:
            return float(rep.bound), "bound"
        return value, rep.status

    from optimizer.planning.problem import model_seconds, placed

    # one placed workload and a model that can be built and solved well within the time (the example plan's placed
    # model has 115,506 variables: CBC overran a 60 s limit by 150 s on it): the exact figure
    small = model_seconds(len(problem.blocks), problem.cands) < 0.1 * float(time_limit_s or 60.0)
    if len(placed(problem)) <= 1 and small:
        value, status = least(problem)
        if value is not None and status == "optimal":
            return value, True
    value, status = least(as_unplaced(problem))
    return value, False


def why_infeasible(problem: FleetProblem, solver, time_limit_s, gap_rel) -> dict[str, Any]:
    """Which constraint cannot be met, and what it would take: the budget (monthly, total, upfront, commitment) the
    cheapest plan needs, the deadline a training job could meet, or that spot caps / redundancy / placement /
    pricing limits block it."""
    bg = problem.budgets
    if bg.any():
        free = problem.replace(budgets=Budgets(), budget_usd=None)
        s = solve_cost(free, solver=solver, time_limit_s=time_limit_s, gap_rel=gap_rel)
        if s.report.status in ("optimal", "time_limit"):
            parts, out = [], {"kind": "budget"}
            month = "for the whole job" if not problem.recurring and problem.horizon_months == 1 else \
                "in its dearest month"
            for what, label, opt, limit in (("monthly", month, "--budget", bg.monthly),
                                            ("total", f"over the {problem.horizon_months}-month horizon", "--budget-total", bg.total),
                                            ("upfront", "upfront", "--max-upfront", bg.upfront),
                                            ("commitment", "in commitments", "--max-commitment", bg.commitment)):
                if limit is None:
                    continue
                need, exact = (s.cost, True) if what == "total" else _min_of(problem, what, solver, time_limit_s)
                if need is not None and need > limit + 0.005:
                    bound = "" if exact else " (a lower bound: counted without the one-region rule)"
                    parts.append(f"any plan that meets every workload needs at least ${need:,.2f} {label} "
                                 f"({opt} {limit:,.2f}){bound}")
                    out[f"{what}_needed_usd"] = round(need, 2)
            if "monthly_needed_usd" in out:
                out["budget_needed_usd"] = out["monthly_needed_usd"]
            if not parts:
                mo = money(free, s)
                parts.append("no plan meets the limits together with every other rule (placement, spot caps, "
                             "redundancy)" + (f" — each limit alone can be met; raise "
                                              f"{', '.join(o for o, v in (('--budget', bg.monthly), ('--budget-total', bg.total), ('--max-upfront', bg.upfront), ('--max-commitment', bg.commitment)) if v is not None)}"
                                              f" or use --placement provider|any") + f"; without the limits the "
                             f"cheapest plan costs ${mo['total_usd']:,.2f} over the horizon")
            out["message"] = "the budget is too small: " + "; ".join(parts)
            return out
    late = [w for w in problem.workloads if w.training and w.deadline_hours is not None]
    for w in late:
        # one job runs on one cluster, at most its job-scale units at once (issue 11): the fastest cluster's time
        from optimizer.planning.problem import job_units

        best = None
        for c in problem.cands.get(w.name, []):
            cap = job_units(c)
            if math.isfinite(cap) and c.throughput_per_unit > 0:
                rate = cap * c.throughput_per_unit
                if best is None or rate > best[0]:
                    best = (rate, c)
        if best is not None and w.workload.task in ("train", "finetune"):
            hours = float(problem.work_flops[w.name]) / best[0] / 3600.0
            if hours > w.deadline_hours * (1 + 1e-6):
                c = best[1]
                s = c.sizing
                return {"kind": "deadline", "workload": w.name, "deadline_needed_hours": math.ceil(hours),
                        "message": (f"{w.name} cannot finish within {w.deadline_hours:g} h on any one cluster: the "
                                    f"fastest, {c.offer['provider']} {c.offer['region']} {c.offer['instance_type']} "
                                    f"with {getattr(s, 'job_gpus', 0) or 0:,} GPUs, takes about {hours:,.0f} h "
                                    "(a job runs on one instance type in one region, laid out on up to 16,384 "
                                    "GPUs); allow a longer deadline, more providers, regions or GPUs")}
        limit = (problem.horizon_months - w.start_month) * HOURS_PER_MONTH

        def feasible(deadline: float) -> bool:
            from optimizer.planning.horizon import periods as make_periods

            moved = [FleetWorkload(**{**x.__dict__, "deadline_hours": deadline}) if x is w else x
                     for x in problem.workloads]
            per = make_periods([x.activity() for x in moved], problem.horizon_months)
            profiles = problem.profiles
            if profiles is None:
                return False
            from optimizer.planning.problem_build import blocks_for_periods

            free = problem.replace(budgets=Budgets(), budget_usd=None, workloads=moved, periods=per,
                                   blocks=blocks_for_periods(per, profiles))
            return solve_cost(free, solver=solver, time_limit_s=time_limit_s, gap_rel=0.01).report.status in \
                ("optimal", "time_limit")

        if limit > w.deadline_hours and feasible(limit):
            lo, hi = float(w.deadline_hours), limit  # infeasible at lo, feasible at hi
            for _ in range(7):
                mid = (lo + hi) / 2.0
                lo, hi = (lo, mid) if feasible(mid) else (mid, hi)
            return {"kind": "deadline", "workload": w.name, "deadline_needed_hours": math.ceil(hi),
                    "message": (f"{w.name} cannot finish within {w.deadline_hours:g} h with the capacity allowed "
                                f"(spot caps, pricing limits); the earliest deadline it can meet is about "
                                f"{math.ceil(hi)} h (or allow more spot capacity / on-demand)")}
    if problem.capped:
        free = problem.replace(max_instances=None, quotas=None, budgets=Budgets(), budget_usd=None)
        s = solve_cost(free, solver=solver, time_limit_s=time_limit_s, gap_rel=gap_rel)
        if s.report.status in ("optimal", "time_limit"):
            counts: dict[tuple, float] = {}
            idx = cand_index(free)
            training = {x.name for x in free.workloads if x.training}
            for (w, ok, bi), x in s.X.items():
                c = idx[(w, ok)]
                key = (spot_group(c.offer), bi)
                # a training job runs whole units of its layout (time-sliced): its instances at once
                n = math.ceil(x - 1e-9) * c.instances_per_unit if w in training else x * c.instances_per_unit
                counts[key] = counts.get(key, 0.0) + n
            for k, n in s.N.items():
                key = (spot_group(free.slots[k].offer), -1)
                counts[key] = counts.get(key, 0.0) + n
            if problem.quotas and problem.max_instances is None:
                from optimizer.planning.limits import quota_notes

                needs = "; ".join(n.replace("quota: ", "") for n in quota_notes(free.replace(quotas=problem.quotas), s))
                return {"kind": "quota", "message": (
                    "the demand cannot be met within your quotas (--quota); the cheapest plan without them "
                    f"needs: {needs} — request more quota or allow more providers, regions or GPUs")}
            most = math.ceil(max(counts.values(), default=0.0) - 1e-9)
            return {"kind": "max_instances", "message": (
                f"the demand cannot be met with at most {problem.max_instances} instances of one instance type per "
                f"region (--max-instances); the cheapest plan without that cap uses {most} of one type: raise "
                "--max-instances or allow more providers, regions or GPUs")}
    hint = ""
    if problem.placement != "any" and any(not w.training for w in problem.workloads):
        hint = f"; placement '{problem.placement}' keeps each serving workload in one " + \
               ("region" if problem.placement == "region" else "provider") + " (try --placement provider or any)"
    names = ", ".join(w.name for w in problem.workloads)
    return {"kind": "capacity", "message": (f"{names}: no plan meets every constraint: spot capacity caps, redundancy "
                                            "(min_replicas without spot), quotas or pricing limits block it; allow "
                                            "on-demand, raise --spot-capacity or lower min_replicas" + hint)}


#: The explanations' time: at most this multiple of the plan's own solve (and at least EXPLAIN_MIN_S seconds);
#: each family of explanation solves (strategies, duals, providers, demand) gets it as its wall time.
#: EXPLAIN_MIN_S was 2 s while plans took a minute; once the example plan was proven in ~2.5 s (issue 25) its
#: double-demand re-solve and provider alternatives no longer fitted 2 s (an empty demand sensitivity), so 8 s.
EXPLAIN_TIME_FACTOR = 1.5
EXPLAIN_MIN_S = 8.0
#: The strategy comparison is part of every plan's output (issue 8 point 3: upfront, monthly and commitment of each
#: strategy): it gets at least this many seconds (within the plan's time limit) even when the plan took less. Why:
#: once several workloads sharing commitments were planned exactly in ~1 s (optimizer/planning/shared.py), the 2 s
#: deadline, shared by four families in threads, left "all on-demand" unsolved and the reserved ones not computed;
#: 10 s for the enumerated strategies only, then 20 s for every strategy once the example plan took 2.5 s (issue 25:
#: its all-reserved strategies, 15 placement leaves of a reserved-only MILP each, need 5-8 s with HiGHS).
STRATEGIES_MIN_S = 20.0


def explain_solver(solver: str) -> str:
    """The solver of the explanation solves: HiGHS when the plan's is CBC and HiGHS is installed (it is a
    dependency). Why: the strategies' placement leaves are small MILPs (~1,000 columns) with reservations that
    training jobs only partly use, whose weak LP bound CBC takes 1-3 s each to close against the incumbent; HiGHS
    1.x solved the example plan's all-reserved-1y strategy in 7.6 s against CBC's 16.5 s (all-reserved-3y: 5.2 s
    against 11.4 s), same totals (benchmarks/bench_fleet.py, issue 25). The plan itself keeps the solver asked for."""
    import pulp

    if solver == "cbc" and "HiGHS" in pulp.listSolvers(onlyAvailable=True):
        return "highs"
    return solver


def explain_into(res, problem: FleetProblem, sol: FleetSolution, solver, time_limit_s, gap_rel, plan_money,
                 plan_seconds: float = 0.0) -> None:
    """Fill the explanation of ``res`` (strategies, duals, provider alternatives, demand sensitivity, savings), the
    families side by side in threads (each solve single-threaded: CBC runs as a subprocess), within 1 % and all by
    one deadline, ``max(EXPLAIN_MIN_S, EXPLAIN_TIME_FACTOR x plan_seconds)`` from now (the strategies by
    ``STRATEGIES_MIN_S`` at least): they compare, they are not the plan; an alternative stopped by that time says so with its gap, one that could not be started in the time
    left is ``not_computed``."""
    import threading
    from concurrent.futures import ThreadPoolExecutor

    from optimizer.planning.solve import fix_placement

    ex_limit = min(time_limit_s, max(EXPLAIN_MIN_S, EXPLAIN_TIME_FACTOR * plan_seconds))
    solver = explain_solver(solver)
    ex_gap = max(gap_rel, 0.01)
    here = fix_placement(problem, sol)  # the LP duals: in the plan's own regions

    def single(fn, *a):
        SOLVE_THREADS.n = 1
        return fn(*a)

    import time as _time

    # one deadline for all the families: a family that waits for a worker gets what is left, and a solve that
    # could not end before it is not started
    now = _time.perf_counter()
    deadline = now + ex_limit
    enum_end = now + max(ex_limit, min(time_limit_s, STRATEGIES_MIN_S))
    with ThreadPoolExecutor(max_workers=4) as pool:  # one per family: none waits for a worker (and the deadline)
        others_done = threading.Event()  # the strategies' second worker waits for the families below
        f_st = pool.submit(single, strategies, problem, solver, ex_limit, ex_gap, plan_money, deadline, enum_end,
                           others_done)
        f_mg = pool.submit(single, marginal, here, solver, ex_limit, deadline)
        f_nb = pool.submit(single, next_best, problem, sol, solver, ex_limit, ex_gap, deadline, enum_end, plan_money)
        f_df = pool.submit(single, demand_flip, problem, sol, solver, ex_limit, ex_gap, deadline)
        try:
            res.marginal, res.next_best, res.demand_sensitivity = f_mg.result(), f_nb.result(), f_df.result()
        finally:
            others_done.set()
        res.strategies = f_st.result()
    base = res.strategies.get("all_on_demand", {}).get("total_usd")
    if base:
        res.savings_vs_on_demand_usd = round(base - sol.cost, 2)
        res.savings_vs_on_demand_pct = round(100.0 * (base - sol.cost) / base, 2)
    if problem.budgets.any():
        res.notes.append("the strategies and the provider alternatives are priced without your budgets: one that is "
                         "cheaper than the plan may break a budget (its dearest month and upfront are shown)")
        return  # a cheaper alternative may break them: not a sign the solver stopped early
    cheaper = [(n, v["total_usd"]) for n, v in res.strategies.items()
               if n != "this_plan" and v.get("total_usd") is not None and v["total_usd"] < sol.cost - 0.01]
    cheaper += [(f"{nb['provider']} alone", nb["total_usd"]) for nb in res.next_best
                if nb.get("total_usd") is not None and nb["total_usd"] < sol.cost - 0.01]
    if cheaper:
        n, v = min(cheaper, key=lambda t: t[1])
        res.notes.append(f"{n} (${v:,.2f}) is cheaper than this plan: the solver stopped before proving "
                         f"optimality; raise --time-limit")
