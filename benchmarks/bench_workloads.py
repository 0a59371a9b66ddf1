"""How plans scale with the number of workloads (issue 30 point 5, issue 33 point 1), end to end as a user runs them:
``gpuopt recommend --workload plan.yaml --format json`` in a fresh process, on the shipped snapshot.

    python benchmarks/bench_workloads.py                  # 16, 30 and 200 workloads; writes last_results_workloads.json
    python benchmarks/bench_workloads.py --sizes 16,200,500
    python benchmarks/bench_workloads.py --budget 0           # without a budget only
    python benchmarks/bench_workloads.py --demand hourly      # 24-hour demand lists only

Each plan file holds N serving workloads (five models in turn -- Llama-2-7B, Llama-2-13B, Mistral-7B, Llama-3-8B,
Llama-3-70B -- each a constant demand drawn from 100..3,000 tokens/s with a fixed seed) and gpuopt's defaults (12-month
horizon, every provider, chat targets, two replicas and N+1 per service). For each size: the wall seconds, the peak
resident memory of the process (``resource.getrusage`` in the child), the plan's status and gap, its total, and the
exit code. Targets (issue 30): 200 workloads in < 60 s and < 2 GB; past :data:`gpuopt.request.MAX_WORKLOADS`
workloads a one-line error (exit 1) is expected instead of a plan.

Each size runs twice by default: without a budget, and with ``budget: --budget`` (USD a month, default
10,000,000 -- far above any of these plans' months, so it cannot bind). A budget ties every workload into one
problem (``optimizer.planning.solve.independent_parts``); before issue 33 a budget that could not bind made 16
workloads end "no plan" (exit 1). Expected now: the same plan as without it, or "not solved within the limit"
(exit 5) -- never "no plan". ``--demand`` picks the demand shapes (default both: constant, then hourly).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
MODELS = ["meta-llama/Llama-2-7b-hf", "meta-llama/Llama-2-13b-hf", "Mistral-7B-v0.1", "Llama-3-8B", "Llama-3-70B"]
#: The child: runs the CLI, then prints its own peak RSS (kB on Linux) as the last line of stderr.
CHILD = """
import json, resource, sys
sys.argv = ["gpuopt"] + sys.argv[1:]
code = 0
try:
    from gpuopt.cli import main
    main()
except SystemExit as e:
    code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
sys.stderr.write("\\nMAXRSS_KB " + str(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) + "\\n")
sys.exit(code)
"""


def plan_file(n: int, folder: Path, seed: int = 7, budget: float | None = None, demand: str = "constant") -> Path:
    """A plan file of ``n`` serving workloads (module docstring), written into ``folder``; ``budget``: a monthly
    budget (USD), none when None; ``demand``: "constant" (one tokens/s each) or "hourly" (a 24-hour list, a valley
    at noon down to 40 % of its peak, every third service allowing spot, pricing on demand, spot and 1- and 3-year
    reservations: the plan file of issue 33's false "no plan")."""
    import yaml

    rng = random.Random(seed)
    ws = []
    for i in range(n):
        w: dict = {"name": f"svc{i:03d}", "task": "serve", "model": MODELS[i % len(MODELS)]}
        base = rng.randint(100, 3000)
        if demand == "hourly":
            w.update(demand=[int(base * (0.4 + 0.6 * abs(12 - h) / 12)) for h in range(24)], allow_spot=i % 3 == 0)
        else:
            w["tokens_per_second"] = base
        ws.append(w)
    doc: dict = {"horizon_months": 12, "workloads": ws}
    if demand == "hourly":
        doc["pricing"] = ["on_demand", "spot", "reserved_1y", "reserved_3y"]
    if budget is not None:
        doc["budget"] = budget
    path = folder / f"plan_{n}_{demand}{'' if budget is None else '_budget'}.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    return path


def run(n: int, folder: Path, timeout_s: float, budget: float | None = None, demand: str = "constant") -> dict:
    """One plan of ``n`` workloads (``budget``: a monthly budget, USD, or None; ``demand``: as :func:`plan_file`) in
    a fresh process: wall s, peak RSS MiB, status, gap, total, exit code."""
    path = plan_file(n, folder, budget=budget, demand=demand)
    t0 = time.perf_counter()
    try:
        p = subprocess.run([sys.executable, "-c", CHILD, "recommend", "--workload", str(path), "--format", "json"],
                           capture_output=True, text=True, timeout=timeout_s, cwd=str(folder))
    except subprocess.TimeoutExpired:
        return {"workloads": n, "demand": demand, "budget_usd": budget, "wall_s": round(time.perf_counter() - t0, 1),
                "status": "timeout", "exit": None}
    wall = time.perf_counter() - t0
    rss = next((int(line.split()[1]) for line in reversed(p.stderr.splitlines()) if line.startswith("MAXRSS_KB")),
               None)
    out: dict = {"workloads": n, "demand": demand, "budget_usd": budget, "wall_s": round(wall, 1), "peak_rss_mib": round(rss / 1024) if rss else None,
                 "exit": p.returncode}
    doc: dict = {}
    for text in [p.stdout] + p.stderr.splitlines():  # a plan on stdout; an error document on stderr
        try:
            doc = json.loads(text)
            break
        except ValueError:
            continue
    if doc.get("kind") == "error":
        out.update(status="error", error_type=doc["error"]["type"], message=doc["error"]["message"])
        if doc["error"]["type"] == "not_solved":
            out["status"] = "not_solved"
    else:
        out.update(status=doc.get("status"), gap=doc.get("gap"), total_usd=doc.get("total_usd"),
                   solver_seconds=(doc.get("solver") or {}).get("seconds"),
                   method=(doc.get("solver") or {}).get("method"))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="16,30,200", help="workload counts, comma-separated")
    ap.add_argument("--timeout", type=float, default=900.0, help="seconds before a run is stopped")
    ap.add_argument("--budget", type=float, default=10_000_000.0,
                    help="a monthly budget (USD) for the second run of each size; 0: no budgeted runs")
    ap.add_argument("--demand", default="constant,hourly",
                    help="demand shapes, comma-separated: constant (one tokens/s) and/or hourly (24-hour lists)")
    ap.add_argument("--output", default=str(HERE / "last_results_workloads.json"))
    args = ap.parse_args()
    sys.path.insert(0, str(ROOT))
    from benchmarks.phases import git_state

    res: dict = {"python": platform.python_version(), "cpus": os.cpu_count(), "git": git_state(ROOT),
                 "date": time.strftime("%Y-%m-%d %H:%M:%S"), "runs": []}
    with tempfile.TemporaryDirectory() as tmp:
        budgets = [None] + ([args.budget] if args.budget > 0 else [])
        runs = [(n, shape, budget) for shape in args.demand.split(",") if shape
                for n in [int(s) for s in args.sizes.split(",") if s] for budget in budgets]
        for n, shape, budget in runs:
            if shape not in ("constant", "hourly"):
                ap.error(f"--demand: unknown shape '{shape}' (accepted: constant, hourly)")
            r = run(n, Path(tmp), args.timeout, budget, shape)
            res["runs"].append(r)
            with_budget = "" if budget is None else f", budget ${budget:,.0f}/month"
            print(f"  {n:>4} workloads ({shape}{with_budget}): {r.get('status')} gap {r.get('gap')} · "
                  f"{r['wall_s']} s · {r.get('peak_rss_mib')} MiB peak · exit {r['exit']}"
                  + (f" · ${r['total_usd']:,.2f}" if r.get("total_usd") is not None else "")
                  + (f" · {r['message']}" if r.get("message") else ""), flush=True)
    Path(args.output).write_text(json.dumps(res, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
