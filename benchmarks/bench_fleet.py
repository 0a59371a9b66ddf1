"""Benchmark of the full planner (issue: "three workloads over a 168-block profile, under 5 s, proven optimal
within 0.1 % gap; one workload, one block, under 1 s"), on the shipped snapshot and on a synthetic catalog of
20,000 offers (the snapshot's offers repeated over synthetic regions with prices jittered by a seeded RNG: for
timing only, never shipped or planned with).

    python benchmarks/bench_fleet.py        # prints a table, writes benchmarks/last_results_fleet.json

The weekly profile is illustrative: a diurnal chat load (150..1,400 tokens/s) on weekdays, 60 % of it at
weekends, hour by hour (168 blocks; the merge keeps distinct hours apart, and splits at the training deadlines).
"""

from __future__ import annotations

import json
import platform
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

DAY = [150, 150, 150, 160, 200, 300, 500, 800, 1100, 1300, 1400, 1400, 1300, 1350, 1400, 1400, 1300, 1200, 1000,
       800, 600, 400, 250, 180]


def weekly_profile():
    from optimizer.demand import inline_profile

    week = []
    for d in range(7):
        f = 1.0 if d < 5 else 0.6
        week.extend(v * f for v in DAY)
    return inline_profile(week)


def workloads():
    from optimizer.fleet import FleetWorkload
    from optimizer.sizing import Workload
    from optimizer.specs import load_model, model_from_params

    return [
        FleetWorkload("chat", Workload(task="serve", model=load_model("meta-llama/Llama-2-13b-hf"), tokens_per_second=1400.0),
                      min_replicas=2),
        FleetWorkload("support-lora", Workload(task="lora", model=load_model("meta-llama/Llama-2-7b-hf"), tokens=2e8,
                                               context_tokens=2048), allow_spot=True, deadline_hours=168.0),
        FleetWorkload("pretrain-1b", Workload(task="train", model=model_from_params(1.3e9), tokens=2.6e10,
                                              context_tokens=2048, zero_stage=2), deadline_hours=240.0),
    ]


def main() -> None:
    from benchmarks.bench_recommend import _synthetic
    from optimizer.demand import merge_blocks
    from optimizer.fleet import FleetBlock, plan_fleet
    from optimizer.plan import plan
    from optimizer.sizing import Workload
    from optimizer.specs import load_model
    from pricing_cache.store import load_offers

    offers, _ = load_offers(use_cache=False)
    catalogs = {"snapshot": offers, "synthetic_20000": _synthetic(offers, 20000)}
    merged = merge_blocks({"chat": weekly_profile()}, [168.0, 240.0])
    blocks = [FleetBlock(float(b.start_hour), float(b.hours), dict(b.demand), b.label, float(b.end_hour)) for b in merged]
    out = {"python": platform.python_version(), "cpus": __import__("os").cpu_count(), "blocks": len(blocks),
           "merge": merged.note}
    one = Workload(task="serve", model=load_model("meta-llama/Llama-2-70b-hf"), tokens_per_second=2000.0)
    for name, cat in catalogs.items():
        t0 = time.perf_counter()
        r1 = plan(one, cat, budget_usd=50000.0, compare_strategies=False)
        out[f"{name}_one_workload_one_block_s"] = round(time.perf_counter() - t0, 3)
        out[f"{name}_one_workload_one_block_status"] = r1.status
        for solver in ("highs", "cbc"):
            t0 = time.perf_counter()
            r = plan_fleet(workloads(), blocks, cat, budget_usd=60000.0, solver=solver, time_limit_s=120.0,
                           gap_rel=0.001, explain=False)
            out[f"{name}_three_workloads_{len(blocks)}_blocks_{solver}_s"] = round(time.perf_counter() - t0, 3)
            out[f"{name}_three_workloads_{solver}_status"] = r.status
            out[f"{name}_three_workloads_{solver}_gap"] = r.solver.get("gap")
            out[f"{name}_three_workloads_{solver}_monthly_usd"] = r.total_monthly_usd
            out[f"{name}_three_workloads_{solver}_candidates"] = r.solver.get("candidates")
    (HERE / "last_results_fleet.json").write_text(json.dumps(out, indent=2) + "\n")
    width = max(len(k) for k in out)
    for k, v in out.items():
        print(f"{k:<{width}}  {v}")


if __name__ == "__main__":
    main()
