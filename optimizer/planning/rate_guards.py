"""Two guards on the prices a plan is made from (issue 31, points 3 and 4).

* :func:`cap_estimated_commitments`: an ESTIMATED commitment rate (a reservation or savings-plan row whose ``source``
  starts with ``rule:``, ``gpuopt.kernel.records.is_estimated``) never undercuts a QUOTE. Where the offers a plan may
  use hold a quoted row of the same provider, GPU model, GPU count, pricing, payment and offering class, an
  estimated row's ratio to its own on-demand rate is raised to the lowest such quoted ratio, and its ``source`` says
  so (:data:`CAP_MARK`); :func:`capped_notes` names every capped row the plan buys. The snapshot's own rule
  (``providers.reserved_rules.derive_by_ratio``, sibling level) already derives such rows from the sibling's quotes;
  this guard holds for any offers table: a user's ``--catalog``, an import, a refresh.
  Why: Azure's confidential Standard_NCC40ads_H100_v5 was estimated at 0.64 / 0.44 of on-demand (the median of the
  Hopper quotes) where the identical Standard_NC40ads_H100_v5 is quoted at 0.75 / 0.55 (github.com/Jumbo2020/
  gpu_prices azure_gpu_prices.json, 2025-06-21); it won plans 17-25 % below what Azure charges.
* :func:`unpriced_options`: a purchase option the request names (``--pricing``) that no offer row in the plan's scope
  (its providers, regions and GPUs) has a rate for is said in the plan, with how to get rates, instead of the plan
  answering silently with the other options.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gpuopt.kernel.records import RESERVED_PRICING, SAVINGS_PLAN_TERM_HOURS

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

#: Pricing options that are a commitment (a term bought at a rate below on-demand): what the cap applies to.
COMMITMENT_PRICING: tuple[str, ...] = tuple(RESERVED_PRICING) + tuple(SAVINGS_PLAN_TERM_HOURS)

#: What a capped row's ``source`` says after the rule's own text: ``; capped at <q> x on-demand (estimated <e>): the
#: lowest quoted ratio of a same-GPU, same-count row, <type> <provider> <region>``.
CAP_MARK = "; capped at "

#: Ratios closer than this (a rounding of a 4-digit ratio) are equal: no cap.
RATIO_TOLERANCE = 1e-4


def cap_estimated_commitments(offers: "pd.DataFrame", reference: "pd.DataFrame | None" = None
                              ) -> tuple["pd.DataFrame", int]:
    """The offers with every estimated commitment rate raised to the lowest quoted ratio of its kind, and how many
    rows were raised.

    For a row ``e`` with ``source`` ``rule:...`` and pricing in :data:`COMMITMENT_PRICING`: ``r_e = usd_per_hour /
    on-demand usd_per_hour`` of the same provider, region and instance type; ``q = min r_o`` over the quoted rows
    ``o`` (not ``rule:``, not ``owned:``) of ``reference`` (default: ``offers``; the API passes the whole catalog,
    so that a quote outside the plan's regions still bounds an estimate) of the same provider, gpu_model,
    gpu_count and pricing (the term; any payment option and offering class: an estimate never undercuts the best
    quote of its term) that have an on-demand rate in it. Where ``r_e < q`` (by more than :data:`RATIO_TOLERANCE`):
    ``usd_per_hour = on-demand x q`` (USD per instance-hour, effective), ``upfront_usd`` and
    ``recurring_usd_per_hour`` scaled by the same factor (the payment's split is kept), and the ``source`` gets
    :data:`CAP_MARK` with both ratios and the quoted row's type and region. Rows without an on-demand rate, or with
    no quoted row of their kind, are kept as they are.

    Returns ``(offers, n)``: the same frame object when nothing is raised (n = 0), else a copy (categorical text
    columns stay categorical, ``attrs`` are kept).
    """
    import numpy as np
    import pandas as pd

    if offers is None or not len(offers) or "source" not in offers.columns:
        return offers, 0
    pricing = offers["pricing"].astype(str)
    source = offers["source"].astype(str)
    commit = pricing.isin(COMMITMENT_PRICING).to_numpy()
    estimated = source.str.startswith("rule:").to_numpy()
    if not (commit & estimated).any():
        return offers, 0

    def cols(frame, names):  # columns as plain lists (zip over them: 10x faster than to_dict on 7,000 rows)
        return [frame[c].astype(object).tolist() if c in frame.columns else [None] * len(frame) for c in names]

    def kind(p, g, n, pr, pay, cls) -> tuple:
        # across payment options and offering classes (a breaker's case: a no-upfront estimate at 0.43 x on-demand
        # passed beside an all-upfront quote at 0.75 of the same GPU): the best quote of the term bounds every
        # estimate of it, whatever it is paid with
        return str(p), str(g), round(float(n), 6), str(pr)

    kind_cols = ("provider", "gpu_model", "gpu_count", "pricing", "payment", "offering_class")
    cand = offers[commit & estimated]
    wanted = {(str(p), str(g)) for p, g in zip(*cols(cand, ("provider", "gpu_model")))}
    ref = offers if reference is None else reference
    if ref is not offers:
        ref_src = ref["source"].astype(str)
        ref_commit = ref["pricing"].astype(str).isin(COMMITMENT_PRICING).to_numpy()
        quoted = ref[ref_commit & ~ref_src.str.startswith("rule:").to_numpy()
                     & ~ref_src.str.startswith("owned:").to_numpy()]
    else:
        quoted = offers[commit & ~estimated & ~source.str.startswith("owned:").to_numpy()]
    quoted = quoted[[(str(p), str(g)) in wanted for p, g in zip(*cols(quoted, ("provider", "gpu_model")))]]
    if quoted.empty:
        return offers, 0
    types = {str(t) for t in quoted["instance_type"].astype(object)} | \
        {str(t) for t in cand["instance_type"].astype(object)}
    od: dict[tuple[str, str, str], float] = {}
    for frame in ((offers,) if ref is offers else (ref, offers)):
        od_rows = frame[(frame["pricing"].astype(str) == "on_demand").to_numpy()
                        & frame["instance_type"].astype(str).isin(types).to_numpy()]
        for p, r, t, u in zip(*cols(od_rows, ("provider", "region", "instance_type", "usd_per_hour"))):
            k = (str(p), str(r), str(t))
            od[k] = min(float(u), od.get(k, float("inf")))
    lowest: dict[tuple, tuple[float, str, str]] = {}
    for *kc, r, t, u in zip(*cols(quoted, kind_cols + ("region", "instance_type", "usd_per_hour"))):
        base = od.get((str(kc[0]), str(r), str(t)))
        if not base or base <= 0:
            continue
        ratio = float(u) / base
        k = kind(*kc)
        if k not in lowest or ratio < lowest[k][0]:
            lowest[k] = (ratio, str(t), str(r))
    changes: dict = {}
    for pos, *kc, r, t, u, up, rec, src in zip(np.flatnonzero(commit & estimated), *cols(cand, kind_cols + (
            "region", "instance_type", "usd_per_hour", "upfront_usd", "recurring_usd_per_hour", "source"))):
        q = lowest.get(kind(*kc))
        base = od.get((str(kc[0]), str(r), str(t)))
        if q is None or not base or base <= 0 or not float(u) > 0:
            continue
        ratio = float(u) / base
        if ratio >= q[0] - RATIO_TOLERANCE:
            continue
        new = round(base * q[0], 6)
        factor = new / float(u)
        changes[int(pos)] = (new, round(float(_num(up)) * factor, 2), round(float(_num(rec)) * factor, 6),
                        f"{src}{CAP_MARK}{q[0]:.4f} x on-demand (estimated {ratio:.4f}): the lowest quoted ratio of "
                        f"a same-GPU, same-count row, {q[1]} {kc[0]} {q[2]}")
    if not changes:
        return offers, 0
    out = offers.copy()
    pos = list(changes)
    for j, col in ((0, "usd_per_hour"), (1, "upfront_usd"), (2, "recurring_usd_per_hour")):
        values = out[col].to_numpy(dtype=float, copy=True)
        values[pos] = [changes[i][j] for i in pos]
        out[col] = pd.Series(values, index=out.index).astype(offers[col].dtype)
    text = out["source"].astype(object).to_numpy(copy=True)
    text[pos] = [changes[i][3] for i in pos]
    out["source"] = pd.Series(text, index=out.index).astype(
        "category" if str(offers["source"].dtype) == "category" else offers["source"].dtype)
    out.attrs = dict(offers.attrs)
    return out, len(changes)


def capped_notes(lines) -> list[str]:
    """A note for each plan line bought at a rate :func:`cap_estimated_commitments` raised, e.g.
    "Standard_NCC40ads_H100_v5 reserved_1y all_upfront (azure eastus2) is an estimate (rule:azure-1y-all_upfront)
    below a quote: planned at 0.7500 x on-demand (estimated 0.6400): the lowest quoted ratio of a same-GPU,
    same-count row, Standard_NC40ads_H100_v5 azure eastus"."""
    out, seen = [], set()
    for ln in lines:
        src = str(getattr(ln, "source", "") or "")
        if CAP_MARK not in src:
            continue
        key = (ln.provider, ln.region, ln.instance_type, ln.pricing, ln.payment)
        if key in seen:
            continue
        seen.add(key)
        what = f"{ln.instance_type} {ln.pricing}" + (f" {ln.payment}" if ln.payment else "")
        rule = src.split(" ", 1)[0].split(":", 2)
        rule_name = ":".join(rule[:2]) if len(rule) > 1 else rule[0]
        out.append(f"{what} ({ln.provider} {ln.region}) is an estimate ({rule_name}) that undercut a quote: planned at "
                   + src.split(CAP_MARK, 1)[1] + " (an estimated rate never undercuts a quoted one)")
    return out


#: Which providers sell each purchase option, and how to get its rates into the data (``gpuopt prices refresh``
#: options; pricing_cache/data/inputs/PRICES_README.md (d) for what the shipped snapshot lacks).
HOW_TO_GET: dict[str, str] = {
    "on_demand": "`gpuopt prices refresh` fetches on-demand rates",
    "spot": "`gpuopt prices refresh` fetches spot rates (AWS, Azure, GCP)",
    "reserved_1y": "reservations are sold by AWS, Azure and GCP (a committed use discount), not at a published price "
                   "by Lambda; `gpuopt prices refresh` fetches them",
    "reserved_3y": "reservations are sold by AWS, Azure and GCP (a committed use discount), not at a published price "
                   "by Lambda; `gpuopt prices refresh` fetches them",
    "savings_plan_1y": "`gpuopt prices refresh --savings-plans` fetches AWS Savings Plans rates, and Azure's savings "
                       "plan rates come with `gpuopt prices refresh --provider azure`; the shipped snapshot has none "
                       "(no stored source holds them: pricing_cache/data/inputs/PRICES_README.md (d))",
    "savings_plan_3y": "`gpuopt prices refresh --savings-plans` fetches AWS Savings Plans rates, and Azure's savings "
                       "plan rates come with `gpuopt prices refresh --provider azure`; the shipped snapshot has none "
                       "(no stored source holds them: pricing_cache/data/inputs/PRICES_README.md (d))",
    "capacity_block": "capacity blocks are sold by AWS only (EC2 Capacity Blocks for ML); the shipped snapshot has "
                      "AWS's published rates for p4d, p4de, p5, p5e, p5en and p6-b200 (A100, H100, H200, B200): "
                      "allow aws and one of those GPUs",
    "flex_start": "Flex-start is sold by GCP only; whole-instance rates come from `gpuopt prices refresh --provider "
                  "gcp` (the shipped snapshot has per-GPU component prices only)",
}

#: How a note names each option's rates.
_WORDS = {"on_demand": "on-demand", "spot": "spot", "reserved_1y": "1-year reservation",
          "reserved_3y": "3-year reservation", "savings_plan_1y": "1-year savings-plan",
          "savings_plan_3y": "3-year savings-plan", "capacity_block": "capacity-block", "flex_start": "Flex-start"}


def request_scope(plan) -> str:
    """The filters of a plan request that bound its offers, as options ("--provider aws --gpu H100-80GB"); ""
    when it has none."""
    parts = [f"--{opt} {','.join(map(str, getattr(plan, attr, None) or ()))}" for opt, attr in (
        ("provider", "providers"), ("region", "regions"), ("region-group", "region_group"), ("gpu", "gpus"),
        ("exclude-gpu", "exclude_gpus")) if getattr(plan, attr, None)]
    return " ".join(parts)


def unpriced_options(asked, offers: "pd.DataFrame", scope: str = "") -> list[str]:
    """One note per purchase option in ``asked`` (the request's ``--pricing``; empty: none asked, nothing said) that
    no row of ``offers`` (the plan's scope: the providers, regions and GPUs it allows) has a rate for, e.g.
    "no 1-year savings-plan rates in the data for --provider aws: --pricing savings_plan_1y buys nothing in this
    plan; `gpuopt prices refresh --savings-plans` ...". ``scope`` names the request's filters ("" for none)."""
    if not asked:
        return []
    have = set() if offers is None or not len(offers) else set(offers["pricing"].astype(str).unique())
    out = []
    for p in dict.fromkeys(str(a) for a in asked):
        if p in have:
            continue
        out.append(f"no {_WORDS.get(p, p)} rates in the data" + (f" for {scope}" if scope else "")
                   + f": --pricing {p} buys nothing in this plan; "
                   + HOW_TO_GET.get(p, "`gpuopt prices refresh` fetches current rates"))
    return out


def _num(v) -> float:
    """A number cell as a float, 0.0 for a missing value."""
    t = _text(v)
    return float(t) if t else 0.0


def _text(v) -> str:
    """A text cell as a string, "" for a missing value (NaN/None/<NA>)."""
    if v is None:
        return ""
    try:
        import pandas as pd

        if pd.isna(v):
            return ""
    except (TypeError, ValueError):
        pass
    return str(v)
