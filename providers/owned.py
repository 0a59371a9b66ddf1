"""What the team already owns: commitments bought before the plan (issue 26, point 7, the input part).

An :class:`OwnedCommitment` is one commitment still running -- an AWS reserved instance or Savings Plan, an Azure
reservation or savings plan, a GCP committed-use discount, an AWS capacity block -- with what it covers (instances
of a type in a region, or a spend per hour), when its term ends and the provider's own id of it. The planner counts
owned capacity as already paid, buys only what is missing and names the commitments it reuses; the FOCUS output
marks their rows with the existing ``CommitmentDiscountId``. Two sources:

* :func:`load_owned_file` -- the ``--owned FILE`` a user writes (CSV, or YAML: a list of mappings or ``owned:`` a
  list), columns :data:`OWNED_COLUMNS` (:data:`REQUIRED_COLUMNS` required). A bad file is one ``InputError``
  (field ``owned``) naming the file, the line, the column and the accepted values.
* :func:`owned_from_usage` -- the commitments a billing export shows (FOCUS 1.0-1.2, AWS CUR 2.0, Azure cost
  details; the readers of ``providers.usage``). An export tells the id of a commitment on every row it discounts,
  but not always its size or the end of its term: what it does not say stays unknown (``end=None``, ``count`` or
  ``usd_per_hour`` None) and the commitment's ``note`` says what is missing; nothing is guessed. A commitment whose
  end is unknown cannot be counted by the planner until the user gives it (write the export's commitments with
  ``gpuopt review --owned-out FILE``, fill in ``end``, pass it as ``--owned``; the file loader refuses an empty end).

What each export says (sources):

* FOCUS (FOCUS_Spec v1.2, ``specification/datasets/cost_and_usage/columns/``): ``CommitmentDiscountId`` "the
  identifier assigned to a commitment discount by the provider" (an AWS Savings Plan ARN, an RI id, an Azure
  reservation, a GCP CUD); ``CommitmentDiscountCategory`` ``Spend`` (a savings plan: USD per hour) or ``Usage``
  (a reservation or CUD: units of a resource); ``CommitmentDiscountType`` the provider's label (``Savings Plan``,
  ``Reserved Instance``, ``Reservation``...); ``CommitmentDiscountQuantity`` in ``CommitmentDiscountUnit`` (1.1+):
  on usage rows "the number of Commitment Discount Units consumed by a row ... or the unused portion ... over a
  charge period", so the Used plus Unused quantities of one charge period are the commitment's size in that period
  (the spec's usage scenario 3: 0.75 + 0.25 USD in one hour = 1 USD/h). Size per hour = that sum / the period's
  hours, the largest over the export. Unit ``Hour``/``Hours`` counts instances; ``Normalized Hour`` (AWS size
  flexibility) and GCP resource units (vCPU, GPU) do not, so ``count`` stays unknown. FOCUS has no column for the
  end of a term; the one place an export shows it is a ``One-Time`` ``Purchase`` row whose charge period spans the
  term (the spec's purchase scenarios 1 and 3: 2023-01-01 to 2024-01-01), taken as the term when it is longer than
  31 days. FOCUS 1.0 has no quantity columns: a reservation's count is then at least the most instance-hours it
  covered in one hour (said in the note), a savings plan's spend unknown.
* AWS CUR 2.0 (AWS Data Exports user guide, "Reservation columns" and "Savings plan columns"):
  ``reservation_reservation_a_r_n``, ``reservation_start_time``, ``reservation_end_time`` ("the end date of the
  associated RI lease term"), ``reservation_number_of_reservations`` (on RIFee lines);
  ``savings_plan_savings_plan_a_r_n``, ``savings_plan_start_time``, ``savings_plan_end_time`` ("the expiration date
  for the Savings Plan agreement"), ``savings_plan_offering_type`` (ComputeSavingsPlans / EC2InstanceSavingsPlans),
  ``savings_plan_purchase_term`` (1yr / 3yr), ``savings_plan_region``, ``savings_plan_total_commitment_to_date``
  (on an hourly SavingsPlanRecurringFee line, the commitment of that hour: USD/h = it / the line's hours). A term is
  1y or 3y from ``pricing_lease_contract_length`` or ``savings_plan_purchase_term``, else from end - start (within
  a week of 365 or 1,095 days).
* Azure cost details: ``ReservationId`` / ``BenefitId`` and ``PricingModel`` (Reservation / SavingsPlan); no end of
  term and no quantity on usage rows: the end stays unknown, a reservation's count is at least its peak covered
  instance-hours.

Reservations of instance types that are not GPUs (``is_gpu_instance``) are left out (the planner plans GPUs);
savings plans are kept whatever they covered in the export, since a spend commitment covers GPU instances too.
A commitment whose term ended before the end of the export is left out.
"""

from __future__ import annotations

import csv
import datetime as dt
import difflib
import io
import math
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Collection, Mapping

from gpuopt.kernel.errors import InputError
from gpuopt.kernel.inputs import load_yaml, parse_decimal, read_text, yaml_lines
from gpuopt.kernel.records import (HOURS_PER_MONTH, PROVIDERS, RESERVED_PRICING, SAVINGS_PLAN_TERM_HOURS,
                                   WINDOW_MAX_DAYS, default_offering_class)

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

#: The pricing options a commitment is owned under (gpuopt.kernel.records.PRICING_MODELS, the committed ones).
OWNED_PRICING: tuple[str, ...] = ("reserved_1y", "reserved_3y", "savings_plan_1y", "savings_plan_3y",
                                  "capacity_block")
#: Providers whose savings plans an owned file may list (AWS Savings Plans; Azure savings plan for compute):
#: GCP's spend-based commitments are CUDs, Lambda and the others sell none.
SAVINGS_PLAN_PROVIDERS: tuple[str, ...] = ("aws", "azure")
#: Days a term given by start and end may differ from 365 / 1,095 (leap days, and a term that starts at a time of
#: day and ends at midnight).
TERM_SLACK_DAYS = 2
#: ``pricing`` of a commitment read from an export whose term length the export does not say (never in a file).
UNKNOWN_TERM_PRICING: tuple[str, ...] = ("reserved", "savings_plan")
#: Columns of the owned-commitments file, in the order :func:`write_owned_csv` writes them.
OWNED_COLUMNS: tuple[str, ...] = ("provider", "region", "zone", "instance_type", "pricing", "offering_class",
                                  "count", "usd_per_hour", "start", "end", "commitment_discount_id", "note")
#: Columns a file must have (``count`` or ``usd_per_hour`` too: the one the row's pricing needs).
REQUIRED_COLUMNS: tuple[str, ...] = ("provider", "region", "instance_type", "pricing", "end",
                                     "commitment_discount_id")
#: Most instances one commitment row may hold (a sentinel bound: the clouds' quotas are far below it).
MAX_OWNED_COUNT = 100_000
#: Largest committed spend of one savings plan, USD per hour (a sentinel bound).
MAX_OWNED_USD_PER_HOUR = 1e7
#: A One-Time purchase row whose charge period is longer than this many days gives the term (module doc).
TERM_PERIOD_MIN_DAYS = 31

_FIELD = "owned"


# ---------------------------------------------------------------------------------------------------------------
# The record


def read_instant(text: str) -> dt.datetime:
    """An ISO date (``2026-03-01``: midnight UTC) or date-time (``2026-03-01T12:00:00Z``, an offset, or naive =
    UTC) as a UTC datetime. Raises ValueError when it is neither."""
    t = str(text).strip()
    if re.fullmatch(r"\d{4}-\d{2}-\d{2}", t):
        d = dt.date.fromisoformat(t)
        return dt.datetime(d.year, d.month, d.day, tzinfo=dt.timezone.utc)
    v = dt.datetime.fromisoformat(t.replace(" ", "T", 1) if "T" not in t else t)
    return v.replace(tzinfo=dt.timezone.utc) if v.tzinfo is None else v.astimezone(dt.timezone.utc)


def _plan_t0(plan_start: "dt.date | dt.datetime") -> dt.datetime:
    if isinstance(plan_start, dt.datetime):
        return plan_start.replace(tzinfo=dt.timezone.utc) if plan_start.tzinfo is None else \
            plan_start.astimezone(dt.timezone.utc)
    return dt.datetime(plan_start.year, plan_start.month, plan_start.day, tzinfo=dt.timezone.utc)


def _add_months(t: dt.datetime, months: int) -> dt.datetime:
    """``t`` moved by whole calendar months (the day kept, at most the month's last day)."""
    import calendar

    y, m = divmod(t.month - 1 + months, 12)
    year, month = t.year + y, m + 1
    return t.replace(year=year, month=month, day=min(t.day, calendar.monthrange(year, month)[1]))


@dataclass(frozen=True)
class OwnedCommitment:
    """One commitment the team owns.

    Attributes:
        provider: ``aws``, ``azure``, ``gcp``, ``lambda`` (gpuopt.kernel.records.PROVIDERS).
        region: the provider's region code; "" for a commitment not bound to a region (an AWS Compute Savings
            Plan, an Azure savings plan).
        instance_type: the type an instance commitment covers (``p4d.24xlarge``); for an AWS EC2 Instance Savings
            Plan the family it covers (``p5``); "" for any other savings plan, or when an export shows a
            reservation covering several sizes (the note lists them).
        pricing: one of :data:`OWNED_PRICING`; from an export whose term length is unknown, ``reserved`` or
            ``savings_plan`` (:data:`UNKNOWN_TERM_PRICING`).
        commitment_discount_id: the provider's id (RI id or ARN, Azure reservation (order) id, Savings Plan ARN,
            GCP CUD name): what FOCUS calls CommitmentDiscountId.
        end: when the term ends, ISO (exclusive: the commitment covers hours before it); None when an export
            does not say (the note says so; :meth:`months_left` then raises).
        count: instances committed (reservations, CUDs counted in instances, capacity blocks); None for a savings
            plan, or when the export does not say.
        usd_per_hour: the committed spend per hour of a savings plan (USD); None otherwise, or unknown.
        zone: an availability zone for a zonal commitment; "" regional.
        offering_class: ``standard`` / ``convertible`` (AWS RIs), ``compute`` / ``ec2_instance`` (AWS Savings
            Plans), "" otherwise or unknown.
        start: when the term started, ISO; None when unknown (taken as already started).
        source: where it was read: ``owned.csv:3`` (file:line) or ``export.csv (focus-1.0) line 12``.
        note: what an export did not say, or what was derived and how.
    """

    provider: str
    region: str
    instance_type: str
    pricing: str
    commitment_discount_id: str
    end: str | None
    count: float | None = None
    usd_per_hour: float | None = None
    zone: str = ""
    offering_class: str = ""
    start: str | None = None
    source: str = ""
    note: str = ""

    @property
    def is_spend(self) -> bool:
        """True for a savings plan (a spend per hour), False for an instance commitment."""
        return self.pricing in SAVINGS_PLAN_TERM_HOURS or self.pricing == "savings_plan"

    @property
    def term_known(self) -> bool:
        """True when the end of the term is known."""
        return self.end is not None

    def _window(self) -> tuple[dt.datetime | None, dt.datetime]:
        if self.end is None:
            raise InputError(_FIELD, f"commitment {self.commitment_discount_id} ({self.source}): the end of its "
                             "term is unknown (" + (self.note or "the export does not say it") + "); give it in an "
                             "--owned file", accepted="end as an ISO date, e.g. 2027-01-31")
        return (read_instant(self.start) if self.start else None), read_instant(self.end)

    def months_left(self, plan_start: "dt.date | dt.datetime") -> float:
        """Months of 730 h (HOURS_PER_MONTH) the commitment still runs from ``plan_start`` (midnight UTC of a
        date): from the later of plan_start and its start to its end; 0 when it has ended.
        Raises InputError when the end is unknown."""
        start, end = self._window()
        t0 = _plan_t0(plan_start)
        lo = max(t0, start) if start else t0
        return max(0.0, (end - lo).total_seconds() / 3600.0) / HOURS_PER_MONTH

    def month_fraction(self, month_index: int, plan_start: "dt.date | dt.datetime") -> float:
        """Share (0..1) of the plan's month ``month_index`` (0 = the first: the calendar month of plan_start, as
        the plan's lines are labelled "months 1-12 from 2027-01") during which the commitment runs. An RI whose term
        ends 2027-07-01 covers January to June of a plan from 2027-01. Raises InputError when the end is unknown."""
        start, end = self._window()
        a = _add_months(_plan_t0(plan_start), month_index)
        b = _add_months(a, 1)
        lo = max(a, start) if start else a
        return max(0.0, (min(b, end) - lo).total_seconds()) / (b - a).total_seconds()

    def covers(self, month_index: int, plan_start: "dt.date | dt.datetime") -> bool:
        """True when the commitment runs through the plan's month ``month_index``, its last day aside (a month it
        covers only in part is not counted as owned: the planner buys for it). A term written as ending on a
        month's last day (``2027-12-31``, or a bill's ``2027-12-31T23:59:59Z``) covers that month: a fresh user's
        RI ending 2027-12-31 was not counted for December. Raises InputError when the end is unknown."""
        a = _add_months(_plan_t0(plan_start), month_index)
        days = (_add_months(a, 1) - a).total_seconds() / 86400.0
        return self.month_fraction(month_index, plan_start) >= 1.0 - 1.0 / days - 1e-9

    def as_row(self) -> dict[str, str]:
        """The commitment as a row of the owned file (:data:`OWNED_COLUMNS`; unknown values empty)."""
        def num(v: float | None) -> str:
            return "" if v is None else f"{v:g}"
        return {"provider": self.provider, "region": self.region, "zone": self.zone,
                "instance_type": self.instance_type, "pricing": self.pricing,
                "offering_class": self.offering_class, "count": num(self.count),
                "usd_per_hour": num(self.usd_per_hour), "start": self.start or "", "end": self.end or "",
                "commitment_discount_id": self.commitment_discount_id, "note": self.note}


def write_owned_csv(commitments: "list[OwnedCommitment]", path: "str | Path") -> None:
    """Write ``commitments`` as the CSV :func:`load_owned_file` reads (columns :data:`OWNED_COLUMNS`)."""
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=list(OWNED_COLUMNS), lineterminator="\n")
    w.writeheader()
    for c in commitments:
        w.writerow(c.as_row())
    Path(path).write_text(buf.getvalue(), encoding="utf-8")


# ---------------------------------------------------------------------------------------------------------------
# The file


def load_owned_file(path: "str | Path", *, known_types: "Mapping[str, Collection[str]] | None" = None
                    ) -> list[OwnedCommitment]:
    """The commitments of an owned-commitments file: CSV (header row, columns :data:`OWNED_COLUMNS`) or YAML
    (``.yaml``/``.yml``: a list of mappings with those keys, or a mapping ``owned:`` that list).

    Each row: ``provider`` (PROVIDERS), ``pricing`` (:data:`OWNED_PRICING`), ``region`` (required but for an AWS
    Compute or an Azure savings plan), ``instance_type`` (required for an instance commitment; the family for an
    AWS EC2 Instance Savings Plan; empty for other savings plans), ``count`` (a whole number of instances) or
    ``usd_per_hour`` (savings plans), ``end`` (ISO date or date-time, required), optional ``start`` (before the
    end), ``zone``, ``offering_class`` (AWS RIs: standard, the default, or convertible; AWS Savings Plans: compute
    or ec2_instance, required), ``commitment_discount_id`` (required, once per file), ``note``.
    ``known_types``: provider -> instance types (the price snapshot's); when given, an instance commitment's type
    must be one of them (the message lists close matches).

    Raises:
        InputError (field ``owned``): the file is missing or not UTF-8, a column is unknown or missing, or a row
        breaks a rule above; the message names the file, the line and the column.
    """
    p = Path(path)
    text = read_text(p, _FIELD, what="owned-commitments file")
    rows: list[tuple[int, dict[str, Any], Callable[[str], int]]] = []
    if p.suffix.lower() in (".yaml", ".yml"):
        data, root = load_yaml(text, p.name, _FIELD)
        lines = yaml_lines(root)
        prefix: tuple = ()
        if isinstance(data, dict) and set(data) == {"owned"}:
            data, prefix = data["owned"], ("owned",)
        if data is None:
            return []
        if not isinstance(data, list):
            raise InputError(_FIELD, f"{p.name}: expected a list of commitments (or 'owned:' a list)",
                             accepted="a YAML list of mappings with keys " + ", ".join(OWNED_COLUMNS))
        for i, item in enumerate(data):
            line = lines.get(prefix + (i,), 0)
            if not isinstance(item, dict):
                raise InputError(_FIELD, f"{p.name} line {line}: a commitment is not a mapping",
                                 accepted="keys " + ", ".join(OWNED_COLUMNS))
            _check_columns(p.name, line, [str(k) for k in item])
            rows.append((line, {str(k): ("" if v is None else v) for k, v in item.items()},
                         lambda col, i=i, line=line: lines.get(prefix + (i, col), line)))
    else:
        from providers._input import CsvReader

        reader = CsvReader(text, p.name, _FIELD)
        try:
            header = next(reader, None)
        except csv.Error as e:
            raise InputError(_FIELD, f"{p.name} line 1: not CSV ({e})") from None
        if not header:
            raise InputError(_FIELD, f"{p.name} is empty", accepted="a CSV header: " + ", ".join(OWNED_COLUMNS))
        header = [h.strip() for h in header]
        _check_columns(p.name, 1, header, csv_header=True)
        while True:
            try:
                rec = next(reader)
            except StopIteration:
                break
            except csv.Error as e:
                raise InputError(_FIELD, f"{p.name} line {reader.line_num}: not CSV ({e})") from None
            if not any(c.strip() for c in rec):
                continue
            line = reader.line_num
            if len(rec) != len(header):
                raise InputError(_FIELD, f"{p.name} line {line}: {len(rec)} cells where the header has "
                                 f"{len(header)}")
            rows.append((line, dict(zip(header, rec)), lambda col, line=line: line))
    out: list[OwnedCommitment] = []
    seen: dict[str, int] = {}
    for line, values, line_of in rows:
        c = _commitment(p.name, line, values, line_of, known_types)
        if c.commitment_discount_id in seen:
            raise InputError(_FIELD, f"{p.name} line {line}: commitment_discount_id {c.commitment_discount_id!r} "
                             f"is given twice (lines {seen[c.commitment_discount_id]} and {line})",
                             accepted="one row per commitment")
        seen[c.commitment_discount_id] = line
        out.append(c)
    return out


def _check_columns(name: str, line: int, cols: list[str], csv_header: bool = False) -> None:
    low = [c.strip().lower() for c in cols]
    for c, lc in zip(cols, low):
        if lc not in OWNED_COLUMNS:
            close = difflib.get_close_matches(lc, OWNED_COLUMNS, n=1)
            raise InputError(_FIELD, f"{name} line {line}: unknown column {c!r}"
                             + (f" (did you mean {close[0]!r}?)" if close else ""),
                             accepted=", ".join(OWNED_COLUMNS))
    dup = [c for c, n in Counter(low).items() if n > 1]
    if dup:
        raise InputError(_FIELD, f"{name} line {line}: column {dup[0]!r} appears twice", accepted="each column once")
    if csv_header:
        missing = [c for c in REQUIRED_COLUMNS if c not in low]
        if not ("count" in low or "usd_per_hour" in low):
            missing.append("count or usd_per_hour")
        if missing:
            raise InputError(_FIELD, f"{name} line 1: missing column(s) {', '.join(missing)}",
                             accepted="columns " + ", ".join(OWNED_COLUMNS))


def _commitment(name: str, line: int, values: dict[str, Any], line_of: Callable[[str], int],
                known_types: "Mapping[str, Collection[str]] | None") -> OwnedCommitment:
    v = {k.strip().lower(): ("" if val is None else str(val).strip()) for k, val in values.items()}

    def bad(col: str, msg: str, accepted: str | None = None) -> InputError:
        return InputError(_FIELD, f"{name} line {line_of(col)}: {col} {msg}", accepted=accepted)

    def need(col: str) -> str:
        if not v.get(col, ""):
            raise bad(col, "is empty")
        return v[col]

    provider = need("provider").lower()
    if provider not in PROVIDERS:
        raise bad("provider", f"{provider!r} is not a known provider", ", ".join(PROVIDERS))
    pricing = need("pricing").lower()
    if pricing in UNKNOWN_TERM_PRICING:  # written by --owned-out from an export that does not say the term
        raise bad("pricing", f"{pricing!r}: the term length is unknown (the billing export did not say it); "
                  "give it", ", ".join(c for c in OWNED_PRICING if c.startswith(pricing)))
    if pricing not in OWNED_PRICING:
        raise bad("pricing", f"{pricing!r} is not a commitment", ", ".join(OWNED_PRICING))
    spend = pricing in SAVINGS_PLAN_TERM_HOURS
    if spend and provider not in SAVINGS_PLAN_PROVIDERS:
        raise bad("provider", f"{provider!r} sells no savings plan (a spend per hour) gpuopt plans with",
                  ", ".join(SAVINGS_PLAN_PROVIDERS))
    oc = v.get("offering_class", "").lower()
    if spend:
        allowed = ("compute", "ec2_instance") if provider == "aws" else ("",)
        if provider == "aws" and not oc:
            raise bad("offering_class", "is empty: an AWS Savings Plan is compute or ec2_instance",
                      "compute, ec2_instance")
    elif pricing in RESERVED_PRICING:
        allowed = ("standard", "convertible") if provider == "aws" else ("",)
        oc = oc or default_offering_class(provider, pricing)
    else:
        allowed = ("",)
    if oc not in allowed:
        raise bad("offering_class", f"{oc!r} is not a class of a {provider} {pricing}",
                  ", ".join(a or "(empty)" for a in allowed))
    region = v.get("region", "")
    zone = v.get("zone", "")
    itype = v.get("instance_type", "")
    if spend:
        if oc == "ec2_instance":
            if not region:
                raise bad("region", "is empty: an EC2 Instance Savings Plan covers one family in one region")
            if not itype:
                raise bad("instance_type", "is empty: give the family an EC2 Instance Savings Plan covers",
                          "a family such as p5, p4d, g6")
        elif itype:
            raise bad("instance_type", f"{itype!r} given for a savings plan that covers any instance type",
                      "empty for a compute (or Azure) savings plan")
    else:
        if not region:
            raise bad("region", "is empty")
        if not itype:
            raise bad("instance_type", "is empty")
        if known_types is not None:
            types = known_types.get(provider, ())
            if itype not in types:
                close = difflib.get_close_matches(itype, list(types), n=3)
                raise bad("instance_type", f"{itype!r} is not a {provider} instance type of the price data",
                          ", ".join(close) if close else f"a {provider} instance type")
    if zone and provider in ("aws", "gcp") and not zone.startswith(region):
        raise bad("zone", f"{zone!r} is not a zone of region {region!r}", f"a zone such as {region}a")
    count = usd = None
    if spend:
        if v.get("count", ""):
            raise bad("count", "given for a savings plan (a spend per hour, not instances)",
                      "usd_per_hour for a savings plan")
        usd = _number(v, "usd_per_hour", bad, MAX_OWNED_USD_PER_HOUR, need)
    else:
        if v.get("usd_per_hour", ""):
            raise bad("usd_per_hour", f"given for a {pricing} (a count of instances)", "count")
        count = _number(v, "count", bad, MAX_OWNED_COUNT, need)
        if count != int(count):
            raise bad("count", f"{v['count']!r} is not a whole number of instances", "1, 2, 3, ...")
    end_text = need("end")
    try:
        end = read_instant(end_text)
    except ValueError:
        raise bad("end", f"{end_text!r} is not a date", "YYYY-MM-DD or an ISO date-time") from None
    start_text = v.get("start", "")
    if start_text:
        try:
            start = read_instant(start_text)
        except ValueError:
            raise bad("start", f"{start_text!r} is not a date", "YYYY-MM-DD or an ISO date-time") from None
        if start >= end:
            raise bad("end", f"{end_text} is not after start {start_text}")
        term_days = {"reserved_1y": 365, "savings_plan_1y": 365, "reserved_3y": 1095, "savings_plan_3y": 1095}
        if pricing in term_days and abs((end - start).days - term_days[pricing]) > TERM_SLACK_DAYS:
            raise bad("end", f"{start_text} to {end_text} is {(end - start).days} days, not a {pricing} term "
                      f"({term_days[pricing]} days, leap days aside)",
                      f"an end {term_days[pricing]} days after start, or the pricing of that term")
        if pricing == "capacity_block" and (end - start) > dt.timedelta(days=WINDOW_MAX_DAYS["capacity_block"]):
            raise bad("end", f"a capacity block of {(end - start).days} days is longer than "
                      f"{WINDOW_MAX_DAYS['capacity_block']} days (AWS Capacity Blocks: 1-182 days)")
    cid = need("commitment_discount_id")
    return OwnedCommitment(provider=provider, region=region, instance_type=itype, pricing=pricing,
                           commitment_discount_id=cid, end=end_text, count=count, usd_per_hour=usd, zone=zone,
                           offering_class=oc, start=start_text or None, source=f"{name}:{line}",
                           note=v.get("note", ""))


def _number(v: dict[str, str], col: str, bad: Callable[..., InputError], hi: float,
            need: Callable[[str], str]) -> float:
    text = need(col)
    try:
        x = parse_decimal(text)
    except ValueError:
        raise bad(col, f"{text!r} is not a number", f"a number > 0 and <= {hi:g} (no _ between digits)") from None
    if not (math.isfinite(x) and 0 < x <= hi):
        raise bad(col, f"{text!r} is out of range", f"a number > 0 and <= {hi:g}")
    return x


# ---------------------------------------------------------------------------------------------------------------
# A billing export

#: Columns read besides the ones ``providers.usage``'s readers use, by format (module doc gives their sources).
_EXTRA_COLUMNS: dict[str, tuple[str, ...]] = {
    "focus": ("CommitmentDiscountType", "CommitmentDiscountCategory", "CommitmentDiscountQuantity",
              "CommitmentDiscountUnit", "CommitmentDiscountStatus", "ChargeFrequency"),
    "aws-cur-2.0": ("reservation_start_time", "reservation_end_time", "reservation_number_of_reservations",
                    "pricing_lease_contract_length", "pricing_offering_class", "savings_plan_start_time",
                    "savings_plan_end_time", "savings_plan_offering_type", "savings_plan_purchase_term",
                    "savings_plan_region", "savings_plan_total_commitment_to_date", "line_item_line_item_type"),
    "azure-cost-details": ("PricingModel",),
}
_NUMERIC_EXTRA = ("CommitmentDiscountQuantity", "reservation_number_of_reservations",
                  "savings_plan_total_commitment_to_date")
_TERM_WORDS = {"1yr": "1y", "1 yr": "1y", "1 year": "1y", "1year": "1y", "12 months": "1y", "p1y": "1y",
               "3yr": "3y", "3 yr": "3y", "3 years": "3y", "3year": "3y", "36 months": "3y", "p3y": "3y"}
_HOUR_UNITS = ("hour", "hours", "hrs", "hr")


def owned_from_usage(path: "str | Path", *, fmt: str = "auto",
                     is_gpu_instance: "Callable[[str, str], bool] | None" = None) -> list[OwnedCommitment]:
    """The commitments a billing export shows (FOCUS 1.0-1.2, AWS CUR 2.0, Azure cost details), one per
    commitment id, sorted by id; what the export does not say is None and said in the commitment's ``note``
    (module doc: what each format says, and the rules). ``source`` names the export, its format and the first line
    of the commitment. Reservations of non-GPU types (``is_gpu_instance``, default
    ``providers.usage.default_is_gpu_instance``) and commitments whose term ended within the export are left out.

    Raises:
        InputError: the export cannot be read (``providers.usage`` input boundary), or it is the ``hourly``
        warehouse table, which carries no commitment details (field ``format``).
    """
    import pandas as pd

    from providers.usage import FORMATS
    from providers.usage_columns import ReadContext, as_object, num_col, text_col
    from providers.usage_formats import BATCHERS, CUR_COLUMNS, NUMERIC_COLUMNS, focus_batch
    from providers.usage_names import default_is_gpu_instance
    from providers.usage_source import batches, detect, line_numbers, open_source

    src = open_source(path)
    got = detect(src)
    if fmt != "auto" and fmt not in FORMATS:
        raise InputError("format", f"unknown format {fmt!r}", accepted="auto, " + ", ".join(FORMATS))
    fmt = got if fmt == "auto" else fmt
    if fmt == "hourly":
        raise InputError("format", f"{src.path.name} is the hourly warehouse table: it names commitments but not "
                         "their kind, size or term", accepted="the billing export itself (FOCUS, AWS CUR 2.0, "
                         "Azure cost details)")
    family = "focus" if fmt.startswith("focus") else fmt
    ctx = ReadContext(fmt, is_gpu_instance or default_is_gpu_instance)
    batcher = BATCHERS.get(fmt, focus_batch)
    extra = _EXTRA_COLUMNS.get(family, ())
    wanted = list(src.columns)
    if fmt == "aws-cur-2.0":
        lowset = set(CUR_COLUMNS) | set(extra)
        wanted = [c for c in src.columns if c.strip().lower() in lowset]
    numeric = NUMERIC_COLUMNS[family] | {c.lower() for c in _NUMERIC_EXTRA}
    parts: list[pd.DataFrame] = []
    export_end = None
    for df, first, fname in batches(src, wanted, numeric):
        df.index = pd.RangeIndex(first, first + len(df))
        frame, _ = batcher(df, src, ctx)
        if "extra" in frame.columns:
            frame = frame[~frame["extra"].astype(bool)]
        day = (frame["kind"] == "usage") & ((frame["end"] - frame["start"]) <= pd.Timedelta(days=1))
        e = frame.loc[day, "end"].max()  # what the export covers: its usage rows (a purchase's may span a term)
        if pd.notna(e):
            export_end = e if export_end is None else max(export_end, e)
        sel = (frame["cid"] != "") & (frame["problem"] == "")
        if not sel.any():
            continue
        part = frame.loc[sel, ["provider", "region", "itype", "start", "end", "hours", "cid", "kind"]].copy()
        for name in extra:
            c = src.col(name)
            if name in _NUMERIC_EXTRA:
                part[name] = num_col(df, c)[0][sel]
            else:
                part[name] = as_object(text_col(df, c))[sel]
        part["_rec"] = part.index
        part["_file"] = fname
        parts.append(part)
    if not parts:
        return []
    rows = pd.concat(parts, ignore_index=True)
    firsts = rows.groupby("cid", sort=False)[["_file", "_rec"]].first()
    recs: dict[str, list[int]] = {}
    for f, r in zip(firsts["_file"], firsts["_rec"]):
        recs.setdefault(f, []).append(int(r))
    line_of = line_numbers(src, recs)
    out = []
    for cid, g in rows.groupby("cid", sort=True):
        f, r = firsts.loc[cid, "_file"], int(firsts.loc[cid, "_rec"])
        where = f"{src.path.name} ({fmt}) line {line_of.get((f, r), r + 2)}"
        c = _from_rows(str(cid), g, family, where, ctx.is_gpu)
        if c is None:
            continue
        if c.end is not None and export_end is not None and read_instant(c.end) <= export_end:
            continue  # ended within the export
        out.append(c)
    return out


def _first(values: "pd.Series") -> str:
    v = [str(x) for x in values if str(x)]
    return Counter(v).most_common(1)[0][0] if v else ""


def _kind(cid: str, g: "pd.DataFrame", family: str) -> str:
    """'spend', 'usage' or '' (not said)."""
    low = cid.lower()
    if family == "focus":
        cat = _first(g["CommitmentDiscountCategory"]).lower()
        if cat in ("spend", "usage"):
            return cat
        typ = _first(g["CommitmentDiscountType"]).lower()
        if "saving" in typ:
            return "spend"
        if "reserv" in typ or "commit" in typ:
            return "usage"
        unit = _first(g["CommitmentDiscountUnit"])
        if re.fullmatch(r"[A-Z]{3}", unit):  # a currency (ISO 4217): a spend commitment (FOCUS 1.2 examples: USD)
            return "spend"
    elif family == "azure-cost-details":
        pm = _first(g["PricingModel"]).lower().replace(" ", "")
        if pm in ("savingsplan", "reservation"):
            return "spend" if pm == "savingsplan" else "usage"
    if ":savingsplan/" in low or "/savingsplanorders/" in low:
        return "spend"
    if ":reserved-instances/" in low or "/reservationorders/" in low:
        return "usage"
    return ""


def _iso(t: Any) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


def _per_hour(g: "pd.DataFrame", values: "pd.Series") -> float | None:
    """The largest sum of ``values`` over rows of one charge period, per hour of that period."""
    ok = values.notna() & g["start"].notna() & g["end"].notna() & (g["end"] > g["start"])
    if not ok.any():
        return None
    sub = g[ok].assign(_v=values[ok])
    sums = sub.groupby(["start", "end"])["_v"].sum().reset_index()
    hours = (sums["end"] - sums["start"]).dt.total_seconds() / 3600.0
    return float((sums["_v"] / hours).max())


def _from_purchases(g: "pd.DataFrame", long_: "pd.DataFrame", notes: list[str]) -> float | None:
    """USD/h of a spend commitment from its FOCUS purchase rows: the one-time purchase over the term (per hour of
    its charge period) plus the recurring purchases (per hour of theirs); None when there are none, or when the
    recurring rows' charge periods overlap (they then do not say a rate per hour; said in ``notes``)."""
    one = _per_hour(long_, long_["CommitmentDiscountQuantity"]) if len(long_) else None
    rec = g[(g["kind"] == "purchase") & (g["ChargeFrequency"].str.lower() == "recurring")
            & g["CommitmentDiscountQuantity"].notna()]
    rate = None
    if len(rec):
        periods = rec[["start", "end"]].drop_duplicates().sort_values("start")
        if (periods["start"].iloc[1:].to_numpy() < periods["end"].iloc[:-1].to_numpy()).any():
            notes.append("its recurring purchase rows have overlapping charge periods: their rate is not used")
        else:
            rate = _per_hour(rec, rec["CommitmentDiscountQuantity"])
    if one is None and rate is None:
        return None
    return (one or 0.0) + (rate or 0.0)


def _from_rows(cid: str, g: "pd.DataFrame", family: str, where: str,
               is_gpu: Callable[[str, str], bool]) -> OwnedCommitment | None:
    import pandas as pd

    notes: list[str] = []
    provider = _first(g["provider"])
    kind = _kind(cid, g, family)
    use = g[g["kind"].isin(["usage", "unused"])]
    types = sorted({str(t) for t in use["itype"] if str(t)})
    regions = sorted({str(t) for t in use["region"] if str(t)})
    start = end = None
    term = ""
    count = usd = None
    offering_class = ""
    region = regions[0] if len(regions) == 1 and kind != "spend" else ""
    if len(regions) > 1 and kind != "spend":
        notes.append("used in regions " + ", ".join(regions))
    if family == "aws-cur-2.0":
        pre = "savings_plan" if kind == "spend" else "reservation"
        ends = pd.to_datetime(g[f"{pre}_end_time"].replace("", None), utc=True, errors="coerce").dropna()
        starts = pd.to_datetime(g[f"{pre}_start_time"].replace("", None), utc=True, errors="coerce").dropna()
        end = ends.max() if len(ends) else None
        start = starts.min() if len(starts) else None
        term = _TERM_WORDS.get(_first(g["savings_plan_purchase_term" if kind == "spend"
                                        else "pricing_lease_contract_length"]).lower(), "")
        if kind == "spend":
            offering_class = {"computesavingsplans": "compute", "ec2instancesavingsplans": "ec2_instance"}.get(
                _first(g["savings_plan_offering_type"]).lower(), "")
            region = _first(g["savings_plan_region"]) if offering_class == "ec2_instance" else ""
            fee = g[g["line_item_line_item_type"].str.lower() == "savingsplanrecurringfee"]
            usd = _per_hour(fee, fee["savings_plan_total_commitment_to_date"])
            if usd is not None:
                notes.append("usd_per_hour from savings_plan_total_commitment_to_date of its hourly recurring fees")
        else:
            offering_class = _first(g["pricing_offering_class"]).lower()
            n = g["reservation_number_of_reservations"].dropna()
            if len(n):
                count = float(n.max())
    elif family == "focus":
        pur = g[(g["kind"] == "purchase") & (g["ChargeFrequency"].str.lower() == "one-time")]
        long_ = pur[(pur["end"] - pur["start"]) > pd.Timedelta(days=TERM_PERIOD_MIN_DAYS)]
        if len(long_):
            start, end = long_["start"].min(), long_["end"].max()
            notes.append("term from the charge period of its one-time purchase")
        unit = _first(g["CommitmentDiscountUnit"])
        covered = use["CommitmentDiscountQuantity"]
        if kind == "spend" and unit:
            usd = _per_hour(use, covered)
            if usd is None:
                usd = _from_purchases(g, long_, notes)
            if usd is not None and unit.upper() != "USD":
                notes.append(f"usd_per_hour is in {unit}, not USD")
        elif kind == "usage" and unit.lower() in _HOUR_UNITS:
            count = _per_hour(use, covered)
        elif kind == "usage" and unit:
            notes.append(f"its size is in {unit!r} (CommitmentDiscountUnit), not in instances: count unknown")
    if end is not None and start is not None and not term:
        days = (end - start).total_seconds() / 86400.0
        term = "1y" if abs(days - 365) <= 7 else "3y" if abs(days - 1095) <= 7 else ""
    if kind == "usage" and count is None and not any("count unknown" in n for n in notes):
        lb = _per_hour(use[use["kind"] == "usage"], use["hours"][use["kind"] == "usage"])
        if lb is not None:
            count = float(math.ceil(lb - 1e-9))
            notes.append(f"count: the export does not say it; at least {count:g} (the most instance-hours it "
                         "covered in one hour)")
    if kind == "spend" and usd is None:
        notes.append("usd_per_hour unknown: the export does not say the committed spend")
    if kind == "usage":
        gpu_types = [t for t in types if is_gpu(provider, t)]
        if types and not gpu_types:
            return None  # a reservation of non-GPU instances: nothing for the planner
        if len(types) == 1:
            itype = types[0]
        else:
            itype = ""
            if types:
                notes.append("covered several types: " + ", ".join(types))
        pricing = f"reserved_{term}" if term else "reserved"
    elif kind == "spend":
        itype = ""
        pricing = f"savings_plan_{term}" if term else "savings_plan"
        if provider == "aws" and not offering_class:
            notes.append("plan type (compute or ec2_instance) not in the export")
    else:
        itype = types[0] if len(types) == 1 else ""
        pricing = ""
        notes.append("the export does not say whether it is a reservation or a savings plan")
    if end is None:
        notes.insert(0, "end of term unknown: the export does not say it")
    elif not term:
        notes.append("term length is neither 1 nor 3 years")
    return OwnedCommitment(provider=provider, region=region, instance_type=itype, pricing=pricing,
                           commitment_discount_id=cid, end=_iso(end) if end is not None else None, count=count,
                           usd_per_hour=usd, offering_class=offering_class,
                           start=_iso(start) if start is not None else None, source=where, note="; ".join(notes))
