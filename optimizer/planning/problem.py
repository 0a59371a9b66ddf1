"""The records every planning stage shares: the workloads, demand blocks, budgets and the problem (candidates per
workload, commitment slots, periods) that the model is built from, and the small helpers on offers every stage uses
(purchase kinds, capacity-block durations, savings-plan scopes, commitment parts and rates, placement, cluster and spot
groups, units of a job, the model-size estimate of solve times).

Nothing here builds or solves a model: :func:`optimizer.planning.problem_build.make_problem` makes a
:class:`FleetProblem`, :mod:`optimizer.planning.milp` writes it as a MILP and :mod:`optimizer.planning.solve` solves it.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from gpuopt.kernel.errors import InputError
from gpuopt.kernel.records import HOURS_PER_MONTH, SAVINGS_PLAN_TERM_HOURS, WINDOW_MAX_DAYS
from optimizer.planning.candidates import Candidate, text_values
from optimizer.planning.horizon import TERM_MONTHS, Activity, Period, commitment_cost_factor, slot_starts
from optimizer.planning.owned import owned_id, owned_window

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

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


def block_days_of(months: int) -> int | None:
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
    oid = owned_id(offer)  # an owned savings plan (optimizer.planning.owned) covers only what runs under it
    head = f"owned:{oid.replace('|', '/').replace('@', '/')}" if oid else str(offer["provider"])
    return "|".join((head, str(offer["pricing"]), pay, cls, region, family))


@dataclass
class FleetBlock:
    """A block of a typical month of period ``period``: ``start_hour`` from the month start, ``hours`` long,
    ``demand`` per serving workload running in it (tokens/s). ``label`` names it (e.g. "hour 9" or "Mon 09:00 +3
    merged"); ``end_hour``: a block spread over a stretch [start_hour, end_hour) (a repeating hour of a daily or
    weekly profile) has its hours spread evenly over the stretch. ``slots``: the blocks of the demand grid merged
    into this one (optimizer.planning.demand.MergedBlock.members: hours of the day or week, or stretches of a calendar
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
    exclusive month it stops; None: the horizon's end); redundancy (serving: the share of each block's demand the
    fleet still carries after losing its largest failure domain, :func:`failure_loss`; 1.0 = N+1 at peak, 0 = none;
    issue 26); allow_marketplace (serving: may run on marketplace-tier offers, third-party hosts without a
    data-centre SLA; training and batch always may); allow_spot_training (a synchronous train/finetune job whose
    window is longer than :data:`SPOT_TRAINING_MAX_HOURS` may run on spot); schedule_margin (training: capacity
    blocks bought for the job hold this share more unit-hours than its estimate uses, so a 10 % optimistic estimate
    still finishes inside the prepaid window; issue 26, default 0.15 from the request); region ((provider,
    region): the workload runs only there -- the two pools of a disaggregated deployment, gpuopt.phase_mix; None:
    anywhere the plan allows); mixed_replicas (serving: may its replicas differ in shape -- GPU, layout, precision --
    inside one region; default False: one replica shape per region, :func:`workload_group`, issue 31);
    min_replica_share (serving with ``mixed_replicas``: each replica shape it uses carries at least this share of
    its demand in every block it runs in, 0..1; the request's default is 0.10).
    """

    name: str
    workload: "Workload"
    allow_spot: bool = False
    min_replicas: int = 0
    spot_only_ok: bool = False
    redundancy: float = 0.0
    allow_marketplace: bool = False
    allow_spot_training: bool = False
    schedule_margin: float = 0.0
    region: tuple[str, str] | None = None
    mixed_replicas: bool = False
    min_replica_share: float = 0.0
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
    (:func:`savings_plan_scope`) for ``term_months`` from ``start_month``; ``upfront_share`` of it paid upfront.
    ``given_usd_per_hour`` set: a savings plan the team owns (optimizer.planning.owned), at most that spend, at $0
    (already paid), for the months of the horizon its term covers."""

    key: str
    scope: str
    offer: dict[str, Any]
    start_month: int
    term_months: int
    upfront_share: float
    given_usd_per_hour: float | None = None

    @property
    def owned(self) -> bool:
        return self.given_usd_per_hour is not None

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
    #: With budgets, the candidates of the groups the problem without them can use in an optimal plan
    #: (problem_build._bound_groups on it): what solve.solve_within_limits plans first; None: all of ``cands``
    free_cands: dict[str, list[Candidate]] | None = None
    max_instances: int | None = None                      # quota per instance type and region (instances)
    quotas: Any = None                                    # providers.quotas.QuotaTable (--quota, live quotas)
    owned: dict[str, Any] = field(default_factory=dict)   # CommitmentDiscountId -> providers.owned.OwnedCommitment
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

    @property
    def capped(self) -> bool:
        """A quota caps instances (``max_instances`` or ``--quota`` limits), or some candidate runs on an owned
        commitment (a few instances, or a savings plan's spend, at $0): dominance pruning (of offers and of
        placement groups) is not safe. Owned commitments that no candidate can use (another provider, a term over)
        leave the problem as it is without them: the example plan with an AWS savings plan that covers none of its
        candidates was not pruned and its first leaf MILP (84,000 columns against 3,600) ran past 13 minutes."""
        return self.max_instances is not None or bool(self.quotas) or self.owned_in_use()

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
                oid = owned_id(c.offer)
                if oid:  # an owned commitment (optimizer.planning.owned): one slot, given, from month 0
                    if oid in self.owned and f"owned:{oid}" not in slots:
                        first, end = owned_window(self.owned[oid], self.start_date or _dt.date.today(),
                                                  self.horizon_months)
                        if end > first:
                            slots[f"owned:{oid}"] = Slot(f"owned:{oid}", ok, c.offer, first, end - first)
                    continue
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
                oid = owned_id(c.offer)
                if oid:  # an owned savings plan: one slot, given, for the months its term covers
                    if oid in self.owned and f"owned:{oid}" not in plan_slots:
                        first, end = owned_window(self.owned[oid], self.start_date or _dt.date.today(),
                                                  self.horizon_months)
                        if end > first:
                            plan_slots[f"owned:{oid}"] = PlanSlot(f"owned:{oid}", scope, c.offer, first, end - first,
                                                                  0.0, float(self.owned[oid].usd_per_hour or 0.0))
                    continue
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

    def slots_of(self, okey: str) -> tuple[str, ...]:
        """Slot keys of committed offer ``okey`` (every month it may be bought), in start order."""
        return tuple(self._slots_of.get(okey, ()))

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
        leftover value of the months past the horizon); 0 for a savings plan the team owns (already paid)."""
        if s.owned:
            return 0.0
        return HOURS_PER_MONTH * commitment_cost_factor(s.start_month, s.term_months, self.horizon_months,
                                                        self.leftover_value)

    def job_block_days(self, w: FleetWorkload, margin: float = 0.0) -> int:
        """The most days one unit of training job ``w`` can run on capacity blocks: its window (deadline, else the
        horizon left from its start) times ``1 + margin`` (the schedule margin, issue 26: blocks bought for a job
        may run past its deadline by it) in whole days, rounded up (a 5-hour window still buys a day; a window past
        182 days is covered by blocks bought back to back)."""
        hours = w.deadline_hours if w.deadline_hours else (self.horizon_months - w.start_month) * HOURS_PER_MONTH
        return max(1, int(math.ceil(hours * (1.0 + max(0.0, margin)) / 24.0 - 1e-9)))

    def job_window_hours(self, w: FleetWorkload) -> float:
        """Hours of training job ``w``'s window: its deadline, else the horizon left from its start."""
        return float(w.deadline_hours if w.deadline_hours else (self.horizon_months - w.start_month) * HOURS_PER_MONTH)

    def block_windows(self) -> list[tuple[int, int]]:
        """(start month, end month) of the capacity blocks a service may run on: from one period boundary to a later
        one at most 5 months on (a block lasts at most 182 days), so a block spans the periods a service runs
        through alike (an unrelated job's start does not cut it in two)."""
        bounds = sorted({p.start_month for p in self.periods or []} | {self.horizon_months})
        return [(a, b) for i, a in enumerate(bounds) for b in bounds[i + 1:] if block_days_of(b - a) is not None]

    def workloads_by_name(self) -> dict[str, FleetWorkload]:
        return {w.name: w for w in self.workloads}

    def running_units(self, training: set[str] | frozenset[str], w: str, x: float) -> float:
        """The units of workload ``w``'s allocation ``x`` (units, the block's average) running at once: a training
        job's units are time-sliced over the block, so while it runs they are whole instances (``ceil(x)``; a 70B
        job on 8 instances at once broke --max-instances 3: issue 33); a service's are ``x``. ``training``: the
        names of the training workloads (:meth:`training_names`, computed once by the caller). The one rule of
        ``--max-instances`` (optimizer.planning.solve.keeps_limits) and of the quotas (limits.quota_needs)."""
        return math.ceil(float(x) - 1e-9) if w in training else float(x)

    def training_names(self) -> frozenset[str]:
        """The names of the training workloads (jobs of work by a deadline)."""
        return frozenset(w.name for w in self.workloads if w.training)

    def has_purchases(self, allowed: set[str] | None = None) -> bool:
        """Some candidate is a capacity block or a savings-plan rate (planned by the MILP only)."""
        return any(purchase_kind(c.offer) and (allowed is None or c.offer["pricing"] in allowed)
                   for cs in self.cands.values() for c in cs)

    def owned_in_use(self) -> bool:
        """True when some candidate runs on a commitment the team owns (optimizer.planning.owned): the enumerations
        then do not apply (a $0 offer in limited supply), the MILP plans it."""
        return bool(self.owned) and any(owned_id(c.offer) for cs in self.cands.values() for c in cs)

    def owned_count(self, s: Slot) -> float | None:
        """The instances an owned slot gives (its commitment's count), None for a slot that is bought."""
        oid = owned_id(s.offer)
        return float(self.owned[oid].count) if oid and oid in self.owned else None

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


def replica_shape(c) -> tuple[str, str]:
    """The shape of a candidate's replicas (issue 31): its GPU shape and layout label (``Candidate.shape``:
    GPU model, GPUs per instance, memory, interconnect, instances per replica, TP/PP) and precision -- replicas of one
    shape serve at one speed, whatever the purchase option or instance type they run on."""
    return (str(c.shape), str(getattr(c.sizing, "precision", "") or ""))


def workload_group(problem: "FleetProblem", w: "FleetWorkload", c) -> tuple:
    """The group all of a workload's units lie in (the MILP's ``y_wg``, the exact planner's groups): the placement
    group (:func:`placement_group`; () for placement "any"), and for a serving workload without ``mixed_replicas``
    its replica shape (:func:`replica_shape`) too -- one replica shape per serving workload and region, so every
    replica behind its endpoint runs at the same speed (issue 31: an endpoint of 832, 832 and 431 tokens/s replicas
    needs weighted routing no default load balancer does; vLLM's and SGLang's routers spread requests evenly)."""
    g = placement_group(c.offer, problem.placement) if problem.placement != "any" else ()
    if w.training or w.divisible or w.mixed_replicas:
        return g
    return g + (replica_shape(c),)


def placement_part(group: tuple) -> tuple:
    """The placement group (:func:`placement_group`) of a :func:`workload_group`: without its replica shape."""
    return tuple(x for x in group if not isinstance(x, tuple))


def grouped(problem: "FleetProblem", w: "FleetWorkload") -> bool:
    """Whether the MILP gives ``w`` group binaries (:func:`workload_group`): a serving workload, not divisible,
    under a placement rule or with one replica shape."""
    return not w.training and not w.divisible and (problem.placement != "any" or not w.mixed_replicas)


def capacity_pool(pricing: str) -> str:
    """The capacity pool an offer's instances come from (issue 26): ``spot``, ``capacity_block``, ``flex_start``, or
    ``on_demand`` for on-demand, reserved and savings-plan rows -- reserved instances and savings plans are billing
    over on-demand capacity ("Reserved Instances are not physical instances; they are a billing discount applied to
    the use of On-Demand Instances in your account", Amazon EC2 User Guide, "Reserved Instances"), so a job may mix
    them with on-demand instances of the same type in one cluster."""
    pr = str(pricing or "")
    return pr if pr in ("spot", CAPACITY_BLOCK, "flex_start") else "on_demand"


def cluster_group(offer: dict[str, Any]) -> tuple[str, ...]:
    """The capacity pool a synchronous training job runs on (issues 11 and 26): one instance type in one region (and
    zone, for rows priced per zone) of one provider -- one fabric, one GPU model -- from one pool
    (:func:`capacity_pool`): a data-parallel step never spans spot and a capacity block, whose instances are
    delivered in one cluster of one zone (AWS EC2 User Guide, "Capacity Blocks for ML"; EFA traffic stays within a
    subnet, AWS "Elastic Fabric Adapter" limitations)."""
    return ("cluster", str(offer["provider"]), str(offer["region"]), str(offer.get("zone") or ""),
            str(offer["instance_type"]), capacity_pool(str(offer.get("pricing") or "")))


#: A synchronous training job (train, finetune) whose window is longer than this many hours runs on spot only with
#: ``allow_spot_training`` (issue 26): every reclaim stops the whole data-parallel job, and the AWS Spot Advisor's
#: buckets (https://aws.amazon.com/ec2/spot/instance-advisor/) are monthly interruption frequencies of 5 % to over
#: 20 % per instance, so a job of many nodes for weeks is interrupted often (optimizer.sizing.goodput prices it); 72 h
#: is our policy ("longer than a few days", issue 26), not a measured threshold.
SPOT_TRAINING_MAX_HOURS = 72.0
#: Spot rows without a date (``as_of`` "") are not planned for a workload that runs longer than this many days
#: (issue 26: "undated spot prices are not used for commitments of weeks"): a spot price moves daily, an undated one
#: cannot be checked against the market.
UNDATED_SPOT_MAX_DAYS = 14.0


def failure_loss(c: Candidate) -> float:
    """Tokens/s a serving unit of candidate ``c`` loses when one of its instances fails (the N+1 rule's failure
    domain, issue 26): an instance holding whole replicas loses them (throughput / instances per unit), a replica
    spread over several instances (tensor or pipeline parallel across nodes) is lost whole (throughput / replicas
    per unit); so throughput / min(replicas, instances)."""
    k = max(1.0, float(c.instances_per_unit))
    r = max(1.0, float(c.replicas_per_unit))
    return float(c.throughput_per_unit) / min(r, k)


def job_units(c: Candidate) -> float:
    """The most units of a training candidate that run at once: the job's scale on that offer (the GPUs that meet
    its deadline, ``ReplicaSizing.job_gpus``) in units; its throughput per GPU was taken at that scale."""
    s = getattr(c, "sizing", None)
    job = getattr(s, "job_gpus", None) if s is not None else None
    per = float(getattr(s, "gpus_per_replica", 0) or 0) if s is not None else 0.0
    if not job or per <= 0:
        return math.inf
    return max(1.0, math.floor(job / per + 1e-9))


class SpotCaps(int):
    """The spot cap: instances of one spot instance type per region a plan may count on (its int value, for every
    GPU model) and, per GPU model, a cap of its own (``by_gpu``, issue 26: "spot caps per GPU class"; set by the
    user, ``--spot-capacity-gpu H100-80GB=4``: no public source gives spot capacity by GPU class). It is an int, so
    every rule written for one cap still reads it; :func:`spot_cap` gives an offer's."""

    by_gpu: dict[str, int]

    def __new__(cls, default: int, by_gpu: dict[str, int] | None = None):
        obj = int.__new__(cls, int(default))
        obj.by_gpu = {str(g): int(v) for g, v in (by_gpu or {}).items()}
        return obj

    def __reduce__(self):
        return (SpotCaps, (int(self), dict(self.by_gpu)))

    def of(self, offer: dict[str, Any]) -> int:
        """The cap of ``offer``'s GPU model, else the default."""
        return int(self.by_gpu.get(str(offer.get("gpu_model") or ""), int(self)))

    def divided(self, k: int) -> "SpotCaps":
        """Every cap divided by ``k`` (whole instances): a share for each of k workloads."""
        k = max(1, int(k))
        return SpotCaps(int(self) // k, {g: v // k for g, v in self.by_gpu.items()})


def spot_cap(cap: int, offer: dict[str, Any]) -> int:
    """The spot cap of ``offer``: its GPU model's when ``cap`` is a :class:`SpotCaps` that has one, else ``cap``."""
    return cap.of(offer) if isinstance(cap, SpotCaps) else int(cap)


def spot_group(offer: dict[str, Any]) -> tuple[str, str, str]:
    """Spot capacity is capped per instance type and region, all its zones together."""
    return (str(offer["provider"]), str(offer["region"]), str(offer["instance_type"]))


def cand_index(problem: FleetProblem) -> dict[tuple[str, str], Candidate]:
    """(workload name, offer key) -> candidate, built once per problem and its candidate lists (kept on the problem;
    rebuilt when a list is replaced or changes length): 200 workloads called it 622 times, 112 s of building."""
    key = tuple((w, id(cs), len(cs)) for w, cs in problem.cands.items())
    got = problem.__dict__.get("_cand_index")
    if got is not None and got[0] == key:
        return got[1]
    idx = {(w, c.okey): c for w, cs in problem.cands.items() for c in cs}
    problem.__dict__["_cand_index"] = (key, idx)
    return idx


def placed(problem: FleetProblem) -> list[FleetWorkload]:
    """Serving workloads whose candidates lie in more than one placement group."""
    return [w for w in problem.workloads if not w.training and not w.divisible and
            len({placement_group(c.offer, problem.placement) for c in problem.cands.get(w.name, [])}) > 1]
