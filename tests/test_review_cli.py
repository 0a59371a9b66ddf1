"""`gpuopt review` as a FinOps analyst uses it: the synthetic month in each export format gives the same review,
the recommended quantity is the optimum for the known pattern, the FOCUS output passes the validator, the HTML
report has its sections and chart, and the FOCUS sample's real rows are read."""

from __future__ import annotations

import base64
import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gpuopt.cli import app

FIX = Path(__file__).parent / "fixtures" / "usage"
runner = CliRunner()


def _review(*args):
    r = runner.invoke(app, ["review", *args])
    assert r.exit_code == 0, r.output
    return r


def _json(*args):
    return json.loads(_review(*args, "--format", "json").stdout)


@pytest.fixture(scope="module")
def cur():
    return _json("--usage", str(FIX / "synthetic_cur2.csv"))


def test_the_synthetic_month_reads_the_same_in_every_format(cur):
    for f in ("synthetic_focus_1.0.csv", "synthetic_hourly.csv"):
        d = _json("--usage", str(FIX / f))
        aws = lambda x: {(u["instance_type"], round(u["hours_used"], 3)) for u in x["usage"] if u["provider"] == "aws"}  # noqa: E731
        assert aws(d) == aws(cur)
        recs = lambda x: {(r["instance_type"], r["recommended_quantity"]) for r in x["recommendations"] if r["provider"] == "aws"}  # noqa: E731
        assert recs(d) == recs(cur)


def test_p4d_pattern_gets_the_optimal_commitment(cur):
    # p4d.24xlarge: 2 instances 12 h a day, 1 otherwise (README of the fixtures). Break-even = reserved 1y no-upfront
    # effective / on-demand. The first instance runs 100 % of hours -> commit; the second 50 %: commit only if the
    # break-even is below 50 %.
    rec = next(r for r in cur["recommendations"] if r["instance_type"] == "p4d.24xlarge")
    be = rec["reserved_effective_usd_per_hour"] / rec["on_demand_usd_per_hour"]
    assert rec["recommended_quantity"] == (2 if be < 0.5 else 1)
    od = rec["on_demand_usd_per_hour"]
    # monthly on-demand = (2 x 12 + 1 x 12) instance-hours a day x 730 / 24 x rate
    assert rec["estimated_monthly_on_demand_cost_usd"] == pytest.approx(36 * 730 / 24 * od, rel=1e-6)
    n = rec["recommended_quantity"]
    with_c = n * rec["reserved_effective_usd_per_hour"] * 730 + (2 - n) * 12 * 730 / 24 * od * (n == 1)
    assert rec["estimated_monthly_cost_with_commitment_usd"] == pytest.approx(with_c, rel=1e-6)
    assert rec["estimated_monthly_savings_usd"] == pytest.approx(
        rec["estimated_monthly_on_demand_cost_usd"] - rec["estimated_monthly_cost_with_commitment_usd"], abs=0.02)
    assert 0 < rec["average_utilization"] <= 1 and rec["lookback_days"] == pytest.approx(30, abs=0.1)


def test_g5_peak_alone_is_not_worth_a_commitment(cur):
    # g5.xlarge runs only 6 h a day (25 % of hours): below any break-even, so no commitment
    assert not any(r["instance_type"] == "g5.xlarge" for r in cur["recommendations"])


def test_focus_output_of_the_review_passes_the_validator(tmp_path):
    from focus_validator import validate_focus

    out = tmp_path / "review.focus.csv"
    _review("--usage", str(FIX / "synthetic_cur2.csv"), "--format", "focus", "--output", str(out))
    assert validate_focus(out) == []
    text = out.read_text()
    assert ",Purchase," in text and ",Committed," in text and ",Standard," in text


def test_html_review_report(tmp_path):
    out = tmp_path / "review.html"
    _review("--usage", str(FIX / "synthetic_cur2.csv"), "--format", "html", "--output", str(out))
    html = out.read_text()
    for h in ("Summary", "GPU usage", "Recommended commitments", "Chart"):
        assert f"<h2>{h}</h2>" in html
    (img,) = re.findall(r'data:image/png;base64,([A-Za-z0-9+/=]+)', html)
    assert base64.b64decode(img)[:8] == b"\x89PNG\r\n\x1a\n"
    assert (tmp_path / "review.csv").read_text().startswith("provider,")
    assert json.loads((tmp_path / "review.json").read_text())["recommendations"]


def test_real_focus_sample_is_read_and_reviewed():
    d = _json("--usage", str(FIX / "focus_sample_1.0.csv"))
    assert d["rows"]["read"] == 1000 and d["rows"]["gpu"] + d["rows"]["not_gpu"] + d["rows"]["bad"] == 1000
    assert d["source_format"] == "focus-1.0"


@pytest.mark.parametrize("args, field", [  # the option typed, as README Habits say (a file: its field)
    (["--usage", "nope.csv"], "usage"),
    (["--usage", str(FIX / "synthetic_cur2.csv"), "--term", "5y"], "--term"),
    (["--usage", str(FIX / "synthetic_cur2.csv"), "--payment", "later"], "--payment"),
    (["--usage", str(FIX / "synthetic_cur2.csv"), "--lookback", "soon"], "--lookback"),
    (["--usage", str(FIX / "synthetic_cur2.csv"), "--scope", "team"], "--scope"),
])
def test_bad_review_input_is_one_line(args, field):
    r = runner.invoke(app, ["review", *args])
    assert r.exit_code == 1
    assert r.stderr.startswith(f"gpuopt: error: {field}"), r.stderr
