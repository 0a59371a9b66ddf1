"""A plan as a report for people: Markdown or HTML with charts, plus the same data as CSV and JSON.

``render_report(result, "html" | "markdown", path)`` writes:

- ``path``: the report. Sections: Summary (what was planned, the horizon and the rules the plan was held to, the
  total over the horizon, the average per month, what is paid upfront, the commitments taken and when their terms
  end, savings against all on-demand, where the prices come from and how old they are), Plan (the lines: months,
  $/month, total, upfront, commitment, term end, replicas and their TP/PP layout), Strategy comparison (every
  strategy and this plan: total, $/month, upfront, commitment), Charts, Workloads, Constraints and notes, Prices.
  HTML embeds its charts as base64 PNG (``<img src="data:image/png;...">``); Markdown links PNG files written next
  to it (``<stem>_<chart>.png``).
- ``<stem>.csv`` next to it: the plan lines, one row per line (every field of the line).
- ``<stem>.json`` next to it: everything the report shows (``report_data(result)``), numbers unformatted.

The page comes from the shared templates (gpuopt/templating.py, gpuopt/templates/plan.*.j2), styled like the
review's report; key figures at the top: the total, the average month, the commitments owed over their terms, paid
upfront and paid each month, the savings against all on-demand. A price derived by a rule (an estimated offer) is
marked with a dagger and a footnote.

Charts (matplotlib, Agg canvas, imported only here and in gpuopt/charting.py; 1000 x 450 px, fonts of 11 pt and
more): total cost of the same demand by strategy; cash paid in each month of the horizon, months in calendar order
(hourly usage, commitment fees and upfronts stacked); demand against capacity per serving workload in time order
(``demand_timeline``: a panel per stretch of the horizon with its own blocks, in calendar order, each the hours of
its typical day or week in order); spend over the horizon by provider and by GPU model. The output is deterministic:
fixed figure sizes and DPI, no timestamps but the data's, no PNG software tag.
"""

from __future__ import annotations

import csv
import json
import math
from dataclasses import asdict, fields, is_dataclass
from pathlib import Path
from typing import Any

from gpuopt.charting import FIG_SIZE, FONT_PT, TITLE_PT, dollars, figure, png_bytes
from gpuopt.kernel.documents import VERSIONS
from gpuopt.kernel.records import HOURS_PER_MONTH, WINDOW_PRICING
from gpuopt.kernel.words import count_range, plural
from gpuopt.templating import (ESTIMATED_MARK, ESTIMATED_NOTE, UNPROVEN_MARK, UNPROVEN_NOTE, key_figure,
                               STRATEGY_LABELS, not_computed_hint, render, serving_split_text,
                               unproven_caveat)

FORMATS = ("html", "markdown")

SECTIONS = ("Summary", "Plan", "Strategy comparison", "Charts", "Workloads", "Constraints and notes", "Prices")

#: The ``kind`` of ``<stem>.json`` beside a report (gpuopt.schemas.ReportDataDoc, docs/schemas/report-data.schema.json).
REPORT_KIND = "report-data"
#: Statuses of a comparison that ran out of time (a longer --time-limit computes it), not of one without a plan.
_UNTIMED = ("not_computed", "not_solved")



# ------------------------------------------------------------------------------------------------- the data
def _usd(x: float | None) -> str:
    """$1,234.56; -$12.00; never "$-0.00" or "-$0.00"."""
    if x is None:
        return "—"
    if round(x, 2) == 0:
        return "$0.00"
    return f"-${-x:,.2f}" if x < 0 else f"${x:,.2f}"


def _pct(x: float | None) -> str:
    return "—" if x is None else f"{0.0 if round(x, 1) == 0 else x:.1f} %"


def _num(x: float | None, digits: int = 4) -> str:
    if x is None:
        return "—"
    return f"{x:,.{digits}f}".rstrip("0").rstrip(".") if isinstance(x, float) else f"{x:,}"


def _clean(o: Any) -> Any:
    if isinstance(o, float) and (math.isnan(o) or math.isinf(o)):
        return None
    if isinstance(o, float):
        return o + 0.0  # -0.0 -> 0.0
    if isinstance(o, dict):
        return {str(k): _clean(v) for k, v in o.items()}
    if isinstance(o, (list, tuple, set)):
        return [_clean(v) for v in (sorted(o) if isinstance(o, set) else o)]
    if hasattr(o, "item") and not isinstance(o, (str, bytes)):
        return o.item()
    return o


def month_label(start_month: str, month: int) -> str:
    """"YYYY-MM" of month ``month`` (1-based) of a horizon starting in ``start_month`` ("YYYY-MM"); "month N" when
    the start is unknown."""
    try:
        y, m = (int(x) for x in str(start_month).split("-")[:2])
    except ValueError:
        return f"month {month}"
    y, m = y + (m - 1 + month - 1) // 12, (m - 1 + month - 1) % 12 + 1
    return f"{y:04d}-{m:02d}"


def _months(a: int, b: int) -> str:
    return f"{a}" if a == b else f"{a}-{b}"


def _committed(ln) -> bool:
    return str(ln.pricing).startswith("reserved")


def cash_by_month(plan) -> list[dict[str, Any]]:
    """What the plan pays in each month of the horizon, from its lines: hourly usage (on-demand, spot), the recurring
    fees of the commitments that cover the month, and the upfronts of the commitments bought that month; ``total_usd``
    is the plan's own ``cash_by_month_usd`` (the same sum, unrounded before it is added up)."""
    H = int(plan.horizon_months or 1)
    plan_cash = list(plan.cash_by_month_usd or [])
    out = []
    for m in range(1, H + 1):
        hourly = recurring = upfront = 0.0
        for ln in plan.lines:
            if not (ln.start_month <= m <= ln.end_month):
                continue
            if _committed(ln):
                recurring += ln.monthly_usd
                upfront += ln.upfront_usd if m == ln.start_month else 0.0
            else:
                hourly += ln.monthly_usd
        total = plan_cash[m - 1] if m - 1 < len(plan_cash) else hourly + recurring + upfront
        out.append({"month": m, "label": month_label(plan.start_month, m), "hourly_usd": round(hourly, 2),
                    "recurring_usd": round(recurring, 2), "upfront_usd": round(upfront, 2),
                    "total_usd": round(total, 2)})
    return out


def report_data(result) -> dict[str, Any]:
    """Everything the report shows, as plain data (the JSON companion): the horizon and its rules, the money over the
    horizon (total, average per month, upfront, commitments, cash by month), lines, strategies, chart series,
    workloads, constraints, notes and the price provenance."""
    plan = getattr(result, "plan", result)
    H = int(getattr(plan, "horizon_months", 1) or 1)
    start = str(getattr(plan, "start_month", "") or "")
    lines = [asdict(ln) for ln in plan.lines]
    reserved = [ln for ln in plan.lines if _committed(ln)]
    termed = [ln for ln in plan.lines if float(ln.commitment_usd or 0.0) > 0 and ln.pricing not in WINDOW_PRICING]
    commitment = {"total_over_term_usd": float(plan.commitment_usd or 0.0),
                  "upfront_usd": float(plan.upfront_usd or 0.0),
                  "monthly_usd": round(sum(float(ln.monthly_usd) for ln in termed), 2),
                  "estimated": any(ln.estimated for ln in plan.lines if float(ln.commitment_usd or 0.0) > 0
                                   or float(ln.upfront_usd or 0.0) > 0),
                  "reserved_lines": len(reserved),
                  "reserved_instances": sum(int(ln.count) for ln in reserved),
                  "term_ends": sorted({ln.term_end for ln in reserved if ln.term_end}),
                  "after_horizon_usd": float(getattr(plan, "after_horizon_usd", 0.0) or 0.0),
                  "leftover_value": float(getattr(plan, "leftover_value", 0.0) or 0.0),
                  "leftover_credit_usd": float(getattr(plan, "leftover_credit_usd", 0.0) or 0.0)}
    limit = (getattr(result, "workload", None) or {}).get("time_limit_s")
    strategies = []
    for name, s in (plan.strategies or {}).items():
        note = s.get("note")
        if s.get("total_usd") is None and s.get("status") in _UNTIMED:  # why, and how to get it
            note = not_computed_hint(note or f"{s.get('status')}: no plan within the explanation's time", limit)
        strategies.append({"name": name, "label": STRATEGY_LABELS.get(name, name.replace("_", " ")),
                           "status": s.get("status"), "note": note, "gap": s.get("gap"),
                           "total_usd": s.get("total_usd"), "monthly_usd": s.get("monthly_usd"),
                           "upfront_usd": s.get("upfront_usd"), "commitment_usd": s.get("commitment_usd"),
                           "max_month_usd": s.get("max_month_usd"), "savings_usd": s.get("savings_usd"),
                           "savings_pct": s.get("savings_pct")})
    by_provider: dict[str, float] = {}
    by_gpu: dict[str, float] = {}
    for ln in plan.lines:
        by_provider[ln.provider] = round(by_provider.get(ln.provider, 0.0) + ln.total_usd, 2)
        by_gpu[ln.gpu_model] = round(by_gpu.get(ln.gpu_model, 0.0) + ln.total_usd, 2)
    prices = getattr(result, "prices", None) or {}
    gap = getattr(plan, "gap", None)
    data: dict[str, Any] = {
        "schema_version": VERSIONS[REPORT_KIND],
        "kind": REPORT_KIND,
        "title": "gpuopt plan",
        "headline": getattr(result, "headline", None) or "Plan",
        "workload_origin": getattr(result, "workload_origin", None),
        "status": plan.status,
        "proven_optimal": None if not plan.feasible else plan.status == "optimal",
        "gap": gap,
        "caveat": unproven_caveat(plan.status, gap, plan.total_usd, objective=getattr(plan, "objective", "cost"),
                                  time_limit_s=limit, strategies=plan.strategies),
        "feasible": bool(plan.feasible),
        "reason": getattr(plan, "reason", None),
        "horizon_months": H,
        "horizon_note": getattr(plan, "horizon_note", "") or "",
        "start_month": start,
        "end_month": month_label(start, H),
        "rules": list(getattr(plan, "rules", None) or []),
        "total_usd": float(plan.total_usd or 0.0),
        "monthly_usd": float(plan.monthly_usd or 0.0),
        "upfront_usd": float(plan.upfront_usd or 0.0),
        "commitment_usd": float(plan.commitment_usd or 0.0),
        "max_month_usd": float(getattr(plan, "max_month_usd", 0.0) or 0.0),
        "cash_by_month": cash_by_month(plan) if plan.feasible else [],
        "on_demand_total_usd": (plan.strategies or {}).get("all_on_demand", {}).get("total_usd"),
        "savings_vs_on_demand_usd": plan.savings_vs_on_demand_usd,
        "savings_vs_on_demand_pct": plan.savings_vs_on_demand_pct,
        "commitment": commitment,
        "objective": getattr(plan, "objective", "cost"),
        "value_usd": getattr(plan, "value_usd", None),
        "net_value_usd": getattr(plan, "net_value_usd", None),
        "roi": getattr(plan, "roi", None),
        "estimated_lines": sum(1 for ln in plan.lines if ln.estimated),
        "lines": lines,
        "strategies": strategies,
        "spend_by_provider": dict(sorted(by_provider.items(), key=lambda kv: (-kv[1], kv[0]))),
        "spend_by_gpu_model": dict(sorted(by_gpu.items(), key=lambda kv: (-kv[1], kv[0]))),
        "workloads": list(getattr(plan, "workloads", None) or []),
        "blocks": [{k: b.get(k) for k in ("label", "period", "months", "start_hour", "end_hour", "hours", "slots",
                                          "slot_labels", "grid_hours", "demand", "capacity")}
                   for b in (getattr(plan, "blocks", None) or [])],
        "binding": list(plan.binding or []),
        "notes": list(plan.notes or []),
        "prices": {"catalog": prices.get("catalog"), "snapshot_built_at": prices.get("built_at"),
                   "max_age_days": prices.get("max_age_days"), "providers": prices.get("providers") or {},
                   "warnings": list(prices.get("warnings") or [])},
    }
    data["demand_capacity"] = _demand_capacity(data)
    data["demand_timeline"] = _demand_timeline(data)
    return _clean(data)


def _demand_capacity(data) -> dict[str, Any] | None:
    """Demand and capacity of every serving workload, block by block in the planner's order; each block's label
    starts with the months of its period ("m1", "m2-12") when the horizon has several periods."""
    blocks = data["blocks"]
    serving = [w["name"] for w in data["workloads"] if "peak_demand" in w]
    if not blocks or not serving:
        return None
    first = _first_months(blocks)
    several = len(first) > 1
    labels = []
    for b in blocks:
        a = first[int(b.get("period") or 0)]
        prefix = f"m{_months(a, a + int(b.get('months') or 1) - 1)} " if several else ""
        labels.append(prefix + str(b["label"]))
    return {"kind": "blocks", "unit": "tokens/s", "labels": labels,
            "series": {w: {"demand": [float((b["demand"] or {}).get(w, 0.0)) for b in blocks],
                           "capacity": [float((b["capacity"] or {}).get(w, 0.0)) for b in blocks]}
                       for w in serving}}


def _first_months(blocks) -> dict[int, int]:
    """1-based first month of the horizon of each period, in the planner's period order."""
    first: dict[int, int] = {}
    m = 1
    for b in blocks:
        p = int(b.get("period") or 0)
        if p not in first:
            first[p] = m
            m += int(b.get("months") or 1)
    return first


def _slot_tick(label: str) -> str:
    """A short x tick of a grid block's label: "09:00-10:00" -> "09:00", "Mon 09:00 (3 h)" -> "Mon 09:00"."""
    return str(label).split(" (")[0].split("-")[0]


def _demand_timeline(data) -> dict[str, Any] | None:
    """Demand and planned capacity of every serving workload in time order, for the chart: one panel per stretch of
    the horizon that has its own blocks (a period of alike months, cut at the training deadlines inside its month),
    panels in calendar order, each titled with its months ("2027-01", "2027-02 to 2027-12") and, when the month is
    cut, its days; inside a panel the blocks of the demand grid in time order (hours of the typical day or week, or
    the stretches of a calendar month), each with the demand and capacity of the merged block it belongs to.
    Blocks without their grid (``slots``) are shown one point each, in the planner's order."""
    blocks = data["blocks"]
    serving = [w["name"] for w in data["workloads"] if "peak_demand" in w]
    if not blocks or not serving:
        return None
    first = _first_months(blocks)
    start = data.get("start_month") or ""
    panels: dict[tuple, dict[str, Any]] = {}
    for i, b in enumerate(blocks):
        p = int(b.get("period") or 0)
        calendar = b.get("grid_hours") == 730
        a = 0.0 if calendar else float(b.get("start_hour") or 0.0)
        e = HOURS_PER_MONTH if calendar else float(b.get("end_hour") if b.get("end_hour") is not None else -1.0)
        key = (first[p], a, e)  # e -1: a block without its end (a plan from before the grid was kept)
        if key not in panels:
            m0, n = first[p], int(b.get("months") or 1)
            months = month_label(start, m0) if n == 1 else f"{month_label(start, m0)} to {month_label(start, m0 + n - 1)}"
            if e >= 0 and (a > 0 or e < HOURS_PER_MONTH - 1e-6):
                d0, d1 = round(a / 24) + 1, round(e / 24)
                months += (f", days {d0}-{d1}" if e < HOURS_PER_MONTH - 1e-6 else f", day {d0} to month end")
            panels[key] = {"title": months, "grid_hours": b.get("grid_hours"), "points": {}}
        slots = b.get("slots") or []
        labels = b.get("slot_labels") or []
        if not slots:  # no grid: the block itself, after those already there
            slots, labels = [10 ** 6 + i], [str(b["label"])]
        for j, lb in zip(slots, labels):
            pts = panels[key]["points"]
            cap = {w: float((b["capacity"] or {}).get(w, 0.0)) for w in serving}
            if j in pts:  # a calendar grid block cut by a deadline: show the smaller capacity of its two parts
                cap = {w: min(cap[w], pts[j]["capacity"][w]) for w in serving}
            pts[j] = {"label": lb, "demand": {w: float((b["demand"] or {}).get(w, 0.0)) for w in serving},
                      "capacity": cap}
    out = []
    for key in sorted(panels):
        pl = panels[key]
        pts = [pl["points"][j] for j in sorted(pl["points"])]
        out.append({"title": pl["title"], "grid_hours": pl["grid_hours"], "labels": [q["label"] for q in pts],
                    "series": {w: {"demand": [q["demand"][w] for q in pts], "capacity": [q["capacity"][w] for q in pts]}
                               for w in serving}})
    return {"unit": "tokens/s", "workloads": serving, "panels": out}


# ---------------------------------------------------------------------------------------------------- charts
def _hbars(title: str, labels: list[str], values: list[float], highlight: set[int] | None = None) -> bytes:
    from matplotlib.ticker import FuncFormatter

    fig = figure()
    ax = fig.add_subplot(1, 1, 1)
    ys = list(range(len(labels)))[::-1]
    colors = ["#d95f02" if highlight and i in highlight else "#1b9e77" for i in range(len(labels))]
    ax.barh(ys, values, color=colors)
    ax.set_yticks(ys, labels=labels, fontsize=FONT_PT)
    top = max(values) if values else 0.0
    for y, v in zip(ys, values):
        ax.text(v + top * 0.01, y, dollars(v), va="center", fontsize=FONT_PT)
    ax.set_xlim(0, top * 1.25 if top > 0 else 1)
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: dollars(v)))
    ax.tick_params(axis="x", labelsize=FONT_PT)
    ax.set_title(title, fontsize=TITLE_PT)
    return png_bytes(fig)


def _chart_strategies(data) -> bytes | None:
    rows = [s for s in data["strategies"] if s.get("total_usd") is not None]
    if not rows:
        return None
    labels = [s["label"] for s in rows]
    values = [float(s["total_usd"]) for s in rows]
    hi = {i for i, s in enumerate(rows) if s["name"] == "this_plan"}
    return _hbars(f"Cost by strategy (USD over {data['horizon_months']} months)", labels, values, hi)


def _chart_cash(data) -> bytes | None:
    """Cash paid in each month of the horizon, in calendar order ("YYYY-MM"): hourly usage, commitment fees and
    upfronts, stacked."""
    from matplotlib.ticker import FuncFormatter

    cash = data.get("cash_by_month") or []
    if not cash:
        return None
    fig = figure()
    ax = fig.add_subplot(1, 1, 1)
    xs = list(range(len(cash)))
    bottom = [0.0] * len(cash)
    for key, label, color in (("hourly_usd", "hourly usage", "#1b9e77"),
                              ("recurring_usd", "commitment fees", "#7570b3"),
                              ("upfront_usd", "upfront", "#d95f02")):
        vals = [float(c[key]) for c in cash]
        if any(vals):
            ax.bar(xs, vals, bottom=bottom, color=color, width=0.7, label=label)
            bottom = [b + v for b, v in zip(bottom, vals)]
    step = max(1, math.ceil(len(xs) / 12))
    ax.set_xticks(xs[::step], labels=[c["label"] for c in cash][::step], rotation=45 if len(xs) > 6 else 0,
                  ha="right" if len(xs) > 6 else "center", fontsize=FONT_PT)
    ax.set_xlabel("month", fontsize=FONT_PT)
    top = max(bottom) if bottom else 0.0
    ax.set_ylim(0, top * 1.2 if top > 0 else 1)
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: dollars(v)))
    ax.tick_params(axis="y", labelsize=FONT_PT)
    ax.legend(fontsize=FONT_PT, loc="upper right", ncol=3)
    ax.set_title("Cash paid by month (USD)", fontsize=TITLE_PT)
    return png_bytes(fig)


_PALETTE = ["#1b9e77", "#d95f02", "#7570b3", "#e7298a", "#66a61e", "#e6ab02"]


def _ticks(panel) -> tuple[list[int], list[str]]:
    """Up to 5 x ticks of a panel: every 6 hours of a day, every other day of a week, else evenly spaced."""
    n = len(panel["labels"])
    step = {24: 6, 168: 48}.get(panel.get("grid_hours") or 0) if n == panel.get("grid_hours") else None
    step = step or max(1, math.ceil(n / 5))
    xs = list(range(0, n, step))
    return xs, [_slot_tick(panel["labels"][x]) for x in xs]


def _chart_demand(data) -> bytes | None:
    """Demand (dashed) against planned capacity (solid) of each serving workload in time order: one panel per
    stretch of the horizon with its own blocks (panels in calendar order, up to 4 a row); flat demands (one block
    per panel) as bars per stretch."""
    tl = data.get("demand_timeline")
    if not tl or not tl["panels"]:
        return None
    panels, names = tl["panels"], tl["workloads"]
    if all(len(p["labels"]) == 1 for p in panels):  # flat demand: bars per stretch, in calendar order
        fig = figure()
        ax = fig.add_subplot(1, 1, 1)
        xs = list(range(len(panels)))
        width = 0.8 / (2 * len(names))
        for i, w in enumerate(names):
            for j, (key, alpha) in enumerate((("demand", 0.45), ("capacity", 1.0))):
                off = (2 * i + j + 0.5) * width - 0.4
                vals = [p["series"][w][key][0] for p in panels]
                ax.bar([x + off for x in xs], vals, width=width, color=_PALETTE[i % len(_PALETTE)], alpha=alpha,
                       label=f"{w} {key}")
                for x, v in zip(xs, vals):
                    ax.text(x + off, v, f"{v:,.0f}", ha="center", va="bottom", fontsize=FONT_PT)
        ax.set_xticks(xs, labels=[p["title"] for p in panels], fontsize=FONT_PT,
                      rotation=20 if len(xs) > 3 else 0, ha="right" if len(xs) > 3 else "center")
        top = max((v for p in panels for w in names for k in ("demand", "capacity") for v in p["series"][w][k]),
                  default=0.0)
        ax.set_ylim(0, top * 1.25 if top > 0 else 1)
        ax.set_ylabel(tl["unit"], fontsize=FONT_PT)
        ax.tick_params(axis="y", labelsize=FONT_PT)
        ax.legend(fontsize=FONT_PT, loc="upper right", ncol=2)
        ax.set_title("Demand and planned capacity (flat demand)", fontsize=TITLE_PT)
        return png_bytes(fig)
    cols = min(4, len(panels))
    rows = math.ceil(len(panels) / cols)
    fig = figure((FIG_SIZE[0], FIG_SIZE[1] * rows))
    axes = fig.subplots(rows, cols, sharey=True, squeeze=False)
    top = max((v for p in panels for w in names for k in ("demand", "capacity") for v in p["series"][w][k]),
              default=0.0)
    for k, ax in enumerate(axes.flat):
        if k >= len(panels):
            ax.set_visible(False)
            continue
        p = panels[k]
        xs = list(range(len(p["labels"]) + 1))  # a step per grid block, closed at its end
        for i, w in enumerate(names):
            color = _PALETTE[i % len(_PALETTE)]
            s = p["series"][w]
            ax.step(xs, s["capacity"] + s["capacity"][-1:], where="post", color=color, linewidth=2.2,
                    label=f"{w} capacity" if k == 0 else None)
            ax.step(xs, s["demand"] + s["demand"][-1:], where="post", color=color, linewidth=1.6, linestyle="--",
                    label=f"{w} demand" if k == 0 else None)
        tx, tl_ = _ticks(p)
        ax.set_xticks(tx, labels=tl_, fontsize=FONT_PT)
        ax.set_xlim(0, len(p["labels"]))
        ax.set_ylim(0, top * 1.15 if top > 0 else 1)
        ax.tick_params(axis="y", labelsize=FONT_PT)
        ax.set_title(p["title"], fontsize=FONT_PT)
        ax.grid(axis="y", alpha=0.3)
        if k % cols == 0:
            ax.set_ylabel(tl["unit"], fontsize=FONT_PT)
    unit = {24: "by hour of the day (UTC)", 168: "by hour of the week (UTC)"}.get(panels[0].get("grid_hours") or 0,
                                                                                "through the month")
    fig.suptitle(f"Demand and planned capacity {unit}, in time order", fontsize=TITLE_PT)
    fig.legend(loc="outside lower center", ncol=min(6, 2 * len(names)), fontsize=FONT_PT)
    return png_bytes(fig)


def _chart_spend(data, key: str, title: str) -> bytes | None:
    spend = data[key]
    if not spend:
        return None
    return _hbars(title, list(spend), list(spend.values()))


def charts(data: dict[str, Any]) -> list[tuple[str, str, bytes]]:
    """(name, caption, PNG bytes) of the report's charts, in order; charts without data are left out."""
    H = data["horizon_months"]
    over = f"over the {H}-month horizon"
    out = []
    for name, caption, png in (
            ("cost_by_strategy", f"Total cost of the same demand by strategy, {over}", _chart_strategies(data)),
            ("cash_by_month", f"Cash paid in each month from {data['start_month'] or 'the first month'}: hourly usage, "
                              "commitment fees and upfronts", _chart_cash(data)),
            ("demand_capacity", "Demand against planned capacity in time order: the typical day (or week, or month) "
                                "of each stretch of the horizon with its own plan, stretches in calendar order "
                                "(a month is cut at training deadlines)", _chart_demand(data)),
            ("spend_by_provider", f"Spend by provider, {over}",
             _chart_spend(data, "spend_by_provider", f"Spend by provider (USD over {H} months)")),
            ("spend_by_gpu_model", f"Spend by GPU model, {over}",
             _chart_spend(data, "spend_by_gpu_model", f"Spend by GPU model (USD over {H} months)"))):
        if png is not None:
            out.append((name, caption, png))
    return out


# ----------------------------------------------------------------------------------------------------- tables
def _layout(ln: dict) -> str:
    """A line's replica layout; serving lines add the precision, batch, TTFT and TPOT (issue 10)."""
    out = f"TP{ln.get('tensor_parallel') or 1} PP{ln.get('pipeline_parallel') or 1}"
    if ln.get("precision"):
        out += f" {ln['precision']}"
        if ln.get("ttft_ms") is not None and ln.get("tpot_ms") is not None:
            out += f", batch {ln.get('batch')}, TTFT {ln['ttft_ms']:,.0f} ms, TPOT {ln['tpot_ms']:,.1f} ms"
    return out


def _line_table(data) -> tuple[list[str], list[list[str]]]:
    head = ["provider", "region", "instance type", "pricing", "payment", "count", "months", "hours/month each",
            "$/h each", "$/month", "total", "upfront", "commitment", "term ends", "GPUs each", "replicas", "TP/PP",
            "workloads", "used", "break-even"]
    rows = []
    for ln in data["lines"]:
        be = ln.get("break_even_utilization")
        util = ln.get("utilization")
        committed = str(ln["pricing"]).startswith("reserved")
        rows.append([
            ln["provider"], ln["region"] + (f"/{ln['zone']}" if ln.get("zone") else ""), ln["instance_type"],
            ln["pricing"], ln.get("payment") or "—", str(ln["count"]), _months(ln["start_month"], ln["end_month"]),
            f"{ln['hours']:g}", f"{ln['usd_per_hour']:,.4f}" + (ESTIMATED_MARK if ln.get("estimated") else ""),
            _usd(ln["monthly_usd"]), _usd(ln["total_usd"]),
            _usd(ln["upfront_usd"]) if ln.get("upfront_usd") else "—",
            _usd(ln["commitment_usd"]) if committed else "—", (ln.get("term_end") or "—") if committed else "—",
            f"{ln['gpu_count']:g} x {ln['gpu_model']}", str(ln.get("replicas", "")), _layout(ln),
            ", ".join(ln.get("workloads") or []), "—" if util is None else f"{100 * util:.0f} %",
            "—" if be is None else f"{100 * be:.0f} %"])
    return head, rows


def _strategy_table(data) -> tuple[list[str], list[list[str]]]:
    head = ["strategy", "total", "$/month", "upfront", "commitment", "most in a month", "savings vs all on-demand"]
    rows = []
    mark = _unproven_mark(data)
    for s in data["strategies"]:
        if s.get("total_usd") is None:
            note, status = str(s.get("note") or ""), str(s.get("status") or "—")
            note = note.removeprefix(status.replace("_", " ") + ": ")  # "not_computed: not computed: ..." once
            why = status + (f": {note}" if note else "")
            rows.append([s["label"], why, "—", "—", "—", "—", "—"])
            continue
        label = s["label"] + (f" (not proven: gap {100 * (s.get('gap') or 0.0):.3g} %)"
                              if s.get("status") == "time_limit" else "")
        sav = "—" if s.get("savings_usd") is None else f"{_usd(s['savings_usd'])} ({_pct(s.get('savings_pct'))})"
        if s["name"] == "this_plan" or s.get("status") == "time_limit":  # totals that rest on an unproven solve
            m = mark if s["name"] == "this_plan" else UNPROVEN_MARK
            rows.append([label, _usd(s["total_usd"]) + m, _usd(s.get("monthly_usd")) + m,
                         _usd(s.get("upfront_usd") or 0.0), _usd(s.get("commitment_usd") or 0.0),
                         _usd(s.get("max_month_usd")) + m, sav + (m if sav != "—" else "")])
            continue
        rows.append([label, _usd(s["total_usd"]), _usd(s.get("monthly_usd")), _usd(s.get("upfront_usd") or 0.0),
                     _usd(s.get("commitment_usd") or 0.0), _usd(s.get("max_month_usd")), sav])
    return head, rows


def _workload_table(data) -> tuple[list[str], list[list[str]]]:
    head = ["workload", "task", "model", "months", "needs", "planned", "replica"]
    rows = []
    H = data["horizon_months"]
    for w in data["workloads"]:
        rep = "; ".join(f"{s['gpu_shape'].split(' (')[0]}: {plural(s['gpus_per_replica'], 'GPU')}, "
                        + (f"per-GPU speed of a job of {s['job_gpus']:,} GPUs: {s['layout_text']}, MFU "
                           f"{100 * s['mfu']:.0f} %, goodput "
                           f"{100 * s['goodput']:.1f} %" + (f", {s['wall_hours_at_job_gpus']:,.0f} h wall"
                                                             if s.get("wall_hours_at_job_gpus") else "")
                           if s.get("layout_text") else
                           f"TP{s.get('tensor_parallel', 1)} PP{s.get('pipeline_parallel', 1)}"
                           + serving_split_text(s))
                        for s in (w.get("sizing") or [])[:2])
        if "work_flops_needed" in w:
            rows.append([w["name"], w["task"], w["model"], f"from {w.get('start_month', 1)}",
                         f"{w['work_flops_needed']:.3g} FLOPs within {w['deadline_hours']:g} h",
                         f"{w['work_flops_planned']:.3g} FLOPs, done by hour {w['finish_by_hour']:g}", rep])
        else:
            rr = w.get("replicas_min_max") or [0, 0]
            rows.append([w["name"], w["task"], w["model"], _months(w.get("start_month", 1), w.get("end_month", H)),
                         f"peak {w['peak_demand']:,.1f} tokens/s, at least {plural(w['min_replicas'], 'replica')}",
                         count_range(rr[0], rr[1], "replica")
                         + (f", {plural(w['blocks_short'], 'block')} short" if w.get("blocks_short") else ""),
                         rep])
    return head, rows


def _price_table(data) -> tuple[list[str], list[list[str]]]:
    # the plan's counts are of the offers it may use (its providers, regions, GPUs and zones: 823 undated AWS rows
    # where `gpuopt prices status`, counting every row, says 832); the headings say so
    head = ["provider", "prices from", "newest price", "oldest price", "age (days)",
            "undated (of the offers this plan may use)", "estimated (of the same)", "stale"]
    rows = []
    for prov, p in sorted((data["prices"].get("providers") or {}).items()):
        origin = str(p.get("origin") or data["prices"].get("catalog") or "")
        age, oldest = p.get("age_days"), p.get("oldest_age_days")
        ages = "—" if age is None else (f"{age:.0f}" if oldest is None or round(oldest) == round(age)
                                        else f"{age:.0f}-{oldest:.0f}")
        rows.append([prov, origin, p.get("as_of") or "unknown", p.get("oldest_as_of") or "—", ages,
                     f"{p.get('undated_rows', 0)} of {p.get('rows', 0)}",
                     f"{p.get('estimated_rows', 0)} of {p.get('rows', 0)}", "yes" if p.get("stale") else "no"])
    return head, rows


def _horizon(data) -> str:
    H = data["horizon_months"]
    span = f"{data['start_month']} to {data['end_month']}" if data.get("start_month") else f"months 1-{H}"
    return f"{H} month{'s' if H != 1 else ''}, {span}"


def _unproven_mark(data) -> str:
    """UNPROVEN_MARK when the plan is not proven optimal (its figures rest on a time-limited solve), else ""."""
    return UNPROVEN_MARK if data.get("caveat") else ""


def _summary(data) -> list[str]:
    """The summary as sentences (plain text; the renderers escape them)."""
    out = [data["headline"]]
    if data.get("workload_origin") and str(data["workload_origin"]) not in str(data["headline"]):
        out.append(f"Workload from {data['workload_origin']}.")
    out.append(f"Horizon: {_horizon(data)}.")
    out += [f"Rule: {r}." for r in data.get("rules") or []]
    if not data["feasible"]:
        reason = data.get("reason") or {}
        head = "Not solved within the limit" if data["status"] == "not_solved" else "No plan"  # no proof (issue 33)
        out.append(f"{head}: {reason.get('message', data['status'])}")
        return out
    u = _unproven_mark(data)
    out.append(f"Status: {data['status']}" + (f" (not proven optimal, gap {100 * (data.get('gap') or 0.0):.3g} %)"
                                              if u else "")
               + f". Total over the horizon: {_usd(data['total_usd'])}{u}; average "
               f"{_usd(data['monthly_usd'])}{u} per month; the most paid in one month {_usd(data['max_month_usd'])}{u}.")
    out.append(f"Upfront: {_usd(data['upfront_usd'])}" + (" (paid in the month each commitment starts)."
                                                           if data["upfront_usd"] else " (nothing paid upfront)."))
    c = data["commitment"]
    if c["reserved_lines"]:
        text = (f"Commitment: {_usd(c['total_over_term_usd'])} owed over the terms of {c['reserved_lines']} "
                f"{'commitment' if c['reserved_lines'] == 1 else 'commitments'} "
                f"({plural(c['reserved_instances'], 'reserved instance')}), terms ending "
                f"{', '.join(c['term_ends']) or '—'}; {_usd(c['upfront_usd'])} of it upfront")
        if c.get("after_horizon_usd"):
            text += (f"; {_usd(c['after_horizon_usd'])} is paid after the horizon, counted in the total at "
                     f"{100 * (1 - c.get('leftover_value', 0.0)):.0f} %")
        out.append(text + ".")
    else:
        out.append("Commitment: none (no reserved instances; nothing is owed beyond the hours used).")
    if data.get("on_demand_total_usd") is not None and data.get("savings_vs_on_demand_usd") is not None:
        out.append(f"Savings against all on-demand ({_usd(data['on_demand_total_usd'])} over the horizon): "
                   f"{_usd(data['savings_vs_on_demand_usd'])} ({_pct(data['savings_vs_on_demand_pct'])}){u}.")
    if data.get("objective") == "roi":
        roi = data.get("roi")
        out.append(f"Value {_usd(data.get('value_usd'))}, net value {_usd(data.get('net_value_usd'))}, ROI "
                   + ("—" if roi is None else f"{100 * roi:.1f} %") + ".")
    parts = []
    for prov, p in sorted((data["prices"].get("providers") or {}).items()):
        origin = str(p.get("origin") or data["prices"].get("catalog") or "")
        if origin == "shipped snapshot":
            from gpuopt.render import date_span

            parts.append(f"{prov} {date_span(p)} (shipped snapshot)")
        else:
            age = p.get("age_days")
            parts.append(f"{prov} as of {p.get('as_of') or 'unknown'} ({origin}"
                         + (f", {age:.0f} day{'' if round(age) == 1 else 's'} old)" if age is not None else ")"))
    if parts:
        out.append("Prices: " + "; ".join(parts) + ".")
    if data["estimated_lines"]:
        out.append(f"{data['estimated_lines']} plan line(s) use an estimated price ({ESTIMATED_MARK}: derived by a "
                   "documented discount rule, not quoted).")
    return out


# -------------------------------------------------------------------------------------------------- renderers
def _figures(data) -> list[dict[str, Any]]:
    """The key figures at the top of the report: the money over the horizon and the commitments' totals (what is
    owed over their terms, paid upfront, paid each month while they run), savings against all on-demand."""
    if not data["feasible"]:
        return []
    c = data["commitment"]
    u = _unproven_mark(data)  # every figure below rests on the plan
    mark = (ESTIMATED_MARK if c.get("estimated") else "") + u
    out = [key_figure("total", f"Total over the horizon ({_horizon(data)})", _usd(data["total_usd"]), main=True,
                      mark=u, note=f"not proven optimal: gap {100 * (data.get('gap') or 0.0):.3g} %" if u else ""),
           key_figure("monthly", "Average per month", _usd(data["monthly_usd"]), mark=u),
           key_figure("commitment", "Commitments: owed over their terms", _usd(data["commitment_usd"]), mark=mark,
                      main=True, note=(f"{plural(c['reserved_lines'], 'commitment')}, terms ending {', '.join(c['term_ends'])}"
                                       if c["reserved_lines"] else "no reserved instances")),
           key_figure("upfront", "Commitments: paid upfront", _usd(data["upfront_usd"]), mark=mark),
           key_figure("commitment-monthly", "Commitments: paid each month of their terms",
                      _usd(c.get("monthly_usd", 0.0)), mark=mark)]
    if data.get("savings_vs_on_demand_usd") is not None:
        out.append(key_figure("savings", "Savings against all on-demand",
                              f"{_usd(data['savings_vs_on_demand_usd'])} ({_pct(data['savings_vs_on_demand_pct'])})",
                              mark=u))
    return out


def _context(data, images) -> dict[str, Any]:
    """What the plan templates (gpuopt/templates/plan.*.j2) show: the data turned into sentences and tables."""
    estimated = bool(data["estimated_lines"])
    caveat = data.get("caveat")
    top = f"{caveat}. Figures marked {UNPROVEN_MARK} rest on this plan." if caveat else None
    if not data["feasible"]:  # no plan: said first, as an unproven plan is (the summary says it again in full)
        reason = (data.get("reason") or {}).get("message") or data["status"]
        top = (f"NOT SOLVED WITHIN THE LIMIT: {reason}" if data["status"] == "not_solved"
               else f"NO PLAN ({data['status']}): {reason}")
    return {"title": data["title"], "subtitle": f"Horizon: {_horizon(data)}", "figures": _figures(data),
            "caveat": top,
            "summary": _summary(data), "plan_table": _line_table(data) if data["feasible"] else None,
            "strategy_table": _strategy_table(data) if data["strategies"] else None, "charts": images,
            "workload_table": _workload_table(data) if data["workloads"] else None,
            "binding": data["binding"], "notes": data["notes"], "price_table": _price_table(data),
            "warnings": data["prices"].get("warnings") or [],
            "footnotes": ([(ESTIMATED_MARK, ESTIMATED_NOTE)] if estimated else [])
                         + ([(UNPROVEN_MARK, UNPROVEN_NOTE)] if caveat else [])}


# ------------------------------------------------------------------------------------------------- companions
def companion_paths(path: str | Path) -> dict[str, Path]:
    """Where render_report writes the CSV and JSON companions of a report at ``path``."""
    p = Path(path)
    return {"csv": p.with_suffix(".csv"), "json": p.with_suffix(".json")}


def write_lines_csv(result, path: str | Path) -> Path:
    """The plan lines as CSV: one row per line, every field of the line (lists joined by ';')."""
    plan = getattr(result, "plan", result)
    p = Path(path)
    lines = list(plan.lines)
    if lines and is_dataclass(lines[0]):
        head = [f.name for f in fields(lines[0])]
    else:
        head = ["provider", "region", "zone", "instance_type", "pricing", "payment", "count", "hours", "usd_per_hour",
                "monthly_usd"]
    with p.open("w", encoding="utf-8", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(head)
        for ln in lines:
            d = asdict(ln) if is_dataclass(ln) else dict(ln)
            w.writerow(["" if d.get(k) is None else (";".join(map(str, d[k])) if isinstance(d.get(k), (list, tuple))
                                                      else d[k]) for k in head])
    return p


def render_report(result, fmt: str = "html", path: str | Path = "gpuopt-report.html") -> Path:
    """Write the report of ``result`` (a RecommendResult, or its plan) as ``fmt`` ("html" or "markdown"/"md") at
    ``path``, with ``<stem>.csv`` (plan lines) and ``<stem>.json`` (report_data) next to it; Markdown also writes
    its charts as ``<stem>_<chart>.png``. Returns the report's path."""
    fmt = {"md": "markdown"}.get(fmt, fmt)
    if fmt not in FORMATS:
        raise ValueError(f"report format must be one of {', '.join(FORMATS)}, not {fmt!r}")
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    data = report_data(result)
    pngs = charts(data)
    if fmt == "html":
        p.write_text(render("plan.html.j2", **_context(data, pngs)), encoding="utf-8")
    else:
        files = []
        for name, caption, png in pngs:
            f = p.with_name(f"{p.stem}_{name}.png")
            f.write_bytes(png)
            files.append((name, caption, f.name))
        p.write_text(render("plan.md.j2", **_context(data, files)), encoding="utf-8")
    comp = companion_paths(p)
    write_lines_csv(result, comp["csv"])
    comp["json"].write_text(json.dumps(data, indent=2, sort_keys=False, default=str) + "\n", encoding="utf-8")
    return p
