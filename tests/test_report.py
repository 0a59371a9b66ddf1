"""The Markdown/HTML report: its sections, its embedded charts (real PNGs), its numbers (the result's), the CSV and
JSON beside it, escaping, determinism."""

from __future__ import annotations

import base64
import copy
import csv
import json
import re
import struct

import pytest

import gpuopt
from focus_validator import example_fleet_result, one_workload_result
from gpuopt.report import FIG_DPI, FIG_SIZE, companion_paths, render_report, report_data

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
    plan = result.plan
    assert re.search(rf'<span id="total">\${plan.total_monthly_usd:,.2f}</span>', text)
    table = text.split('<table class="strategies">', 1)[1].split("</table>", 1)[0]
    rows = re.findall(r"<tr><td>([^<]+)</td><td class=\"n\">([^<]+)</td>", table)
    assert len(rows) == len(plan.strategies)
    for (label, shown), (name, s) in zip(rows, plan.strategies.items()):
        assert shown == f"${s['monthly_usd']:,.2f}", (name, label, shown)
    assert f"${plan.savings_vs_on_demand_usd:,.2f} ({plan.savings_vs_on_demand_pct:.1f} %)" in text
    plan_table = text.split('<table class="plan">', 1)[1].split("</table>", 1)[0]
    assert plan_table.count("<tr>") == len(plan.lines) + 1
    for ln in plan.lines:
        assert f"${ln.monthly_usd:,.2f}" in plan_table and ln.instance_type in plan_table


def _check_companions(path, result) -> None:
    comp = companion_paths(path)
    with comp["csv"].open(encoding="utf-8") as f:
        lines = list(csv.DictReader(f))
    assert [float(r["monthly_usd"]) for r in lines] == [ln.monthly_usd for ln in result.plan.lines]
    data = json.loads(comp["json"].read_text(encoding="utf-8"))
    assert data["total_usd"] == pytest.approx(result.plan.total_monthly_usd)
    assert {s["name"]: s["monthly_usd"] for s in data["strategies"]} == {
        k: v["monthly_usd"] for k, v in result.plan.strategies.items()}
    assert len(data["lines"]) == len(result.plan.lines) and data["prices"]["providers"]


def test_html_report_of_the_example_fleet_plan(tmp_path, fleet):
    path = render_report(fleet, "html", tmp_path / "fleet.html")
    text = path.read_text(encoding="utf-8")
    assert _headings(text) == ["Summary", "Plan", "Strategy comparison", "Charts", "Workloads", "Constraints and notes",
                               "Prices"]
    images = _images(text)
    assert len(images) == 4 and all(_png_size(p) == SIZE for p in images)
    _check_numbers(text, fleet)
    for w in fleet.plan.workloads:
        assert f"<td>{w['name']}</td>" in text
    reserved = [ln for ln in fleet.plan.lines if ln.pricing.startswith("reserved")]
    assert (f"Commitment taken: {sum(ln.count for ln in reserved)} reserved instance(s) on {len(reserved)} line(s), "
            f"${sum(ln.commitment_usd for ln in reserved):,.2f} over their terms") in text
    assert "shipped snapshot" in text and "as of 2026-11-30 or earlier" in text  # where prices come from, how old
    _check_companions(path, fleet)
    data = report_data(fleet)
    dc = data["demand_capacity"]
    assert dc["kind"] == "blocks" and set(dc["series"]) == {"chat"}
    assert len(dc["series"]["chat"]["demand"]) == len(fleet.plan.blocks)


def test_html_report_of_the_one_workload_plan(tmp_path, one):
    path = render_report(one, "html", tmp_path / "one.html")
    text = path.read_text(encoding="utf-8")
    assert _headings(text) == ["Summary", "Plan", "Strategy comparison", "Charts", "Constraints and notes", "Prices"]
    images = _images(text)
    assert len(images) == 4 and all(_png_size(p) == SIZE for p in images)
    _check_numbers(text, one)
    assert "17.2757*" in text and "* estimated price" in text  # the estimated rate is marked
    _check_companions(path, one)
    dc = report_data(one)["demand_capacity"]
    assert dc == {"kind": "bars", "unit": "tokens/s", "needed": 2000.0,
                  "planned": one.plan.capacity["tokens_per_second_planned"]}


def test_markdown_report_writes_and_links_its_pngs(tmp_path, fleet):
    path = render_report(fleet, "markdown", tmp_path / "plan.md")
    text = path.read_text(encoding="utf-8")
    for h in ("## Summary", "## Plan", "## Strategy comparison", "## Charts", "## Workloads", "## Prices"):
        assert f"\n{h}\n" in text
    links = re.findall(r"!\[[^\]]*\]\(([^)]+\.png)\)", text)
    assert links == ["plan_cost_by_strategy.png", "plan_demand_capacity.png", "plan_spend_by_provider.png",
                     "plan_spend_by_gpu_model.png"]
    for name in links:
        assert _png_size((tmp_path / name).read_bytes()) == SIZE
    assert f"${fleet.plan.total_monthly_usd:,.2f} per month" in text
    for ln in fleet.plan.lines:  # Markdown specials escaped: reserved\_3y renders as reserved_3y
        assert f"| {ln.pricing.replace('_', chr(92) + '_')} |" in text
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
