"""How old the prices are: each row's age from its own ``as_of``, per provider (newest, oldest, undated, the share of
rows by age bucket), the notes a plan carries for lines priced from old or undated quotes, and the oldest price a plan
depends on (issue 29: "prices status shows ages honestly").

Used by :mod:`gpuopt.api` (``prices_list``, ``prices_status``, ``recommend``, ``review``).
"""

from __future__ import annotations

import datetime as _dt
from typing import Any

from gpuopt.kernel.records import short_source

#: Age buckets of ``prices status`` (issue 29), days: the upper bound (exclusive) of each and its key; the rest
#: are ``365_days_or_more``; rows without a date are ``undated``.
AGE_BUCKETS = ((30, "under_30_days"), (90, "30_to_89_days"), (365, "90_to_364_days"))
OLDER = "365_days_or_more"
UNDATED = "undated"


def price_age_days(as_of: str | None, today: _dt.date | None = None) -> float | None:
    """Days from a price's ``as_of`` date (ISO, the first 10 characters read) to ``today`` (default: today); None
    when the date is missing or not a date ("unknown": a catalog row no dated source confirms)."""
    if not as_of:
        return None
    try:
        d = _dt.date.fromisoformat(str(as_of)[:10])
    except ValueError:
        return None
    return float(((today or _dt.date.today()) - d).days)


def old_quote_notes(lines, prices_on=None) -> list[str]:
    """A note for each plan line priced from a quote older than the price-age limit (GPUOPT_MAX_PRICE_AGE_DAYS,
    default 7) or of no known date (``as_of`` unknown), whatever the snapshot it came in: a fresh user was sold a $121,860 3-year p3 reservation priced from
    an ec2instances.info quote of 2017-11-12 under a header that said "aws as of 2026-11-30 or earlier". Not for a
    plan priced as of a past date (``prices_on``), whose quotes are meant to be old."""
    from pricing_cache.cache import max_age_days

    if prices_on:
        return []
    limit = max_age_days()
    out, seen = [], set()
    for ln in lines:
        as_of = str(getattr(ln, "as_of", None) or "")
        age = price_age_days(as_of)
        key = (ln.provider, ln.region, ln.instance_type, ln.pricing, ln.payment)
        undated = as_of == "unknown"  # a catalog row no dated source confirms (pricing_cache/build_snapshot.UNDATED)
        if str(getattr(ln, "source", "") or "").startswith("owned:"):
            continue  # an owned commitment: already paid, nothing to buy at a quote
        if key in seen or not (undated or (age is not None and age > limit)):
            continue
        seen.add(key)
        what = f"{ln.instance_type} {ln.pricing}" + (f" {ln.payment}" if ln.payment else "")
        src = str(getattr(ln, "source", "") or "").split(";", 1)[0]
        src = src if len(src) <= 60 else short_source(src)  # a user's "my quote" whole; a long rule text cut
        if undated:
            out.append(f"{what} ({ln.provider} {ln.region}) is priced from a catalog row whose date is not known"
                       + (f" ({src})" if src else "") + ": check the current price before buying")
            continue
        kind = "an estimate (by rule) dated" if str(getattr(ln, "source", "") or "").startswith("rule:") else \
            "a quote of"
        out.append(f"{what} ({ln.provider} {ln.region}) is priced from {kind} {str(ln.as_of)[:10]}, "
                   f"{age:,.0f} days old" + (f" ({src})" if src else "") + ": check the current price before buying")
    return out


def price_provenance(offers, info, catalog, prices_on=None) -> dict[str, Any]:
    """Where the prices came from and how old they are, per provider (from the rows' own as_of), with warnings:
    prices older than the limit (GPUOPT_MAX_PRICE_AGE_DAYS, default 7), corrupted cache snapshots skipped, and
    providers still on the shipped snapshot (whose dates are upper bounds)."""
    from pricing_cache.cache import max_age_days

    limit = max_age_days()
    origins = dict(getattr(info, "origins", {}) or {})
    warnings = list(getattr(info, "warnings", ()) or ())
    per = {}
    # a column at a time, then per provider from the distinct (provider, as_of) pairs (500,000 offers: 0.5 s -> less)
    rows_of = offers["provider"].value_counts(sort=False)
    rows_of = rows_of[rows_of > 0]  # a categorical column also counts its absent categories
    # .str on the column itself: a categorical maps its few categories (no 500,000 strings made)
    est_of = offers["source"].str.startswith("rule:", na=False).groupby(offers["provider"], observed=True).sum() \
        if "source" in offers.columns else {}
    # rows per distinct (provider, as_of): few pairs, counted once (categorical columns: no string made per row)
    pairs = offers.groupby(["provider", "as_of"], observed=True, sort=False).size()
    dates_of: dict[str, set] = {}
    undated_of: dict[str, int] = {}
    for (prov_, x), n in pairs.items():
        if not n:
            continue
        if str(x)[:4].isdigit():
            dates_of.setdefault(str(prov_), set()).add(str(x)[:10])
        else:  # "unknown": a catalog row no dated source confirms (pricing_cache/build_snapshot.UNDATED)
            undated_of[str(prov_)] = undated_of.get(str(prov_), 0) + int(n)
    for prov in sorted(rows_of.index, key=str):
        dates = sorted(dates_of.get(str(prov), ()))
        newest = dates[-1] if dates else None
        age = price_age_days(newest)
        origin = origins.get(str(prov), "user catalog" if catalog else "shipped snapshot")
        per[str(prov)] = {
            "rows": int(rows_of[prov]),
            "origin": origin,
            "as_of": newest,
            "oldest_as_of": dates[0] if dates else None,
            "age_days": age,
            "stale": bool(age is not None and age > limit),
            "estimated_rows": int(est_of.get(prov, 0)) if len(est_of) else 0,
            "undated_rows": undated_of.get(str(prov), 0),
        }
        oldest_age = price_age_days(dates[0] if dates else None)
        per[str(prov)]["oldest_age_days"] = oldest_age
        if oldest_age is not None and oldest_age > limit:
            per[str(prov)]["stale"] = True
        if prices_on is None and oldest_age is not None and oldest_age > limit and origin != "shipped snapshot":
            from providers.base import LIVE_ADAPTERS

            grp = offers[(offers["provider"] == prov).to_numpy()]
            n_old = int((grp["as_of"].str[:10].fillna("") <
                         (_dt.date.today() - _dt.timedelta(days=limit)).isoformat()).sum())
            fix = (f"run `gpuopt prices refresh --provider {prov}`" if str(prov) in LIVE_ADAPTERS
                   else "import newer prices with `gpuopt prices import`")
            what = "are" if n_old == len(grp) else f"include {n_old} of {len(grp)} offers"
            warnings.append(f"{prov} prices {what} older than {limit:g} days (oldest {dates[0]}, "
                            f"{oldest_age:.0f} days): {fix}")
    if not catalog and prices_on is None and any(v["origin"] == "shipped snapshot" for v in per.values()):
        shipped = sorted(p for p, v in per.items() if v["origin"] == "shipped snapshot")
        undated = sum(per[p]["undated_rows"] for p in shipped)
        warnings.append(f"{', '.join(shipped)}: prices from the shipped snapshot (each row dated by its source"
                        + (f"; {undated} catalog rows have no known date" if undated else "")
                        + ", see `gpuopt prices status`); `gpuopt prices refresh` fetches current ones")
    return {
        "catalog": str(catalog) if catalog else "shipped snapshot",
        "snapshot": getattr(info, "path", None) and str(info.path),
        "built_at": getattr(info, "built_at", None),
        "max_age_days": limit,
        "providers": per,
        "warnings": warnings,
    }


def age_bucket(as_of: str | None, today: _dt.date | None = None) -> str:
    """The :data:`AGE_BUCKETS` key of a price dated ``as_of`` (:data:`UNDATED` without a date)."""
    age = price_age_days(as_of, today)
    if age is None:
        return UNDATED
    for bound, key in AGE_BUCKETS:
        if age < bound:
            return key
    return OLDER


def rows_by_age(offers, today: _dt.date | None = None) -> dict[str, dict[str, int]]:
    """Per provider, rows per age bucket (:data:`AGE_BUCKETS`, :data:`OLDER`, :data:`UNDATED`; every key present,
    0 where none), from the distinct (provider, as_of) pairs of ``offers`` (a DataFrame with those columns)."""
    keys = [k for _, k in AGE_BUCKETS] + [OLDER, UNDATED]
    out: dict[str, dict[str, int]] = {}
    pairs = offers.groupby(["provider", "as_of"], observed=True, sort=False, dropna=False).size()
    for (prov, as_of), n in pairs.items():
        if not n:
            continue
        per = out.setdefault(str(prov), dict.fromkeys(keys, 0))
        per[age_bucket(None if as_of is None else str(as_of), today)] += int(n)
    return out


def oldest_price_note(lines, prices_on=None) -> str | None:
    """One note naming the oldest dated price the plan's ``lines`` depend on (provider, type, pricing, region, date,
    age, source) and how many lines are priced from undated catalog rows; None for a plan priced as of a past date,
    one without lines, or one whose lines are all owned commitments."""
    if prices_on:
        return None
    oldest, undated = None, 0
    for ln in lines:
        if str(getattr(ln, "source", "") or "").startswith("owned:"):
            continue
        as_of = str(getattr(ln, "as_of", None) or "")
        age = price_age_days(as_of)
        if age is None:
            undated += as_of == "unknown"
            continue
        if oldest is None or age > oldest[0]:
            oldest = (age, ln)
    if oldest is None and not undated:
        return None
    keys = {(ln.provider, ln.region, ln.instance_type, ln.pricing, getattr(ln, "payment", None)) for ln in lines
            if not str(getattr(ln, "source", "") or "").startswith("owned:")}
    if len(keys) < 2:
        return None  # one purchase: its own note (old_quote_notes) or its date already says it
    if oldest is None:
        return (f"no price this plan depends on has a known date: {undated} line{'s' if undated > 1 else ''} "
                "priced from catalog rows of no known date")
    text = "oldest price this plan depends on: "
    if oldest is not None:
        age, ln = oldest
        src = str(getattr(ln, "source", "") or "").split(";", 1)[0]
        src = src if len(src) <= 60 else short_source(src)
        what = f"{ln.instance_type} {ln.pricing}" + (f" {ln.payment}" if getattr(ln, "payment", None) else "")
        text += (f"{what} ({ln.provider} {ln.region}) as of {str(ln.as_of)[:10]}, {age:,.0f} days old"
                 + (f" ({src})" if src else ""))
    else:
        text += "none dated"
    if undated:
        text += f"; {undated} line{'s' if undated > 1 else ''} priced from catalog rows of no known date"
    return text
