"""The monthly cost review: what the GPU fleet cost, how well it was used, what to commit to, and what it saves.

Input: hourly GPU usage read from a billing export (providers.usage.read_usage -> UsageData). For each
(provider, region, instance type) the on-demand usage of the lookback window is the demand, hour by hour, of the
same MILP as `gpuopt recommend` (optimizer.planning: committed instances billed every hour, on-demand per block; the
hours of equal demand merged, the load-duration curve): its committed count is the recommended quantity. Nothing
here is a rule of thumb; the closed form "commit to n while the share of hours with at least n instances exceeds
reserved/on-demand" is used only as a cross-check in the tests.

Prices are those in effect during the usage period: the price cache's snapshot valid at the period's end
(pricing_cache.store.load_offers(on_date=...)); when no snapshot that old exists, the review says so.

The on-demand baseline (issue 31, point 5) is the bill's own list price where the export carries one
(:func:`bill_list_rate`: FOCUS ListCost, or ListUnitPrice x PricingQuantity; CUR pricing_public_on_demand_cost, or
pricing_public_on_demand_rate x line_item_usage_amount; Azure PayGPrice x Quantity; the hourly table's list_cost),
per instance-hour of the line's on-demand (else committed) rows; the catalog's on-demand rate only where it does not,
and each line says which (``on_demand_baseline``: "bill list price" or "catalog, <as_of>"). A catalog rate used as
the baseline is warned when older than the price-age limit (GPUOPT_MAX_PRICE_AGE_DAYS, as plans are) or undated; a
bill list price more than :data:`LIST_PRICE_TOLERANCE` away from the catalog's is warned per line (the provider
repriced; the catalog or the bill is stale), with the savings the catalog's rate would have claimed. Reserved rates
are the catalog's; a recommendation names its offering class (AWS Standard or Convertible, with what each can be
exchanged or sold for), term and payment (:func:`commitment_terms`).

The window follows the data (:func:`review_window`): the export's coverage -- its first charged hour to the end of
its last covered hour, from the charge periods of its rows (providers.usage.UsageData.coverage_start/_end) -- or
``lookback_days`` counted back from the end of the data; never padded to calendar months (an export of Sep 16 -
Oct 15 is 720 hours, not the 1,464 of September and October). The usage profile is the window's *covered* hours:
hours before the data starts and whole days on which the export has no row at all are missing data, left out (not
counted as idle), and the review warns about them (``ReviewResult.warnings``).

Monthly figures scale the covered hours to a 730-hour month (AWS Cost Explorer does the same with its lookback).
Fields follow AWS Cost Explorer's reservation recommendations (GetReservationPurchaseRecommendation) and Azure
Advisor's: recommended quantity, term, payment option, upfront cost, recurring monthly cost, estimated monthly
on-demand cost, estimated monthly savings (amount and percent), average utilization, break-even months, lookback,
minimum / average / maximum instances per hour, normalized units (AWS only), recommendation id, generation time and
account scope (``shared``: pooled over every account, CE's PAYER; ``account``: one recommendation per account that
ran the usage, CE's LINKED).
"""

from __future__ import annotations

import re
import uuid
from dataclasses import asdict, dataclass, field
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

from gpuopt.kernel.errors import InputError
from gpuopt.kernel.records import HOURS_PER_MONTH, is_estimated

if TYPE_CHECKING:  # pragma: no cover
    pass

TERMS = {"1y": "reserved_1y", "3y": "reserved_3y"}
PAYMENTS = ("no_upfront", "partial_upfront", "all_upfront")
#: Account scopes (Cost Explorer's AccountScope PAYER / LINKED; Azure Advisor's shared / single subscription).
SCOPES = ("shared", "account")

#: AWS normalization factors of Regional Reserved Instances (instance size flexibility), by size: the table of the
#: EC2 User Guide, "How Reserved Instances are applied - Instance size flexibility"
#: (https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/apply_ri.html) and the AWS whitepaper "Maximizing
#: Utilization with Size Flexibility in Regional Reserved Instances" (Table 3). Every ``Nxlarge`` in the table is 8 x N
#: (2xlarge 16, 24xlarge 192, 48xlarge 384), which :func:`aws_normalization_factor` uses for the sizes in between;
#: a ``metal`` size has the factor of the largest size of its family (same page).
AWS_SIZE_FACTORS: dict[str, float] = {"nano": 0.25, "micro": 0.5, "small": 1.0, "medium": 2.0, "large": 4.0}
_XLARGE_RE = re.compile(r"^(\d*)xlarge$")
_METAL_XL_RE = re.compile(r"^metal-(\d+)xl$")
#: Recommendation ids are UUID 5 (SHA-1) names in this namespace.
_ID_NAMESPACE = uuid.uuid5(uuid.NAMESPACE_URL, "https://gpuopt.invalid/review/recommendation")
#: The on-demand baseline of a line priced from the export's own list price (``on_demand_baseline``).
BILL_BASELINE = "bill list price"
#: A bill list price and the catalog's on-demand rate further apart than this share of the catalog's are said per
#: line (a warning): the provider repriced, or the catalog or the bill is stale. 2 %: published rates agree to the
#: cent or to rounding (21.957642 vs 21.9576); Azure's 2026-08-01 repricing moved GPU sizes by a median of -7.6 %.
LIST_PRICE_TOLERANCE = 0.02
#: What an AWS reservation of each offering class can become during its term (EC2 User Guide, "Reserved Instances":
#: Standard ones can be modified -- Availability Zone, scope, size within the family -- and sold on the Reserved
#: Instance Marketplace; Convertible ones can be exchanged for Convertible RIs of another family, size, platform or
#: tenancy of equal or greater value, and cannot be sold there).
AWS_OFFERING_CLASSES = {
    "standard": ("Standard", "modifiable (Availability Zone, scope, size within the family), not exchangeable; "
                             "can be sold on the Reserved Instance Marketplace"),
    "convertible": ("Convertible", "exchangeable during the term for Convertible RIs of another instance family, "
                                   "size, platform or tenancy of equal or greater value; cannot be sold on the "
                                   "Reserved Instance Marketplace"),
}
_PAYMENT_WORDS = {"no_upfront": "No Upfront", "partial_upfront": "Partial Upfront", "all_upfront": "All Upfront"}


def aws_normalization_factor(instance_type: str, family_sizes: "list[str] | tuple[str, ...]" = ()) -> float | None:
    """The AWS size-flexibility normalization factor of ``instance_type`` (:data:`AWS_SIZE_FACTORS`; Nxlarge = 8 x N;
    'metal-24xl' = 192), e.g. p4d.24xlarge -> 192, g5.xlarge -> 8. A plain 'metal' takes the factor of the largest
    other size of the family among ``family_sizes`` (instance types of the same family, e.g. from the price
    snapshot); None when that is unknown or the name has no AWS size."""
    fam, _, size = str(instance_type).partition(".")
    if size in AWS_SIZE_FACTORS:
        return AWS_SIZE_FACTORS[size]
    m = _XLARGE_RE.match(size)
    if m:
        return 8.0 * int(m.group(1) or 1)
    m = _METAL_XL_RE.match(size)
    if m:
        return 8.0 * int(m.group(1))
    if size == "metal":
        others = [aws_normalization_factor(t) for t in family_sizes
                  if str(t).partition(".")[0] == fam and str(t).partition(".")[2] != "metal"]
        others = [f for f in others if f is not None]
        return max(others) if others else None
    return None


def commitment_terms(provider: str, offering_class: str | None, term: str, payment: str) -> tuple[str, str, str]:
    """(offering class, the commitment in words, what it can be changed into) of a reservation row: AWS
    ('standard' | 'convertible' from the row's ``offering_class``; empty: Standard, the class AWS sells for every
    term it sells one) -> "AWS Convertible Reserved Instance, 1-year term, No Upfront" with
    :data:`AWS_OFFERING_CLASSES`; Azure reserved VM instance and GCP committed use discount (no offering class:
    '')."""
    years = {"1y": "1-year", "3y": "3-year"}.get(term, term)
    pay = _PAYMENT_WORDS.get(payment, payment)
    if provider == "aws":
        key = str(offering_class or "standard").lower()
        name, flex = AWS_OFFERING_CLASSES.get(key, (key.title(), ""))
        return key, f"AWS {name} Reserved Instance, {years} term, {pay}", flex
    if provider == "azure":
        return "", f"Azure reserved VM instance, {years} term, {pay}", ("instance size flexibility within its "
                                                                        "group; exchanges and refunds under "
                                                                        "Azure's reservation policy")
    if provider == "gcp":
        return "", f"GCP resource-based committed use discount, {years} term, {pay}", "not exchangeable"
    return "", f"{provider} reservation, {years} term, {pay}", ""


def bill_list_rate(g) -> dict[str, Any] | None:
    """The export's own on-demand list price of one line (the hourly rows of one provider, region and instance type,
    providers.usage.HOURLY_COLUMNS), USD per instance-hour, or None when no row carries one.

    Rows: the on-demand ones (pricing_category Standard or unknown) with a list cost above 0, else the committed
    ones (a commitment's list cost is the on-demand price it discounts); never spot rows (their list price is not
    the on-demand one in every export). Rate: list cost / instance-hours over those rows; when it changes by more
    than :data:`LIST_PRICE_TOLERANCE` during the window (a repricing inside it), the rate of the last hour with one.
    Returns {"usd_per_hour", "mean", "min", "max", "changed", "hours", "billed_od", "listed_od"} (``hours``: the
    instance-hours it rests on; ``mean``: list cost / instance-hours over the window, what the reviewed hours were
    listed at; ``billed_od`` / ``listed_od``: billed and list cost of its on-demand rows, USD)."""
    lc = g["list_cost"].astype(float)
    ok = lc.notna() & (lc > 0) & (g["usage_hours"] > 0)
    rows = g[ok & g["pricing_category"].isin(["Standard", ""])]
    if rows.empty:
        rows = g[ok & (g["pricing_category"] == "Committed")]
    if rows.empty:
        return None
    per = rows.groupby("hour")[["list_cost", "usage_hours"]].sum()
    od_rows = rows[rows["pricing_category"].isin(["Standard", ""])]
    billed_od = float(od_rows["billed_cost"].astype(float).sum()) if "billed_cost" in od_rows.columns else 0.0
    listed_od = float(od_rows["list_cost"].astype(float).sum())
    rates = per["list_cost"] / per["usage_hours"]
    mean = float(per["list_cost"].sum() / per["usage_hours"].sum())
    lo, hi = float(rates.min()), float(rates.max())
    changed = hi - lo > LIST_PRICE_TOLERANCE * lo
    rate = float(rates.sort_index().iloc[-1]) if changed else mean
    return {"usd_per_hour": round(rate, 6), "mean": round(mean, 6), "min": round(lo, 6), "max": round(hi, 6),
            "changed": bool(changed), "billed_od": billed_od, "listed_od": listed_od,
            "hours": float(per["usage_hours"].sum())}


def _age_days(as_of: Any, today) -> float | None:
    """Days from a price row's ``as_of`` (ISO date, first 10 characters) to ``today``; None when not a date."""
    import datetime as dt

    try:
        return float((today - dt.date.fromisoformat(str(as_of or "")[:10])).days)
    except ValueError:
        return None


def _as_of(row: dict | None) -> str | None:
    """A price row's ``as_of`` as text (None when empty or NaN)."""
    v = (row or {}).get("as_of")
    if v is None or (isinstance(v, float) and v != v) or not str(v).strip():
        return None
    return str(v)


def _catalog_label(od: dict | None) -> str:
    as_of = _as_of(od) or ""
    return "catalog, " + (as_of[:10] if as_of[:4].isdigit() else "date unknown")


@dataclass
class ReviewWindow:
    """The window a review covers (:func:`review_window`). Times UTC; hours are hour starts."""

    start: Any                # pd.Timestamp, inclusive
    end: Any                  # pd.Timestamp, exclusive
    hours: Any                # pd.DatetimeIndex of every hour of the window
    covered: Any              # pd.DatetimeIndex of the hours the data covers (the usage profile)
    gap_days: list[str]       # whole UTC days inside the data's coverage with no row at all (ISO dates)
    warnings: list[str]

    @property
    def covered_fraction(self) -> float:
        return len(self.covered) / len(self.hours) if len(self.hours) else 0.0


def review_window(usage, lookback_days: float | None = None, window: tuple | None = None) -> ReviewWindow:
    """The window of a review and the hours of it the data covers.

    Window: ``window`` (start, end) when given; else ``lookback_days`` counted back from the end of the data
    (UsageData.coverage_end); else the export's coverage (coverage_start .. coverage_end: first charged hour to
    the end of the last covered hour). Never padded to calendar months.
    Covered hours: hours of the window at or after the data's first hour, before its end, on a UTC day the export
    has rows for (UsageData.covered_days). Warnings (one line each): the window reaches before the data starts
    or after it ends; whole days with no row at all inside the data; less than 7 days covered.
    """
    import pandas as pd

    c0 = pd.Timestamp(usage.coverage_start) if getattr(usage, "coverage_start", None) is not None \
        and not pd.isna(usage.coverage_start) else pd.Timestamp(usage.period_start)
    c1 = pd.Timestamp(usage.coverage_end) if getattr(usage, "coverage_end", None) is not None \
        and not pd.isna(usage.coverage_end) else pd.Timestamp(usage.period_end)
    if window:
        start, end = pd.Timestamp(window[0]), pd.Timestamp(window[1])
        asked = "the window"
    elif lookback_days:
        end = c1
        start = end - pd.Timedelta(days=float(lookback_days))
        asked = f"--lookback {float(lookback_days):g} days"
    else:
        start, end = c0, c1
        asked = ""
    hours = pd.date_range(start.floor("h"), end.ceil("h"), freq="h", inclusive="left")
    days = set(getattr(usage, "covered_days", ()) or ())
    if not days and len(usage.hourly):
        days = {d.date() for d in usage.hourly["hour"].dt.floor("D").unique()}
    on_day = pd.Index([d.date() for d in hours.floor("D")]).isin(list(days)) if len(hours) else []
    covered = hours[(hours >= c0.floor("h")) & (hours < c1) & on_day]
    lo, hi = max(start, c0), min(end, c1)  # whole days inside both the window and the data
    gap_days = [d.date().isoformat() for d in pd.date_range(lo.ceil("D"), hi.floor("D"), freq="D", inclusive="left")
                if d.date() not in days]
    warns: list[str] = []
    win_d, cov_d = len(hours) / 24.0, len(covered) / 24.0
    pct = 100.0 * len(covered) / max(len(hours), 1)
    if asked and c0 > start.floor("h"):
        warns.append(f"{asked} asks for usage from {start:%Y-%m-%d %H:%M} UTC but the data starts at "
                     f"{c0:%Y-%m-%d %H:%M} UTC: it covers {cov_d:.1f} of the window's {win_d:g} days ({pct:.0f} %); "
                     "the hours before it are left out of the usage profile (unknown, not idle)")
    if asked and c1 < end:
        warns.append(f"{asked} runs to {end:%Y-%m-%d %H:%M} UTC but the data ends at {c1:%Y-%m-%d %H:%M} UTC: the "
                     "hours after it are left out of the usage profile (unknown, not idle)")
    if gap_days:
        shown = ", ".join(gap_days[:6]) + (", ..." if len(gap_days) > 6 else "")
        warns.append(f"the export has no row at all on {len(gap_days)} whole day(s) inside its coverage ({shown}): "
                     "those days are left out of the usage profile (missing data, not idle hours); the review rests "
                     f"on {cov_d:.1f} of the window's {win_d:g} days ({pct:.0f} %)")
    if 0 < len(covered) < 24 * 7:
        warns.append(f"the review covers {cov_d:.1f} days of usage: commitments of a year or more recommended from "
                     "less than a week of data are a guess; review a longer export (or --lookback)")
    return ReviewWindow(start=start, end=end, hours=hours, covered=covered, gap_days=gap_days, warnings=warns)


@dataclass
class TypeUsage:
    """What one instance type in one region did over the covered hours of the window (units: instance-hours,
    USD), pooled over every account."""

    provider: str
    region: str
    instance_type: str
    gpu_model: str
    gpu_count: float
    hours_used: float
    hours_by_pricing: dict[str, float]
    peak_instances: float
    average_instances: float
    utilization: float            # average / peak running instances over the covered hours (how flat the demand is)
    billed_cost_usd: float
    effective_cost_usd: float
    on_demand_equivalent_usd: float | None   # the same hours at the on-demand baseline
    accounts: list[str] = field(default_factory=list)   # the accounts that ran it ('' = not named by the export)
    on_demand_usd_per_hour: float | None = None      # the on-demand baseline (bill list price, else the catalog's)
    on_demand_baseline: str = ""                     # "bill list price" | "catalog, <as_of>" | "" (none)
    bill_list_usd_per_hour: float | None = None      # the export's own list price (bill_list_rate), None: not in it
    catalog_on_demand_usd_per_hour: float | None = None   # the catalog's on-demand rate, None: not in it
    catalog_on_demand_as_of: str | None = None       # that rate's as_of


@dataclass
class CommitmentRecommendation:
    """A reservation to buy (Cost Explorer / Azure Advisor fields), found by the MILP over the usage profile.

    The profile is the on-demand usage (Standard and unknown pricing) of the covered hours, of every account
    (``account_scope`` 'shared') or of ``account_id`` alone ('account'). CE parity: minimum / average / maximum
    instances per hour of that profile (CE MinimumNumberOfInstancesUsedPerHour, Average..., Maximum...);
    normalization_factor and the normalized units (CE NormalizedUnitsToPurchase, Minimum/Average/Maximum
    NormalizedUnitsUsedPerHour) = instances x AWS size-flexibility factor (:data:`AWS_SIZE_FACTORS`), None for
    other providers (Azure's instance size flexibility ratios and GCP's resource-based commitments are not AWS
    normalized units); recommendation_id (UUID 5 of scope, account, provider, region, instance type, term,
    payment and window: the same review of the same window gives the same id); generation_time (UTC ISO 8601).

    On-demand baseline (module doc): ``on_demand_usd_per_hour`` is the bill's list price where the export carries
    one (``on_demand_baseline`` "bill list price") else the catalog's ("catalog, <as_of>"); bill_list_usd_per_hour,
    catalog_on_demand_usd_per_hour (+ _as_of) both as found (None: absent); list_price_gap_pct = bill / catalog - 1
    in %; estimated_monthly_savings_at_catalog_usd: the savings the catalog's rate would claim, when the two differ
    by more than :data:`LIST_PRICE_TOLERANCE` (else None). offering_class ('standard' | 'convertible' for AWS, ''
    elsewhere), commitment (class, term and payment in words) and flexibility (what it can be exchanged or sold
    for): :func:`commitment_terms`.
    """

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
    account_scope: str = "shared"
    account_id: str | None = None
    minimum_instances_per_hour: float = 0.0
    average_instances_per_hour: float = 0.0
    maximum_instances_per_hour: float = 0.0
    normalization_factor: float | None = None
    normalized_units_to_purchase: float | None = None
    minimum_normalized_units_per_hour: float | None = None
    average_normalized_units_per_hour: float | None = None
    maximum_normalized_units_per_hour: float | None = None
    recommendation_id: str = ""
    generation_time: str = ""
    on_demand_baseline: str = ""
    bill_list_usd_per_hour: float | None = None
    catalog_on_demand_usd_per_hour: float | None = None
    catalog_on_demand_as_of: str | None = None
    list_price_gap_pct: float | None = None
    estimated_monthly_savings_at_catalog_usd: float | None = None
    offering_class: str = ""
    commitment: str = ""
    flexibility: str = ""


@dataclass
class ReviewResult:
    """The review (what `gpuopt review` prints); ``to_dict()`` is its JSON.

    period_start / period_end = window_start / window_end (the window, ISO UTC); window_hours: its hours;
    coverage_hours: the hours of it the data covers (the usage profile), covered_fraction = coverage_hours /
    window_hours; gap_days: whole days with no row at all; lookback_days = coverage_hours / 24 (the days the
    figures rest on); warnings: what makes the figures less sure (also on stderr); notes: what was read or assumed.
    """

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
    window_start: str = ""
    window_end: str = ""
    window_hours: float = 0.0
    coverage_hours: float = 0.0
    covered_fraction: float = 0.0
    gap_days: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    account_scope: str = "shared"
    generation_time: str = ""
    #: the export's identifiers of the usage (providers.usage.UsageData.ids as records), for the FOCUS projection;
    #: not part of the JSON
    ids: list[dict[str, Any]] = field(default_factory=list, repr=False)

    def to_dict(self) -> dict[str, Any]:
        """The ``review`` document (gpuopt.schemas.ReviewDoc); ``ids`` is not part of it."""
        from gpuopt.kernel.documents import envelope

        d = asdict(self)
        d.pop("ids", None)
        return envelope("review", d)

    def to_dataframe(self, table: str = "recommendations"):
        """A pandas DataFrame of ``recommendations`` (default: one row per commitment recommended) or ``usage`` (one
        row per instance type used). Raises InputError for another table."""
        from gpuopt.kernel.errors import InputError
        from gpuopt.kernel.documents import frame

        if table not in ("recommendations", "usage"):
            raise InputError("table", f"unknown table {table!r}", accepted="recommendations, usage")
        from dataclasses import fields

        cls = CommitmentRecommendation if table == "recommendations" else TypeUsage
        return frame([asdict(x) for x in getattr(self, table)], [f.name for f in fields(cls)])


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
    """The MILP of optimizer.planning over one instance type's hourly on-demand usage.

    Args: counts: instances running in each hour of the window; od, ri: the on-demand and the reserved offer rows
        (dicts). Returns (quantity N, monthly cost with the commitment, monthly on-demand
        cost, solver status), monthly = the window scaled to 730 h.
    """
    from optimizer.planning.candidates import Candidate
    from optimizer.planning.demand import inline_profile, merge_blocks
    from optimizer.planning.problem import FleetBlock, FleetProblem, FleetWorkload
    from optimizer.planning.solve import solve_cost

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
    from optimizer.planning.horizon import TERM_MONTHS

    term = TERM_MONTHS[ri["pricing"]]
    problem = FleetProblem([w], blocks, {"usage": [cand(od), cand(ri)]}, {}, horizon_months=term, placement="any")
    sol = solve_cost(problem, solver=solver, time_limit_s=time_limit_s, gap_rel=0.0)
    sol.cost /= term
    n = sum(sol.N.values())
    # the blocks total 730 h (an inline profile of n hourly samples gives each 730 / n hours): monthly figures
    od_monthly = sum(b.hours * b.demand["usage"] for b in blocks) * float(od["usd_per_hour"])
    return n, sol.cost, od_monthly, sol.report.status


def recommendation_id(scope: str, account: str | None, provider: str, region: str, instance_type: str, term: str,
                      payment: str, window_start: str, window_end: str) -> str:
    """A stable id: UUID 5 (SHA-1) of the fields that make a recommendation, in :data:`_ID_NAMESPACE`."""
    key = "|".join([scope, account or "", provider, region, instance_type, term, payment, window_start, window_end])
    return str(uuid.uuid5(_ID_NAMESPACE, key))


def review(usage, offers, *, term: str = "1y", payment: str = "no_upfront", lookback_days: float | None = None,
           prices: dict | None = None, solver: str = "cbc", window: tuple | None = None, scope: str = "shared",
           generated_at=None) -> ReviewResult:
    """Review GPU usage and recommend commitments.

    Args:
        usage: providers.usage.UsageData (hourly GPU rows, with the export's coverage).
        offers: the offers in effect during the usage period (OFFER_COLUMNS).
        term: "1y" | "3y"; payment: "no_upfront" | "partial_upfront" | "all_upfront".
        lookback_days: the window, counted back from the end of the data (None: the export's coverage).
        prices: price provenance to report.
        window: (start, end) to review instead (tests, callers that know the period).
        scope: "shared" (one recommendation pooled over every account) | "account" (one per account).
        generated_at: the generation time (datetime, UTC; default now).
    Returns: ReviewResult. Raises: InputError for a bad term, payment or scope.
    """
    import datetime as dt


    from providers.reserved_rules import payment_not_sold

    if term not in TERMS:
        raise InputError("term", f"unknown term '{term}'", accepted=", ".join(TERMS))
    if payment not in PAYMENTS:
        raise InputError("payment", f"unknown payment option '{payment}'", accepted=", ".join(PAYMENTS))
    if scope not in SCOPES:
        raise InputError("scope", f"unknown account scope '{scope}'", accepted=", ".join(SCOPES))
    gen = (generated_at or dt.datetime.now(dt.timezone.utc)).astimezone(dt.timezone.utc)
    gen_iso = gen.strftime("%Y-%m-%dT%H:%M:%SZ")
    win = review_window(usage, lookback_days, window)
    covered = win.covered
    n_cov = max(len(covered), 1)
    h = usage.hourly.copy()
    if "account_id" not in h.columns:
        h["account_id"] = ""
    h = h[(h["hour"] >= win.start.floor("h")) & (h["hour"] < win.end)]
    negative = int((h["usage_hours"] < 0).sum())
    if negative:
        h["usage_hours"] = h["usage_hours"].clip(lower=0.0)
    ws, we = win.start.isoformat(), win.end.isoformat()
    res = ReviewResult(period_start=ws, period_end=we, lookback_days=round(len(covered) / 24.0, 2),
                       source_format=usage.source_format,
                       rows={"read": usage.rows_read, "gpu": usage.rows_gpu, "not_gpu": usage.rows_not_gpu,
                             "bad": len(usage.bad_rows)},
                       bad_rows=[{"line": b.line, "reason": b.reason} for b in usage.bad_rows[:200]],
                       prices=prices or {}, notes=list(usage.notes), window_start=ws, window_end=we,
                       window_hours=float(len(win.hours)), coverage_hours=float(len(covered)),
                       covered_fraction=round(win.covered_fraction, 4), gap_days=list(win.gap_days),
                       warnings=list(win.warnings), account_scope=scope, generation_time=gen_iso)
    ids = getattr(usage, "ids", None)
    if ids is not None and len(ids):
        res.ids = ids.drop(columns=["first_start", "last_end"]).to_dict("records")
    if len(usage.bad_rows) > 200:
        res.notes.append(f"{len(usage.bad_rows)} bad rows in all; the first 200 are listed")
    if negative:
        res.notes.append(f"{negative} hourly rows had negative usage (corrections): counted as 0 instance-hours")
    scale = HOURS_PER_MONTH / n_cov
    pricing_term = TERMS[term]
    aws_types = tuple(offers.loc[offers["provider"] == "aws", "instance_type"].unique()) if len(offers) else ()
    tot = {"billed_usd": 0.0, "effective_usd": 0.0, "on_demand_equivalent_usd": 0.0,
           "recommended_monthly_savings_usd": 0.0}
    baselines: dict[str, int] = {}
    not_sold: dict[str, list[str]] = {}
    for (prov, region, itype), g in h.groupby(["provider", "region", "instance_type"], sort=True):
        per_hour = g.groupby("hour")["usage_hours"].sum().reindex(covered, fill_value=0.0)
        od_cat = _offer(offers, prov, region, itype, "on_demand")
        ri = _offer(offers, prov, region, itype, pricing_term, payment)
        gpu = od_cat or ri or {}
        bill = bill_list_rate(g) if "list_cost" in g.columns else None
        od, baseline = _baseline(prov, region, itype, od_cat, gpu, bill)
        line_warnings(res.warnings, prov, region, itype, od_cat, ri, bill, today=gen.date())
        accounts = sorted(str(a) for a in g["account_id"].unique())
        u = TypeUsage(
            provider=prov, region=region, instance_type=itype, gpu_model=str(gpu.get("gpu_model", "")),
            gpu_count=float(gpu.get("gpu_count") or 0.0), hours_used=round(float(per_hour.sum()), 4),
            hours_by_pricing={str(k): round(float(v), 4) for k, v in g.groupby("pricing_category")["usage_hours"].sum().items()},
            peak_instances=round(float(per_hour.max()), 4), average_instances=round(float(per_hour.mean()), 4),
            utilization=round(float(per_hour.mean() / per_hour.max()), 4) if per_hour.max() > 0 else 0.0,
            billed_cost_usd=round(float(g["billed_cost"].sum()), 2), effective_cost_usd=round(float(g["effective_cost"].sum()), 2),
            # the reviewed hours at what the bill listed them (a repricing inside the window: each hour at its own
            # list price, the bill's mean); the catalog's rate where the export lists none
            on_demand_equivalent_usd=None if od is None else round(float(per_hour.sum()) * float(
                bill["mean"] if bill else od["usd_per_hour"]), 2),
            accounts=accounts, on_demand_usd_per_hour=None if od is None else float(od["usd_per_hour"]),
            on_demand_baseline=baseline, bill_list_usd_per_hour=bill["usd_per_hour"] if bill else None,
            catalog_on_demand_usd_per_hour=None if od_cat is None else float(od_cat["usd_per_hour"]),
            catalog_on_demand_as_of=_as_of(od_cat))
        res.usage.append(u)
        baselines[baseline or "none"] = baselines.get(baseline or "none", 0) + 1
        tot["billed_usd"] += u.billed_cost_usd
        tot["effective_usd"] += u.effective_cost_usd
        if u.on_demand_equivalent_usd is not None:
            tot["on_demand_equivalent_usd"] += u.on_demand_equivalent_usd
        if od is None or ri is None:
            why = payment_not_sold(prov, payment) if od is not None else None
            if why:
                not_sold.setdefault(why, []).append(itype)
            missing = ("on-demand price (no list price in the export, none in the catalog)" if od is None
                       else (why or f"{pricing_term} {payment} price"))
            res.unpriced.append({"provider": prov, "region": region, "instance_type": itype, "missing": missing,
                                 "kind": "not_sold" if why else "no_price"})
            continue
        factor = aws_normalization_factor(itype, aws_types) if prov == "aws" else None
        units = [(None, g)] if scope == "shared" else [(str(a), ga) for a, ga in g.groupby("account_id", sort=True)]
        for account, ga in units:
            od_hours = ga[ga["pricing_category"].isin(["Standard", ""])].groupby("hour")["usage_hours"].sum() \
                .reindex(covered, fill_value=0.0)
            if od_hours.sum() <= 0:
                continue
            rec = _recommend(od_hours, od, ri, solver=solver, scale=scale, n_hours=n_cov, term=term, payment=payment,
                             lookback_days=res.lookback_days)
            if rec is None:
                continue
            _say_baseline(rec, od_cat, bill, baseline, od_hours, ri, solver=solver)
            rec.account_scope, rec.account_id = scope, account
            nf = lambda x: None if factor is None else round(x * factor, 4)  # noqa: E731
            rec.minimum_instances_per_hour = round(float(od_hours.min()), 4)
            rec.average_instances_per_hour = round(float(od_hours.mean()), 4)
            rec.maximum_instances_per_hour = round(float(od_hours.max()), 4)
            rec.normalization_factor = factor
            rec.normalized_units_to_purchase = nf(rec.recommended_quantity)
            rec.minimum_normalized_units_per_hour = nf(rec.minimum_instances_per_hour)
            rec.average_normalized_units_per_hour = nf(rec.average_instances_per_hour)
            rec.maximum_normalized_units_per_hour = nf(rec.maximum_instances_per_hour)
            rec.recommendation_id = recommendation_id(scope, account, prov, region, itype, term, payment, ws, we)
            rec.generation_time = gen_iso
            res.recommendations.append(rec)
            tot["recommended_monthly_savings_usd"] += rec.estimated_monthly_savings_usd
    res.totals = {k: round(v, 2) for k, v in tot.items()}
    res.totals["window_hours"] = float(len(win.hours))
    res.totals["coverage_hours"] = float(len(covered))
    res.notes.append(f"billed, effective and on-demand-equivalent totals cover the {len(covered) / 24.0:g} days the "
                     f"data covers of the {len(win.hours) / 24.0:g}-day window ({win.start:%Y-%m-%d %H:%M} to "
                     f"{win.end:%Y-%m-%d %H:%M} UTC); recommendation figures are per 730-hour month")
    if res.recommendations and any(r.provider != "aws" for r in res.recommendations):
        res.notes.append("normalized units are AWS's size-flexibility measure (EC2 User Guide, 'How Reserved "
                         "Instances are applied'): null for other providers")
    if scope == "account":
        named = {a for u in res.usage for a in u.accounts if a}
        res.notes.append(f"account scope: one recommendation per account that ran on-demand usage ({len(named)} "
                         "named in the export)" + ("; usage of rows naming no account is its own account ''"
                                                   if any("" in u.accounts for u in res.usage) else ""))
    if baselines:
        bill_n = baselines.get(BILL_BASELINE, 0)
        cat = {k: v for k, v in baselines.items() if k.startswith("catalog")}
        res.notes.append(
            f"on-demand baseline: the bill's own list price for {bill_n} of {len(res.usage)} instance type(s)"
            + (f"; the catalog's on-demand rate for {sum(cat.values())} whose rows carry none (as of "
               + "; ".join(f"{k.split(', ', 1)[1]}: {v}" for k, v in sorted(cat.items())) + ")" if cat else "")
            + (f"; none for {baselines['none']}" if baselines.get("none") else "")
            + f" (lines whose list price and the catalog's differ by more than {100 * LIST_PRICE_TOLERANCE:g} % "
              "are warned)")
    if len(usage.purchases):
        p = usage.purchases
        # a refund or credit of a commitment is netted against its purchase (providers.usage.purchase_totals)
        from providers.usage import purchase_totals

        res.purchases = purchase_totals(p)
    if any(r.estimated_price for r in res.recommendations):
        res.notes.append("some reserved rates are estimated from documented discount rules (source rule:...); "
                         "refresh prices (`gpuopt prices refresh`) for quoted rates")
    for why, types in not_sold.items():
        res.warnings.append(f"{why}: no {term} {payment} recommendation for {len(types)} instance type(s) "
                            f"({', '.join(sorted(set(types))[:5])}{', ...' if len(set(types)) > 5 else ''}); "
                            "choose a --payment it sells")
    no_price = [x for x in res.unpriced if x["kind"] == "no_price"]
    if no_price:
        res.notes.append(f"{len(no_price)} instance types had no price in effect for the period: no recommendation "
                         "for them")
    return res


def _recommend(od_hours, od: dict, ri: dict, *, solver: str, scale: float, n_hours: int, term: str, payment: str,
               lookback_days: float) -> CommitmentRecommendation | None:
    """The recommendation for one on-demand profile (hourly instances over the covered hours), or None when no
    commitment saves money."""
    prov, region, itype = od["provider"], od["region"], od["instance_type"]
    n, with_c, od_monthly, status = recommend_commitment(list(od_hours.values), od, ri, solver=solver)
    if n <= 0 or with_c >= od_monthly - 0.005:  # a commitment that does not save is never recommended
        return None
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
    return CommitmentRecommendation(
        provider=prov, region=region, instance_type=itype, gpu_model=str(ri.get("gpu_model", "")), term=term,
        payment=payment, recommended_quantity=int(n), upfront_cost_usd=round(upfront, 2),
        recurring_monthly_cost_usd=round(recurring, 2), estimated_monthly_on_demand_cost_usd=round(od_monthly, 2),
        estimated_monthly_cost_with_commitment_usd=round(with_c, 2), estimated_monthly_savings_usd=round(savings, 2),
        estimated_monthly_savings_pct=round(100.0 * savings / od_monthly, 2) if od_monthly else 0.0,
        average_utilization=round(covered / (n * n_hours), 4), break_even_months=break_even,
        on_demand_usd_per_hour=float(od["usd_per_hour"]), reserved_effective_usd_per_hour=eff,
        price_source=str(ri.get("source", "")), estimated_price=is_estimated(ri.get("source", "")),
        lookback_days=lookback_days, solver_status=status,
        **dict(zip(("offering_class", "commitment", "flexibility"),
                   commitment_terms(prov, ri.get("offering_class"), term, payment))))


def _baseline(prov: str, region: str, itype: str, od_cat: dict | None, gpu: dict,
              bill: dict | None) -> tuple[dict | None, str]:
    """The on-demand row a line is priced with, and what it is: the bill's list price (a row built on the catalog's
    on-demand row, else its reservation row, for the GPU fields) where the export carries one, else the catalog's
    on-demand row; (None, '') when neither."""
    if bill is not None:
        row = {**gpu, "provider": prov, "region": region, "instance_type": itype, "pricing": "on_demand",
               "payment": "", "usd_per_hour": bill["usd_per_hour"], "upfront_usd": 0.0,
               "recurring_usd_per_hour": bill["usd_per_hour"], "source": BILL_BASELINE, "as_of": None}
        return row, BILL_BASELINE
    if od_cat is not None:
        return od_cat, _catalog_label(od_cat)
    return None, ""


#: Least billed / list cost of a line's on-demand rows before the list price is called into question: negotiated
#: discounts (AWS Enterprise Discount Program, Azure MACC) bill on-demand usage below list, by tens of percent at most
#: in the programs' published descriptions; under half of list the list price itself is the likelier fault. A stated
#: policy, not a fitted figure.
BILLED_TO_LIST_MIN = 0.5


def line_warnings(out: list[str], prov: str, region: str, itype: str, od_cat: dict | None, ri: dict | None,
                  bill: dict | None, *, today) -> None:
    """Append the warnings of one line's on-demand baseline to ``out``: the catalog's rate used as the baseline
    older than the price-age limit (pricing_cache.cache.max_age_days, GPUOPT_MAX_PRICE_AGE_DAYS, as plans warn:
    gpuopt.price_age.old_quote_notes) or of no known date; the bill's list price and the catalog's further apart
    than :data:`LIST_PRICE_TOLERANCE`; a list price that changed inside the window."""
    from pricing_cache.cache import max_age_days

    where = f"{itype} ({prov} {region})"
    if bill is None and od_cat is not None:
        as_of = _as_of(od_cat) or ""
        age = _age_days(as_of, today)
        src = str(od_cat.get("source") or "").split(";", 1)[0].split(" ", 1)[0]
        if age is None:
            out.append(f"{where}: the export carries no list price, so the on-demand baseline is a catalog row whose "
                       f"date is not known ({src}): check the current on-demand price")
        elif age > max_age_days():
            out.append(f"{where}: the export carries no list price, so the on-demand baseline is the catalog's "
                       f"{float(od_cat['usd_per_hour']):,.4f} $/h of {as_of[:10]}, {age:,.0f} days old ({src}): "
                       "check the current price before buying")
    if bill is not None and bill.get("listed_od", 0) > 0 and bill.get("billed_od", 0) > 0:
        # on-demand rows are billed at their list price, less a negotiated discount at most (AWS EDP, Azure MACC: a
        # few tens of %): billed above list, or under half of it, is a list price to check (a breaker's ListCost ten
        # times the unit price claimed $370,151 a month of savings on a line billed $39,629)
        r = bill["billed_od"] / bill["listed_od"]
        if r > 1.0 + LIST_PRICE_TOLERANCE or r < BILLED_TO_LIST_MIN:
            out.append(f"{where}: its on-demand rows were billed {bill['billed_od']:,.2f} USD against a list cost of "
                       f"{bill['listed_od']:,.2f} ({r:.2f}x): the export's list price looks wrong (negotiated "
                       f"discounts bill below list, rarely under {BILLED_TO_LIST_MIN:.0%} of it): the savings of this "
                       "line rest on it, check them")
    if bill is not None and bill["changed"]:
        out.append(f"{where}: the bill's list price changed inside the window ({bill['min']:,.4f} to "
                   f"{bill['max']:,.4f} $/h): the on-demand baseline is the latest, {bill['usd_per_hour']:,.4f} $/h")
    if bill is not None and od_cat is not None:
        cat = float(od_cat["usd_per_hour"])
        if cat > 0 and abs(bill["usd_per_hour"] - cat) > LIST_PRICE_TOLERANCE * cat:
            gap = 100.0 * (bill["usd_per_hour"] / cat - 1.0)
            as_of = (_as_of(od_cat) or "")[:10] or "date unknown"
            ri_note = ""
            if ri is not None:
                ri_note = (f"; the reserved rate ({float(ri['usd_per_hour']):,.4f} $/h, catalog of "
                           f"{(_as_of(ri) or '')[:10] or 'unknown date'}) may be stale too: check it before "
                           "buying")
            out.append(f"{where}: the bill's list price {bill['usd_per_hour']:,.4f} $/h is {abs(gap):.1f} % "
                       f"{'below' if gap < 0 else 'above'} the catalog's {cat:,.4f} $/h (as of {as_of}; tolerance "
                       f"{100 * LIST_PRICE_TOLERANCE:g} %): the provider repriced, or the catalog or the bill is "
                       f"stale; the on-demand baseline and savings use the bill's price{ri_note}")


def _say_baseline(rec: CommitmentRecommendation, od_cat: dict | None, bill: dict | None, baseline: str, od_hours,
                  ri: dict, *, solver: str) -> None:
    """Fill in a recommendation's baseline fields; where the bill's list price and the catalog's differ by more
    than :data:`LIST_PRICE_TOLERANCE`, the savings the catalog's rate would claim (the same MILP at that rate)."""
    rec.on_demand_baseline = baseline
    rec.bill_list_usd_per_hour = bill["usd_per_hour"] if bill else None
    if od_cat is None:
        return
    cat = float(od_cat["usd_per_hour"])
    rec.catalog_on_demand_usd_per_hour = cat
    rec.catalog_on_demand_as_of = _as_of(od_cat)
    if bill is None or cat <= 0:
        return
    rec.list_price_gap_pct = round(100.0 * (bill["usd_per_hour"] / cat - 1.0), 2)
    if abs(bill["usd_per_hour"] - cat) > LIST_PRICE_TOLERANCE * cat:
        _, with_c, od_monthly, _ = recommend_commitment(list(od_hours.values), od_cat, ri, solver=solver)
        rec.estimated_monthly_savings_at_catalog_usd = round(od_monthly - with_c, 2)
