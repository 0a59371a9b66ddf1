"""Solve the planning MILP and check what the solver really says.

PuLP's ``LpProblem.status`` says "Optimal" for CBC runs that stopped at their time limit with a feasible
integer solution (DESIGN.md, "Beware"); the solution status ``LpProblem.sol_status`` keeps them apart
(``LpSolutionOptimal`` vs ``LpSolutionIntegerFeasible``), so that is what is read here.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from gpuopt.errors import InputError, SolverError

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


def _solver(name: str, time_limit_s: float):
    import pulp

    if name == "cbc":
        return pulp.PULP_CBC_CMD(msg=False, timeLimit=time_limit_s)
    if name == "highs":
        if "HiGHS" not in pulp.listSolvers(onlyAvailable=True):
            raise InputError("solver", "HiGHS is not installed (pip install highspy)", accepted=", ".join(SOLVERS))
        return pulp.HiGHS(msg=False, timeLimit=time_limit_s)
    raise InputError("solver", f"unknown solver '{name}'", accepted=", ".join(SOLVERS))


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
    """Solve ``model`` (from optimizer.model.build_model) and read the solver's real termination status.

    Args:
        model, U, Y: as returned by build_model.
        solver: "cbc" (bundled with PuLP) or "highs" (needs highspy).
        time_limit_s: the solver's time limit in seconds.

    Returns: a :class:`Solution`; ``status`` is "optimal" only when the solver proved optimality.
    Raises: InputError for an unknown or missing solver.
    """
    import pulp

    t0 = time.perf_counter()
    backend = _solver(solver, time_limit_s)
    try:
        with _quiet_stdout():
            model.solve(backend)
    except Exception as exc:  # a solver that crashes on a degenerate model is a result, not a traceback
        import pulp

        if isinstance(exc, (pulp.PulpError, IndexError, ValueError, ArithmeticError)):
            return Solution("not_solved", None, {}, {}, solver, time.perf_counter() - t0, f"{type(exc).__name__}: {exc}")
        raise
    secs = time.perf_counter() - t0
    sol_status = getattr(model, "sol_status", None)
    if model.status == pulp.LpStatusInfeasible or sol_status == pulp.LpSolutionInfeasible:
        return Solution("infeasible", None, {}, {}, solver, secs)
    if model.status == pulp.LpStatusUnbounded or sol_status == pulp.LpSolutionUnbounded:
        return Solution("unbounded", None, {}, {}, solver, secs)
    if sol_status == pulp.LpSolutionOptimal and model.status == pulp.LpStatusOptimal:
        status = "optimal"
    elif sol_status == pulp.LpSolutionIntegerFeasible:
        status = "time_limit"
    else:
        return Solution("not_solved", None, {}, {}, solver, secs)
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
    obj = pulp.value(model.objective)
    return Solution(status, float(obj) if obj is not None else 0.0, units, hours, solver, secs)


def require_optimal(sol: Solution) -> Solution:
    """Return ``sol`` if it is proven optimal; raise SolverError otherwise (never assume)."""
    if sol.status != "optimal":
        raise SolverError(sol.status, f"solver {sol.solver} ended with status '{sol.status}', not a proven optimum")
    return sol
