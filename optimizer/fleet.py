"""The planning model: any set of workloads over a horizon of months, demand in blocks, a committed base shared by
the workloads, on-demand and capped spot capacity per block, placement, budgets; minimum cost or maximum ROI
(DESIGN.md "The planning model"). A single-workload ``recommend`` is a plan of one workload.

Build, solve and explain are separate (:func:`build_fleet_model`, :func:`solve_cost` / :func:`solve_roi`,
:func:`fleet_lines` and ``optimizer.fleet_explain``); :func:`plan_fleet` runs them with pruning and explanations.

The model
=========

Sets
    w in W: workloads: serving (in the months they run) or training-like (train / finetune / lora: one-off, their work
    before a deadline). p in P: periods of alike months of the horizon (optimizer.horizon: within a period the same
    serving workloads run and each training job is wholly in, out, or ends in it), n_p months each. b in B_p: the
    blocks of a typical month of period p (merged blocks of the demand profiles, split at deadlines), h_b hours each.
    o in O_c: committed offers (reserved 1y/3y) with term T_o months; s in S_o: the months a commitment of o may be
    bought (horizon start, workload starts, renewals every T_o); o in O_h: hourly offers (on-demand, spot).
    C_w: the offers that can host a replica of w (sizing), each a unit of k_wo instances holding r_wo replicas and
    giving th_wo (tokens/s serving; FLOP/s training; spot reduced by the interruption overhead). g in G: placement
    groups (one provider region, or one provider); z: zones (spot offers carry one).

Variables
    N_os  in Z+     instances of committed offer o bought at month s, covering months [s, s + T_o)
    A_wob >= 0      units of w on the committed instances of o in block b (of its period)
    X_wob >= 0      units of w on hourly offer o running through block b, in each month of its period
    (integer for serving workloads; continuous for training-like ones, whose work can be time-sliced)
    y_wg in {0,1}   serving workload w placed in group g (placement region|provider; not for "any")
    u_wzb in [0,1]  zone z holds an instance of w in block b (``spread: zones`` only; integral at the optimum since
                    instance counts are)
    S_wb  >= 0      served demand (ROI only; otherwise S_wb = d_wb);  Z_w in {0,1} job completed (ROI only)

Constraints
    sharing:        sum_w k_wo A_wob <= sum_{s in S_o: s <= p, p + n_p <= s + T_o} N_os        every o, b (in p)
    spot capacity:  sum_{w, o in q} k_wo X_wob <= cap          q = one spot instance type in one region (all zones)
    serving:        sum_o th_wo (A_wob + X_wob) >= S_wb,  S_wb = d_wb (cost) or S_wb <= d_wb (ROI)
    redundancy:     sum_o r_wo (A + X) >= m_w  and  sum_o k_wo (A + X) >= m_w  (replicas on at least m_w
                    instances); both without spot unless spot_only_ok;  spread: sum_z u_wzb + regional instances >= m_w
    placement:      sum_g y_wg = 1;  A_wob, X_wob <= M_wo y_wg(o)   (M_wo: the most units of o w could need)
    training:       sum_{p,b} n_p sum_o th_wo 3600 h_wb (A_wob + X_wob) >= W_w Z_w, h_wb = hours of b inside w's window
    quotas:         instances of one instance type in one region <= max_instances, every block
    budgets:        cash in the first month of every period <= budget (monthly spend: hourly + recurring of the
                    commitments that cover it + upfronts bought that month);  cost <= budget_total;
                    sum upfront N <= max_upfront;  sum commitment N <= max_commitment

Costs (USD over the horizon of H months)
    commitment:   c_os = rate_o x 730 x (T_o - lv x max(0, s + T_o - H))  (everything paid over the term, less the
                  leftover value lv in [0, 1] of the months that outlive the horizon; rate = recurring + upfront / term)
    hourly:       price_o x k_wo x h_b x n_p per unit of X_wob
    cost  = sum c_os N_os + sum hourly
    value = sum_{serving} v_w 3600 h_b n_p S_wb / 1e6 + sum_{training} V_w Z_w
    minimize cost; or maximize ROI = value / cost - 1 exactly by Dinkelbach iterations: lambda_0 = 0; solve
    max value - lambda cost; lambda <- value / cost; stop when the optimum is ~0.

A training job planned with others is charged exactly as alone, and a one-month horizon never buys a 1- or 3-year
term unless its whole price is below a month of on-demand (leftover value 0).
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import math
import time
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from gpuopt.kernel.errors import InputError
from gpuopt.kernel.records import HOURS_PER_MONTH, PRICING_MODELS, SAVINGS_PLAN_TERM_HOURS, WINDOW_MAX_DAYS, is_estimated
from optimizer.horizon import TERM_MONTHS, Activity, Period, commitment_cost_factor, month_label, slot_starts
from optimizer.model import COMMITTED, DEFAULT_PRICING, Candidate, UnitTable, candidates_for, text_values, unit_table

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd
    import pulp

    from optimizer.sizing import Workload

TRAINING_TASKS = frozenset({"train", "finetune", "lora"})

#: Instances of one spot instance type in one region (all its zones together) a plan may count on in a block:
#: spot capacity is never guaranteed, and a fleet of 60 spot nodes of one type is not there to be bought
#: (a stated planning default, overridable with --spot-capacity).
DEFAULT_SPOT_CAPACITY = 16

#: Seconds per MILP variable to build the model (PuLP), write it for the solver and read the solution back:
#: measured by benchmarks/bench_fleet.py (3x720: 15.5 s over 7 models of 315,000 variables in all, ~4.9e-5 s),
#: rounded up; the placement search starts no node that could not end before its time limit.
MODEL_SECONDS_PER_VARIABLE = 6e-5

#: Seconds a solver process takes to start and answer, however small the model.
SOLVER_START_SECONDS = 0.3


def model_seconds(blocks: int, cands: "dict[str, list[Candidate]]") -> float:
    """The least a MILP/LP solve of these candidates over ``blocks`` blocks can take, seconds: building the model,
    writing it and reading the solution back (MODEL_SECONDS_PER_VARIABLE per variable, about one per candidate and
    block) and the solver's start. The placement search and the explanations start no solve that could not end in
    the time left."""
    return MODEL_SECONDS_PER_VARIABLE * blocks * sum(len(cs) for cs in cands.values()) + SOLVER_START_SECONDS


PLACEMENTS = ("region", "provider", "any")
SPREADS = ("", "zones")

#: Purchases the plan sizes itself (not one instance-term at a time): AWS EC2 Capacity Blocks for ML, paid whole
#: for a window, and savings plans, a spend per hour committed for a term.
CAPACITY_BLOCK = "capacity_block"
SAVINGS_PLANS = frozenset(SAVINGS_PLAN_TERM_HOURS)
PURCHASED = frozenset({CAPACITY_BLOCK}) | SAVINGS_PLANS
#: AWS EC2 User Guide, "Capacity Blocks for ML": 1 to 64 instances per block; 1-14 days in 1-day steps, then up to
#: 182 days in 7-day steps.
CAPACITY_BLOCK_MAX_INSTANCES = 64
CAPACITY_BLOCK_MAX_DAYS = WINDOW_MAX_DAYS[CAPACITY_BLOCK]
CAPACITY_BLOCK_DAYS: tuple[int, ...] = tuple(range(1, 15)) + tuple(range(21, CAPACITY_BLOCK_MAX_DAYS + 1, 7))
#: Months of a savings plan's term.
SAVINGS_PLAN_TERM_MONTHS = {k: int(round(v / HOURS_PER_MONTH)) for k, v in SAVINGS_PLAN_TERM_HOURS.items()}
#: Share of a savings plan's commitment paid upfront, by payment option: AWS Savings Plans User Guide, "Payment
#: options" (All Upfront: the whole commitment; Partial Upfront: at least half upfront, the rest monthly — planned
#: as half; No Upfront: monthly). Azure's savings plan is paid monthly or upfront the same way.
SAVINGS_PLAN_UPFRONT_SHARE = {"all_upfront": 1.0, "partial_upfront": 0.5, "no_upfront": 0.0, "": 0.0}


#: Hourly pricing without a capacity cap: on-demand, and Flex-start (training jobs only).
HOURLY_UNCAPPED = frozenset({"on_demand", "flex_start"})


def purchase_kind(offer: dict[str, Any]) -> str | None:
    """"capacity_block", "savings_plan" or None (an instance-term commitment or an hourly offer)."""
    pr = offer.get("pricing")
    return CAPACITY_BLOCK if pr == CAPACITY_BLOCK else "savings_plan" if pr in SAVINGS_PLANS else None


def capacity_block_days(hours: float) -> int:
    """The shortest capacity block (days, :data:`CAPACITY_BLOCK_DAYS`) that lasts ``hours``; raises ValueError past
    182 days."""
    need = hours / 24.0
    for d in CAPACITY_BLOCK_DAYS:
        if d >= need - 1e-9:
            return d
    raise ValueError(f"a capacity block lasts at most {CAPACITY_BLOCK_MAX_DAYS} days, not {need:.1f}")


def _block_days_of(months: int) -> int | None:
    try:
        return capacity_block_days(months * HOURS_PER_MONTH)
    except ValueError:
        return None


def capacity_block_split(unit_days: int, units: int) -> list[tuple[int, int]]:
    """Capacity blocks AWS sells that give exactly ``unit_days`` on ``units`` units run at once: [(units, days),
    ...]. Each unit runs ``t = unit_days // units`` days as blocks back to back (182-day blocks, then the longest
    duration sold, :data:`CAPACITY_BLOCK_DAYS`, then q < 7 more days), and ``r = unit_days % units`` of them one day
    more. Raises ValueError when ``units`` < 1 or ``unit_days`` < ``units`` (each unit is bought for a day at
    least)."""
    if unit_days <= 0:
        return []
    if units < 1 or unit_days < units:
        raise ValueError(f"{unit_days} unit-days cannot be bought as {units} units of one day or more")
    t, r = divmod(int(unit_days), int(units))
    out: list[tuple[int, int]] = []
    left = t
    while left >= CAPACITY_BLOCK_MAX_DAYS:
        out.append((units, CAPACITY_BLOCK_MAX_DAYS))
        left -= CAPACITY_BLOCK_MAX_DAYS
    if left:
        d = max(x for x in CAPACITY_BLOCK_DAYS if x <= left)
        out.append((units, d))
        if left - d:
            out.append((units, left - d))
    if r:
        out.append((r, 1))
    return out


def savings_plan_scope(offer: dict[str, Any]) -> str:
    """What one savings-plan commitment covers, as a key: ``provider|pricing|payment|class|region|family``. AWS
    Compute Savings Plans and the Azure savings plan cover every region and family (``*``); an AWS EC2 Instance
    Savings Plan one instance family (the type's prefix, ``p5`` of ``p5.48xlarge``) in one region (AWS Savings Plans
    User Guide, "Savings Plans types")."""
    cls = str(offer.get("offering_class") or "")
    cls = "" if cls in ("nan", "<NA>", "None") else cls
    if cls == "ec2_instance":
        region, family = str(offer["region"]), str(offer["instance_type"]).split(".")[0]
    else:
        region = family = "*"
    pay = str(offer.get("payment") or "")
    pay = "" if pay in ("nan", "<NA>", "None") else pay
    return "|".join((str(offer["provider"]), str(offer["pricing"]), pay, cls, region, family))


@dataclass
class FleetBlock:
    """A block of a typical month of period ``period``: ``start_hour`` from the month start, ``hours`` long,
    ``demand`` per serving workload running in it (tokens/s). ``label`` names it (e.g. "hour 9" or "Mon 09:00 +3
    merged"); ``end_hour``: a block spread over a stretch [start_hour, end_hour) (a repeating hour of a daily or
    weekly profile) has its hours spread evenly over the stretch. ``slots``: the blocks of the demand grid merged
    into this one (optimizer.demand.MergedBlock.members: hours of the day or week, or stretches of a calendar
    month), ``slot_labels`` their labels and ``grid_hours`` the grid's cycle (24, 168, 730 for a calendar month,
    None for a flat demand): for charts in time order (reports); the model does not read them."""

    start_hour: float
    hours: float
    demand: dict[str, float]
    label: str = ""
    end_hour: float | None = None
    period: int = 0
    slots: tuple[int, ...] = ()
    slot_labels: tuple[str, ...] = ()
    grid_hours: int | None = None


@dataclass
class FleetWorkload:
    """One workload of the plan: its sizing input and its planning terms.

    Attributes: name; workload (optimizer.sizing.Workload); allow_spot; min_replicas (serving: replicas always up,
    on at least as many instances); spot_only_ok; deadline_hours (training: hours from its start);
    value_per_million_tokens (serving, USD); value_usd (training, USD for the finished job); divisible (demand met by
    fractions of units: a review's instance-hours); start_month (0-based month it starts); end_month (serving:
    exclusive month it stops; None: the horizon's end).
    """

    name: str
    workload: "Workload"
    allow_spot: bool = False
    min_replicas: int = 0
    spot_only_ok: bool = False
    deadline_hours: float | None = None
    value_per_million_tokens: float | None = None
    value_usd: float | None = None
    divisible: bool = False
    start_month: int = 0
    end_month: int | None = None

    @property
    def training(self) -> bool:
        return self.workload.task in TRAINING_TASKS

    def activity(self) -> Activity:
        return Activity(self.name, self.training, self.start_month, self.end_month, self.deadline_hours)


@dataclass(frozen=True)
class Slot:
    """A commitment that can be bought: offer ``okey`` (``offer``) for ``term_months`` from ``start_month``."""

    key: str
    okey: str
    offer: dict[str, Any]
    start_month: int
    term_months: int

    @property
    def end_month(self) -> int:
        return self.start_month + self.term_months


@dataclass(frozen=True)
class PlanSlot:
    """A savings plan that can be bought: a spend per hour (USD/h, the plan chooses it) over scope ``scope``
    (:func:`savings_plan_scope`) for ``term_months`` from ``start_month``; ``upfront_share`` of it paid upfront."""

    key: str
    scope: str
    offer: dict[str, Any]
    start_month: int
    term_months: int
    upfront_share: float

    @property
    def end_month(self) -> int:
        return self.start_month + self.term_months


@dataclass
class Budgets:
    """Limits on money (USD; None = no limit): ``monthly`` the most spent in any month of the horizon (cash:
    hourly + recurring + upfronts paid that month), ``total`` over the horizon, ``upfront`` cash paid upfront,
    ``commitment`` total owed over the terms of the commitments bought."""

    monthly: float | None = None
    total: float | None = None
    upfront: float | None = None
    commitment: float | None = None

    def any(self) -> bool:
        return any(v is not None for v in (self.monthly, self.total, self.upfront, self.commitment))


@dataclass
class FleetProblem:
    """Everything the MILP needs (after candidates and pruning).

    ``periods`` None: one period of ``horizon_months`` months in which every workload runs (training deadlines then
    count from the start of each month: use it with a one-month horizon, or build periods with :func:`make_problem`).
    ``budget_usd`` is the monthly budget (``budgets.monthly``) kept under its historical name.
    """

    workloads: list[FleetWorkload]
    blocks: list[FleetBlock]
    cands: dict[str, list[Candidate]]          # workload name -> candidates (units)
    work_flops: dict[str, float]               # training workload -> FLOPs
    budget_usd: float | None = None
    objective: str = "cost"
    spot_capacity: int = DEFAULT_SPOT_CAPACITY
    pruned: int = 0
    rejected: dict[str, dict[str, int]] = field(default_factory=dict)
    unpruned: dict[str, list[Candidate]] | None = None   # every candidate, for strategies over other pricing sets
    max_instances: int | None = None                      # quota per instance type and region (instances)
    horizon_months: int = 1
    periods: list[Period] | None = None
    leftover_value: float = 0.0
    placement: str = "region"
    spread: str = ""
    budgets: Budgets = field(default_factory=Budgets)
    start_date: _dt.date | None = None
    horizon_note: str = ""
    merge_note: str = ""
    profiles: dict | None = field(default=None, repr=False)   # serving name -> DemandProfile (to re-cut periods)
    slots: dict[str, Slot] = field(default_factory=dict, init=False)
    plan_slots: dict[str, PlanSlot] = field(default_factory=dict, init=False)   # savings plans that can be bought
    _slots_of: dict[str, list[str]] = field(default_factory=dict, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.budget_usd is not None and self.budgets.monthly is None:
            self.budgets = dataclasses.replace(self.budgets, monthly=self.budget_usd)
        self.budget_usd = self.budgets.monthly
        if self.periods is None:
            if self.horizon_months > 1 and any(w.training for w in self.workloads):
                raise InputError("horizon_months", "training jobs need the periods of make_problem for a horizon "
                                                   "longer than one month")
            self.periods = [Period(0, 0, self.horizon_months, tuple(w.name for w in self.workloads if not w.training),
                                   {w.name: "partial" for w in self.workloads if w.training},
                                   {w.name: float(w.deadline_hours or HOURS_PER_MONTH)
                                    for w in self.workloads if w.training})]
        if self.placement not in PLACEMENTS:
            raise InputError("placement", f"unknown placement {self.placement!r}", accepted=", ".join(PLACEMENTS))
        acts = [w.activity() for w in self.workloads]
        slots: dict[str, Slot] = {}
        starts: dict[int, list[int]] = {}  # term -> the months a commitment of that term may be bought
        for cs in self.cands.values():
            for c in cs:
                if not c.committed:
                    continue
                ok = c.okey
                t = TERM_MONTHS[c.offer["pricing"]]
                if t not in starts:
                    starts[t] = list(slot_starts(acts, self.horizon_months, t))
                for s in starts[t]:
                    key = f"{ok}@{s}"
                    if key not in slots:
                        slots[key] = Slot(key, ok, c.offer, s, t)
        self.slots = dict(sorted(slots.items(), key=lambda kv: (kv[1].okey, kv[1].start_month)))
        plan_slots: dict[str, PlanSlot] = {}
        for cs in self.cands.values():
            for c in cs:
                if purchase_kind(c.offer) != "savings_plan":
                    continue
                scope = savings_plan_scope(c.offer)
                t = SAVINGS_PLAN_TERM_MONTHS[c.offer["pricing"]]
                if t not in starts:
                    starts[t] = list(slot_starts(acts, self.horizon_months, t))
                share = SAVINGS_PLAN_UPFRONT_SHARE.get(scope.split("|")[2], 0.0)
                for s in starts[t]:
                    key = f"{scope}@{s}"
                    if key not in plan_slots:
                        plan_slots[key] = PlanSlot(key, scope, c.offer, s, t, share)
        self.plan_slots = dict(sorted(plan_slots.items(), key=lambda kv: (kv[1].scope, kv[1].start_month)))
        self._slots_of = {}
        for k, sl in self.slots.items():
            self._slots_of.setdefault(sl.okey, []).append(k)

    def payment_matters(self) -> bool:
        """A monthly-cash or upfront limit tells payment options apart (pruning keeps each)."""
        return self.budgets.monthly is not None or self.budgets.upfront is not None

    def single_slot_costs(self) -> dict[str, float]:
        """offer key -> USD over the horizon of one instance, for committed offers bought only once, at month 0,
        with a term covering the whole horizon (then offers of different terms compare by this cost). Empty under a
        monthly-cash, upfront or commitment limit: a term that costs less over the horizon may pay more a month,
        upfront or in all (a 3-year term), so terms are then compared only with their own kind."""
        if self.budgets.monthly is not None or self.budgets.upfront is not None or self.budgets.commitment is not None:
            return {}
        by: dict[str, list[Slot]] = {}
        for sl in self.slots.values():
            by.setdefault(sl.okey, []).append(sl)
        return {ok: self.slot_cost(ss[0]) for ok, ss in by.items()
                if len(ss) == 1 and ss[0].start_month == 0 and ss[0].end_month >= self.horizon_months}

    def replace(self, **changes) -> "FleetProblem":
        """A copy with ``changes`` (slots recomputed)."""
        return dataclasses.replace(self, **changes)

    @property
    def recurring(self) -> bool:
        """True when the plan has a serving workload (capacity needed month after month)."""
        return any(not w.training for w in self.workloads)

    def period_of(self, b: FleetBlock) -> Period:
        return self.periods[b.period]  # type: ignore[index]

    def months(self, b: FleetBlock) -> int:
        return self.period_of(b).months

    def covering(self, okey: str, p: Period) -> list[str]:
        """Slot keys of offer ``okey`` whose term covers period ``p``."""
        return [k for k in self._slots_of.get(okey, ())
                if self.slots[k].start_month <= p.start_month and p.end_month <= self.slots[k].end_month]

    def covering_plans(self, scope: str, p: Period) -> list[str]:
        """Savings-plan slot keys of ``scope`` whose term covers period ``p``."""
        return [k for k, sl in self.plan_slots.items()
                if sl.scope == scope and sl.start_month <= p.start_month and p.end_month <= sl.end_month]

    def plan_slot_cost(self, s: PlanSlot) -> float:
        """USD over the horizon of 1 USD/h of savings-plan commitment bought in slot s (the whole term, less the
        leftover value of the months past the horizon)."""
        return HOURS_PER_MONTH * commitment_cost_factor(s.start_month, s.term_months, self.horizon_months,
                                                        self.leftover_value)

    def job_block_days(self, w: FleetWorkload) -> int:
        """The most days one unit of training job ``w`` can run on capacity blocks: its window (deadline, else the
        horizon left from its start) in whole days, rounded up (a 5-hour window still buys a day; a window past 182
        days is covered by blocks bought back to back)."""
        hours = w.deadline_hours if w.deadline_hours else (self.horizon_months - w.start_month) * HOURS_PER_MONTH
        return max(1, int(math.ceil(hours / 24.0 - 1e-9)))

    def job_window_hours(self, w: FleetWorkload) -> float:
        """Hours of training job ``w``'s window: its deadline, else the horizon left from its start."""
        return float(w.deadline_hours if w.deadline_hours else (self.horizon_months - w.start_month) * HOURS_PER_MONTH)

    def block_windows(self) -> list[tuple[int, int]]:
        """(start month, end month) of the capacity blocks a service may run on: from one period boundary to a later
        one at most 5 months on (a block lasts at most 182 days), so a block spans the periods a service runs
        through alike (an unrelated job's start does not cut it in two)."""
        bounds = sorted({p.start_month for p in self.periods or []} | {self.horizon_months})
        return [(a, b) for i, a in enumerate(bounds) for b in bounds[i + 1:] if _block_days_of(b - a) is not None]

    def workloads_by_name(self) -> dict[str, FleetWorkload]:
        return {w.name: w for w in self.workloads}

    def has_purchases(self, allowed: set[str] | None = None) -> bool:
        """Some candidate is a capacity block or a savings-plan rate (planned by the MILP only)."""
        return any(purchase_kind(c.offer) and (allowed is None or c.offer["pricing"] in allowed)
                   for cs in self.cands.values() for c in cs)

    def slot_cost(self, s: Slot) -> float:
        """USD over the horizon of one instance of slot s (the whole term, less the leftover value)."""
        return committed_rate(s.offer) * HOURS_PER_MONTH * commitment_cost_factor(
            s.start_month, s.term_months, self.horizon_months, self.leftover_value)

    def committed_offers(self) -> dict[str, dict[str, Any]]:
        """offer key -> offer dict, for every committed offer some workload can use."""
        return {s.okey: s.offer for s in self.slots.values()}

    def active(self, w: FleetWorkload, b: FleetBlock) -> bool:
        """A serving workload runs in b's period."""
        return w.name in self.period_of(b).serving

    def before_deadline(self, w: FleetWorkload, b: FleetBlock) -> float:
        """Hours of block b (in each month of its period) inside training job w's window: all of them in a period
        wholly inside it; in the month the deadline falls in, a contiguous block [start, start + hours) counts its
        part before the deadline and a block spread over a stretch [start, end) its hours in proportion (profiles
        are split at deadlines, so in a plan this is all or nothing)."""
        p = self.period_of(b)
        kind = p.training.get(w.name)
        if kind is None:
            return 0.0
        if kind == "full":
            return b.hours
        d = p.splits[w.name]
        end = b.end_hour if b.end_hour is not None else b.start_hour + b.hours
        if end <= b.start_hour:
            return 0.0
        share = max(0.0, min(end, d) - b.start_hour) / (end - b.start_hour)
        return b.hours * min(1.0, share)




#: Parts of a commitment that add up to its effective rate within this (relative, and at least 1e-6 USD/h): the
#: offers-CSV reader's own check (providers/offers_csv.py), so every row it accepts is priced by its parts.
PARTS_TOLERANCE = 1e-6


def commitment_parts(offer: dict[str, Any]) -> tuple[float, float]:
    """(upfront USD per instance, recurring USD per hour) of a committed offer, as quoted. A part that is missing
    (None or NaN) is 0; an offer that quotes neither (a user's catalog with only usd_per_hour), or whose parts do
    not add up to its effective rate (upfront / term hours + recurring = usd_per_hour, within
    :data:`PARTS_TOLERANCE`: a frame given to the API with a part missing), is all recurring at that rate — the
    figure every other step (candidates, pruning) prices it by. :func:`commitment_parts_arrays` is the same rule
    over a frame's columns."""
    up = _part(offer.get("upfront_usd"))
    rec = _part(offer.get("recurring_usd_per_hour"))
    usd = float(offer["usd_per_hour"])
    hours = TERM_MONTHS.get(offer.get("pricing"), 0) * HOURS_PER_MONTH
    if (not rec and not up) or (hours and abs(rec + up / hours - usd) > max(PARTS_TOLERANCE, PARTS_TOLERANCE * usd)):
        return 0.0, usd
    return up, rec


def _part(x) -> float:
    try:
        v = float(x)
    except (TypeError, ValueError):
        return 0.0
    return 0.0 if v != v else v


def commitment_parts_arrays(frame: "pd.DataFrame", pricing=None):
    """:func:`commitment_parts` of every row of ``frame`` as arrays (upfront, recurring, usd_per_hour, term hours;
    term hours 0 on hourly rows), computed with the same operations so the figures are the same floats.
    ``pricing``: the frame's pricing column as an object array, when the caller has it."""
    import numpy as np
    import pandas as pd

    n = len(frame)

    def col(c):
        if c not in frame.columns:
            return np.zeros(n)
        v = pd.to_numeric(frame[c], errors="coerce").to_numpy(dtype=float, na_value=np.nan)
        return np.where(np.isnan(v), 0.0, v)

    up, rec = col("upfront_usd"), col("recurring_usd_per_hour")
    usd = pd.to_numeric(frame["usd_per_hour"], errors="coerce").to_numpy(dtype=float, na_value=np.nan)
    pr = text_values(frame["pricing"]) if pricing is None else pricing
    hours = np.zeros(n)
    for p_name, t in TERM_MONTHS.items():
        hours[pr == p_name] = t * HOURS_PER_MONTH
    with np.errstate(invalid="ignore", divide="ignore"):
        off = (hours > 0) & (np.abs(rec + up / np.where(hours > 0, hours, 1.0) - usd) >
                             np.maximum(PARTS_TOLERANCE, PARTS_TOLERANCE * usd))
    flat = ((rec == 0) & (up == 0)) | off
    return np.where(flat, 0.0, up), np.where(flat, usd, rec), usd, hours


def committed_rate_arrays(frame: "pd.DataFrame", pricing=None):
    """:func:`committed_rate` of every row of ``frame`` (NaN on hourly rows), from :func:`commitment_parts_arrays`
    with the same operations, so the figures are the same floats."""
    import numpy as np

    up, rec, _, hours = commitment_parts_arrays(frame, pricing)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(hours > 0, (up + rec * hours) / np.where(hours > 0, hours, 1.0), np.nan)


def committed_rate(offer: dict[str, Any]) -> float:
    """Effective USD per hour of a committed offer from its quoted parts: (upfront + recurring x term hours) / term
    hours. The offer's ``usd_per_hour`` is the same figure rounded (6 decimals in the snapshot); over a 3-year term
    that rounding is cents per instance, enough that an upfront came out above the commitment it is part of. An
    offer that quotes neither part (a user's catalog with only usd_per_hour) is taken at its ``usd_per_hour``."""
    hours = TERM_MONTHS[offer["pricing"]] * HOURS_PER_MONTH
    up, rec = commitment_parts(offer)
    return (up + rec * hours) / hours


def placement_group(offer: dict[str, Any], placement: str) -> tuple[str, ...]:
    """The group a serving workload must stay in: (provider, region), (provider,) or () for placement "any"."""
    if placement == "region":
        return (str(offer["provider"]), str(offer["region"]))
    if placement == "provider":
        return (str(offer["provider"]),)
    return ()


def cluster_group(offer: dict[str, Any]) -> tuple[str, str, str]:
    """The cluster a training job runs on (issue 11): one synchronous job stays on one instance type in one region
    of one provider -- one fabric, one GPU model -- whatever the purchase options it mixes there."""
    return ("cluster", str(offer["provider"]), str(offer["region"]), str(offer["instance_type"]))


def job_units(c: Candidate) -> float:
    """The most units of a training candidate that run at once: the job's scale on that offer (the GPUs that meet
    its deadline, ``ReplicaSizing.job_gpus``) in units; its throughput per GPU was taken at that scale."""
    s = getattr(c, "sizing", None)
    job = getattr(s, "job_gpus", None) if s is not None else None
    per = float(getattr(s, "gpus_per_replica", 0) or 0) if s is not None else 0.0
    if not job or per <= 0:
        return math.inf
    return max(1.0, math.floor(job / per + 1e-9))


def spot_group(offer: dict[str, Any]) -> tuple[str, str, str]:
    """Spot capacity is capped per instance type and region, all its zones together."""
    return (str(offer["provider"]), str(offer["region"]), str(offer["instance_type"]))


# ------------------------------------------------------------------------------------------------ pruning
def _dominates(o2: dict[str, Candidate], o1: dict[str, Candidate], p2: float, p1: float) -> bool:
    """Offer o2 can replace offer o1 for every workload o1 can host, at no more cost. (o2/o1 map workload name ->
    that workload's candidate on the offer.) Two ways:

    - unit for unit: o2 costs no more per hour and, for each workload, its unit uses no more instances and gives
      no less throughput and no fewer replicas;
    - m instances for one (single-instance units on both): m x o2 costs no more than o1 and, for each workload,
      m units of o2 give at least o1's throughput and replicas — e.g. GCP a2-ultragpu-4g is exactly two
      a2-ultragpu-2g at twice the price, so the 4g never needs to be considered (the 2g pair can do all it does).
      (With the instance rule of min_replicas, m instances of o2 count as at least one of o1.)
    """
    if not o1:
        return False
    m = 1
    for w, c1 in o1.items():
        c2 = o2.get(w)
        if c2 is None:
            return False
        if c2.instances_per_unit == 1 and c1.instances_per_unit == 1:
            need = max(math.ceil(c1.throughput_per_unit / c2.throughput_per_unit * (1 - 1e-12)),
                       math.ceil(c1.replicas_per_unit / c2.replicas_per_unit))
            m = max(m, need)
        elif c2.instances_per_unit > c1.instances_per_unit or \
                c2.throughput_per_unit < c1.throughput_per_unit * (1 - 1e-12) or c2.replicas_per_unit < c1.replicas_per_unit:
            return False
    if m > 1 and any(c.instances_per_unit != 1 for c in list(o1.values()) + list(o2.values())):
        return False
    # a unit limited to one instance at a time (a training job on an offer without a cluster fabric: the model's
    # nofabric row) replaces only another such unit, one for one (a breaker's 4 x g6e.xlarge spot "replaced" the
    # EFA g6e.12xlarge a 24-hour job needed)
    for w, c1 in o1.items():
        c2 = o2[w]
        if c2.max_units is not None and (c1.max_units is None or m > 1):
            return False
    return m * p2 <= p1 * (1 + 1e-9)


def _same_place(a: dict[str, Any], b: dict[str, Any], placement: str, spread: str, any_term: bool = False,
                same_payment: bool = False) -> bool:
    """Dominance is only safe between offers a plan may swap: the same placement group (and, when replicas are
    spread over zones, the same zone) and, for commitments, the same term."""
    if placement_group(a, placement) != placement_group(b, placement):
        return False
    if spread == "zones" and str(a.get("zone") or "") != str(b.get("zone") or ""):
        return False
    if a["pricing"] in COMMITTED and a["pricing"] != b["pricing"] and not any_term:
        return False
    if same_payment and str(a.get("payment") or "") != str(b.get("payment") or ""):
        return False  # under a cash or upfront limit, a dearer no-upfront term may be the one that fits
    return True


def prune_fleet(cands: dict[str, list[Candidate]], workloads: list[FleetWorkload], blocks: list[FleetBlock],
                work_flops: dict[str, float], spot_capacity: int, placement: str = "any",
                spread: str = "", commit_cost: dict[str, float] | None = None,
                same_payment: bool = False) -> tuple[dict[str, list[Candidate]], int]:
    """Drop candidates that can never improve the plan (safe rules only; DESIGN.md "Pruning must be safe").

    Offers are compared only within what a plan may swap (:func:`_same_place`: the placement group, the zone when
    spreading over zones, the commitment term; with ``same_payment``, under a monthly-cash or upfront limit, the
    payment option too: an all-upfront term that is cheaper over the horizon may not fit the month it is paid in).
    ``commit_cost`` (offer key -> USD over the horizon of one instance)
    is given for the commitments bought once, at the horizon's start, and covering all of it
    (:meth:`FleetProblem.single_slot_costs`): those are compared by that cost, across terms (on a 12-month horizon a
    3-year term is charged 36 months, so a 1-year one with the capacity for less replaces it).

    - committed offers are shared by the workloads: offer o1 is dropped when another committed offer o2 dominates it
      (:func:`_dominates`) for EVERY workload o1 can host: replacing each o1 instance by o2 keeps every constraint
      and does not raise the cost. Ties keep the first by key.
    - on-demand and Flex-start offers (uncapped, billed per block; Flex-start only training jobs use): per workload, a Pareto front of (USD per unit-hour, throughput)
      for serving (with a redundancy floor of two or more, one per replicas and instances per unit up to it), then
      "m copies of a cheaper one" (with such a floor, of as many instances up to it); for training (continuous) only the lowest USD per unit of work;
    - spot offers are capped per instance type and region: of one capped group only its cheapest zone is kept (they
      share the cap; not when spreading over zones), and a spot offer is dropped only when dominating spot offers of
      other groups have, together, the capacity for the peak need of every spot-eligible workload.
    - capacity blocks and savings-plan rates are kept, every one: the model sizes them (a block's days, a plan's
      USD/h), so no instance-for-instance rule compares them with hourly or reserved offers.
    Returns (kept candidates per workload, number dropped).
    """
    bought = {w: [c for c in cs if purchase_kind(c.offer)] for w, cs in cands.items()}
    if any(bought.values()):
        rest = {w: [c for c in cs if not purchase_kind(c.offer)] for w, cs in cands.items()}
        kept, dropped = prune_fleet(rest, workloads, blocks, work_flops, spot_capacity, placement, spread,
                                    commit_cost, same_payment)
        return {w: kept.get(w, []) + bought[w] for w in cands}, dropped
    before = sum(len(v) for v in cands.values())
    by_offer: dict[str, dict[str, Candidate]] = {}
    offer_of: dict[str, dict[str, Any]] = {}
    for w, cs in cands.items():
        for c in cs:
            k = c.okey
            by_offer.setdefault(k, {})[w] = c
            offer_of[k] = c.offer

    def price(k: str) -> float:
        return float(offer_of[k]["usd_per_hour"])

    cc = commit_cost or {}

    def term_cost(k: str) -> float:
        o = offer_of[k]
        return cc[k] if k in cc else price(k) * HOURS_PER_MONTH * TERM_MONTHS[o["pricing"]]

    def commit_dominates(j: str, k: str) -> bool:
        """j replaces k; j is a rival of k (below): same loc, and the same term unless both are in cc, so
        _same_place holds by construction."""
        if j in cc and k in cc:  # both bought once for the whole horizon: compare what they cost in it
            return _dominates(by_offer[j], by_offer[k], cc[j], cc[k])
        return _dominates(by_offer[j], by_offer[k], price(j), price(k))

    def loc(o: dict[str, Any]) -> tuple:
        """What _same_place compares besides the term: only offers with the same loc can dominate each other."""
        return placement_group(o, placement) + ((str(o.get("zone") or ""),) if spread == "zones" else ()) + \
            ((str(o.get("payment") or ""),) if same_payment else ())

    committed = sorted((k for k in by_offer if offer_of[k]["pricing"] in COMMITTED), key=lambda k: (term_cost(k), k))
    keep_commit: list[str] = []
    kept_cc: dict[tuple, list[str]] = {}      # kept offers of the cross-term kind, by loc
    kept_term: dict[tuple, list[str]] = {}    # kept offers by loc and term
    for k in committed:  # cheapest first: a dominator always comes before what it dominates
        lk = loc(offer_of[k])
        rivals = (kept_cc.get(lk, []) if k in cc else []) + kept_term.get(lk + (offer_of[k]["pricing"],), [])
        if not any(commit_dominates(j, k) for j in rivals):
            keep_commit.append(k)
            if k in cc:
                kept_cc.setdefault(lk, []).append(k)
            kept_term.setdefault(lk + (offer_of[k]["pricing"],), []).append(k)
    need = 0.0
    for w in workloads:
        if w.allow_spot:
            spot_c = [c for c in cands.get(w.name, []) if c.offer["pricing"] == "spot"]
            if spot_c:
                need += max(_peak_units(w, c, blocks, work_flops) * c.instances_per_unit for c in spot_c)
    spots = sorted((k for k in by_offer if offer_of[k]["pricing"] == "spot"), key=lambda k: (price(k), k))
    keep_spot: list[str] = []
    seen_group: set[tuple] = set()
    for k in spots:
        g = spot_group(offer_of[k])
        if spread != "zones" and g in seen_group:
            continue  # a dearer zone of a group already kept: same capacity under the same cap
        doms = [j for j in keep_spot if _same_place(offer_of[j], offer_of[k], placement, spread)
                and spot_group(offer_of[j]) != g and _dominates(by_offer[j], by_offer[k], price(j), price(k))]
        if doms and len({spot_group(offer_of[j]) for j in doms}) * spot_capacity >= need - 1e-9:
            continue
        keep_spot.append(k)
        seen_group.add(g)
    keep = set(keep_commit) | set(keep_spot)
    out: dict[str, list[Candidate]] = {}
    for w in workloads:
        cs = cands.get(w.name, [])
        od_all = [c for c in cs if c.offer["pricing"] in HOURLY_UNCAPPED]
        groups: dict[tuple, list[Candidate]] = {}
        for c in od_all:
            key = placement_group(c.offer, placement) + ((str(c.offer.get("zone") or ""),) if spread == "zones" else ())
            groups.setdefault(key, []).append(c)
        od: list[Candidate] = []
        if w.training and w.workload.task in ("train", "finetune"):  # one cluster per job: per cluster, the
            groups = {}                                               # lowest USD per unit of work (and the fast)
            for c in od_all:
                groups.setdefault(cluster_group(c.offer), []).append(c)
        elif w.training:  # LoRA: continuous, not placed: only the lowest USD per unit of work matters
            groups = {(): od_all} if od_all else {}
        # a floor of one replica on one instance is met by any unit: only from two on do replicas and instances per
        # unit tell units apart (counted up to the floor: more than it is the same)
        floors = (not w.training) and w.min_replicas > 1
        mr = int(w.min_replicas)
        if w.training:
            od.extend(_cluster_front([_training_front(grp) for grp in groups.values()])
                      if w.workload.task in ("train", "finetune") else
                      [c for grp in groups.values() for c in _training_front(grp)])
        for grp in groups.values():
            if w.training:
                continue
            # with a redundancy floor, units of other replicas or instances per unit are not on one staircase: a
            # dearer unit of less throughput may be the cheap way to the floor (a breaker's case: 3 x a 1-replica
            # unit "optimal" at $3,285 where it plus a 2-replica unit cost $2,263)
            classes: dict[tuple, list[Candidate]] = {}
            for c in grp:
                classes.setdefault((min(c.replicas_per_unit, mr), min(c.instances_per_unit, mr)) if floors else (),
                                   []).append(c)
            front = []
            for cls in classes.values():
                best = -1.0
                for c in sorted(cls, key=lambda c: (c.usd_per_unit_hour, -c.throughput_per_unit, c.okey)):
                    if c.throughput_per_unit > best * (1 + 1e-12):
                        front.append(c)
                        best = c.throughput_per_unit
            # uncapped and billed per block: an offer that m copies of a cheaper one match is never needed (with a
            # floor, only by units of as many instances: one of fewer would not count as many towards it)
            od += [c for c in front if not any(
                d is not c and (not floors or min(d.instances_per_unit, mr) == min(c.instances_per_unit, mr))
                and _dominates({w.name: d}, {w.name: c}, d.usd_per_unit_hour, c.usd_per_unit_hour)
                for d in front if (d.usd_per_unit_hour, d.okey) < (c.usd_per_unit_hour, c.okey))]
        out[w.name] = od + [c for c in cs if c.offer["pricing"] not in HOURLY_UNCAPPED and c.okey in keep]
    return out, before - sum(len(v) for v in out.values())


def _cluster_front(fronts: list[list[Candidate]]) -> list[Candidate]:
    """The clusters (hourly candidates of one instance type in one region) a training job may need: those no other
    cluster beats on both USD per unit of work and the most work per hour it can run at the job's scale
    (:func:`job_units` x throughput per unit): one synchronous job runs on one cluster (build_fleet_model's
    ``cluster_<w>`` row), so a cheaper cluster that is too small for the deadline does not replace a faster one."""
    def ratio(c):
        return c.usd_per_unit_hour / c.throughput_per_unit

    stats = []
    for front in fronts:
        if not front:
            continue
        stats.append((min(ratio(c) for c in front),
                      max(c.throughput_per_unit * min(job_units(c), 1e12) for c in front), front))
    out = []
    for r, rate, front in stats:
        if not any((r2 < r * (1 - 1e-12) and rate2 >= rate) or (r2 <= r and rate2 > rate * (1 + 1e-12))
                   for r2, rate2, _ in stats):
            out.extend(front)
    return out


def _training_front(grp: list[Candidate]) -> list[Candidate]:
    """The hourly candidates a training job may need: the lowest USD per unit of work among those without a unit
    limit, and, of those limited to one instance at a time (``max_units`` 1, no cluster fabric: they share
    build_fleet_model's ``nofabric`` row, sum of k x units <= 1), the front of (USD per unit of work, throughput
    per instance) that is cheaper per unit of work than it — a job with a near deadline needs the fastest of them,
    not the cheapest (the example plan's pretrain-1b on a one-GPU RunPod L40S: cheapest per FLOP, too slow alone)."""
    ratio = lambda c: c.usd_per_unit_hour / c.throughput_per_unit  # noqa: E731
    free = [c for c in grp if c.max_units is None]
    out = [min(free, key=lambda c: (ratio(c), c.okey))] if free else []
    limit = ratio(out[0]) if out else math.inf
    best = -1.0
    for c in sorted((c for c in grp if c.max_units is not None and ratio(c) < limit),
                    key=lambda c: (ratio(c), -c.throughput_per_unit / c.instances_per_unit, c.okey)):
        th = c.throughput_per_unit / c.instances_per_unit
        if th > best * (1 + 1e-12):
            out.append(c)
            best = th
    return out


def _peak_units(w: FleetWorkload, c: Candidate, blocks: list[FleetBlock], work_flops: dict[str, float]) -> float:
    """Units of candidate c that w could need at most in one block (an upper bound used by spot pruning)."""
    if w.training:
        hours = sum(b.hours for b in blocks)
        return math.ceil(work_flops[w.name] / (c.throughput_per_unit * 3600.0 * max(min(hours, w.deadline_hours or hours), 1e-9))) + 1
    peak = max((b.demand.get(w.name, 0.0) for b in blocks), default=0.0)
    return max(math.ceil(peak / c.throughput_per_unit), math.ceil(w.min_replicas / max(c.replicas_per_unit, 1)),
               w.min_replicas)


# ------------------------------------------------------------------------------------------------ the MILP
@dataclass
class FleetVars:
    """The model's variables, keyed for reading the solution, and the money expressions."""

    N: dict[str, Any] = field(default_factory=dict)                    # slot key -> var
    CB: dict[tuple, Any] = field(default_factory=dict)   # ("job", w, ok) unit-days | ("job_units", w, ok) units |
    #                                                      ("window", ok, start, end) instances
    SP: dict[str, Any] = field(default_factory=dict)     # savings-plan slot key -> USD/h committed
    A: dict[tuple[str, str, int], Any] = field(default_factory=dict)   # (workload, offer key, block) -> var
    X: dict[tuple[str, str, int], Any] = field(default_factory=dict)
    S: dict[tuple[str, int], Any] = field(default_factory=dict)
    Z: dict[str, Any] = field(default_factory=dict)
    Y: dict[tuple[str, tuple], Any] = field(default_factory=dict)      # (workload, placement group) -> binary
    cost_terms: dict[Any, float] = field(default_factory=dict)
    value_terms: dict[Any, float] = field(default_factory=dict)
    upfront_terms: dict[Any, float] = field(default_factory=dict)
    commitment_terms: dict[Any, float] = field(default_factory=dict)
    cash_terms: dict[int, dict[Any, float]] = field(default_factory=dict)  # period -> its first month's cash


def _unit_bound(w: FleetWorkload, c: Candidate, blocks: list[FleetBlock]) -> float:
    """The most units of candidate c a cheapest (or best-ROI) plan gives serving workload w in one block: its peak
    demand in whole units, or its redundancy (replicas and instances), plus one."""
    peak = max((b.demand.get(w.name, 0.0) for b in blocks), default=0.0)
    return float(max(math.ceil(peak / c.throughput_per_unit - 1e-12),
                     math.ceil(w.min_replicas / max(c.replicas_per_unit, 1)), w.min_replicas, 1) + 1)


def build_fleet_model(problem: FleetProblem, *, lam: float | None = None, relax: bool = False,
                      allowed: set[str] | None = None, with_budgets: bool = True) -> tuple["pulp.LpProblem", FleetVars]:
    """Write the MILP of the module docstring.

    Args:
        problem: the FleetProblem.
        lam: None for minimum cost; for ROI (Dinkelbach step), maximize value - lam x cost.
        relax: the LP relaxation (continuous N, A, X, Z, y) — for the duals of the explanation.
        allowed: pricing models allowed in this solve (strategies), default every candidate's.
        with_budgets: add the budget rows (off when the explanation asks what a budget would have to be).
    Returns: (model, variables). Constraint names: share_<i>_<b>, spot_<i>_<b>, demand_<w>_<b>, minrep_<w>_<b>,
        work_<w>, place_<w>, budget_<p>, budget_total, max_upfront, max_commitment.
    """
    import pulp

    roi = lam is not None
    m = pulp.LpProblem("gpuopt_fleet", pulp.LpMaximize if roi else pulp.LpMinimize)
    V = FleetVars()
    cat_int = pulp.LpContinuous if relax else pulp.LpInteger
    periods = problem.periods or []
    slots = {k: s for k, s in problem.slots.items() if allowed is None or s.offer["pricing"] in allowed}
    for i, (k, s) in enumerate(slots.items()):
        v = V.N[k] = pulp.LpVariable(f"N_{i}", lowBound=0, cat=cat_int)
        V.cost_terms[v] = problem.slot_cost(s)
        upfront, recurring = commitment_parts(s.offer)
        V.upfront_terms[v] = upfront
        V.commitment_terms[v] = committed_rate(s.offer) * HOURS_PER_MONTH * s.term_months
        for p in periods:
            if s.start_month <= p.start_month < s.end_month:
                cash = V.cash_terms.setdefault(p.index, {})
                cash[v] = cash.get(v, 0.0) + recurring * HOURS_PER_MONTH + (upfront if s.start_month == p.start_month else 0.0)
    covering_cache: dict[tuple[str, int], list[str]] = {}

    def covering(ok: str, p: Period) -> list[str]:
        key = (ok, p.index)
        if key not in covering_cache:
            covering_cache[key] = [k for k in problem.covering(ok, p) if k in V.N]
        return covering_cache[key]

    plan_slots = {k: s for k, s in problem.plan_slots.items() if allowed is None or s.offer["pricing"] in allowed}
    for i, (k, s) in enumerate(plan_slots.items()):
        # a savings plan: v USD/h of spend at the plan's rates, committed for the term
        v = V.SP[k] = pulp.LpVariable(f"SP_{i}", lowBound=0)
        V.cost_terms[v] = problem.plan_slot_cost(s)
        whole = HOURS_PER_MONTH * s.term_months
        V.upfront_terms[v] = s.upfront_share * whole
        V.commitment_terms[v] = whole
        for p in periods:
            if s.start_month <= p.start_month < s.end_month:
                cash = V.cash_terms.setdefault(p.index, {})
                cash[v] = cash.get(v, 0.0) + (1.0 - s.upfront_share) * HOURS_PER_MONTH + (
                    s.upfront_share * whole if s.start_month == p.start_month else 0.0)
    plans_cache: dict[tuple[str, int], list[str]] = {}

    def covering_plans(scope: str, p: Period) -> list[str]:
        key = (scope, p.index)
        if key not in plans_cache:
            plans_cache[key] = [k for k in problem.covering_plans(scope, p) if k in V.SP]
        return plans_cache[key]

    sp_use: dict[tuple[str, int], dict] = {}
    cb_job: dict[tuple[str, str], dict] = {}
    cb_units: dict[tuple[str, str], float] = {}
    cb_serve: dict[tuple[str, int], dict[int, dict]] = {}
    cb_at_once: dict[tuple[str, str], list] = {}
    cb_offer: dict[str, dict] = {}
    windows = problem.block_windows()
    share: dict[tuple[str, int], dict] = {}
    spot: dict[tuple[tuple, int], dict] = {}
    quota: dict[tuple[tuple, int], dict] = {}
    vid = 0
    for w in problem.workloads:
        cat = pulp.LpContinuous if (w.training or w.divisible or relax) else pulp.LpInteger
        cands = [c for c in problem.cands.get(w.name, []) if allowed is None or c.offer["pricing"] in allowed]
        place = problem.placement != "any" and not w.training and not w.divisible  # ROI: placement binaries
        groups = sorted({placement_group(c.offer, problem.placement) for c in cands}) if place else []
        if place and len(groups) > 1:
            for gi, g in enumerate(groups):
                V.Y[(w.name, g)] = pulp.LpVariable(f"Y_{_safe(w.name)}_{gi}", cat=pulp.LpContinuous if relax else pulp.LpBinary,
                                                   lowBound=0, upBound=1)
            m += pulp.lpSum(V.Y[(w.name, g)] for g in groups) == 1, f"place_{_safe(w.name)}"
        if w.training:  # one synchronous job on one cluster (cluster_group), at most its job-scale units at once
            clusters = sorted({cluster_group(c.offer) for c in cands}) if w.workload.task in ("train", "finetune") \
                else []  # a LoRA job is sized as replicas of one or a few GPUs (issue 5), not laid out whole
            if len(clusters) > 1:
                for gi, g in enumerate(clusters):
                    V.Y[(w.name, g)] = pulp.LpVariable(f"C_{_safe(w.name)}_{gi}", lowBound=0, upBound=1,
                                                       cat=pulp.LpContinuous if relax else pulp.LpBinary)
                m += pulp.lpSum(V.Y[(w.name, g)] for g in clusters) == 1, f"cluster_{_safe(w.name)}"
        bound = {id(c): _unit_bound(w, c, problem.blocks) for c in cands} if V.Y and not w.training else {}
        work_terms: dict = {}
        cluster_work: dict[tuple, dict] = {}
        for bi, b in enumerate(problem.blocks):
            p = problem.period_of(b)
            if w.training:
                usable = problem.before_deadline(w, b)
                if usable <= 0:
                    continue
            elif not problem.active(w, b):
                continue
            cap_terms: dict = {}
            rep_terms: dict = {}
            rep_nonspot: dict = {}
            inst_terms: dict = {}
            inst_nonspot: dict = {}
            zone_terms: dict[str, dict] = {}
            regional: dict = {}
            for c in cands:
                ok = c.okey
                vid += 1
                k = float(c.instances_per_unit)
                if w.training and problem.max_instances is not None and k > problem.max_instances:
                    continue  # a job's unit runs whole: more instances at once than the quota allows
                kind = purchase_kind(c.offer)
                if kind == CAPACITY_BLOCK:
                    if not w.training and not any(a <= p.start_month and p.end_month <= b for a, b in windows):
                        continue  # a block lasts at most 182 days: not through a period of over 5 months
                    v = pulp.LpVariable(f"A_{vid}", lowBound=0, cat=cat)
                    V.A[(w.name, ok, bi)] = v
                    if w.training:  # unit-hours used, bought as whole unit-days of as many units as run at once
                        cb_job.setdefault((w.name, ok), {})[v] = usable * p.months
                        cb_units.setdefault((w.name, ok), float(c.instances_per_unit))
                        cb_at_once.setdefault((w.name, ok), []).append(v)
                    else:  # instances running, bought for a window of whole periods
                        cb_serve.setdefault((ok, p.index), {}).setdefault(bi, {})[v] = k
                    cb_offer[ok] = c.offer
                elif kind == "savings_plan":
                    scope = savings_plan_scope(c.offer)
                    if not covering_plans(scope, p):
                        continue
                    v = pulp.LpVariable(f"A_{vid}", lowBound=0, cat=cat)
                    V.A[(w.name, ok, bi)] = v
                    sp_use.setdefault((scope, bi), {})[v] = c.usd_per_unit_hour
                elif c.committed:
                    if not covering(ok, p):
                        continue
                    v = pulp.LpVariable(f"A_{vid}", lowBound=0, cat=cat)
                    V.A[(w.name, ok, bi)] = v
                    share.setdefault((ok, bi), {})[v] = k
                else:
                    v = pulp.LpVariable(f"X_{vid}", lowBound=0, cat=cat)
                    V.X[(w.name, ok, bi)] = v
                    V.cost_terms[v] = c.usd_per_unit_hour * b.hours * p.months
                    cash = V.cash_terms.setdefault(p.index, {})
                    cash[v] = cash.get(v, 0.0) + c.usd_per_unit_hour * b.hours
                    if c.offer["pricing"] == "spot":
                        spot.setdefault((spot_group(c.offer), bi), {})[v] = k
                if problem.max_instances is not None and not c.committed:  # reservations: counted by N below
                    q = quota.setdefault((spot_group(c.offer), bi), {})
                    q[v] = q.get(v, 0.0) + k
                if (w.name, placement_group(c.offer, problem.placement)) in V.Y:
                    y = V.Y[(w.name, placement_group(c.offer, problem.placement))]
                    m += pulp.LpAffineExpression({v: 1.0, y: -bound[id(c)]}) <= 0
                if w.training:
                    a_work = c.throughput_per_unit * 3600.0 * usable * p.months
                    work_terms[v] = a_work
                    cap = job_units(c)  # at most the job's scale at once, and within the quota
                    if problem.max_instances is not None:
                        cap = min(cap, float(problem.max_instances // k))
                    if math.isfinite(cap):
                        v.upBound = cap if v.upBound is None else min(v.upBound, cap)
                    g = cluster_group(c.offer)
                    if (w.name, g) in V.Y:  # the work done on a cluster: none unless the job runs there
                        cluster_work.setdefault(g, {})[v] = a_work
                    continue
                cap_terms[v] = c.throughput_per_unit
                rep_terms[v] = float(c.replicas_per_unit)
                inst_terms[v] = k
                if c.offer["pricing"] != "spot":
                    rep_nonspot[v] = float(c.replicas_per_unit)
                    inst_nonspot[v] = k
                zone = str(c.offer.get("zone") or "")
                if zone:
                    zone_terms.setdefault(zone, {})[v] = k
                else:
                    regional[v] = k
            if w.training:
                # a job's data-parallel group crosses instances only over a cluster fabric: on offers without one
                # (Candidate.max_units = 1) it runs on one instance at a time
                # (an LpVariable is falsy before the solve: `A.get(...) or X.get(...)` dropped every A variable)
                lone = {}
                for c in cands:
                    if c.max_units == 1:
                        v = V.A.get((w.name, c.okey, bi))
                        if v is None:
                            v = V.X.get((w.name, c.okey, bi))
                        if v is not None:
                            lone[v] = float(c.instances_per_unit)
                if len(lone) > 0:
                    m += pulp.LpAffineExpression(lone) <= 1.0, f"nofabric_{_safe(w.name)}_{bi}"
                continue
            d = float(b.demand.get(w.name, 0.0))
            tag = f"{_safe(w.name)}_{bi}"
            if roi:
                s = pulp.LpVariable(f"S_{tag}", lowBound=0, upBound=d)
                V.S[(w.name, bi)] = s
                V.value_terms[s] = (w.value_per_million_tokens or 0.0) * 3600.0 * b.hours * p.months / 1e6
                m += pulp.LpAffineExpression({**cap_terms, s: -1.0}) >= 0, f"demand_{tag}"
            elif d > 0:
                scale = 1000.0 / d
                m += pulp.LpAffineExpression({v: min(a * scale, 1000.0) if cat == pulp.LpInteger else a * scale
                                              for v, a in cap_terms.items()}) >= 1000.0, f"demand_{tag}"
            if w.min_replicas > 0:
                m += pulp.LpAffineExpression(rep_terms) >= w.min_replicas, f"minrep_{tag}"
                if not w.divisible:
                    m += pulp.LpAffineExpression(inst_terms) >= w.min_replicas, f"mininst_{tag}"
                if not w.spot_only_ok:
                    m += pulp.LpAffineExpression(rep_nonspot) >= w.min_replicas, f"minrep_nonspot_{tag}"
                    if not w.divisible:
                        m += pulp.LpAffineExpression(inst_nonspot) >= w.min_replicas, f"mininst_nonspot_{tag}"
                if problem.spread == "zones" and w.min_replicas > 1:
                    us = {}
                    for zi, (zone, terms) in enumerate(sorted(zone_terms.items())):
                        u = pulp.LpVariable(f"u_{tag}_{zi}", lowBound=0, upBound=1)
                        m += pulp.LpAffineExpression({**terms, u: -1.0}) >= 0
                        us[u] = 1.0
                    m += pulp.LpAffineExpression({**us, **regional}) >= w.min_replicas, f"spread_{tag}"
        if w.training:
            need = float(problem.work_flops[w.name])
            for gi, (g, terms) in enumerate(sorted(cluster_work.items())):
                # work on cluster g <= the whole job x Y_g (scaled like the work row): one cluster per job
                m += pulp.LpAffineExpression({**{v: a / need * 1000.0 for v, a in terms.items()},
                                              V.Y[(w.name, g)]: -1000.0}) <= 0, f"onecluster_{_safe(w.name)}_{gi}"
            if roi:
                z = pulp.LpVariable(f"Z_{_safe(w.name)}", cat=pulp.LpContinuous if relax else pulp.LpBinary)
                V.Z[w.name] = z
                V.value_terms[z] = float(w.value_usd or 0.0)
                m += pulp.LpAffineExpression({**{v: a / need * 1000.0 for v, a in work_terms.items()}, z: -1000.0}) >= 0, \
                    f"work_{_safe(w.name)}"
            else:
                m += pulp.LpAffineExpression({v: a / need * 1000.0 for v, a in work_terms.items()}) >= 1000.0, \
                    f"work_{_safe(w.name)}"
    keys = list(V.N)
    ok_index = {ok: i for i, ok in enumerate(sorted({s.okey for s in slots.values()}))}
    for (ok, bi), terms in share.items():
        p = problem.period_of(problem.blocks[bi])
        m += pulp.LpAffineExpression({**terms, **{V.N[k]: -1.0 for k in covering(ok, p)}}) <= 0, \
            f"share_{ok_index[ok]}_{bi}"
    for j, ((g, bi), terms) in enumerate(sorted(spot.items(), key=lambda kv: (kv[0][0], kv[0][1]))):
        m += pulp.LpAffineExpression(terms) <= float(problem.spot_capacity), f"spot_{j}_{bi}"
    scope_index = {sc: i for i, sc in enumerate(sorted({sc for sc, _ in sp_use}))}
    for (scope, bi), terms in sp_use.items():
        p = problem.period_of(problem.blocks[bi])
        m += pulp.LpAffineExpression({**terms, **{V.SP[k]: -1.0 for k in covering_plans(scope, p)}}) <= 0, \
            f"plan_{scope_index[scope]}_{bi}"
    wl = {w.name: w for w in problem.workloads}
    for j, ((wn, ok), terms) in enumerate(sorted(cb_job.items())):
        # training on capacity blocks: U units bought (as many as run at once, at most one block's 64 instances;
        # quota), D unit-days (each unit at least a day, at most the job's window in days): unit-hours used
        # <= 24 D; paid whole in the job's first month
        w, k = wl[wn], cb_units[(wn, ok)]
        units_max = max(1, int(CAPACITY_BLOCK_MAX_INSTANCES // k))
        if problem.max_instances is not None:
            units_max = max(0, min(units_max, int(problem.max_instances // k)))
        days_max = problem.job_block_days(w)
        window = problem.job_window_hours(w)
        f_days, rem = int(window // 24.0), window - 24.0 * int(window // 24.0)
        u = V.CB[("job_units", wn, ok)] = pulp.LpVariable(f"CBU_{j}", lowBound=0, upBound=units_max, cat=cat_int)
        d = V.CB[("job", wn, ok)] = pulp.LpVariable(f"CBJ_{j}", lowBound=0, upBound=units_max * days_max, cat=cat_int)
        m += pulp.LpAffineExpression({**terms, d: -24.0}) <= 0, f"cbjob_{j}"
        m += pulp.LpAffineExpression({u: 1.0, d: -1.0}) <= 0, f"cbday_{j}"
        m += pulp.LpAffineExpression({d: 1.0, u: -float(days_max)}) <= 0, f"cbwin_{j}"
        # whole days in a window that is not: a unit's last day gives only the window's remaining hours
        # (30 h: one day and 6 h), so unit-hours <= rem x D + (24 - rem) x floor(window / 24) x U
        if rem > 1e-9:
            m += pulp.LpAffineExpression({**terms, d: -rem, u: -(24.0 - rem) * f_days}) <= 0, f"cbrem_{j}"
        for i, v in enumerate(cb_at_once[(wn, ok)]):
            m += pulp.LpAffineExpression({v: 1.0, u: -1.0}) <= 0, f"cbonce_{j}_{i}"
        usd = float(cb_offer[ok]["usd_per_hour"]) * k * 24.0
        V.cost_terms[d] = V.upfront_terms[d] = V.commitment_terms[d] = usd
        first = next((p.index for p in periods if p.start_month <= w.start_month < p.end_month), 0)
        cash = V.cash_terms.setdefault(first, {})
        cash[d] = cash.get(d, 0.0) + usd
    serve_ok = sorted({ok for ok, _ in cb_serve})
    for j, ok in enumerate(serve_ok):
        # serving on capacity blocks: instances bought for a window of whole periods (at most 5 months), paid whole
        # in its first month; the blocks covering a period hold what runs in each of its blocks
        cover: dict[int, dict] = {}
        for wi, (a, b) in enumerate(windows):
            n = V.CB[("window", ok, a, b)] = pulp.LpVariable(f"CBW_{j}_{wi}", lowBound=0,
                                                             upBound=CAPACITY_BLOCK_MAX_INSTANCES, cat=cat_int)
            usd = float(cb_offer[ok]["usd_per_hour"]) * 24.0 * _block_days_of(b - a)
            V.cost_terms[n] = V.upfront_terms[n] = V.commitment_terms[n] = usd
            pi = next(p.index for p in periods if p.start_month == a)
            cash = V.cash_terms.setdefault(pi, {})
            cash[n] = cash.get(n, 0.0) + usd
            for p in periods:
                if a <= p.start_month and p.end_month <= b:
                    cover.setdefault(p.index, {})[n] = -1.0
        for (ok2, pi), by_block in cb_serve.items():
            if ok2 != ok:
                continue
            for bi, terms in by_block.items():
                m += pulp.LpAffineExpression({**terms, **cover.get(pi, {})}) <= 0, f"cbserve_{j}_{bi}"
    if problem.max_instances is not None:
        # committed instances count in every block of the periods they cover
        for k in keys:
            s = slots[k]
            for bi, b in enumerate(problem.blocks):
                p = problem.period_of(b)
                if s.start_month <= p.start_month < s.end_month:
                    q = quota.setdefault((spot_group(s.offer), bi), {})
                    q[V.N[k]] = q.get(V.N[k], 0.0) + 1.0
        for j, ((g, bi), terms) in enumerate(sorted(quota.items(), key=lambda kv: (kv[0][0], kv[0][1]))):
            m += pulp.LpAffineExpression(terms) <= float(problem.max_instances), f"quota_{j}_{bi}"
    cost = pulp.LpAffineExpression(V.cost_terms)
    bg = problem.budgets
    if with_budgets:
        if bg.monthly is not None:
            for pi, terms in sorted(V.cash_terms.items()):
                m += pulp.LpAffineExpression(terms) <= float(bg.monthly) + 0.005, f"budget_{pi}"
        if bg.total is not None:
            m += cost <= float(bg.total) + 0.005, "budget_total"
        if bg.upfront is not None:
            m += pulp.LpAffineExpression(V.upfront_terms) <= float(bg.upfront) + 0.005, "max_upfront"
        if bg.commitment is not None:
            m += pulp.LpAffineExpression(V.commitment_terms) <= float(bg.commitment) + 0.005, "max_commitment"
    if roi:
        m += pulp.LpAffineExpression({**V.value_terms, **{v: -lam * a for v, a in V.cost_terms.items()}})
    else:
        m += cost
    return m, V


def _safe(name: str) -> str:
    return "".join(ch if ch.isalnum() else "_" for ch in name)[:40]


# ------------------------------------------------------------------------------------------------ solving
from optimizer.solve import _SOLVE_THREADS, SolveReport, _parse_cbc_log, resolve_solver  # noqa: E402,F401
from optimizer.solve import run_solver as solve_fleet  # noqa: E402  (the fleet's name for it)


@dataclass
class FleetSolution:
    """Variable values of a solved model (non-zero only), its cost and value recomputed from them."""

    report: SolveReport
    N: dict[str, int] = field(default_factory=dict)
    A: dict[tuple[str, str, int], float] = field(default_factory=dict)
    X: dict[tuple[str, str, int], float] = field(default_factory=dict)
    S: dict[tuple[str, int], float] = field(default_factory=dict)
    Z: dict[str, float] = field(default_factory=dict)
    CB: dict[tuple, int] = field(default_factory=dict)   # capacity blocks, as FleetVars.CB
    SP: dict[str, float] = field(default_factory=dict)   # savings plans: slot key -> USD/h committed
    cost: float = 0.0
    value: float = 0.0


def _val(v) -> float:
    x = v.value()
    return 0.0 if x is None else float(x)


def read_solution(problem: FleetProblem, V: FleetVars, report: SolveReport) -> FleetSolution:
    """Read the variables (rounding integers) and recompute cost and value from them (not from the objective)."""
    sol = FleetSolution(report=report)
    if report.status not in ("optimal", "time_limit"):
        return sol
    for k, v in V.N.items():
        n = round(_val(v))
        if n > 0:
            sol.N[k] = n
    for k, v in V.CB.items():
        n = round(_val(v)) if v.cat == "Integer" else _val(v)
        if n > 1e-9:
            sol.CB[k] = n
    for k, v in V.SP.items():
        x = _val(v)
        if x > 1e-9:
            sol.SP[k] = x
    for store, src in ((sol.A, V.A), (sol.X, V.X)):
        for k, v in src.items():
            x = _val(v)
            if v.cat == "Integer":
                x = float(round(x))
            if x > 1e-9:
                store[k] = x
    for k, v in V.S.items():
        sol.S[k] = _val(v)
    for k, v in V.Z.items():
        sol.Z[k] = round(_val(v))
    sol.cost = fleet_cost(problem, sol)
    sol.value = fleet_value(problem, sol)
    return sol


def _cand_index(problem: FleetProblem) -> dict[tuple[str, str], Candidate]:
    return {(w, c.okey): c for w, cs in problem.cands.items() for c in cs}


def fleet_cost(problem: FleetProblem, sol: FleetSolution) -> float:
    """USD over the horizon: commitments (whole term less the leftover value) + hourly units x rate x block hours x
    months of their period."""
    idx = _cand_index(problem)
    total = sum(problem.slot_cost(problem.slots[k]) * n for k, n in sol.N.items())
    for (w, ok, bi), x in sol.X.items():
        b = problem.blocks[bi]
        total += idx[(w, ok)].usd_per_unit_hour * b.hours * problem.months(b) * x
    total += sum(problem.plan_slot_cost(problem.plan_slots[k]) * x for k, x in sol.SP.items())
    total += sum(usd for _, usd, _ in capacity_block_purchases(problem, sol))
    return total


def capacity_block_purchases(problem: FleetProblem, sol: FleetSolution) -> list[tuple[tuple, float, int]]:
    """The capacity blocks of a plan: (key of ``sol.CB``, USD paid whole, month bought (0-based)) each. A training
    job's unit-days cost the block's rate x instances per unit x 24 h each, bought in the job's first month; a
    service's instances for a window of months the rate x the block's days x 24 h each, bought in its first month
    (``("job_units", ...)`` keys, the units a job runs at once, cost nothing of their own)."""
    idx = _cand_index(problem)
    offers = {c.okey: c for cs in problem.cands.values() for c in cs}
    wl = {w.name: w for w in problem.workloads}
    out = []
    for key, n in sol.CB.items():
        if key[0] == "job":
            _, wn, ok = key
            c = idx[(wn, ok)]
            out.append((key, float(c.offer["usd_per_hour"]) * c.instances_per_unit * 24.0 * n, wl[wn].start_month))
        elif key[0] == "window":
            _, ok, a, b = key
            out.append((key, float(offers[ok].offer["usd_per_hour"]) * 24.0 * _block_days_of(b - a) * n, a))
    return out


def fleet_value(problem: FleetProblem, sol: FleetSolution) -> float:
    """USD of value over the horizon: served tokens x value per million + finished training jobs x their value."""
    total = 0.0
    for w in problem.workloads:
        if w.training:
            done = sol.Z.get(w.name, 1.0 if problem.objective == "cost" else 0.0)
            total += (w.value_usd or 0.0) * done
        else:
            for bi, b in enumerate(problem.blocks):
                if not problem.active(w, b):
                    continue
                served = sol.S.get((w.name, bi), b.demand.get(w.name, 0.0))
                total += (w.value_per_million_tokens or 0.0) * 3600.0 * b.hours * problem.months(b) * served / 1e6
    return total


def money(problem: FleetProblem, sol: FleetSolution) -> dict[str, Any]:
    """The plan's money over the horizon: total, average per month, upfront, commitment over the terms, cash paid in
    each month of the horizon, what the commitments still cost after it and the leftover value credited."""
    H = problem.horizon_months
    idx = _cand_index(problem)
    cash = [0.0] * H
    after = 0.0
    upfront = commitment = credit = 0.0
    for k, n in sol.N.items():
        s = problem.slots[k]
        up, rec = commitment_parts(s.offer)
        upfront += up * n
        commitment += committed_rate(s.offer) * HOURS_PER_MONTH * s.term_months * n
        cash[s.start_month] += up * n
        for mo in range(s.start_month, s.end_month):
            if mo < H:
                cash[mo] += rec * HOURS_PER_MONTH * n
            else:
                after += rec * HOURS_PER_MONTH * n
        outlive = max(0, s.end_month - H)
        credit += problem.leftover_value * committed_rate(s.offer) * HOURS_PER_MONTH * outlive * n
    for (w, ok, bi), x in sol.X.items():
        b = problem.blocks[bi]
        p = problem.period_of(b)
        per_month = idx[(w, ok)].usd_per_unit_hour * b.hours * x
        for mo in range(p.start_month, p.end_month):
            cash[mo] += per_month
    for k, x in sol.SP.items():
        s = problem.plan_slots[k]
        whole = HOURS_PER_MONTH * s.term_months * x
        upfront += s.upfront_share * whole
        commitment += whole
        cash[s.start_month] += s.upfront_share * whole
        for mo in range(s.start_month, s.end_month):
            if mo < H:
                cash[mo] += (1.0 - s.upfront_share) * HOURS_PER_MONTH * x
            else:
                after += (1.0 - s.upfront_share) * HOURS_PER_MONTH * x
        credit += problem.leftover_value * HOURS_PER_MONTH * max(0, s.end_month - H) * x
    for _, _, _, usd, first, _ in capacity_block_parts(problem, sol):
        upfront += usd
        commitment += usd
        cash[first] += usd  # each block paid in the month it starts
    total = sol.cost
    return {"total_usd": round(total, 2), "monthly_usd": round(total / H, 2), "upfront_usd": round(upfront, 2),
            "commitment_usd": round(commitment, 2), "cash_by_month_usd": [round(c, 2) for c in cash],
            "after_horizon_usd": round(after, 2), "leftover_credit_usd": round(credit, 2),
            "max_month_usd": round(max(cash) if cash else 0.0, 2)}


#: The share of a solve's time limit the shared-commitment enumeration (optimizer/shared.py) may use before the
#: MILP gets the rest.
SHARED_TIME_SHARE = 0.4


def solve_cost(problem: FleetProblem, *, solver="auto", time_limit_s=60.0, gap_rel=0.001,
               allowed: set[str] | None = None, exact: bool = True) -> FleetSolution:
    """Minimum-cost plan. Serving workloads that share nothing (``optimizer.exact.separable``): exactly, by
    enumeration, no MILP (``exact=False`` skips it). Otherwise, without placement rules (or when no serving
    workload could be split) one MILP; with them, :func:`_solve_placed`. The enumerations keep to
    ``time_limit_s`` too (checked between workloads): past it they give no plan, and what is left of the time goes
    to the solver (an explanation given 2 s spent 10 s in the apart plan of 30 workloads)."""
    t_start = time.perf_counter()
    t_end = t_start + float(time_limit_s)

    def left() -> float:
        return max(0.0, t_end - time.perf_counter())

    fallback = None
    if exact:
        from optimizer.exact import solve_separable, solve_within_limits
        from optimizer.shared import solve_shared

        sol = solve_separable(problem, allowed=allowed, deadline=t_end)
        if sol is not None:
            return sol
        # several workloads that can share a commitment: proven (returned), or a plan with its bound when some
        # co-location is past the enumeration's caps (then the MILP's start, and its bound kept)
        # at most SHARED_TIME_SHARE of the time: what it leaves is the MILP's (a breaker's six services in one
        # region spent all 20 s here and left CBC 0.5 s: no plan, where the MILP alone found one in 16 s)
        fallback = solve_shared(problem, allowed=allowed, gap_rel=gap_rel,
                                  deadline=min(t_end, time.perf_counter() + SHARED_TIME_SHARE * float(time_limit_s)))
        if fallback is not None and fallback.report.status == "optimal":
            return fallback
        sol = solve_within_limits(problem, allowed=allowed, deadline=t_end, gap_rel=gap_rel)
        if sol is not None:
            return sol
        if fallback is None:
            from optimizer.exact import plan_apart, separable

            if separable(problem, allowed) is not None:  # else it was just tried, and its frontiers are too big
                # each workload apart: the MILP's start and its fallback (together never above apart)
                fallback = plan_apart(problem, allowed=allowed, deadline=t_end)
    if problem.placement != "any" and _placed(problem):
        sol = _solve_placed(problem, solver=solver, time_limit_s=left(), gap_rel=gap_rel, allowed=allowed,
                            start=fallback)
        if fallback is not None and sol.report.status == "time_limit" and sol.cost > 0:
            # the bound of committed instances charged as if always used (optimizer.exact) may be tighter, and
            # the shared enumeration's bound tighter still
            from optimizer.exact import shared_lower_bound

            # the bound only narrows the reported gap: a tenth of the limit past it at most, else the gap stands
            lb = shared_lower_bound(problem, allowed=allowed, deadline=t_end + 0.1 * float(time_limit_s))
            if fallback.report.bound is not None:
                lb = max(lb or 0.0, float(fallback.report.bound))
            if lb is not None and lb > (sol.report.bound or 0.0):
                gap = max(0.0, (sol.cost - lb) / sol.cost)
                sol.report = dataclasses.replace(sol.report, bound=lb, gap=gap,
                                                 status="optimal" if gap <= gap_rel + 1e-9 else "time_limit")
        return sol
    m, V = build_fleet_model(problem, allowed=allowed)
    sol = read_solution(problem, V, solve_fleet(m, solver=solver, time_limit_s=max(left(), 0.5), gap_rel=gap_rel))
    if fallback is not None and (sol.report.status not in ("optimal", "time_limit") or
                                   fallback.cost < sol.cost - 1e-9):
        # the enumeration's plan (shared or apart) beats what the MILP found in its time: it, with the better bound
        lb = min(fallback.cost, max(float(fallback.report.bound or 0.0),
                                      float(sol.report.bound or 0.0) if sol.report.status in ("optimal", "time_limit")
                                      else 0.0))
        gap = max(0.0, (fallback.cost - lb) / fallback.cost) if fallback.cost > 0 else 0.0
        proven = gap <= gap_rel + 1e-9
        # not proven: the MILP ran and did no better in its time — said so, the solver named (a fresh user read
        # "exact enumeration (no MILP) time_limit, 0.019 s" after 17.5 s of MILP)
        fallback.report = dataclasses.replace(
            fallback.report, bound=lb, gap=gap, status="optimal" if proven else "time_limit",
            solver=fallback.report.solver if proven else solver, seconds=time.perf_counter() - t_start,
            message=(fallback.report.message if proven else
                     f"the MILP found no better plan in its time; this is {fallback.report.message}"))
        return fallback
    return sol


def _placed(problem: FleetProblem) -> list[FleetWorkload]:
    """Serving workloads whose candidates lie in more than one placement group."""
    return [w for w in problem.workloads if not w.training and not w.divisible and
            len({placement_group(c.offer, problem.placement) for c in problem.cands.get(w.name, [])}) > 1]


def as_unplaced(problem: FleetProblem) -> FleetProblem:
    """The problem without the one-group placement rule, its candidates pruned across groups (a relaxation of the
    placed problem; exact when each serving workload's candidates are already in one group)."""
    kept = problem.cands if problem.max_instances is not None else prune_fleet(
        problem.cands, problem.workloads, problem.blocks, problem.work_flops, problem.spot_capacity, "any",
        problem.spread, problem.single_slot_costs(), problem.payment_matters())[0]
    return problem.replace(cands=kept, placement="any")


def fix_placement(problem: FleetProblem, sol: FleetSolution) -> FleetProblem:
    """The problem with each placed serving workload kept in the placement group the plan ``sol`` uses (its
    candidates, unpruned ones included, filtered), without placement binaries: the explanations price alternatives
    in the plan's own regions."""
    placed = _placed(problem)
    if problem.placement == "any" or not placed:
        return problem
    keep = {w.name: set(_groups_used(problem, sol, w.name)) for w in placed}

    def filt(cands):
        return {w: [c for c in cs if w not in keep or not keep[w] or placement_group(c.offer, problem.placement) in keep[w]]
                for w, cs in cands.items()}
    out = as_unplaced(problem.replace(cands=filt(problem.cands)))
    out.unpruned = filt(problem.unpruned) if problem.unpruned else None
    return out


def _dominated_groups(problem: FleetProblem) -> set[tuple]:
    """Placement groups no serving workload needs: group g2 is dominated by g1 when every offer of g2 that some
    workload can use (instance type, pricing, payment) is in g1 too, at no higher price (spot: its cheapest zone).
    The same instance type hosts the same replicas anywhere, so a plan placing a workload in g2 maps unit for unit
    onto g1 at no more cost (training jobs, not placed, keep every group). Of identical groups the first is kept.
    Returns the dominated groups."""
    price: dict[tuple, dict[tuple, float]] = {}
    units: dict[tuple, dict[tuple, set]] = {}  # what each workload's unit of the offer is, in the group
    for w, cs in problem.cands.items():
        for c in cs:
            o = c.offer
            g = placement_group(o, problem.placement)
            k = (str(o["instance_type"]), str(o["pricing"]), str(o.get("payment") or ""))
            d = price.setdefault(g, {})
            d[k] = min(d.get(k, math.inf), float(o["usd_per_hour"]))
            units.setdefault(g, {}).setdefault(k, set()).add(
                (w, c.instances_per_unit, c.replicas_per_unit, round(c.throughput_per_unit, 9)))
    groups = sorted(price, key=lambda g: (sum(price[g].values()), g))
    out: set[tuple] = set()
    for i, g2 in enumerate(groups):
        for g1 in groups[:i]:
            if g1 in out:
                continue
            p1, p2 = price[g1], price[g2]
            # the same offer in g1, no dearer, and hosting every workload alike (an instance type sized otherwise in
            # another region — other memory or links in its rows — is not the same unit: a property test found a
            # plan called optimal at $10,862.40 where $10,618.00 was feasible)
            if all(k in p1 and p1[k] <= v * (1 + 1e-12) and units[g1][k] == units[g2][k] for k, v in p2.items()):
                out.add(g2)
                break
    return out


def _groups_used(problem: FleetProblem, sol: FleetSolution, w: str, placement: str | None = None) -> dict[tuple, float]:
    """Placement group (of ``placement``, default the problem's) -> what serving workload w spends or uses in it
    (committed units weigh their offer's price)."""
    idx = _cand_index(problem)
    placement = placement or problem.placement
    out: dict[tuple, float] = {}
    for store in (sol.A, sol.X):
        for (wn, ok, bi), x in store.items():
            if wn == w and x > 1e-9:
                c = idx[(wn, ok)]
                g = placement_group(c.offer, placement)
                out[g] = out.get(g, 0.0) + c.usd_per_unit_hour * problem.blocks[bi].hours * x
    return out


def _solve_placed(problem: FleetProblem, *, solver, time_limit_s, gap_rel, allowed,
                  start: FleetSolution | None = None) -> FleetSolution:
    """Minimum cost with each serving workload in one placement group, by branch and bound on the placement.

    A node allows each placed serving workload a set of groups. An inner node is bounded by its LP relaxation
    without the one-group rule (no placement binaries; candidates pruned across the allowed groups); a *leaf* (every
    workload down to one group) is solved as a MILP — small, since its candidates lie in one group each — and is
    feasible for the placement. An inner node whose bound is not below the incumbent is cut; else the workload with
    the most allowed groups is branched on: one child per group its LP solution uses (the most used first), and one
    child with those groups removed. Nodes are explored best bound first, so the plan is proven optimal within
    ``gap_rel`` — or, at the time limit, reported with its true gap (the smallest open bound). ``start``: a
    feasible plan to begin with (each workload planned apart, ``optimizer.exact``): nodes whose bound is not below
    it are cut from the first, and it is the plan if nothing beats it.
    """
    import heapq

    t0 = time.perf_counter()
    t_end = t0 + time_limit_s
    base = problem.cands
    serving = _placed(problem)
    all_groups = {w.name: frozenset(placement_group(c.offer, problem.placement) for c in base.get(w.name, []))
                  for w in serving}
    if problem.spread != "zones" and problem.max_instances is None:
        drop = _dominated_groups(problem)
        all_groups = {w: (gs - drop) or gs for w, gs in all_groups.items()}
    costs = problem.single_slot_costs()

    def node_problem(allow: dict[str, frozenset]) -> FleetProblem:
        cands = {w: ([c for c in cs if placement_group(c.offer, problem.placement) in allow[w]] if w in allow else cs)
                 for w, cs in base.items()}
        kept, _ = (prune_fleet(cands, problem.workloads, problem.blocks, problem.work_flops, problem.spot_capacity,
                               "any", problem.spread, costs, problem.payment_matters())
                   if problem.max_instances is None else (cands, 0))
        return problem.replace(cands=kept, placement="any")

    def left() -> float:
        return max(0.5, t_end - time.perf_counter())

    def relax(sub):
        """(LP bound, what each placed workload spends per group in the LP solution), (None, {}) when the LP is
        infeasible, or (NaN, {}) when it was not solved in its time."""
        m, V = build_fleet_model(sub, allowed=allowed, relax=True)
        rep = solve_fleet(m, solver=solver, time_limit_s=left(), gap_rel=gap_rel)
        if rep.status != "optimal":
            return (None if rep.status == "infeasible" else math.nan), {}
        sol = FleetSolution(report=rep)
        for store, src in ((sol.A, V.A), (sol.X, V.X)):
            for k, v in src.items():
                x = _val(v)
                if x > 1e-9:
                    store[k] = x
        return float(rep.objective or 0.0), {w.name: _groups_used(sub, sol, w.name, problem.placement) for w in serving}

    def leaf(sub):
        m, V = build_fleet_model(sub, allowed=allowed)
        rep = solve_fleet(m, solver=solver, time_limit_s=left(), gap_rel=gap_rel)
        sol = read_solution(sub, V, rep)
        if rep.status == "time_limit":
            return sol, (rep.bound if rep.bound is not None else 0.0)
        return sol, (rep.bound if rep.bound is not None else sol.cost)

    nblocks = len(problem.blocks)

    def node_seconds(allow: dict[str, frozenset]) -> float:
        """The least a node's solve can take (:func:`model_seconds` of its candidates before pruning)."""
        return model_seconds(nblocks, {w: [c for c in cs if w not in allow or
                                           placement_group(c.offer, problem.placement) in allow[w]]
                                       for w, cs in base.items()})

    best: FleetSolution | None = start
    open_bounds: list[float] = []
    counter = nodes = lps = milps = 0
    heap: list = [(0.0, 0, {w.name: all_groups[w.name] for w in serving})]
    timed_out = False
    while heap:
        bound, _, allow = heapq.heappop(heap)
        if best is not None and bound >= best.cost * (1 - gap_rel) - 1e-6:
            continue
        if time.perf_counter() + node_seconds(allow) >= t_end:
            # not started when it could not end in time: its bound stays open (the plan keeps to its time limit)
            open_bounds.append(bound)
            timed_out = True
            continue
        nodes += 1
        sub = node_problem(allow)
        if all(len(g) == 1 for g in allow.values()):
            milps += 1
            sol, b2 = leaf(sub)
            if sol.report.status == "infeasible":
                continue  # no plan in this placement
            if sol.report.status not in ("optimal", "time_limit"):
                # no plan found in its time (not_solved): its bound stays open. It was dropped as if infeasible, and
                # a dearer leaf was then called optimal (CBC, 240 blocks, 8 s: $46,643 "optimal" for a $31,799
                # optimum; tests/test_exact.py::test_a_long_profile_is_exact_where_the_milp_is_slow)
                open_bounds.append(bound)
                timed_out = True
                continue
            if sol.report.status == "time_limit":
                open_bounds.append(max(bound, b2))
                timed_out = True
            if best is None or sol.cost < best.cost - 1e-9:
                best = sol
            continue
        lps += 1
        lb, used = relax(sub)
        if lb is None:
            continue  # the relaxation is infeasible: so is every plan below
        if math.isnan(lb):  # not solved in its time: the node's bound stays open (never dropped as infeasible)
            open_bounds.append(bound)
            timed_out = True
            continue
        lb = max(lb, bound)
        if best is not None and lb >= best.cost * (1 - gap_rel) - 1e-6:
            continue
        wname = max((w for w in allow if len(allow[w]) > 1), key=lambda w: (len(used.get(w) or ()) > 1, len(allow[w])))
        g_used = {g: v for g, v in (used.get(wname) or {}).items() if g in allow[wname]}
        children = [frozenset({g}) for g in sorted(g_used, key=lambda g: -g_used[g])]
        rest = allow[wname] - frozenset(g_used)
        if not children:  # the LP gives the workload nothing to serve: any single group will do; split in two
            ordered = sorted(allow[wname])
            children, rest = [frozenset(ordered[: len(ordered) // 2])], frozenset(ordered[len(ordered) // 2:])
        if rest:
            children.append(rest)
        for ch in children:
            counter += 1
            heapq.heappush(heap, (lb, counter, {**allow, wname: ch}))
    solves = f"{lps} LPs, {milps} MILPs"
    nodes_note = nodes
    if best is None:
        return FleetSolution(report=SolveReport("not_solved" if timed_out else "infeasible", solver=solver,
                                                seconds=time.perf_counter() - t0,
                                                message="no plan meets every constraint with each serving workload "
                                                        "in one placement group" if not timed_out else "time limit"))
    lb = min(open_bounds + [h[0] for h in heap] + [best.cost])
    gap = max(0.0, (best.cost - lb) / best.cost) if best.cost > 0 else 0.0
    status = "optimal" if gap <= gap_rel + 1e-9 and not timed_out else "time_limit"
    # a copy: the start the caller passed keeps its own report (and bound)
    return dataclasses.replace(best, report=dataclasses.replace(
        best.report, solver=solver, status=status, gap=gap if status == "time_limit" else 0.0, bound=lb,
        seconds=time.perf_counter() - t0, message=f"placement branch and bound: {nodes_note} nodes, {solves}"))


def solve_roi(problem: FleetProblem, *, solver="auto", time_limit_s=60.0, gap_rel=0.001,
              max_iterations: int = 30, tol: float = 1e-6) -> tuple[FleetSolution, list[dict[str, float]]]:
    """Maximum ROI = value / cost - 1, exactly, by Dinkelbach iterations over MILPs.

    lambda_0 = 0; at each step solve max value - lambda x cost (a MILP), then lambda <- value / cost of that
    plan; stop when the optimum of the step is within ``tol`` x cost of 0 (then lambda is the best value/cost
    ratio; Dinkelbach 1967, "On nonlinear fractional programming"). Returns (the plan, the iterations:
    lambda, value, cost, F(lambda)). A plan with zero cost has no ROI: returned as is (nothing is worth buying).
    """
    lam = 0.0
    its: list[dict[str, float]] = []
    best: FleetSolution | None = None
    first: FleetSolution | None = None
    deadline = time.perf_counter() + time_limit_s
    for _ in range(max_iterations):
        m, V = build_fleet_model(problem, lam=lam)
        left = max(1.0, deadline - time.perf_counter())
        rep = solve_fleet(m, solver=solver, time_limit_s=left, gap_rel=gap_rel)
        sol = read_solution(problem, V, rep)
        if rep.status not in ("optimal", "time_limit"):
            return (best or sol), its
        first = first or sol
        f = sol.value - lam * sol.cost
        its.append({"lambda": lam, "value": round(sol.value, 6), "cost": round(sol.cost, 6), "F": round(f, 6)})
        # keep the plan with the best value/cost so far: at the optimum lambda the empty plan also scores F = 0
        if sol.cost > 1e-9 and (best is None or sol.value / sol.cost > best.value / best.cost):
            best = sol
        if sol.cost <= 1e-9 or abs(f) <= tol * max(sol.cost, 1.0) or time.perf_counter() >= deadline:
            break
        lam = sol.value / sol.cost
    if best is not None and best.value < best.cost and all(w.min_replicas <= 0 for w in problem.workloads):
        # every plan loses money (ROI < 0) and nothing is mandatory: buying nothing is the better answer
        return FleetSolution(report=best.report), its
    return (best or first), its  # type: ignore[return-value]


# ------------------------------------------------------------------------------------------------ the answer
@dataclass
class FleetLine:
    """A line of a plan.

    Money (USD): ``usd_per_hour`` the effective (amortized) rate of one instance; ``monthly_usd`` what the line costs
    in each month it runs (commitments: the recurring fee; hourly lines: their hours that month);
    ``total_usd`` what it costs over the horizon (commitments: everything paid over the term less the leftover
    value); ``upfront_usd`` paid at purchase; ``commitment_usd`` owed over the whole term (0 for hourly lines).
    Time: ``start_month``/``end_month`` 1-based months of the horizon the line covers (a commitment's term may end
    after the horizon: ``term_end`` "YYYY-MM", the last month it is paid); ``hours`` instance-hours per instance in
    a month it runs (commitments: 730, billed whatever the use); ``count`` instances (committed: bought; hourly:
    the most running at once). Layout: ``replicas`` the most replicas the line hosts at once; ``gpus_per_replica``,
    ``tensor_parallel``, ``pipeline_parallel`` of its (first) workload's replica. ``utilization``: committed lines,
    the share of their billed hours within the horizon doing work. ``break_even_utilization``: committed lines, the
    share of their hours inside the horizon they must be busy to cost no more than on-demand — what the plan counts
    for the term (the whole of it, less the leftover value) / (the on-demand rate x those hours); a 3-year term at
    0.35 of on-demand on a 24-month horizon breaks even at 0.525, not 0.35 (a fresh user's sign-off found it).
    """

    provider: str
    region: str
    zone: str
    instance_type: str
    pricing: str
    payment: str
    count: int
    hours: float
    usd_per_hour: float
    monthly_usd: float
    gpu_model: str
    gpu_count: float
    gpu_memory_gib: float
    workloads: list[str]
    utilization: float | None
    break_even_utilization: float | None
    upfront_usd: float
    commitment_usd: float
    source: str
    as_of: str
    estimated: bool
    total_usd: float = 0.0
    start_month: int = 1
    end_month: int = 1
    term_end: str = ""
    replicas: int = 0
    gpus_per_replica: float = 0.0
    tensor_parallel: int = 1
    pipeline_parallel: int = 1
    fabric: str = ""
    on_demand_usd_per_hour: float | None = None  # committed lines: the same instance type's on-demand rate there
    offering_class: str = ""  # reservations: standard | convertible (AWS); "" otherwise (records.OFFERING_CLASSES)
    days: int = 0  # capacity blocks: the block's length in days (paid whole when bought)
    covered_by: str = ""  # instances run under a savings plan: that plan's scope (its line carries the cost)
    scope: str = ""  # a savings plan's line: the scope it covers (optimizer.fleet.savings_plan_scope)
    # serving lines (issue 10): the replica's precision, batch (sequences per replica), mean TTFT and TPOT (ms)
    precision: str = ""
    batch: int = 0
    ttft_ms: float | None = None
    tpot_ms: float | None = None
    # training lines (issue 11): the job's parallel layout and expected MFU
    training_layout: str = ""
    mfu: float | None = None


@dataclass
class FleetResult:
    """The plan and its explanation (what `gpuopt recommend` renders)."""

    status: str
    objective: str = "cost"
    recurring: bool = True
    horizon_months: int = 1
    horizon_note: str = ""
    start_month: str = ""
    lines: list[FleetLine] = field(default_factory=list)
    total_usd: float = 0.0
    monthly_usd: float = 0.0
    upfront_usd: float = 0.0
    commitment_usd: float = 0.0
    cash_by_month_usd: list[float] = field(default_factory=list)
    after_horizon_usd: float = 0.0
    leftover_value: float = 0.0
    leftover_credit_usd: float = 0.0
    max_month_usd: float = 0.0
    value_usd: float | None = None
    net_value_usd: float | None = None
    roi: float | None = None
    dinkelbach: list[dict[str, float]] = field(default_factory=list)
    workloads: list[dict[str, Any]] = field(default_factory=list)
    blocks: list[dict[str, Any]] = field(default_factory=list)
    strategies: dict[str, dict[str, Any]] = field(default_factory=dict)
    savings_vs_on_demand_usd: float | None = None
    savings_vs_on_demand_pct: float | None = None
    commitment: dict[str, float] = field(default_factory=dict)
    marginal: dict[str, Any] = field(default_factory=dict)
    next_best: list[dict[str, Any]] = field(default_factory=list)
    demand_sensitivity: list[dict[str, Any]] = field(default_factory=list)
    binding: list[str] = field(default_factory=list)
    rules: list[str] = field(default_factory=list)
    reason: dict[str, Any] | None = None
    notes: list[str] = field(default_factory=list)
    solver: dict[str, Any] = field(default_factory=dict)

    @property
    def feasible(self) -> bool:
        return self.status in ("optimal", "time_limit")

    @property
    def gap(self) -> float | None:
        return self.solver.get("gap")

    @property
    def total_monthly_usd(self) -> float:
        """The average per month over the horizon (historical name)."""
        return self.monthly_usd

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["feasible"] = self.feasible
        d["gap"] = self.gap
        return d


def fleet_lines(problem: FleetProblem, sol: FleetSolution, od_rates: dict) -> list[FleetLine]:
    """The plan's lines, the dearest offer first and each offer's lines in month order: one per commitment bought
    (offer and start month) and one per hourly offer and stretch of periods it runs alike in."""
    idx = _cand_index(problem)
    H = problem.horizon_months
    start = problem.start_date
    lines = []
    for sk, n in sol.N.items():
        s = problem.slots[sk]
        o = s.offer
        busy = 0.0
        users: dict[str, Candidate] = {}
        reps_by_block: dict[int, float] = {}
        for (w, k, bi), a in sol.A.items():
            if k != s.okey:
                continue
            p = problem.period_of(problem.blocks[bi])
            if not (s.start_month <= p.start_month < s.end_month):
                continue
            c = idx[(w, k)]
            # shared with other slots of the offer covering the period: attribute by this slot's share
            cover = [x for x in problem.covering(k, p) if x in sol.N]
            share = n / sum(sol.N[x] for x in cover) if cover else 1.0
            busy += c.instances_per_unit * a * problem.blocks[bi].hours * p.months * share
            users.setdefault(w, c)
            reps_by_block[bi] = reps_by_block.get(bi, 0.0) + c.replicas_per_unit * a * share
        months_in = max(0, min(s.end_month, H) - s.start_month)
        od = od_rates.get((o["provider"], o["region"], o["instance_type"]))
        up, rec = commitment_parts(o)
        ln = _line(o, n, HOURS_PER_MONTH, rec * HOURS_PER_MONTH * n, users,
                   round(busy / (n * HOURS_PER_MONTH * months_in), 4) if months_in else None,
                   None if not od or not months_in else
                   round(problem.slot_cost(s) / (HOURS_PER_MONTH * months_in) / od, 4), up * n,
                   committed_rate(o) * HOURS_PER_MONTH * s.term_months * n)
        ln.on_demand_usd_per_hour = od or None
        ln.total_usd = round(problem.slot_cost(s) * n, 2)
        ln.start_month, ln.end_month = s.start_month + 1, min(s.end_month, H)
        ln.term_end = month_label(start, s.end_month - 1) if start else f"month {s.end_month}"
        c0 = next(iter(users.values()), None)
        ln.replicas = int(math.floor(n * c0.replicas_per_unit / c0.instances_per_unit + 1e-9)) if c0 else 0
        lines.append(ln)
    hourly: dict[tuple[str, int], dict[str, Any]] = {}
    for (w, ok, bi), x in sol.X.items():
        c = idx[(w, ok)]
        b = problem.blocks[bi]
        p = problem.period_of(b)
        h = hourly.setdefault((ok, p.index), {"offer": c.offer, "per_block": {}, "reps": {}, "cost": 0.0, "users": {}})
        h["per_block"][bi] = h["per_block"].get(bi, 0.0) + x * c.instances_per_unit
        h["reps"][bi] = h["reps"].get(bi, 0.0) + x * c.replicas_per_unit
        h["cost"] += c.usd_per_unit_hour * b.hours * x
        h["users"].setdefault(w, c)
        if problem.workloads_by_name()[w].training:  # a job runs whole units (its layout's GPUs), time-sliced
            h.setdefault("unit_instances", c.instances_per_unit)
            h.setdefault("units", {})[bi] = h.get("units", {}).get(bi, 0.0) + x
    kinds = {c.okey: purchase_kind(c.offer) for cs in problem.cands.values() for c in cs}
    for (w, ok, bi), a in sol.A.items():
        if kinds.get(ok) != "savings_plan":
            continue
        # instances run under a savings plan: listed like hourly lines, their cost on the plan's line
        c = idx[(w, ok)]
        b = problem.blocks[bi]
        p = problem.period_of(b)
        h = hourly.setdefault((ok, p.index), {"offer": c.offer, "per_block": {}, "reps": {}, "cost": 0.0, "users": {},
                                              "covered_by": savings_plan_scope(c.offer)})
        h["per_block"][bi] = h["per_block"].get(bi, 0.0) + a * c.instances_per_unit
        h["reps"][bi] = h["reps"].get(bi, 0.0) + a * c.replicas_per_unit
        h["users"].setdefault(w, c)
    for (ok, pi), h in hourly.items():
        p = problem.periods[pi]  # type: ignore[index]
        peak = max(h["per_block"].values())
        count = max(1, math.ceil(peak - 1e-9))
        if h.get("units") and len(h["users"]) == 1:
            # a training job's unit holds its model only whole: ceil(units) x the unit's instances, fewer hours
            count = max(1, math.ceil(max(h["units"].values()) - 1e-9)) * int(h["unit_instances"])
        inst_hours = sum(v * problem.blocks[bi].hours for bi, v in h["per_block"].items())
        # hours to 6 decimals (60.833333, not 60.83): $/h x hours x count gives $/month to the cent
        ln = _line(h["offer"], count, round(inst_hours / count, 6), h["cost"], h["users"], None, None, 0.0, 0.0)
        ln.total_usd = round(h["cost"] * p.months, 2)
        ln._total_exact = h["cost"] * p.months  # not a field: _merge_periods rounds the sum once
        ln.start_month, ln.end_month = p.start_month + 1, p.end_month
        c0 = next(iter(h["users"].values()))
        ln.replicas = int(math.floor(count * c0.replicas_per_unit / c0.instances_per_unit + 1e-9))
        ln.covered_by = h.get("covered_by", "")
        lines.append(ln)
    lines += _purchase_lines(problem, sol)
    lines = _merge_periods(lines)
    # dearest offer first, each offer's lines together in month order
    offer = lambda ln: (ln.provider, ln.region, ln.zone, ln.instance_type, ln.pricing, ln.payment)  # noqa: E731
    spend: dict[tuple, float] = {}
    for ln in lines:
        spend[offer(ln)] = spend.get(offer(ln), 0.0) + ln.total_usd
    lines.sort(key=lambda ln: (-spend[offer(ln)], offer(ln), ln.start_month))
    return lines


def capacity_block_parts(problem: FleetProblem, sol: FleetSolution) -> list[tuple[tuple, int, int, float, int, int]]:
    """The blocks a plan buys: (key of ``sol.CB``, instances, days, USD, first month, last month) each (months
    0-based, within the horizon). A job's unit-days are split by :func:`capacity_block_split` and its blocks run back
    to back from the job's start (a 182-day block, then the next: each is bought, and paid, in the month it
    starts — AWS sells blocks at most 8 weeks ahead); a service's block covers its window of months."""
    idx = _cand_index(problem)
    offers = {c.okey: c for cs in problem.cands.values() for c in cs}
    H = problem.horizon_months
    out = []
    for key, _, month in capacity_block_purchases(problem, sol):
        n = int(sol.CB[key])
        if key[0] == "job":
            _, wn, ok = key
            c = idx[(wn, ok)]
            k = c.instances_per_unit
            units = int(sol.CB.get(("job_units", wn, ok), 0)) or 1
            start_day = 0
            for u, d in capacity_block_split(n, units):
                at = start_day if u == units else n // units  # the r < units units' extra day comes last
                first = min(H - 1, month + int(at * 24.0 // HOURS_PER_MONTH))
                last = min(H - 1, month + max(1, math.ceil((at + d) * 24.0 / HOURS_PER_MONTH - 1e-9)) - 1)
                out.append((key, u * k, d, float(c.offer["usd_per_hour"]) * 24.0 * d * u * k, first, max(first, last)))
                if u == units:
                    start_day += d
        else:
            _, ok, a, b = key
            d = _block_days_of(b - a)
            out.append((key, n, d, float(offers[ok].offer["usd_per_hour"]) * 24.0 * d * n, a, min(H, b) - 1))
    return out


def _purchase_lines(problem: FleetProblem, sol: FleetSolution) -> list[FleetLine]:
    """Lines of the purchases the plan sizes: each capacity block (:func:`capacity_block_parts`: a training job's
    unit-days as blocks AWS sells, back to back; a service's instances for its window of months) and each savings
    plan (USD/h committed; ``count`` 1, ``usd_per_hour`` the commitment)."""
    idx = _cand_index(problem)
    offers = {c.okey: c for cs in problem.cands.values() for c in cs}
    wl = problem.workloads_by_name()
    H = problem.horizon_months
    lines: list[FleetLine] = []
    info: dict[tuple, tuple] = {}  # key -> (candidate, users, utilization)
    for key in sol.CB:
        n = sol.CB[key]
        if key[0] == "job":
            _, wn, ok = key
            c = idx[(wn, ok)]
            used = sum(a * problem.before_deadline(wl[wn], problem.blocks[bi]) * problem.months(problem.blocks[bi])
                       for (w2, o2, bi), a in sol.A.items() if w2 == wn and o2 == ok)
            info[key] = (c, {wn: c}, round(min(1.0, used / (24.0 * n)), 4) if n else None)
        elif key[0] == "window":
            _, ok, a, b = key
            c = offers[ok]
            days = _block_days_of(b - a)
            users = {}
            busy = 0.0
            for (w2, o2, bi), x in sol.A.items():
                p = problem.period_of(problem.blocks[bi])
                if o2 == ok and a <= p.start_month and p.end_month <= b:
                    users.setdefault(w2, idx[(w2, o2)])
                    # this window's share of what runs on the blocks covering the period
                    cover = sum(v for kk, v in sol.CB.items() if kk[0] == "window" and kk[1] == ok
                                and kk[2] <= p.start_month and p.end_month <= kk[3])
                    busy += idx[(w2, o2)].instances_per_unit * x * problem.blocks[bi].hours * p.months * (
                        n / cover if cover else 1.0)
            info[key] = (c, users, round(min(1.0, busy / (n * days * 24.0)), 4) if n else None)
    for key, inst, days, part_usd, first, last in capacity_block_parts(problem, sol):
        c, users, util = info[key]
        o = c.offer
        ln = _line(o, inst, 24.0 * days, part_usd, users, util, None, part_usd, part_usd)
        ln.total_usd = round(part_usd, 2)
        ln.days = int(days)
        ln.start_month, ln.end_month = first + 1, last + 1
        # the last month the block runs (a block of 35 days bought in month 1 ends in month 2)
        ln.term_end = month_label(problem.start_date, last) if problem.start_date else f"month {last + 1}"
        c0 = next(iter(users.values()), c)
        ln.replicas = int(math.floor(inst * c0.replicas_per_unit / c0.instances_per_unit + 1e-9))
        lines.append(ln)
    spend: dict[str, float] = {}
    for (w, ok, bi), a in sol.A.items():
        c = idx[(w, ok)]
        if purchase_kind(c.offer) == "savings_plan":
            b = problem.blocks[bi]
            key = f"{savings_plan_scope(c.offer)}@{b.period}"
            spend[key] = spend.get(key, 0.0) + c.usd_per_unit_hour * a * b.hours * problem.months(b)
    for k, x in sol.SP.items():
        s = problem.plan_slots[k]
        o = s.offer
        _, pricing, payment, cls, region, family = s.scope.split("|")
        used = sum(v for kk, v in spend.items() if kk.split("@")[0] == s.scope
                   and s.start_month <= problem.periods[int(kk.split("@")[1])].start_month < s.end_month)
        months_in = max(0, min(s.end_month, H) - s.start_month)
        whole = HOURS_PER_MONTH * s.term_months * x
        ln = FleetLine(provider=str(o["provider"]), region="all regions" if region == "*" else region, zone="",
                       instance_type="any instance type" if family == "*" else f"{family} family",
                       pricing=pricing, payment=payment, count=1, hours=HOURS_PER_MONTH, usd_per_hour=round(x, 6),
                       monthly_usd=round((1.0 - s.upfront_share) * HOURS_PER_MONTH * x, 2), gpu_model="",
                       gpu_count=0.0, gpu_memory_gib=0.0,
                       workloads=sorted({w for (w, ok, _), a in sol.A.items()
                                         if purchase_kind(idx[(w, ok)].offer) == "savings_plan"
                                         and savings_plan_scope(idx[(w, ok)].offer) == s.scope}),
                       utilization=round(min(1.0, used / (x * HOURS_PER_MONTH * months_in)), 4) if months_in else None,
                       break_even_utilization=None, upfront_usd=round(s.upfront_share * whole, 2),
                       commitment_usd=round(whole, 2), source=str(o.get("source") or ""),
                       as_of=str(o.get("as_of") or ""), estimated=is_estimated(o.get("source") or ""),
                       offering_class=cls)
        ln.total_usd = round(problem.plan_slot_cost(s) * x, 2)
        ln.scope = s.scope
        ln.start_month, ln.end_month = s.start_month + 1, min(s.end_month, H)
        ln.term_end = month_label(problem.start_date, s.end_month - 1) if problem.start_date else f"month {s.end_month}"
        lines.append(ln)
    return lines


def _merge_periods(lines: list[FleetLine]) -> list[FleetLine]:
    """One line for an hourly offer running alike through consecutive periods (same count, hours, monthly cost,
    replicas and workloads): months m..n instead of a line per period. Commitment lines are kept as bought."""
    out: list[FleetLine] = []
    last: dict[tuple, FleetLine] = {}
    for ln in sorted(lines, key=lambda ln: ln.start_month):
        if ln.pricing in COMMITTED or ln.pricing in PURCHASED and not ln.covered_by:
            out.append(ln)
            continue
        key = (ln.provider, ln.region, ln.zone, ln.instance_type, ln.pricing, ln.payment, ln.count, ln.hours,
               ln.monthly_usd, ln.replicas, tuple(ln.workloads))
        prev = last.get(key)
        if prev is not None and prev.end_month + 1 == ln.start_month:
            prev.end_month = ln.end_month
            # the sum of the periods' unrounded totals, rounded once (the lines add up to the plan's total)
            prev._total_exact = getattr(prev, "_total_exact", prev.total_usd) + getattr(ln, "_total_exact", ln.total_usd)
            prev.total_usd = round(prev._total_exact, 2)
            continue
        last[key] = ln
        out.append(ln)
    return out


def _line(o, count, hours, monthly, users: dict[str, Candidate], util, be, upfront, commitment) -> FleetLine:
    c = next(iter(users.values()), None)
    sizing = getattr(c, "sizing", None)
    return FleetLine(provider=o["provider"], region=o["region"], zone=str(o.get("zone") or ""),
                     instance_type=o["instance_type"], pricing=o["pricing"], payment=str(o.get("payment") or ""),
                     count=int(count), hours=float(hours), usd_per_hour=float(o["usd_per_hour"]),
                     monthly_usd=round(monthly, 2), gpu_model=o["gpu_model"], gpu_count=float(o["gpu_count"]),
                     gpu_memory_gib=float(o["gpu_memory_gib"]), workloads=sorted(users), utilization=util,
                     break_even_utilization=be, upfront_usd=round(upfront, 2), commitment_usd=round(commitment, 2),
                     source=str(o.get("source") or ""), as_of=str(o.get("as_of") or ""),
                     estimated=is_estimated(o.get("source") or ""),
                     gpus_per_replica=float(getattr(sizing, "gpus_per_replica", 0.0) or 0.0),
                     tensor_parallel=int(getattr(c, "tensor_parallel", 0) or getattr(sizing, "tensor_parallel", 0)
                                         or max(1, int(getattr(sizing, "gpus_per_replica", 1) or 1))),
                     pipeline_parallel=int(getattr(c, "pipeline_parallel", 0) or getattr(sizing, "pipeline_parallel", 0) or 1),
                     fabric=str(o.get("fabric") or ""), offering_class=_text(o.get("offering_class")),
                     precision=str(getattr(sizing, "precision", None) or "") if sizing is not None and
                     getattr(sizing, "task", "") == "serve" else "",
                     batch=int(getattr(sizing, "concurrency", 0) or 0) if getattr(sizing, "task", "") == "serve" else 0,
                     ttft_ms=_ms(getattr(sizing, "ttft_ms", None)), tpot_ms=_ms(getattr(sizing, "time_per_output_token_ms", None))
                     if getattr(sizing, "task", "") == "serve" else None,
                     training_layout=_layout_text(sizing), mfu=(round(float(sizing.mfu), 4) if getattr(sizing, "mfu", None)
                                                               else None))


def _layout_text(sizing) -> str:
    """A training sizing's layout as text (``TP8 PP16x4v DP128, ZeRO-1, ...``); "" for other sizings."""
    lay = getattr(sizing, "training_layout", None)
    if not lay:
        return ""
    from optimizer.sizing.training import TrainLayout

    return TrainLayout.from_dict(lay).describe()


def _ms(v) -> float | None:
    """A latency in ms rounded for a plan line, or None."""
    return None if v is None else round(float(v), 1)


def _text(v) -> str:
    """A text field of an offer dict ("" for missing: None, NaN, pandas NA)."""
    s = "" if v is None else str(v)
    return "" if s in ("nan", "<NA>", "None") else s


def workload_summaries(problem: FleetProblem, sol: FleetSolution) -> tuple[list[dict], list[dict]]:
    """Per workload (capacity vs demand, work vs need, finish hour, replicas, the replica's sizing) and per block
    (demand vs capacity)."""
    idx = _cand_index(problem)
    cap: dict[tuple[str, int], float] = {}
    reps: dict[tuple[str, int], float] = {}
    used: dict[str, set[str]] = {}
    for store in (sol.A, sol.X):
        for (w, ok, bi), x in store.items():
            c = idx[(w, ok)]
            cap[(w, bi)] = cap.get((w, bi), 0.0) + c.throughput_per_unit * x
            reps[(w, bi)] = reps.get((w, bi), 0.0) + c.replicas_per_unit * x
            used.setdefault(w, set()).add(ok)
    out_w = []
    for w in problem.workloads:
        d: dict[str, Any] = {"name": w.name, "task": w.workload.task, "model": w.workload.model.name,
                             "shapes": sorted({c.shape for c in problem.cands.get(w.name, [])})[:6],
                             "start_month": w.start_month + 1}
        sizing = []
        seen = set()
        for ok in sorted(used.get(w.name, ())):
            c = idx[(w.name, ok)]
            s = c.sizing
            if c.shape in seen:
                continue
            seen.add(c.shape)
            sizing.append({"gpu_shape": c.shape, "gpus_per_replica": float(getattr(s, "gpus_per_replica", 0) or 0),
                           "tensor_parallel": int(getattr(s, "tensor_parallel", 0) or getattr(c, "tensor_parallel", 0) or 1),
                           "pipeline_parallel": int(getattr(s, "pipeline_parallel", 0) or getattr(c, "pipeline_parallel", 0) or 1),
                           "memory_gib_per_replica": round(float(getattr(s, "memory_gib_per_replica", 0) or 0), 2),
                           "tokens_per_second_per_replica": round(float(getattr(s, "tokens_per_second_per_replica", 0) or 0), 2),
                           "replicas_per_instance": c.replicas_per_unit / c.instances_per_unit})
            if getattr(s, "task", "") == "serve":
                sizing[-1].update({"precision": s.precision, "engine": s.engine, "batch": s.concurrency,
                                   "ttft_ms": _ms(s.ttft_ms), "tpot_ms": _ms(s.time_per_output_token_ms),
                                   "ttft_target_ms": s.ttft_target_ms, "tpot_target_ms": s.tpot_target_ms,
                                   "input_tokens": s.input_tokens, "output_tokens": s.output_tokens,
                                   "estimate_source": s.estimate_source})
            if getattr(s, "task", "") in ("train", "finetune") and getattr(s, "training_layout", None):
                lay = s.training_layout
                text = _layout_text(s)
                job = int(s.job_gpus or s.gpus_per_replica or 1)
                per_gpu = s.tokens_per_second_per_replica / max(s.gpus_per_replica, 1e-12)
                wall = (float(w.workload.tokens) / (per_gpu * job) / 3600.0 / s.goodput) if s.goodput and per_gpu else None
                sizing[-1].update({"layout": dict(lay), "layout_text": text, "framework": s.framework,
                                   "precision": s.precision, "mfu": round(float(s.mfu or 0.0), 4),
                                   "job_gpus": job, "step_time_s": round(float(s.step_time_s or 0.0), 4),
                                   "tokens_per_second_per_gpu": round(per_gpu, 2),
                                   "goodput": round(float(s.goodput or 0.0), 4),
                                   "goodput_spot": round(float(s.goodput_spot or 0.0), 4),
                                   "wall_hours_at_job_gpus": None if wall is None else round(wall, 2),
                                   "global_batch_tokens": s.global_batch_tokens})
        d["sizing"] = sizing
        active = [bi for bi, b in enumerate(problem.blocks)
                  if (problem.before_deadline(w, b) > 0 if w.training else problem.active(w, b))]
        if w.training:
            done = sum(cap.get((w.name, bi), 0.0) * 3600.0 * problem.before_deadline(w, b) * problem.months(b)
                       for bi, b in enumerate(problem.blocks))
            last = 0.0
            for bi in active:
                if cap.get((w.name, bi), 0) > 0:
                    b = problem.blocks[bi]
                    p = problem.period_of(b)
                    end = b.end_hour if b.end_hour is not None else b.start_hour + b.hours
                    if p.training.get(w.name) == "partial":
                        end = min(end, p.splits[w.name])
                    last = max(last, (p.end_month - 1) * HOURS_PER_MONTH + end - w.start_month * HOURS_PER_MONTH)
            # the work is time-sliced within blocks: at the plan's peak capacity it is done sooner than the end of
            # the last block it uses
            units: dict[str, float] = {}
            for store in (sol.A, sol.X):
                for (wn, ok, bi), x in store.items():
                    if wn == w.name:
                        units[ok] = max(units.get(ok, 0.0), x)
            peak_cap = sum(idx[(w.name, ok)].throughput_per_unit * math.ceil(u - 1e-9) for ok, u in units.items())
            if peak_cap > 0 and done > 0:
                last = min(last, problem.work_flops[w.name] / (peak_cap * 3600.0))
            # the most GPUs at once: per block, the units the job runs (time-sliced, so whole units of its layout)
            per_block: dict[int, float] = {}
            unit_gpus = 0.0
            for store in (sol.A, sol.X):
                for (wn, ok, bi), x in store.items():
                    c = idx[(wn, ok)]
                    if wn == w.name and getattr(c, "sizing", None) is not None:
                        per_block[bi] = per_block.get(bi, 0.0) + x
                        unit_gpus = max(unit_gpus, float(c.sizing.gpus_per_replica or 0))
            d["gpus_peak"] = int(math.ceil(max(per_block.values(), default=0.0) - 1e-9) * unit_gpus)
            d.update({"work_flops_needed": problem.work_flops[w.name], "work_flops_planned": done,
                      "deadline_hours": w.deadline_hours or HOURS_PER_MONTH, "finish_by_hour": round(last, 2),
                      # a cost plan completes every job; an ROI plan the jobs it chose (Z), none when it bought nothing
                      "completed": bool(sol.Z.get(w.name, 1 if problem.objective == "cost" else 0))})
        else:
            short = [bi for bi in active
                     if cap.get((w.name, bi), 0.0) < problem.blocks[bi].demand.get(w.name, 0.0) * (1 - 1e-9)]
            rr = [reps.get((w.name, bi), 0.0) for bi in active]
            d.update({"peak_demand": max((problem.blocks[bi].demand.get(w.name, 0.0) for bi in active), default=0.0),
                      "min_replicas": w.min_replicas,
                      "end_month": w.end_month or problem.horizon_months,
                      "replicas_min_max": [round(min(rr, default=0), 2), round(max(rr, default=0), 2)],
                      "capacity_peak": round(max((cap.get((w.name, bi), 0.0) for bi in active), default=0.0), 2),
                      "blocks_short": len(short),
                      "regions": sorted({"/".join(k.split("|")[:2]) for k in used.get(w.name, ())})})
        out_w.append(d)
    out_b = [{"label": b.label, "period": b.period, "months": problem.months(b), "start_hour": b.start_hour,
              "end_hour": b.end_hour if b.end_hour is not None else round(b.start_hour + b.hours, 6),
              "slots": list(b.slots), "slot_labels": list(b.slot_labels), "grid_hours": b.grid_hours,
              "hours": round(b.hours, 6), "demand": {k: v for k, v in b.demand.items()},
              "capacity": {w.name: round(cap.get((w.name, bi), 0.0), 4) for w in problem.workloads
                           if not w.training and problem.active(w, b)},
              "training_flops_per_s": {w.name: cap.get((w.name, bi), 0.0) for w in problem.workloads if w.training}}
             for bi, b in enumerate(problem.blocks)]
    return out_w, out_b


# ------------------------------------------------------------------------------------------------ planning
def make_problem(workloads: list[FleetWorkload], profiles: dict | list[FleetBlock], offers: "pd.DataFrame", *,
                 budget_usd: float | None = None, objective: str = "cost", pricing: tuple[str, ...] | None = None,
                 spot_capacity: int = DEFAULT_SPOT_CAPACITY, prune: bool = True,
                 max_instances: int | None = None, horizon_months: int | None = None, leftover_value: float = 0.0,
                 placement: str = "region", spread: str = "", budgets: Budgets | None = None,
                 start_date: _dt.date | None = None, keep_unpruned: bool = True,
                 _rows: dict[str, Any] | None = None, _tables: dict[str, Any] | None = None) -> FleetProblem:
    """The problem: periods of the horizon, the blocks of each, candidates per workload (sizing on every offer,
    filtered by pricing and spot permission), then pruned.

    Args: profiles: serving workload name -> optimizer.demand.DemandProfile (blocks are made per period with
        merge_blocks, split at deadlines); or a list of FleetBlock of one typical month (then one period: horizon 1).
    Candidates are made only for the offer rows :func:`_prefilter_rows` keeps (prune_fleet then keeps what it would
    keep of all of them); ``keep_unpruned``: also make every candidate, for ``FleetProblem.unpruned`` (the
    explanations price other pricing sets with them), else it is None — and then, on a big catalog
    (:data:`GROUP_BOUND_MIN_ROWS` candidate rows), placement groups that cannot hold the optimum are left out
    first (:func:`_bound_groups`). ``_rows``: workload -> rows of the offers allowed, ``_tables``: the workloads'
    unit tables over ``offers`` (that function's restricted problem). Raises InputError for bad input (objective, placement, spread, leftover value, duplicate names, horizon).
    """
    from optimizer.horizon import horizon_for, periods as make_periods
    from optimizer.sizing import train_flops

    if objective not in ("cost", "roi"):
        raise InputError("objective", f"unknown objective '{objective}'", accepted="cost, roi")
    if placement not in PLACEMENTS:
        raise InputError("placement", f"unknown placement {placement!r}", accepted=", ".join(PLACEMENTS))
    if spread not in SPREADS:
        raise InputError("spread", f"unknown spread {spread!r}", accepted="zones")
    if not (0.0 <= float(leftover_value) <= 1.0):
        raise InputError("leftover_value", f"must be between 0 and 1, got {leftover_value!r}")
    names = [w.name for w in workloads]
    if len(set(names)) != len(names):
        raise InputError("workloads", "workload names must be unique")
    budgets = budgets or Budgets(monthly=budget_usd)
    if isinstance(profiles, list):
        blocks = profiles
        H, note, periods, note_m = horizon_months or 1, "", None, ""
    else:
        H, note = horizon_for([w.activity() for w in workloads], horizon_months)
        periods = make_periods([w.activity() for w in workloads], H)
        merged: list[str] = []
        blocks = blocks_for_periods(periods, profiles, merged)
        note_m = "; ".join(merged)
    import numpy as np

    allowed_pricing = set(pricing) if pricing else set(DEFAULT_PRICING)
    rejected: dict[str, dict[str, int]] = {}
    tables: dict[str, UnitTable] = {}
    usable: dict[str, Any] = {}
    for w in workloads:
        t = _tables[w.name] if _tables is not None else unit_table(w.workload, offers, allow_spot=True, pricing=PRICING_MODELS)
        pr = t.pricing if t.pricing is not None else text_values(t.offers["pricing"])
        allowed = np.isin(pr, sorted(allowed_pricing))
        spot = pr == "spot"
        rej = dict(t.rejected)
        for reason, n in (("pricing_not_allowed", int((t.ok & ~allowed).sum())),
                          ("spot_not_allowed", int((t.ok & allowed & spot).sum()) if not w.allow_spot else 0)):
            if n:
                rej[reason] = rej.get(reason, 0) + n
        use = t.ok & allowed & (~spot if not w.allow_spot else True)
        if not w.training and not pricing:
            # by default a service is not put on capacity blocks (bursts on blocks are asked for: --pricing
            # capacity_block); training jobs are
            cb = use & (pr == CAPACITY_BLOCK)
            if cb.any():
                rej["pricing_not_allowed"] = rej.get("pricing_not_allowed", 0) + int(cb.sum())
                use = use & ~cb
        if not w.training:
            # a capacity block lasts at most 182 days: a service runs on one only in a period of at most 5 months
            runs = [p.months for p in periods if w.name in p.serving] if periods is not None else [H]
            if runs and all(_block_days_of(m) is None for m in runs):
                cb = use & (pr == CAPACITY_BLOCK)
                if cb.any():
                    rej["capacity_block_past_182_days"] = rej.get("capacity_block_past_182_days", 0) + int(cb.sum())
                    use = use & ~cb
            # Flex-start runs at most 7 days, queued: capacity for training jobs, not for a service
            flex = use & (pr == "flex_start")
            if flex.any():
                rej["flex_start_training_only"] = rej.get("flex_start_training_only", 0) + int(flex.sum())
                use = use & ~flex
        tables[w.name], rejected[w.name] = t, rej
        usable[w.name] = use
    # capacity blocks and savings-plan rates are sized by the model itself (no instance-for-instance dominance with
    # hourly or reserved rows): kept out of the prefilter, the group bounds and the pruning, every one a candidate
    bought = {w: u & np.isin(tables[w].pricing if tables[w].pricing is not None
                             else text_values(tables[w].offers["pricing"]), sorted(PURCHASED))
              for w, u in usable.items()}
    usable = {w: u & ~bought[w] for w, u in usable.items()}
    budgets_ = budgets
    do_prune = prune and max_instances is None  # with quotas, dominance is not safe (DESIGN.md): keep every candidate
    n_all = sum(int(u.sum()) for u in usable.values()) + sum(int(b.sum()) for b in bought.values())
    if _rows is not None:
        usable = {w: u & _rows[w] for w, u in usable.items()}
        bought = {w: b & _rows[w] for w, b in bought.items()}
    elif do_prune and not keep_unpruned and n_all >= GROUP_BOUND_MIN_ROWS:
        # capacity blocks and savings-plan rows enter the groups' lower bounds at their rate per unit-hour (a block
        # or a plan costs at least that per hour used) and never the plan in hand (they are not paid by the hour)
        kept = _bound_groups(workloads, profiles, offers, tables, {w: u | bought[w] for w, u in usable.items()},
                             blocks, periods, H, objective=objective, pricing=pricing, spot_capacity=spot_capacity,
                             leftover_value=leftover_value, placement=placement, spread=spread, budgets=budgets,
                             max_instances=max_instances, start_date=start_date)
        usable = {w: kept[w] & ~bought[w] for w in usable}
        bought = {w: kept[w] & bought[w] for w in bought}
    keep_rows = None
    if do_prune and workloads:
        keep_rows = _prefilter_rows(tables, usable, workloads, placement=placement, spread=spread,
                                    same_payment=budgets_.monthly is not None or budgets_.upfront is not None,
                                    cc_factor=_single_slot_factors(workloads, H, float(leftover_value), budgets_))
    cands: dict[str, list[Candidate]] = {}
    full: dict[str, list[Candidate]] = {}
    for w in workloads:
        t, u = tables[w.name], usable[w.name]
        if keep_unpruned or keep_rows is None:
            full[w.name] = t.candidates(np.flatnonzero(u))
            if keep_rows is not None:
                kr = keep_rows[np.flatnonzero(u)]
                cands[w.name] = [c for c, k in zip(full[w.name], kr.tolist()) if k]
            else:
                cands[w.name] = full[w.name]
        else:
            cands[w.name] = t.candidates(np.flatnonzero(u & keep_rows))
    for w in workloads:
        if bought[w.name].any():
            extra = tables[w.name].candidates(np.flatnonzero(bought[w.name]))
            cands[w.name] = list(cands[w.name]) + extra
            if keep_unpruned or keep_rows is None:
                full[w.name] = list(full[w.name]) + extra
    for w in workloads:  # the model keys offers by provider|region|zone|instance_type|pricing|payment
        seen: set[str] = set()
        for c in cands[w.name]:
            if c.okey in seen:
                raise InputError("offers", f"two offers have the same key {c.okey!r} (provider|region|zone|"
                                           "instance_type|pricing|payment): give each its zone, or drop one")
            seen.add(c.okey)
    work = {w.name: float(train_flops(w.workload)) for w in workloads if w.training}
    pruned = 0
    if do_prune:
        # the terms bought once over the horizon, by their cost over it: FleetProblem.single_slot_costs, computed
        # here for the candidates before the problem (and its slots) exists
        factor = _single_slot_factors(workloads, H, float(leftover_value), budgets)
        cc = {c.okey: committed_rate(c.offer) * HOURS_PER_MONTH * factor[c.offer["pricing"]]
              for cs in cands.values() for c in cs if c.offer["pricing"] in factor}
        cands, _ = prune_fleet(cands, workloads, blocks, work, spot_capacity, placement, spread, cc,
                               budgets.monthly is not None or budgets.upfront is not None)
        pruned = n_all - sum(len(v) for v in cands.values())
    problem = FleetProblem(workloads=workloads, blocks=blocks, cands=cands, work_flops=work, objective=objective,
                           spot_capacity=spot_capacity, rejected=rejected, max_instances=max_instances,
                           horizon_months=H, periods=periods, leftover_value=float(leftover_value),
                           placement=placement, spread=spread, budgets=budgets, start_date=start_date,
                           horizon_note=note, profiles=None if isinstance(profiles, list) else dict(profiles),
                           merge_note=note_m, pruned=pruned)
    problem.unpruned = full if keep_unpruned else None
    return problem


#: Largest class of committed rows the prefilter compares pairwise (larger ones are left to prune_fleet).
_PAIRWISE_MAX = 2_000


def _unit_dominated(rows, cost, g, cls, tables, usable, workloads):
    """Which committed rows (positions ``rows``, cost ``cost``, class ``g``/``cls`` as in :func:`_prefilter_rows`)
    one unit of a cheaper row of their class replaces for every workload that can use them (prune_fleet's
    ``_dominates``, unit for unit): both rows single-instance units for each such workload, with at least the
    throughput and replicas, at a cost below the row's by more than the margin. Only single-instance rows and
    only one for one: then whatever prune_fleet finds dominating the dominator (one for one or m copies for one)
    dominates the row too, so prune_fleet drops it whichever rows it keeps. (Its m-copies rule is not applied
    here: a chain of m copies through a row with a multi-instance unit for a third workload does not carry over;
    a random catalog found it.) Returns a boolean array over ``rows``."""
    import numpy as np
    import pandas as pd

    out = np.zeros(len(rows), dtype=bool)
    if len(rows) < 2:
        return out
    grp = pd.DataFrame({"g": g, "cls": cls}).groupby(["g", "cls"], sort=False).ngroup().to_numpy()
    order = np.argsort(grp, kind="stable")
    bounds = np.flatnonzero(np.diff(grp[order])) + 1
    def lone_of(t):  # rows whose unit a job may run on only one instance at a time (no cluster fabric)
        hw = np.array([h[0] is not None and len(h) > 6 and h[6] is not None for h in t.hardware] + [False])
        return hw[t.hw]

    per_w = [(usable[w.name][rows], tables[w.name].instances[rows], tables[w.name].throughput[rows],
              tables[w.name].replicas[rows], lone_of(tables[w.name])[rows]) for w in workloads]
    margin = 1.0 + _PREFILTER_MARGIN
    for idx in np.split(order, bounds):
        s = len(idx)
        if s < 2 or s > _PAIRWISE_MAX:
            continue
        c = cost[idx]
        dom = np.ones((s, s), dtype=bool)  # [j, i]: j's copies replace i
        m = np.ones((s, s))
        for u_a, k_a, t_a, r_a, l_a in per_w:
            u, k, t, r, lone = u_a[idx], k_a[idx], t_a[idx], r_a[idx], l_a[idx]
            single = (k == 1) & (t > 0) & (r > 0)
            dom &= ~u[None, :] | (u[:, None] & single[:, None] & single[None, :])
            # as _dominates: a one-instance-at-a-time unit replaces only another such unit
            dom &= ~u[None, :] | ~(lone[:, None] & ~lone[None, :])
            with np.errstate(divide="ignore", invalid="ignore"):
                mw = np.maximum(np.ceil(t[None, :] / t[:, None]), np.ceil(r[None, :] / r[:, None]))
            m = np.where(u[None, :] & single[:, None], np.maximum(m, np.nan_to_num(mw, nan=np.inf)), m)
        with np.errstate(invalid="ignore"):
            dom &= (m <= 1) & (c[:, None] * margin < c[None, :])
        np.fill_diagonal(dom, False)
        out[idx] = dom.any(axis=0)
    return out


#: Candidate rows (over all workloads) from which make_problem bounds placement groups before making candidates
#: (:func:`_bound_groups`); the shipped snapshot has ~3,000 per workload and is never bounded.
GROUP_BOUND_MIN_ROWS = 20_000
#: Placement groups per workload (the lowest lower bounds) planned first, for a plan that bounds the others.
GROUP_BOUND_FIRST = 20


def _bound_groups(workloads, profiles, offers, tables, usable, blocks, periods, H, **kw) -> dict[str, Any]:
    """Leave out, per serving workload, the placement groups no optimal plan can use; returns the usable rows per
    workload (unchanged when the bound does not apply).

    The lower bound of serving workload w in group g: the sum over the blocks w runs in (hours x months) of
    max(demand x rho_wg, p_wg), where rho_wg is the cheapest USD per token/s-hour of a row of g and p_wg its
    cheapest unit-hour — a block with demand needs at least one unit of w's (units are not shared within a
    block). A committed unit is charged at its effective rate (``committed_rate``) x the least its term costs per
    hour it covers inside the horizon, over the months it may be bought (``slot_starts``): whatever it costs, it
    costs at least that for each hour it is used. Spot caps and redundancy floors only add.
    So every plan costs at least the sum of its workloads' bounds in the groups they use.

    The upper bound: the cheaper of two plans of the whole problem. (1) Each workload alone with the same n units
    of one row in every block it runs in (n enough for its peak and its floors; an hourly row paid by the hour, a
    term bought once over the horizon paid whole), on its cheapest such row; (2) the plan of the problem with each
    workload restricted to the :data:`GROUP_BOUND_FIRST` groups of lowest bound and the as many where plan (1) is
    cheapest (``optimizer.exact.solve_separable``, each workload apart when they could share), when that plans it.
    Group g is left out for w when LB_wg + the other workloads' lowest bounds > that cost: no plan using it is
    cheaper. Measured on the 500,000-offer benchmark (one Llama-2-7B service, 12 months): the bound keeps 679 of
    6,203 groups (without the one-unit term, 2,278; with 3-year terms at their effective rate, 4,346).
    Applies to minimum cost without budgets, quotas or zone spread, every workload a placed serving one (training
    jobs are not placed)."""
    import numpy as np

    from optimizer.exact import solve_separable

    if kw["objective"] != "cost" or kw["placement"] == "any" or kw["spread"] or kw["budgets"].any() or \
            kw["max_instances"] is not None or any(w.training or w.divisible for w in workloads):
        return usable
    frame = tables[workloads[0].name].offers
    n = len(frame)
    if n == 0:
        return usable
    cols = {"region": ["provider", "region"], "provider": ["provider"]}[kw["placement"]]
    grp = frame.groupby(cols, dropna=False, sort=False, observed=True).ngroup().to_numpy()
    ng = int(grp.max()) + 1
    pr = tables[workloads[0].name].pricing
    pr = text_values(frame["pricing"]) if pr is None else pr
    com = np.isin(pr, sorted(COMMITTED))
    rate = np.zeros(n)
    if com.any():
        # committed_rate, row by row, x the least a term costs per hour it covers inside the horizon (a 3-year
        # term on a 12-month horizon is paid for 36 months and covers 12: 3x; the leftover value lowers it)
        acts = [w.activity() for w in workloads]
        lv = float(kw["leftover_value"])
        factor = {}
        for p_name, T in TERM_MONTHS.items():
            per = [(T - lv * max(0, s + T - H)) / (T - max(0, s + T - H)) for s in slot_starts(acts, H, T)]
            factor[p_name] = min(per) if per else 1.0
        f = np.ones(n)
        for p_name, fac in factor.items():  # a mask per pricing model, not a Python loop over the rows
            f[pr == p_name] = fac
        base_rate = committed_rate_arrays(frame, pr)
        rate = base_rate * f
    else:
        base_rate = np.zeros(n)
    lb: dict[str, Any] = {}
    ub_one: dict[str, Any] = {}
    cc = _single_slot_factors(workloads, H, float(kw["leftover_value"]), kw["budgets"])
    for w in workloads:
        t, use = tables[w.name], usable[w.name]
        per_hour = np.where(com, rate * t.instances, t.usd_per_unit_hour)
        with np.errstate(divide="ignore", invalid="ignore"):
            per_token = np.where(use & (t.throughput > 0), per_hour / t.throughput, np.inf)
        per_token = np.where(np.isnan(per_token), np.inf, per_token)
        unit = np.where(use & ~np.isnan(per_hour), per_hour, np.inf)
        rho, p_min = np.full(ng, np.inf), np.full(ng, np.inf)
        np.minimum.at(rho, grp, per_token)
        np.minimum.at(p_min, grp, unit)
        bound = np.zeros(ng)
        for b in blocks:
            per = periods[b.period] if periods else None
            if per is not None and w.name not in per.serving:
                continue
            d = float(b.demand.get(w.name, 0.0))
            if d > 0:
                with np.errstate(invalid="ignore"):
                    bound += b.hours * (per.months if per is not None else H) * np.maximum(d * rho, p_min)
        lb[w.name] = np.where(np.isnan(bound), np.inf, bound)
        # a plan of w alone in each group: the same n units of one row in every block it runs in, n enough for
        # its peak and its floors; hourly rows paid each hour, terms bought once over the horizon (cc) paid whole
        peak, run_hours = 0.0, 0.0
        for b in blocks:
            per = periods[b.period] if periods else None
            if per is not None and w.name not in per.serving:
                continue
            peak = max(peak, float(b.demand.get(w.name, 0.0)))
            run_hours += b.hours * (per.months if per is not None else H)
        m = int(w.min_replicas)
        with np.errstate(divide="ignore", invalid="ignore"):
            units = np.maximum.reduce([np.ceil(peak / t.throughput), np.ceil(m / np.maximum(t.replicas, 1)),
                                       np.ceil(m / np.maximum(t.instances, 1)), np.ones(n)])
            one = np.where(pr == "on_demand", units * t.usd_per_unit_hour * run_hours, np.inf)
            for p_name, fac in cc.items():
                one = np.where(pr == p_name, units * t.instances * base_rate * HOURS_PER_MONTH * fac, one)
        one = np.where(use & np.isfinite(one), one, np.inf)
        single = np.full(ng, np.inf)
        np.minimum.at(single, grp, one)
        ub_one[w.name] = single
    low = {w: float(v.min()) for w, v in lb.items()}
    if not all(math.isfinite(v) for v in low.values()):
        return usable
    rows = {}
    for w in workloads:
        first = np.concatenate([np.argsort(lb[w.name], kind="stable")[:GROUP_BOUND_FIRST],
                                np.argsort(ub_one[w.name], kind="stable")[:GROUP_BOUND_FIRST]])
        rows[w.name] = np.isin(grp, first[np.isfinite(lb[w.name][first])])
    sub = make_problem(workloads, profiles, offers, objective="cost", pricing=kw["pricing"],
                       spot_capacity=kw["spot_capacity"], horizon_months=H, leftover_value=kw["leftover_value"],
                       placement=kw["placement"], budgets=kw["budgets"], start_date=kw["start_date"],
                       keep_unpruned=False, _rows=rows, _tables=tables)
    if any(not sub.cands.get(w.name) for w in workloads):
        return usable
    sol = solve_separable(sub, apart=True)
    ub = sum(float(v.min()) for v in ub_one.values())  # each workload alone, apart: a plan of the whole problem
    if sol is not None and sol.report.status == "optimal" and math.isfinite(sol.cost):
        ub = min(ub, sol.cost)
    if not math.isfinite(ub):
        return usable
    total_low = sum(low.values())
    out = {}
    for w in workloads:
        limit = ub - (total_low - low[w.name])
        out[w.name] = usable[w.name] & (lb[w.name] <= limit * (1 + 1e-9) + 1e-6)[grp]
    return out


def _single_slot_factors(workloads: list[FleetWorkload], horizon: int, leftover_value: float,
                         budgets: Budgets) -> dict[str, float]:
    """pricing -> commitment_cost_factor of a term bought once at month 0 and covering the whole horizon (the
    terms :meth:`FleetProblem.single_slot_costs` prices by their cost over the horizon); {} when that method gives
    nothing (a cash, upfront or commitment limit)."""
    if budgets.monthly is not None or budgets.upfront is not None or budgets.commitment is not None:
        return {}
    acts = [w.activity() for w in workloads]
    out = {}
    for p, t in TERM_MONTHS.items():
        if list(slot_starts(acts, horizon, t)) == [0] and t >= horizon:
            out[p] = commitment_cost_factor(0, t, horizon, leftover_value)
    return out


#: Relative price margin below which the row prefilter keeps both rows (prune_fleet, which compares the same
#: figures computed one at a time, decides between them).
_PREFILTER_MARGIN = 1e-9


def _prefilter_rows(tables: dict[str, "UnitTable"], usable: dict[str, Any], workloads: list[FleetWorkload], *,
                    placement: str, spread: str, same_payment: bool, cc_factor: dict[str, float]):
    """Rows of the offers frame that :func:`prune_fleet` may keep, found on arrays before any candidate exists
    (500,000 offers: candidates for every row took 5 s and pruning them 5 s). Returns a boolean array over the
    rows of the unit tables (the same frame for every workload: make_problem sizes with the same filter).

    A row is dropped only when prune_fleet drops it, and only for a reason that leaves every other decision of
    prune_fleet as it was — so prune_fleet on the kept rows keeps exactly what it keeps on all of them
    (tests/test_prefilter.py checks this on random catalogs and on the snapshot):

    - on-demand, for each serving workload and placement group (zone too when spreading; with a redundancy floor
      of two or more, replicas and instances per unit up to it too): a row is needed by the
      workload unless another row of the group costs less per unit-hour with at least its throughput, or the same
      with more throughput (then it is not on prune_fleet's staircase); for a training job, unless its USD per
      unit of work is above the lowest. A row is kept when some workload needs it.
    - committed: among rows of the same placement group (zone when spreading, payment under a cash or upfront
      limit), the same hardware (:data:`optimizer.model.HARDWARE_COLUMNS`: the same units for every workload)
      and the same term — or both terms bought once over the whole horizon (``cc_factor``), compared by their
      cost over it — only the cheapest are kept: the others are dominated unit for unit by a row that comes first
      in prune_fleet's order, and whatever they dominate, that row dominates too. Then, across hardware, a
      single-instance row that one unit of a cheaper one replaces for every workload (:func:`_unit_dominated`).
    - spot (not spreading over zones): of one instance type in one region with the same hardware, the cheapest
      zones (prune_fleet keeps only the cheapest zone of a capped group; the hardware, and so the capacity
      prune_fleet counts, is the same).

    Prices closer than :data:`_PREFILTER_MARGIN` (relative) count as equal: both rows are kept.
    """
    import numpy as np
    import pandas as pd

    first = tables[workloads[0].name]
    frame = first.offers
    n = len(frame)
    keep = np.zeros(n, dtype=bool)
    if n == 0:
        return keep
    hw = first.hw
    pr = first.pricing if first.pricing is not None else text_values(frame["pricing"])
    any_use = np.zeros(n, dtype=bool)
    for u in usable.values():
        any_use |= u
    if any_use.sum() < 0.9 * n:  # the rows some workload may use, alone (cheaper to group)
        idx = np.flatnonzero(any_use)
        cols = [c for c in ("provider", "region", "zone", "instance_type", "pricing", "payment", "usd_per_hour",
                            "upfront_usd", "recurring_usd_per_hour") if c in frame.columns]
        part = frame[cols].iloc[idx]  # the columns the prefilter reads, once for every workload
        sub = {w: dataclasses.replace(t, offers=part, ok=t.ok[idx], instances=t.instances[idx],
                                      replicas=t.replicas[idx], throughput=t.throughput[idx],
                                      usd_per_unit_hour=t.usd_per_unit_hour[idx], hw=t.hw[idx],
                                      pricing=pr[idx]) for w, t in tables.items()}
        keep[idx] = _prefilter_rows(sub, {w: u[idx] for w, u in usable.items()}, workloads, placement=placement,
                                    spread=spread, same_payment=same_payment, cc_factor=cc_factor)
        return keep
    price = pd.to_numeric(frame["usd_per_hour"], errors="coerce").to_numpy(dtype=float, na_value=np.nan)

    def codes(cols: list[str]):
        """Group number of each row by ``cols`` (a missing value is a group of its own: finer than prune_fleet's
        str() of it, so never a comparison prune_fleet would not make)."""
        cols = [c for c in cols if c in frame.columns]
        if not cols:
            return np.zeros(n, dtype=np.int64)
        return frame.groupby(cols, dropna=False, sort=False, observed=True).ngroup().to_numpy()

    pg_cols = {"region": ["provider", "region"], "provider": ["provider"]}.get(placement, [])
    zone_cols = ["zone"] if spread == "zones" else []
    margin = 1.0 + _PREFILTER_MARGIN

    # on-demand: the per-workload staircase of (USD per unit-hour, throughput) in each group
    od = pr == "on_demand"
    if od.any():
        g_od = codes(pg_cols + zone_cols)
        for w in workloads:
            t = tables[w.name]
            rows = np.flatnonzero(usable[w.name] & od)
            if len(rows) == 0:
                continue
            p, th = t.usd_per_unit_hour[rows], t.throughput[rows]
            if w.training:
                # as prune_fleet's _training_front: the cheapest per unit of work without a unit limit, and every
                # row limited to one instance at a time (no cluster fabric) that is cheaper per unit of work
                ratio = p / th
                lone_hw = np.array([h[0] is not None and len(h) > 6 and h[6] is not None for h in t.hardware] + [False])
                lone = lone_hw[t.hw[rows]]
                free = ratio[~lone]
                best = np.nanmin(free) if free.size else np.inf
                keep[rows[~lone & ~(ratio > best * margin)]] = True
                keep[rows[lone & ~(ratio > best * margin)]] = True
                continue
            g = g_od[rows]
            if w.min_replicas > 1:  # a floor: one staircase per (replicas, instances) per unit up to it, as prune_fleet
                mr = int(w.min_replicas)
                g = pd.DataFrame({"g": g, "r": np.minimum(t.replicas[rows], mr),
                                  "k": np.minimum(t.instances[rows], mr)}).groupby(
                    ["g", "r", "k"], sort=False).ngroup().to_numpy()
            order = np.lexsort((-th, p, g))
            gs, ps, ts = g[order], p[order], th[order]
            # running max of throughput within each group, in (price, -throughput) order
            cm = pd.Series(ts).groupby(gs).cummax().to_numpy()
            start = np.ones(len(order), dtype=bool)  # first row of each run of equal (group, price)
            start[1:] = (gs[1:] != gs[:-1]) | (ps[1:] != ps[:-1])
            run = np.cumsum(start) - 1
            run_first = np.flatnonzero(start)
            # best throughput over strictly cheaper rows of the group: the running max just before the run
            before = np.full(len(run_first), -np.inf)
            prev = run_first - 1
            same_g = (prev >= 0) & (gs[np.maximum(prev, 0)] == gs[run_first])
            before[same_g] = cm[prev[same_g]]
            cheaper = before[run]
            run_max = ts[run_first][run]  # the run's best (sorted by -throughput inside it)
            needed = ~((cheaper >= ts) | (run_max > ts))
            keep[rows[order[needed]]] = True

    # committed: the cheapest of each (group, hardware, term or bought-over-the-horizon) class
    com = np.isin(pr, sorted(COMMITTED)) & any_use
    if com.any():
        rows = np.flatnonzero(com)
        rate = committed_rate_arrays(frame, pr)[rows]
        cost = price[rows].copy()
        cls = pr[rows].copy()
        for p_name, factor in cc_factor.items():
            sel = pr[rows] == p_name
            if not sel.any():
                continue
            # committed_rate x 730 x the factor, as FleetProblem.slot_cost computes it
            cost[sel] = rate[sel] * HOURS_PER_MONTH * factor
            cls[sel] = "cc"
        pay_cols = ["payment"] if same_payment else []
        g = codes(pg_cols + zone_cols + pay_cols)[rows]
        key = pd.DataFrame({"g": g, "hw": hw[rows], "cls": cls}).groupby(["g", "hw", "cls"], sort=False).ngroup()
        best = pd.Series(cost).groupby(key.to_numpy()).transform("min").to_numpy()
        left = ~(cost > best * margin)
        rows, cost, g, cls = rows[left], cost[left], g[left], cls[left]
        keep[rows[~_unit_dominated(rows, cost, g, cls, tables, usable, workloads)]] = True

    # spot: the cheapest zones of each instance type, region and hardware
    sp = (pr == "spot") & any_use
    if sp.any():
        rows = np.flatnonzero(sp)
        if spread == "zones":
            keep[rows] = True
        else:
            g = codes(["provider", "region", "instance_type"])[rows]
            key = pd.DataFrame({"g": g, "hw": hw[rows]}).groupby(["g", "hw"], sort=False).ngroup().to_numpy()
            best = pd.Series(price[rows]).groupby(key).transform("min").to_numpy()
            keep[rows[~(price[rows] > best * margin)]] = True
    # rows of any other pricing (none today) are left to prune_fleet
    other = any_use & ~od & ~np.isin(pr, sorted(COMMITTED)) & (pr != "spot")
    keep |= other
    return keep


def blocks_for_periods(periods: list[Period], profiles: dict, notes: list[str] | None = None) -> list[FleetBlock]:
    """The blocks of every period: the typical month of the serving workloads that run in it (their profiles merged
    by the load-duration curve), split at the training deadlines that fall in it. ``notes`` collects what was
    merged (optimizer.demand.merge_blocks' note), once per distinct period shape."""
    from optimizer.demand import merge_blocks

    out: list[FleetBlock] = []
    cache: dict[tuple, list] = {}
    for p in periods:
        key = (p.serving, tuple(sorted(set(p.splits.values()))))
        if key not in cache:
            cache[key] = merge_blocks({n: profiles[n] for n in p.serving}, sorted(set(p.splits.values())))
            if notes is not None and cache[key].note not in notes:
                notes.append(cache[key].note)
        for mb in cache[key]:
            grid = cache[key]
            out.append(FleetBlock(start_hour=float(mb.start_hour), hours=float(mb.hours), demand=dict(mb.demand),
                                  label=mb.label, end_hour=float(mb.end_hour), period=p.index, slots=tuple(mb.members),
                                  slot_labels=tuple(grid.grid_labels[j] for j in mb.members if j < len(grid.grid_labels)),
                                  grid_hours=grid.grid_period))
    return out


def spot_use(problem: FleetProblem, sol: FleetSolution) -> dict[tuple, float]:
    """Spot instances the plan uses per (spot group (provider, region, instance type), block index): what the spot
    cap (``problem.spot_capacity``) bounds."""
    idx = _cand_index(problem)
    used: dict[tuple, float] = {}
    for (w, ok, bi), x in sol.X.items():
        c = idx[(w, ok)]
        if c.offer["pricing"] == "spot":
            key = (spot_group(c.offer), bi)
            used[key] = used.get(key, 0.0) + x * c.instances_per_unit
    return used


def _verify(problem: FleetProblem, sol: FleetSolution) -> str | None:
    """Check the plan meets every serving block, every training job, the redundancy and the sharing rule."""
    idx = _cand_index(problem)
    cap: dict[tuple[str, int], float] = {}
    for store in (sol.A, sol.X):
        for (w, ok, bi), x in store.items():
            cap[(w, bi)] = cap.get((w, bi), 0.0) + idx[(w, ok)].throughput_per_unit * x
    for w in problem.workloads:
        if w.training:
            if problem.objective == "roi" and not sol.Z.get(w.name):
                continue
            done = sum(cap.get((w.name, bi), 0.0) * 3600.0 * problem.before_deadline(w, b) * problem.months(b)
                       for bi, b in enumerate(problem.blocks))
            if done < problem.work_flops[w.name] * (1 - 1e-6):
                return f"{w.name}: {done:.6g} FLOPs planned for {problem.work_flops[w.name]:.6g} needed"
        elif problem.objective == "cost":
            for bi, b in enumerate(problem.blocks):
                if problem.active(w, b) and cap.get((w.name, bi), 0.0) < b.demand.get(w.name, 0.0) * (1 - 1e-9):
                    return f"{w.name}: block {b.label or bi} has {cap.get((w.name, bi), 0.0):.6g} tokens/s for {b.demand.get(w.name):.6g}"
    used: dict[tuple[str, int], float] = {}
    for (w, ok, bi), a in sol.A.items():
        used[(ok, bi)] = used.get((ok, bi), 0.0) + idx[(w, ok)].instances_per_unit * a
    kinds = {c.okey: purchase_kind(c.offer) for cs in problem.cands.values() for c in cs}
    spend: dict[tuple[str, int], float] = {}
    block_use: dict[tuple[str, str], float] = {}
    serve_use: dict[tuple[str, int], float] = {}
    for (w, ok, bi), a in sol.A.items():
        c = idx[(w, ok)]
        b = problem.blocks[bi]
        if kinds.get(ok) == "savings_plan":
            key = (savings_plan_scope(c.offer), bi)
            spend[key] = spend.get(key, 0.0) + c.usd_per_unit_hour * a
        elif kinds.get(ok) == CAPACITY_BLOCK and problem.workloads_by_name()[w].training:
            block_use[(w, ok)] = block_use.get((w, ok), 0.0) + a * problem.before_deadline(
                problem.workloads_by_name()[w], b) * problem.months(b)
        elif kinds.get(ok) == CAPACITY_BLOCK:
            key = (ok, bi)
            serve_use[key] = serve_use.get(key, 0.0) + c.instances_per_unit * a
    for (ok, bi), u in used.items():
        p = problem.period_of(problem.blocks[bi])
        kind = kinds.get(ok)
        if kind == "savings_plan":
            continue
        if kind == CAPACITY_BLOCK:
            have = sum(v for kk, v in sol.CB.items() if kk[0] == "window" and kk[1] == ok
                       and kk[2] <= p.start_month and p.end_month <= kk[3])
            if serve_use.get((ok, bi), 0.0) > have + 1e-6:
                return f"capacity block {ok} over-used in block {bi}"
            continue
        have = sum(sol.N.get(k, 0) for k in problem.covering(ok, p))
        if u > have + 1e-6:
            return f"committed offer {ok} over-used in block {bi}"
    for (scope, bi), u in spend.items():
        have = sum(sol.SP.get(k, 0.0) for k in problem.covering_plans(scope, problem.period_of(problem.blocks[bi])))
        if u > have * (1 + 1e-6) + 1e-6:
            return f"savings plan {scope} over-spent in block {bi}: {u:.6g} USD/h for {have:.6g}"
    wl = problem.workloads_by_name()
    for (w, ok), hours in block_use.items():
        days, units = sol.CB.get(("job", w, ok), 0), sol.CB.get(("job_units", w, ok), 0)
        if hours > 24.0 * days * (1 + 1e-6) + 1e-6:
            return f"capacity block {ok} of {w} used {hours:.6g} unit-hours for {days} unit-days"
        at_once = max(a for (w2, o2, _), a in sol.A.items() if w2 == w and o2 == ok)
        k = idx[(w, ok)].instances_per_unit
        window = problem.job_window_hours(wl[w])
        f_days, rem = int(window // 24.0), window - 24.0 * int(window // 24.0)
        if hours > (rem * days + (24.0 - rem) * f_days * units) * (1 + 1e-6) + 1e-6 and rem > 1e-9:
            return f"capacity blocks {ok} of {w}: {hours:.6g} unit-hours do not fit {days} whole days in {window:g} h"
        if at_once > units + 1e-6 or days < units or days > units * problem.job_block_days(wl[w]) \
                or units * k > CAPACITY_BLOCK_MAX_INSTANCES + 1e-9:
            return (f"capacity blocks {ok} of {w}: {at_once:.6g} units at once, {units} bought for {days} unit-days "
                    f"(each unit a day at least, within {problem.job_block_days(wl[w])} days, at most "
                    f"{CAPACITY_BLOCK_MAX_INSTANCES} instances)")
    return None


def trim_allocations(problem: FleetProblem, sol: FleetSolution) -> FleetSolution:
    """Committed capacity is paid whatever the use, so the solver may assign spare committed units to a workload
    that does not need them. For reporting (utilization), remove them: serving units on committed offers are taken
    away one by one while the block still meets its demand and redundancy; training work on committed offers is
    scaled down to what the job needs. Costs do not change."""
    import copy

    idx = _cand_index(problem)
    A = dict(sol.A)
    X = dict(sol.X)
    for w in problem.workloads:
        if w.training:
            need = problem.work_flops[w.name]
            work = lambda store: sum(idx[(w.name, ok)].throughput_per_unit * 3600.0 *  # noqa: E731
                                     problem.before_deadline(w, problem.blocks[bi]) *
                                     problem.months(problem.blocks[bi]) * v
                                     for (wn, ok, bi), v in store.items() if wn == w.name)
            a_work, x_work = work(A), work(X)
            if a_work > 0 and a_work + x_work > need * (1 + 1e-9):
                f = max(0.0, need - x_work) / a_work * (1 + 1e-12)
                for k in [k for k in A if k[0] == w.name]:
                    A[k] *= f
            continue
        for bi, b in enumerate(problem.blocks):
            d = b.demand.get(w.name, 0.0)
            keys = sorted((k for k in A if k[0] == w.name and k[2] == bi),
                          key=lambda k: -idx[(w.name, k[1])].throughput_per_unit)

            def state():
                cap = reps = nonspot = inst = inst_ns = 0.0
                for store in (A, X):
                    for (wn, ok, b2), v in store.items():
                        if wn == w.name and b2 == bi:
                            c = idx[(wn, ok)]
                            cap += c.throughput_per_unit * v
                            reps += c.replicas_per_unit * v
                            inst += c.instances_per_unit * v
                            if c.offer["pricing"] != "spot":
                                nonspot += c.replicas_per_unit * v
                                inst_ns += c.instances_per_unit * v
                return cap, reps, nonspot, inst, inst_ns
            for k in keys:
                while A.get(k, 0) >= 1:
                    c = idx[(w.name, k[1])]
                    cap, reps, nonspot, inst, inst_ns = state()
                    m = w.min_replicas
                    if (cap - c.throughput_per_unit >= d * (1 - 1e-12) and reps - c.replicas_per_unit >= m
                            and inst - c.instances_per_unit >= (0 if w.divisible else m)
                            and (w.spot_only_ok or (nonspot - c.replicas_per_unit >= m
                                                    and inst_ns - c.instances_per_unit >= (0 if w.divisible else m)))
                            and problem.spread != "zones"):
                        A[k] -= 1
                    else:
                        break
    out = copy.copy(sol)
    out.A = {k: v for k, v in A.items() if v > 1e-9}
    return out


#: Why an offer cannot hold a replica (optimizer.model.candidates_for's reasons), as the plan's notes say it.
_UNUSABLE = {"does_not_fit": "have too little GPU memory for a replica of up to 64 GPUs",
             "no_cluster_fabric": "would need a replica over several instances and have no cluster fabric",
             "no_spec": "have a GPU with no datasheet row", "no_throughput": "give no throughput",
             "precision_unsupported": "have a GPU that runs none of the allowed precisions (fp8: Ada, Hopper, "
                                      "Blackwell; fp4: Blackwell)",
             "misses_latency_target": "hold the model but meet the latency targets at no batch"}


def _blocks_too_short(problem: FleetProblem) -> str:
    """Why capacity blocks could not hold a serving workload, or "": a block lasts at most 182 days, so a service
    runs on one only in a period of at most 5 months (of 730 h)."""
    out = []
    for w in problem.workloads:
        if w.training or not problem.rejected.get(w.name, {}).get("capacity_block_past_182_days"):
            continue
        long = [p for p in problem.periods or [] if w.name in p.serving and _block_days_of(p.months) is None]
        if long:
            out.append(f"{w.name} runs {long[0].months} months in a row, and a capacity block lasts at most "
                       f"{CAPACITY_BLOCK_MAX_DAYS} days (5 months of 730 h fit, 6 do not by half a day): it serves on "
                       "blocks only over a shorter --horizon or --months")
    return "; ".join(out)


def _purchase_notes(problem: FleetProblem, sol: FleetSolution) -> list[str]:
    """What a buyer must know of the capacity blocks, Flex-start and savings plans a plan uses."""
    idx = _cand_index(problem)
    used = {idx[(w, ok)].offer["pricing"] for store in (sol.A, sol.X) for (w, ok, _) in store}
    notes = []
    if CAPACITY_BLOCK in used:
        notes.append("capacity blocks: bought for dates AWS offers (1-64 instances, 1-14 days or up to 182 in 7-day "
                     "steps, paid whole when bought; `aws ec2 describe-capacity-block-offerings` lists what is for "
                     "sale); a training job's blocks are its unit-days, run in its window in any order")
    if "flex_start" in used:
        notes.append("Flex-start (GCP Dynamic Workload Scheduler): VMs run at most 7 days and start when capacity is "
                     "found; a longer job runs as several requests, resuming from a checkpoint")
    if used & SAVINGS_PLANS:
        notes.append("savings plans: the commitment is a spend per hour at the plan's rates; instances listed "
                     "'runs on the savings plan' are paid by it, up to that spend in every hour")
    kinds = {"compute": "Compute Savings Plan", "ec2_instance": "EC2 Instance Savings Plan"}
    for k, x in sorted(sol.SP.items()):
        sl = problem.plan_slots[k]
        prov, pricing, pay, cls, region, family = sl.scope.split("|")
        what = kinds.get(cls, "savings plan") + (f" for the {family} family in {region}" if family != "*" else "")
        when = month_label(problem.start_date, sl.start_month) if problem.start_date else f"month {sl.start_month + 1}"
        notes.append(f"buy: {prov} {what}, {SAVINGS_PLAN_TERM_MONTHS[pricing] // 12}-year, "
                     f"{pay.replace('_', ' ') or 'no upfront'}, committing ${x:,.4f}/h "
                     f"(${x * HOURS_PER_MONTH * sl.term_months:,.2f} over the term) from {when}")
    for w in problem.workloads:
        n = problem.rejected.get(w.name, {}).get("capacity_block_past_182_days")
        if n:
            long = max((p.months for p in problem.periods or [] if w.name in p.serving), default=problem.horizon_months)
            notes.append(f"{w.name}: {n} capacity-block offers left out: it runs {long} months in a row, and a block "
                         f"lasts at most {CAPACITY_BLOCK_MAX_DAYS} days (5 months of 730 h fit, 6 do not by half a day)")
    return notes


def _unusable_notes(problem: FleetProblem, n_offers: int) -> list[str]:
    """One note per workload for the offers its replica cannot use, by reason (a fresh user's catalog of five
    offers planned an 8-GPU reservation for 100 tokens/s with nothing saying the 1-GPU offers could not hold the
    model): "chat: 1,787 of 4,675 offers cannot hold a replica (33 too little GPU memory ..., ...)"."""
    out = []
    for w in problem.workloads:
        rej = problem.rejected.get(w.name, {})
        why = dict(_UNUSABLE)
        if w.workload.task in ("train", "finetune"):
            why["does_not_fit"] = "have too little GPU memory for a job of up to 16,384 GPUs"
            why["no_cluster_fabric"] = "would need a job over several instances and have no cluster fabric"
            why["precision_unsupported"] = ("have a GPU without the training precision (bf16: not Volta/Turing; fp8: "
                                            "Ada, Hopper, Blackwell)")
        parts = [(n, why[k]) for k, n in rej.items() if k in why and n]
        if parts:
            total = sum(n for n, _ in parts)
            out.append(f"{w.name}: {total:,} of {n_offers:,} offers cannot hold a replica ("
                       + ", ".join(f"{n:,} {why}" for n, why in sorted(parts, key=lambda x: -x[0])) + ")")
    return out


def plan_fleet(workloads: list[FleetWorkload], profiles: dict | list[FleetBlock], offers: "pd.DataFrame", *,
               budget_usd: float | None = None, objective: str = "cost", pricing: tuple[str, ...] | None = None,
               spot_capacity: int = DEFAULT_SPOT_CAPACITY, solver: str = "auto", time_limit_s: float = 60.0,
               gap_rel: float = 0.001, explain: bool = True, merge_note: str = "",
               max_instances: int | None = None, horizon_months: int | None = None, leftover_value: float = 0.0,
               placement: str = "region", spread: str = "", budgets: Budgets | None = None,
               start_date: _dt.date | None = None) -> FleetResult:
    """Plan several workloads over a horizon (minimum cost, or maximum ROI by Dinkelbach).

    Args: as :func:`make_problem`; solver "auto"|"cbc"|"highs"; time_limit_s: wall time of the plan's own solve;
        explain: also price the strategies, duals, per-provider alternatives and demand sensitivity.
    Returns a FleetResult (infeasible plans included, with ``reason``). Raises InputError for bad input.
    """
    from optimizer import fleet_explain as fx
    from optimizer.explain import on_demand_rates

    t0 = time.perf_counter()
    if start_date is None:
        today = _dt.date.today()
        start_date = _dt.date(today.year + (today.month == 12), today.month % 12 + 1, 1)
    problem = make_problem(workloads, profiles, offers, budget_usd=budget_usd, objective=objective, pricing=pricing,
                           spot_capacity=spot_capacity, max_instances=max_instances, horizon_months=horizon_months,
                           leftover_value=leftover_value, placement=placement, spread=spread, budgets=budgets,
                           start_date=start_date, keep_unpruned=explain)
    solver = resolve_solver(solver)
    res = FleetResult(status="infeasible", objective=objective, horizon_months=problem.horizon_months,
                      horizon_note=problem.horizon_note, start_month=month_label(start_date, 0),
                      leftover_value=problem.leftover_value)
    res.rules = fx.rules(problem)
    res.solver = {"name": solver, "blocks": len(problem.blocks), "periods": len(problem.periods or []),
                  "merge": merge_note or problem.merge_note, "pruned": problem.pruned,
                  "candidates": {w: len(cs) for w, cs in problem.cands.items()},
                  "rejected": {w: dict(r) for w, r in problem.rejected.items()}}
    empty = [w for w in workloads if not problem.cands.get(w.name)]
    if empty:
        w = empty[0]
        from optimizer.diagnose import no_fit_reason

        rej = problem.rejected.get(w.name, {})
        why = no_fit_reason(w.workload, offers, rej)
        if rej.get("spot_not_allowed") or rej.get("pricing_not_allowed"):
            fits, _, _ = candidates_for(w.workload, offers, allow_spot=True, pricing=None)
            offered = sorted({c.offer["pricing"] for c in fits})
            asked = sorted(set(pricing or DEFAULT_PRICING)
                           - ({"spot"} if not w.allow_spot else set()))
            why = {"kind": "pricing", "message": (
                f"none of the offers that can hold a replica is sold as {', '.join(asked)}; they are offered as: "
                f"{', '.join(offered)} (change --pricing" + (" or add --allow-spot" if "spot" in offered and
                                                              not w.allow_spot else "") + ")")}
        if rej.get("flex_start_training_only"):
            why = {"kind": "pricing", "message": (
                f"{rej['flex_start_training_only']} Flex-start offers are for training jobs only (their VMs run at "
                "most 7 days and start when capacity is found), and no other offer allowed can hold a replica "
                "(add on_demand or reserved to --pricing)")}
        res.reason = {**why, "workload": w.name, "message": f"{w.name}: {why['message']}"}
        long = _blocks_too_short(problem)
        if long:
            res.reason = {**res.reason, "kind": "pricing", "message": long}
        return res
    if objective == "roi":
        roi_problem = problem
        if problem.placement != "any" and _placed(problem):
            # each serving workload stays in the placement group the minimum-cost plan chose (the ROI steps then
            # need no placement binaries); said in the notes
            base = solve_cost(problem.replace(objective="cost"), solver=solver, time_limit_s=time_limit_s / 2,
                              gap_rel=gap_rel)
            if base.report.status in ("optimal", "time_limit"):
                keep = {w.name: set(_groups_used(problem, base, w.name)) for w in _placed(problem)}
                cands = {w: [c for c in cs if w not in keep or placement_group(c.offer, problem.placement) in keep[w]]
                         for w, cs in problem.cands.items()}
                roi_problem = as_unplaced(problem.replace(cands=cands))
                res.notes.append("ROI with placement rules: each serving workload is kept in the "
                                 + problem.placement + " its minimum-cost plan uses")
        sol, its = solve_roi(roi_problem, solver=solver, time_limit_s=time_limit_s, gap_rel=gap_rel)
        res.dinkelbach = its
    else:
        sol = solve_cost(problem, solver=solver, time_limit_s=time_limit_s, gap_rel=gap_rel)
    rep = sol.report
    res.solver.update({"status": rep.status, "gap": rep.gap, "seconds": round(rep.seconds, 3), "message": rep.message,
                       "method": "enumeration" if rep.solver == "enumeration" else "milp"})
    if rep.status == "infeasible":
        res.reason = fx.why_infeasible(problem, solver, time_limit_s, gap_rel)
        long = _blocks_too_short(problem)
        if long and res.reason:
            res.reason = {**res.reason, "message": f"{long} (else: {res.reason.get('message', '')})"}
        return res
    if rep.status not in ("optimal", "time_limit"):
        res.status = rep.status
        res.reason = {"kind": "solver", "message": f"the {solver} solver found no plan within {time_limit_s:g} s "
                                                   f"({rep.message or rep.status}); raise --time-limit or narrow the choice"}
        return res
    bad = _verify(problem, sol)
    if bad:
        res.status = "not_solved"
        res.reason = {"kind": "solver", "message": f"the solver's plan fails a check ({bad}); no plan is shown rather than a wrong one"}
        return res
    res.status = rep.status
    sol = trim_allocations(problem, sol)
    res.recurring = problem.recurring
    cidx = _cand_index(problem)
    used_types = {problem.slots[k].offer["instance_type"] for k in sol.N} | \
        {cidx[(w, ok)].offer["instance_type"] for (w, ok, _) in list(sol.X) + list(sol.A)}
    res.lines = fleet_lines(problem, sol, on_demand_rates(offers, used_types))
    mo = money(problem, sol)
    for k, v in mo.items():
        setattr(res, k, v)
    res.commitment = {"total_over_term_usd": mo["commitment_usd"], "upfront_usd": mo["upfront_usd"]}
    big = [ln for ln in res.lines if ln.count > 64]
    if big:
        res.notes.append(f"{big[0].count} instances of {big[0].instance_type} in {big[0].region}: check your quota "
                         "(max_instances caps it)")
    res.workloads, res.blocks = workload_summaries(problem, sol)
    if objective == "roi":
        res.value_usd = round(sol.value, 2)
        res.net_value_usd = round(sol.value - sol.cost, 2)
        res.roi = None if sol.cost <= 0 else round(sol.value / sol.cost - 1.0, 6)
        if sol.cost <= 0:
            res.notes.append("no workload's value pays for its capacity: the ROI-maximizing plan buys nothing")
    if rep.status == "time_limit":
        res.notes.append("the solver stopped at its time limit: feasible, not proven optimal "
                         f"(gap {100 * (rep.gap or 0.0):.3g} %)")
    if any(ln.estimated for ln in res.lines):
        res.notes.append("some prices are estimated (source rule:...): reserved rates derived from a documented discount rule")
    if problem.spread == "zones" and not any(ln.zone for ln in res.lines):
        res.notes.append("--spread zones: none of the offers used carries a zone in the price data (regional "
                         "on-demand and reserved prices): put the min_replicas instances in distinct zones when you "
                         "launch them")
    if mo["after_horizon_usd"] > 0:
        res.notes.append(f"commitments outlive the {problem.horizon_months}-month horizon: ${mo['after_horizon_usd']:,.2f} "
                         f"is still paid after it, counted in the total at {100 * (1 - problem.leftover_value):.0f} %"
                         " (--leftover-value)")
    res.binding = fx.binding(problem, sol)
    res.notes.extend(_unusable_notes(problem, len(offers)))
    res.notes.extend(_purchase_notes(problem, sol))
    if explain and objective == "roi":
        res.notes.append("the strategy comparison and the provider alternatives price the FULL demand; an ROI plan "
                         "may serve less, so they are not shown (run --objective cost to compare)")
    elif explain:
        fx.explain_into(res, problem, sol, solver, time_limit_s, gap_rel, mo, plan_seconds=rep.seconds)
    res.solver["total_seconds"] = round(time.perf_counter() - t0, 3)
    return res



def plan_workload(workload: "Workload", offers: "pd.DataFrame", *, name: str = "workload", allow_spot: bool = False,
                  min_replicas: int | None = None, spot_only_ok: bool = False, start_month: int = 0,
                  end_month: int | None = None, explain: bool = False, **kw) -> FleetResult:
    """A plan of one workload (what a single-workload ``recommend`` is): serving at its flat demand
    ``workload.tokens_per_second``, or a training job before ``workload.deadline_hours``. ``min_replicas`` defaults
    to 1 for serving (a fleet never drops to zero), 0 for training; other keywords as :func:`plan_fleet`."""
    from optimizer.demand import flat_profile

    serve = workload.task == "serve"
    fw = FleetWorkload(name=name, workload=workload, allow_spot=allow_spot,
                       min_replicas=(1 if serve else 0) if min_replicas is None else min_replicas,
                       spot_only_ok=spot_only_ok, deadline_hours=None if serve else workload.deadline_hours,
                       start_month=start_month, end_month=end_month)
    profiles = {name: flat_profile(float(workload.tokens_per_second or 0.0))} if serve else {}
    return plan_fleet([fw], profiles, offers, explain=explain, **kw)
