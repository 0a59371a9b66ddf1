"""FinOps FOCUS 1.2 cost and usage rows for gpuopt plans and monthly reviews.

Two steps, so that every producer of costs shares one writer:

1. ``charges_from_plan(result)`` turns a plan (``RecommendResult`` or its ``FleetResult``, planned over a horizon
   of months) into ``Charge`` records: one per plan line and month of the horizon it runs in, in instance-hours and
   USD per hour. A monthly review builds the same records from real usage (``review_charges``).
2. ``focus_rows(charges)`` turns charges into FOCUS 1.2 rows (dicts keyed by column ID) and
   ``write_focus(rows, path)`` writes them: Parquet for a ``.parquet``/``.pq`` path (``write_focus_parquet``, typed
   columns), CSV otherwise (``write_focus_csv``; Decimal columns always with a decimal point, ``730.0``).

What each charge becomes (FOCUS 1.2: columns/*.md and the commitment discount appendix, tag v1.2 of
FinOps-Open-Cost-and-Usage-Spec/FOCUS_Spec; their example files in specification/data):

=====================  ==========  ===============  ===========  ==========================  ============================
row                    Category    PricingCategory  Frequency    BilledCost                  EffectiveCost
=====================  ==========  ===============  ===========  ==========================  ============================
on-demand usage        Usage       Standard         Usage-Based  rate x hours                same
spot usage             Usage       Dynamic          Usage-Based  spot rate x hours           same
reserved, used hours   Usage       Committed        Usage-Based  0 (the commitment covers    amortized rate x hours
                                                                 it; discount handling)      (recurring + upfront / term)
reserved, idle hours   Usage       Committed        Usage-Based  0                           amortized rate x idle hours
  (utilization                                                                               (CommitmentDiscountStatus
  below 100 %)                                                                               Unused, ResourceId = the
                                                                                             commitment)
reservation fee        Purchase    Standard         Recurring    recurring rate x committed  0
  (no/partial upfront)                                           hours of the charge period
upfront payment        Purchase    Standard         One-Time     the upfront of all the      0
  (all/partial)                                                  line's instances; its
                                                                 ChargePeriod is the term
=====================  ==========  ===============  ===========  ==========================  ============================

Commitments in plain sight: every commitment the plan buys (one plan line: an offer bought at a month of the
horizon) has its own CommitmentDiscountId (``gpuopt-plan/<provider>/<region>[/<zone>]/<instance type>/<pricing>-
<payment>/<YYYY-MM the term starts>``) and a CommitmentDiscountName that says its term ("..., 2027-01 to 2027-12").
Its upfront is one One-Time Purchase row in the month the term starts (ChargePeriod: the whole term, as in the
spec's purchase examples), its recurring fee a Recurring Purchase row in every month of the horizon the term covers,
and its hours Used/Unused rows at BilledCost 0 and the amortized EffectiveCost. Nothing is charged after the horizon:
a term that outlives it has no rows in the months after it (what is still owed then is the plan's
``after_horizon_usd``).

So, over the horizon, the sum of BilledCost of month m is the cash the plan pays that month
(``plan.cash_by_month_usd[m]``: hourly usage + recurring fees + upfronts), the One-Time rows add up to
``plan.upfront_usd``, and the sum of EffectiveCost is ``plan.total_usd`` when every commitment ends within the
horizon and the leftover value is 0 (a commitment that outlives the horizon is charged its whole term in the plan's
total, less the leftover value; its EffectiveCost rows stop with the horizon). Over a whole term the EffectiveCost of
a commitment's usage rows equals the BilledCost of its purchases (discount handling: amortization).

Prices: ListUnitPrice is the on-demand rate of the instance type in its region (the provider's price list);
ListCost = ListUnitPrice x PricingQuantity. ContractedUnitPrice excludes commitment discounts (columns/
contractedunitprice.md), so on committed usage rows it is the on-demand rate too and the commitment discount shows as
ListCost - EffectiveCost; on spot rows it is the spot rate (the price of the spot SKU, PricingCategory Dynamic); on
purchase rows it is the fee itself. ContractedCost = ContractedUnitPrice x PricingQuantity. PricingUnit, ConsumedUnit
and CommitmentDiscountUnit are "Hours" (instance-hours; UnitFormat plural units).

Billing periods are calendar months (BillingPeriodStart the first of the month 00:00 UTC, BillingPeriodEnd the
first of the next month), and no charge period crosses one: ``focus_rows`` cuts a charge that spans the start of
a month (``split_by_billing_period``), sharing its hours by duration. Purchases keep their whole span: the
One-Time upfront's ChargePeriod is the term it prepays and a capacity block's is its window (spec purchase
examples).

Charge periods: one per calendar month of the horizon, from the first day of ``plan.start_month`` (00:00 UTC), each
the billing period of its rows. A plan's month is 730 h (the clouds' billing month, a year's average), so every
calendar month carries exactly one month of the plan (its instance-hours and USD), whatever its number of days:
the rows then add up to the plan's figures. A plan says how many instance-hours each line runs in a month, not on
which days, and the spec sets no granularity for charge periods (only that they are the effective period of the
charge), so splitting a month into days would invent a timing. ``granularity="day"`` splits every month evenly into
daily charge periods for tools that expect daily rows (hourly lines of training jobs are then spread over the
month, which they are not in reality; the upfront falls on the first day of its month). A review of real usage
builds daily or hourly charges itself.

Nulls are written as empty CSV fields (the spec examples' literal "null" strings are listed as defects in
shared/data/PROVENANCE.md). Columns: every FOCUS 1.2 column that applies to a cloud compute charge, in alphabetical
order, then the extension columns x_GpuModel, x_GpuCount, x_Workload, x_PricingModel, x_PaymentOption,
x_EffectiveUnitPrice, x_PriceSource ("estimated: rule:..." when gpuopt derived the price by a documented rule) and
x_InstanceType.
"""

from __future__ import annotations

import calendar
import csv
import decimal
import datetime as dt
import io
import json
import math
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Iterable, TextIO

from gpuopt.kernel.records import HOURS_PER_MONTH, SAVINGS_PLAN_TERM_HOURS, TERM_HOURS

FOCUS_VERSION = "1.2"

#: FOCUS 1.2 columns written, alphabetical (column handling: FOCUS columns first, MAY be sorted alphabetically).
FOCUS_COLUMNS: tuple[str, ...] = (
    "AvailabilityZone", "BilledCost", "BillingAccountId", "BillingAccountName", "BillingCurrency", "BillingPeriodEnd",
    "BillingPeriodStart", "CapacityReservationId", "CapacityReservationStatus", "ChargeCategory", "ChargeClass",
    "ChargeDescription", "ChargeFrequency", "ChargePeriodEnd", "ChargePeriodStart", "CommitmentDiscountCategory",
    "CommitmentDiscountId", "CommitmentDiscountName", "CommitmentDiscountQuantity", "CommitmentDiscountStatus",
    "CommitmentDiscountType", "CommitmentDiscountUnit", "ConsumedQuantity", "ConsumedUnit", "ContractedCost",
    "ContractedUnitPrice", "EffectiveCost", "InvoiceId", "InvoiceIssuerName", "ListCost", "ListUnitPrice",
    "PricingCategory", "PricingQuantity", "PricingUnit", "ProviderName", "PublisherName", "RegionId", "RegionName",
    "ResourceId", "ResourceName", "ResourceType", "ServiceCategory", "ServiceName", "ServiceSubcategory", "SkuId",
    "SkuMeter", "SkuPriceDetails", "SkuPriceId", "SubAccountId", "SubAccountName", "Tags",
)

#: Extension columns (column handling: custom columns carry the x_ prefix and come after the FOCUS columns).
EXTENSION_COLUMNS: tuple[str, ...] = (
    "x_GpuModel", "x_GpuCount", "x_Workload", "x_PricingModel", "x_PaymentOption", "x_EffectiveUnitPrice",
    "x_PriceSource", "x_InstanceType",
)

COLUMNS: tuple[str, ...] = FOCUS_COLUMNS + EXTENSION_COLUMNS

#: The FOCUS 1.2 columns of type Decimal (columns/*.md: "MUST be of type Decimal"), written with a decimal point.
DECIMAL_COLUMNS = frozenset({
    "BilledCost", "CommitmentDiscountQuantity", "ConsumedQuantity", "ContractedCost", "ContractedUnitPrice",
    "EffectiveCost", "ListCost", "ListUnitPrice", "PricingCurrencyContractedUnitPrice",
    "PricingCurrencyEffectiveCost", "PricingCurrencyListUnitPrice", "PricingQuantity",
})

#: Numeric columns (written in NumericFormat: plain decimals, no exponent, no thousands separators).
NUMERIC_COLUMNS = frozenset(DECIMAL_COLUMNS & set(FOCUS_COLUMNS) | {"x_GpuCount", "x_EffectiveUnitPrice"})

#: The FOCUS 1.2 columns of type Date/Time (DateTimeFormat: ISO 8601 UTC).
DATETIME_COLUMNS = frozenset({"BillingPeriodEnd", "BillingPeriodStart", "ChargePeriodEnd", "ChargePeriodStart"})

#: File suffixes written as Parquet by ``write_focus`` (any other: CSV).
PARQUET_SUFFIXES = (".parquet", ".pq")

_PROVIDERS = {
    # provider key: (ProviderName = PublisherName = InvoiceIssuerName, ServiceName, CommitmentDiscountType)
    "aws": ("Amazon Web Services", "Amazon Elastic Compute Cloud", "Reserved Instance"),
    "azure": ("Microsoft", "Virtual Machines", "Reservation"),
    "gcp": ("Google Cloud", "Compute Engine", "Committed Use Discount"),
    "lambda": ("Lambda", "Lambda Cloud", "Reservation"),
    "coreweave": ("CoreWeave", "CoreWeave Compute", "Reservation"),
    "runpod": ("RunPod", "RunPod Pods", "Reservation"),
    "nebius": ("Nebius", "Nebius Compute", "Reservation"),
}

_PRICING_LABEL = {"on_demand": "on-demand", "spot": "spot", "reserved_1y": "1-year reserved",
                  "reserved_3y": "3-year reserved", "capacity_block": "capacity block", "flex_start": "Flex-start",
                  "savings_plan_1y": "1-year savings plan", "savings_plan_3y": "3-year savings plan"}


# ------------------------------------------------------------------------------------------------- charges
@dataclass(frozen=True)
class Charge:
    """What one line of a plan (or of a review) costs in one charge period: the record FOCUS rows are made of.

    Units: hours are instance-hours in the period; prices are USD per instance-hour; money is USD.

    Attributes:
        provider, region, zone, instance_type: the offer ('' zone: regional).
        pricing: on_demand | spot | reserved_1y | reserved_3y; payment: no_upfront | partial_upfront | all_upfront | ''.
        usage_hours: instance-hours used in the period (reserved: the committed hours doing work).
        list_unit_price: on-demand USD/h of that instance type in that region (the price list).
        contracted_unit_price: the line's effective USD/h (reserved: amortized, recurring + upfront / term hours).
        upfront_usd: upfront purchased in this period for all the line's instances (0 if none; the first month of a
            term carries the whole term's upfront).
        commitment_id: identifier of the commitment (reserved), None otherwise; commitment_term_hours its term.
        gpu_model, gpu_count (GPUs per instance), workload (who uses it; several joined by ", ").
        period_start, period_end: the charge period (UTC, end exclusive).
        unused_hours: committed instance-hours of the period doing no work (reserved only).
        instances: instances of the line (reserved: the commitment's quantity).
        recurring_unit_price: reserved, recurring USD/h per instance; None: derived as contracted_unit_price -
            upfront per instance / term (exact when upfront_usd holds the term's upfront, else the upfront is
            taken as 0).
        source, estimated: where the price comes from; estimated when derived by a documented rule.
        resource_id, resource_name, sub_account_id, sub_account_name, billing_account_id, billing_account_name,
            sku_id, sku_price_id, description: the identifiers of the billing export when known (a review keeps
            them); None: made up from the line (a plan has no resources, accounts or SKUs yet): ResourceId
            ``<account>/<provider>/<region>/<instance type>/<option>``, SkuId ``<provider>/<region>/<instance
            type>``, SkuPriceId ``<SkuId>/<option>``; BillingAccountId the ``billing_account`` of focus_rows.
            A real resource without a name in the export has no ResourceName.
        term_start, term_end: the commitment's term (UTC, end exclusive) when known (a plan's commitments): the
            upfront's charge period ends at term_end (default: period_start + commitment_term_hours) and the
            commitment's name says the months of its term.
    """

    provider: str
    region: str
    zone: str
    instance_type: str
    pricing: str
    payment: str
    usage_hours: float
    list_unit_price: float
    contracted_unit_price: float
    upfront_usd: float
    commitment_id: str | None
    commitment_term_hours: float | None
    gpu_model: str
    gpu_count: float
    workload: str
    period_start: dt.datetime
    period_end: dt.datetime
    unused_hours: float = 0.0
    instances: int = 1
    recurring_unit_price: float | None = None
    source: str = ""
    estimated: bool = False
    resource_id: str | None = None
    resource_name: str | None = None
    sub_account_id: str | None = None
    sub_account_name: str | None = None
    description: str | None = None
    term_start: dt.datetime | None = None
    term_end: dt.datetime | None = None
    billing_account_id: str | None = None
    billing_account_name: str | None = None
    sku_id: str | None = None
    sku_price_id: str | None = None
    offering_class: str = ""  # AWS reservations: standard | convertible; savings plans: compute | ec2_instance
    used_elsewhere: bool = False  # a savings plan's own charge: its used hours are the covered instances' rows

    @property
    def committed(self) -> bool:
        return bool(self.commitment_id)

    @property
    def recurring_rate(self) -> float:
        """Recurring USD/h per instance of a commitment (0 for all upfront)."""
        if self.recurring_unit_price is not None:
            return max(0.0, float(self.recurring_unit_price))
        if self.payment == "all_upfront":  # no recurring fee by definition (a rounded effective rate leaves dust)
            return 0.0
        term = self.commitment_term_hours or 0.0
        per_instance = self.upfront_usd / max(self.instances, 1)
        r = self.contracted_unit_price - (per_instance / term if term else 0.0)
        return 0.0 if r < 1e-9 else r


def _utc(x: Any) -> dt.datetime:
    if isinstance(x, dt.datetime):
        return x.astimezone(dt.timezone.utc) if x.tzinfo else x.replace(tzinfo=dt.timezone.utc)
    if isinstance(x, dt.date):
        return dt.datetime(x.year, x.month, x.day, tzinfo=dt.timezone.utc)
    text = str(x).strip().replace("Z", "+00:00")
    return _utc(dt.datetime.fromisoformat(text) if "T" in text or " " in text else dt.date.fromisoformat(text))


def next_month_start(today: dt.date | None = None) -> dt.datetime:
    """00:00 UTC of the first day of next month (the default start of a planned month)."""
    d = today or dt.datetime.now(dt.timezone.utc).date()
    y, m = (d.year + 1, 1) if d.month == 12 else (d.year, d.month + 1)
    return dt.datetime(y, m, 1, tzinfo=dt.timezone.utc)


def add_months(t: dt.datetime, months: int) -> dt.datetime:
    """``t`` moved by whole calendar months (the day kept, or the month's last day when it has fewer)."""
    y, m = divmod(t.month - 1 + int(months), 12)
    year, month = t.year + y, m + 1
    return t.replace(year=year, month=month, day=min(t.day, calendar.monthrange(year, month)[1]))


def horizon_start(result, period_start=None) -> dt.datetime:
    """00:00 UTC of the first day of the plan's first month (``plan.start_month`` "YYYY-MM"); ``period_start``
    (date, datetime or ISO string) overrides it; a plan without a start month starts next month."""
    if period_start is not None:
        return _utc(period_start)
    label = str(getattr(_plan_of(result), "start_month", "") or "")
    try:
        y, m = (int(x) for x in label.split("-")[:2])
        return dt.datetime(y, m, 1, tzinfo=dt.timezone.utc)
    except ValueError:
        return next_month_start()


def month_periods(start: dt.datetime, months: int) -> list[tuple[dt.datetime, dt.datetime]]:
    """The charge periods of a horizon: [start of month m, start of month m + 1) for m = 0 .. months - 1."""
    return [(add_months(start, m), add_months(start, m + 1)) for m in range(int(months))]


def billing_period(t: dt.datetime) -> tuple[dt.datetime, dt.datetime]:
    """The billing period of a charge that starts at ``t``: its calendar month, [first of the month 00:00 UTC,
    first of the next month 00:00 UTC) (the clouds' monthly invoices)."""
    t = _utc(t)
    start = dt.datetime(t.year, t.month, 1, tzinfo=dt.timezone.utc)
    return start, add_months(start, 1)


def split_by_billing_period(c: Charge) -> list[Charge]:
    """The charge cut where its charge period crosses the start of a calendar month, so that no charge period
    crosses a billing period: usage and unused hours shared in proportion to each piece's duration; the upfront
    (a one-time purchase) stays with the first piece. A capacity block is not cut (its charge is one purchase
    for its window). A charge inside one month is returned as it is."""
    start, end = _utc(c.period_start), _utc(c.period_end)
    if c.pricing == "capacity_block" or end <= billing_period(start)[1]:
        return [c]
    total = (end - start).total_seconds()
    out, a = [], start
    while a < end:
        b = min(billing_period(a)[1], end)
        f = (b - a).total_seconds() / total
        out.append(replace(c, usage_hours=c.usage_hours * f, unused_hours=c.unused_hours * f,
                           upfront_usd=c.upfront_usd if a == start else 0.0, period_start=a, period_end=b))
        a = b
    return out


def _plan_of(result):
    return getattr(result, "plan", result)


def _workload_name(result) -> str:
    w = getattr(result, "workload", None) or {}
    if isinstance(w, dict):
        return str(w.get("name") or w.get("model_resolved") or w.get("model") or "plan")
    return "plan"


def _list_prices(result) -> dict[tuple[str, str, str], float]:
    """On-demand rates by (provider, region, instance_type) from the prices the plan was made with."""
    from optimizer.explain import on_demand_rates
    from pricing_cache.store import load_offers

    prices = getattr(result, "prices", None) or {}
    catalog = prices.get("catalog")
    catalog = None if catalog in (None, "", "shipped snapshot") else catalog
    w = getattr(result, "workload", None) or {}
    on_date = w.get("prices_on") if isinstance(w, dict) and catalog is None else None
    try:
        offers, _ = load_offers(catalog, on_date=on_date)
    except Exception:  # the catalog moved or the cache changed: fall back to what the lines say
        return {}
    return on_demand_rates(offers)


def _line_list_price(ln, od: dict) -> float:
    rate = float(ln.usd_per_hour)
    if ln.pricing == "on_demand":
        return rate
    found = od.get((ln.provider, ln.region, ln.instance_type)) or getattr(ln, "on_demand_usd_per_hour", None)
    if found:
        return float(found)
    return rate  # no on-demand price known: the line's own rate is the only price there is


def commitment_id(ln, term_start: dt.datetime) -> str:
    """CommitmentDiscountId of a plan's commitment: the offer, its payment and the month its term starts."""
    where = f"{ln.provider}/{ln.region}" + (f"/{ln.zone}" if getattr(ln, "zone", "") else "")
    cls = str(getattr(ln, "offering_class", "") or "")
    # a Convertible and a Standard term of one offer bought the same month are two commitments
    option = f"{ln.pricing}-{ln.payment or 'none'}" + (f"-{cls}" if cls and cls != "standard" else "")
    return f"gpuopt-plan/{where}/{ln.instance_type}/{option}/{term_start:%Y-%m}"


def charges_from_plan(result, period_start=None, *, granularity: str = "month",
                      list_prices: dict[tuple[str, str, str], float] | None = None) -> list[Charge]:
    """The charges of a plan: one per line and month of the horizon the line runs in (``granularity="day"``: one
    per line and day of those months).

    Args:
        result: a RecommendResult (or its ``plan``, an optimizer.planning.answer.FleetResult).
        period_start: start of the horizon's first month (date, datetime or ISO string, UTC); default: the first day
            of ``plan.start_month``. Month m of the horizon is the calendar month m after it.
        granularity: "month" or "day" (each month split evenly into daily charge periods).
        list_prices: (provider, region, instance_type) -> on-demand USD/h; default: read from the prices the plan
            used (result.prices["catalog"]).

    Hourly lines (on-demand, spot) are charged in the months they run (``start_month`` .. ``end_month``), their
    ``monthly_usd`` each month. A commitment line is charged in the months of the horizon its term covers:
    ``count`` x 730 committed hours a month, split into used and unused hours by its ``utilization``, its recurring
    fee (``monthly_usd``) every month and its ``upfront_usd`` in the month its term starts. Returns [] for an
    infeasible plan.
    """
    if granularity not in ("month", "day"):
        raise ValueError(f"granularity must be 'month' or 'day', not {granularity!r}")
    plan = _plan_of(result)
    if not getattr(plan, "feasible", True) or not plan.lines:
        return []
    H = max(1, int(getattr(plan, "horizon_months", 1) or 1))
    start = horizon_start(result, period_start)
    months = month_periods(start, H)
    od = _list_prices(result) if list_prices is None else list_prices
    default_workload = _workload_name(result)
    out: list[Charge] = []
    plans = [ln for ln in plan.lines if getattr(ln, "scope", "")]  # savings plans bought
    for ln in plan.lines:
        if getattr(ln, "covered_by", ""):
            out.extend(_covered_charges(ln, plans, start, months, od, default_workload, granularity))
            continue
        users = getattr(ln, "workloads", None)
        workload = ", ".join(users) if users else default_workload
        first = max(1, int(getattr(ln, "start_month", 1) or 1))
        last = min(H, int(getattr(ln, "end_month", H) or H))
        rate = float(ln.usd_per_hour)
        count = int(ln.count)
        term = TERM_HOURS.get(ln.pricing) or SAVINGS_PLAN_TERM_HOURS.get(ln.pricing)
        if ln.pricing == "capacity_block":
            last = first  # paid whole in the month it is bought: one charge of the block's hours
        # a savings plan over every region has no RegionId
        region = "" if getattr(ln, "scope", "") and ln.region == "all regions" else ln.region
        common = dict(provider=ln.provider, region=region, zone=ln.zone or "", instance_type=ln.instance_type,
                      pricing=ln.pricing, payment=ln.payment or "", list_unit_price=_line_list_price(ln, od),
                      contracted_unit_price=rate, commitment_term_hours=term, gpu_model=ln.gpu_model,
                      gpu_count=float(ln.gpu_count), workload=workload, instances=count, source=ln.source,
                      estimated=bool(ln.estimated), offering_class=str(getattr(ln, "offering_class", "") or ""))
        if term:
            term_start = add_months(start, first - 1)
            term_end = _owned_end(ln) or add_months(start, first - 1 + round(term / HOURS_PER_MONTH))
            committed = count * HOURS_PER_MONTH
            util = getattr(ln, "utilization", None)
            used = committed * (1.0 if util is None else min(1.0, max(0.0, float(util))))
            # the recurring fee is the line's monthly_usd (exact to the cent); 0 for all upfront
            recurring = float(ln.monthly_usd) / committed if committed else 0.0
            # an owned commitment reused (issue 26) keeps the provider's own id (its RI id, reservation or ARN)
            cid = str(getattr(ln, "reused", "") or "") or commitment_id(ln, term_start)
            common.update(commitment_id=cid, term_start=term_start, term_end=term_end,
                          recurring_unit_price=recurring, unused_hours=committed - used, usage_hours=used,
                          used_elsewhere=bool(getattr(ln, "scope", "")))
        else:
            # the line's cost is the truth (hours are rounded in the lines): hours = cost / rate
            used = (count * float(ln.hours) if ln.pricing == "capacity_block" or rate <= 0
                    else float(ln.monthly_usd) / rate)
            common.update(commitment_id=None, usage_hours=used)
        for m in range(first, last + 1):
            a, b = months[m - 1]
            upfront = float(ln.upfront_usd or 0.0) if term and m == first else 0.0
            base = Charge(**common, upfront_usd=upfront, period_start=a, period_end=b)
            out.extend([base] if granularity == "month" else _split_days(base))
    return out


def _owned_end(ln) -> dt.datetime | None:
    """The end (exclusive, UTC) of the term of an owned commitment's line (``reused``; its ``term_end`` the last
    month, ``YYYY-MM``), None for a commitment the plan buys (its term counts from when it is bought)."""
    label = str(getattr(ln, "term_end", "") or "")
    if not getattr(ln, "reused", "") or len(label) != 7:
        return None
    y, m = int(label[:4]), int(label[5:])
    return dt.datetime(y + m // 12, m % 12 + 1, 1, tzinfo=dt.timezone.utc)


def _covered_charges(ln, plans, start, months, od, default_workload, granularity) -> list[Charge]:
    """Charges of an instance run under a savings plan: its hours each month, at the plan's rate (EffectiveCost)
    against the on-demand rate (ListCost), under the CommitmentDiscountId of the plan covering that month (its
    purchase and unused rows come from the plan's own line)."""
    users = getattr(ln, "workloads", None)
    workload = ", ".join(users) if users else default_workload
    H = len(months)
    out = []
    for m in range(max(1, ln.start_month), min(H, ln.end_month) + 1):
        sp = next((p for p in plans if p.scope == ln.covered_by and p.start_month <= m <= p.end_month), None)
        if sp is None:  # pragma: no cover - a covered line always has its plan
            continue
        term = SAVINGS_PLAN_TERM_HOURS[sp.pricing]
        term_start = add_months(start, sp.start_month - 1)
        a, b = months[m - 1]
        reused = str(getattr(sp, "reused", "") or "")  # a savings plan the team owns: its own id, already paid
        base = Charge(provider=ln.provider, region=ln.region, zone=ln.zone or "", instance_type=ln.instance_type,
                      pricing=ln.pricing, payment=ln.payment or "", usage_hours=ln.count * float(ln.hours),
                      list_unit_price=_line_list_price(ln, od),
                      contracted_unit_price=0.0 if reused else float(ln.usd_per_hour),
                      upfront_usd=0.0, commitment_id=reused or commitment_id(sp, term_start), commitment_term_hours=term,
                      gpu_model=ln.gpu_model, gpu_count=float(ln.gpu_count), workload=workload, period_start=a,
                      period_end=b, instances=int(ln.count), recurring_unit_price=0.0, source=ln.source, estimated=bool(ln.estimated), term_start=term_start,
                      term_end=_owned_end(sp) or add_months(start, sp.start_month - 1 + round(term / HOURS_PER_MONTH)),
                      offering_class=str(getattr(sp, "offering_class", "") or ""))
        out.extend([base] if granularity == "month" else _split_days(base))
    return out


def _split_days(c: Charge) -> list[Charge]:
    """The charge split evenly over the days of its period (the upfront falls on the first day)."""
    total = (c.period_end - c.period_start).total_seconds() / 3600.0
    out = []
    day = c.period_start
    while day < c.period_end:
        nxt = min(day + dt.timedelta(days=1), c.period_end)
        f = (nxt - day).total_seconds() / 3600.0 / total
        out.append(replace(c, usage_hours=c.usage_hours * f, unused_hours=c.unused_hours * f,
                           upfront_usd=c.upfront_usd if day == c.period_start else 0.0,
                           period_start=day, period_end=nxt))
        day = nxt
    return out


# ---------------------------------------------------------------------------------------------- FOCUS rows
def _iso(t: dt.datetime) -> str:
    return _utc(t).strftime("%Y-%m-%dT%H:%M:%SZ")


def _money(x: float) -> float:
    return round(float(x), 6) + 0.0  # + 0.0: no negative zero


def _price(x: float) -> float:
    return round(float(x), 10) + 0.0


def _qty(x: float) -> float:
    return round(float(x), 6) + 0.0


_REGION_NAMES: dict[str, dict[str, str]] = {}


def region_name(provider: str, region: str) -> str:
    """Display name of a region ("US East (N. Virginia)" for aws us-east-1, from botocore's endpoint data); the
    region code itself where no name is known (RegionName must not be null when RegionId is not)."""
    if provider == "aws":
        if "aws" not in _REGION_NAMES:
            names: dict[str, str] = {}
            try:
                import botocore.session

                for part in botocore.session.get_session().get_data("endpoints")["partitions"]:
                    for code, info in part.get("regions", {}).items():
                        if info.get("description"):
                            names[code] = str(info["description"])
            except Exception:  # botocore missing or its data unreadable: codes stand in for names
                pass
            _REGION_NAMES["aws"] = names
        return _REGION_NAMES["aws"].get(region, region)
    return region


def _provider_names(provider: str) -> tuple[str, str, str]:
    return _PROVIDERS.get(provider, (provider, "Compute", "Reservation"))


def focus_rows(charges: Iterable[Charge], billing_account: str = "gpuopt-plan", currency: str = "USD") -> list[dict[str, Any]]:
    """FOCUS 1.2 rows for the charges (see the module docstring for what each charge becomes).

    Each row is a dict with every column of ``COLUMNS`` (None for null, floats for numbers, ISO 8601 UTC
    strings for dates). ``billing_account`` is BillingAccountId and BillingAccountName; ``currency`` the
    ISO 4217 BillingCurrency the prices are in.
    """
    rows: list[dict[str, Any]] = []
    for c in charges:
        for piece in split_by_billing_period(c):
            rows.extend(_rows_of(piece, billing_account, currency))
    return rows


def _made_up_sku(c: Charge) -> str:
    """A plan line's SkuId when the export has none: ``<provider>/<region>/<instance type>``; a savings plan's own
    line (no region, "any instance type" or "<family> family") ``<provider>[/<region>]/savings-plan[/<family>]``
    -- "aws//any instance type" was made up before."""
    if c.pricing in SAVINGS_PLAN_TERM_HOURS and (not c.region or " " in c.instance_type):
        family = c.instance_type.removesuffix(" family") if c.instance_type.endswith(" family") else ""
        return "/".join(p for p in (c.provider, c.region, "savings-plan", family) if p)
    return f"{c.provider}/{c.region}/{c.instance_type}"


def _rows_of(c: Charge, account: str, currency: str) -> list[dict[str, Any]]:
    provider_name, service_name, commitment_type = _provider_names(c.provider)
    if c.pricing in SAVINGS_PLAN_TERM_HOURS:
        commitment_type = "Savings Plan"
    bps, bpe = billing_period(c.period_start)
    gpus = f"{c.gpu_count:g} x {c.gpu_model}"
    option = c.pricing + (f"-{c.payment}" if c.payment else "")
    account_name = c.billing_account_name or c.billing_account_id or account
    account = c.billing_account_id or account
    line_key = c.sku_id or _made_up_sku(c)  # SkuId
    price_key = c.sku_price_id or f"{line_key}/{option}"  # SkuPriceId: one SkuId per SkuPriceId
    resource_id = c.resource_id or f"{account}/{_made_up_sku(c)}/{option}"
    resource_name = c.resource_name if c.resource_id else (f"{c.instances} x {c.instance_type} ({_PRICING_LABEL.get(c.pricing, c.pricing)}"
                                        f"{', ' + c.payment.replace('_', ' ') if c.payment else ''}) for {c.workload}")
    price_source = (f"estimated: {c.source}" if c.estimated else c.source) or None
    common = {
        "AvailabilityZone": c.zone or None,
        "BillingAccountId": account,
        "BillingAccountName": account_name,
        "BillingCurrency": currency,
        "BillingPeriodEnd": _iso(bpe),
        "BillingPeriodStart": _iso(bps),
        "CapacityReservationId": None,
        "CapacityReservationStatus": None,
        "ChargeClass": None,
        "InvoiceId": None,  # a plan is not invoiced (InvoiceId MUST be null without an invoice)
        "InvoiceIssuerName": provider_name,
        "ProviderName": provider_name,
        "PublisherName": provider_name,
        "RegionId": c.region or None,
        "RegionName": region_name(c.provider, c.region) if c.region else None,
        "ServiceCategory": "Compute",
        "ServiceName": service_name,
        "ServiceSubcategory": "Virtual Machines",
        "SkuId": line_key,
        "SkuPriceDetails": None,
        "SubAccountId": c.sub_account_id,
        "SubAccountName": (c.sub_account_name or c.sub_account_id) if c.sub_account_id else None,
        "Tags": None,
        "x_GpuModel": c.gpu_model,
        "x_InstanceType": c.instance_type,
        "x_GpuCount": float(c.gpu_count),
        "x_Workload": c.workload,
        "x_PricingModel": c.pricing,
        "x_PaymentOption": c.payment or None,
        "x_PriceSource": price_source,
    }
    no_commitment = {"CommitmentDiscountCategory": None, "CommitmentDiscountId": None, "CommitmentDiscountName": None,
                     "CommitmentDiscountQuantity": None, "CommitmentDiscountStatus": None,
                     "CommitmentDiscountType": None, "CommitmentDiscountUnit": None}

    def priced(qty: float, list_price: float, contracted_price: float) -> dict[str, Any]:
        q, lp, cp = _qty(qty), _price(list_price), _price(contracted_price)
        return {"PricingQuantity": q, "PricingUnit": "Hours", "ListUnitPrice": lp, "ListCost": _money(lp * q),
                "ContractedUnitPrice": cp, "ContractedCost": _money(cp * q)}

    rows: list[dict[str, Any]] = []
    period = {"ChargePeriodStart": _iso(c.period_start), "ChargePeriodEnd": _iso(c.period_end)}
    if not c.committed:
        # a capacity block: capacity bought for a window at a fixed price, none of FOCUS's standard, dynamic or
        # committed (commitment-discount) pricing
        category = "Dynamic" if c.pricing == "spot" else "Other" if c.pricing == "capacity_block" else "Standard"
        p = priced(c.usage_hours, c.list_unit_price, c.contracted_unit_price)
        desc = c.description or (f"{c.instance_type} ({gpus}) {_PRICING_LABEL.get(c.pricing, c.pricing)} usage in "
                                 f"{c.region} at ${c.contracted_unit_price:,.4f}/h for {c.workload}")
        if c.pricing == "capacity_block":
            # a block is bought whole for its window: a one-time purchase whose charge period is the block's days
            # (not a commitment discount: nothing amortizes it, so its effective cost is what is paid)
            hours = c.usage_hours / max(1, c.instances)
            end = c.period_start + dt.timedelta(hours=hours)
            rows.append({**common, **no_commitment, **p, "ChargePeriodStart": _iso(c.period_start),
                         "ChargePeriodEnd": _iso(end), "ChargeCategory": "Purchase", "ChargeFrequency": "One-Time",
                         "ChargeDescription": c.description or (
                             f"Capacity block: {c.instances} x {c.instance_type} ({gpus}) in {c.region} for "
                             f"{hours / 24:g} days at ${c.contracted_unit_price:,.4f}/h, paid whole, for {c.workload}"),
                         "PricingCategory": category, "BilledCost": p["ContractedCost"],
                         "EffectiveCost": p["ContractedCost"], "ConsumedQuantity": None, "ConsumedUnit": None,
                         "ResourceId": resource_id, "ResourceName": resource_name, "ResourceType": "Capacity Block",
                         "SkuMeter": "Capacity Block Hours", "SkuPriceId": price_key,
                         "x_EffectiveUnitPrice": _price(c.contracted_unit_price)})
            return [_ordered(r) for r in rows]
        rows.append({**common, **no_commitment, **period, **p,
                     "ChargeCategory": "Usage", "ChargeFrequency": "Usage-Based", "ChargeDescription": desc,
                     "PricingCategory": category, "BilledCost": p["ContractedCost"], "EffectiveCost": p["ContractedCost"],
                     "ConsumedQuantity": p["PricingQuantity"], "ConsumedUnit": "Hours",
                     "ResourceId": resource_id, "ResourceName": resource_name, "ResourceType": "Virtual Machine",
                     "SkuMeter": "Instance Hours", "SkuPriceId": price_key,
                     "x_EffectiveUnitPrice": _price(c.contracted_unit_price)})
        return [_ordered(r) for r in rows]

    # ---- a commitment: usage rows covered by it (Used / Unused) and its purchases (recurring fee, upfront)
    term = float(c.commitment_term_hours or 0.0)
    term_label = f"{term / 8760:g}-year" if term else ""
    cls = {"convertible": "convertible ", "standard": "standard ", "compute": "compute ",
           "ec2_instance": "EC2 instance "}.get(c.offering_class, "")
    kind = commitment_type.lower()
    if c.pricing in SAVINGS_PLAN_TERM_HOURS:  # one name for the plan and the instances it covers
        fam = c.instance_type.split(".")[0].replace(" family", "")
        what = f"the {fam} family in {c.region}" if c.offering_class == "ec2_instance" else "all regions"
        what = f"{c.provider} {what}"
    else:
        what = f"{c.instances} x {c.instance_type} in {c.region}"
    cd_name = (f"{term_label} {c.payment.replace('_', ' ') if c.payment else ''} "
               f"{cls}{kind}: {what}").replace("  ", " ").strip()
    if c.term_start is not None and c.term_end is not None:  # the months of its term: "2027-01 to 2027-12"
        cd_name += f", {_utc(c.term_start):%Y-%m} to {_utc(c.term_end) - dt.timedelta(days=1):%Y-%m}"
    term_end = _utc(c.term_end) if c.term_end is not None else c.period_start + dt.timedelta(hours=term)
    commitment = {"CommitmentDiscountCategory": "Usage", "CommitmentDiscountId": c.commitment_id,
                  "CommitmentDiscountName": cd_name, "CommitmentDiscountType": commitment_type,
                  "CommitmentDiscountUnit": "Hours"}
    covered = {"ChargeCategory": "Usage", "ChargeFrequency": "Usage-Based", "PricingCategory": "Committed",
               "BilledCost": 0.0, "SkuMeter": "Instance Hours", "SkuPriceId": price_key,
               "x_EffectiveUnitPrice": _price(c.contracted_unit_price)}
    if c.usage_hours > 1e-9 and not c.used_elsewhere:
        # ContractedUnitPrice excludes commitment discounts: the on-demand (list) rate; the discount is in EffectiveCost
        p = priced(c.usage_hours, c.list_unit_price, c.list_unit_price)
        rows.append({**common, **commitment, **period, **p, **covered,
                     "ChargeDescription": c.description or (
                         f"{c.instance_type} ({gpus}) usage covered by the {cd_name}, amortized "
                         f"${c.contracted_unit_price:,.4f}/h, for {c.workload}"),
                     "EffectiveCost": _money(c.contracted_unit_price * p["PricingQuantity"]),
                     "CommitmentDiscountQuantity": p["PricingQuantity"], "CommitmentDiscountStatus": "Used",
                     "ConsumedQuantity": p["PricingQuantity"], "ConsumedUnit": "Hours",
                     "ResourceId": resource_id, "ResourceName": resource_name, "ResourceType": "Virtual Machine"})
    if c.unused_hours > 1e-9:
        p = priced(c.unused_hours, c.list_unit_price, c.list_unit_price)
        rows.append({**common, **commitment, **period, **p, **covered,
                     "ChargeDescription": f"Unused hours of the {cd_name}",
                     "EffectiveCost": _money(c.contracted_unit_price * p["PricingQuantity"]),
                     "CommitmentDiscountQuantity": p["PricingQuantity"], "CommitmentDiscountStatus": "Unused",
                     "ConsumedQuantity": None, "ConsumedUnit": None,
                     "ResourceId": c.commitment_id, "ResourceName": cd_name, "ResourceType": "Commitment"})
    purchase = {"ChargeCategory": "Purchase", "PricingCategory": "Standard", "EffectiveCost": 0.0,
                "CommitmentDiscountStatus": None, "ConsumedQuantity": None, "ConsumedUnit": None,
                "ResourceId": c.commitment_id, "ResourceName": cd_name, "ResourceType": "Commitment",
                "x_EffectiveUnitPrice": None}
    hours = c.usage_hours + c.unused_hours
    recurring = c.recurring_rate
    if recurring > 0 and hours > 1e-9:
        p = priced(hours, recurring, recurring)
        rows.append({**common, **commitment, **period, **p, **purchase,
                     "ChargeFrequency": "Recurring", "BilledCost": p["ContractedCost"],
                     "ChargeDescription": f"Recurring fee of the {cd_name}: ${recurring:,.4f}/h "
                                          + ("of commitment" if c.pricing in SAVINGS_PLAN_TERM_HOURS else "per instance"),
                     "CommitmentDiscountQuantity": p["PricingQuantity"], "SkuMeter": "Recurring Fee",
                     "SkuPriceId": f"{price_key}/recurring"})
    if c.upfront_usd > 0 and term:
        qty = c.instances * term
        p = priced(qty, c.upfront_usd / qty, c.upfront_usd / qty)
        p["ListCost"] = p["ContractedCost"] = _money(c.upfront_usd)  # the fee itself, not a product of rounded numbers
        rows.append({**common, **commitment, **p, **purchase,
                     "ChargePeriodStart": _iso(c.period_start),
                     "ChargePeriodEnd": _iso(term_end),  # the term it prepays
                     "ChargeFrequency": "One-Time", "BilledCost": _money(c.upfront_usd),
                     "ChargeDescription": f"Upfront payment of the {cd_name}: ${c.upfront_usd / c.instances:,.2f} "
                                          f"per instance for {term:g} h",
                     "CommitmentDiscountQuantity": p["PricingQuantity"], "SkuMeter": "Upfront Fee",
                     "SkuPriceId": f"{price_key}/upfront"})
    if c.pricing in SAVINGS_PLAN_TERM_HOURS:
        # a savings plan is a spend commitment (FOCUS CommitmentDiscountCategory "Spend"): its quantities are the
        # currency's units of commitment (its "hours" are hours of a USD/h commitment)
        for r in rows:
            r.update(CommitmentDiscountCategory="Spend", CommitmentDiscountUnit=currency,
                     CommitmentDiscountQuantity=r["EffectiveCost"] if r["ChargeCategory"] == "Usage" else r["BilledCost"])
    return [_ordered(r) for r in rows]


def _ordered(row: dict[str, Any]) -> dict[str, Any]:
    missing = [k for k in COLUMNS if k not in row]
    if missing:  # pragma: no cover - a programming error, caught by the tests
        raise AssertionError(f"row lacks columns {missing}")
    return {k: row[k] for k in COLUMNS}


# --------------------------------------------------------------------------------------------------- CSV
def format_value(value: Any, column: str | None = None) -> str:
    """A cell as written: '' for null; numbers in NumericFormat (plain decimal, no exponent, no '+'), a float always
    with its decimal point (``730.0``, never ``730``: FOCUS Decimal columns such as PricingQuantity MUST be of type
    Decimal, and a reader that infers types from the text, like the FinOps Foundation's validator, reads ``730`` as
    an integer); an int as an integer, except in a Decimal column (``DECIMAL_COLUMNS``) where it is a decimal too;
    date/times as ISO 8601 UTC; dicts and lists as JSON; else str."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int) and column not in DECIMAL_COLUMNS:
        return str(value)
    if isinstance(value, (int, float)):
        x = float(value)
        if math.isnan(x) or math.isinf(x):
            return ""
        text = format(decimal.Decimal(repr(x + 0.0)), "f")  # the shortest text that reads back as x, no exponent
        return text if "." in text else text + ".0"
    if isinstance(value, dt.datetime):
        return _iso(value)
    if isinstance(value, (dict, list)):
        return json.dumps(value, sort_keys=True)
    return str(value)


def write_focus(rows: list[dict[str, Any]], path: str | Path) -> Path:
    """Write FOCUS rows to ``path``: Parquet when its suffix is ``.parquet`` or ``.pq`` (``write_focus_parquet``),
    CSV otherwise (``write_focus_csv``). Returns the path written."""
    path = Path(path)
    if path.suffix.lower() in PARQUET_SUFFIXES:
        return write_focus_parquet(rows, path)
    return write_focus_csv(rows, path)


def _header(rows: list[dict[str, Any]]) -> list[str]:
    header = list(COLUMNS)
    for r in rows:
        header.extend(k for k in r if k not in header)
    return header


def write_focus_parquet(rows: list[dict[str, Any]], path: str | Path) -> Path:
    """Write FOCUS rows as one Parquet file (pyarrow), typed: the Decimal columns (``DECIMAL_COLUMNS``) and the
    numeric extension columns as float64 (DOUBLE: the FinOps Foundation's validator accepts DECIMAL, DOUBLE or
    FLOAT; a fixed-point decimal would need one scale for costs, prices and quantities alike), the date/time columns
    (``DATETIME_COLUMNS``) as timestamp[s, UTC], every other column as string (Tags and SkuPriceDetails as their
    JSON text, KeyValueFormat). Nulls are Parquet nulls. The columns are those of ``write_focus_csv``, in its
    order. Written to a temporary file beside ``path`` and renamed, so a failed write leaves no partial file.
    Returns the path."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    header = _header(rows)
    arrays, fields = [], []
    for col in header:
        values = [r.get(col) for r in rows]
        if col in DECIMAL_COLUMNS or col in NUMERIC_COLUMNS:
            typ = pa.float64()
            data = [None if v is None or (isinstance(v, float) and math.isnan(v)) else float(v) for v in values]
        elif col in DATETIME_COLUMNS:
            typ = pa.timestamp("s", tz="UTC")
            data = [None if v is None or v == "" else _utc(v) for v in values]
        else:
            typ = pa.string()
            data = [None if v is None else (json.dumps(v, sort_keys=True) if isinstance(v, (dict, list))
                                            else format_value(v, col)) for v in values]
        arrays.append(pa.array(data, type=typ))
        fields.append(pa.field(col, typ, nullable=True))
    table = pa.Table.from_arrays(arrays, schema=pa.schema(fields))
    tmp = path.with_name(path.name + ".tmp")
    pq.write_table(table, tmp)
    tmp.replace(path)
    return path


def write_focus_csv(rows: list[dict[str, Any]], path_or_stream: str | Path | TextIO) -> Path | None:
    """Write FOCUS rows as CSV (UTF-8, header of column IDs, nulls as empty fields). Returns the path written, or
    None when given a stream. The header is ``COLUMNS`` plus any further column the rows carry."""
    header = _header(rows)
    if isinstance(path_or_stream, (str, Path)):
        path = Path(path_or_stream)
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("w", encoding="utf-8", newline="") as f:
            _write(rows, header, f)
        return path
    _write(rows, header, path_or_stream)
    return None


def _write(rows, header, f) -> None:
    w = csv.writer(f, lineterminator="\n")
    w.writerow(header)
    for r in rows:
        w.writerow([format_value(r.get(k), k) for k in header])


def focus_csv_text(rows: list[dict[str, Any]]) -> str:
    """The CSV as a string."""
    buf = io.StringIO()
    write_focus_csv(rows, buf)
    return buf.getvalue()


# ------------------------------------------------------------------------------------ the monthly review
#: Prefix of every identifier the review's FOCUS projection makes up where the billing export has none (a
#: recommended commitment, or an export without accounts, resources or SKUs): never mistaken for a real id.
DERIVED_ID_PREFIX = "gpuopt-derived:"


def review_charges(result):
    """FOCUS charges (gpuopt.focus.Charge) of the reviewed fleet with the recommended commitments, projected over
    the calendar month after the reviewed window (e.g. usage of September 2024: October 2024, 2024-10-01T00:00Z to
    2024-11-01T00:00Z, 744 h): the window's instance-hours scaled to that month's hours.

    Per (provider, region, instance type): usage an existing commitment covered (its CommitmentDiscountId as the
    export says; its recurring fee at the effective rate, the term not being in the export), the recommended
    commitment (its used hours taken from the on-demand usage, its unused hours, recurring fee and upfront), and
    the on-demand usage left. Usage rows keep the export's identifiers (``result.ids``: BillingAccountId and Name,
    SubAccountId and Name, ResourceId and Name, SkuId, SkuPriceId): each resource gets the share of its bucket's
    hours it had in the export. Where the export has none (the warehouse ``hourly`` table, a CUR without account
    columns) and for the recommended commitment, the identifier is made up and starts with ``DERIVED_ID_PREFIX``
    ("gpuopt-derived:"): ``gpuopt-derived:<provider>-billing-account``, ``gpuopt-derived:<provider>/<region>/<instance
    type>[/<option>]`` for a resource or SKU, ``gpuopt-derived:recommended/<provider>/<region>/<instance type>/<term>/
    <payment>`` for a recommended commitment, ``gpuopt-derived:<SkuId>/<option>`` for the SKU price of a commitment.
    A missing name is the id (FOCUS: the name is not null when the id is not).
    """
    import datetime as dt

    end = dt.datetime.fromisoformat(result.period_end).astimezone(dt.timezone.utc)
    start = billing_period(end - dt.timedelta(seconds=1))[1]  # the month after the window's last instant
    stop = add_months(start, 1)
    month_h = (stop - start).total_seconds() / 3600.0
    scale = month_h / max(result.lookback_days * 24.0, 1.0)
    D = DERIVED_ID_PREFIX
    out = []
    recs: dict[tuple, list] = {}  # per instance type: one recommendation (shared scope) or one per account
    for rec in result.recommendations:
        recs.setdefault((rec.provider, rec.region, rec.instance_type), []).append(rec)
    by_type: dict[tuple, list[dict]] = {}
    for row in getattr(result, "ids", None) or []:
        by_type.setdefault((row["provider"], row["region"], row["instance_type"]), []).append(row)

    def ident(row, provider, region, itype, option):
        """Charge fields of one export identity (None: the type's derived one)."""
        g = (lambda k: (row or {}).get(k) or None)
        derived = f"{D}{provider}/{region}/{itype}"
        sku = g("sku_id") or derived
        return dict(billing_account_id=g("billing_account_id") or f"{D}{provider}-billing-account",
                    billing_account_name=g("billing_account_name") or g("billing_account_id")
                    or f"{D}{provider}-billing-account",
                    sub_account_id=g("sub_account_id"), sub_account_name=g("sub_account_name") or g("sub_account_id"),
                    resource_id=g("resource_id") or f"{derived}/{option}",
                    resource_name=g("resource_name") or (None if g("resource_id") else f"{itype} in {region} ({option})"),
                    sku_id=sku, sku_price_id=(g("sku_price_id") if option == "on_demand" else None)
                    or f"{D}{sku.removeprefix(D)}/{option}")

    def shares(rows):
        tot = sum(float(r["usage_hours"]) for r in rows)
        if not rows or tot <= 0:
            return [(None, 1.0)]
        return [(r, float(r["usage_hours"]) / tot) for r in rows]

    for u in result.usage:
        key = (u.provider, u.region, u.instance_type)
        rows = by_type.get(key, [])
        od_rows = [r for r in rows if r["pricing_category"] in ("Standard", "")]
        main = max(rows, key=lambda r: float(r["usage_hours"])) if rows else None
        od_hours = (u.hours_by_pricing.get("Standard", 0.0) + u.hours_by_pricing.get("", 0.0)) * scale
        od_rate = (u.on_demand_equivalent_usd / u.hours_used) if (u.on_demand_equivalent_usd and u.hours_used) else None
        common = dict(provider=u.provider, region=u.region, zone="", instance_type=u.instance_type,
                      gpu_model=u.gpu_model, gpu_count=u.gpu_count, workload="reviewed usage", period_start=start,
                      period_end=stop)
        committed = u.hours_by_pricing.get("Committed", 0.0) * scale
        if committed > 0 and u.hours_used:
            eff = u.effective_cost_usd / u.hours_used if u.effective_cost_usd else 0.0
            c_rows = [x for x in rows if x["pricing_category"] == "Committed"]
            by_cid: dict[str, list[dict]] = {}
            for x in c_rows:
                by_cid.setdefault(x["commitment_id"] or "", []).append(x)
            if not by_cid:
                by_cid = {"": []}
            tot_c = sum(float(x["usage_hours"]) for x in c_rows)
            for cid, xs in by_cid.items():
                part = committed * (sum(float(x["usage_hours"]) for x in xs) / tot_c if tot_c > 0 else 1.0)
                cd_id = cid or f"{D}existing/{u.provider}/{u.region}/{u.instance_type}"
                kw = dict(pricing="reserved_1y", payment="no_upfront", list_unit_price=od_rate or eff,
                          contracted_unit_price=eff, upfront_usd=0.0, commitment_id=cd_id,
                          commitment_term_hours=8760.0, instances=max(1, round(part / month_h)), **common)
                # the commitment itself: its recurring fee (its usage rows are the resources' below)
                out.append(Charge(usage_hours=part, used_elsewhere=True, **kw,
                                  **{**ident(xs[0] if xs else main, *key, "reserved_1y-no_upfront"),
                                     "resource_id": cd_id, "resource_name": None}))
                for x, f in shares(xs):
                    out.append(Charge(usage_hours=part * f, recurring_unit_price=0.0, **kw,
                                      **ident(x or main, *key, "reserved_1y-no_upfront"),
                                      description=f"usage covered by an existing commitment (term not in the "
                                                  f"export) at its effective rate ${eff:,.4f}/h"))
        for r in recs.get(key, []):
            term_hours = 8760.0 if r.term == "1y" else 26280.0
            pricing = "reserved_1y" if r.term == "1y" else "reserved_3y"
            option = f"{pricing}-{r.payment}"
            used = min(od_hours, (r.average_utilization or 0.0) * r.recommended_quantity * month_h)
            cd_id = (f"{D}recommended/{u.provider}/{u.region}/{u.instance_type}/{r.term}/{r.payment}"
                     + (f"/{r.account_id}" if r.account_id else ""))
            # scope account: the commitment is that account's, its hours land on that account's resources
            mine = [x for x in od_rows if r.account_id in (x.get("sub_account_id"), x.get("billing_account_id"))] \
                if r.account_id else od_rows
            mine = mine or od_rows
            kw = dict(pricing=pricing, payment=r.payment, list_unit_price=r.on_demand_usd_per_hour,
                      contracted_unit_price=r.reserved_effective_usd_per_hour, commitment_id=cd_id,
                      commitment_term_hours=term_hours, instances=r.recommended_quantity, source=r.price_source,
                      estimated=r.estimated_price, **common)
            # the commitment: unused hours, recurring fee and upfront, ResourceId the commitment
            owner = max(mine, key=lambda x: float(x["usage_hours"])) if mine else main
            out.append(Charge(usage_hours=used, unused_hours=r.recommended_quantity * month_h - used,
                              upfront_usd=r.upfront_cost_usd, used_elsewhere=True, **kw,
                              **{**ident(owner, *key, option), "resource_id": cd_id, "resource_name": None}))
            # its used hours, on the resources that ran on demand
            for x, f in shares(mine):
                out.append(Charge(usage_hours=used * f, upfront_usd=0.0, recurring_unit_price=0.0, **kw,
                                  **ident(x or main, *key, option)))
            od_hours = max(0.0, od_hours - used)
        if od_hours > 0 and od_rate:
            for x, f in shares(od_rows):
                out.append(Charge(pricing="on_demand", payment="", usage_hours=od_hours * f, list_unit_price=od_rate,
                                  contracted_unit_price=od_rate, upfront_usd=0.0, commitment_id=None,
                                  commitment_term_hours=None, **common, **ident(x or main, *key, "on_demand")))
    return out
