"""Benchmarks of the performance budgets in DESIGN.md (measured here, never in unit tests).

    python benchmarks/bench_recommend.py            # prints a table and writes benchmarks/last_results.json

Measures:
  - `gpuopt --help` wall time (subprocess, best of 5; goal: well under 0.5 s);
  - `gpuopt recommend` end to end on the shipped snapshot (subprocess, best of 3; goal: under 1 s);
  - the planner alone (in-process) on the shipped snapshot and on a synthetic catalog of 20,000 offers
    made by repeating the snapshot's offers over synthetic regions with prices jittered by a seeded RNG
    (synthetic: for timing only, never shipped or planned with).
"""

from __future__ import annotations

import json
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def _time_cmd(args: list[str], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        subprocess.run(args, check=False, capture_output=True)
        times.append(time.perf_counter() - t0)
    return min(times)


def _synthetic(offers, n: int, seed: int = 7):
    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(seed)
    reps = -(-n // len(offers))
    frames = []
    for i in range(reps):
        f = offers.copy()
        f["region"] = f["region"] + f"-syn{i}"
        f["usd_per_hour"] = f["usd_per_hour"] * rng.uniform(0.8, 1.25, len(f))
        frames.append(f)
    return pd.concat(frames, ignore_index=True).head(n)


def main() -> None:
    sys.path.insert(0, str(HERE.parent))
    from optimizer.plan import plan
    from optimizer.sizing import Workload
    from optimizer.specs import load_model
    from pricing_cache.store import load_offers

    exe = [sys.executable, "-m", "gpuopt.cli"]
    results = {"python": platform.python_version(), "machine": platform.machine(), "cpus": __import__("os").cpu_count()}
    results["help_s"] = round(_time_cmd(exe + ["--help"], 5), 3)
    results["recommend_cli_s"] = round(_time_cmd(exe + ["recommend", "--budget", "50000", "--model", "meta-llama/Llama-2-70b-hf",
                                                        "--task", "serve", "--tokens-per-second", "2000"], 3), 3)
    offers, _ = load_offers()
    w_serve = Workload(task="serve", model=load_model("meta-llama/Llama-2-70b-hf"), tokens_per_second=2000.0)
    w_train = Workload(task="train", model=load_model("meta-llama/Llama-2-7b-hf"), tokens=2e10, deadline_hours=240.0)
    for label, off in (("snapshot", offers), ("synthetic_20000", _synthetic(offers, 20000))):
        for wname, w in (("serve_70b", w_serve), ("train_7b", w_train)):
            times = []
            for _ in range(3):
                t0 = time.perf_counter()
                r = plan(w, off, budget_usd=50000.0, compare_strategies=False)
                times.append(time.perf_counter() - t0)
            results[f"plan_{label}_{wname}_s"] = round(min(times), 3)
            results[f"plan_{label}_{wname}_offers"] = int(len(off))
            results[f"plan_{label}_{wname}_status"] = r.status
            results[f"plan_{label}_{wname}_candidates_after_pruning"] = r.solver.get("variables_units")
    (HERE / "last_results.json").write_text(json.dumps(results, indent=2) + "\n")
    width = max(len(k) for k in results)
    for k, v in results.items():
        print(f"{k:<{width}}  {v}")


if __name__ == "__main__":
    main()
