"""The Markdown/HTML report: its sections, its embedded charts (real PNGs), its numbers (the result's), the CSV and
JSON beside it, escaping, determinism."""

from __future__ import annotations

import base64
import copy
import csv
import html
import json
import re
import struct

import pytest

import gpuopt
from focus_validator import example_fleet_result, one_workload_result
from gpuopt.charting import FIG_DPI, FIG_SIZE
from gpuopt.report import companion_paths, render_report, report_data

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
SIZE = (round(FIG_SIZE[0] * FIG_DPI), round(FIG_SIZE[1] * FIG_DPI))


def _png_size(png: bytes) -> tuple[int, int]:
    assert png[:8] == PNG_SIGNATURE and png[12:16] == b"IHDR"
    return struct.unpack(">II", png[16:24])


def _images(text: str) -> list[bytes]:
    return [base64.b64decode(b64, validate=True) for b64 in re.findall(r'<img [^>]*src="data:image/png;base64,([^"]+)"', text)]


def _headings(text: str) -> list[str]:
    return re.findall(r"<h2[^>]*>([^<]+)</h2>", text)


@pytest.fixture(scope="module")
def fleet():
    return example_fleet_result()


@pytest.fixture(scope="module")
def one():
    return one_workload_result()


def _check_numbers(text: str, result) -> None:
    """The HTML shows the plan's own numbers: the totals over the horizon, every strategy (this plan included) and
    every line with its months, $/month, total, upfront, commitment, term end and layout."""
    plan = result.plan
    assert re.search(rf'<span id="total">\${plan.total_usd:,.2f}</span>', text)
    assert re.search(rf'<span id="monthly">\${plan.monthly_usd:,.2f}</span>', text)
    assert re.search(rf'<span id="upfront">\${plan.upfront_usd:,.2f}</span>', text)
    assert re.search(rf'<span id="commitment">\${plan.commitment_usd:,.2f}</span>', text)
    table = text.split('<table class="strategies">', 1)[1].split("</table>", 1)[0]
    rows = re.findall(r"<tr><td>([^<]+)</td>" + r"<td class=\"n\">([^<]+)</td>" * 6, table)
    assert len(rows) == len(plan.strategies) and "this_plan" in plan.strategies
    for row, (name, s) in zip(rows, plan.strategies.items()):
        label, total, monthly, upfront, commitment, most, _sav = row
        if s.get("total_usd") is None:
            assert total.startswith(s["status"]), (name, row)
            continue
        assert (total, monthly, upfront, commitment, most) == (
            f"${s['total_usd']:,.2f}", f"${s['monthly_usd']:,.2f}", f"${s['upfront_usd']:,.2f}",
            f"${s['commitment_usd']:,.2f}", f"${s['max_month_usd']:,.2f}"), (name, label)
    assert rows[-1][0] == "this plan" and rows[-1][1] == f"${plan.total_usd:,.2f}"
    # the savings as the report writes money: never "$-0.00 (-0.0 %)" for a plan that is all on demand
    from gpuopt.report import _pct, _usd

    assert f"{_usd(plan.savings_vs_on_demand_usd)} ({_pct(plan.savings_vs_on_demand_pct)})" in text
    assert "$-0.00" not in text and "-$0.00" not in text and "-0.0 %" not in text
    plan_table = text.split('<table class="plan">', 1)[1].split("</table>", 1)[0]
    head = re.findall(r"<th>([^<]+)</th>", plan_table)
    body = [re.findall(r"<td[^>]*>([^<]*)</td>", r) for r in re.findall(r"<tr><td.*?</tr>", plan_table)]
    assert len(body) == len(plan.lines)
    for ln, cells in zip(plan.lines, body):
        row = dict(zip(head, cells))
        months = f"{ln.start_month}" if ln.start_month == ln.end_month else f"{ln.start_month}-{ln.end_month}"
        committed = ln.pricing.startswith("reserved")
        assert row["instance type"] == ln.instance_type and row["months"] == months
        assert row["$/month"] == f"${ln.monthly_usd:,.2f}" and row["total"] == f"${ln.total_usd:,.2f}"
        assert row["upfront"] == (f"${ln.upfront_usd:,.2f}" if ln.upfront_usd else "—")
        assert row["commitment"] == (f"${ln.commitment_usd:,.2f}" if committed else "—")
        assert row["term ends"] == (ln.term_end if committed else "—")
        assert row["replicas"] == str(ln.replicas)
        assert row["TP/PP"].startswith(f"TP{ln.tensor_parallel} PP{ln.pipeline_parallel}")
        if ln.precision:  # serving lines: the replica's precision, batch and latency (issue 10)
            assert f" {ln.precision}, batch {ln.batch}, TTFT " in row["TP/PP"]


def _check_summary(text: str, result) -> None:
    plan = result.plan
    H = plan.horizon_months
    assert f"Horizon: {H} months, {plan.start_month} to " in text
    for rule in plan.rules:
        assert html.escape(f"Rule: {rule}.", quote=False) in text.replace("&#x27;", "'")
    assert (f"Total over the horizon: ${plan.total_usd:,.2f}; average ${plan.monthly_usd:,.2f} per month; the most "
            f"paid in one month ${plan.max_month_usd:,.2f}.") in text
    assert f"Upfront: ${plan.upfront_usd:,.2f}" in text
    reserved = [ln for ln in plan.lines if ln.pricing.startswith("reserved")]
    if reserved:
        ends = ", ".join(sorted({ln.term_end for ln in reserved}))
        assert (f"Commitment: ${plan.commitment_usd:,.2f} owed over the terms of {len(reserved)} commitment(s) "
                f"({sum(ln.count for ln in reserved)} reserved instance(s)), terms ending {ends}; "
                f"${plan.upfront_usd:,.2f} of it upfront") in text


def _check_companions(path, result) -> None:
    plan = result.plan
    comp = companion_paths(path)
    with comp["csv"].open(encoding="utf-8") as f:
        lines = list(csv.DictReader(f))
    assert [float(r["monthly_usd"]) for r in lines] == [ln.monthly_usd for ln in plan.lines]
    assert [(r["term_end"], int(r["start_month"]), int(r["end_month"])) for r in lines] == [
        (ln.term_end, ln.start_month, ln.end_month) for ln in plan.lines]
    data = json.loads(comp["json"].read_text(encoding="utf-8"))
    for k in ("total_usd", "monthly_usd", "upfront_usd", "commitment_usd", "horizon_months", "start_month"):
        assert data[k] == getattr(plan, k), k
    assert {s["name"]: (s["total_usd"], s["monthly_usd"]) for s in data["strategies"]} == {
        k: (v["total_usd"], v["monthly_usd"]) for k, v in plan.strategies.items()}
    cash = data["cash_by_month"]
    assert [c["total_usd"] for c in cash] == plan.cash_by_month_usd and len(cash) == plan.horizon_months
    for c in cash:  # the parts shown in the chart add up to the plan's cash of the month
        assert c["hourly_usd"] + c["recurring_usd"] + c["upfront_usd"] == pytest.approx(c["total_usd"], abs=0.1)
    assert sum(c["upfront_usd"] for c in cash) == pytest.approx(plan.upfront_usd, abs=0.01)
    assert sum(data["spend_by_provider"].values()) == pytest.approx(plan.total_usd, abs=0.01 * len(plan.lines) + 0.01)
    assert len(data["lines"]) == len(plan.lines) and data["prices"]["providers"]


CHARTS = ["cost_by_strategy", "cash_by_month", "demand_capacity", "spend_by_provider", "spend_by_gpu_model"]


def test_html_report_of_the_example_fleet_plan(tmp_path, fleet):
    path = render_report(fleet, "html", tmp_path / "fleet.html")
    text = path.read_text(encoding="utf-8")
    assert _headings(text) == ["Summary", "Plan", "Strategy comparison", "Charts", "Workloads", "Constraints and notes",
                               "Prices"]
    images = _images(text)
    assert len(images) == len(CHARTS) and all(_png_size(p) == SIZE for p in images)
    assert re.findall(r'<figure id="chart-([^"]+)"', text) == CHARTS
    _check_numbers(text, fleet)
    _check_summary(text, fleet)
    plan = fleet.plan
    for ln in plan.lines:  # every line's layout (pipelines cross instances only over a cluster fabric)
        assert f"TP{ln.tensor_parallel}" in text
    for w in plan.workloads:
        assert f"<td>{w['name']}</td>" in text
    assert any(ln.pricing == "reserved_1y" for ln in plan.lines) and "terms ending " in text
    # where prices come from and how old: the span of the sources' dates, never the copy date (issue 9)
    assert "shipped snapshot" in text and re.search(r"as of 20\d\d-\d\d-\d\d to 20\d\d-\d\d-\d\d", text)
    assert "2026-11-30 or earlier" not in text
    _check_companions(path, fleet)
    data = report_data(fleet)
    cash = data["cash_by_month"]
    y, m = (int(x) for x in plan.start_month.split("-"))
    assert cash[0]["label"] == plan.start_month
    assert cash[1]["label"] == (f"{y}-{m + 1:02d}" if m < 12 else f"{y + 1}-01")
    assert cash[-1]["label"] == next(ln.term_end for ln in plan.lines if ln.pricing == "reserved_1y")  # a 1-year term
    assert cash[0]["upfront_usd"] == pytest.approx(plan.upfront_usd) and all(c["upfront_usd"] == 0 for c in cash[1:])
    dc = data["demand_capacity"]
    assert dc["kind"] == "blocks" and set(dc["series"]) == {"chat"}
    assert len(dc["series"]["chat"]["demand"]) == len(plan.blocks)
    assert dc["labels"][0].startswith("m1 ") and dc["labels"][-1].startswith("m2-12 ")  # the periods' months
    # the chart's data in time order: the stretches of the horizon in calendar order (month 1 cut at the training
    # deadlines, then months 2-12), each the 24 hours of the typical day in order, with the demand of each hour
    tl = data["demand_timeline"]
    nxt = f"{y}-{m + 1:02d}" if m < 12 else f"{y + 1}-01"
    assert [p["title"].split(",")[0] for p in tl["panels"]] == [plan.start_month] * (len(tl["panels"]) - 1) + [
        f"{nxt} to {plan.lines[0].term_end}"]
    hours = [f"{h:02d}:00-{h + 1:02d}:00" for h in range(24)]
    profile = {}
    for b in plan.blocks:
        for j in b["slots"]:
            profile[j] = b["demand"]["chat"]
    for p in tl["panels"]:
        assert p["labels"] == hours
        s = p["series"]["chat"]
        assert s["demand"] == [profile[j] for j in range(24)]
        assert all(c >= d for c, d in zip(s["capacity"], s["demand"]))
    assert max(profile.values()) == max(w["peak_demand"] for w in plan.workloads if w["name"] == "chat")
    # the commitments' totals at the top: owed over the terms, upfront, each month of the terms
    monthly = sum(ln.monthly_usd for ln in plan.lines if ln.commitment_usd > 0)
    assert f'<span id="commitment-monthly">${monthly:,.2f}</span>' in text


def test_html_report_of_the_one_workload_plan(tmp_path, one):
    path = render_report(one, "html", tmp_path / "one.html")
    text = path.read_text(encoding="utf-8")
    assert _headings(text) == ["Summary", "Plan", "Strategy comparison", "Charts", "Workloads",
                               "Constraints and notes", "Prices"]
    images = _images(text)
    assert len(images) == len(CHARTS) and all(_png_size(p) == SIZE for p in images)
    _check_numbers(text, one)
    _check_summary(text, one)
    (ln,) = one.plan.lines
    from gpuopt.kernel.records import is_estimated

    # an estimated rate is marked, a quoted one is not (the snapshot's Lambda rows are quoted: lambda.ai, 2026-09-20)
    marked = f"{ln.usd_per_hour:,.4f}†" in text
    assert marked == is_estimated(ln.source) and ("† estimated price" in text) == marked
    _check_companions(path, one)
    dc = report_data(one)["demand_capacity"]
    assert dc["labels"] == ["whole month"] and dc["series"]["workload"]["demand"] == [2000.0]


def test_markdown_report_writes_and_links_its_pngs(tmp_path, fleet):
    path = render_report(fleet, "markdown", tmp_path / "plan.md")
    text = path.read_text(encoding="utf-8")
    for h in ("## Summary", "## Plan", "## Strategy comparison", "## Charts", "## Workloads", "## Prices"):
        assert f"\n{h}\n" in text
    links = re.findall(r"!\[[^\]]*\]\(([^)]+\.png)\)", text)
    assert links == [f"plan_{c}.png" for c in CHARTS]
    for name in links:
        assert _png_size((tmp_path / name).read_bytes()) == SIZE
    plan = fleet.plan
    assert f"Total over the horizon: ${plan.total_usd:,.2f}; average ${plan.monthly_usd:,.2f} per month" in text
    for ln in plan.lines:  # Markdown specials escaped: reserved\_3y renders as reserved_3y
        assert f"| {ln.pricing.replace('_', chr(92) + '_')} |" in text
    assert "| this plan |" in text
    assert companion_paths(path)["csv"].exists() and companion_paths(path)["json"].exists()


def test_report_is_deterministic(tmp_path, one):
    a = render_report(one, "html", tmp_path / "a.html").read_bytes()
    b = render_report(one, "html", tmp_path / "b.html").read_bytes()
    assert a == b
    assert re.search(rb"20\d\d-\d\d-\d\dT\d\d:\d\d", a) is None  # no timestamps of its own


def test_report_escapes_what_it_shows(tmp_path, one):
    evil = copy.copy(one)
    evil.headline = 'Plan for <script>alert("x")</script> | a & b'
    html_text = render_report(evil, "html", tmp_path / "e.html").read_text(encoding="utf-8")
    assert "<script>" not in html_text and "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; | a &amp; b" in html_text
    md_text = render_report(evil, "md", tmp_path / "e.md").read_text(encoding="utf-8")
    assert "<script>" not in md_text and "&lt;script&gt;" in md_text


def test_infeasible_plan_and_bad_format(tmp_path):
    r = gpuopt.recommend(budget=10, model="meta-llama/Llama-2-70b-hf", task="serve", tokens_per_second=2000)
    assert not r.feasible
    text = render_report(r, "html", tmp_path / "none.html").read_text(encoding="utf-8")
    assert "No plan:" in text and '<table class="plan">' not in text and "Summary" in _headings(text)
    with pytest.raises(ValueError, match="report format"):
        render_report(r, "pdf", tmp_path / "x.pdf")
