"""The plan's horizon: months, the periods they fall into, and the commitment terms that cover them.

A plan covers ``H`` whole months (the *horizon*, ``--horizon``; :data:`DEFAULT_HORIZON_MONTHS` when plans have a
serving workload, else the months the training jobs span). Month ``m`` (0-based here, "month m+1" in outputs) covers
hours ``[730 m, 730 (m+1))`` from the plan's start (HOURS_PER_MONTH = 730 h, the clouds' billing month).

* A serving workload runs in the months ``[start, end)`` (default the whole horizon); every month it runs repeats the
  same typical month of demand blocks (its demand profile).
* A training job is one-off: it starts at the beginning of month ``start`` and must finish within ``deadline_hours``
  of it; its window is ``[730 start, 730 start + deadline_hours)``.
* A commitment of term ``T`` months (12 or 36) bought at month ``s`` covers months ``[s, s + T)``. It may be bought
  at the start of the horizon, at the start of any workload, and renewed at the end of each term (``s + k T``).

:func:`periods` cuts the horizon at every month where something changes — a workload starts or ends, a training
job's deadline falls, a commitment may start or end — so that within a period every month is the same: the same
serving workloads run, every training job is either wholly inside its window, wholly outside, or (a one-month period)
ends inside it at ``splits`` hours from the month's start. The planning model then needs one typical month of blocks
per period, weighted by its number of months.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterable

from gpuopt.kernel.errors import InputError
from gpuopt.kernel.records import HOURS_PER_MONTH

#: The horizon a plan with a serving workload covers when none is given: one year, the budget cycle FinOps reviews
#: plans on and the shortest commitment term, so a 1-year commitment is paid in full inside it and a 3-year one is
#: charged its whole term (less ``leftover_value`` of the two years past the horizon).
DEFAULT_HORIZON_MONTHS = 12

#: Longest horizon gpuopt plans (10 years).
MAX_HORIZON_MONTHS = 120

#: Term of each commitment pricing model, in months.
TERM_MONTHS = {"reserved_1y": 12, "reserved_3y": 36}


@dataclass(frozen=True)
class Activity:
    """When one workload runs. Serving: months ``[start_month, end_month)``; training: from the start of
    ``start_month`` for ``deadline_hours`` (its window)."""

    name: str
    training: bool
    start_month: int = 0
    end_month: int | None = None          # serving: exclusive; None = the horizon's end
    deadline_hours: float | None = None   # training: hours from its start (None: 730)

    def window_hours(self) -> tuple[float, float]:
        """Training: [start, end) in hours from the plan's start."""
        start = self.start_month * HOURS_PER_MONTH
        return start, start + float(self.deadline_hours or HOURS_PER_MONTH)


@dataclass(frozen=True)
class Period:
    """Months ``[start_month, start_month + months)`` that are all alike.

    ``serving``: the serving workloads that run in them; ``training``: training job -> "full" (the whole period
    inside its window) or "partial" (a one-month period in which the deadline falls, ``splits[job]`` hours after the
    month's start); jobs outside their window are absent."""

    index: int
    start_month: int
    months: int
    serving: tuple[str, ...]
    training: dict[str, str]
    splits: dict[str, float]

    @property
    def end_month(self) -> int:
        return self.start_month + self.months


def horizon_for(activities: Iterable[Activity], horizon_months: int | None) -> tuple[int, str]:
    """The horizon in months and how it was chosen (a sentence for every output's first lines).

    Given: checked to cover every workload (InputError ``horizon_months`` otherwise). Not given:
    :data:`DEFAULT_HORIZON_MONTHS` when a serving workload is planned (or longer when a training job or a serving
    window reaches further), else the months the training jobs span (one-off work: nothing is planned after them).
    """
    acts = list(activities)
    need = 1
    for a in acts:
        if a.training:
            need = max(need, math.ceil(a.window_hours()[1] / HOURS_PER_MONTH - 1e-9))
        else:
            need = max(need, a.start_month + 1, a.end_month or 0)
    if horizon_months is not None:
        h = int(horizon_months)
        if h < 1 or h > MAX_HORIZON_MONTHS:
            raise InputError("horizon_months", f"must be between 1 and {MAX_HORIZON_MONTHS} months, got {horizon_months!r}")
        if need > h:
            late = max(acts, key=lambda a: math.ceil(a.window_hours()[1] / HOURS_PER_MONTH - 1e-9) if a.training
                       else (a.end_month or a.start_month + 1))
            raise InputError("horizon_months", f"{h} months do not cover workload {late.name!r}, which runs into month "
                             f"{need}: give a horizon of at least {need} months")
        return h, f"horizon {h} month{'s' if h != 1 else ''} (given)"
    if any(not a.training for a in acts):
        h = max(DEFAULT_HORIZON_MONTHS, need)
        why = ("the default for plans with a serving workload: one budget year" if h == DEFAULT_HORIZON_MONTHS
               else "the default year, extended to cover every workload")
        return h, f"horizon {h} months ({why}; --horizon to change)"
    return need, (f"horizon {need} month{'s' if need != 1 else ''} (the training jobs' span: one-off work, "
                  "nothing planned after it; --horizon to change)")


def slot_starts(activities: Iterable[Activity], horizon: int, term_months: int) -> list[int]:
    """Months at which a commitment of ``term_months`` may be bought: the horizon's start and every workload's
    start, and each of them renewed every term, within the horizon."""
    base = {0} | {a.start_month for a in activities if 0 <= a.start_month < horizon}
    out = set()
    for s in base:
        m = s
        while m < horizon:
            out.add(m)
            m += term_months
    return sorted(out)


def periods(activities: Iterable[Activity], horizon: int, terms: Iterable[int] = (12, 36),
            cuts_at: Iterable[int] = ()) -> list[Period]:
    """Cut the horizon into periods of alike months (module docstring).

    Args: activities: every workload's; horizon: months; terms: commitment terms in months that may be bought;
        cuts_at: more months to cut at (where an owned commitment's term ends, issue 26).
    Returns: the periods in time order, covering [0, horizon) without gaps.
    """
    acts = list(activities)
    cuts = {0, horizon} | {int(c) for c in cuts_at}
    for a in acts:
        if a.training:
            s, e = a.window_hours()
            cuts |= {a.start_month, math.floor(e / HOURS_PER_MONTH + 1e-9), math.ceil(e / HOURS_PER_MONTH - 1e-9)}
        else:
            cuts |= {a.start_month, a.end_month if a.end_month is not None else horizon}
    for t in terms:
        for s in slot_starts(acts, horizon, t):
            cuts |= {s, s + t}
    edges = sorted(c for c in cuts if 0 <= c <= horizon)
    out: list[Period] = []
    for a0, b0 in zip(edges, edges[1:]):
        serving = tuple(sorted(a.name for a in acts if not a.training and a.start_month <= a0
                               and b0 <= (a.end_month if a.end_month is not None else horizon)))
        training: dict[str, str] = {}
        splits: dict[str, float] = {}
        for a in acts:
            if not a.training:
                continue
            s, e = a.window_hours()
            lo, hi = a0 * HOURS_PER_MONTH, b0 * HOURS_PER_MONTH
            if hi <= s + 1e-9 or lo >= e - 1e-9:
                continue
            if e >= hi - 1e-9:
                training[a.name] = "full"
            else:  # the deadline falls inside this (one-month) period
                training[a.name] = "partial"
                splits[a.name] = e - lo
        out.append(Period(len(out), a0, b0 - a0, serving, training, splits))
    return out


def month_label(start: "object", month: int) -> str:
    """"YYYY-MM" of month ``month`` (0-based) of a plan starting on date ``start`` (a date on a month's first day)."""
    y, m = start.year, start.month + month  # type: ignore[attr-defined]
    y += (m - 1) // 12
    m = (m - 1) % 12 + 1
    return f"{y:04d}-{m:02d}"


def commitment_cost_factor(start_month: int, term_months: int, horizon: int, leftover_value: float) -> float:
    """Months of a commitment's price the plan counts: the whole term, less ``leftover_value`` (0..1) of the months
    that outlive the horizon. Multiply by the effective monthly rate (usd_per_hour x 730) for USD."""
    outlive = max(0, start_month + term_months - horizon)
    return term_months - leftover_value * outlive
