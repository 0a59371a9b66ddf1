"""Phase timers for the benchmarks: wrap the planner's steps (in memory only, for the benchmark process) and add up
the wall time spent in each, so a run says where its time went without a profiler's overhead.

Phases (inclusive wall time, summed over calls; modules of ``optimizer.planning``):
    make_problem          periods, blocks, candidates and pruning (contains the four below)
    unit_table            sizing every offer row into unit arrays, once per distinct hardware (planning.candidates)
    prefilter_rows        dropping, on those arrays, rows pruning would drop (planning.problem_build)
    make_candidates       Candidate objects for the rows kept (planning.candidates.UnitTable.candidates)
    prune_fleet           dominance pruning (planning.prune), in make_problem and again in every placement node
    solve_separable       the exact enumeration (planning.exact), when the plan splits by workload
    build_fleet_model     writing the MILP with PuLP (variables, rows)
    solve_fleet           the solver call (contains the three below)
      pulp_write_mps      PuLP writing the MPS file CBC reads
      pulp_read_solution  PuLP reading CBC's solution file
      (solver process     solve_fleet - the two above, for CBC)
    read_solution, trim_allocations, fleet_lines, workload_summaries, verify, binding: reading the answer
    explain_into          the explanations (planning.explain)

Calls made inside ``explain_into`` are booked as ``explain/<phase>`` (summed over its threads, so they can exceed
its wall time).
"""

from __future__ import annotations

import cProfile
import io
import pstats
import subprocess
import threading
import time
from pathlib import Path
from typing import Any, Callable

#: The phase functions by the planning module whose calls are timed (a function is wrapped where its callers look it
#: up: make_problem is called by plan.py and, for placement-group bounds, by problem_build.py itself).
_PLANNER = {"problem_build": ("make_problem", "unit_table", "prefilter_rows", "prune_fleet"),
            "solve": ("prune_fleet", "build_fleet_model", "solve_fleet", "read_solution"),
            "plan": ("make_problem", "trim_allocations", "fleet_lines", "workload_summaries", "verify")}
_EXPLAIN = ("explain_into", "binding", "prune_fleet", "build_fleet_model", "solve_fleet")


class PhaseTimer:
    """Context manager: while active, the planner's phase functions are wrapped with timers."""

    def __init__(self) -> None:
        self.times: dict[str, float] = {}
        self.calls: dict[str, int] = {}
        self.solves: list[dict[str, Any]] = []
        self.models: list[dict[str, int]] = []
        self._lock = threading.Lock()
        self._explaining = False
        self._saved: list[tuple[Any, str, Any]] = []

    # -------------------------------------------------------------------------------------------- wrapping
    def _wrap(self, owner: Any, name: str, phase: str | None = None) -> None:
        orig = getattr(owner, name)
        phase = phase or name
        timer = self

        def wrapped(*a, **kw):
            key = ("explain/" + phase) if (timer._explaining and phase != "explain_into") else phase
            if phase == "explain_into":
                timer._explaining = True
            t0 = time.perf_counter()
            try:
                out = orig(*a, **kw)
            finally:
                dt = time.perf_counter() - t0
                if phase == "explain_into":
                    timer._explaining = False
                with timer._lock:
                    timer.times[key] = timer.times.get(key, 0.0) + dt
                    timer.calls[key] = timer.calls.get(key, 0) + 1
            if phase == "solve_fleet":
                with timer._lock:
                    timer.solves.append({"where": "explain" if key.startswith("explain/") else "plan",
                                         "status": out.status, "gap": out.gap, "seconds": round(dt, 3),
                                         "time_limit_s": kw.get("time_limit_s")})
            elif phase == "build_fleet_model" and not key.startswith("explain/"):
                m = out[0]
                with timer._lock:
                    timer.models.append({"variables": m.numVariables(), "constraints": m.numConstraints()})
            return out

        self._saved.append((owner, name, orig))
        setattr(owner, name, wrapped)

    def __enter__(self) -> "PhaseTimer":
        import pulp
        from pulp.apis import coin_api

        import importlib

        from optimizer.planning import candidates, exact
        from optimizer.planning import explain as fleet_explain

        for mod, names in _PLANNER.items():
            module = importlib.import_module(f"optimizer.planning.{mod}")
            for n in names:
                self._wrap(module, n)
        self._wrap(candidates.UnitTable, "candidates", "make_candidates")
        self._wrap(exact, "solve_separable")
        for n in _EXPLAIN:
            self._wrap(fleet_explain, n)
        self._wrap(pulp.LpProblem, "writeMPS", "pulp_write_mps")
        self._wrap(coin_api.COIN_CMD, "readsol_MPS", "pulp_read_solution")
        return self

    def __exit__(self, *exc) -> None:
        for owner, name, orig in reversed(self._saved):
            setattr(owner, name, orig)
        self._saved.clear()

    # -------------------------------------------------------------------------------------------- results
    def report(self) -> dict[str, dict[str, Any]]:
        out = {k: {"s": round(v, 3), "calls": self.calls[k]} for k, v in sorted(self.times.items(),
                                                                                   key=lambda kv: -kv[1])}
        for prefix in ("", "explain/"):
            s = self.times.get(prefix + "solve_fleet")
            if s is not None:
                inner = self.times.get(prefix + "pulp_write_mps", 0.0) + self.times.get(prefix + "pulp_read_solution", 0.0)
                out[prefix + "solver_process (solve_fleet - PuLP I/O)"] = {"s": round(s - inner, 3), "calls": self.calls[prefix + "solve_fleet"]}
        return out

    def profiled(self, profile: bool, label: str, fn: Callable, *a, **kw):
        """Call fn; with ``profile``, under cProfile, and print its top functions."""
        if not profile:
            return fn(*a, **kw)
        pr = cProfile.Profile()
        pr.enable()
        try:
            return fn(*a, **kw)
        finally:
            pr.disable()
            print_profile(pr, label)


def print_profile(pr: cProfile.Profile, label: str, top: int = 30) -> None:
    s = io.StringIO()
    st = pstats.Stats(pr, stream=s)
    st.sort_stats("cumulative").print_stats(r"optimizer|gpuopt|pulp|pandas|subprocess", top)
    st.sort_stats("tottime").print_stats(top)
    print(f"\n==================== cProfile: {label} ====================")
    print(s.getvalue())


def git_state(repo: Path) -> str:
    """HEAD and whether the planner's files differ from it (the benchmark measures the working tree)."""
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=repo, capture_output=True, text=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--", "optimizer", "gpuopt", "pricing_cache", "providers"],
                               cwd=repo, capture_output=True, text=True).stdout.split("\n")
        changed = sorted(line[3:] for line in dirty if line.strip())
        return head + (f" + uncommitted changes in {', '.join(changed)}" if changed else "")
    except OSError:
        return "unknown"
