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
amortized export), ``list_cost`` the public on-demand price of the line (NaN when the export lacks it: FOCUS
ListCost, else ListUnitPrice x PricingQuantity; CUR pricing_public_on_demand_cost, else
pricing_public_on_demand_rate x line_item_usage_amount; Azure PayGPrice x Quantity; the hourly table's list_cost),
which the review takes as its on-demand baseline (optimizer.review.bill_list_rate).

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

Files (imports go one way, each file under this one): ``providers.usage_source`` opens an export, checks its header,
tells its format and reads it in batches (the I/O); ``providers.usage_names`` reads instance types, providers,
regions and hour units out of text and holds the GPU test; ``providers.usage_columns`` the column helpers and the
canonical row frame; ``providers.usage_formats`` one pure reader per format (batch -> canonical rows). This module
keeps the GPU rows, spreads and sums them per hour, nets the commitments' refunds and loads the warehouse SQL; the
public names of the files below are importable from here too (``__all__``).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from gpuopt.kernel.errors import InputError
from providers.usage_columns import (FIRST_DATE, ID_COLUMNS, ID_FRAME_COLUMNS, MAX_ABS_AMOUNT, MAX_YEARS_AHEAD,
                                     Problems, ReadContext, date_window, map_pairs)
from providers.usage_formats import BATCHERS, CUR_COLUMNS, NUMERIC_COLUMNS, focus_batch
from providers.usage_names import (GPU_PATTERNS, aws_type_from_usage_type, azure_region, azure_size_from_meter,
                                   default_is_gpu_instance, gpu_pattern_match)
from providers.usage_source import (BATCH_ROWS, MAX_COLUMNS, MAX_HEADER_CHARS, NULL_STRINGS, batches, detect,
                                    detect_format, line_numbers, open_source)

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

#: The public names of the billing-export readers (some defined in providers.usage_source, usage_names and
#: usage_columns, where the readers of each concern live).
__all__ = ["BATCH_ROWS", "BadRow", "FIRST_DATE", "FORMATS", "GPU_PATTERNS", "HOURLY_COLUMNS", "IDS_COLUMNS",
           "ID_COLUMNS", "MAX_ABS_AMOUNT", "MAX_COLUMNS", "MAX_HEADER_CHARS", "MAX_USAGE_ROW_DAYS",
           "MAX_YEARS_AHEAD", "NULL_STRINGS", "PRICING_CATEGORIES", "PURCHASE_COLUMNS", "SQL_DIR", "UsageData",
           "aws_type_from_usage_type", "azure_region", "azure_size_from_meter", "commitment_key", "date_window",
           "default_is_gpu_instance", "detect_format", "gpu_pattern_match", "load_sql", "window_bounds",
           "purchase_totals", "read_usage"]

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
#: A usage row may cover at most this many days (longer: a bad row; the hour spreading is bounded by it).
MAX_USAGE_ROW_DAYS = 366

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


def _share_split_hours(frame: "pd.DataFrame", rows: "pd.Series", ctx: ReadContext) -> None:
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
    return df.groupby(_KEY + list(ID_FRAME_COLUMNS), sort=False, dropna=False).agg(
        hours=("hours", "sum"), first=("first", "min"), last=("last", "max")).reset_index()


def _compact(parts: list["pd.DataFrame"]) -> "pd.DataFrame":
    import pandas as pd

    df = pd.concat(parts, ignore_index=True)
    return df.groupby(_KEY + ["hour"], sort=False, dropna=False)[_VALS].sum(min_count=1).reset_index()



def read_usage(path: "str | Path", fmt: str = "auto", lookback_days: float | None = None,
               is_gpu_instance: Callable[[str, str], bool] | None = None, window: tuple | None = None) -> UsageData:
    """Read a billing export and return its GPU usage per hour and its commitment purchases (module doc: rules).

    Args:
        path: CSV (optionally .gz), Parquet file, or a folder of Parquet parts.
        fmt: 'auto' (:func:`detect_format`) or one of :data:`FORMATS`.
        lookback_days: keep the last N days of GPU usage, ending at the end of the last usage hour; purchases are
            kept when their charge period overlaps that window (or has no end).
        is_gpu_instance: ``f(provider, instance_type) -> bool``; default :func:`default_is_gpu_instance`.
        window: (start, end) of an ``hourly`` file, [start, end) UTC (dates or timestamps, :func:`window_bounds`):
            needed when the file has no ``window_start`` / ``window_end`` columns, then every hour of it counts as
            covered (hours without GPU rows are idle) and GPU rows outside it are left out (said in the notes);
            when the file has them it must equal them. Other formats: refused (the review takes its window).

    The ``hourly`` format (issue 32): the warehouse SQL writes ``window_start`` / ``window_end`` (the [start, end)
    the query read, the same on every row) and one row per hour covered by a usage row of any service
    (``instance_type`` empty, usage 0); coverage and covered days come from those rows as they come from the
    export's own rows in the other formats, so hours covered without GPU rows are idle and days without any row
    missing data. ``period_start`` / ``period_end`` are the window. A file without the window columns is refused
    unless ``window`` is given; rows naming different windows are refused.

    Raises:
        InputError: unknown format (field ``format``), a currency other than USD (``currency``), a bad
            ``lookback_days``, an unreadable file (``usage``), an hourly file without its window and no
            ``window`` (``usage``), a bad or contradicting ``window`` (``window``).
    """
    import numpy as np
    import pandas as pd

    src = open_source(path)
    if fmt == "auto":
        fmt = detect(src)
    elif fmt not in FORMATS:
        raise InputError("format", f"unknown format {fmt!r}", accepted="auto, " + ", ".join(FORMATS))
    else:
        got = None
        try:
            got = detect(src)
        except InputError:
            pass
        if got is not None and got.split("-")[0] != fmt.split("-")[0]:
            raise InputError("format", f"{src.path.name} looks like {got}, not {fmt}", accepted="auto, " +
                             ", ".join(FORMATS))
    if lookback_days is not None and not (isinstance(lookback_days, (int, float)) and lookback_days > 0
                                          and math.isfinite(lookback_days)):
        raise InputError("lookback_days", f"{lookback_days!r} is not a positive number of days")
    if window is not None:
        if fmt != "hourly":
            raise InputError("window", f"--window applies to the hourly format only ({src.path.name} is {fmt}); "
                             "the other exports carry their own coverage", accepted="--usage-format hourly")
        window = window_bounds(*window)
    file_window = fmt == "hourly" and src.col("window_start") is not None and src.col("window_end") is not None
    if fmt == "hourly" and not file_window and window is None:
        missing = [c for c in ("window_start", "window_end") if src.col(c) is None]
        raise InputError("usage", f"{src.path.name} has no {' / '.join(missing)} column(s): an hourly file must say "
                         "the window its query read, or days without GPU rows would pass for missing data instead "
                         "of idle time; rerun the warehouse SQL of providers/sql/ (it writes them) or give "
                         "--window START END", accepted="window_start, window_end columns, or --window START END")
    ctx = ReadContext(fmt, is_gpu_instance or default_is_gpu_instance)
    batcher = BATCHERS.get(fmt, focus_batch)
    wanted = list(src.columns)
    if fmt == "aws-cur-2.0":
        lowset = set(CUR_COLUMNS)
        wanted = [c for c in src.columns if c.strip().lower() in lowset]
    parts: list[pd.DataFrame] = []
    id_parts: list[pd.DataFrame] = []
    purchases: list[pd.DataFrame] = []
    bad: list[tuple[str, int, str]] = []
    rows_read = rows_gpu = rows_not_gpu = 0
    not_attrib = Counter()
    numeric = NUMERIC_COLUMNS["focus" if fmt.startswith("focus") else fmt]
    cov = _Coverage()
    for df, first, fname in batches(src, wanted, numeric):
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
        gpu = map_pairs(frame["provider"], frame["itype"], ctx.is_gpu).astype(bool)
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
        pr = Problems(frame.index, frame["problem"].where(relevant, ""))
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
        for col, name in (("region", "region"), ("itype", "instance type"), ("cid", "commitment id"),
                          ("account", "account")):
            # a NUL, CR or LF inside a (quoted) cell made a usage group of its own and lost its price (issue 33, a
            # breaker's "us-\x00east-1"): the row is a bad row, named, not planned under a name no catalog has
            ctrl = frame[col].astype(str).str.contains(r"[\x00\r\n]", regex=True, na=False).to_numpy()
            pr.add((ue | pe) & ctrl, f"{name} holds a NUL, CR or LF character")
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
                i = frame.loc[gk, _KEY + list(ID_FRAME_COLUMNS) + ["hours", "start", "end"]]
                id_parts.append(i.groupby(_KEY + list(ID_FRAME_COLUMNS), sort=False, dropna=False).agg(
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
    line_of = line_numbers(src, recs)
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
    w_notes: list[str] = []
    if fmt == "hourly":
        hourly, window, (c0, c1, cdays) = _hourly_window(src.path.name, ctx, window, file_window, hourly,
                                                         (c0, c1, cdays), w_notes)
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
    if window is not None:
        p0, p1 = window
    notes = _notes(ctx, fmt, not_attrib, hourly) + w_notes + notes
    if hourly.empty:
        c0 = c1 = pd.NaT
        cdays = ()
    return UsageData(hourly=hourly, purchases=pur, period_start=p0, period_end=p1, source_format=fmt, currency="USD",
                     rows_read=rows_read, rows_gpu=rows_gpu, rows_not_gpu=rows_not_gpu, bad_rows=bad_rows,
                     notes=notes, coverage_start=c0, coverage_end=c1, covered_days=cdays, ids=ids)


def window_bounds(start: Any, end: Any) -> tuple["pd.Timestamp", "pd.Timestamp"]:
    """The window [start, end) of an hourly file as UTC timestamps: ISO dates ('2024-09-01') or times (naive =
    UTC) on whole hours, start before end, both inside :func:`date_window`. Raises InputError (field ``window``)."""
    import pandas as pd

    out = []
    for v in (start, end):
        try:
            t = pd.Timestamp(v)
        except (ValueError, TypeError):
            t = pd.NaT
        if pd.isna(t):
            raise InputError("window", f"{v!r} is not a date or time", accepted="START END as YYYY-MM-DD or "
                             "YYYY-MM-DDTHH:MM[:SS][Z], UTC, start inclusive, end exclusive")
        t = t.tz_localize("UTC") if t.tzinfo is None else t.tz_convert("UTC")
        if t != t.floor("h"):  # the rows are whole hours: a window inside one would be rounded without a word
            raise InputError("window", f"{v!r} is not on a whole hour (the hourly rows are whole UTC hours)",
                             accepted="YYYY-MM-DD or YYYY-MM-DDTHH:00, UTC")
        out.append(t)
    lo, hi = date_window()
    w0, w1 = out
    if not w0 < w1:
        raise InputError("window", f"start {w0:%Y-%m-%d %H:%M} is not before end {w1:%Y-%m-%d %H:%M}",
                         accepted="START before END")
    if w0 < lo or w1 > hi:
        raise InputError("window", f"{w0:%Y-%m-%d} .. {w1:%Y-%m-%d} is outside the dates gpuopt reads",
                         accepted=f"{lo:%Y-%m-%d} .. {hi:%Y-%m-%d}")
    return w0.as_unit("us"), w1.as_unit("us")


def _hourly_window(name: str, ctx: ReadContext, window: tuple | None, file_window: bool, hourly: "pd.DataFrame",
                   cov: tuple, notes: list[str]) -> tuple:
    """The window of an hourly file (read_usage's doc): (GPU rows kept, (start, end), (coverage_start, coverage_end,
    covered_days)). Raises InputError for a file naming several windows, none, or another than ``window``."""
    import pandas as pd

    if file_window:
        pairs = {p for p in ctx.windows}
        if not pairs and hourly.empty and window is None:
            return hourly, None, cov
        if any(a is None or b is None for a, b in pairs):
            raise InputError("usage", f"{name}: window_start / window_end are empty or not a date or time on some "
                             "rows", accepted="ISO 8601 times (2024-09-01T00:00:00Z, '2024-09-01 00:00:00 UTC'), "
                             "the same window on every row")
        if len(pairs) > 1:
            shown = sorted(f"{a} .. {b}" for a, b in pairs)[:3]
            raise InputError("usage", f"{name}: window_start / window_end must hold one window on every row "
                             f"({len(pairs)} seen: {', '.join(shown)}); write one query's output per file",
                             accepted="one window_start, window_end pair")
        if pairs:
            (a, b), = pairs
            try:
                got = window_bounds(a, b)
            except InputError as exc:  # the file's own columns, not --window
                raise InputError("usage", f"{name}: window_start / window_end: {exc.message}",
                                 accepted=exc.accepted) from None
            if window is not None and tuple(window) != got:
                raise InputError("window", f"--window {window[0]:%Y-%m-%dT%H:%M} {window[1]:%Y-%m-%dT%H:%M} "
                                 f"contradicts {name}'s own window {got[0]:%Y-%m-%dT%H:%M} .. "
                                 f"{got[1]:%Y-%m-%dT%H:%M}", accepted="the file's window, or no --window")
            window = got
        w0, w1 = window
        n0 = len(hourly)
        hourly = hourly[(hourly["hour"] >= w0) & (hourly["hour"] < w1)].reset_index(drop=True)
        # a charge period that starts inside the window may run past its end (the SQL explodes it hour by hour):
        # the review is of the window the file names, so those hours are left out, as with --window
        notes.append(f"hourly window {w0:%Y-%m-%d %H:%M} .. {w1:%Y-%m-%d %H:%M} UTC (the file's "
                     "window_start / window_end); hours the export covers without GPU rows are idle" +
                     (f"; {n0 - len(hourly)} GPU row(s) outside it left out" if n0 > len(hourly) else ""))
        c0, c1, cdays = cov
        if c0 is not None and not pd.isna(c0):
            c0, c1 = max(c0, w0), min(c1, w1)
            cdays = tuple(d for d in cdays if w0.floor("D").date() <= d < (w1 + pd.Timedelta(hours=23)).floor("D").date())
        return hourly, window, (c0, c1, cdays)
    w0, w1 = window
    n0 = len(hourly)
    hourly = hourly[(hourly["hour"] >= w0) & (hourly["hour"] < w1)].reset_index(drop=True)
    days = tuple(d.date() for d in pd.date_range(w0.floor("D"), w1 - pd.Timedelta(microseconds=1), freq="D"))
    notes.append(f"hourly window {w0:%Y-%m-%d %H:%M} .. {w1:%Y-%m-%d %H:%M} UTC (--window): every hour of it counts "
                 "as covered, hours without GPU rows as idle" +
                 (f"; {n0 - len(hourly)} GPU row(s) outside it left out" if n0 > len(hourly) else ""))
    return hourly, window, (w0.floor("h"), w1.ceil("h"), days)


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


def _notes(ctx: ReadContext, fmt: str, not_attrib: Counter, hourly: "pd.DataFrame") -> list[str]:
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
    if n["list_unusable"]:
        out.append(f"{n['list_unusable']} row(s) carry a list price (ListCost / ListUnitPrice) that is not a number "
                   "or is below 0: taken as no list price, so those lines' on-demand baseline is the catalog's (said "
                   "per line)")
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


def load_sql(name: str) -> str:
    """The text of ``providers/sql/<name>``. The files take their window and table as the engine's own parameters
    (Spark named markers ``:start`` / ``:end`` / ``:table`` / ``:sub_account_column``, BigQuery ``@start`` /
    ``@end``, Athena positional ``?`` execution parameters); each file's header says how to run it. Raises
    InputError (field ``sql``) for a name that is not one of the files."""
    f = SQL_DIR / name
    if f.parent != SQL_DIR or f.suffix != ".sql" or not f.is_file():
        raise InputError("sql", f"no warehouse SQL file {name!r}",
                         accepted=", ".join(sorted(x.name for x in SQL_DIR.glob("*.sql"))))
    return f.read_text(encoding="utf-8")
