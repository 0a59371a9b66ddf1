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

An owned savings plan (AWS Compute or EC2 Instance Savings Plan, Azure savings plan: a spend per hour,
``usd_per_hour``) becomes one offer row per on-demand offer it covers (:func:`owned_plan_offers`), priced at the
savings-plan rate of that instance type when the price data has one, else at its on-demand rate, and one savings-plan
slot that is given, not bought: at most its USD/h in every hour of the months its term covers, at $0
(optimizer.planning.problem.PlanSlot ``given_usd_per_hour``). Instances run under it like under a bought savings
plan (the MILP's plan rows: their spend at these rates stays within the commitment); what does not fit is bought on
demand. Priced at on-demand rates, the commitment covers the least usage it can (a Savings Plans rate is at most the
On-Demand rate: AWS Savings Plans User Guide, "What are Savings Plans?"), so the plan's cost is never understated.
"""

from __future__ import annotations

import datetime as _dt
from typing import TYPE_CHECKING, Any

from gpuopt.kernel.records import SAVINGS_PLAN_TERM_HOURS, TERM_HOURS

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

    from providers.owned import OwnedCommitment

#: ``source`` prefix of an owned commitment's offer row.
OWNED_PREFIX = "owned:"


def owned_id(offer: Any) -> str:
    """The CommitmentDiscountId of an owned offer row (``source`` ``owned:<id>``), "" for any other row."""
    src = str(offer.get("source") or "") if hasattr(offer, "get") else ""
    return src[len(OWNED_PREFIX):] if src.startswith(OWNED_PREFIX) else ""


def owned_rows(offers: "pd.DataFrame") -> "pd.Series":
    """Boolean per row of ``offers``: the row is a commitment the team owns (``source`` ``owned:<id>``, as
    :func:`owned_offers` writes it). What is owned is never a purchase option ``--pricing`` rules out."""
    import pandas as pd

    if "source" not in offers.columns:
        return pd.Series(False, index=offers.index)
    return offers["source"].astype(str).str.startswith(OWNED_PREFIX)


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


def owned_offers(offers: "pd.DataFrame", owned: "list[OwnedCommitment]", catalog: "pd.DataFrame",
                 rate_notes: dict[str, str] | None = None) -> "pd.DataFrame":
    """``offers`` with one $0 row per owned commitment whose instance type the ``catalog`` lists in its region (its
    hardware columns copied from that type's on-demand row, else any row of it), and the rows of each owned savings
    plan (:func:`owned_plan_offers`: one per on-demand row of ``offers`` it covers). Raises nothing: a commitment of a
    type the catalog does not list is left out (``owned_notes`` says so). ``rate_notes`` (when given) gets, per
    owned savings plan id, a note on the rates its use is charged at (for the plan's notes when the plan uses it)."""
    import pandas as pd

    from gpuopt.kernel.records import OFFER_COLUMNS, as_categories

    rows = []
    for c in owned:
        if c.is_spend:
            continue  # a savings plan: owned_plan_offers
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
    plan_rows, basis = owned_plan_offers(offers, owned, catalog)
    rows += plan_rows
    if rate_notes is not None:
        rate_notes.update({cid: f"owned {cid}: its use is counted {how}" for cid, how in basis.items()})
    if not rows:
        return offers
    add = pd.DataFrame(rows)
    plain = offers.astype({k: "string" for k in offers.columns if str(offers[k].dtype) == "category"})
    out = pd.concat([plain, add.astype({k: plain[k].dtype for k in add.columns if k in plain.columns})],
                    ignore_index=True)
    return as_categories(out)


#: Savings-plan scope (AWS Savings Plans User Guide, "Savings Plans types"; Azure "What is Azure savings plan for
#: compute?"): an AWS Compute Savings Plan and an Azure savings plan cover every region and instance family of their
#: provider; an EC2 Instance Savings Plan one family (``instance_type`` of the commitment, "p5") in one region.
def plan_covers(c: "OwnedCommitment", provider: str, region: str, instance_type: str) -> bool:
    """True when owned savings plan ``c`` covers on-demand use of ``instance_type`` in ``provider`` ``region``."""
    if provider != c.provider:
        return False
    if (c.offering_class or "") == "ec2_instance":
        # AWS writes families in lower case ("g6e"); a file's "G6E" means the same family
        return region == c.region and instance_type.split(".")[0].lower() == (c.instance_type or "").split(".")[0].lower()
    return True


def owned_plan_offers(offers: "pd.DataFrame", owned: "list[OwnedCommitment]",
                      catalog: "pd.DataFrame") -> tuple[list[dict[str, Any]], dict[str, str]]:
    """Offer rows for the owned savings plans in ``owned``: one per on-demand row of ``offers`` each covers
    (:func:`plan_covers`), with ``pricing`` the plan's (``savings_plan_1y``/``_3y``), ``usd_per_hour`` the rate its
    use is charged against the commitment -- the ``catalog``'s savings-plan rate for that type, region and class
    (the highest of its payment options, the safe side, as an owned plan's payment is not known here), else the
    on-demand rate -- and ``source`` ``owned:<id>``. Returns (rows, id -> which rates were used, for the notes)."""
    spend = [c for c in owned if c.is_spend and c.usd_per_hour]
    if not spend:
        return [], {}
    from gpuopt.kernel.records import OFFER_COLUMNS

    od = offers[offers["pricing"].astype(str) == "on_demand"]
    sp = catalog[catalog["pricing"].astype(str).str.startswith("savings_plan")]
    rows: list[dict[str, Any]] = []
    basis: dict[str, str] = {}
    for c in spend:
        cls = c.offering_class or ("compute" if c.provider == "aws" else "")
        rates = sp[(sp["provider"].astype(str) == c.provider) & (sp["pricing"].astype(str) == c.pricing)]
        if cls and "offering_class" in rates.columns:
            rates = rates[rates["offering_class"].astype(str) == cls]
        best = {(str(r), str(t)): float(u) for r, t, u in
                rates.groupby(["region", "instance_type"], observed=True)["usd_per_hour"].max().reset_index()
                .itertuples(index=False)} if not rates.empty else {}
        n_sp = n_od = 0
        for o in od.to_dict("records"):
            prov, region, itype = str(o["provider"]), str(o["region"]), str(o["instance_type"])
            if not plan_covers(c, prov, region, itype):
                continue
            rate = best.get((region, itype))
            n_sp, n_od = n_sp + (rate is not None), n_od + (rate is None)
            row = {k: o.get(k) for k in OFFER_COLUMNS if k in offers.columns}
            u = float(rate if rate is not None else o["usd_per_hour"])
            row.update(pricing=c.pricing, payment="", offering_class=cls, upfront_usd=0.0,
                       recurring_usd_per_hour=u, usd_per_hour=u,
                       term_hours=SAVINGS_PLAN_TERM_HOURS.get(c.pricing, 0.0),
                       source=OWNED_PREFIX + c.commitment_discount_id)
            rows.append(row)
        basis[c.commitment_discount_id] = (
            "at on-demand rates (the price data has no savings-plan rate for the types it covers: the least it covers)"
            if not n_sp else f"at savings-plan rates for {n_sp} offers, on-demand rates for {n_od} (no rate in the "
            "price data)" if n_od else "at savings-plan rates")
    return rows, basis


def owned_notes(owned: "list[OwnedCommitment]", used: dict[str, float], start: _dt.date,
                horizon_months: int, job_hours: "list[tuple[str, str, str]] | None" = None) -> list[str]:
    """What the plan does with each owned commitment: reused (how many instances, how many months) or not.

    ``job_hours``: (provider, region, instance_type) of each offer the plan's training jobs run on demand. A savings
    plan no serving replica runs on is not "unused" when it covers one of them: the provider bills eligible usage
    under it first (AWS Savings Plans User Guide, "How Savings Plans apply to your AWS usage": applied automatically
    to eligible usage, the highest discount first),
    so the job's hours fall partly under it -- the plan counts them at on-demand (the model checks a plan's spend
    per hour; a job's unit-hours are an average over its window), a cost on the high side, said in the note."""
    out = []
    for c in owned:
        first, end = owned_window(c, start, horizon_months)
        n = used.get(c.commitment_discount_id, 0.0)
        if c.is_spend:  # a savings plan: its use is in the plan's purchase notes ("reuse: ...")
            what = f"owned {c.commitment_discount_id} ({c.provider} savings plan, {c.usd_per_hour or 0:g} USD/h)"
            if end == 0:
                out.append(f"{what}: its term covers no whole month of the plan: not counted")
            elif not n:
                jobs = sorted({t for p, r, t in (job_hours or []) if plan_covers(c, p, r, t)})
                if jobs:
                    out.append(f"{what}: no serving replica runs on it; the training jobs' on-demand hours on "
                               f"{', '.join(jobs)} are eligible and the provider bills them under it first in the "
                               "hours they run -- the plan counts them at on-demand (a job's hours are planned as "
                               "an average over its window, a savings plan is spend per hour), so its cost is on "
                               f"the high side: in each hour a job runs in the plan's term, up to "
                               f"{c.usd_per_hour or 0:g} USD of its use is already paid")
                else:
                    out.append(f"{what}: not used by these workloads (no replica or job of theirs runs on "
                               "instances it covers, or none runs cheaper on it)")
            continue
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
