"""The planning model (DESIGN.md "The planning model"): any set of workloads over a horizon of months, demand in blocks,
a committed base shared by the workloads, on-demand and capped spot capacity, placement, budgets; minimum cost or
maximum ROI. A single-workload ``recommend`` is a plan of one workload.

The stages, a file (or two) each; every import goes down this list, never up, and no file takes another's private
names::

    request resolution   horizon.py        months, periods of alike months, commitment terms and their slots
                         demand.py         demand profiles and the load-duration merge of their blocks
    candidates           candidates.py     which offers can host a replica of a workload, and how (units, shapes)
                         problem.py        the shared records (FleetWorkload, FleetBlock, Budgets, FleetProblem) and
                                           helpers on offers (purchase kinds, commitment parts, groups)
                         prune.py          safe dominance pruning
    model building       milp.py           build_fleet_model: the MILP, written in its module docstring
    solving              solver.py         CBC / HiGHS runs: status, gap, wall time (run_solver, SolveReport)
                         solution.py       FleetSolution and what is read from it: cost, value, money, spot used
                         exact.py          exact plans by enumeration, for workloads that share nothing
                         shared.py         exact plans for workloads that share committed offers
                         problem_build.py  make_problem: periods, blocks, candidates, prefilter, group bounds, pruning
                         solve.py          solve_cost (enumeration, MILP, placement branch and bound), solve_roi,
                                           verify, trim_allocations
    explanation          answer.py         the plan's lines, money, workload summaries and notes (FleetResult)
                         explain.py        rules, strategies, alternatives, binding constraints, what-ifs, why nothing fits
    orchestration        plan.py           plan_fleet / plan_workload: make_problem -> solve -> verify -> answer -> explain

(``problem_build`` comes after the enumerations because it bounds placement groups by their exact plans.)

This package re-exports the entry points. Nothing heavy is imported here: pulp, pandas and numpy are imported inside
the functions that use them. Modules inside the package import each other by their own paths
(``optimizer.planning.problem``), never through this package.
"""

from __future__ import annotations

from optimizer.planning.answer import FleetLine, FleetResult, fleet_lines
from optimizer.planning.milp import build_fleet_model
from optimizer.planning.plan import plan_fleet, plan_workload
from optimizer.planning.problem import DEFAULT_SPOT_CAPACITY, Budgets, FleetBlock, FleetProblem, FleetWorkload
from optimizer.planning.problem_build import make_problem
from optimizer.planning.solution import FleetSolution
from optimizer.planning.solve import solve_cost, solve_roi

__all__ = [
    "DEFAULT_SPOT_CAPACITY",
    "Budgets",
    "FleetBlock",
    "FleetLine",
    "FleetProblem",
    "FleetResult",
    "FleetSolution",
    "FleetWorkload",
    "build_fleet_model",
    "fleet_lines",
    "make_problem",
    "plan_fleet",
    "plan_workload",
    "solve_cost",
    "solve_roi",
]
