"""Size guards of the planner (issue 33 point 2): the planning model's memory estimated from its counts before it is
built, and refused with the figure when it would exceed a stated share of this machine's memory; the offer rows and
candidates a plan may make, bounded before they are made.

Why: a breaker's 2,000 workloads ended in a MemoryError at 7.1 GiB, after minutes, with a traceback. A count of
the model's variables is cheap once the candidates are known (``optimizer.planning.problem_build.make_problem``), and
PuLP's memory is close to linear in them: :data:`BYTES_PER_VARIABLE` and :data:`BYTES_FIXED` are the least-squares
fit printed by ``python benchmarks/bench_model_memory.py`` (peak Python allocation of
``optimizer.planning.milp.build_fleet_model`` under tracemalloc on 4 synthetic sizes, 1x20x24 to 4x30x730
workloads x candidates x blocks, 510 to 87,780 variables: 1.2, 8.8, 123.5 and 212.4 MiB; fit 2,518 bytes per
variable, 311 per nonzero). The solver runs in its own process on a file PuLP writes; its memory is not in the fit, which is one
reason the share is half of the memory, not all of it.

Counts (``optimizer.planning.milp``): a variable per (workload, candidate, block the workload is in: A for
committed, X for hourly rows) plus one per commitment slot (N) and savings-plan slot (SP); each of the first kind
sits in about :data:`NONZEROS_PER_VARIABLE` rows (demand, replicas floor, instances floor, shared committed units).
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from typing import Any

from gpuopt.kernel.errors import InputError
from gpuopt.kernel.size_limits import MAX_CANDIDATES, MAX_OFFER_ROWS

#: Peak bytes of the PuLP model per variable (benchmarks/bench_model_memory.py's fit; see the module docstring).
BYTES_PER_VARIABLE = 2_520
#: Bytes the model takes whatever its size (the same fit's intercept is -1.6 MB, within the noise: 2 MiB is kept as a
#: floor so that a tiny model is never estimated at nothing).
BYTES_FIXED = 2 * 2**20
#: Rows a (workload, candidate, block) variable appears in, about (the benchmark prints the counted nonzeros).
NONZEROS_PER_VARIABLE = 8
#: The share of this machine's memory a model may take before the plan is refused (the rest: the candidates and
#: offers already in memory, the solver's own process, the operating system).
MAX_RAM_SHARE = 0.5


@dataclass(frozen=True)
class ModelSize:
    """Counts of a planning model before it is built: ``workloads``, ``candidates`` (summed over workloads),
    ``blocks`` (distinct demand blocks), ``variables`` and ``nonzeros`` (estimated, module docstring)."""

    workloads: int
    candidates: int
    blocks: int
    variables: int
    nonzeros: int

    def describe(self) -> str:
        """``12,345 variables (3 workloads, 1,200 candidates, 24 demand blocks)``."""
        from gpuopt.kernel.words import plural

        return (f"{plural(self.variables, 'variable', ',')} ({plural(self.workloads, 'workload', ',')}, "
                f"{plural(self.candidates, 'candidate', ',')}, {plural(self.blocks, 'demand block', ',')})")


def count_model(problem: Any) -> ModelSize:
    """The counts of the model ``optimizer.planning.milp.build_fleet_model`` would build for ``problem`` (a
    FleetProblem): per workload its candidates x the blocks it is in (a serving workload: the blocks whose demand
    names it; a training job: every block, an upper bound), plus the commitment and savings-plan slots."""
    blocks = list(problem.blocks or [])
    per_block: dict[str, int] = {}
    for b in blocks:
        for name in b.demand:
            per_block[name] = per_block.get(name, 0) + 1
    n_cands = 0
    variables = 0
    for w in problem.workloads:
        cs = len(problem.cands.get(w.name, ()))
        n_cands += cs
        nb = len(blocks) if getattr(w, "training", False) else per_block.get(w.name, 0)
        variables += cs * nb
    slots = len(getattr(problem, "slots", {}) or {}) + len(getattr(problem, "plan_slots", {}) or {})
    return ModelSize(workloads=len(problem.workloads), candidates=n_cands, blocks=len(blocks),
                     variables=variables + slots, nonzeros=NONZEROS_PER_VARIABLE * variables + slots)


def estimate_bytes(size: ModelSize) -> float:
    """Estimated peak bytes of building the model of ``size`` (:data:`BYTES_FIXED` + :data:`BYTES_PER_VARIABLE`
    per variable)."""
    return float(BYTES_FIXED + BYTES_PER_VARIABLE * size.variables)


def ram_bytes() -> int | None:
    """The memory this process may use, in bytes: the least of the machine's physical memory
    (``os.sysconf("SC_PHYS_PAGES")`` x page size), the cgroup's limit (``/sys/fs/cgroup/memory.max``, cgroup v2) and
    the address-space limit (``ulimit -v``, RLIMIT_AS); None when none can be read."""
    found: list[int] = []
    try:
        found.append(int(os.sysconf("SC_PHYS_PAGES")) * int(os.sysconf("SC_PAGE_SIZE")))
    except (AttributeError, ValueError, OSError):
        pass
    try:
        with open("/sys/fs/cgroup/memory.max", encoding="ascii") as f:
            text = f.read().strip()
        if text.isdigit():
            found.append(int(text))
    except OSError:
        pass
    try:
        import resource

        soft, _hard = resource.getrlimit(resource.RLIMIT_AS)
        if soft not in (resource.RLIM_INFINITY, -1) and soft > 0:
            found.append(int(soft))
    except (ImportError, ValueError, OSError):
        pass
    found = [x for x in found if x > 0]
    return min(found) if found else None


def gib(n: float) -> str:
    """Bytes for a message: ``7.1 GiB``, ``315 GiB``; under 1 GiB in MiB (``8 MiB``)."""
    g = n / 2**30
    if g < 1:
        return f"{n / 2**20:,.0f} MiB"
    return f"{g:.1f} GiB" if g < 100 else f"{g:,.0f} GiB"


class ModelTooLarge(InputError):
    """A model past :func:`check_model_size`'s share of memory: an InputError("workloads") the solvers catch where
    they hold a plan already (optimizer.planning.solve.solve_cost: that plan, its gap stated), else the one-line
    refusal."""


def check_model_size(size: ModelSize, *, ram: int | None = None, share: float = MAX_RAM_SHARE) -> float:
    """Refuse a model that would not fit: returns the estimated bytes (:func:`estimate_bytes`) when they are at most
    ``share`` of ``ram`` (default :func:`ram_bytes`; nothing is refused when it cannot be read).

    Raises ModelTooLarge (an InputError("workloads")), "the planning model would need ~X GiB, above 50 % of this machine's Y GiB ...")
    naming the counts and the ways out."""
    need = estimate_bytes(size)
    ram = ram_bytes() if ram is None else ram
    if ram is not None and need > share * ram:
        raise ModelTooLarge("workloads", f"the planning model would need ~{gib(need)} ({size.describe()}), above "
                         f"{share:.0%} of this machine's {gib(ram)} of memory; plan fewer workloads at once (split "
                         f"the file by team or region), narrow the offers (--providers, --regions, --gpus) or bin "
                         f"the demand coarser (--blocks 24)")
    return need


# ---------------------------------------------------------------------------------------- inputs before the model
def check_offer_rows(n_rows: int) -> None:
    """Refuse more than gpuopt.kernel.size_limits.MAX_OFFER_ROWS offer rows (after the plan's filters). Raises InputError("offers",
    ...) with the count, the limit and the way out."""
    if n_rows > MAX_OFFER_ROWS:
        raise InputError("offers", f"{n_rows:,} offer rows is above the limit of {MAX_OFFER_ROWS:,} per plan (each row "
                         f"is sized for every workload; the shipped snapshot has 7,160); narrow them with "
                         f"--providers, --regions or --gpus, or split the --catalog file")


def check_candidates(n_candidates: int, n_workloads: int) -> None:
    """Refuse more than gpuopt.kernel.size_limits.MAX_CANDIDATES candidates (offer rows a workload fits, summed over the
    workloads, before pruning). Raises InputError("workloads", ...)."""
    if n_candidates > MAX_CANDIDATES:
        per = n_candidates / max(1, n_workloads)
        raise InputError("workloads", f"{n_workloads:,} workloads x ~{per:,.0f} fitting offers each make "
                         f"{n_candidates:,} candidates, above the limit of {MAX_CANDIDATES:,} per plan (500 "
                         f"workloads of ~4,000 each plan at ~1 GB; a breaker's 2,000 reached 7.1 GiB); split the plan by "
                         f"team or region, or narrow the offers (--providers, --regions, --gpus)")


def fits(size: ModelSize, ram: int, share: float = MAX_RAM_SHARE) -> bool:
    """Whether a model of ``size`` fits ``share`` of ``ram`` bytes (no error)."""
    return math.isfinite(estimate_bytes(size)) and estimate_bytes(size) <= share * ram
