"""Commitments the team already owns, in the plan (issue 26 point 7): counted as paid, so the plan buys only what
is missing.

An owned instance commitment (an AWS reserved instance, an Azure reservation, a GCP CUD counted in instances; read
by ``providers.owned``) becomes one offer row of its instance type at $0 an hour (:func:`owned_offers`, its
``source`` ``owned:<CommitmentDiscountId>``) and one slot of the model that is not bought but given: at most its
``count`` instances from the plan's first month for the whole months its term still covers
(:func:`owned_months`; a month covered only in part is not counted, the safe side). Workloads use it like any
reservation (the MILP's sharing rows), and pay nothing for it: its price was paid, or is owed, whatever the plan.
Because a $0 offer in limited supply breaks the dominance rules of pruning and the enumerations' "buy as many as you
like", a plan with owned commitments is planned by the MILP without pruning (optimizer.planning.problem_build).
"""

from __future__ import annotations

import datetime as _dt
from typing import TYPE_CHECKING, Any

from gpuopt.kernel.records import TERM_HOURS

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

    from providers.owned import OwnedCommitment

#: ``source`` prefix of an owned commitment's offer row.
OWNED_PREFIX = "owned:"


def owned_id(offer: Any) -> str:
    """The CommitmentDiscountId of an owned offer row (``source`` ``owned:<id>``), "" for any other row."""
    src = str(offer.get("source") or "") if hasattr(offer, "get") else ""
    return src[len(OWNED_PREFIX):] if src.startswith(OWNED_PREFIX) else ""


def owned_window(c: "OwnedCommitment", start: _dt.date, horizon_months: int) -> tuple[int, int]:
    """(first, end): the months of the horizon ``c``'s term covers entirely, ``first <= month < end`` (month 0 the
    horizon's first); (0, 0) when it covers none (ended, or starts after the horizon). A term that starts during
    the horizon (a breaker's RI from 2027-03) counts from its first whole month."""
    first = 0
    while first < horizon_months and not c.covers(first, start):
        first += 1
    end = first
    while end < horizon_months and c.covers(end, start):
        end += 1
    return (first, end) if end > first else (0, 0)


def owned_months(c: "OwnedCommitment", start: _dt.date, horizon_months: int) -> int:
    """Whole months of the horizon that ``c``'s term covers (:func:`owned_window`; 0 when none)."""
    first, end = owned_window(c, start, horizon_months)
    return end - first


def owned_offers(offers: "pd.DataFrame", owned: "list[OwnedCommitment]", catalog: "pd.DataFrame") -> "pd.DataFrame":
    """``offers`` with one $0 row per owned commitment whose instance type the ``catalog`` lists in its region (its
    hardware columns copied from that type's on-demand row, else any row of it). Raises nothing: a commitment of a
    type the catalog does not list is left out (``owned_notes`` says so)."""
    import pandas as pd

    from gpuopt.kernel.records import OFFER_COLUMNS, as_categories

    rows = []
    for c in owned:
        same = catalog[(catalog["provider"].astype(str) == c.provider) & (catalog["region"].astype(str) == c.region)
                       & (catalog["instance_type"].astype(str) == c.instance_type)]
        if same.empty:
            continue
        od = same[same["pricing"].astype(str) == "on_demand"]
        base = (od if not od.empty else same).iloc[0].to_dict()
        row = {k: base.get(k) for k in OFFER_COLUMNS if k in offers.columns}
        row.update(zone=c.zone or "", pricing=c.pricing, payment="", offering_class=c.offering_class or "",
                   upfront_usd=0.0, recurring_usd_per_hour=0.0, usd_per_hour=0.0,
                   term_hours=TERM_HOURS.get(c.pricing, 0.0), source=OWNED_PREFIX + c.commitment_discount_id,
                   as_of=str(base.get("as_of") or ""))
        rows.append(row)
    if not rows:
        return offers
    add = pd.DataFrame(rows)
    plain = offers.astype({k: "string" for k in offers.columns if str(offers[k].dtype) == "category"})
    out = pd.concat([plain, add.astype({k: plain[k].dtype for k in add.columns if k in plain.columns})],
                    ignore_index=True)
    return as_categories(out)


def owned_notes(owned: "list[OwnedCommitment]", used: dict[str, float], start: _dt.date,
                horizon_months: int) -> list[str]:
    """What the plan does with each owned commitment: reused (how many instances, how many months) or not."""
    out = []
    for c in owned:
        first, end = owned_window(c, start, horizon_months)
        n = used.get(c.commitment_discount_id, 0.0)
        if end == 0:
            out.append(f"owned {c.commitment_discount_id} ({c.count:g} x {c.instance_type} {c.region}): its term "
                       "covers no whole month of the plan (it ends before, or starts after): not counted")
        elif n > 0:
            out.append(f"owned {c.commitment_discount_id}: {n:g} of its {c.count:g} x {c.instance_type} "
                       f"({c.provider} {c.region}) reused for months {first + 1}-{end} (already paid: $0 in this "
                       "plan)")
        else:
            out.append(f"owned {c.commitment_discount_id} ({c.count:g} x {c.instance_type} {c.provider} {c.region}): "
                       "not used by these workloads (no replica or job of theirs fits it, or it is in another region)")
    return out
