"""Helpers every importer shares: the result record, building the offer frame, the uniqueness invariant.

pandas is imported inside the functions, so importing a provider module stays cheap.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable

from gpuopt.kernel.errors import PriceDataError
from gpuopt.kernel.records import OFFER_COLUMNS, OFFER_DTYPES, SkippedRow

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

#: The columns that identify one offer; after normalization each key appears exactly once.
OFFER_KEY: tuple[str, ...] = ("provider", "region", "zone", "instance_type", "pricing", "payment", "offering_class")


@dataclass
class ParseResult:
    """What an importer returns.

    Attributes:
        offers: DataFrame with exactly ``OFFER_COLUMNS`` and ``OFFER_DTYPES``.
        skipped: rows not turned into offers, with their 1-based line (header = line 1) and reason.
        notes: corrections applied to rows that were kept (e.g. a GPU count fixed from a documented size table).
    """

    offers: "pd.DataFrame"
    skipped: list[SkippedRow] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def reason_code(reason: str) -> str:
    """The reason's code (``unknown_price`` in ``"unknown_price: empty Price"``)."""
    return str(reason).split(":", 1)[0].strip()


def read_text(text_or_path: "str | Path") -> tuple[str, str]:
    """(text, name): a ``Path`` or an existing file path is read by ``providers._input.read_text_file`` (UTF-8
    with or without a BOM, gzip decompressed; else InputError naming the file); any other string is the content."""
    from providers._input import read_text_file

    if isinstance(text_or_path, Path):
        return read_text_file(text_or_path), text_or_path.name
    s = str(text_or_path)
    if "\n" not in s and len(s) < 4096:
        try:
            p = Path(s)
            is_file = p.is_file()
        except (OSError, ValueError):  # a NUL or an over-long name: content, not a path
            is_file = False
        if is_file:
            return read_text_file(p), p.name
    return s.lstrip("\ufeff"), "<text>"


def empty_offers() -> "pd.DataFrame":
    import pandas as pd

    return pd.DataFrame({c: pd.Series([], dtype=OFFER_DTYPES[c]) for c in OFFER_COLUMNS})


def fill_facts(df: "pd.DataFrame") -> "pd.DataFrame":
    """The frame with ``fabric``, ``zone_kind`` and ``tier`` filled from the documented facts (providers/facts.py)
    wherever they are absent or empty: fabric_of(provider, instance_type), zone_kind_of(provider, region, zone) and
    tier_of(provider, instance_type). A value already given (a user's offers CSV naming its fabric or tier) is kept.
    Works on a copy; other columns and their order are untouched (the columns are appended when absent). The one
    place offers get these facts: importers through :func:`offers_frame`, the price store when it reads files
    written before schema 2 (all three) or schema 4 (``tier``).
    """
    import numpy as np
    import pandas as pd

    from providers.facts import fabric_of, tier_of, zone_kind_of

    df = df.copy()
    n = len(df)

    def text(col: str) -> np.ndarray:
        return df[col].astype(object).astype(str).to_numpy(dtype=object)

    def given(col: str) -> np.ndarray:
        """The column as stripped text; "" where absent, empty or NaN."""
        if col not in df.columns:
            return np.full(n, "", dtype=object)
        ser = df[col].astype(object)
        raw = ser.astype(str)
        bad = (ser.isna() | raw.isin(["<NA>", "nan"])).to_numpy()
        out = raw.str.strip().to_numpy(dtype=object)
        out[bad] = ""
        return out

    def facts(need: np.ndarray, keys: list[np.ndarray], fn) -> np.ndarray:
        """fn(*key) for the rows in need, computed once per distinct key."""
        idx = np.flatnonzero(need)
        out = np.full(len(idx), "", dtype=object)
        if len(idx):
            codes, uniq = pd.factorize(pd.MultiIndex.from_arrays([k[idx] for k in keys]))
            out = np.array([fn(*k) for k in uniq], dtype=object)[codes]
        return out

    prov, itype = text("provider"), text("instance_type")
    region, zone = given("region"), given("zone")
    fab, kind, tier = given("fabric"), given("zone_kind"), given("tier")
    need_f, need_z, need_t = fab == "", kind == "", tier == ""
    fab[need_f] = facts(need_f, [prov, itype], fabric_of)
    kind[need_z] = facts(need_z, [prov, region, zone], zone_kind_of)
    tier[need_t] = facts(need_t, [prov, itype], tier_of)
    df["fabric"] = fab
    df["zone_kind"] = kind
    df["tier"] = tier
    return df


def fill_offering_class(df: "pd.DataFrame") -> "pd.DataFrame":
    """The frame with ``offering_class`` (schema 3) where a row has none: ``records.default_offering_class``
    (``standard`` for an AWS reservation, "" otherwise). A frame without ``provider``/``pricing`` is returned as is;
    given values are kept; works on a copy when it changes anything."""
    from gpuopt.kernel.records import default_offering_class

    if "provider" not in df.columns or "pricing" not in df.columns:
        return df
    if "offering_class" in df.columns:
        col = df["offering_class"].astype(object)
        missing = (col.isna() | (col.astype(str).str.strip() == "")).to_numpy()
        if not missing.any():
            return df
    else:
        missing = None
    fill = [default_offering_class(p, q) for p, q in zip(df["provider"].astype(object), df["pricing"].astype(object))]
    df = df.copy()
    if missing is None:
        cols = list(df.columns)
        at = cols.index("payment") + 1 if "payment" in cols else len(cols)
        df.insert(at, "offering_class", fill)
    else:
        vals = df["offering_class"].astype(object).where(~missing, other=None).tolist()
        df["offering_class"] = [f if m else v for v, f, m in zip(vals, fill, missing)]
    return df


def offers_frame_from_columns(df: "pd.DataFrame") -> "pd.DataFrame":
    """:func:`offers_frame` of a DataFrame already built column by column (same checks, facts and dtypes)."""
    if "provider" in df.columns and "instance_type" in df.columns:
        df = fill_facts(df)
    df = fill_offering_class(df)
    missing = [c for c in OFFER_COLUMNS if c not in df.columns]
    extra = [c for c in df.columns if c not in OFFER_COLUMNS]
    if missing or extra:
        raise PriceDataError(f"offer rows have missing columns {missing} or unknown columns {extra}")
    df = df[list(OFFER_COLUMNS)]
    return df.astype(OFFER_DTYPES)


def offers_frame(rows: Iterable[dict[str, Any]]) -> "pd.DataFrame":
    """A DataFrame with exactly OFFER_COLUMNS in order and OFFER_DTYPES; missing float fields become NaN.

    ``fabric``, ``zone_kind`` and ``tier`` may be absent or empty in the rows: they are filled from the documented
    facts (:func:`fill_facts`), so every importer and live adapter gets them from one place.
    """
    import pandas as pd

    rows = list(rows)
    if not rows:
        return empty_offers()
    return offers_frame_from_columns(pd.DataFrame.from_records(rows))


def hourly_row(pricing: str, usd_per_hour: float, **kw: Any) -> dict[str, Any]:
    """An on-demand or spot offer dict: payment empty, no upfront, recurring = usd_per_hour, term 0."""
    price = float(usd_per_hour)
    return {**kw, "pricing": pricing, "payment": "", "upfront_usd": 0.0, "recurring_usd_per_hour": price,
            "usd_per_hour": price, "term_hours": 0.0}


def check_unique(df: "pd.DataFrame", what: str = "offers") -> None:
    """Raise PriceDataError unless ``groupby(OFFER_KEY).size() == 1`` for every key."""
    if df.empty:
        return
    sizes = df.groupby(list(OFFER_KEY), dropna=False).size()
    dup = sizes[sizes > 1]
    if len(dup):
        shown = "; ".join("/".join(str(x) for x in k) for k in dup.index[:5])
        raise PriceDataError(f"{what}: {len(dup)} offer key(s) appear more than once, e.g. {shown}")


def float_or_none(value: Any) -> float | None:
    """A float, or None for an empty/NaN/unparseable field (never 0 for a missing price)."""
    if value is None:
        return None
    s = str(value).strip()
    if not s or s.lower() in ("nan", "none", "null", "n/a", "na"):
        return None
    from gpuopt.kernel.inputs import parse_decimal

    try:
        f = parse_decimal(s)  # not float(): "1_8.5" is not 18.5 (issue 33)
    except ValueError:
        return None
    if f != f:  # NaN
        return None
    return f
