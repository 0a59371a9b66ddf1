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
from pathlib import Path

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


def _usd_text(x: float) -> str:
    return f"${x:,.2f}"


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
    # the first cell has class "w" when a label is long ("all on-demand (not proven: gap 0.0123 %)")
    rows = re.findall(r"<tr><td[^>]*>([^<]+)</td>" + r"<td class=\"n[^\"]*\">([^<]+)</td>" * 6, table)
    assert len(rows) == len(plan.strategies) and "this_plan" in plan.strategies
    for row, (name, s) in zip(rows, plan.strategies.items()):
        # a total that rests on a solve stopped at its time limit is marked ‡ (issue 32)
        mark = "‡" if s.get("status") == "time_limit" or (name == "this_plan" and plan.status == "time_limit") else ""
        label, total, monthly, upfront, commitment, most, _sav = row
        total, monthly, most = (x.removesuffix(mark) if mark else x for x in (total, monthly, most))
        if s.get("total_usd") is None:
            assert total.startswith(s["status"]), (name, row)
            continue
        assert (total, monthly, upfront, commitment, most) == (
            f"${s['total_usd']:,.2f}", f"${s['monthly_usd']:,.2f}", f"${s['upfront_usd']:,.2f}",
            f"${s['commitment_usd']:,.2f}", f"${s['max_month_usd']:,.2f}"), (name, label)
    assert rows[-1][0] == "this plan" and rows[-1][1].removesuffix("‡") == f"${plan.total_usd:,.2f}"
    # the savings as the report writes money: never "$-0.00 (-0.0 %)" for a plan that is all on demand
    from gpuopt.report import _pct, _usd

    if plan.savings_vs_on_demand_usd is not None:  # the all-on-demand strategy priced: the report says the savings
        assert f"{_usd(plan.savings_vs_on_demand_usd)} ({_pct(plan.savings_vs_on_demand_pct)})" in text
    else:  # not priced in its time (twice on a loaded CI machine): no savings figure is made up
        assert "Savings against all on-demand" not in text
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
        n, k = len(reserved), sum(ln.count for ln in reserved)
        assert (f"Commitment: ${plan.commitment_usd:,.2f} owed over the terms of {n} commitment{'s' * (n != 1)} "
                f"({k:g} reserved instance{'s' * (k != 1)}), terms ending {ends}; "
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
    # a strategy whose solve stopped at its time limit (the all-on-demand one, on a loaded CI machine): its row keeps
    # its figures, marked, and its label says the gap, which makes the first column wide
    stopped = copy.deepcopy(fleet)
    aod = stopped.plan.strategies["all_on_demand"]
    aod.update(status="time_limit", gap=0.000123)
    text2 = render_report(stopped, "html", tmp_path / "stopped.html").read_text(encoding="utf-8")
    assert "(not proven: gap 0.0123 %)</td>" in text2 and f"{_usd_text(aod['total_usd'])}‡</td>" in text2
    _check_numbers(text2, stopped)
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
    # Markdown is not HTML-escaped (no "&lt;" for a reader of the .md file) but a tag is backslash-escaped
    assert re.search(r"(?<!\\)<script>", md_text) is None and "\\<script>" in md_text and "&lt;" not in md_text
    assert "a & b" in md_text


def test_infeasible_plan_and_bad_format(tmp_path):
    r = gpuopt.recommend(budget=10, model="meta-llama/Llama-2-70b-hf", task="serve", tokens_per_second=2000)
    assert not r.feasible
    text = render_report(r, "html", tmp_path / "none.html").read_text(encoding="utf-8")
    assert "No plan:" in text and '<table class="plan">' not in text and "Summary" in _headings(text)
    with pytest.raises(ValueError, match="report format"):
        render_report(r, "pdf", tmp_path / "x.pdf")


# ------------------------------------------------------------------------------ a plan not proven optimal (issue 32)
EXAMPLE = Path(gpuopt.__file__).parent / "data" / "example_plan.yaml"


@pytest.fixture(scope="module")
def unproven():
    """The example plan stopped at a short time limit, without explanations: feasible, not proven optimal. Since
    issue 33 it is proven in about 5 s (3-4 s: a plan with a gap of 0.85 %, 2 s: none), and on a loaded machine the
    window moves either way (a CI run proved it within 5 s), so limits around it are tried in turn; when none
    stops with a plan in hand, a proven plan is marked as stopped at its limit with the 0.85 % gap measured at 3 s
    (what is tested here is how an unproven plan is shown, not the solver's timing)."""
    last = None
    for limit in (3, 4, 2.5, 3.5, 5, 6, 8, 12):
        r = gpuopt.recommend(workload=EXAMPLE, time_limit_s=limit, explain=False)
        if r.plan.status == "time_limit":
            return r
        assert r.plan.status in ("not_solved", "optimal"), f"the example plan was {r.plan.status} within {limit} s"
        last = r if r.plan.status == "optimal" else last
    if last is None:
        pytest.fail("the example plan found no plan within 12 s")
    last.plan.status = "time_limit"
    last.plan.solver.update(status="time_limit", gap=0.008518228602447145)
    return last


def test_an_unproven_plan_says_so_first_in_the_table_and_the_json(unproven, capsys, monkeypatch):
    from gpuopt import render
    from gpuopt.schemas import undeclared_keys, validate

    plan, limit = unproven.plan, unproven.workload["time_limit_s"]
    assert plan.feasible and 0 < plan.gap < 1
    less = f"${plan.gap * plan.total_usd:,.2f}"
    monkeypatch.setenv("COLUMNS", "400")
    render.recommend(unproven, "table")
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith(f"NOT PROVEN OPTIMAL: the solver stopped at its time limit with a gap of "
                             f"{100 * plan.gap:.3g} %: the best plan may cost up to {less} less than this one's "
                             f"${plan.total_usd:,.2f}; rerun with --time-limit {int(max(60, 4 * limit))} (this run had {limit:g} s)")
    assert out[0].endswith("figures marked ‡ rest on this plan")
    assert f"Total over 12 months: ${plan.total_usd:,.2f}‡ " in "\n".join(out)
    assert f"average ${plan.monthly_usd:,.2f}‡ a month" in "\n".join(out)
    assert any(line.startswith("‡ not proven optimal: rests on a plan the solver stopped") for line in out)
    doc = json.loads(json.dumps(unproven.to_dict()))
    assert list(doc)[:6] == ["schema_version", "kind", "status", "gap", "proven_optimal", "caveat"]
    assert doc["status"] == "time_limit" and doc["proven_optimal"] is False and doc["gap"] == plan.gap
    assert doc["caveat"] == out[0].split("; figures marked")[0]
    assert undeclared_keys(validate(doc)) == []


def test_an_unproven_plan_report_has_the_callout_first_and_marks_its_totals(tmp_path, unproven):
    import jsonschema

    from gpuopt.schemas import undeclared_keys, validate

    plan = unproven.plan
    caveat = unproven.to_dict()["caveat"]
    md = render_report(unproven, "md", tmp_path / "u.md").read_text(encoding="utf-8")
    assert md.index(f"> **{caveat}. Figures marked ‡ rest on this plan.**") < md.index("## Summary")
    assert f"| ${plan.total_usd:,.2f}‡ |" in md and f"Total over the horizon: ${plan.total_usd:,.2f}‡;" in md
    assert "&lt;" not in md and "&gt;" not in md and "p99 TTFT <= 2000 ms" in md
    text = render_report(unproven, "html", tmp_path / "u.html").read_text(encoding="utf-8")
    assert text.index('<p class="caveat" id="caveat"') < text.index('<h2 id="summary">')
    assert f'<span id="total">${plan.total_usd:,.2f}</span><span class="mark">‡</span>' in text
    assert "not proven optimal: gap " in text and '<span class="mark">‡</span> not proven optimal' in text
    data = json.loads((tmp_path / "u.json").read_text(encoding="utf-8"))
    assert (data["schema_version"], data["kind"]) == (1, "report-data")
    assert (data["status"], data["proven_optimal"], data["gap"], data["caveat"]) == (
        "time_limit", False, plan.gap, caveat)
    schema = json.loads((Path(__file__).parents[1] / "docs" / "schemas" / "report-data.schema.json").read_text())
    jsonschema.Draft202012Validator(schema).validate(data)
    assert undeclared_keys(validate(data)) == []


def test_a_proven_plan_has_no_caveat_and_its_report_data_is_versioned(tmp_path, one):
    import jsonschema

    from gpuopt.schemas import validate

    assert one.plan.status == "optimal"
    doc = one.to_dict()
    assert doc["proven_optimal"] is True and doc["caveat"] is None
    text = render_report(one, "html", tmp_path / "p.html").read_text(encoding="utf-8")
    assert 'id="caveat"' not in text and "‡" not in text
    data = json.loads((tmp_path / "p.json").read_text(encoding="utf-8"))
    assert data["kind"] == "report-data" and data["proven_optimal"] is True and data["caveat"] is None
    schema = json.loads((Path(__file__).parents[1] / "docs" / "schemas" / "report-data.schema.json").read_text())
    jsonschema.Draft202012Validator(schema).validate(data)
    validate(data)


def test_a_comparison_not_computed_says_why_and_how(tmp_path, one, capsys, monkeypatch):
    from gpuopt import render

    r = copy.deepcopy(one)
    why = "not computed: no time left within the explanation's limit"
    r.plan.strategies["all_reserved_1y"] = {"status": "not_computed", "total_usd": None, "monthly_usd": None,
                                            "note": why}
    r.plan.next_best = [{"provider": "aws", "total_usd": None, "monthly_usd": None,
                         "note": "not computed: no plan found within the explanation's time limit"}]
    limit = r.workload["time_limit_s"]
    how = f"to compute it, rerun with --time-limit {int(max(60, 4 * limit))} (this run had {limit:g} s)"
    md = render_report(r, "md", tmp_path / "n.md").read_text(encoding="utf-8")
    assert f"| all reserved 1 year | not\\_computed: no time left within the explanation's limit; {how} |" in md
    monkeypatch.setenv("COLUMNS", "300")
    render.recommend(r, "table")
    out = capsys.readouterr().out
    assert f"Strategy — all reserved 1y: {why}; {how}" in out
    assert f"Alternative — aws alone: not computed: no plan found within the explanation's time limit; {how}" in out
    # the JSON says how too (issue 32: "comparisons that were not computed say why and how to get them"), once
    doc = r.to_dict()
    assert doc["strategies"]["all_reserved_1y"]["note"] == f"{why}; {how}"
    assert doc["next_best"][0]["note"] == f"not computed: no plan found within the explanation's time limit; {how}"
    render.recommend(r, "table")
    assert capsys.readouterr().out.count(how) == out.count(how)


def test_markdown_text_is_escaped_for_markdown_not_html():
    from gpuopt.templating import md_cell, md_text

    assert md_text("p99 TTFT <= 2000 ms & TPOT < 50 ms") == "p99 TTFT <= 2000 ms & TPOT < 50 ms"
    assert md_text("<b>x</b> &amp; *y*") == "\\<b>x\\</b> \\&amp; \\*y\\*"
    assert md_cell("a | b\nc") == "a \\| b c"


def test_a_wide_table_leaves_out_its_least_needed_columns_in_a_narrow_window():
    from gpuopt.templating import table_fit

    head = ["where", "instance type", "count", "$/month", "workloads", "break-even"]
    rows = [["aws us-east-1", "p5.48xlarge", "3", "$98,765.43", "chat, pretrain, support-lora", "61 %"]]
    assert table_fit(head[:4], rows, key="small")["css"] == ""  # fits 640 px: nothing left out
    wide = [r + ["x" * 30] * 12 for r in rows]
    fit = table_fit(head + [f"c{i}" for i in range(12)], wide, ("break-even", "workloads"), key="plan")
    assert fit["css"].startswith("@media (max-width:") and fit["id"] == "fit-plan"
    first, second = fit["css"].split("}}")[:2]
    assert "#fit-plan th:nth-child(6),#fit-plan td:nth-child(6){display:none}" in first  # break-even first
    assert "td:nth-child(5)" in second and "#fit-plan .n1{display:none" in second
    assert fit["notes"][1] == (2, "Narrow window: break-even, workloads not shown (a wider window, or the CSV or "
                                  "JSON beside this report, shows them).")


@pytest.mark.parametrize("fmt, ext", [("markdown", "md"), ("html", "html")])
def test_a_plan_with_no_solution_still_writes_its_report_saying_why_first(tmp_path, fmt, ext):
    # a breaker: `recommend --budget 1 -f markdown -o inf.md` wrote nothing (README: "a plan with no solution is
    # still written, its document says why"). The bundled example needs at least $1,760.65 in its dearest month.
    from typer.testing import CliRunner

    from gpuopt.cli import app

    out = tmp_path / f"inf.{ext}"
    r = CliRunner().invoke(app, ["recommend", "--budget", "1", "--no-explain", "--format", fmt, "--output", str(out)])
    assert r.exit_code == 1 and "gpuopt: no plan: the budget is too small" in r.stderr
    text = out.read_text(encoding="utf-8")
    first = text.index("NO PLAN (infeasible): the budget is too small")
    assert first < text.index("Summary") and "$1,760.65" in text
    data = json.loads((tmp_path / "inf.json").read_text(encoding="utf-8"))
    assert data["kind"] == "report-data" and data["feasible"] is False and data["status"] == "infeasible"


def test_an_unproven_plan_dearer_than_a_strategy_the_run_priced_points_at_it():
    # a new user's run of the example plan at --time-limit 20: this plan $573,488.13 (unproven), all on-demand
    # $109,340.98 (proven) -- and nothing said so
    from gpuopt.templating import unproven_caveat

    strategies = {"all_on_demand": {"status": "optimal", "total_usd": 109340.98},
                  "all_reserved_1y": {"status": "not_computed", "total_usd": None},
                  "this_plan": {"status": "time_limit", "total_usd": 573488.13}}
    text = unproven_caveat("time_limit", 0.9, 573488.13, time_limit_s=20, strategies=strategies)
    assert text.endswith("This run also priced all on-demand at $109,340.98, $464,147.15 less than this plan: "
                         "plan with --pricing on_demand for it, or rerun with the longer --time-limit")
    # a strategy dearer than the plan is not pointed at; a proven plan has no caveat at all
    strategies["all_on_demand"]["total_usd"] = 600000.0
    assert "also priced" not in unproven_caveat("time_limit", 0.9, 573488.13, time_limit_s=20, strategies=strategies)
    assert unproven_caveat("optimal", 0.0, 573488.13, strategies=strategies) is None
