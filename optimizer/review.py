"""The monthly cost review: what the GPU fleet cost, how well it was used, what to commit to, and what it saves.

Input: hourly GPU usage read from a billing export (providers.usage.read_usage -> UsageData). For each
(provider, region, instance type) the on-demand usage of the lookback window is the demand, hour by hour, of the
same MILP as `gpuopt recommend` (optimizer.fleet: committed instances billed every hour, on-demand per block; the
hours of equal demand merged, the load-duration curve): its committed count is the recommended quantity. Nothing
here is a rule of thumb; the closed form "commit to n while the share of hours with at least n instances exceeds
reserved/on-demand" is used only as a cross-check in the tests.

Prices are those in effect during the usage period: the price cache's snapshot valid at the period's end
(pricing_cache.store.load_offers(on_date=...)); when no snapshot that old exists, the review says so.

Monthly figures scale the lookback window to a 730-hour month (AWS Cost Explorer does the same with its lookback).
Fields follow AWS Cost Explorer's reservation recommendations and Azure Advisor's: recommended quantity, term,
payment option, upfront cost, recurring monthly cost, estimated monthly on-demand cost, estimated monthly savings
(amount and percent), average utilization, break-even months, lookback.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

from gpuopt.errors import InputError
from gpuopt.records import HOURS_PER_MONTH, TERM_HOURS, is_estimated

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

TERMS = {"1y": "reserved_1y", "3y": "reserved_3y"}
PAYMENTS = ("no_upfront", "partial_upfront", "all_upfront")


@dataclass
class TypeUsage:
    """What one instance type in one region did over the lookback (units: instance-hours, USD)."""

    provider: str
    region: str
    instance_type: str
    gpu_model: str
    gpu_count: float
    hours_used: float
    hours_by_pricing: dict[str, float]
    peak_instances: float
    average_instances: float
    utilization: float            # average / peak running instances over the window (how flat the demand is)
    billed_cost_usd: float
    effective_cost_usd: float
    on_demand_equivalent_usd: float | None   # the same hours at the period's on-demand rate


@dataclass
class CommitmentRecommendation:
    """A reservation to buy (Cost Explorer / Azure Advisor fields), found by the MILP over the usage profile."""

    provider: str
    region: str
    instance_type: str
    gpu_model: str
    term: str
    payment: str
    recommended_quantity: int
    upfront_cost_usd: float
    recurring_monthly_cost_usd: float
    estimated_monthly_on_demand_cost_usd: float
    estimated_monthly_cost_with_commitment_usd: float
    estimated_monthly_savings_usd: float
    estimated_monthly_savings_pct: float
    average_utilization: float | None
    break_even_months: float | None
    on_demand_usd_per_hour: float
    reserved_effective_usd_per_hour: float
    price_source: str
    estimated_price: bool
    lookback_days: float
    solver_status: str


@dataclass
class ReviewResult:
    """The review (what `gpuopt review` prints); ``to_dict()`` is its JSON."""

    period_start: str
    period_end: str
    lookback_days: float
    source_format: str
    rows: dict[str, int]
    bad_rows: list[dict[str, Any]]
    usage: list[TypeUsage] = field(default_factory=list)
    recommendations: list[CommitmentRecommendation] = field(default_factory=list)
    totals: dict[str, float] = field(default_factory=dict)
    purchases: dict[str, float] = field(default_factory=dict)
    prices: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    unpriced: list[dict[str, str]] = field(default_factory=list)
    #: the export's identifiers of the usage (providers.usage.UsageData.ids as records), for the FOCUS projection;
    #: not part of the JSON
    ids: list[dict[str, Any]] = field(default_factory=list, repr=False)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d.pop("ids", None)
        return d

    def focus_charges(self):
        """FOCUS charges of the reviewed fleet with the recommended commitments (gpuopt.api.review_charges)."""
        from gpuopt.api import review_charges

        return review_charges(self)


def _offer(offers, provider, region, itype, pricing, payment=""):
    df = offers[(offers["provider"] == provider) & (offers["region"] == region) & (offers["instance_type"] == itype)
                & (offers["pricing"] == pricing)]
    if payment:
        df = df[df["payment"].fillna("") == payment]
    else:
        df = df[df["zone"].fillna("") == ""]
    if df.empty:
        return None
    return df.sort_values("usd_per_hour").iloc[0].to_dict()


def recommend_commitment(counts: list[float], od: dict, ri: dict, *, solver: str = "cbc",
                         time_limit_s: float = 30.0):
    """The MILP of optimizer.fleet over one instance type's hourly on-demand usage.

    Args: counts: instances running in each hour of the window; od, ri: the on-demand and the reserved offer rows
        (dicts). Returns (quantity N, monthly cost with the commitment, monthly on-demand
        cost, solver status), monthly = the window scaled to 730 h.
    """
    from optimizer.demand import inline_profile, merge_blocks
    from optimizer.fleet import FleetBlock, FleetProblem, FleetWorkload, solve_cost
    from optimizer.model import Candidate

    merged = merge_blocks({"usage": inline_profile([float(c) for c in counts])}) if counts else []
    blocks = []
    for mb in merged:
        d = float(mb.demand.get("usage", 0.0))
        blocks.append(FleetBlock(start_hour=float(mb.start_hour), hours=float(mb.hours), demand={"usage": d},
                                 label=str(mb.label), end_hour=float(mb.end_hour)))

    def cand(o):
        return Candidate(key=o["instance_type"] + "|" + o["pricing"], offer=o, instances_per_unit=1, replicas_per_unit=1,
                         sizing=SimpleNamespace(gpus_per_replica=float(o.get("gpu_count") or 1.0)),
                         usd_per_unit_hour=float(o["usd_per_hour"]), throughput_per_unit=1.0, shape=o["instance_type"])

    # usage is instance-hours: an hour with 0.6 instances on demand costs 0.6 hours, not a whole instance
    w = FleetWorkload(name="usage", workload=SimpleNamespace(task="serve", model=SimpleNamespace(name=od["instance_type"])),
                      divisible=True)
    # the typical month repeated over the commitment's term: the term is paid in full and used every month, so the
    # optimum is the monthly one (Cost Explorer's view); monthly figures = the term's total / its months
    from optimizer.horizon import TERM_MONTHS

    term = TERM_MONTHS[ri["pricing"]]
    problem = FleetProblem([w], blocks, {"usage": [cand(od), cand(ri)]}, {}, horizon_months=term, placement="any")
    sol = solve_cost(problem, solver=solver, time_limit_s=time_limit_s, gap_rel=0.0)
    sol.cost /= term
    n = sum(sol.N.values())
    # the blocks total 730 h (an inline profile of n hourly samples gives each 730 / n hours): monthly figures
    od_monthly = sum(b.hours * b.demand["usage"] for b in blocks) * float(od["usd_per_hour"])
    return n, sol.cost, od_monthly, sol.report.status


def review(usage, offers, *, term: str = "1y", payment: str = "no_upfront", lookback_days: float | None = None,
           prices: dict | None = None, solver: str = "cbc", window: tuple | None = None) -> ReviewResult:
    """Review GPU usage and recommend commitments.

    Args:
        usage: providers.usage.UsageData (hourly GPU rows of the window).
        offers: the offers in effect during the usage period (OFFER_COLUMNS).
        term: "1y" | "3y"; payment: "no_upfront" | "partial_upfront" | "all_upfront".
        lookback_days: the window the usage covers (for the report; the data is already cut to it).
        prices: price provenance to report.
    Returns: ReviewResult. Raises: InputError for a bad term or payment.
    """
    import pandas as pd

    if term not in TERMS:
        raise InputError("term", f"unknown term '{term}'", accepted=", ".join(TERMS))
    if payment not in PAYMENTS:
        raise InputError("payment", f"unknown payment option '{payment}'", accepted=", ".join(PAYMENTS))
    h = usage.hourly.copy()
    start, end = (pd.Timestamp(window[0]), pd.Timestamp(window[1])) if window else \
        (pd.Timestamp(usage.period_start), pd.Timestamp(usage.period_end))
    negative = int((h["usage_hours"] < 0).sum())
    if negative:
        h["usage_hours"] = h["usage_hours"].clip(lower=0.0)
    window_hours = max(1.0, (end - start).total_seconds() / 3600.0)
    res = ReviewResult(period_start=start.isoformat(), period_end=end.isoformat(),
                       lookback_days=round(lookback_days or window_hours / 24.0, 2), source_format=usage.source_format,
                       rows={"read": usage.rows_read, "gpu": usage.rows_gpu, "not_gpu": usage.rows_not_gpu,
                             "bad": len(usage.bad_rows)},
                       bad_rows=[{"line": b.line, "reason": b.reason} for b in usage.bad_rows[:200]],
                       prices=prices or {}, notes=list(usage.notes))
    ids = getattr(usage, "ids", None)
    if ids is not None and len(ids):
        res.ids = ids.drop(columns=["first_start", "last_end"]).to_dict("records")
    if len(usage.bad_rows) > 200:
        res.notes.append(f"{len(usage.bad_rows)} bad rows in all; the first 200 are listed")
    if negative:
        res.notes.append(f"{negative} hourly rows had negative usage (corrections): counted as 0 instance-hours")
    if window_hours < 24 * 7:
        res.notes.append(f"the review covers {window_hours / 24:.1f} days of usage: commitments of a year or more "
                         "recommended from less than a week of data are a guess; use a longer --lookback")
    hours_index = pd.date_range(start.floor("h"), end.ceil("h"), freq="h", inclusive="left")
    scale = HOURS_PER_MONTH / max(len(hours_index), 1)
    pricing_term = TERMS[term]
    tot = {"billed_usd": 0.0, "effective_usd": 0.0, "on_demand_equivalent_usd": 0.0,
           "recommended_monthly_savings_usd": 0.0}
    for (prov, region, itype), g in h.groupby(["provider", "region", "instance_type"], sort=True):
        per_hour = g.groupby("hour")["usage_hours"].sum().reindex(hours_index, fill_value=0.0)
        od_hours = g[g["pricing_category"].isin(["Standard", ""])].groupby("hour")["usage_hours"].sum() \
            .reindex(hours_index, fill_value=0.0)
        od = _offer(offers, prov, region, itype, "on_demand")
        gpu = od or _offer(offers, prov, region, itype, pricing_term, payment) or {}
        u = TypeUsage(
            provider=prov, region=region, instance_type=itype, gpu_model=str(gpu.get("gpu_model", "")),
            gpu_count=float(gpu.get("gpu_count") or 0.0), hours_used=round(float(per_hour.sum()), 4),
            hours_by_pricing={str(k): round(float(v), 4) for k, v in g.groupby("pricing_category")["usage_hours"].sum().items()},
            peak_instances=round(float(per_hour.max()), 4), average_instances=round(float(per_hour.mean()), 4),
            utilization=round(float(per_hour.mean() / per_hour.max()), 4) if per_hour.max() > 0 else 0.0,
            billed_cost_usd=round(float(g["billed_cost"].sum()), 2), effective_cost_usd=round(float(g["effective_cost"].sum()), 2),
            on_demand_equivalent_usd=None if od is None else round(float(per_hour.sum()) * float(od["usd_per_hour"]), 2))
        res.usage.append(u)
        tot["billed_usd"] += u.billed_cost_usd
        tot["effective_usd"] += u.effective_cost_usd
        if u.on_demand_equivalent_usd is not None:
            tot["on_demand_equivalent_usd"] += u.on_demand_equivalent_usd
        ri = _offer(offers, prov, region, itype, pricing_term, payment)
        if od is None or ri is None:
            res.unpriced.append({"provider": prov, "region": region, "instance_type": itype,
                                 "missing": "on-demand price" if od is None else f"{pricing_term} {payment} price"})
            continue
        if od_hours.sum() <= 0:
            continue
        n, with_c, od_monthly, status = recommend_commitment(list(od_hours.values), od, ri, solver=solver)
        if n <= 0 or with_c >= od_monthly - 0.005:  # a commitment that does not save is never recommended
            continue
        eff = float(ri["usd_per_hour"])
        upfront = float(ri.get("upfront_usd") or 0.0) * n
        recurring = float(ri.get("recurring_usd_per_hour") or 0.0) * HOURS_PER_MONTH * n
        covered = float(od_hours.clip(upper=n).sum())
        avoided_monthly = covered * float(od["usd_per_hour"]) * scale
        savings = od_monthly - with_c
        break_even = None
        if upfront > 0:
            net = avoided_monthly - recurring
            break_even = round(upfront / net, 2) if net > 0 else None
        elif savings > 0:
            break_even = 0.0
        rec = CommitmentRecommendation(
            provider=prov, region=region, instance_type=itype, gpu_model=str(ri.get("gpu_model", "")), term=term,
            payment=payment, recommended_quantity=int(n), upfront_cost_usd=round(upfront, 2),
            recurring_monthly_cost_usd=round(recurring, 2), estimated_monthly_on_demand_cost_usd=round(od_monthly, 2),
            estimated_monthly_cost_with_commitment_usd=round(with_c, 2), estimated_monthly_savings_usd=round(savings, 2),
            estimated_monthly_savings_pct=round(100.0 * savings / od_monthly, 2) if od_monthly else 0.0,
            average_utilization=round(covered / (n * len(hours_index)), 4), break_even_months=break_even,
            on_demand_usd_per_hour=float(od["usd_per_hour"]), reserved_effective_usd_per_hour=eff,
            price_source=str(ri.get("source", "")), estimated_price=is_estimated(ri.get("source", "")),
            lookback_days=res.lookback_days, solver_status=status)
        res.recommendations.append(rec)
        tot["recommended_monthly_savings_usd"] += rec.estimated_monthly_savings_usd
    res.totals = {k: round(v, 2) for k, v in tot.items()}
    res.totals["window_hours"] = round(window_hours, 2)
    res.notes.append(f"billed, effective and on-demand-equivalent totals cover the {window_hours / 24:g}-day window; "
                     "recommendation figures are per 730-hour month")
    if len(usage.purchases):
        p = usage.purchases
        res.purchases = {str(k): round(float(v), 2) for k, v in p.groupby("charge_category")["billed_cost"].sum().items()}
    if any(r.estimated_price for r in res.recommendations):
        res.notes.append("some reserved rates are estimated from documented discount rules (source rule:...); "
                         "refresh prices (`gpuopt prices refresh`) for quoted rates")
    if res.unpriced:
        res.notes.append(f"{len(res.unpriced)} instance types had no price in effect for the period: no recommendation for them")
    return res
