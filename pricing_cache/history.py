"""Price history: what changed since a date (`gpuopt prices diff --since DATE`).

Compares the offers in effect on a past date (pricing_cache.store.load_offers(on_date=...)) with the current
offers, key by key (provider, region, zone, instance_type, pricing, payment).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import asdict, dataclass, field
from typing import Any

from gpuopt.kernel.errors import InputError

KEY = ["provider", "region", "zone", "instance_type", "pricing", "payment", "offering_class"]


@dataclass
class PriceDiff:
    """Changes between the offers in effect on ``since`` and now.

    Attributes: since (date), origins_then / origins_now (where each provider's rows came from), added / removed
    (offer keys with their usd_per_hour), changed (key, old and new usd_per_hour, change in percent), unchanged
    (count), warnings.
    """

    since: str
    origins_then: dict[str, str]
    origins_now: dict[str, str]
    added: list[dict[str, Any]] = field(default_factory=list)
    removed: list[dict[str, Any]] = field(default_factory=list)
    changed: list[dict[str, Any]] = field(default_factory=list)
    unchanged: int = 0
    warnings: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """The ``prices-diff`` document (gpuopt.schemas.PricesDiffDoc)."""
        from gpuopt.kernel.documents import envelope

        return envelope("prices-diff", asdict(self))

    def to_dataframe(self):
        """The changed, added and removed offers as one pandas DataFrame, with a ``change`` column."""
        from gpuopt.kernel.documents import frame

        return frame([{"change": kind, **r} for kind, rows in (("changed", self.changed), ("added", self.added),
                                                                ("removed", self.removed)) for r in rows],
                     ["change", "provider", "region", "zone", "instance_type", "pricing", "payment", "usd_per_hour",
                      "usd_per_hour_then", "usd_per_hour_now", "change_pct"])


def parse_date(value: str, field_name: str = "since") -> dt.date:
    """An ISO date (YYYY-MM-DD). Raises InputError naming the field."""
    try:
        return dt.date.fromisoformat(str(value).strip())
    except ValueError:
        raise InputError(field_name, f"not a date: {value!r}", accepted="YYYY-MM-DD") from None


def diff_since(since: str | dt.date, providers: list[str] | None = None) -> PriceDiff:
    """What changed in the prices between ``since`` (the newest snapshots created on or before that date) and now.

    Raises: InputError for a bad date, a date in the future, or an unknown provider.
    """
    import pandas as pd

    from pricing_cache.store import load_offers

    day = since if isinstance(since, dt.date) else parse_date(since)
    if day > dt.datetime.now(dt.timezone.utc).date():
        raise InputError("since", f"{day} is in the future")
    then, info_then = load_offers(on_date=day)
    now, info_now = load_offers()
    if providers:
        known = set(now["provider"].astype(str)) | set(then["provider"].astype(str))
        bad = [p for p in providers if p not in known]
        if bad:
            raise InputError("provider", f"unknown provider '{bad[0]}'", accepted=", ".join(sorted(known)))
        then = then[then["provider"].isin(providers)]
        now = now[now["provider"].isin(providers)]
    a = then[KEY + ["usd_per_hour"]].fillna({"zone": "", "payment": "", "offering_class": ""})
    b = now[KEY + ["usd_per_hour"]].fillna({"zone": "", "payment": "", "offering_class": ""})
    m = pd.merge(a, b, on=KEY, how="outer", suffixes=("_then", "_now"), indicator=True)
    out = PriceDiff(since=day.isoformat(), origins_then=dict(info_then.origins), origins_now=dict(info_now.origins),
                    warnings=list(info_then.warnings))
    for r in m.to_dict("records"):
        key = {k: r[k] for k in KEY}
        if r["_merge"] == "left_only":
            out.removed.append({**key, "usd_per_hour": r["usd_per_hour_then"]})
        elif r["_merge"] == "right_only":
            out.added.append({**key, "usd_per_hour": r["usd_per_hour_now"]})
        elif abs(r["usd_per_hour_now"] - r["usd_per_hour_then"]) > 1e-9:
            old, new = float(r["usd_per_hour_then"]), float(r["usd_per_hour_now"])
            out.changed.append({**key, "usd_per_hour_then": old, "usd_per_hour_now": new,
                                "change_pct": round(100.0 * (new - old) / old, 2) if old else None})
        else:
            out.unchanged += 1
    out.changed.sort(key=lambda c: -abs(c["change_pct"] or 0.0))
    if out.origins_then == out.origins_now:
        out.warnings.append(f"the same prices were in effect on {day} and now (no refresh in between)")
    return out
