"""The monthly review as a report a person would rather look at than read: Markdown or HTML with a chart,
plus CSV (the recommendations) and JSON (everything) beside it."""

from __future__ import annotations

import base64
import csv
import html
import io
import json
from pathlib import Path


def _chart_png(result) -> bytes:
    """Monthly cost per instance type: on demand vs with the recommended commitment (bars)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    recs = result.recommendations
    fig, ax = plt.subplots(figsize=(6.4, 3.0), dpi=80)
    if recs:
        names = [r.instance_type for r in recs]
        x = range(len(recs))
        ax.bar([i - 0.2 for i in x], [r.estimated_monthly_on_demand_cost_usd for r in recs], width=0.4, label="on demand")
        ax.bar([i + 0.2 for i in x], [r.estimated_monthly_cost_with_commitment_usd for r in recs], width=0.4,
               label="with the commitment")
        ax.set_xticks(list(x))
        ax.set_xticklabels(names, fontsize=7, rotation=15)
        ax.legend(fontsize=7)
    else:
        ax.text(0.5, 0.5, "no commitment pays off", ha="center", va="center")
    ax.set_ylabel("USD per month", fontsize=8)
    ax.set_title("Monthly cost by instance type", fontsize=9)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", metadata={"Software": None})
    plt.close(fig)
    return buf.getvalue()


def _rows(result) -> list[dict]:
    return [{k: getattr(r, k) for k in r.__dataclass_fields__} for r in result.recommendations]


def render_review_report(result, fmt: str, path: str | Path) -> Path:
    """Write the review (optimizer.review.ReviewResult) as ``fmt`` ("markdown" or "html") at ``path``, with
    ``<stem>.csv`` (recommendations) and ``<stem>.json`` (the whole review) beside it; Markdown also writes
    ``<stem>_cost.png``. Returns the report's path."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    png = _chart_png(result)
    t = result.totals
    summary = [
        f"Usage {result.period_start[:16]} to {result.period_end[:16]} ({result.window_hours / 24:g} days, {result.source_format}); "
        f"{result.rows['read']} rows read, {result.rows['gpu']} GPU compute, {result.rows['bad']} bad.",
        f"Data covers {result.coverage_hours:,.0f} of the window's {result.window_hours:,.0f} hours "
        f"({100 * result.covered_fraction:.0f} %).",
        f"Billed ${t.get('billed_usd', 0):,.2f}; effective (amortized) ${t.get('effective_usd', 0):,.2f}; "
        f"on-demand equivalent ${t.get('on_demand_equivalent_usd', 0):,.2f}.",
        f"Recommended commitments save ${t.get('recommended_monthly_savings_usd', 0):,.2f} a month.",
    ]
    usage_head = ["provider", "region", "instance type", "instance-hours", "peak", "average", "billed $", "effective $"]
    usage_rows = [[u.provider, u.region, u.instance_type, f"{u.hours_used:,.1f}", f"{u.peak_instances:g}",
                   f"{u.average_instances:.2f}", f"{u.billed_cost_usd:,.2f}", f"{u.effective_cost_usd:,.2f}"]
                  for u in result.usage]
    rec_head = ["provider", "region", "instance type", "term", "payment", "quantity", "upfront $", "recurring $/mo",
                "on-demand $/mo", "savings $/mo", "utilization", "break-even months"]
    rec_rows = [[r.provider, r.region, r.instance_type, r.term, r.payment, str(r.recommended_quantity),
                 f"{r.upfront_cost_usd:,.2f}", f"{r.recurring_monthly_cost_usd:,.2f}",
                 f"{r.estimated_monthly_on_demand_cost_usd:,.2f}",
                 f"{r.estimated_monthly_savings_usd:,.2f} ({r.estimated_monthly_savings_pct:.1f} %)",
                 "" if r.average_utilization is None else f"{100 * r.average_utilization:.0f} %",
                 "" if r.break_even_months is None else f"{r.break_even_months:g}"] for r in result.recommendations]
    if fmt == "html":
        def table(head, rows):
            return ("<table><tr>" + "".join(f"<th>{html.escape(h)}</th>" for h in head) + "</tr>"
                    + "".join("<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in r) + "</tr>" for r in rows)
                    + "</table>")
        body = ["<h1>gpuopt monthly review</h1>", "<h2>Summary</h2><ul>"
                + "".join(f"<li>{html.escape(s)}</li>" for s in summary) + "</ul>",
                "<h2>GPU usage</h2>", table(usage_head, usage_rows),
                "<h2>Recommended commitments</h2>", table(rec_head, rec_rows),
                "<h2>Chart</h2>", f'<img alt="monthly cost by instance type" src="data:image/png;base64,'
                f'{base64.b64encode(png).decode()}">',
                "<h2>Notes</h2><ul>" + "".join(f"<li>{html.escape(n)}</li>" for n in
                                           [f"Warning: {w}" for w in result.warnings] + result.notes) + "</ul>"]
        p.write_text("<!doctype html><html><head><meta charset='utf-8'><title>gpuopt review</title>"
                     "<style>table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:2px 6px}</style>"
                     "</head><body>" + "\n".join(body) + "</body></html>\n", encoding="utf-8")
    elif fmt in ("markdown", "md"):
        img = p.with_name(f"{p.stem}_cost.png")
        img.write_bytes(png)

        def table(head, rows):
            return "\n".join(["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
                             + ["| " + " | ".join(str(c) for c in r) + " |" for r in rows])
        p.write_text("\n\n".join(["# gpuopt monthly review", "## Summary", "\n".join(f"- {s}" for s in summary),
                                  "## GPU usage", table(usage_head, usage_rows),
                                  "## Recommended commitments", table(rec_head, rec_rows),
                                  "## Chart", f"![monthly cost by instance type]({img.name})",
                                  "## Notes", "\n".join(f"- {n}" for n in [f"Warning: {w}" for w in result.warnings]
                                                      + result.notes)]) + "\n", encoding="utf-8")
    else:
        from gpuopt.errors import InputError

        raise InputError("format", f"unknown report format '{fmt}'", accepted="markdown, html")
    rows = _rows(result)
    with open(p.with_suffix(".csv"), "w", newline="", encoding="utf-8") as fh:
        if rows:
            w = csv.DictWriter(fh, fieldnames=list(rows[0]))
            w.writeheader()
            w.writerows(rows)
    p.with_suffix(".json").write_text(json.dumps(result.to_dict(), indent=2, default=str) + "\n", encoding="utf-8")
    return p
