"""The monthly review as a report a person would rather look at than read: Markdown or HTML (templates
gpuopt/templates/review.*.j2, styled like the plan's report) with a chart, plus CSV (the recommendations) and JSON
(everything) beside it.

Sections: Summary (key figures: the recommended commitments' total owed over their terms, upfront, per month, the
savings a month and over the term; the usage window, rows read, billed / effective / on-demand-equivalent cost),
GPU usage (with each line's on-demand rate and its baseline: the bill's list price or the catalog's, dated),
Recommended commitments (offering class, the on-demand baseline; reserved rates derived by a rule rather than
quoted are marked with a dagger and a footnote; then what each buys in words: class, term, payment, what it can be
exchanged or sold for), Chart, Notes (warnings first). HTML embeds its chart as a base64 PNG; Markdown writes
``<stem>_cost.png``.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

from gpuopt.kernel.records import HOURS_PER_MONTH, TERM_HOURS
from gpuopt.templating import ESTIMATED_MARK, ESTIMATED_NOTE, key_figure, render


def _usd(x: float) -> str:
    return f"-${-x:,.2f}" if x < 0 else f"${x:,.2f}"


def term_months(term: str) -> float:
    """Months (730 h) in a review term: "1y" -> 12, "3y" -> 36 (gpuopt.kernel.records.TERM_HOURS)."""
    return TERM_HOURS[f"reserved_{term}"] / HOURS_PER_MONTH


def commitment_totals(result) -> dict[str, Any]:
    """What the recommended commitments add up to (USD): ``total_usd`` owed over their terms (upfront + recurring
    monthly x the term's months, for each), ``upfront_usd``, ``monthly_usd`` (recurring, each month of the terms),
    ``monthly_savings_usd`` (against on-demand, at the usage reviewed) and ``term_savings_usd`` (that a month x the
    term's months), ``instances`` bought, ``estimated`` (some rate derived by a rule, not quoted)."""
    recs = result.recommendations
    return {
        "total_usd": round(sum(r.upfront_cost_usd + r.recurring_monthly_cost_usd * term_months(r.term) for r in recs), 2),
        "upfront_usd": round(sum(r.upfront_cost_usd for r in recs), 2),
        "monthly_usd": round(sum(r.recurring_monthly_cost_usd for r in recs), 2),
        "monthly_savings_usd": round(sum(r.estimated_monthly_savings_usd for r in recs), 2),
        "term_savings_usd": round(sum(r.estimated_monthly_savings_usd * term_months(r.term) for r in recs), 2),
        "instances": sum(int(r.recommended_quantity) for r in recs),
        "terms": sorted({r.term for r in recs}),
        "estimated": any(r.estimated_price for r in recs),
    }


def _chart_png(result) -> bytes:
    """Monthly cost per instance type: on demand vs with the recommended commitment (bars, USD per 730-hour month)."""
    from matplotlib.ticker import FuncFormatter

    from gpuopt.charting import FONT_PT, TITLE_PT, dollars, figure, png_bytes

    recs = result.recommendations
    fig = figure()
    ax = fig.add_subplot(1, 1, 1)
    if recs:
        names = [f"{r.instance_type}\n{r.provider} {r.region}" + (f"\naccount {r.account_id}" if r.account_id else "")
                 for r in recs]
        x = range(len(recs))
        od = [r.estimated_monthly_on_demand_cost_usd for r in recs]
        wc = [r.estimated_monthly_cost_with_commitment_usd for r in recs]
        ax.bar([i - 0.2 for i in x], od, width=0.4, color="#d95f02", label="on demand")
        ax.bar([i + 0.2 for i in x], wc, width=0.4, color="#1b9e77", label="with the commitment")
        for i, (a, b) in enumerate(zip(od, wc)):
            ax.text(i - 0.2, a, dollars(a), ha="center", va="bottom", fontsize=FONT_PT)
            ax.text(i + 0.2, b, dollars(b), ha="center", va="bottom", fontsize=FONT_PT)
        ax.set_xticks(list(x), labels=names, fontsize=FONT_PT)
        ax.set_xlim(-0.8, len(recs) - 0.2)
        ax.set_ylim(0, max(od + wc) * 1.2 if max(od + wc) > 0 else 1)
        ax.legend(fontsize=FONT_PT, loc="upper right")
    else:
        ax.text(0.5, 0.5, "no commitment pays off", ha="center", va="center", fontsize=TITLE_PT,
                transform=ax.transAxes)
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: dollars(v)))
    ax.tick_params(axis="y", labelsize=FONT_PT)
    ax.set_ylabel("USD per month", fontsize=FONT_PT)
    ax.set_title("Monthly cost by instance type: on demand and with the recommended commitment", fontsize=TITLE_PT)
    return png_bytes(fig)


def _rows(result) -> list[dict]:
    return [{k: getattr(r, k) for k in r.__dataclass_fields__} for r in result.recommendations]


def _context(result) -> dict[str, Any]:
    """What the review templates (gpuopt/templates/review.*.j2) show."""
    t = result.totals
    c = commitment_totals(result)
    mark = ESTIMATED_MARK if c["estimated"] else ""
    span = f"{result.period_start[:16].replace('T', ' ')} to {result.period_end[:16].replace('T', ' ')} UTC"
    summary = [
        f"Usage {span} ({result.window_hours / 24:g} days, {result.source_format}); "
        f"{result.rows['read']} rows read, {result.rows['gpu']} GPU compute, {result.rows['bad']} bad.",
        f"Data covers {result.coverage_hours:,.0f} of the window's {result.window_hours:,.0f} hours "
        f"({100 * result.covered_fraction:.0f} %).",
        f"Billed ${t.get('billed_usd', 0):,.2f}; effective (amortized) ${t.get('effective_usd', 0):,.2f}; "
        f"on-demand equivalent ${t.get('on_demand_equivalent_usd', 0):,.2f}.",
        f"Recommended commitments save ${t.get('recommended_monthly_savings_usd', 0):,.2f} a month.",
    ]
    if result.recommendations:
        summary.append(
            f"Commitment: {_usd(c['total_usd'])} owed over the term(s) ({', '.join(c['terms'])}) of "
            f"{len(result.recommendations)} recommendation(s), {c['instances']} instance(s): {_usd(c['upfront_usd'])} "
            f"upfront and {_usd(c['monthly_usd'])} a month; savings {_usd(c['monthly_savings_usd'])} a month, "
            f"{_usd(c['term_savings_usd'])} over the term(s) if usage stays as reviewed.")
    else:
        summary.append("Commitment: none recommended (no commitment saves at the usage reviewed).")
    figures = [
        key_figure("commitment", "Recommended commitments: owed over their terms", _usd(c["total_usd"]), mark=mark,
                   main=True, note=(f"{c['instances']} instance(s), term {', '.join(c['terms'])}"
                                    if result.recommendations else "none recommended")),
        key_figure("upfront", "Commitments: paid upfront", _usd(c["upfront_usd"]), mark=mark),
        key_figure("monthly", "Commitments: paid each month", _usd(c["monthly_usd"]), mark=mark),
        key_figure("savings", "Savings a month against on-demand", _usd(c["monthly_savings_usd"]), mark=mark,
                   main=True, note=f"{_usd(c['term_savings_usd'])} over the term(s)"),
        key_figure("billed", f"Billed in the {result.lookback_days:g}-day window", _usd(t.get("billed_usd", 0.0))),
    ]
    usage_head = ["provider", "region", "instance type", "instance-hours", "peak", "average", "billed $", "effective $",
                  "on-demand $/h", "on-demand baseline"]
    usage_rows = [[u.provider, u.region, u.instance_type, f"{u.hours_used:,.1f}", f"{u.peak_instances:g}",
                   f"{u.average_instances:.2f}", f"{u.billed_cost_usd:,.2f}", f"{u.effective_cost_usd:,.2f}",
                   "—" if u.on_demand_usd_per_hour is None else f"{u.on_demand_usd_per_hour:,.4f}",
                   u.on_demand_baseline or "—"]
                  for u in result.usage]
    rec_head = ["provider", "region", "instance type", "offering class", "term", "payment", "quantity",
                "on-demand $/h", "on-demand baseline", "reserved $/h", "upfront $", "recurring $/mo",
                "on-demand $/mo", "savings $/mo", "utilization", "break-even months"]
    per_account = any(r.account_id for r in result.recommendations)  # --scope account: say whose each one is
    if per_account:
        rec_head = ["account"] + rec_head
    rec_rows = [([r.account_id or "(none)"] if per_account else [])
                + [r.provider, r.region, r.instance_type, (r.offering_class or "").title() or "—", r.term, r.payment,
                 str(r.recommended_quantity), f"{r.on_demand_usd_per_hour:,.4f}", r.on_demand_baseline or "—",
                 f"{r.reserved_effective_usd_per_hour:,.4f}" + (ESTIMATED_MARK if r.estimated_price else ""),
                 f"{r.upfront_cost_usd:,.2f}", f"{r.recurring_monthly_cost_usd:,.2f}",
                 f"{r.estimated_monthly_on_demand_cost_usd:,.2f}",
                 f"{r.estimated_monthly_savings_usd:,.2f} ({r.estimated_monthly_savings_pct:.1f} %)",
                 "" if r.average_utilization is None else f"{100 * r.average_utilization:.0f} %",
                 "" if r.break_even_months is None else f"{r.break_even_months:g}"] for r in result.recommendations]
    # Cost Explorer's fields, for analysts who compare: instances per hour and AWS normalized units, the id
    ce_head = (["account"] if per_account else []) + ["instance type", "instances/h min", "avg", "max",
                                                      "normalized units to buy", "recommendation id", "generated"]
    ce_rows = [([r.account_id or "(none)"] if per_account else [])
               + [f"{r.instance_type} {r.provider} {r.region}", f"{r.minimum_instances_per_hour:g}",
                  f"{r.average_instances_per_hour:.2f}", f"{r.maximum_instances_per_hour:g}",
                  "—" if r.normalized_units_to_purchase is None else f"{r.normalized_units_to_purchase:g}",
                  r.recommendation_id, r.generation_time] for r in result.recommendations]
    # what each recommendation buys, in its provider's words: offering class, term, payment, what it can become
    commitments = [f"{r.instance_type} ({r.provider} {r.region}) x{r.recommended_quantity}: {r.commitment}"
                   + (f" -- {r.flexibility}" if r.flexibility else "") for r in result.recommendations if r.commitment]
    return {"title": "gpuopt monthly review", "subtitle": f"Usage {span}", "figures": figures, "summary": summary,
            "usage_table": (usage_head, usage_rows), "rec_table": (rec_head, rec_rows), "commitments": commitments,
            "ce_table": (ce_head, ce_rows), "notes": [f"Warning: {w}" for w in result.warnings] + list(result.notes),
            "footnotes": [(ESTIMATED_MARK, ESTIMATED_NOTE)] if c["estimated"] else []}


def render_review_report(result, fmt: str, path: str | Path) -> Path:
    """Write the review (optimizer.review.ReviewResult) as ``fmt`` ("markdown" or "html") at ``path``, with
    ``<stem>.csv`` (recommendations) and ``<stem>.json`` (the whole review) beside it; Markdown also writes
    ``<stem>_cost.png``. Returns the report's path. Raises InputError for another format."""
    fmt = {"md": "markdown"}.get(fmt, fmt)
    if fmt not in ("markdown", "html"):
        from gpuopt.kernel.errors import InputError

        raise InputError("format", f"unknown report format '{fmt}'", accepted="markdown, html")
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    png = _chart_png(result)
    ctx = _context(result)
    caption = "Monthly cost by instance type: on demand and with the recommended commitment"
    if fmt == "html":
        p.write_text(render("review.html.j2", chart=("cost", caption, png), **ctx), encoding="utf-8")
    else:
        img = p.with_name(f"{p.stem}_cost.png")
        img.write_bytes(png)
        p.write_text(render("review.md.j2", chart=("cost", caption, img.name), **ctx), encoding="utf-8")
    rows = _rows(result)
    with open(p.with_suffix(".csv"), "w", newline="", encoding="utf-8") as fh:
        if rows:
            w = csv.DictWriter(fh, fieldnames=list(rows[0]))
            w.writeheader()
            w.writerows(rows)
    p.with_suffix(".json").write_text(json.dumps(result.to_dict(), indent=2, default=str) + "\n", encoding="utf-8")
    return p
