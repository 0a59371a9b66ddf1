"""Solve the planning MILP and check what the solver really says.

PuLP's ``LpProblem.status`` says "Optimal" for CBC runs that stopped at their time limit with a feasible
integer solution (DESIGN.md, "Beware"): :func:`run_solver`, which both planners use, reads the solution status
and CBC's own log ("Result - Stopped on time limit", bound, gap) or HiGHS's info instead.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import sys
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from gpuopt.kernel.errors import InputError, SolverError

if TYPE_CHECKING:  # pragma: no cover
    import pulp

SOLVERS = ("cbc", "highs")


@dataclass(frozen=True)
class Solution:
    """What the solver returned.

    Attributes:
        status: "optimal", "infeasible", "time_limit" (a feasible plan, optimality not proven), "unbounded",
            or "not_solved".
        objective: the objective value (USD) when a plan exists, else None.
        units: candidate key -> integer units (only non-zero entries).
        unit_hours: candidate key -> unit-hours for training hourly candidates (only non-zero entries).
        solver: "cbc" or "highs"; seconds: wall time of the solve.
    """

    status: str
    objective: float | None
    units: dict[str, int]
    unit_hours: dict[str, float]
    solver: str
    seconds: float
    message: str = ""


_QUIET_LOCK = __import__("threading").Lock()
_QUIET_STATE = {"depth": 0, "saved": None}


@contextlib.contextmanager
def _quiet_stdout():
    """Silence what a solver library prints on file descriptor 1 (HiGHS prints a banner even with msg=False),
    so that `--format json` output stays valid JSON. Solves may run in several threads at once: the descriptor is
    redirected by the first one in and restored by the last one out."""
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):  # captured streams (pytest, CliRunner) have no descriptor
        yield
        return
    with _QUIET_LOCK:
        if _QUIET_STATE["depth"] == 0:
            sys.stdout.flush()
            _QUIET_STATE["saved"] = os.dup(fd)
            null = os.open(os.devnull, os.O_WRONLY)
            os.dup2(null, fd)
            os.close(null)
        _QUIET_STATE["depth"] += 1
    try:
        yield
    finally:
        with _QUIET_LOCK:
            _QUIET_STATE["depth"] -= 1
            if _QUIET_STATE["depth"] == 0:
                os.dup2(_QUIET_STATE["saved"], fd)
                os.close(_QUIET_STATE["saved"])
                _QUIET_STATE["saved"] = None


def solve(model: "pulp.LpProblem", U: dict, Y: dict, *, solver: str = "cbc", time_limit_s: float = 60.0) -> Solution:
    """Solve ``model`` (from optimizer.planning.milp.build_fleet_model) and read the solver's real termination status.

    Args:
        model, U, Y: as returned by build_model.
        solver: "cbc" (bundled with PuLP) or "highs" (needs highspy).
        time_limit_s: the solver's time limit in seconds.

    Returns: a :class:`Solution`; ``status`` is "optimal" only when the solver proved optimality.
    Raises: InputError for an unknown or missing solver.
    """
    rep = run_solver(model, solver=solver, time_limit_s=time_limit_s, gap_rel=0.0)
    if rep.status not in ("optimal", "time_limit"):
        return Solution(rep.status, None, {}, {}, rep.solver, rep.seconds, rep.message)
    units = {}
    for k, v in U.items():
        val = v.value()
        if val is not None and round(val) > 0:
            units[k] = int(round(val))
    hours = {}
    for k, v in Y.items():
        val = v.value()
        if val is not None and val > 1e-9:
            hours[k] = float(val)
    return Solution(rep.status, rep.objective if rep.objective is not None else 0.0, units, hours, rep.solver,
                    rep.seconds, rep.message)


def require_optimal(sol: Solution) -> Solution:
    """Return ``sol`` if it is proven optimal; raise SolverError otherwise (never assume)."""
    if sol.status != "optimal":
        raise SolverError(sol.status, f"solver {sol.solver} ended with status '{sol.status}', not a proven optimum")
    return sol


# ------------------------------------------------------------------------------- the solve both planners share
@dataclass
class SolveReport:
    """The solver's own account of a solve (never PuLP's status alone: it says "Optimal" for CBC runs stopped at
    their time limit).

    status: "optimal" (proven, within ``gap_rel``), "time_limit" (a feasible plan, optimality not proven),
        "infeasible", "not_solved"; objective, bound (best bound), gap (relative, 0..1) when known; seconds.
    """

    status: str
    objective: float | None = None
    bound: float | None = None
    gap: float | None = None
    seconds: float = 0.0
    solver: str = "cbc"
    message: str = ""


def parse_cbc_log(text: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for line in text.splitlines():
        s = line.strip()
        if s.startswith("Result - "):
            out["result"] = s[len("Result - "):]
        elif s.startswith("Objective value:"):
            out["objective"] = _f(s.split(":", 1)[1])
        elif s.startswith("Lower bound:"):
            out["bound"] = _f(s.split(":", 1)[1])
        elif s.startswith("Gap:"):
            out["gap"] = _f(s.split(":", 1)[1])
    return out


def _f(x: str) -> float | None:
    try:
        return float(x.strip().split()[0])
    except (ValueError, IndexError):
        return None


def resolve_solver(solver: str) -> str:
    """"auto" -> "cbc" (bundled with PuLP; after the scaled-dominance pruning it solved the benchmark plans 2-5x
    faster than HiGHS here: benchmarks/bench_fleet.py); other names pass through."""
    return "cbc" if solver == "auto" else solver


SOLVE_THREADS = __import__("threading").local()


def _cbc_threads() -> int | None:
    """Threads to give CBC: the thread's own setting (explanations: 1) or up to 4 cores. None for one thread: CBC
    run with ``-threads 1`` was measured to sit idle up to 10 s waiting for its worker thread and then stop "on time
    limit" (benchmarks/bench_fleet.py, 100 runs of a small model: 111 s with -threads 1, ~1 s without); without the
    option it runs single-threaded with no worker."""
    n = getattr(SOLVE_THREADS, "n", None) or max(1, min(os.cpu_count() or 1, 4))
    return n if n > 1 else None


#: Seconds PuLP spends per variable and per constraint writing the model for the solver and reading its solution
#: back (measured by benchmarks/bench_fleet.py: 6.6 s writing and 1.3 s reading over 7 models of 30,000-68,000
#: variables, i.e. ~2.5e-5 s per variable with the constraints alongside); taken off the solver's own limit so that
#: the whole call keeps to its share of the time.
IO_SECONDS_PER_VARIABLE = 2.5e-5
IO_SECONDS_PER_CONSTRAINT = 1.0e-5
#: Share of its limit the solver is given: CBC checks its clock between nodes and cut rounds and was measured to
#: overrun by up to 2-5 s on the largest models (1.3 s past a 0.9 share: 0.8).
SOLVER_SHARE = 0.8


#: CBC's command-line options. Its preprocessing (CglProbing on general integers) returns wrong "optimal" answers
#: in the CBC 2.10.3 that PuLP bundles: on a reservation of 2-instance units plus one capped spot unit it reported
#: $35,040 optimal where $26,280 is feasible (HiGHS and the enumeration find it). The bug and the workaround,
#: preprocessing off, are coin-or/Cbc issue #293 (fixed in later CBC releases, not in PuLP's binary).
CBC_OPTIONS = ["preprocess off"]


def solver_time_limit(model: "pulp.LpProblem", time_limit_s: float) -> float:
    """The time limit (s) to hand the solver so that writing the model, solving and reading the solution back
    together keep to ``time_limit_s``: ``SOLVER_SHARE x (time_limit_s - the I/O estimate)``, at least 0.2 s."""
    io = IO_SECONDS_PER_VARIABLE * len(model.variables()) + IO_SECONDS_PER_CONSTRAINT * len(model.constraints)
    return max(0.2, SOLVER_SHARE * (float(time_limit_s) - io))


def run_solver(model: "pulp.LpProblem", *, solver: str = "auto", time_limit_s: float = 60.0,
                gap_rel: float = 0.001, presolve: bool = True, cutoff: float | None = None) -> SolveReport:
    """Solve ``model`` and read the solver's real termination status, bound and gap.

    CBC runs with a wall-clock time limit (PuLP ``timeMode="elapsed"``, so a CPU-time limit cannot overrun the
    wall time) of :func:`solver_time_limit` and a relative gap tolerance; its log is parsed for "Result - ...", the objective, the lower bound
    and the gap. HiGHS (``--solver highs``) is read from its own info (mip_gap, mip_dual_bound).
    ``presolve=False`` turns the solver's presolve off — for the LP relaxations of the planning model, whose rows
    tying each block's committed use to the committed base (``share``) presolve handles badly: the one-region LP of
    720 hourly blocks (``benchmarks/bench_fleet.py --scenarios 1x720``, 5,500 columns) takes HiGHS 1.16 8.4 s with
    presolve and 0.14 s without (same optimum, same duals), CBC 3.3 s and 0.7 s.
    ``cutoff`` (minimization, objective units): only plans cheaper than it are searched for (CBC ``-cutoff``,
    HiGHS ``objective_bound``); when none exists the report is "infeasible" — the caller, which holds a plan of
    that cost, reads it as "nothing cheaper here". The placement search passes its incumbent, so a leaf that
    cannot beat it ends as soon as its bound reaches it.
    Raises InputError for an unknown or missing solver.
    """
    import os
    import tempfile

    import pulp

    t0 = time.perf_counter()
    solver = resolve_solver(solver)
    limit = solver_time_limit(model, time_limit_s)
    if solver == "cbc":
        fd, log = tempfile.mkstemp(prefix="gpuopt-cbc-", suffix=".log")
        os.close(fd)
        backend = pulp.PULP_CBC_CMD(msg=False, timeLimit=limit, gapRel=gap_rel, logPath=log, timeMode="elapsed",
                                    threads=_cbc_threads(),
                                    options=CBC_OPTIONS + ([] if presolve else ["presolve off"])
                                    + ([] if cutoff is None else [f"cutoff {cutoff:.10g}"]))
    elif solver == "highs":
        if "HiGHS" not in pulp.listSolvers(onlyAvailable=True):
            raise InputError("solver", "HiGHS is not installed (pip install highspy)", accepted=", ".join(SOLVERS))
        backend, log = pulp.HiGHS(msg=False, timeLimit=limit, gapRel=gap_rel,
                                  **({} if presolve else {"presolve": "off"}),
                                  **({} if cutoff is None else {"objective_bound": float(cutoff)})), None
    else:
        raise InputError("solver", f"unknown solver '{solver}'", accepted=", ".join(SOLVERS))
    from optimizer.planning import progress

    if log:
        progress.watch(progress.cbc_log_progress(log))
    try:
        with _quiet_stdout():
            model.solve(backend)
    except (pulp.PulpError, IndexError, ValueError, ArithmeticError) as exc:
        if solver == "cbc" and isinstance(exc, pulp.PulpSolverError) and \
                "HiGHS" in pulp.listSolvers(onlyAvailable=True):
            # the CBC binary died (it does on some infeasible models with preprocessing off: a spot cap of half a
            # unit, tests/test_exact.py): the same model by HiGHS, in the time left, rather than no answer
            left = max(0.5, time_limit_s - (time.perf_counter() - t0))
            rep = run_solver(model, solver="highs", time_limit_s=left, gap_rel=gap_rel, presolve=presolve)
            return dataclasses.replace(rep, seconds=time.perf_counter() - t0,
                                       message=f"CBC failed ({exc}); solved by HiGHS" + (f": {rep.message}"
                                                                                        if rep.message else ""))
        return SolveReport("not_solved", seconds=time.perf_counter() - t0, solver=solver, message=f"{type(exc).__name__}: {exc}")
    finally:
        progress.watch(None)
        info: dict[str, Any] = {}
        if log:
            try:
                with open(log, encoding="utf-8", errors="replace") as fh:
                    info = parse_cbc_log(fh.read())
            except OSError:
                pass
            try:
                os.unlink(log)
            except OSError:
                pass
    secs = time.perf_counter() - t0
    sol_status = getattr(model, "sol_status", None)
    if model.status == pulp.LpStatusInfeasible or sol_status == pulp.LpSolutionInfeasible:
        return SolveReport("infeasible", seconds=secs, solver=solver)
    obj = pulp.value(model.objective)
    if solver == "highs":
        try:
            hinfo = model.solverModel.getInfo()
            info["gap"] = float(hinfo.mip_gap) if hinfo.mip_gap < 1e30 else None
            info["bound"] = float(hinfo.mip_dual_bound)
        except Exception:  # an LP has no MIP info
            pass
    result = str(info.get("result", ""))
    if sol_status == pulp.LpSolutionOptimal and model.status == pulp.LpStatusOptimal and "Stopped" not in result:
        status = "optimal"
    elif sol_status in (pulp.LpSolutionIntegerFeasible, pulp.LpSolutionOptimal) and obj is not None:
        status = "time_limit"
    else:
        return SolveReport("not_solved", seconds=secs, solver=solver, message=result)
    gap = info.get("gap")
    if gap is None and info.get("bound") is not None and obj:
        gap = abs(float(obj) - info["bound"]) / max(abs(float(obj)), 1e-9)
    return SolveReport(status, objective=None if obj is None else float(obj), bound=info.get("bound"),
                       gap=gap if status == "time_limit" else (gap or 0.0), seconds=secs, solver=solver,
                       message=result)
