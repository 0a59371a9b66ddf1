"""Memory of the planning model per variable (issue 33 point 2): the fit behind
``optimizer.planning.size_guard.BYTES_PER_VARIABLE`` and ``BYTES_FIXED``.

    python benchmarks/bench_model_memory.py                  # 4 sizes, prints each and the least-squares fit
    python benchmarks/bench_model_memory.py --sizes 2x20x24,8x40x168

Each size ``WxCxB`` is a synthetic FleetProblem of W serving workloads, C candidates each (half reserved 1-year,
half on demand, distinct instance types: no pruning) and B demand blocks over a 12-month horizon, as the tests build
them (tests/test_fleet.py). The model is built with ``optimizer.planning.milp.build_fleet_model`` (PuLP) under
``tracemalloc``; its peak Python allocation is the figure (the solver runs in its own process and is not counted).
Variables and nonzeros are counted on the built model, and ``size_guard.count_model`` (the estimate's count,
before the model exists) is printed beside them. The fit is bytes = fixed + per_variable x variables.
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
import tracemalloc
from pathlib import Path
from types import SimpleNamespace

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

DEFAULT_SIZES = "1x20x24,4x40x24,8x40x168,4x30x730"


def synthetic_problem(n_workloads: int, n_cands: int, n_blocks: int):
    """A FleetProblem of ``n_workloads`` services x ``n_cands`` candidates x ``n_blocks`` blocks (module docstring).
    Prices and throughputs are placeholders for sizing a model, never a plan's figures."""
    from optimizer.planning.candidates import Candidate
    from optimizer.planning.problem import FleetBlock, FleetProblem, FleetWorkload

    def cand(w: int, j: int) -> Candidate:
        pricing = "reserved_1y" if j % 2 else "on_demand"
        itype = f"i{w}_{j}"
        offer = {"provider": "test", "region": f"r{j % 3}", "zone": "", "instance_type": itype, "pricing": pricing,
                 "payment": "all_upfront" if pricing.startswith("reserved") else "", "usd_per_hour": 1.0 + j / 100,
                 "upfront_usd": 0.0, "gpu_model": "L4", "gpu_count": 1.0, "gpu_memory_gib": 22.35,
                 "interconnect": "pcie", "source": "synthetic", "as_of": "2026-01-01"}
        return Candidate(key=f"{itype}|{pricing}", offer=offer, instances_per_unit=1, replicas_per_unit=1,
                         sizing=SimpleNamespace(gpus_per_replica=1.0), usd_per_unit_hour=1.0 + j / 100,
                         throughput_per_unit=100.0 + j, shape=f"L4 x1 ({itype})")

    names = [f"svc{i}" for i in range(n_workloads)]
    ws = [FleetWorkload(name=n, workload=SimpleNamespace(task="serve", model=SimpleNamespace(name="m")),
                        min_replicas=2) for n in names]
    h = 730.0 / n_blocks
    blocks = [FleetBlock(start_hour=b * h, hours=h, demand={n: 100.0 + (b * 37 + i * 11) % 500
                                                            for i, n in enumerate(names)}, label=f"b{b}")
              for b in range(n_blocks)]
    cands = {n: [cand(i, j) for j in range(n_cands)] for i, n in enumerate(names)}
    return FleetProblem(ws, blocks, cands, {}, horizon_months=12)


def measure(n_workloads: int, n_cands: int, n_blocks: int) -> dict:
    """Build the model of one size under tracemalloc: variables, rows, nonzeros, peak bytes, seconds, and the
    guard's count of variables."""
    from optimizer.planning.milp import build_fleet_model
    from optimizer.planning.size_guard import count_model

    import pulp  # noqa: F401 (imported before the measure: its import is not the model's memory)

    problem = synthetic_problem(n_workloads, n_cands, n_blocks)
    guess = count_model(problem)
    _ = problem.slots, problem.plan_slots  # made on first use: the problem's memory, not the model's
    gc.collect()
    tracemalloc.start()
    t0 = time.perf_counter()
    model, _v = build_fleet_model(problem)
    secs = time.perf_counter() - t0
    _cur, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    nz = sum(len(c) for c in model.constraints.values())
    out = dict(size=f"{n_workloads}x{n_cands}x{n_blocks}", variables=len(model.variables()),
               rows=len(model.constraints), nonzeros=nz, peak_bytes=peak, seconds=round(secs, 2),
               guard_variables=guess.variables, guard_nonzeros=guess.nonzeros)
    del model
    gc.collect()
    return out


def fit(rows: list[dict]) -> tuple[float, float]:
    """Least squares of peak bytes on variables: (fixed bytes, bytes per variable)."""
    import numpy as np

    x = np.array([r["variables"] for r in rows], dtype=float)
    y = np.array([r["peak_bytes"] for r in rows], dtype=float)
    a = np.vstack([np.ones_like(x), x]).T
    (fixed, per), *_ = np.linalg.lstsq(a, y, rcond=None)
    return float(fixed), float(per)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default=DEFAULT_SIZES, help="comma-separated WxCxB (workloads x candidates x blocks)")
    args = ap.parse_args(argv)
    rows = []
    for spec in args.sizes.split(","):
        w, c, b = (int(x) for x in spec.lower().split("x"))
        r = measure(w, c, b)
        rows.append(r)
        print(f"{r['size']:>12}: {r['variables']:>9,} variables (guard {r['guard_variables']:,}), {r['rows']:>8,} rows, "
              f"{r['nonzeros']:>10,} nonzeros (guard {r['guard_nonzeros']:,}), peak {r['peak_bytes'] / 2**20:8.1f} MiB, "
              f"{r['seconds']} s", flush=True)
    fixed, per = fit(rows)
    print(f"fit: bytes = {fixed:,.0f} + {per:,.0f} x variables "
          f"(per nonzero: {sum(r['peak_bytes'] for r in rows) / sum(r['nonzeros'] for r in rows):,.0f})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
