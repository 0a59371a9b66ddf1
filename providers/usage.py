"""Billing-data readers for ``gpuopt review``: last month's GPU usage and commitments from a billing export.

``read_usage(path)`` reads one export -- FOCUS 1.0/1.1/1.2 (CSV or Parquet), AWS CUR 2.0 (CSV, CSV.gz or Parquet),
Azure cost details (CSV), or the ``hourly`` table the warehouse SQL in ``providers/sql/`` writes -- in batches
(pyarrow), keeps the GPU compute rows and aggregates them as it goes into one row per
(provider, region, instance_type, pricing_category, commitment_id, hour). Memory is bounded by the size of that
aggregate, not by the export (see ``benchmarks/`` and ``tests/test_usage.py::test_streaming_memory``).

Identifying GPU rows and their instance type (rules by format; ``is_gpu_instance(provider, instance_type)`` decides,
default :func:`default_is_gpu_instance`: the shipped price snapshot's instance types or :data:`GPU_PATTERNS`):

* FOCUS. The instance type is the first of: an ``x_`` column that names it (``x_InstanceType``, ``x_VmSize``,
  ``x_MachineType``, ``x_ArmSkuName``; AWS ``x_UsageType`` after its ``:``, e.g. ``USE1-BoxUsage:p4d.24xlarge``;
  Azure ``x_SkuMeterName`` such as ``NC24ads A100 v4``; the keys InstanceType/VMSize/ServiceType/MachineType of the
  JSON in ``SkuPriceDetails`` or ``x_SkuDetails``); the ``ChargeDescription`` -- AWS ``... per On Demand Linux
  p3.2xlarge Instance Hour`` / ``... p3.2xlarge reserved instance applied`` (an EBS-optimized ``per p3.2xlarge
  instance-hour`` line is not instance usage), Azure ``Virtual Machines NCads A100 v4 Series - NC24ads A100 v4 -
  US East``, GCP ``Nvidia Tesla A100 GPU running in Americas`` (instance_type ``nvidia-tesla-a100``, usage in
  GPU-hours, said in the notes); and last, for rows whose provider names its instances nowhere else (the FOCUS spec
  examples), ``SkuId`` then ``ResourceId``. Usage hours: ``ConsumedQuantity`` when ``ConsumedUnit`` is an hour unit,
  else ``PricingQuantity`` times the block of ``PricingUnit`` (``10 Hours``, ``10K Hours``).
* AWS CUR 2.0: ``product_instance_type`` (or ``product['instance_type']`` of the map column), else the part of
  ``line_item_usage_type`` after ``:``. Instance usage = usage types with BoxUsage / SpotUsage / DedicatedUsage /
  HostUsage (else ``pricing_unit`` Hrs with an instance type).
* Azure cost details: ``AdditionalInfo`` JSON ``ServiceType`` or ``VMSize``, else the meter (``MeterName``
  ``NC24ads A100 v4`` / ``NC24ads A100 v4 Spot`` -> ``Standard_NC24ads_A100_v4``), else a ``Standard_...`` token in
  ``ProductName`` (reservation purchases). Compute rows: MeterCategory ``Virtual Machines`` or ConsumedService
  ``Microsoft.Compute``.

A compute usage row that says it is a GPU (GPU / NVIDIA in its text, an Azure N-series meter, a GCP A2/A3/A4/G2
core or RAM row) but names no instance type is a bad row (``no_instance_type``), never guessed. Rows of other
services or of non-GPU instance types are counted in ``rows_not_gpu``; rows of GPU instances that break the format
(unparseable date or number, end before start, ...) are bad rows with their 1-based file line (header = 1; for
Parquet the row index + 2). ``rows_read == rows_gpu + rows_not_gpu + len(bad_rows)``.

Costs (USD only; another currency raises InputError): ``billed_cost`` is what the invoice charges for the line
(FOCUS BilledCost; CUR line_item_unblended_cost; Azure cost, 0 for usage a commitment covers), ``effective_cost``
the amortized cost (FOCUS EffectiveCost; CUR reservation_effective_cost for DiscountedUsage and
savings_plan_savings_plan_effective_cost for SavingsPlanCoveredUsage, the unblended cost otherwise; Azure cost of the
amortized export), ``list_cost`` the public on-demand price of the line (NaN when the export lacks it).

Refunds and credits of a commitment (a CUR Refund/Credit line with a savings plan or reservation ARN, an Azure
Refund with its reservation order id, a FOCUS Credit/Adjustment with a CommitmentDiscountId) are netted against
the commitment's purchase: in the amortized view the refund's effective cost is minus what is left of its
purchases' effective cost in the export (0 when the purchase is amortized into usage, as it is in CUR, Azure and
amortized FOCUS data), so a purchase of 8,760 and its refund give 0.00, not -8,760; in the billed view
:func:`purchase_totals` folds the refund into the commitment's Purchase total (up to it).

Input boundary (one line naming the file, InputError field ``usage``, before any row is read where possible): UTF-8
with or without BOM (a byte that is not UTF-8 in a column gpuopt reads names the file, line and column; columns it
does not read are not decoded, as pyarrow and DuckDB decode only the columns they project); header names stripped;
a name twice (case-insensitively) refused; at most :data:`MAX_COLUMNS` columns and a header of at most
:data:`MAX_HEADER_CHARS` characters; a truncated gzip or a corrupt Parquet file (or part of a folder) named. Row
level (bad rows with a reason): dates outside :func:`date_window` (2000-01-01 to two years after today), usage rows
covering more than :data:`MAX_USAGE_ROW_DAYS` days, amounts that are not finite or beyond :data:`MAX_ABS_AMOUNT`,
a negative Quantity, cost or price on an Azure usage row, a negative usage_hours or cost in the hourly format.
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import math
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterator

from gpuopt.kernel.errors import InputError

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

#: The values ``source_format`` takes, and ``fmt`` accepts besides ``auto``.
FORMATS: tuple[str, ...] = ("focus-1.0", "focus-1.1", "focus-1.2", "aws-cur-2.0", "azure-cost-details", "hourly")
#: Columns of ``UsageData.hourly`` (in this order).
HOURLY_COLUMNS: tuple[str, ...] = ("provider", "region", "instance_type", "pricing_category", "commitment_id",
                                   "account_id", "hour", "usage_hours", "billed_cost", "effective_cost", "list_cost")
#: Columns of ``UsageData.ids`` (in this order).
IDS_COLUMNS: tuple[str, ...] = ("provider", "region", "instance_type", "pricing_category", "commitment_id",
                                "billing_account_id", "billing_account_name", "sub_account_id", "sub_account_name",
                                "resource_id", "resource_name", "sku_id", "sku_price_id", "usage_hours",
                                "first_start", "last_end")
#: Columns of ``UsageData.purchases`` (in this order).
PURCHASE_COLUMNS: tuple[str, ...] = ("provider", "region", "instance_type", "commitment_id", "charge_category",
                                     "billed_cost", "effective_cost", "charge_period_start", "charge_period_end",
                                     "description", "line")
#: pricing_category values: on-demand, commitment-covered, spot, unknown.
PRICING_CATEGORIES: tuple[str, ...] = ("Standard", "Committed", "Dynamic", "")
#: Strings read as null in every text column (besides the empty cell).
NULL_STRINGS: tuple[str, ...] = ("", "NULL", "null", "Null", "NaN", "nan", "None")
#: The first date a billing row may carry (see :func:`date_window`).
FIRST_DATE = "2000-01-01"
#: How many years after today a billing row's date may be.
MAX_YEARS_AHEAD = 2
#: A usage row may cover at most this many days (longer: a bad row; the hour spreading is bounded by it).
MAX_USAGE_ROW_DAYS = 366
#: Most columns an export may have: real exports have ~40 (FOCUS) to ~130 (CUR 2.0); a wider file is refused
#: before any row is read, so that a header of a million columns fails fast.
MAX_COLUMNS = 2_000
#: Longest header line read (characters).
MAX_HEADER_CHARS = 1 << 20
#: Largest magnitude of a cost, price or quantity cell; beyond it (or not finite: inf, 1e400) the cell is not a
#: number, so that no sum overflows to infinity.
MAX_ABS_AMOUNT = 1e15
#: Rows per batch (CSV: about that many, by a block size of ~48 MB).
BATCH_ROWS = 262_144
_CSV_BLOCK_BYTES = 16 << 20

#: Documented GPU instance families, by provider (regular expressions over the instance type).
GPU_PATTERNS: dict[str, tuple[str, ...]] = {
    # p2/p3/p3dn/p4d/p4de/p5/p5e/p5en/p6-b200/p6e-gb200; g2/g3/g3s/g4dn/g4ad/g5/g5g/g6/g6e/g6f/gr6/gr6f/g7e
    "aws": (r"^p\d+[a-z]*(-[a-z0-9]+)?\.[a-z0-9-]+$", r"^gr?\d+[a-z]*\.[a-z0-9-]+$"),
    # NC / ND / NV / NG / NCC sizes (armSkuName)
    "azure": (r"^Standard_N[CDVG][A-Za-z0-9_]*$",),
    # A2/A3/A4/A4X/G2/G4 machine types; accelerator names of GPU SKU rows
    "gcp": (r"^(a2|a3|a4|a4x|g2|g4)-[a-z0-9-]+$", r"^nvidia-[a-z0-9-]+$"),
    "lambda": (r"^gpu_\d+x_[a-z0-9_]+$",),
}
_GPU_RES = {p: tuple(re.compile(x) for x in pats) for p, pats in GPU_PATTERNS.items()}
_PROVIDERS = {"aws": "aws", "amazon web services": "aws", "amazon web services, inc.": "aws", "amazon": "aws",
              "microsoft": "azure", "azure": "azure", "microsoft azure": "azure", "google cloud": "gcp",
              "google": "gcp", "gcp": "gcp", "google cloud platform": "gcp", "lambda": "lambda",
              "lambda labs": "lambda", "oracle": "oracle", "oracle cloud infrastructure": "oracle"}


@dataclass
class BadRow:
    """A row that was not used: 1-based file line (header = 1; Parquet: row index + 2) and why."""

    line: int
    reason: str


@dataclass
class UsageData:
    """GPU usage and commitments read from one billing export. See the module doc for the rules.

    Attributes:
        hourly: one row per (provider, region, instance_type, pricing_category, commitment_id, account_id, hour),
            columns :data:`HOURLY_COLUMNS`: provider ('aws', 'azure', 'gcp' or another lower-case name; '' when the
            export does not say), region (provider code: us-east-1, eastus), instance_type (AWS type, Azure
            armSkuName Standard_..., GCP machine type), pricing_category ('Standard' on-demand, 'Committed',
            'Dynamic' spot, '' unknown), commitment_id ('' when none), account_id (the account that ran the usage:
            FOCUS SubAccountId, else BillingAccountId; CUR line_item_usage_account_id, else
            bill_payer_account_id; Azure SubscriptionId / SubscriptionGuid; the hourly format's optional
            ``account_id`` column; '' when the export names none), hour (UTC, tz-aware, floored to the hour), usage_hours
            (instance-hours used in that hour; a row covering several hours is spread in proportion to its overlap
            with each hour, i.e. evenly), billed_cost, effective_cost (amortized), list_cost (NaN when unknown), USD.
        purchases: commitment purchases and fees, unused commitment, refunds, credits and adjustments, one row per
            source row, columns :data:`PURCHASE_COLUMNS`: charge_category 'Purchase' | 'Adjustment' | 'Credit' |
            'Usage' (unused commitment), billed_cost (negative for refunds/credits), effective_cost, the charge
            period (UTC), description, line (file line of the source row).
        period_start, period_end: first hour and end of the last hour of the GPU usage kept (NaT when none).
        source_format: one of :data:`FORMATS`.
        currency: 'USD'.
        rows_read, rows_gpu, rows_not_gpu: data rows read; rows kept (hourly or purchases); rows of other services
            or non-GPU instances. rows_read == rows_gpu + rows_not_gpu + len(bad_rows).
        bad_rows: rows not used because they break the format, with their line.
        notes: what was corrected or assumed, with counts.
        coverage_start, coverage_end: what the export covers, from the charge periods of its usage rows of every
            service (GPU or not) that span at most a day (FOCUS ChargeCategory Usage, CUR Usage /
            DiscountedUsage / SavingsPlanCoveredUsage, Azure usage rows, every hourly row): the first hour with a
            charge and the end of the last hour covered (UTC; with ``lookback_days``, cut to the lookback). Monthly
            rows (fees, purchases, monthly usage lines) do not count: a September fee row does not make an export
            of Sep 16 - Oct 15 cover Sep 1. NaT when no row qualifies.
        covered_days: the UTC days (datetime.date, sorted) on which at least one such row has a charge period, or
            GPU usage falls. A day inside the coverage that is not in it is a gap: the export has no row at all
            that day (missing data, not idle hours).
        ids: the identifiers the export gives the GPU usage rows kept, one row per (provider, region, instance_type,
            pricing_category, commitment_id) and identifiers (:data:`ID_COLUMNS`: billing account, sub account,
            resource, SKU and SKU price, '' when the export has none), with the usage_hours they carry and the
            start of their first and end of their last row (UTC); columns :data:`IDS_COLUMNS`. Empty for the
            ``hourly`` format (the warehouse table has no identifiers). With ``lookback_days``, the rows that end
            before the window are dropped (a row's usage_hours still counts its hours before the window).
    """

    hourly: "pd.DataFrame"
    purchases: "pd.DataFrame"
    period_start: "pd.Timestamp"
    period_end: "pd.Timestamp"
    source_format: str
    currency: str
    rows_read: int
    rows_gpu: int
    rows_not_gpu: int
    bad_rows: list[BadRow] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    coverage_start: Any = None
    coverage_end: Any = None
    covered_days: tuple = ()
    ids: "pd.DataFrame | None" = None


# ---------------------------------------------------------------------------------------------------------------
# GPU instances


_SNAPSHOT_TYPES: dict[str, frozenset[str]] | None = None


def _snapshot_types() -> dict[str, frozenset[str]]:
    global _SNAPSHOT_TYPES
    if _SNAPSHOT_TYPES is None:
        from pricing_cache.store import load_offers

        df, _info = load_offers(use_cache=False)
        _SNAPSHOT_TYPES = {str(p): frozenset(str(t) for t in g["instance_type"].unique())
                           for p, g in df.groupby("provider")}
    return _SNAPSHOT_TYPES


def gpu_pattern_match(provider: str, instance_type: str) -> bool:
    """True when ``instance_type`` matches a documented GPU family of ``provider`` (:data:`GPU_PATTERNS`);
    for an unknown provider, of any provider."""
    if not instance_type:
        return False
    pats = _GPU_RES.get(provider)
    groups = [pats] if pats else list(_GPU_RES.values())
    return any(r.match(instance_type) for g in groups for r in g)


def default_is_gpu_instance(provider: str, instance_type: str) -> bool:
    """The default GPU test: the type is in the shipped snapshot's offers of that provider, or matches
    :data:`GPU_PATTERNS`."""
    if not instance_type:
        return False
    if instance_type in _snapshot_types().get(provider, frozenset()):
        return True
    return gpu_pattern_match(provider, instance_type)


# ---------------------------------------------------------------------------------------------------------------
# Instance types from text

_AWS_TYPE = r"[a-z][a-z0-9]*(?:-[a-z0-9]+)?\.(?:nano|micro|small|medium|large|\d*xlarge|metal(?:-\d+xl)?)"
_AWS_TYPE_RE = re.compile(rf"^{_AWS_TYPE}$")
# "per On Demand Linux p3.2xlarge Instance Hour", "per Linux/UNIX (Amazon VPC), m5.large reserved instance applied",
# "Linux p3.2xlarge Spot Instance-hour"; not "for 1750 Mbps per p3.2xlarge instance-hour" (EBS-optimized).
_AWS_DESC_RE = re.compile(rf"(?<![\w.-])({_AWS_TYPE})(?:\s+(?:Dedicated|Spot|Dedicated Host))*\s+"
                          r"(?:Instance Hour|Instance-hour|reserved instance applied|instance hour)", re.IGNORECASE)
_AWS_MBPS_RE = re.compile(r"\bMbps per\b", re.IGNORECASE)
_AWS_USAGE_RE = re.compile(r"(BoxUsage|SpotUsage|DedicatedUsage|HostUsage|HostBoxUsage|DedicatedRes)")
_AZ_DESC_RE = re.compile(r"Virtual Machines\s+(?P<series>.+?)\s+Series(?:\s+\w+)?\s+-\s+(?P<meter>[^-]+?)"
                         r"(?:\s+-\s+.*)?$", re.IGNORECASE)
_AZ_SIZE_RE = re.compile(r"\bStandard_[A-Za-z0-9]+(?:_[A-Za-z0-9]+)*")
_AZ_METER_SUFFIX_RE = re.compile(r"\s+(Spot|Low Priority|Windows|Linux|Dev/Test)$", re.IGNORECASE)
_AZ_GPU_SERIES_RE = re.compile(r"^N[CDVG]", re.IGNORECASE)
_GCP_GPU_SKU_RE = re.compile(r"^(?:Commitment v\d+: )?(?P<gpu>(?:Nvidia|NVIDIA)\s.+?)\s+GPU\b", re.IGNORECASE)
_GCP_GPU_FAMILY_RE = re.compile(r"^(?:Spot Preemptible |Preemptible )?(A2|A3|A4X?|G2|G4)\b.*\b(Core|Ram|Instance)\b",
                                re.IGNORECASE)
_GPU_WORD_RE = re.compile(r"\b(?:GPU|NVIDIA|Tesla)\b", re.IGNORECASE)
_HOUR_UNIT_RE = re.compile(r"^\s*(?:(?P<n>\d+(?:\.\d+)?)\s*(?P<k>[KkMm])?\s+)?(?P<u>hours?|hrs?|hr|h)\s*$",
                           re.IGNORECASE)
_AZ_REGION_WORDS = {"us", "europe", "asia", "australia", "brazil", "canada", "india", "japan", "korea", "uk",
                    "france", "germany", "norway", "switzerland", "uae", "southafrica", "sweden", "qatar", "italy",
                    "poland", "israel", "mexico", "spain", "newzealand", "chile", "indonesia", "malaysia"}
_JSON_TYPE_KEYS = ("instancetype", "instance_type", "x_instancetype", "vmsize", "x_vmsize", "servicetype",
                   "machinetype", "machine_type", "x_machinetype", "armskuname", "x_armskuname")


def azure_size_from_meter(meter: str | None) -> str:
    """'NC24ads A100 v4' (or '... Spot' / '... Low Priority') -> 'Standard_NC24ads_A100_v4'; 'D11 v2/DS11 v2' ->
    'Standard_D11_v2' (the first alternative); '' when the text is not a size."""
    if not meter:
        return ""
    s = str(meter).strip()
    m = _AZ_SIZE_RE.search(s)
    if m:
        return m.group(0)
    s = s.split("/")[0].strip()
    while True:
        t = _AZ_METER_SUFFIX_RE.sub("", s)
        if t == s:
            break
        s = t
    if not re.match(r"^[A-Z]{1,4}\d+[A-Za-z0-9-]*(\s+[A-Za-z0-9]+)*$", s):
        return ""
    return "Standard_" + "_".join(s.split())


def aws_type_from_usage_type(usage_type: str | None) -> str:
    """'USE1-BoxUsage:p4d.24xlarge' -> 'p4d.24xlarge'; '' when there is no type after ':'."""
    if not usage_type or ":" not in usage_type:
        return ""
    t = usage_type.rsplit(":", 1)[1].strip()
    return t if _AWS_TYPE_RE.match(t) else ""


def _json_type(text: str | None) -> str:
    if not text or "{" not in str(text):
        return ""
    try:
        obj = json.loads(text)
    except (ValueError, TypeError):
        return ""
    if not isinstance(obj, dict):
        return ""
    low = {str(k).lower(): v for k, v in obj.items()}
    for k in _JSON_TYPE_KEYS:
        v = low.get(k)
        if isinstance(v, str) and v.strip():
            return v.strip()
    return ""


def _focus_desc_type(desc: str, provider: str) -> tuple[str, bool]:
    """(instance type, GPU hint) from a FOCUS ChargeDescription."""
    if not desc:
        return "", False
    if provider in ("aws", ""):
        m = _AWS_DESC_RE.search(desc)
        if m and not _AWS_MBPS_RE.search(desc):
            return m.group(1).lower(), False
    if provider in ("azure", ""):
        m = _AZ_DESC_RE.search(desc)
        if m:
            series = m.group("series")
            t = azure_size_from_meter(m.group("meter"))
            return t, bool(_AZ_GPU_SERIES_RE.match(series)) or bool(_GPU_WORD_RE.search(series))
    if provider in ("gcp", ""):
        m = _GCP_GPU_SKU_RE.search(desc)
        if m:
            return "-".join(m.group("gpu").lower().split()), True
        if _GCP_GPU_FAMILY_RE.search(desc):
            return "", True
    return "", bool(_GPU_WORD_RE.search(desc))


def azure_region(location: str | None) -> str:
    """'EastUS' / 'eastus' / 'East US' / 'US East 2' -> 'eastus' / 'eastus2'."""
    if not location:
        return ""
    words = str(location).strip().lower().split()
    if len(words) >= 2 and words[0] in _AZ_REGION_WORDS:
        words = words[1:2] + words[:1] + words[2:]
    return "".join(words)


def _provider(name: Any) -> str:
    if name is None or (isinstance(name, float) and math.isnan(name)):
        return ""
    s = str(name).strip()
    return _PROVIDERS.get(s.lower(), s.lower().replace(" ", "-"))


def _hour_block(unit: Any) -> float:
    """Hours per unit of an hour-like unit ('Hours' 1, '10 Hours' 10, '10K Hours' 10000); NaN otherwise."""
    if unit is None or (isinstance(unit, float) and math.isnan(unit)):
        return math.nan
    m = _HOUR_UNIT_RE.match(str(unit))
    if not m:
        return math.nan
    n = float(m.group("n")) if m.group("n") else 1.0
    k = (m.group("k") or "").lower()
    v = n * (1000.0 if k == "k" else 1e6 if k == "m" else 1.0)
    return v if 0 < v <= 1e9 else math.nan  # '0 Hours' or '1e400 Hours' is not a unit of hours


# ---------------------------------------------------------------------------------------------------------------
# Reading


@dataclass
class _Source:
    path: Path
    kind: str            # 'csv' | 'parquet'
    columns: list[str]   # as in the file
    files: list[Path]

    def col(self, *names: str) -> str | None:
        """The file's column matching one of ``names`` case-insensitively (first name first)."""
        low = {c.strip().lower(): c for c in self.columns}
        for n in names:
            c = low.get(n.lower())
            if c is not None:
                return c
        return None


def _open_text(path: Path, errors: str = "strict") -> io.TextIOBase:
    if path.suffix.lower() == ".gz":
        return io.TextIOWrapper(gzip.open(path, "rb"), encoding="utf-8-sig", errors=errors, newline="")
    return open(path, encoding="utf-8-sig", errors=errors, newline="")


def _check_columns(path: Path, names: list[str]) -> list[str]:
    """The column names stripped of spaces; InputError (field ``usage``) for too many columns
    (:data:`MAX_COLUMNS`), an empty name among named ones, or a name that appears twice (compared
    case-insensitively, as columns are looked up)."""
    if len(names) > MAX_COLUMNS:
        raise InputError("usage", f"{path.name} has {len(names):,} columns, more than {MAX_COLUMNS:,}",
                         accepted=f"a billing export of at most {MAX_COLUMNS:,} columns")
    out = [str(h).strip() for h in names]
    seen: dict[str, int] = {}
    for i, h in enumerate(out):
        k = h.lower()
        if k in seen:
            raise InputError("usage", f"{path.name}: column {h!r} appears twice (columns {seen[k] + 1} and {i + 1})",
                             accepted="one column per name")
        seen[k] = i
    return out


def _read_header(p: Path) -> list[str]:
    """The CSV header (first record), read within :data:`MAX_HEADER_CHARS` characters; InputError naming the file
    for a file that is not UTF-8 (with or without BOM), a truncated or corrupt gzip, or an over-long header."""
    op = gzip.open if p.suffix.lower() == ".gz" else open
    try:
        with op(p, "rb") as fh:
            raw = fh.read(MAX_HEADER_CHARS + 1)
    except (OSError, EOFError) as e:
        raise InputError("usage", f"{p.name} cannot be read: {_one_line(e)}") from None
    if raw.startswith(b"\xef\xbb\xbf"):
        raw = raw[3:]
    # the first record: up to the first line end outside quotes
    end, quoted = -1, False
    for i, ch in enumerate(raw):
        if ch == 0x22:
            quoted = not quoted
        elif ch in (0x0A, 0x0D) and not quoted:
            end = i
            break
    if end < 0:
        if len(raw) > MAX_HEADER_CHARS:
            raise InputError("usage", f"{p.name}: header line longer than {MAX_HEADER_CHARS:,} characters",
                             accepted=f"a billing export of at most {MAX_COLUMNS:,} columns")
        end = len(raw)
    try:
        head = raw[:end].decode("utf-8")
    except UnicodeDecodeError as e:
        raise InputError("usage", f"{p.name} line 1: not UTF-8 text ({e.reason} at byte {e.start})",
                         accepted="UTF-8 CSV, with or without BOM") from None
    try:
        return next(csv.reader(io.StringIO(head)), None) or []
    except csv.Error as e:
        raise InputError("usage", f"{p.name} line 1: the header is not CSV: {_one_line(e)}") from None


def _parquet_names(f: Path) -> list[str]:
    import pyarrow.parquet as pq

    try:
        return list(pq.read_schema(f).names)
    except Exception as e:  # pyarrow raises several types for a broken file
        raise InputError("usage", f"{f} is not a readable Parquet file: {_one_line(e)}") from None


def _one_line(e: BaseException) -> str:
    t = " ".join(str(e).split())
    return t[:200] + ("..." if len(t) > 200 else "")


def _source(path: "str | Path") -> _Source:
    p = Path(path)
    if not p.exists():
        raise InputError("usage", f"{p} does not exist")
    if p.is_dir():
        files = sorted(x for x in p.rglob("*") if x.is_file() and x.suffix.lower() == ".parquet")
        if not files:
            raise InputError("usage", f"folder {p} holds no .parquet file", accepted="a CSV or Parquet file, or a "
                             "folder of Parquet parts")
        def schema(f):
            return _check_columns(f, _parquet_names(f))

        first = schema(files[0])
        kinds: dict[str, list[str]] = {}
        for f in files:  # every part must be of one format: a part of another is not read as this one in silence
            names = schema(f)  # a broken part is named, not reported as a part of another format
            try:
                kind = _detect(_Source(f, "parquet", names, [f]))
            except InputError:
                kind = "unknown"
            kinds.setdefault(kind, []).append(f.relative_to(p).as_posix())
        if len(kinds) > 1:
            raise InputError("usage", f"folder {p} mixes export formats: " + "; ".join(
                f"{k}: {', '.join(v[:3])}" + (f" and {len(v) - 3} more" if len(v) > 3 else "") for k, v in kinds.items()),
                accepted="a folder of Parquet parts of one export")
        return _Source(p, "parquet", first, files)
    name = p.name.lower()
    if name.endswith(".parquet") or name.endswith(".pq"):
        return _Source(p, "parquet", _check_columns(p, _parquet_names(p)), [p])
    header = _read_header(p)
    if not header:
        raise InputError("usage", f"{p} is empty (no header line)")
    return _Source(p, "csv", _check_columns(p, header), [p])


def detect_format(path: "str | Path") -> str:
    """The format of a billing export from its column names (matched case-insensitively): one of :data:`FORMATS`.

    FOCUS versions: a 1.2 column (InvoiceId, PricingCurrency, PricingCurrencyEffectiveCost, ...) -> 'focus-1.2';
    else a 1.1 column (SkuPriceDetails, SkuMeter, ServiceSubcategory, CommitmentDiscountQuantity/Unit,
    CapacityReservationId/Status) -> 'focus-1.1'; else 'focus-1.0'. (The lowest version the columns fit: a 1.2 file
    that leaves out every column new in 1.2 reads as 1.1, with the same meaning.)

    Raises InputError (field ``format``) when the columns fit no known format.
    """
    return _detect(_source(path))


_FOCUS_12 = ("invoiceid", "pricingcurrency", "pricingcurrencycontractedunitprice", "pricingcurrencyeffectivecost",
             "pricingcurrencylistunitprice")
_FOCUS_11 = ("skupricedetails", "skumeter", "servicesubcategory", "commitmentdiscountquantity",
             "commitmentdiscountunit", "capacityreservationid", "capacityreservationstatus")


def _detect(src: _Source) -> str:
    low = {c.strip().lower() for c in src.columns}
    if {"provider", "region", "instance_type", "hour", "usage_hours"} <= low:
        return "hourly"
    if {"line_item_line_item_type", "line_item_usage_start_date"} <= low:
        return "aws-cur-2.0"
    if {"billedcost", "chargeperiodstart"} <= low:
        if low & set(_FOCUS_12):
            return "focus-1.2"
        if low & set(_FOCUS_11):
            return "focus-1.1"
        return "focus-1.0"
    if "metercategory" in low and "quantity" in low and ({"date", "usagedatetime"} & low):
        return "azure-cost-details"
    shown = ", ".join(_one_line(c) if c.isprintable() else repr(c) for c in src.columns[:12]) + (
        ", ..." if len(src.columns) > 12 else "")
    raise InputError("format", f"cannot tell the format of {src.path.name} from its columns ({shown})",
                     accepted="FOCUS 1.0-1.2 (BilledCost, ChargePeriodStart, ...), AWS CUR 2.0 "
                     "(line_item_line_item_type, line_item_usage_start_date, ...), Azure cost details (Date, "
                     "MeterCategory, Quantity, ...), hourly (provider, region, instance_type, hour, usage_hours, ...)")


def _batches(src: _Source, wanted: list[str], numeric: frozenset[str] = frozenset()
             ) -> Iterator[tuple["pd.DataFrame", int, str]]:
    """(frame of the wanted columns, first record index of the batch in its file, file name) per batch.

    CSV: every column read as text, dictionary-encoded (so each distinct value is parsed once); NULL_STRINGS are
    null; the ``numeric`` columns (lower-case names) are cast to float in Arrow when every cell is a number (else
    left as text for the row-level check). Parquet: the file's types, text dictionary-encoded; a map column
    (CUR 2.0 ``product``) becomes its ``instance_type`` and ``region_code`` values (``product.instance_type``...).
    """
    import pyarrow as pa

    if src.kind == "csv":
        import pyarrow.csv as pcsv

        cols = [c for c in src.columns if c in wanted]
        try:
            stream = pa.input_stream(str(src.path), compression="detect")
            reader = pcsv.open_csv(  # the header's names stripped (_check_columns), so 'BilledCost ' is found
                stream, read_options=pcsv.ReadOptions(block_size=_CSV_BLOCK_BYTES, column_names=src.columns,
                                                      skip_rows=1),
                parse_options=pcsv.ParseOptions(newlines_in_values=True),
                convert_options=pcsv.ConvertOptions(column_types={c: (pa.string() if c.strip().lower() in numeric else
                                                                      pa.dictionary(pa.int32(), pa.string()))
                                                                  for c in cols}, include_columns=cols,
                                                    null_values=list(NULL_STRINGS), strings_can_be_null=True,
                                                    quoted_strings_can_be_null=True))
        except (pa.ArrowException, OSError, EOFError) as e:
            raise _csv_error(src, 0, e) from None
        start = 0
        while True:
            try:
                b = reader.read_next_batch()
            except StopIteration:
                break
            except (pa.ArrowException, OSError, EOFError) as e:
                raise _csv_error(src, start, e) from None
            yield _arrow_to_pandas(b, numeric), start, src.path.name
            start += b.num_rows
        return
    import pyarrow.parquet as pq

    for f in src.files:
        start = 0
        try:
            pf = pq.ParquetFile(f)
            names = pf.schema_arrow.names
            cols = [c for c in names if c in wanted]
            batches = pf.iter_batches(batch_size=BATCH_ROWS, columns=cols)
            for b in batches:
                frame = _arrow_to_pandas(b, numeric)
                yield frame, start, f.name
                start += b.num_rows
        except InputError:
            raise
        except Exception as e:  # pyarrow raises OSError, ArrowInvalid, ... for a corrupt page or footer
            raise InputError("usage", f"{f} is not a readable Parquet file (after row {start}): "
                             f"{_one_line(e)}") from None


def _csv_error(src: _Source, start: int, e: BaseException) -> InputError:
    """One line for a CSV that pyarrow cannot read: the file, and the line of the first byte that is not UTF-8
    when that is the cause (a column gpuopt reads; the columns it does not read are not decoded)."""
    msg = _one_line(e)
    if "utf8" in msg.lower() or "utf-8" in msg.lower():
        line = _first_non_utf8_line(src.path)
        col = ""
        m = re.search(r"CSV column #(\d+)", msg)
        if m:
            i = int(m.group(1))
            col = f", column {src.columns[i]!r}" if i < len(src.columns) else ""
        where = f" line {line}" if line else ""
        return InputError("usage", f"{src.path.name}{where}{col}: not UTF-8 text", accepted="UTF-8 CSV, with or "
                          "without BOM (a byte that is not UTF-8 is accepted only in a column gpuopt does not read)")
    return InputError("usage", f"{src.path.name}: cannot be read as CSV (after data row {start}): {msg}")


def _first_non_utf8_line(path: Path) -> int | None:
    """The 1-based physical line holding the first byte that is not UTF-8 (None when none is found)."""
    op = gzip.open if path.suffix.lower() == ".gz" else open
    try:
        with op(path, "rb") as fh:
            for i, raw in enumerate(fh, 1):
                try:
                    raw.decode("utf-8")
                except UnicodeDecodeError:
                    return i
    except (OSError, EOFError):
        return None
    return None


def _arrow_to_pandas(b: Any, numeric: frozenset[str] = frozenset()) -> "pd.DataFrame":
    import pandas as pd
    import pyarrow as pa
    import pyarrow.compute as pc

    data = {}
    for name, col in zip(b.schema.names, b.columns):
        if pa.types.is_map(col.type):
            for key in ("instance_type", "region_code"):
                data[f"{name}.{key}"] = pc.map_lookup(col, key, "first").to_pandas()
            continue
        if pa.types.is_struct(col.type) or pa.types.is_list(col.type):
            continue
        if name.strip().lower() in numeric and (pa.types.is_string(col.type) or pa.types.is_large_string(col.type)):
            try:
                col = pc.cast(col, pa.float64())
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
                pass  # a cell is not a number: pandas finds which (_num)
        elif pa.types.is_string(col.type) or pa.types.is_large_string(col.type):
            col = pc.dictionary_encode(col)
        data[name] = col.to_pandas()
    return pd.DataFrame(data)


# ---------------------------------------------------------------------------------------------------------------
# Column helpers (vectorised over the unique values of each column)


def _text(df: "pd.DataFrame", col: str | None) -> "pd.Series":
    """The column as a categorical of stripped strings, '' for null and NULL_STRINGS."""
    import numpy as np
    import pandas as pd

    if col is None or col not in df.columns:
        return pd.Series(pd.Categorical.from_codes(np.zeros(len(df), dtype=np.int32), categories=[""]),
                         index=df.index)
    s = df[col]
    if isinstance(s.dtype, pd.CategoricalDtype):
        codes = s.cat.codes.to_numpy()
        cats = list(s.cat.categories)
    else:
        codes, cats = pd.factorize(s, use_na_sentinel=True)
        cats = list(cats)
    clean = [("" if str(u).strip() in NULL_STRINGS else str(u).strip()) for u in cats] + [""]
    ncodes, ncats = pd.factorize(pd.Index(clean, dtype=object))
    codes = np.where(codes < 0, len(cats), codes)
    return pd.Series(pd.Categorical.from_codes(ncodes[codes], categories=pd.Index(ncats, dtype=object)),
                     index=df.index)


def _obj(s: "pd.Series") -> "pd.Series":
    return s.astype(object)


def _map_unique(s: "pd.Series", fn: Callable[[Any], Any], dtype: Any = object, cat: bool = False) -> "pd.Series":
    """``fn`` applied once per distinct value of ``s`` (categorical or not); ``cat`` returns a categorical."""
    import numpy as np
    import pandas as pd

    if isinstance(s.dtype, pd.CategoricalDtype):
        codes = s.cat.codes.to_numpy()
        uniq = list(s.cat.categories)
    else:
        codes, uniq = pd.factorize(s, use_na_sentinel=True)
        uniq = list(uniq)
    out = [fn(u) for u in uniq]
    out.append(fn(""))
    codes = np.where(codes < 0, len(uniq), codes)
    if cat:
        ncodes, ncats = pd.factorize(pd.Index(out, dtype=object))
        return pd.Series(pd.Categorical.from_codes(ncodes[codes], categories=pd.Index(ncats, dtype=object)),
                         index=s.index)
    if dtype is object:
        arr = np.empty(len(out), dtype=object)
        for i, v in enumerate(out):
            arr[i] = v
    else:
        arr = np.array(out, dtype=dtype)
    return pd.Series(arr[codes], index=s.index)


def _map_pairs(a: "pd.Series", b: "pd.Series", fn: Callable[[str, str], Any]) -> "pd.Series":
    """``fn(x, y)`` once per distinct pair of values of ``a`` and ``b`` (object result)."""
    import numpy as np
    import pandas as pd

    ca, ua = pd.factorize(a, use_na_sentinel=False)
    cb, ub = pd.factorize(b, use_na_sentinel=False)
    key = ca.astype(np.int64) * (len(ub) + 1) + cb
    codes, uk = pd.factorize(key)
    out = np.empty(len(uk), dtype=object)
    for i, k in enumerate(uk):
        out[i] = fn(str(ua[k // (len(ub) + 1)]), str(ub[k % (len(ub) + 1)]))
    return pd.Series(out[codes], index=a.index)


def _num(df: "pd.DataFrame", col: str | None) -> tuple["pd.Series", "pd.Series"]:
    """(float values, mask of non-empty cells that are not numbers: not numeric, not finite, or beyond
    :data:`MAX_ABS_AMOUNT`; those values are NaN)."""
    import numpy as np
    import pandas as pd

    if col is None or col not in df.columns:
        return pd.Series(np.nan, index=df.index), pd.Series(False, index=df.index)
    s = df[col]
    if pd.api.types.is_numeric_dtype(s) and not pd.api.types.is_bool_dtype(s):
        v = s.astype("float64")
        bad = pd.Series(False, index=df.index)
    else:
        t = _obj(_text(df, col))
        v = pd.to_numeric(t.replace("", np.nan), errors="coerce").astype("float64")
        bad = (t != "") & v.isna()
    big = v.notna() & ~(v.abs() <= MAX_ABS_AMOUNT)  # inf, -inf, 1e400 and beyond the bound
    if big.any():
        v = v.where(~big)
        bad = bad | big
    return v, bad


def date_window() -> tuple["pd.Timestamp", "pd.Timestamp"]:
    """The dates a billing row may carry: from :data:`FIRST_DATE` to :data:`MAX_YEARS_AHEAD` years after today
    (UTC). A date outside it (0001-01-01, 1970-01-01 from an empty epoch field, 9999-12-31 for "no end") would
    stretch the review window over decades or overflow the hour arithmetic."""
    import pandas as pd

    today = pd.Timestamp.now(tz="UTC").floor("D")
    return pd.Timestamp(FIRST_DATE, tz="UTC"), today + pd.DateOffset(years=MAX_YEARS_AHEAD)


def _window_why(label: str) -> str:
    lo, hi = date_window()
    return f"{label} is outside the accepted dates {lo:%Y-%m-%d} .. {hi:%Y-%m-%d}"


def _ts(df: "pd.DataFrame", col: str | None, *, date_only: bool = False
        ) -> tuple["pd.Series", "pd.Series", "pd.Series"]:
    """(UTC timestamps, mask of non-empty cells that do not parse, mask of dates outside :func:`date_window`).
    Naive times are UTC; ISO 8601 with or without T/Z/offset; MM/DD/YYYY (Azure). Dates outside the window are
    NaT in the timestamps."""
    import numpy as np
    import pandas as pd

    if col is None or col not in df.columns:
        no = pd.Series(False, index=df.index)
        return pd.Series(pd.NaT, index=df.index, dtype="datetime64[us, UTC]"), no, no
    s = df[col]
    if pd.api.types.is_datetime64_any_dtype(s):
        v = s.dt.tz_localize("UTC") if s.dt.tz is None else s.dt.tz_convert("UTC")
        return _in_window(v.astype("datetime64[us, UTC]"), pd.Series(False, index=df.index))
    t = _text(df, col)
    codes = t.cat.codes.to_numpy()
    u = pd.Index(list(t.cat.categories), dtype=object)
    parsed = pd.Series(pd.to_datetime(u, format="ISO8601", utc=True, errors="coerce")).astype("datetime64[us, UTC]")
    filled = np.asarray(u != "")
    for fmt in ("%m/%d/%Y", "%m/%d/%Y %H:%M:%S", "%m/%d/%Y %I:%M:%S %p"):
        miss = parsed.isna().to_numpy() & filled
        if not miss.any():
            break
        alt = pd.to_datetime(u[miss], format=fmt, utc=True, errors="coerce")
        parsed[miss] = pd.Series(alt).astype("datetime64[us, UTC]").to_numpy()
    vals = pd.DatetimeIndex(parsed).tz_convert(None).as_unit("us").to_numpy()
    out = pd.Series(pd.DatetimeIndex(vals[codes]).tz_localize("UTC"), index=df.index)
    bad = out.isna() & (t != "")
    if date_only:
        out = out.dt.floor("D")
    return _in_window(out, bad)


def _in_window(out: "pd.Series", bad: "pd.Series") -> tuple["pd.Series", "pd.Series", "pd.Series"]:
    import pandas as pd

    lo, hi = date_window()
    far = out.notna() & ((out < lo) | (out > hi))
    if far.any():
        out = out.where(~far, pd.NaT)
    return out, bad, far


class _Problems:
    """The first problem of each row: ``add(mask, why)`` keeps earlier reasons (why: str or a Series of str)."""

    def __init__(self, index: Any, initial: "pd.Series | None" = None):
        import numpy as np
        import pandas as pd

        self.why = pd.Series("", index=index, dtype=object) if initial is None else initial.astype(object).copy()
        self.has = (self.why != "").to_numpy().copy() if initial is not None else np.zeros(len(index), dtype=bool)

    def add(self, mask: Any, why: Any) -> None:
        import numpy as np

        m = np.asarray(mask, dtype=bool) & ~self.has
        if m.any():
            self.why[m] = why[m] if hasattr(why, "iloc") else why
            self.has |= m


class _Casing:
    """Compares enumerated values case-insensitively and remembers the ones whose casing differs from the spec."""

    def __init__(self) -> None:
        self.seen: Counter[tuple[str, str, str]] = Counter()

    def norm(self, s: "pd.Series", column: str, canonical: dict[str, str]) -> "pd.Series":
        """Lower-cased values (categorical, for comparison); counts values whose casing is not
        ``canonical[lower]``."""
        import pandas as pd

        cats = list(s.cat.categories)
        counts = pd.Series(s.cat.codes).value_counts()
        for code, n in counts.items():
            raw = cats[code] if code >= 0 else ""
            want = canonical.get(str(raw).lower())
            if raw and want is not None and raw != want:
                self.seen[(column, str(raw), want)] += int(n)
        return _map_unique(s, lambda x: str(x).lower(), cat=True)

    def notes(self) -> list[str]:
        return [f"{col}: {n} row(s) say '{raw}' where the spec says '{want}'; values are compared case-insensitively"
                for (col, raw, want), n in sorted(self.seen.items())]


# ---------------------------------------------------------------------------------------------------------------
# Canonical rows

_CANON_COLS = ("rec", "provider", "region", "itype", "strong", "hint", "start", "end", "hours", "billed", "effective",
               "list", "pcat", "cid", "kind", "desc")


class _Ctx:
    """State shared across batches: notes, counters, the GPU test cache, the casing log."""

    def __init__(self, fmt: str, is_gpu: Callable[[str, str], bool]):
        self.fmt = fmt
        self.is_gpu_fn = is_gpu
        self.gpu_cache: dict[tuple[str, str], bool] = {}
        self.casing = _Casing()
        self.counts: Counter[str] = Counter()
        self.amounts: Counter[str] = Counter()
        self.currencies: Counter[str] = Counter()
        self.extra_notes: list[str] = []
        self.example: tuple[str, int, float, float] | None = None

    def is_gpu(self, provider: str, itype: str) -> bool:
        k = (provider, itype)
        v = self.gpu_cache.get(k)
        if v is None:
            v = bool(itype) and bool(self.is_gpu_fn(provider, itype))
            self.gpu_cache[k] = v
        return v


def _frame(n_index: Any, **cols: Any) -> "pd.DataFrame":
    import pandas as pd

    return pd.DataFrame(cols, index=n_index)


#: Identifier columns of ``UsageData.ids`` besides the key (FOCUS names, lower snake case).
ID_COLUMNS: tuple[str, ...] = ("billing_account_id", "billing_account_name", "sub_account_id", "sub_account_name",
                               "resource_id", "resource_name", "sku_id", "sku_price_id")
_ID_FRAME = tuple("id_" + c for c in ID_COLUMNS)

#: Where each format keeps them (first column present wins; none: '').
_ID_SOURCES: dict[str, dict[str, tuple[str, ...]]] = {
    "focus": {"billing_account_id": ("BillingAccountId",), "billing_account_name": ("BillingAccountName",),
              "sub_account_id": ("SubAccountId",), "sub_account_name": ("SubAccountName",),
              "resource_id": ("ResourceId",), "resource_name": ("ResourceName",), "sku_id": ("SkuId",),
              "sku_price_id": ("SkuPriceId",)},
    # CUR 2.0: the payer account is billed, the usage account is the sub account (AWS's own FOCUS export maps them so)
    "aws-cur-2.0": {"billing_account_id": ("bill_payer_account_id",),
                    "billing_account_name": ("bill_payer_account_name",),
                    "sub_account_id": ("line_item_usage_account_id",),
                    "sub_account_name": ("line_item_usage_account_name",),
                    "resource_id": ("line_item_resource_id",), "resource_name": (),
                    "sku_id": ("product_sku",), "sku_price_id": ("pricing_rate_id",)},
    # Azure cost details: the subscription is the sub account; ProductId the SKU (Microsoft's FOCUS export: SkuId)
    "azure-cost-details": {"billing_account_id": ("BillingAccountId",),
                           "billing_account_name": ("BillingAccountName",),
                           "sub_account_id": ("SubscriptionId", "SubscriptionGuid"),
                           "sub_account_name": ("SubscriptionName",), "resource_id": ("ResourceId", "InstanceName"),
                           "resource_name": ("ResourceName",), "sku_id": ("ProductId",), "sku_price_id": ()},
}


def _add_ids(frame: "pd.DataFrame", df: "pd.DataFrame", src: "_Source", fmt: str) -> None:
    """The export's identifiers of each row (``ID_COLUMNS``) as the frame's ``id_*`` columns ('' when absent)."""
    names = _ID_SOURCES["focus" if fmt.startswith("focus") else fmt]
    for col in ID_COLUMNS:
        found = next((c for c in (src.col(n) for n in names.get(col, ())) if c is not None), None)
        frame["id_" + col] = _obj(_text(df, found))


_CHARGE_CATEGORIES = {"usage": "Usage", "purchase": "Purchase", "tax": "Tax", "credit": "Credit",
                      "adjustment": "Adjustment"}
_PRICING_CATEGORIES_IN = {"standard": "Standard", "on-demand": "Standard", "committed": "Committed",
                          "commitment-based": "Committed", "dynamic": "Dynamic", "other": "Other"}
_CHARGE_FREQ = {"usage-based": "Usage-Based", "one-time": "One-Time", "recurring": "Recurring"}
_CD_STATUS = {"used": "Used", "unused": "Unused"}
_CHARGE_CLASS = {"correction": "Correction"}


def _focus_batch(df: "pd.DataFrame", src: _Source, ctx: _Ctx) -> tuple["pd.DataFrame", list[tuple[int, str]]]:
    import pandas as pd

    C = src.col
    prov = _map_unique(_text(df, C("ProviderName")), _provider)
    region = _obj(_text(df, C("RegionId")))
    desc_c = _text(df, C("ChargeDescription"))
    desc = _obj(desc_c)
    # instance type, strongest source first
    itype = pd.Series([""] * len(df), index=df.index, dtype=object)
    for name, fn in (("x_InstanceType", str), ("x_instance_type", str), ("x_VmSize", str), ("x_MachineType", str),
                     ("x_ArmSkuName", str), ("x_UsageType", aws_type_from_usage_type),
                     ("x_SkuMeterName", azure_size_from_meter), ("SkuPriceDetails", _json_type),
                     ("x_SkuDetails", _json_type)):
        c = C(name)
        if c is None:
            continue
        v = _map_unique(_text(df, c), lambda x, fn=fn: fn(x) if x else "")
        itype = itype.where(itype != "", v)
    dt = _map_pairs(desc_c, prov, _focus_desc_type)
    d_type = dt.map(lambda x: x[0])
    hint = dt.map(lambda x: x[1]).astype(bool)
    itype = itype.where(itype != "", d_type)
    strong = itype != ""
    known = prov.isin(["aws", "azure", "gcp", "oracle", "lambda"])
    for c in (C("SkuId"), C("ResourceId")):
        if c is not None:
            weak = _obj(_text(df, c))
            itype = itype.where((itype != "") | known, weak)
    # enums
    cc = ctx.casing.norm(_text(df, C("ChargeCategory")), "ChargeCategory", _CHARGE_CATEGORIES)
    ctx.casing.norm(_text(df, C("ChargeFrequency")), "ChargeFrequency", _CHARGE_FREQ)
    pc_ = ctx.casing.norm(_text(df, C("PricingCategory")), "PricingCategory", _PRICING_CATEGORIES_IN)
    st = ctx.casing.norm(_text(df, C("CommitmentDiscountStatus")), "CommitmentDiscountStatus", _CD_STATUS)
    cls = ctx.casing.norm(_text(df, C("ChargeClass")), "ChargeClass", _CHARGE_CLASS)
    cid = _obj(_text(df, C("CommitmentDiscountId")))
    pcat = _obj(pc_).map(lambda x: {"standard": "Standard", "on-demand": "Standard", "committed": "Committed",
                              "commitment-based": "Committed", "dynamic": "Dynamic"}.get(x, "")).astype(object)
    pcat = pcat.where((pcat != "") | (cid == "") | (st != "used"), "Committed")
    kind = _obj(cc).map({"usage": "usage", "purchase": "purchase", "credit": "credit", "adjustment": "adjustment",
                   "tax": "skip"}).astype(object)
    kind = kind.where(~((kind == "usage") & (st == "unused")), "unused")
    kind = kind.where(~((cls == "correction") & (kind == "usage")), "adjustment")
    # numbers
    billed, b_bad = _num(df, C("BilledCost"))
    eff, e_bad = _num(df, C("EffectiveCost"))
    lst, l_bad = _num(df, C("ListCost"))
    cq, cq_bad = _num(df, C("ConsumedQuantity"))
    pq_, pq_bad = _num(df, C("PricingQuantity"))
    cu = _text(df, C("ConsumedUnit"))
    pu = _text(df, C("PricingUnit"))
    cblock = _map_unique(cu, _hour_block, dtype=float).astype(float)
    pblock = _map_unique(pu, _hour_block, dtype=float).astype(float)
    hours = (cq * cblock).where(cq.notna() & cblock.notna(), pq_ * pblock)
    # rows priced per 10,000 units: PricingQuantity = ConsumedQuantity / 10,000 with a plain PricingUnit
    ratio = cq / pq_.where(pq_ != 0)
    per10k = ratio.round(6).isin([10000.0]) & (cq != 0)
    if per10k.any():
        ctx.counts["per10k"] += int(per10k.sum())
    blocks = pblock.where(cq.isna() & pq_.notna() & (pblock > 1))
    if blocks.notna().any():
        ctx.counts["hour_blocks"] += int(blocks.notna().sum())
    cur = _text(df, C("BillingCurrency"))
    for k, n in cur.value_counts().items():
        if n and k != "":
            ctx.currencies[str(k)] += int(n)
    if C("BillingCurrency") is None:
        ctx.counts["no_currency"] += len(df)
    start, s_bad, s_far = _ts(df, C("ChargePeriodStart"))
    end, e2_bad, e2_far = _ts(df, C("ChargePeriodEnd"))
    if C("EffectiveCost") is None:
        ctx.counts["no_effective_col"] += len(df)
    # unknown charge category
    unknown_cc = (cc != "") & kind.isna()
    kind = kind.fillna("bad_cc").astype(object)
    kind = kind.where(cc != "", "bad_cc")
    bad: list[tuple[int, str]] = []
    frame = _frame(df.index, provider=prov, region=region, itype=itype, strong=strong, hint=hint, start=start,
                   end=end, hours=hours, billed=billed, effective=eff, list=lst, pcat=pcat, cid=cid, kind=kind,
                   desc=desc)
    frame["res"] = _text(df, C("ResourceId"))
    frame["pq"] = pq_
    sub = _obj(_text(df, C("SubAccountId")))
    frame["account"] = sub.where(sub != "", _obj(_text(df, C("BillingAccountId"))))
    frame["covers"] = (cc == "usage").to_numpy()
    _add_ids(frame, df, src, "focus")
    pr = _Problems(df.index)
    for mask, why in ((s_bad, "ChargePeriodStart does not parse"), (e2_bad, "ChargePeriodEnd does not parse"),
                      (s_far, _window_why("ChargePeriodStart")), (e2_far, _window_why("ChargePeriodEnd")),
                      (b_bad, "BilledCost is not a number"), (e_bad, "EffectiveCost is not a number"),
                      (cq_bad, "ConsumedQuantity is not a number"), (pq_bad, "PricingQuantity is not a number"),
                      (l_bad, "ListCost is not a number")):
        pr.add(mask, why)
    if unknown_cc.any():
        pr.add(unknown_cc, "ChargeCategory " + _obj(_text(df, C("ChargeCategory"))) + " is not a FOCUS value")
    pr.add(cc == "", "ChargeCategory is empty")
    frame["problem"] = pr.why
    return frame, bad


_CUR_COLS = ("line_item_line_item_type", "line_item_usage_start_date", "line_item_usage_end_date",
             "line_item_usage_amount", "line_item_unblended_cost", "line_item_usage_type", "line_item_currency_code",
             "line_item_line_item_description", "line_item_product_code", "line_item_availability_zone",
             "product_instance_type", "product_region_code", "product_instance_family", "product", "pricing_term",
             "pricing_unit", "pricing_public_on_demand_cost", "pricing_currency", "reservation_reservation_a_r_n",
             "reservation_effective_cost", "reservation_unused_amortized_upfront_fee_for_billing_period",
             "reservation_unused_recurring_fee", "savings_plan_savings_plan_a_r_n",
             "savings_plan_savings_plan_effective_cost", "savings_plan_total_commitment_to_date",
             "savings_plan_used_commitment", "bill_payer_account_id", "bill_payer_account_name",
             "line_item_usage_account_id", "line_item_usage_account_name", "line_item_resource_id", "product_sku",
             "pricing_rate_id")
_CUR_TYPES = {"usage": "Usage", "discountedusage": "DiscountedUsage", "savingsplancoveredusage":
              "SavingsPlanCoveredUsage", "savingsplannegation": "SavingsPlanNegation", "rifee": "RIFee",
              "fee": "Fee", "savingsplanrecurringfee": "SavingsPlanRecurringFee", "savingsplanupfrontfee":
              "SavingsPlanUpfrontFee", "refund": "Refund", "credit": "Credit", "tax": "Tax", "edpdiscount":
              "EdpDiscount", "bundleddiscount": "BundledDiscount", "privateratediscount": "PrivateRateDiscount",
              "distributordiscount": "DistributorDiscount", "savingsplanrecurringfeenegation": "", }


def _cur_batch(df: "pd.DataFrame", src: _Source, ctx: _Ctx) -> tuple["pd.DataFrame", list[tuple[int, str]]]:
    import numpy as np
    import pandas as pd

    C = src.col
    lit = ctx.casing.norm(_text(df, C("line_item_line_item_type")), "line_item_line_item_type",
                          {k: v for k, v in _CUR_TYPES.items() if v})
    ut = _text(df, C("line_item_usage_type"))
    itype = _obj(_text(df, C("product_instance_type")))
    if "product.instance_type" in df.columns:
        itype = itype.where(itype != "", _obj(_text(df, "product.instance_type")))
    elif C("product") is not None and C("product_instance_type") is None:
        itype = _map_unique(_text(df, C("product")), lambda x: _json_type(x) if x else "")
    itype = itype.where(itype != "", _map_unique(ut, aws_type_from_usage_type))
    region = _obj(_text(df, C("product_region_code")))
    if "product.region_code" in df.columns:
        region = region.where(region != "", _obj(_text(df, "product.region_code")))
    az = _map_unique(_text(df, C("line_item_availability_zone")), lambda x: re.sub(r"[a-z]$", "", x))
    region = region.where(region != "", az)
    fam = _text(df, C("product_instance_family"))
    term = ctx.casing.norm(_text(df, C("pricing_term")), "pricing_term", {"ondemand": "OnDemand",
                                                                         "reserved": "Reserved", "spot": "Spot"})
    unit = _text(df, C("pricing_unit"))
    box = _map_unique(ut, lambda x: bool(_AWS_USAGE_RE.search(x)) if x else False, dtype=bool).astype(bool)
    is_hours = _map_unique(unit, lambda x: x.lower() in ("hrs", "hours", "hour", "hr"), dtype=bool).astype(bool)
    inst_usage = box | ((C("line_item_usage_type") is None) & is_hours & (itype != ""))
    amount, a_bad = _num(df, C("line_item_usage_amount"))
    unbl, u_bad = _num(df, C("line_item_unblended_cost"))
    ri_eff, r_bad = _num(df, C("reservation_effective_cost"))
    sp_eff, p_bad = _num(df, C("savings_plan_savings_plan_effective_cost"))
    pub, _ = _num(df, C("pricing_public_on_demand_cost"))
    ri_unused_up, _ = _num(df, C("reservation_unused_amortized_upfront_fee_for_billing_period"))
    ri_unused_rec, _ = _num(df, C("reservation_unused_recurring_fee"))
    sp_total, _ = _num(df, C("savings_plan_total_commitment_to_date"))
    sp_used, _ = _num(df, C("savings_plan_used_commitment"))
    ri_arn = _obj(_text(df, C("reservation_reservation_a_r_n")))
    sp_arn = _obj(_text(df, C("savings_plan_savings_plan_a_r_n")))
    cur = _text(df, C("line_item_currency_code"))
    if C("line_item_currency_code") is None:
        cur = _text(df, C("pricing_currency"))
    for k, n in cur.value_counts().items():
        if n and k != "":
            ctx.currencies[str(k)] += int(n)
    if C("line_item_currency_code") is None and C("pricing_currency") is None:
        ctx.counts["no_currency"] += len(df)
    start, s_bad, s_far = _ts(df, C("line_item_usage_start_date"))
    end, e_bad, e_far = _ts(df, C("line_item_usage_end_date"))
    desc = _obj(_text(df, C("line_item_line_item_description")))

    kind = pd.Series("skip", index=df.index, dtype=object)
    pcat = pd.Series("", index=df.index, dtype=object)
    cid = pd.Series("", index=df.index, dtype=object)
    billed = unbl.copy()
    eff = unbl.copy()
    hours = pd.Series(np.nan, index=df.index)
    spot = (term == "spot") | _map_unique(ut, lambda x: "SpotUsage" in x, dtype=bool).astype(bool)
    u = (lit == "usage") & inst_usage
    kind[u] = "usage"
    pcat[u] = np.where(spot[u], "Dynamic", "Standard")
    hours[u] = amount[u]
    d = (lit == "discountedusage") & inst_usage
    kind[d] = "usage"
    pcat[d] = "Committed"
    cid[d] = ri_arn[d]
    billed[d] = 0.0
    eff[d] = ri_eff[d]
    hours[d] = amount[d]
    s = (lit == "savingsplancoveredusage") & inst_usage
    kind[s] = "usage"
    pcat[s] = "Committed"
    cid[s] = sp_arn[s]
    billed[s] = 0.0  # the SavingsPlanNegation line cancels the unblended cost; the commitment fee is billed
    eff[s] = sp_eff[s]
    hours[s] = amount[s]
    if s.any():
        ctx.counts["sp_covered"] += int(s.sum())
    neg = lit == "savingsplannegation"
    if neg.any():
        ctx.counts["sp_negation"] += int(neg.sum())
    fee = lit.isin(["rifee", "savingsplanrecurringfee", "savingsplanupfrontfee"]) | \
        ((lit == "fee") & ((ri_arn != "") | (sp_arn != "")))
    kind[fee] = "purchase"
    cid[fee] = ri_arn[fee].where(ri_arn[fee] != "", sp_arn[fee])
    eff[fee] = 0.0
    ref = lit == "refund"
    kind[ref] = "adjustment"
    cred = lit.isin(["credit", "edpdiscount", "bundleddiscount", "privateratediscount", "distributordiscount"])
    kind[cred] = "credit"
    cid[ref | cred] = ri_arn[ref | cred].where(ri_arn[ref | cred] != "", sp_arn[ref | cred])
    unknown = (lit != "") & ~lit.isin(list(_CUR_TYPES))
    lst = pub.where(kind == "usage")
    hint = _map_unique(fam, lambda x: "gpu" in x.lower(), dtype=bool).astype(bool) & (itype == "") & inst_usage
    frame = _frame(df.index, provider="aws", region=region, itype=itype, strong=itype != "", hint=hint, start=start,
                   end=end, hours=hours, billed=billed, effective=eff, list=lst, pcat=pcat, cid=cid, kind=kind,
                   desc=desc)
    acct = _obj(_text(df, C("line_item_usage_account_id")))
    frame["account"] = acct.where(acct != "", _obj(_text(df, C("bill_payer_account_id"))))
    frame["covers"] = lit.isin(["usage", "discountedusage", "savingsplancoveredusage"]).to_numpy()
    _add_ids(frame, df, src, "aws-cur-2.0")
    # unused commitment on the fee lines (CUR puts it there, FOCUS on a separate row)
    extra = []
    ri_unused = ri_unused_up.fillna(0) + ri_unused_rec.fillna(0)
    m = (lit == "rifee") & (ri_unused > 0)
    if m.any():
        x = frame[m].copy()
        x["kind"], x["billed"], x["effective"] = "unused", 0.0, ri_unused[m]
        x["desc"] = "unused reservation (reservation_unused_amortized_upfront_fee_for_billing_period + " \
                    "reservation_unused_recurring_fee)"
        extra.append(x)
    sp_unused = (sp_total - sp_used)
    m = (lit == "savingsplanrecurringfee") & (sp_unused > 1e-12)
    if m.any():
        x = frame[m].copy()
        x["kind"], x["billed"], x["effective"] = "unused", 0.0, sp_unused[m]
        x["desc"] = "unused Savings Plan commitment (savings_plan_total_commitment_to_date - " \
                    "savings_plan_used_commitment)"
        extra.append(x)
    pr = _Problems(df.index)
    for mask, why in ((s_bad, "line_item_usage_start_date does not parse"),
                      (e_bad, "line_item_usage_end_date does not parse"),
                      (s_far, _window_why("line_item_usage_start_date")),
                      (e_far, _window_why("line_item_usage_end_date")),
                      (u_bad, "line_item_unblended_cost is not a number"),
                      (a_bad, "line_item_usage_amount is not a number"),
                      (r_bad & d, "reservation_effective_cost is not a number"),
                      (p_bad & s, "savings_plan_savings_plan_effective_cost is not a number")):
        pr.add(mask, why)
    if unknown.any():
        pr.add(unknown, "line_item_line_item_type " + _obj(_text(df, C("line_item_line_item_type"))) + " is unknown")
    problems = pr.why
    frame["problem"] = problems
    frame.loc[unknown, "kind"] = "bad_cc"
    if extra:
        for x in extra:
            x["problem"] = problems[x.index]
            x["extra"] = True
        frame["extra"] = False
        frame = pd.concat([frame] + extra)
    return frame, []


_AZ_CHARGE = {"usage": "Usage", "purchase": "Purchase", "refund": "Refund", "unusedreservation": "UnusedReservation",
              "unusedsavingsplan": "UnusedSavingsPlan", "roundingadjustment": "RoundingAdjustment", "tax": "Tax"}
_AZ_PRICING = {"ondemand": "OnDemand", "on demand": "OnDemand", "reservation": "Reservation",
               "savingsplan": "SavingsPlan", "savings plan": "SavingsPlan", "spot": "Spot"}


def _azure_batch(df: "pd.DataFrame", src: _Source, ctx: _Ctx) -> tuple["pd.DataFrame", list[tuple[int, str]]]:
    import pandas as pd

    C = src.col
    charge = ctx.casing.norm(_text(df, C("ChargeType")), "ChargeType", _AZ_CHARGE)
    pm = ctx.casing.norm(_text(df, C("PricingModel")), "PricingModel", _AZ_PRICING)
    mcat = _obj(_text(df, C("MeterCategory"))).str.lower()
    msub = _obj(_text(df, C("MeterSubCategory")))
    mname = _obj(_text(df, C("MeterName")))
    svc = _obj(_text(df, C("ConsumedService"))).str.lower()
    info_type = _map_unique(_text(df, C("AdditionalInfo")), lambda x: _json_type(x) if x else "")
    itype = info_type.where(info_type.str.startswith("Standard_"), "")
    itype = itype.where(itype != "", _map_unique(mname, azure_size_from_meter))
    prod = _obj(_text(df, C("ProductName", "Product")))
    p_size = _map_unique(prod, lambda x: (_AZ_SIZE_RE.search(x).group(0) if x and _AZ_SIZE_RE.search(x) else ""))
    compute = (mcat == "virtual machines") | (svc == "microsoft.compute")
    itype = itype.where(compute, "")
    itype = itype.where(itype != "", p_size)
    region = _map_unique(_text(df, C("ResourceLocation", "ResourceLocationNormalized", "Location")), azure_region)
    qty, q_bad = _num(df, C("Quantity"))
    uom = _obj(_text(df, C("UnitOfMeasure")))
    block = _map_unique(uom, _hour_block, dtype=float).astype(float)
    if (block.dropna() > 1).any():
        ctx.counts["hour_blocks"] += int((block > 1).sum())
    cost, c_bad = _num(df, C("CostInBillingCurrency", "Cost", "PreTaxCost", "CostInUsd"))
    eff_price, _ = _num(df, C("EffectivePrice"))
    payg, _ = _num(df, C("PayGPrice"))
    cur = _text(df, C("BillingCurrency", "BillingCurrencyCode", "Currency"))
    for k, n in cur.value_counts().items():
        if n and k != "":
            ctx.currencies[str(k)] += int(n)
    if C("BillingCurrency", "BillingCurrencyCode", "Currency") is None:
        ctx.counts["no_currency"] += len(df)
    day, d_bad, d_far = _ts(df, C("Date", "UsageDateTime"), date_only=True)
    end = day + pd.Timedelta(days=1)
    cid = _obj(_text(df, C("ReservationId", "BenefitId")))
    desc = (msub + " " + mname).str.strip()
    desc = desc.where(charge != "purchase", prod)
    hint = compute & (itype == "") & (msub.str.match(_AZ_GPU_SERIES_RE) | msub.str.contains(_GPU_WORD_RE) |
                                     mname.str.match(_AZ_GPU_SERIES_RE))
    kind = pd.Series("skip", index=df.index, dtype=object)
    usage = (charge.isin(["usage", ""])) & compute
    kind[usage] = "usage"
    kind[charge == "purchase"] = "purchase"
    kind[charge == "refund"] = "adjustment"
    kind[charge.isin(["unusedreservation", "unusedsavingsplan"])] = "unused"
    pcat = _obj(pm).map({"ondemand": "Standard", "on demand": "Standard", "reservation": "Committed",
                   "savingsplan": "Committed", "savings plan": "Committed", "spot": "Dynamic"}).fillna("").astype(object)
    spot_meter = mname.str.lower().str.endswith((" spot", " low priority"))
    pcat = pcat.where(~((pcat == "") & spot_meter), "Dynamic")
    pcat = pcat.where(~((pcat == "") & usage & (pm == "")), "Standard")
    committed = usage & (pcat == "Committed")
    billed = cost.copy()
    eff = cost.copy()
    billed[committed] = 0.0
    amort = eff_price * qty
    eff[committed] = cost[committed].where(cost[committed] > 0, amort[committed].where(amort[committed] > 0))
    if (committed & eff.isna()).any():
        ctx.counts["az_actual_committed"] += int((committed & eff.isna()).sum())
    eff[kind == "purchase"] = 0.0
    unused = kind == "unused"
    billed[unused] = 0.0
    hours = qty * block
    lst = (payg * qty).where(kind == "usage")
    frame = _frame(df.index, provider="azure", region=region, itype=itype, strong=itype != "", hint=hint, start=day,
                   end=end, hours=hours, billed=billed, effective=eff, list=lst, pcat=pcat, cid=cid, kind=kind,
                   desc=desc)
    sub = _obj(_text(df, C("SubscriptionId", "SubscriptionGuid")))
    frame["account"] = sub.where(sub != "", _obj(_text(df, C("BillingAccountId"))))
    frame["covers"] = charge.isin(["usage", ""]).to_numpy()
    _add_ids(frame, df, src, "azure-cost-details")
    pr = _Problems(df.index)
    for mask, why in ((d_bad, "Date does not parse"), (d_far, _window_why("Date")), (q_bad, "Quantity is not a number"),
                      (c_bad, "CostInBillingCurrency is not a number")):
        pr.add(mask, why)
    unknown = (charge != "") & ~charge.isin(list(_AZ_CHARGE))
    if unknown.any():
        pr.add(unknown, "ChargeType " + _obj(_text(df, C("ChargeType"))) + " is unknown")
    frame.loc[unknown, "kind"] = "bad_cc"
    usage_nohour = usage & block.isna() & (itype != "")
    if usage_nohour.any():
        pr.add(usage_nohour, "UnitOfMeasure " + uom + " is not an hour unit")
    for v, name in ((qty, "Quantity"), (cost, "CostInBillingCurrency"), (eff_price, "EffectivePrice"),
                    (payg, "PayGPrice")):  # a usage row is never negative (a refund is ChargeType Refund)
        pr.add(usage & (v < 0), f"{name} is negative on a usage row")
    frame["problem"] = pr.why
    return frame, []


def _hourly_batch(df: "pd.DataFrame", src: _Source, ctx: _Ctx) -> tuple["pd.DataFrame", list[tuple[int, str]]]:
    import pandas as pd

    C = src.col
    hour, h_bad, h_far = _ts(df, C("hour"))
    hours, u_bad = _num(df, C("usage_hours"))
    billed, b_bad = _num(df, C("billed_cost"))
    eff, e_bad = _num(df, C("effective_cost"))
    lst, _ = _num(df, C("list_cost"))
    pcat_raw = _obj(_text(df, C("pricing_category")))
    low = ctx.casing.norm(_text(df, C("pricing_category")), "pricing_category", {"standard": "Standard", "committed": "Committed",
                                                         "dynamic": "Dynamic"})
    pcat = _obj(low).map({"standard": "Standard", "committed": "Committed", "dynamic": "Dynamic", "": ""})
    itype = _obj(_text(df, C("instance_type")))
    frame = _frame(df.index, provider=_map_unique(_text(df, C("provider")), _provider),
                   region=_obj(_text(df, C("region"))),
                   itype=itype, strong=itype != "", hint=False, start=hour, end=hour + pd.Timedelta(hours=1),
                   hours=hours, billed=billed, effective=eff, list=lst, pcat=pcat.fillna("?").astype(object),
                   cid=_obj(_text(df, C("commitment_id"))), kind="usage", desc="")
    frame["account"] = _obj(_text(df, C("account_id")))
    frame["covers"] = True
    pr = _Problems(df.index)
    for mask, why in ((h_far, _window_why("hour")), (h_bad | (hour.isna()), "hour does not parse"),
                      (u_bad | hours.isna(), "usage_hours is not a number"),
                      (b_bad, "billed_cost is not a number"), (e_bad, "effective_cost is not a number"),
                      (hours < 0, "usage_hours is negative"), (billed < 0, "billed_cost is negative"),
                      (eff < 0, "effective_cost is negative"), (lst < 0, "list_cost is negative"),
                      (pcat.isna(), "pricing_category " + pcat_raw + " is not Standard/Committed/Dynamic/empty")):
        pr.add(mask, why)
    frame["problem"] = pr.why
    ctx.counts["no_currency_hourly"] += len(df)
    return frame, []


_NUMERIC = {
    "focus": frozenset({"billedcost", "effectivecost", "listcost", "contractedcost", "consumedquantity",
                        "pricingquantity", "listunitprice", "contractedunitprice", "commitmentdiscountquantity"}),
    "aws-cur-2.0": frozenset({"line_item_usage_amount", "line_item_unblended_cost", "line_item_unblended_rate",
                              "reservation_effective_cost", "savings_plan_savings_plan_effective_cost",
                              "pricing_public_on_demand_cost", "reservation_unused_recurring_fee",
                              "reservation_unused_amortized_upfront_fee_for_billing_period",
                              "savings_plan_total_commitment_to_date", "savings_plan_used_commitment"}),
    "azure-cost-details": frozenset({"quantity", "costinbillingcurrency", "cost", "pretaxcost", "costinusd",
                                     "effectiveprice", "paygprice", "unitprice"}),
    "hourly": frozenset({"usage_hours", "billed_cost", "effective_cost", "list_cost"}),
}

_BATCHERS = {"aws-cur-2.0": _cur_batch, "azure-cost-details": _azure_batch, "hourly": _hourly_batch}


# ---------------------------------------------------------------------------------------------------------------
# Aggregation

_KEY = ["provider", "region", "itype", "pcat", "cid", "account"]
_VALS = ["hours", "billed", "effective", "list"]


def _spread(u: "pd.DataFrame") -> "pd.DataFrame":
    """Usage rows (already grouped by key, start, end) spread over the hours they cover, in proportion to the
    overlap, then summed per (key, hour)."""
    import numpy as np
    import pandas as pd

    one_h = np.int64(3_600_000_000)  # microseconds
    s = pd.DatetimeIndex(u["start"]).as_unit("us").asi8
    e = pd.DatetimeIndex(u["end"]).as_unit("us").asi8
    h0 = (s // one_h) * one_h
    n = np.maximum(1, -(-(e - h0) // one_h)).astype(np.int64)
    idx = np.repeat(np.arange(len(u)), n)
    offs = np.arange(len(idx)) - np.repeat(np.cumsum(n) - n, n)
    hs = h0[idx] + offs * one_h
    dur = (e - s)[idx].astype(float)
    ov = (np.minimum(e[idx], hs + one_h) - np.maximum(s[idx], hs)).astype(float)
    w = np.where(dur > 0, ov / np.where(dur > 0, dur, 1.0), 1.0)
    out = u.iloc[idx][_KEY].reset_index(drop=True)
    out["hour"] = pd.to_datetime(hs, unit="us", utc=True)
    for c in _VALS:
        out[c] = u[c].to_numpy()[idx] * w
    return out.groupby(_KEY + ["hour"], sort=False, dropna=False)[_VALS].sum(min_count=1).reset_index()


def _share_split_hours(frame: "pd.DataFrame", rows: "pd.Series", ctx: _Ctx) -> None:
    """Commitment flexibility (FOCUS): one resource-hour split between a Committed row and a Standard row, each
    carrying the full ConsumedQuantity, would count the hour twice; share it in proportion to PricingQuantity."""
    sub = frame.loc[rows & (frame["res"] != ""), ["res", "itype", "start", "end", "pcat", "hours", "pq"]]
    if len(sub) < 2:
        return
    g = sub.groupby(["res", "itype", "start", "end"], sort=False)
    split = (g["pcat"].transform("nunique") > 1) & (g["hours"].transform("nunique") == 1) & \
        (g["pq"].transform("count") == g["pq"].transform("size")) & (g["pq"].transform("sum") > 0)
    if split.any():
        idx = sub.index[split]
        tot = g["pq"].transform("sum")[split]
        frame.loc[idx, "hours"] = sub.loc[idx, "hours"] * sub.loc[idx, "pq"] / tot
        ctx.counts["flex_split"] += int(split.sum())


def _compact_ids(parts: list["pd.DataFrame"]) -> "pd.DataFrame":
    import pandas as pd

    df = pd.concat(parts, ignore_index=True)
    return df.groupby(_KEY + list(_ID_FRAME), sort=False, dropna=False).agg(
        hours=("hours", "sum"), first=("first", "min"), last=("last", "max")).reset_index()


def _compact(parts: list["pd.DataFrame"]) -> "pd.DataFrame":
    import pandas as pd

    df = pd.concat(parts, ignore_index=True)
    return df.groupby(_KEY + ["hour"], sort=False, dropna=False)[_VALS].sum(min_count=1).reset_index()


def _line_numbers(src: _Source, recs: dict[str, list[int]]) -> dict[tuple[str, int], int]:
    """1-based file line of each 0-based data record (CSV: counted with a CSV reader, so blank lines and quoted
    newlines are accounted for; Parquet: record + 2)."""
    out: dict[tuple[str, int], int] = {}
    if src.kind != "csv":
        for f, rs in recs.items():
            for r in rs:
                out[(f, r)] = r + 2
        return out
    want = sorted({r for rs in recs.values() for r in rs})
    if not want:
        return out
    fname = src.path.name
    try:
        _count_lines(src.path, want, fname, out)
    except (OSError, EOFError, csv.Error) as e:
        raise InputError("usage", f"{fname} cannot be read: {_one_line(e)}") from None
    for r in want:
        out.setdefault((fname, r), r + 2)
    return out


def _count_lines(path: Path, want: list[int], fname: str, out: dict[tuple[str, int], int]) -> None:
    # errors="replace": bytes that are not UTF-8 can only be in columns gpuopt does not read (pyarrow refuses
    # them in the columns it reads), and they do not change where lines end
    with _open_text(path, errors="replace") as fh:
        rd = csv.reader(fh)
        next(rd, None)
        prev_end = rd.line_num
        rec = -1
        j = 0
        for row in rd:
            start_line = prev_end + 1
            prev_end = rd.line_num
            if not row or all(not x for x in row) and len(row) <= 1:
                continue
            rec += 1
            while j < len(want) and want[j] < rec:
                j += 1
            if j < len(want) and want[j] == rec:
                out[(fname, rec)] = start_line
                j += 1
                if j >= len(want):
                    break


def read_usage(path: "str | Path", fmt: str = "auto", lookback_days: float | None = None,
               is_gpu_instance: Callable[[str, str], bool] | None = None) -> UsageData:
    """Read a billing export and return its GPU usage per hour and its commitment purchases (module doc: rules).

    Args:
        path: CSV (optionally .gz), Parquet file, or a folder of Parquet parts.
        fmt: 'auto' (:func:`detect_format`) or one of :data:`FORMATS`.
        lookback_days: keep the last N days of GPU usage, ending at the end of the last usage hour; purchases are
            kept when their charge period overlaps that window (or has no end).
        is_gpu_instance: ``f(provider, instance_type) -> bool``; default :func:`default_is_gpu_instance`.

    Raises:
        InputError: unknown format (field ``format``), a currency other than USD (``currency``), a bad
            ``lookback_days``, an unreadable file (``usage``).
    """
    import numpy as np
    import pandas as pd

    src = _source(path)
    if fmt == "auto":
        fmt = _detect(src)
    elif fmt not in FORMATS:
        raise InputError("format", f"unknown format {fmt!r}", accepted="auto, " + ", ".join(FORMATS))
    else:
        got = None
        try:
            got = _detect(src)
        except InputError:
            pass
        if got is not None and got.split("-")[0] != fmt.split("-")[0]:
            raise InputError("format", f"{src.path.name} looks like {got}, not {fmt}", accepted="auto, " +
                             ", ".join(FORMATS))
    if lookback_days is not None and not (isinstance(lookback_days, (int, float)) and lookback_days > 0
                                          and math.isfinite(lookback_days)):
        raise InputError("lookback_days", f"{lookback_days!r} is not a positive number of days")
    ctx = _Ctx(fmt, is_gpu_instance or default_is_gpu_instance)
    batcher = _BATCHERS.get(fmt, _focus_batch)
    wanted = list(src.columns)
    if fmt == "aws-cur-2.0":
        lowset = set(_CUR_COLS)
        wanted = [c for c in src.columns if c.strip().lower() in lowset]
    parts: list[pd.DataFrame] = []
    id_parts: list[pd.DataFrame] = []
    purchases: list[pd.DataFrame] = []
    bad: list[tuple[str, int, str]] = []
    rows_read = rows_gpu = rows_not_gpu = 0
    not_attrib = Counter()
    numeric = _NUMERIC["focus" if fmt.startswith("focus") else fmt]
    cov = _Coverage()
    for df, first, fname in _batches(src, wanted, numeric):
        df.index = pd.RangeIndex(first, first + len(df))
        rows_read += len(df)
        frame, _ = batcher(df, src, ctx)
        if "extra" not in frame.columns:
            frame["extra"] = False
        if "account" not in frame.columns:
            frame["account"] = ""
        if "covers" not in frame.columns:
            frame["covers"] = (frame["kind"] == "usage").to_numpy()
        cov.add(frame[frame["covers"].to_numpy(dtype=bool) & ~frame["extra"].to_numpy(dtype=bool)])
        # GPU decision on unique (provider, itype)
        gpu = _map_pairs(frame["provider"], frame["itype"], ctx.is_gpu).astype(bool)
        kind = frame["kind"]
        noit = (frame["itype"] == "").to_numpy()
        hascid = (frame["cid"] != "").to_numpy()
        strong = frame["strong"].to_numpy(dtype=bool)
        g = gpu.to_numpy()
        k_use = (kind == "usage").to_numpy()
        k_pur = kind.isin(["purchase", "unused"]).to_numpy()
        k_cred = kind.isin(["credit", "adjustment"]).to_numpy()
        weak_nongpu = ~g & ~strong
        keep_purchase = k_pur & (g | weak_nongpu | noit)
        keep_credit = k_cred & (g | (hascid & (weak_nongpu | noit)))
        use = k_use & g
        unattributed = k_use & ~g & frame["hint"].to_numpy(dtype=bool) & (noit | ~strong)
        relevant = use | keep_purchase | keep_credit | unattributed | (kind == "bad_cc").to_numpy()
        pr = _Problems(frame.index, frame["problem"].where(relevant, ""))
        ue = use & ~pr.has
        st_na = frame["start"].isna().to_numpy()
        pr.add(ue & st_na, "no usage start time")
        pr.add(ue & frame["end"].isna().to_numpy(), "no usage end time")
        pr.add(ue & (frame["end"] <= frame["start"]).to_numpy(), "usage ends before it starts")
        pr.add(ue & ((frame["end"] - frame["start"]) > pd.Timedelta(days=MAX_USAGE_ROW_DAYS)).to_numpy(),
               f"usage row covers more than {MAX_USAGE_ROW_DAYS} days")
        pr.add(ue & frame["hours"].isna().to_numpy(), "no usage quantity in hours")
        pr.add(ue & frame["billed"].isna().to_numpy(), "no billed cost")
        eff_na = frame["effective"].isna().to_numpy()
        committed = (frame["pcat"] == "Committed").to_numpy()
        if fmt != "azure-cost-details":
            pr.add(ue & eff_na & committed, "committed usage without an effective cost")
        fill_eff = ue & eff_na & ~committed & ~pr.has
        if fill_eff.any():
            ctx.counts["effective_from_billed"] += int(fill_eff.sum())
            frame.loc[fill_eff, "effective"] = frame.loc[fill_eff, "billed"]
        pe = keep_purchase | keep_credit
        pr.add(pe & st_na, "no charge period start")
        pr.add(pe & frame["billed"].isna().to_numpy(), "no billed cost")
        if unattributed.any():
            pr.add(unattributed, "no_instance_type: a GPU compute row that names no instance type (" +
                   frame["desc"].astype(str).str.slice(0, 80) + ")")
        prob = pr.why
        isbad = pd.Series(pr.has, index=frame.index)
        ue = pd.Series(ue, index=frame.index)
        use = pd.Series(use, index=frame.index)
        keep_purchase = pd.Series(keep_purchase, index=frame.index)
        keep_credit = pd.Series(keep_credit, index=frame.index)
        # count each source row once (extra rows are derived from a row already counted)
        base_bad = isbad & ~frame["extra"]
        for r, why in zip(frame.index[base_bad], prob[base_bad]):
            bad.append((fname, int(r), str(why)))
        ok = ~isbad
        kept = (use | keep_purchase | keep_credit) & ok
        rows_gpu += int((kept & ~frame["extra"]).sum())
        rows_not_gpu += int((~kept & ~isbad & ~frame["extra"]).sum())
        # credits/adjustments left out
        lo = kind.isin(["credit", "adjustment"]) & ~keep_credit & ~frame["extra"]
        if lo.any():
            not_attrib["n"] += int(lo.sum())
            not_attrib["usd"] += float(frame.loc[lo, "billed"].fillna(0).sum())
        gk = ue & ok & gpu
        if gk.any() and "res" in frame.columns:
            _share_split_hours(frame, gk, ctx)
        if gk.any():
            dev = gk & (frame["pcat"] == "Standard") & (frame["cid"] == "") & \
                ((frame["effective"] - frame["billed"]).abs() > np.maximum(0.01, 0.01 * frame["billed"].abs()))
            if dev.any():
                ctx.counts["eff_ne_billed"] += int(dev.sum())
                if not ctx.example:
                    r = int(frame.index[dev][0])
                    ctx.example = (fname, r, float(frame.at[r, "billed"]), float(frame.at[r, "effective"]))
            if "id_resource_id" in frame.columns:
                i = frame.loc[gk, _KEY + list(_ID_FRAME) + ["hours", "start", "end"]]
                id_parts.append(i.groupby(_KEY + list(_ID_FRAME), sort=False, dropna=False).agg(
                    hours=("hours", "sum"), first=("start", "min"), last=("end", "max")).reset_index())
                if len(id_parts) > 16:
                    id_parts = [_compact_ids(id_parts)]
            u = frame.loc[gk, _KEY + ["start", "end"] + _VALS]
            g = u.groupby(_KEY + ["start", "end"], sort=False, dropna=False)[_VALS].sum(min_count=1).reset_index()
            parts.append(_spread(g))
            if len(parts) > 16:
                parts = [_compact(parts)]
        pk = (keep_purchase | keep_credit) & ok
        if pk.any():
            x = frame[pk]
            cat = x["kind"].map({"purchase": "Purchase", "unused": "Usage", "credit": "Credit",
                                 "adjustment": "Adjustment"})
            purchases.append(pd.DataFrame({
                "provider": x["provider"], "region": x["region"],
                "instance_type": x["itype"].where(gpu[pk], ""), "commitment_id": x["cid"],
                "charge_category": cat, "billed_cost": x["billed"].astype(float),
                "effective_cost": x["effective"].astype(float), "charge_period_start": x["start"],
                "charge_period_end": x["end"], "description": x["desc"], "_rec": x.index, "_file": fname}))
    # ---- assemble
    if ctx.currencies:
        other = sorted(c for c in ctx.currencies if c.upper() != "USD")
        if other:
            raise InputError("currency", f"{src.path.name} is billed in {', '.join(other)}"
                             + (" and USD" if "USD" in {c.upper() for c in ctx.currencies} else "")
                             + "; gpuopt compares USD prices only (export the data in USD)", accepted="USD")
    notes: list[str] = []
    hourly = _compact(parts) if parts else None
    recs = _group_recs(bad, purchases)
    if ctx.example:
        recs.setdefault(ctx.example[0], []).append(ctx.example[1])
    line_of = _line_numbers(src, recs)
    if ctx.example:
        f, r, b, e = ctx.example
        ctx.example = (f, line_of.get((f, r), r + 2), b, e)
    bad_rows = [BadRow(line_of.get((f, r), r + 2), (f"{f}: " if src.kind == "parquet" and len(src.files) > 1
                                                    else "") + why) for f, r, why in bad]
    bad_rows.sort(key=lambda b: b.line)
    if hourly is None or hourly.empty:
        hourly = pd.DataFrame({c: pd.Series([], dtype=object) for c in _KEY}).assign(
            hour=pd.Series([], dtype="datetime64[us, UTC]"), **{c: pd.Series([], dtype=float) for c in _VALS})
    hourly = hourly.rename(columns={"itype": "instance_type", "pcat": "pricing_category", "cid": "commitment_id",
                                    "account": "account_id",
                                    "hours": "usage_hours", "billed": "billed_cost", "effective": "effective_cost",
                                    "list": "list_cost"})
    hourly = hourly[list(HOURLY_COLUMNS)].sort_values(["provider", "region", "instance_type", "pricing_category",
                                                       "commitment_id", "account_id", "hour"]).reset_index(drop=True)
    for c in ("usage_hours", "billed_cost", "effective_cost", "list_cost"):
        hourly[c] = hourly[c].astype("float64")
    for c in ("provider", "region", "instance_type", "pricing_category", "commitment_id", "account_id"):
        hourly[c] = hourly[c].astype(object)
    c0, c1, cdays = cov.result(hourly)
    if purchases:
        pur = pd.concat(purchases, ignore_index=True)
        pur["line"] = [line_of.get((f, int(r)), int(r) + 2) for f, r in zip(pur["_file"], pur["_rec"])]
        pur = pur.drop(columns=["_rec", "_file"])
    else:
        pur = pd.DataFrame({c: pd.Series([], dtype=object) for c in PURCHASE_COLUMNS})
        for c in ("billed_cost", "effective_cost"):
            pur[c] = pur[c].astype(float)
        for c in ("charge_period_start", "charge_period_end"):
            pur[c] = pd.Series([], dtype="datetime64[us, UTC]")
        pur["line"] = pur["line"].astype("int64")
    pur = pur[list(PURCHASE_COLUMNS)].sort_values("line", kind="stable").reset_index(drop=True)
    n_net, usd_net = _net_refunds_amortized(pur)
    if n_net:
        notes_refund = (f"{n_net} refund/credit row(s) of a commitment (total {usd_net:.2f} USD billed) netted "
                        "against its purchase: amortized (effective) cost 0 beyond the purchase's own effective cost "
                        "(the purchase is amortized into usage rows, so its refund is not a negative cost)")
        ctx.extra_notes.append(notes_refund)
    if id_parts:
        ids = _compact_ids(id_parts).rename(columns={"itype": "instance_type", "pcat": "pricing_category",
                                                     "cid": "commitment_id", "hours": "usage_hours",
                                                     "first": "first_start", "last": "last_end"})
        ids = ids.rename(columns={"id_" + c: c for c in ID_COLUMNS})
        ids = ids[list(IDS_COLUMNS)].sort_values(list(IDS_COLUMNS[:13])).reset_index(drop=True)
    else:
        ids = pd.DataFrame({c: pd.Series([], dtype=object) for c in IDS_COLUMNS[:13]}).assign(
            usage_hours=pd.Series([], dtype=float), first_start=pd.Series([], dtype="datetime64[us, UTC]"),
            last_end=pd.Series([], dtype="datetime64[us, UTC]"))
    if lookback_days is not None and not hourly.empty:
        end = c1  # the end of the data: the last hour the export covers (GPU usage or not)
        lo = end - pd.Timedelta(days=float(lookback_days))
        c0 = max(c0, lo)
        cdays = tuple(d for d in cdays if d >= lo.floor("D").date())
        ids = ids[ids["last_end"] > lo].reset_index(drop=True)
        n0 = len(hourly)
        hourly = hourly[hourly["hour"] >= lo].reset_index(drop=True)
        keep = pur["charge_period_end"].isna() | (pur["charge_period_end"] > lo)
        keep &= pur["charge_period_start"].isna() | (pur["charge_period_start"] < end)
        notes.append(f"lookback {lookback_days:g} days: kept GPU usage from {lo} to {end} ({len(hourly)} of {n0} "
                     f"hourly rows) and the {int(keep.sum())} of {len(pur)} purchase rows whose charge period overlaps "
                     "it")
        pur = pur[keep].reset_index(drop=True)
    if hourly.empty:
        p0 = p1 = pd.NaT
        notes.append("no GPU usage rows were found")
    else:
        p0 = hourly["hour"].min()
        p1 = hourly["hour"].max() + pd.Timedelta(hours=1)
    notes = _notes(ctx, fmt, not_attrib, hourly) + notes
    if hourly.empty:
        c0 = c1 = pd.NaT
        cdays = ()
    return UsageData(hourly=hourly, purchases=pur, period_start=p0, period_end=p1, source_format=fmt, currency="USD",
                     rows_read=rows_read, rows_gpu=rows_gpu, rows_not_gpu=rows_not_gpu, bad_rows=bad_rows,
                     notes=notes, coverage_start=c0, coverage_end=c1, covered_days=cdays, ids=ids)


def commitment_key(commitment_id: Any) -> str:
    """The key that ties a refund to its purchase: the id lower-cased and stripped; an Azure id holding
    ``reservationOrders/<order>`` becomes that order id (purchase and refund rows carry the reservation order,
    usage rows its reservation); an AWS ARN stays whole."""
    k = str(commitment_id or "").strip().lower()
    m = re.search(r"reservationorders/([^/]+)", k)
    return m.group(1) if m else k


def _refund_rows(pur: "pd.DataFrame") -> "pd.Series":
    """Refunds and credits that carry a commitment's id: category Credit / Adjustment, a negative billed cost."""
    return pur["charge_category"].isin(["Credit", "Adjustment"]) & (pur["commitment_id"].astype(str) != "") & \
        (pur["billed_cost"] < 0)


def _net_refunds_amortized(pur: "pd.DataFrame") -> tuple[int, float]:
    """Amortized view, in place: a refund or credit of a commitment (:func:`_refund_rows`) takes an effective cost of
    minus what is left of its purchases' effective cost in the export (0 when the purchase is amortized into usage,
    as CUR fees, Azure purchases and FOCUS amortized purchases are, or not in the export), never below -|refund|.
    Returns (rows netted, their billed total)."""
    if pur.empty:
        return 0, 0.0
    ref = _refund_rows(pur)
    if not ref.any():
        return 0, 0.0
    keys = pur["commitment_id"].map(commitment_key)
    left = pur[pur["charge_category"] == "Purchase"].groupby(keys)["effective_cost"].sum().clip(lower=0).to_dict()
    for i in pur.index[ref]:
        k = keys[i]
        take = min(-float(pur.at[i, "billed_cost"]), float(left.get(k, 0.0)))
        left[k] = float(left.get(k, 0.0)) - take
        pur.at[i, "effective_cost"] = -take + 0.0  # not -0.0
    return int(ref.sum()), float(pur.loc[ref, "billed_cost"].sum())


def purchase_totals(pur: "pd.DataFrame") -> dict[str, float]:
    """Billed totals of ``UsageData.purchases`` by charge category (USD), with each refund or credit of a commitment
    netted against the purchases of that commitment in the export (up to their billed total): a purchase of 8,760
    and its refund of 8,760 give ``{'Purchase': 0.0}``; what a refund exceeds its purchase by (or a refund whose
    purchase is not in the export) stays under its own category."""
    if pur is None or pur.empty:
        return {}
    pur = pur.copy()
    ref = _refund_rows(pur)
    keys = pur["commitment_id"].map(commitment_key)
    left = pur[pur["charge_category"] == "Purchase"].groupby(keys)["billed_cost"].sum().clip(lower=0).to_dict()
    cat = pur["charge_category"].astype(str).copy()
    extra = []
    for i in pur.index[ref]:
        k = keys[i]
        amount = -float(pur.at[i, "billed_cost"])
        take = min(amount, float(left.get(k, 0.0)))
        if take <= 0:
            continue
        left[k] = float(left.get(k, 0.0)) - take
        if take >= amount:
            cat[i] = "Purchase"
        else:  # part netted, the rest stays a refund/credit
            pur.at[i, "billed_cost"] = -(amount - take)
            extra.append(("Purchase", -take))
    out: dict[str, float] = {}
    for c, v in zip(cat, pur["billed_cost"]):
        out[c] = out.get(c, 0.0) + float(v)
    for c, v in extra:
        out[c] = out.get(c, 0.0) + v
    return {k: round(v, 2) + 0.0 for k, v in sorted(out.items())}


class _Coverage:
    """What the export covers (UsageData.coverage_start / coverage_end / covered_days), gathered batch by batch
    from the charge periods of usage rows of every service that span at most a day."""

    def __init__(self) -> None:
        self.lo = None
        self.hi = None
        self.days: set = set()

    def add(self, frame: "pd.DataFrame") -> None:
        import pandas as pd

        if frame.empty:
            return
        s, e = frame["start"], frame["end"]
        ok = s.notna() & e.notna() & (e > s) & ((e - s) <= pd.Timedelta(days=1))
        if not ok.any():
            return
        s, e = s[ok], e[ok]
        lo, hi = s.min(), e.max()
        self.lo = lo if self.lo is None else min(self.lo, lo)
        self.hi = hi if self.hi is None else max(self.hi, hi)
        self.days.update(d.date() for d in s.dt.floor("D").unique())
        self.days.update(d.date() for d in (e - pd.Timedelta(microseconds=1)).dt.floor("D").unique())

    def result(self, hourly: "pd.DataFrame") -> tuple:
        """(first hour, end of the last hour, sorted covered days); the GPU usage hours always count as covered."""
        import pandas as pd

        lo, hi, days = self.lo, self.hi, set(self.days)
        if len(hourly):
            h0, h1 = hourly["hour"].min(), hourly["hour"].max() + pd.Timedelta(hours=1)
            lo = h0 if lo is None else min(lo, h0)
            hi = h1 if hi is None else max(hi, h1)
            days.update(d.date() for d in hourly["hour"].dt.floor("D").unique())
        if lo is None:
            return pd.NaT, pd.NaT, ()
        return pd.Timestamp(lo).floor("h"), pd.Timestamp(hi).ceil("h"), tuple(sorted(days))


def _group_recs(bad: list[tuple[str, int, str]], purchases: list["pd.DataFrame"]) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    for f, r, _ in bad:
        out.setdefault(f, []).append(r)
    for p in purchases:
        for f, r in zip(p["_file"], p["_rec"]):
            out.setdefault(f, []).append(int(r))
    return out


def _notes(ctx: _Ctx, fmt: str, not_attrib: Counter, hourly: "pd.DataFrame") -> list[str]:
    n = ctx.counts
    out = [f"format {fmt}"]
    if fmt.startswith("focus"):
        out[0] += " (detected from the columns present)" if True else ""
    out += ctx.casing.notes()
    if n["per10k"]:
        out.append(f"{n['per10k']} row(s) are priced per 10,000 units (PricingQuantity = ConsumedQuantity / 10,000); "
                   "quantities are taken from ConsumedQuantity, in single units")
    if n["flex_split"]:
        out.append(f"{n['flex_split']} usage row(s) share one resource-hour between Committed and Standard rows that "
                   "each carry the full ConsumedQuantity (commitment flexibility); usage_hours were shared in "
                   "proportion to PricingQuantity")
    if n["eff_ne_billed"]:
        f, r, b, e = ctx.example or ("", 0, 0.0, 0.0)
        out.append(f"{n['eff_ne_billed']} on-demand GPU row(s) without a commitment have an effective cost that "
                   f"differs from the billed cost (first: line {r}, billed {b:g}, effective {e:g}); kept as "
                   "exported")
    if n["hour_blocks"]:
        out.append(f"{n['hour_blocks']} row(s) count usage in blocks of hours (e.g. '10 Hours', '100 Hours'); "
                   "their quantities were scaled to single hours")
    if n["no_currency"] and fmt != "hourly":
        out.append(f"{n['no_currency']} row(s) have no currency column; taken as USD")
    if n["no_effective_col"]:
        out.append("no EffectiveCost column: on-demand and spot rows take EffectiveCost = BilledCost")
    elif n["effective_from_billed"]:
        out.append(f"{n['effective_from_billed']} on-demand/spot GPU row(s) have no effective cost; "
                   "taken equal to the billed cost")
    if n["sp_covered"]:
        out.append(f"{n['sp_covered']} SavingsPlanCoveredUsage row(s): billed_cost 0 (their "
                   f"{n['sp_negation']} SavingsPlanNegation line(s) cancel the unblended cost; the plan's fee is in "
                   "purchases), effective_cost = savings_plan_savings_plan_effective_cost")
    elif n["sp_negation"]:
        out.append(f"{n['sp_negation']} SavingsPlanNegation row(s) were not used (they cancel covered usage)")
    if n["az_actual_committed"]:
        out.append(f"{n['az_actual_committed']} reservation/savings-plan usage row(s) carry no amortized cost "
                   "(an actual-cost export): effective_cost is NaN for them; export the amortized cost dataset")
    if not_attrib["n"]:
        out.append(f"{not_attrib['n']} credit/refund/adjustment row(s) (total {not_attrib['usd']:.2f} USD) name "
                   "neither a commitment nor a GPU instance type; left out")
    gcp_acc = [t for t in hourly["instance_type"].unique() if str(t).startswith("nvidia-")] if len(hourly) else []
    if gcp_acc:
        out.append("GCP GPU SKU rows are per GPU: usage_hours of " + ", ".join(sorted(gcp_acc)) +
                   " are GPU-hours, not instance-hours")
    if fmt == "hourly":
        out.append("hourly input: amounts taken as USD (the warehouse SQL filters on BillingCurrency/"
                   "line_item_currency_code = 'USD')")
    return out + ctx.extra_notes


# ---------------------------------------------------------------------------------------------------------------
# Warehouse SQL

SQL_DIR = Path(__file__).resolve().parent / "sql"


def load_sql(name: str, *, table: str, start: str, end: str) -> str:
    """The SQL file ``providers/sql/<name>`` with ``{{table}}``, ``{{start}}`` and ``{{end}}`` (ISO dates,
    start inclusive, end exclusive) filled in. Raises InputError for a date that is not YYYY-MM-DD."""
    for f, v in (("start", start), ("end", end)):
        if not re.match(r"^\d{4}-\d{2}-\d{2}$", str(v)):
            raise InputError(f, f"{v!r} is not a date", accepted="YYYY-MM-DD")
    text = (SQL_DIR / name).read_text(encoding="utf-8")
    return text.replace("{{table}}", table).replace("{{start}}", start).replace("{{end}}", end)
