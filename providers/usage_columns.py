"""Column helpers of the billing-export readers (``providers.usage``), vectorised over the distinct values of each
column: text, numbers and timestamps with the mask of cells that break the format; the first problem of each row; the
state one read shares across batches; the canonical row frame every format's reader builds and the identifiers kept
per row.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any, Callable

from providers.usage_source import NULL_STRINGS, Source

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

#: The first date a billing row may carry (see :func:`date_window`).
FIRST_DATE = "2000-01-01"
#: How many years after today a billing row's date may be.
MAX_YEARS_AHEAD = 2
#: Largest magnitude of a cost, price or quantity cell; beyond it (or not finite: inf, 1e400) the cell is not a
#: number, so that no sum overflows to infinity.
MAX_ABS_AMOUNT = 1e15
# ---------------------------------------------------------------------------------------------------------------
# Column helpers (vectorised over the unique values of each column)


def text_col(df: "pd.DataFrame", col: str | None) -> "pd.Series":
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


def as_object(s: "pd.Series") -> "pd.Series":
    """``s`` with object dtype (plain Python strings out of a categorical), for comparisons and ``where``."""
    return s.astype(object)


def map_unique(s: "pd.Series", fn: Callable[[Any], Any], dtype: Any = object, cat: bool = False) -> "pd.Series":
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


def map_pairs(a: "pd.Series", b: "pd.Series", fn: Callable[[str, str], Any]) -> "pd.Series":
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


def num_col(df: "pd.DataFrame", col: str | None) -> tuple["pd.Series", "pd.Series"]:
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
        t = as_object(text_col(df, col))
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


def window_why(label: str) -> str:
    """The reason of a bad row whose column ``label`` holds a date outside :func:`date_window`."""
    lo, hi = date_window()
    return f"{label} is outside the accepted dates {lo:%Y-%m-%d} .. {hi:%Y-%m-%d}"


def time_col(df: "pd.DataFrame", col: str | None, *, date_only: bool = False
        ) -> tuple["pd.Series", "pd.Series", "pd.Series"]:
    """(UTC timestamps, mask of non-empty cells that do not parse, mask of dates outside :func:`date_window`).
    Naive times are UTC; ISO 8601 with or without T/Z/offset, or with a trailing " UTC" (BigQuery's CSV export);
    MM/DD/YYYY (Azure). Dates outside the window are
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
    t = text_col(df, col)
    codes = t.cat.codes.to_numpy()
    u = pd.Index(list(t.cat.categories), dtype=object)
    parsed = pd.Series(pd.to_datetime(u, format="ISO8601", utc=True, errors="coerce")).astype("datetime64[us, UTC]")
    filled = np.asarray(u != "")
    miss = parsed.isna().to_numpy() & filled
    if miss.any():  # BigQuery's CSV export writes TIMESTAMP as '2024-09-01 00:00:00 UTC' (bq extract)
        bare = pd.Index(u[miss]).str.replace(r"\s+UTC$", "", regex=True)
        alt = pd.to_datetime(bare, format="ISO8601", utc=True, errors="coerce")
        parsed[miss] = pd.Series(alt).astype("datetime64[us, UTC]").to_numpy()
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


class Problems:
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
        return map_unique(s, lambda x: str(x).lower(), cat=True)

    def notes(self) -> list[str]:
        return [f"{col}: {n} row(s) say '{raw}' where the spec says '{want}'; values are compared case-insensitively"
                for (col, raw, want), n in sorted(self.seen.items())]


# ---------------------------------------------------------------------------------------------------------------
# Canonical rows

_CANON_COLS = ("rec", "provider", "region", "itype", "strong", "hint", "start", "end", "hours", "billed", "effective",
               "list", "pcat", "cid", "kind", "desc")


class ReadContext:
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
        #: hourly format: the distinct (window_start, window_end) pairs of the rows (UTC timestamps; NaT unparsed)
        self.windows: set = set()

    def is_gpu(self, provider: str, itype: str) -> bool:
        k = (provider, itype)
        v = self.gpu_cache.get(k)
        if v is None:
            v = bool(itype) and bool(self.is_gpu_fn(provider, itype))
            self.gpu_cache[k] = v
        return v


def canon_frame(n_index: Any, **cols: Any) -> "pd.DataFrame":
    """The canonical row frame of one batch (index ``n_index``, the batch's record numbers; one column per keyword:
    ``_CANON_COLS`` and more), which every format's reader returns."""
    import pandas as pd

    return pd.DataFrame(cols, index=n_index)


#: Identifier columns of ``UsageData.ids`` besides the key (FOCUS names, lower snake case).
ID_COLUMNS: tuple[str, ...] = ("billing_account_id", "billing_account_name", "sub_account_id", "sub_account_name",
                               "resource_id", "resource_name", "sku_id", "sku_price_id")
ID_FRAME_COLUMNS = tuple("id_" + c for c in ID_COLUMNS)

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


def add_ids(frame: "pd.DataFrame", df: "pd.DataFrame", src: "Source", fmt: str) -> None:
    """The export's identifiers of each row (``ID_COLUMNS``) as the frame's ``id_*`` columns ('' when absent)."""
    names = _ID_SOURCES["focus" if fmt.startswith("focus") else fmt]
    for col in ID_COLUMNS:
        found = next((c for c in (src.col(n) for n in names.get(col, ())) if c is not None), None)
        frame["id_" + col] = as_object(text_col(df, found))
