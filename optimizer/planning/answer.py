"""The answer of a plan: its lines (:class:`FleetLine`: provider, region, instance, purchase option, count, hours,
rates, commitments), the result record (:class:`FleetResult`), the per-workload summaries and the notes about
purchases and offers that could not be used. Pure: reads a problem and its solution, solves nothing.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any

from gpuopt.kernel.records import HOURS_PER_MONTH, is_estimated
from optimizer.planning.candidates import COMMITTED, Candidate
from optimizer.planning.horizon import month_label
from optimizer.planning.problem import (
    CAPACITY_BLOCK,
    CAPACITY_BLOCK_MAX_DAYS,
    PURCHASED,
    SAVINGS_PLANS,
    SAVINGS_PLAN_TERM_MONTHS,
    FleetProblem,
    block_days_of,
    cand_index,
    commitment_parts,
    committed_rate,
    failure_loss,
    purchase_kind,
    savings_plan_scope,
)
from optimizer.planning.owned import owned_id
from optimizer.planning.solution import FleetSolution, capacity_block_parts


def offer_tier(o) -> str:
    """The offer's tier (``tier`` column: hyperscaler, neocloud, marketplace; issue 26), "" when unknown."""
    t = o.get("tier") if hasattr(o, "get") else None
    t = "" if t is None or str(t) in ("<NA>", "nan") else str(t)
    return t


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
    tier: str = ""
    reused: str = ""                 # an owned commitment reused: its CommitmentDiscountId (issue 26)
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
    scope: str = ""  # a savings plan's line: the scope it covers (optimizer.planning.problem.savings_plan_scope)
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
    targets: list[dict[str, Any]] = field(default_factory=list)        # the plan priced at other serving targets
    marketplace: dict[str, Any] | None = None                          # the plan with marketplace offers allowed
    precision: dict[str, Any] | None = None                            # the plan with FP8 allowed
    size_mix: dict[str, Any] | None = None                             # the split by prompt length (gpuopt.size_mix)
    disaggregated_pools: dict[str, Any] | None = None                  # prefill/decode pools (gpuopt.phase_mix)
    rules: list[str] = field(default_factory=list)
    reason: dict[str, Any] | None = None
    notes: list[str] = field(default_factory=list)
    solver: dict[str, Any] = field(default_factory=dict)
    #: CommitmentDiscountIds of the owned commitments the plan runs on (not in to_dict: the lines say it)
    owned_used: list[str] = field(default_factory=list)

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
        d.pop("owned_used", None)
        d["feasible"] = self.feasible
        d["gap"] = self.gap
        return d


def fleet_lines(problem: FleetProblem, sol: FleetSolution, od_rates: dict) -> list[FleetLine]:
    """The plan's lines, the dearest offer first and each offer's lines in month order: one per commitment bought
    (offer and start month) and one per hourly offer and stretch of periods it runs alike in."""
    idx = cand_index(problem)
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
        if sk.startswith("owned:"):
            ln.term_end = owned_term_end(problem, sk[len("owned:"):]) or ln.term_end
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
        ln._total_exact = h["cost"] * p.months  # not a field: merge_periods rounds the sum once
        ln.start_month, ln.end_month = p.start_month + 1, p.end_month
        c0 = next(iter(h["users"].values()))
        ln.replicas = int(math.floor(count * c0.replicas_per_unit / c0.instances_per_unit + 1e-9))
        ln.covered_by = h.get("covered_by", "")
        lines.append(ln)
    lines += _purchase_lines(problem, sol)
    lines = merge_periods(lines)
    # dearest offer first, each offer's lines together in month order
    offer = lambda ln: (ln.provider, ln.region, ln.zone, ln.instance_type, ln.pricing, ln.payment)  # noqa: E731
    spend: dict[tuple, float] = {}
    for ln in lines:
        spend[offer(ln)] = spend.get(offer(ln), 0.0) + ln.total_usd
    lines.sort(key=lambda ln: (-spend[offer(ln)], offer(ln), ln.start_month))
    return lines


def owned_term_end(problem: FleetProblem, oid: str) -> str:
    """The last month (``YYYY-MM``) of owned commitment ``oid``'s own term ("" unknown): a breaker read 2027-12,
    the horizon's end, for an RI ending 2028-06-01. The end is exclusive."""
    c = problem.owned.get(oid)
    end = str(getattr(c, "end", "") or "")[:10]
    if len(end) != 10:
        return ""
    import datetime as _dt

    last = _dt.date.fromisoformat(end) - _dt.timedelta(days=1)
    return f"{last.year:04d}-{last.month:02d}"


def _purchase_lines(problem: FleetProblem, sol: FleetSolution) -> list[FleetLine]:
    """Lines of the purchases the plan sizes: each capacity block (:func:`capacity_block_parts`: a training job's
    unit-days as blocks AWS sells, back to back; a service's instances for its window of months) and each savings
    plan (USD/h committed; ``count`` 1, ``usd_per_hour`` the commitment)."""
    idx = cand_index(problem)
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
            days = block_days_of(b - a)
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
                       commitment_usd=round(whole, 2), source=str(o.get("source") or ""), tier=offer_tier(o),
                       as_of=str(o.get("as_of") or ""), estimated=is_estimated(o.get("source") or ""),
                       offering_class=cls)
        ln.total_usd = round(problem.plan_slot_cost(s) * x, 2)
        if s.owned:  # a savings plan the team owns: its use in this plan, already paid
            ln.usd_per_hour, ln.monthly_usd, ln.upfront_usd, ln.commitment_usd = 0.0, 0.0, 0.0, 0.0
            ln.reused = owned_id(o)
            ln.utilization = round(min(1.0, used / (s.given_usd_per_hour * HOURS_PER_MONTH * months_in)), 4) \
                if months_in and s.given_usd_per_hour else None
        ln.scope = s.scope
        ln.start_month, ln.end_month = s.start_month + 1, min(s.end_month, H)
        ln.term_end = month_label(problem.start_date, s.end_month - 1) if problem.start_date else f"month {s.end_month}"
        if s.owned:
            ln.term_end = owned_term_end(problem, owned_id(o)) or ln.term_end
        lines.append(ln)
    return lines


def merge_periods(lines: list[FleetLine]) -> list[FleetLine]:
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
                     source=str(o.get("source") or ""), as_of=str(o.get("as_of") or ""), tier=offer_tier(o),
                     reused=owned_id(o), estimated=is_estimated(o.get("source") or ""),
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
    idx = cand_index(problem)
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
                if getattr(s, "utilization", None) is not None:  # sized at the operating point (issue 27)
                    sizing[-1].update({"request_rate_per_replica": round(float(s.request_rate), 4),
                                       "utilization": round(float(s.utilization), 4)})
                if getattr(s, "disaggregated", None):  # prefill and decode replicas (issue 27 point 5)
                    sizing[-1]["disaggregated"] = dict(s.disaggregated)
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
            d["at_peak"] = at_peak_load(w, problem, idx, cap, reps, active, used.get(w.name, set()))
        out_w.append(d)
    # the N+1 rule's view (issue 26): capacity less the largest failure loss among the offers the workload uses
    loss = [(w, max((failure_loss(idx[(w.name, ok)]) for ok in used.get(w.name, ())), default=0.0))
            for w in problem.workloads if not w.training and not w.divisible and w.redundancy > 0]
    out_b = [{"label": b.label, "period": b.period, "months": problem.months(b), "start_hour": b.start_hour,
              "end_hour": b.end_hour if b.end_hour is not None else round(b.start_hour + b.hours, 6),
              "slots": list(b.slots), "slot_labels": list(b.slot_labels), "grid_hours": b.grid_hours,
              "hours": round(b.hours, 6), "demand": {k: v for k, v in b.demand.items()},
              "capacity": {w.name: round(cap.get((w.name, bi), 0.0), 4) for w in problem.workloads
                           if not w.training and problem.active(w, b)},
              "capacity_after_loss": {w.name: round(cap.get((w.name, bi), 0.0) - ls, 4) for w, ls in loss
                                      if problem.active(w, b)},
              "training_flops_per_s": {w.name: cap.get((w.name, bi), 0.0) for w in problem.workloads if w.training}}
             for bi, b in enumerate(problem.blocks)]
    return out_w, out_b


def at_peak_load(w, problem: FleetProblem, idx, cap: dict, reps: dict, active: list[int], used: set) -> dict | None:
    """How the plan's replicas of serving workload ``w`` run in its peak block (issue 27 point 2): the demand routed
    to the replicas the plan runs there in proportion to their sized throughput (a capacity-weighted load balancer),
    the operating point of a replica of the offer with the most throughput per unit at its share
    (:func:`optimizer.sizing.estimate.operating_point`, the seeded simulation: Poisson arrivals, the workload's mean
    lengths) on the most-used offer's GPU and layout. Returns {block, replicas, rate_per_replica (requests/s),
    utilization (of the replica's saturation rate), ttft_p99_ms, tpot_p99_ms, gpu, method}, or None (no demand, a
    divisible workload, a replica the model cannot start, or fractional GPUs), with the p99 targets; a disaggregated
    unit is not simulated: its utilization is of the rate its pools were sized for. The replicas are sized at the
    highest rate whose mean-field p99s meet the targets (``optimizer.sizing.operating.max_rate_within``); this is
    the simulation's check of that at the demand the plan serves (``optimizer.planning.plan.at_peak_note`` warns
    when it misses)."""
    if w.training or w.divisible or not active or not used:
        return None
    peak = max(active, key=lambda bi: problem.blocks[bi].demand.get(w.name, 0.0))
    demand = problem.blocks[peak].demand.get(w.name, 0.0)
    n = reps.get((w.name, peak), 0.0)
    if demand <= 0 or n <= 0:
        return None
    from gpuopt.kernel.errors import InputError
    from optimizer.sizing.estimate import operating_point
    from optimizer.sizing.specs import load_gpu_board
    from optimizer.sizing.workload import serve_lengths

    ok = max(used, key=lambda k: idx[(w.name, k)].throughput_per_unit)
    c = idx[(w.name, ok)]
    s = c.sizing
    gpus = float(getattr(s, "gpus_per_replica", 0) or 0)
    if gpus < 1:
        return None
    import dataclasses

    from optimizer.sizing.workload import latency_targets

    ttft_t, tpot_t = latency_targets(w.workload)
    try:
        gpu = load_gpu_board(str(c.offer["gpu_model"]), str(c.offer.get("interconnect") or ""))
        _, out = serve_lengths(w.workload)
        total = cap.get((w.name, peak), 0.0)
        per_replica = c.throughput_per_unit / max(c.replicas_per_unit, 1e-12)  # tokens/s as sized
        rate = (demand / total if total > 0 else 1.0 / n) * per_replica / max(float(out), 1.0)
        dis = getattr(s, "disaggregated", None)
        if dis:  # a unit of prefill and decode pools: its load against the rate it was sized for
            return {"block": problem.blocks[peak].label, "replicas": round(n, 2), "rate_per_replica": round(rate, 4),
                    "utilization": round(rate / max(dis["request_rate"], 1e-12), 4), "saturated": False,
                    "ttft_p99_ms": None, "tpot_p99_ms": None, "gpu": gpu.name, "ttft_target_ms": ttft_t,
                    "tpot_target_ms": tpot_t, "method": {"prefill": "prefill pool (M/D/1)", "decode": "decode pool "
                                                          "(batch at the TPOT target)"}.get(dis.get("pool"),
                                                                                           "disaggregated pools (mean field)")}
        wl = w.workload
        if getattr(s, "precision", None) and s.precision != wl.precision:  # the precision the plan chose there
            wl = dataclasses.replace(wl, precision=s.precision)
        pt = operating_point(wl, gpu, gpus, int(getattr(s, "pipeline_parallel", 1) or 1), rate)
    except (InputError, ValueError, KeyError):
        return None
    if pt is None:
        return None
    return {"block": problem.blocks[peak].label, "replicas": round(n, 2), "rate_per_replica": round(rate, 4),
            "utilization": round(pt.utilization, 4), "saturated": pt.saturated,
            "ttft_p99_ms": None if pt.ttft_p99_ms is None else round(pt.ttft_p99_ms, 1),
            "tpot_p99_ms": None if pt.tpot_p99_ms is None else round(pt.tpot_p99_ms, 2),
            "gpu": gpu.name, "ttft_target_ms": ttft_t, "tpot_target_ms": tpot_t, "method": pt.method}


#: Why an offer cannot hold a replica (the reasons of optimizer.planning.candidates.candidates_for), as notes say it.
_UNUSABLE = {"does_not_fit": "have too little GPU memory for a replica of up to 64 GPUs",
             "no_cluster_fabric": "would need a replica over several instances and have no cluster fabric",
             "not_whole_node": "would need a replica over several instances smaller than one node (engines run a "
                               "replica on one node, and across nodes only node by node over a cluster fabric)",
             "no_fabric_bandwidth": "would need a replica over several instances on a cluster fabric of no stated "
                                    "bandwidth",
             "no_spec": "have a GPU with no datasheet row", "no_throughput": "give no throughput",
             "precision_unsupported": "have a GPU that runs none of the allowed precisions (bf16: Ampere and "
                                      "later; fp8: Ada, Hopper, Blackwell; fp4: Blackwell)",
             "misses_latency_target": "hold the model but meet the latency targets at no batch",
             "no_pool_fabric": "have no cluster fabric to move the KV cache between a prefill and a decode pool",
             "no_disaggregated_unit": "have one GPU per instance and no cluster fabric: no room for separate prefill "
                                      "and decode replicas (--disaggregate on; auto or off serve co-located)"}


def serving_run_months(problem: FleetProblem, name: str) -> int:
    """The most months in a row the workload ``name`` serves: consecutive periods summed (a period is a run of alike
    months, so a 36-month service is three 12-month periods where commitments may start -- issue 30: the message
    said "12 months in a row" for it)."""
    best = run = 0
    for p in problem.periods or []:
        run = run + p.months if name in p.serving else 0
        best = max(best, run)
    return best or int(problem.horizon_months or 0)


def blocks_too_short(problem: FleetProblem) -> str:
    """Why capacity blocks could not hold a serving workload, or "": a block lasts at most 182 days, so a service
    runs on one only in a period of at most 5 months (of 730 h)."""
    out = []
    for w in problem.workloads:
        if w.training or not problem.rejected.get(w.name, {}).get("capacity_block_past_182_days"):
            continue
        long = [p for p in problem.periods or [] if w.name in p.serving and block_days_of(p.months) is None]
        if long:
            out.append(f"{w.name} runs {serving_run_months(problem, w.name)} months in a row (of the "
                       f"{problem.horizon_months}-month horizon), and a capacity block lasts at most "
                       f"{CAPACITY_BLOCK_MAX_DAYS} days (5 months of 730 h fit, 6 do not by half a day): it serves on "
                       "blocks only over a shorter --horizon or --months")
    return "; ".join(out)


def purchase_notes(problem: FleetProblem, sol: FleetSolution) -> list[str]:
    """What a buyer must know of the capacity blocks, Flex-start and savings plans a plan uses."""
    idx = cand_index(problem)
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
        if sl.owned:
            per_block: dict[int, float] = {}
            for (w, ok, bi), a in sol.A.items():
                c = idx[(w, ok)]
                if purchase_kind(c.offer) == "savings_plan" and savings_plan_scope(c.offer) == sl.scope:
                    per_block[bi] = per_block.get(bi, 0.0) + c.usd_per_unit_hour * a
            peak = max(per_block.values(), default=0.0)
            notes.append(f"reuse: owned {what} {owned_id(sl.offer)} ({sl.offer['provider']}), "
                         f"${sl.given_usd_per_hour:,.4f}/h: this plan runs up to ${peak:,.4f}/h "
                         f"of use on it in months {sl.start_month + 1}-{sl.end_month} (already paid: $0 in this plan; "
                         "what does not fit it is bought as planned)")
            continue
        notes.append(f"buy: {prov} {what}, {SAVINGS_PLAN_TERM_MONTHS[pricing] // 12}-year, "
                     f"{pay.replace('_', ' ') or 'no upfront'}, committing ${x:,.4f}/h "
                     f"(${x * HOURS_PER_MONTH * sl.term_months:,.2f} over the term) from {when}")
    for w in problem.workloads:
        n = problem.rejected.get(w.name, {}).get("capacity_block_past_182_days")
        if n:
            long = serving_run_months(problem, w.name)
            notes.append(f"{w.name}: {n} capacity-block offers left out: it runs {long} months in a row (of the "
                         f"{problem.horizon_months}-month horizon), and a block "
                         f"lasts at most {CAPACITY_BLOCK_MAX_DAYS} days (5 months of 730 h fit, 6 do not by half a day)")
    return notes


def unusable_notes(problem: FleetProblem, n_offers: int) -> list[str]:
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
