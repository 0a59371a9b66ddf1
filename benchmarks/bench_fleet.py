"""Benchmarks of the planning model over many blocks and many workloads (issue 8 point 5 (c), (d)), measured here
and never in unit tests.

    python benchmarks/bench_fleet.py              # prints a table, writes benchmarks/last_results_fleet.json
    python benchmarks/bench_fleet.py --profile    # also prints cProfile's top functions of each plan
    python benchmarks/bench_fleet.py --scenarios 30x168 --solvers cbc

Scenarios, on the shipped snapshot (``optimizer.planning.plan.plan_fleet``, the one model, default options of
``gpuopt recommend``: 12-month horizon, placement region, no spot):

* ``1x720``: the Llama-2-13B chat service of ``3x720`` alone (one workload: planned exactly by enumeration,
  ``optimizer/planning/exact.py``; the MILP alone, measured by hand: HiGHS 1.16 stops at 60 s with a 9.4 % gap on its
  one-region leaf);
* ``3x720``: three serving workloads (Llama-2-13B chat with 2 replicas always up, Mistral-7B code assistant,
  Llama-3-70B assistant), each with a demand profile of 720 hourly values (a month of distinct hours: an inline
  list, so a calendar profile of 720 blocks; a diurnal curve x weekday/weekend x slow growth x seeded noise, so no
  two hours have the same demand vector and the merge keeps 720 blocks);
* ``30x168``: thirty serving workloads over the ten models of the spec table (three each), peaks 100..2,000
  tokens/s, each with a 168-value hour-of-week profile shifted by its own time zone (168 blocks);
* ``example``: the bundled plan file (``gpuopt/data/example_plan.yaml``: a chat service, a LoRA fine-tune and a
  pre-training job; AWS, Azure, GCP; reservations), end to end through ``gpuopt.api.recommend``;
* ``mix5``: five workloads through the API (:data:`MIX5`: three services — Llama-2-13B chat on the example's daily
  profile with 2 replicas, Mistral-7B at 800 tokens/s, Llama-3-70B at 300 tokens/s in bf16 or fp8 — a Llama-3-8B
  fine-tune starting in month 2 and a 1.3B pre-training job), every provider and purchase option (reservations,
  savings plans, capacity blocks, flex-start), a monthly budget;
* ``mix5-reserved``: the same, purchase options on-demand, spot and reservations only (the services may share
  reservations: the case the LP-bounded placement search could not close, issue 25).
* ``mix5-n1``: ``mix5`` at issue 26's production defaults: each service two replicas and N+1 at peak (``mix5``'s
  services state one replica and ``redundancy: none``, the machinery issue 25 measured).

Issue 25 targets (ratios to :func:`baseline`, a fixed CBC solve and Python loop measured in the same run, so a loaded
machine shows as a larger baseline): the example plan proven optimal in < 10 s end to end; any plan of <= 5
workloads with training and serving in < 15 s; 30 x 168 within 0.5 % in < 30 s or a stated gap; explanations
<= 1.5x the plan's own solve.

For each scenario and solver (time limit 60 s, gap 0.1 %): the plan's status, gap, seconds (the plan's own solves,
and the whole plan_fleet call), the model's size, phase times (benchmarks/phases.py), and whether every solve kept
to its time limit. Then (d): the same plan with explanations, and the explanations' time against the plan's own.

Targets (issue 8): 3 workloads x 720 distinct blocks and 30 x 168 proven optimal (gap <= 0.1 %) in < 10 s;
explanations <= 1.5 x the plan's own solve; every solver held to its time limit.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import tempfile
import os
import platform
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from benchmarks.phases import PhaseTimer, git_state  # noqa: E402

#: A diurnal chat load (tokens/s at a peak of 1,400), hour 0 = 00:00.
DAY = [150, 150, 150, 160, 200, 300, 500, 800, 1100, 1300, 1400, 1400, 1300, 1350, 1400, 1400, 1300, 1200, 1000,
       800, 600, 400, 250, 180]
MODELS = ["Llama-2-7B", "Llama-2-13B", "Llama-2-70B", "Llama-3-8B", "Llama-3-70B", "Llama-3.1-405B",
          "Mistral-7B-v0.1", "Mixtral-8x7B-v0.1", "Qwen2-72B", "Falcon-40B"]
TIME_LIMIT_S = 60.0
EXAMPLE_PLAN = HERE.parent / "gpuopt" / "data" / "example_plan.yaml"
GAP = 0.001
TARGET_S = 10.0
#: Five workloads, training and serving, every provider and purchase option (the ``mix5`` scenario).
MIX5 = """horizon_months: 12
budget: 90000
providers: []
pricing: []
time_limit_s: 60
workloads:
  - {name: chat, task: serve, model: meta-llama/Llama-2-13b-hf, precision: bf16, input_tokens: 1024,
     output_tokens: 256, scenario: server, demand_profile: chat_daily.csv, min_replicas: 2, redundancy: none}
  - {name: code, task: serve, model: Mistral-7B-v0.1, precision: bf16, tokens_per_second: 800, min_replicas: 1,
     redundancy: none}
  - {name: assistant, task: serve, model: Llama-3-70B, precision: "bf16,fp8", tokens_per_second: 300,
     min_replicas: 1, redundancy: none}
  - {name: finetune-8b, task: finetune, model: Llama-3-8B, precision: bf16, context_tokens: 4096, tokens: 5.0e+8,
     deadline_hours: 72, start: 2, allow_spot: true}
  - {name: pretrain-1b, task: train, params: 1.3e+9, precision: bf16, context_tokens: 2048, zero_stage: 2,
     tokens: 2.6e+10, deadline_hours: 240}
"""
PLAN_FILES = {"example": None, "mix5": {}, "mix5-reserved": {"pricing": ["on_demand", "spot", "reserved_1y",
                                                                          "reserved_3y"]},
              "mix5-n1": {}}
#: ``mix5-n1``: MIX5 at issue 26's production defaults (two replicas a service and N+1 at peak): the same text
#: without its services' ``redundancy: none`` and one-replica floors.
MIX5_N1 = re.sub(r",\s*min_replicas: 1\b", "", re.sub(r",\s*redundancy: none", "", MIX5))


def baseline(repeat: int = 3) -> float:
    """Seconds of a fixed reference job, the least of ``repeat`` runs: a seeded 60-variable covering MILP solved by
    PuLP's CBC to optimality, plus a fixed pure-Python loop. Figures divided by it compare across loads."""
    import random

    import pulp

    best = math.inf
    for _ in range(repeat):
        t0 = time.perf_counter()
        rng = random.Random(1)
        m = pulp.LpProblem("baseline", pulp.LpMinimize)
        x = [pulp.LpVariable(f"x{i}", 0, 10, cat="Integer") for i in range(60)]
        m += pulp.lpSum(rng.uniform(1, 100) * v for v in x)
        for _k in range(40):
            m += pulp.lpSum(rng.randint(0, 9) * v for v in x) >= rng.randint(500, 2000)
        m.solve(pulp.PULP_CBC_CMD(msg=False, threads=1))
        s = 0
        for i in range(2_000_000):
            s += i % 7
        best = min(best, time.perf_counter() - t0)
    return best


def plan_file(name: str, folder: Path) -> tuple[Path, dict]:
    """(plan file, extra keywords) of a plan-file scenario, written into ``folder`` with its demand profile."""
    import shutil

    if name == "example":
        return EXAMPLE_PLAN, {}
    shutil.copy(EXAMPLE_PLAN.parent / "chat_daily.csv", folder / "chat_daily.csv")
    path = folder / f"{name}.yaml"
    path.write_text(MIX5_N1 if name == "mix5-n1" else MIX5, encoding="utf-8")
    return path, dict(PLAN_FILES[name])


def demand_values(hours: int, peak: float, shift: int, seed: int, weekend: float = 0.6,
                  growth: float = 0.003) -> list[float]:
    """``hours`` hourly demands (tokens/s): DAY scaled to ``peak``, shifted by ``shift`` hours (a time zone), x
    ``weekend`` on Saturdays and Sundays, x (1 + growth x day), x a seeded factor in [0.97, 1.03]; rounded to 0.1."""
    import numpy as np

    rng = np.random.default_rng(seed)
    out = []
    for h in range(hours):
        day, hour = divmod(h, 24)
        f = weekend if day % 7 >= 5 else 1.0
        v = peak / 1400.0 * DAY[(hour + shift) % 24] * f * (1.0 + growth * day) * rng.uniform(0.97, 1.03)
        out.append(round(v, 1))
    return out


def scenario(name: str):
    """(workloads, profiles) of a scenario."""
    import numpy as np

    from optimizer.planning.demand import inline_profile
    from optimizer.planning.problem import FleetWorkload
    from optimizer.sizing import Workload
    from optimizer.sizing.specs import load_model

    def serve(wname, model, values, min_replicas=1):
        w = Workload(task="serve", model=load_model(model), tokens_per_second=max(values))
        return FleetWorkload(wname, w, min_replicas=min_replicas), inline_profile(values)

    if name == "1x720":  # the chat service of 3x720 alone: separable, planned exactly by optimizer.planning.exact
        items = [serve("chat", "Llama-2-13B", demand_values(720, 1400, 0, 1), 2)]
    elif name == "3x720":
        items = [serve("chat", "Llama-2-13B", demand_values(720, 1400, 0, 1), 2),
                 serve("code", "Mistral-7B-v0.1", demand_values(720, 2500, 3, 2)),
                 serve("assistant", "Llama-3-70B", demand_values(720, 600, 6, 3))]
    elif name == "30x168":
        rng = np.random.default_rng(30)
        items = []
        for i in range(30):
            peak = float(round(rng.uniform(100, 2000)))
            items.append(serve(f"w{i:02d}-{MODELS[i % 10].lower()}", MODELS[i % 10],
                               demand_values(168, peak, (i * 5) % 24, 100 + i, growth=0.0), 2 if i % 3 == 0 else 1))
    else:
        raise SystemExit(f"unknown scenario {name!r} (1x720, 3x720, 30x168)")
    return [w for w, _ in items], {w.name: p for w, p in items}


def run(name: str, offers, solver: str, explain: bool, time_limit_s: float, profile: bool,
        placement: str = "region") -> dict:
    from optimizer.planning.plan import plan_fleet

    label = f"{name} {solver} explain={explain}"
    with PhaseTimer() as pt:
        t0 = time.perf_counter()
        if name in PLAN_FILES:  # a plan file, end to end through the API (offers loaded by it)
            from gpuopt.api import recommend

            with tempfile.TemporaryDirectory() as tmp:
                path, extra = plan_file(name, Path(tmp))
                r = pt.profiled(profile, label, recommend, workload=str(path), solver=solver,
                                time_limit_s=time_limit_s, explain=explain, **extra).plan
        else:
            ws, profiles = scenario(name)
            r = pt.profiled(profile, label, plan_fleet, ws, profiles, offers, solver=solver,
                            time_limit_s=time_limit_s, gap_rel=GAP, explain=explain, placement=placement)
        wall = time.perf_counter() - t0
    ph = pt.report()
    plan_solves = [s for s in pt.solves if s["where"] == "plan"]
    over = [round(s["seconds"] - s["time_limit_s"], 3) for s in pt.solves if s["time_limit_s"] is not None]
    out = {"scenario": name if placement == "region" else f"{name}/{placement}", "solver": solver,
           "explain": explain, "placement": placement, "status": r.status, "gap": r.gap,
           "wall_s": round(wall, 3), "plan_solve_s": round(sum(s["seconds"] for s in plan_solves), 3),
           "solver_report": {k: r.solver.get(k) for k in ("status", "gap", "seconds", "message", "total_seconds")},
           "blocks": r.solver.get("blocks"), "periods": r.solver.get("periods"), "pruned": r.solver.get("pruned"),
           "candidates_after_pruning": sum((r.solver.get("candidates") or {}).values()),
           "models_built": pt.models, "solves": len(pt.solves), "plan_solves": plan_solves,
           "max_seconds_over_time_limit": max(over) if over else None,
           "total_usd": r.total_usd, "monthly_usd": r.monthly_usd, "lines": len(r.lines), "phases": ph,
           "reason": (r.reason or {}).get("message")}
    if explain:
        ex = ph.get("explain_into", {}).get("s", 0.0)
        own = wall - ex
        out["explain_s"] = ex
        out["plan_without_explain_s"] = round(own, 3)
        out["explain_ratio_vs_plan"] = round(ex / own, 2) if own > 0 else None
        out["explain_ratio_vs_plan_solve"] = round(ex / out["plan_solve_s"], 2) if out["plan_solve_s"] else None
        out["strategies"] = {k: v.get("status") for k, v in r.strategies.items()}
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--scenarios", default="example,mix5,mix5-reserved,30x168,3x720,1x720",
                    help="1x720, 3x720, 30x168, example (the bundled gpuopt/data/example_plan.yaml through "
                         "gpuopt.api.recommend), mix5, mix5-reserved (five workloads through the API)")
    ap.add_argument("--solvers", default="cbc,highs")
    ap.add_argument("--time-limit", type=float, default=TIME_LIMIT_S)
    ap.add_argument("--no-explain", action="store_true", help="skip (d), the runs with explanations")
    ap.add_argument("--profile", action="store_true", help="print cProfile's top functions of each plan")
    ap.add_argument("--placement", default="region", choices=("region", "provider", "any"),
                    help="placement of the synthetic scenarios (gpuopt's default: region); 'any' is one MILP")
    ap.add_argument("--output", default=str(HERE / "last_results_fleet.json"))
    ap.add_argument("--table", action="store_true", help="only print the table of benchmarks/last_results_fleet.json")
    args = ap.parse_args()
    if args.table:
        print_table(json.loads(Path(args.output).read_text()))
        return

    from pricing_cache.store import load_offers

    offers, _ = load_offers(use_cache=False)
    out: dict = {"python": platform.python_version(), "cpus": os.cpu_count(), "git": git_state(HERE.parent),
                 "date": time.strftime("%Y-%m-%d %H:%M:%S"), "offers": int(len(offers)),
                 "time_limit_s": args.time_limit, "gap_rel": GAP, "loadavg_start": os.getloadavg(), "runs": []}
    out["baseline_s"] = round(baseline(), 3)
    print(f"  baseline (fixed CBC solve + Python loop): {out['baseline_s']} s", flush=True)
    scen = [s for s in args.scenarios.split(",") if s]
    for name in scen:
        planned = []
        for solver in [s for s in args.solvers.split(",") if s]:
            r = run(name, offers, solver, False, args.time_limit, args.profile, args.placement)
            out["runs"].append(r)
            if r["status"] in ("optimal", "time_limit"):
                planned.append(solver)
            print(f"  {name} {solver}: {r['status']} gap {r['gap']} wall {r['wall_s']} s, plan solves "
                  f"{r['plan_solve_s']} s, blocks {r['blocks']}, models {r['models_built']}", flush=True)
        if args.no_explain:
            continue
        if not planned:  # explanations are only made for a plan
            out["runs"].append({"scenario": name, "solver": None, "explain": True, "status": "no plan to explain",
                                "gap": None, "wall_s": None, "plan_solve_s": None, "blocks": None,
                                "candidates_after_pruning": None, "models_built": [], "phases": {},
                                "max_seconds_over_time_limit": None})
            continue
        for solver in planned:
            r = run(name, offers, solver, True, args.time_limit, args.profile, args.placement)
            out["runs"].append(r)
            print(f"  {name} {solver} + explain: {r['status']} wall {r['wall_s']} s, explain {r.get('explain_s')} s",
                  flush=True)
    out["baseline_end_s"] = round(baseline(), 3)
    for r in out["runs"]:
        if r.get("wall_s") is not None:
            r["wall_x_baseline"] = round(r["wall_s"] / max(out["baseline_s"], out["baseline_end_s"]), 2)
    out["loadavg_end"] = os.getloadavg()
    out["targets"] = targets(out)
    Path(args.output).write_text(json.dumps(out, indent=2) + "\n")
    print_table(out)


#: Issue 25's targets per scenario: (seconds, relative gap proven). 30 x 168: within 0.5 % in 30 s (else its stated
#: gap is reported); the plan-file scenarios: the example < 10 s, any plan of <= 5 workloads < 15 s.
TARGETS = {"example": (10.0, GAP), "mix5": (15.0, GAP), "mix5-reserved": (15.0, GAP), "30x168": (30.0, 0.005)}


def targets(out: dict) -> dict:
    t = {}
    for r in out["runs"]:
        key = f"{r['scenario']}_{r['solver']}" + ("_explain" if r["explain"] else "")
        if r["solver"] is None:
            t[f"{r['scenario']}_explain_le_1_5x"] = {"met": None, "note": "no plan, so no explanations to time"}
            continue
        if not r["explain"]:
            limit, gap = TARGETS.get(r["scenario"], (TARGET_S, GAP))
            proven = r["status"] == "optimal" and (r["gap"] or 0.0) <= gap + 1e-12
            t[f"{key}_optimal_lt_{limit:g}s"] = {"status": r["status"], "gap": r["gap"], "wall_s": r["wall_s"],
                                                 "met": proven and r["wall_s"] < limit}
            if r["scenario"] == "example":
                ex = next((x for x in out["runs"] if x["scenario"] == "example" and x["explain"]
                           and x["solver"] == r["solver"]), None)
                if ex is not None:  # "end to end": the plan with its explanations, as `gpuopt recommend` runs it
                    t[f"{key}_end_to_end_with_explanations_lt_{limit:g}s"] = {"wall_s": ex["wall_s"],
                                                                             "met": ex["wall_s"] < limit}
        else:
            t[f"{key}_le_1_5x"] = {"explain_s": r.get("explain_s"), "plan_s": r.get("plan_without_explain_s"),
                                   "ratio": r.get("explain_ratio_vs_plan"),
                                   "met": r["status"] in ("optimal", "time_limit") and
                                   (r.get("explain_ratio_vs_plan") or 99) <= 1.5}
        # each solver call against the limit it was given, and the plan's own solves together against --time-limit
        over_total = round(r["plan_solve_s"] - out["time_limit_s"], 3)
        t[f"{key}_solves_within_time_limit"] = {"max_seconds_over_per_solve": r["max_seconds_over_time_limit"],
                                                "plan_solves_s": r["plan_solve_s"], "plan_seconds_over": over_total,
                                                "met": (r["max_seconds_over_time_limit"] or 0.0) <= 1.0
                                                and over_total <= 1.0}
    return t


def print_table(out: dict) -> None:
    print(f"\npython {out['python']}, {out['cpus']} cpus, {out['offers']} offers, git {out['git']}")
    print(f"load average start {out['loadavg_start']}, end {out['loadavg_end']}")
    print(f"baseline (fixed CBC solve + Python loop) {out.get('baseline_s')} s at the start, "
          f"{out.get('baseline_end_s')} s at the end; 'x base' = wall s / the larger")
    hdr = ("scenario", "solver", "explain", "status", "gap", "blocks", "cands", "vars", "rows", "plan solve s",
           "wall s", "x base", "explain s", "ratio")
    rows = []
    for r in out["runs"]:
        m = r["models_built"][0] if r["models_built"] else {}
        rows.append((r["scenario"], str(r["solver"]), "yes" if r["explain"] else "no", r["status"], str(r["gap"]),
                     str(r["blocks"]), str(r["candidates_after_pruning"]), str(m.get("variables", "")),
                     str(m.get("constraints", "")), str(r["plan_solve_s"]), str(r["wall_s"]),
                     str(r.get("wall_x_baseline", "")),
                     str(r.get("explain_s", "")), str(r.get("explain_ratio_vs_plan", ""))))
    widths = [max(len(h), *(len(x[i]) for x in rows)) if rows else len(h) for i, h in enumerate(hdr)]
    print("  ".join(h.ljust(w) for h, w in zip(hdr, widths)))
    for x in rows:
        print("  ".join(v.ljust(w) for v, w in zip(x, widths)))
    for r in out["runs"]:
        print(f"\n{r['scenario']} {r['solver']} explain={r['explain']}: phases")
        for name, p in r["phases"].items():
            print(f"  {name:<48} {p['s']:>9} s  ({p['calls']} calls)")
    print()
    for k, v in out["targets"].items():
        print(f"target {k}: {json.dumps(v)}")


if __name__ == "__main__":
    main()
