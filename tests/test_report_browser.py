"""The HTML reports in a real browser: a plan report and a review report are written to a folder, served on
127.0.0.1 and loaded by headless Chromium (Debian's ``chromium``). The page loads, its title and commitment total
are in the DOM Chromium built, the report's style applies, every <img> decoded (naturalWidth > 0), and a screenshot
is a real picture (not a blank page).

Chromium reads the report inside an iframe of a small check page written beside it (the report itself has no
script): when the report has loaded, the check page writes what it found as JSON into its own DOM, which
``chromium --dump-dom`` prints. Without Chromium the tests skip, except under CI=1 (``.ci/run`` installs it), where
they fail.
"""

from __future__ import annotations

import functools
import html
import http.server
import json
import os
import re
import shutil
import subprocess
import threading
from pathlib import Path

import pytest

from focus_validator import example_fleet_result
from gpuopt.charting import FIG_DPI, FIG_SIZE
from gpuopt.report import charts, render_report, report_data
from gpuopt.review_report import commitment_totals, render_review_report

FIX = Path(__file__).parent / "fixtures" / "usage"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync", "--hide-scrollbars"]

CHECK_PAGE = """<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>check</title>
<script>
function check(frame) {
  var d = frame.contentDocument, imgs = Array.prototype.slice.call(d.images);
  var total = d.getElementById("commitment");
  var out = document.createElement("pre");
  out.id = "result";
  out.textContent = JSON.stringify({
    url: d.location.href, title: d.title,
    commitment: total ? total.textContent : null,
    h2: Array.prototype.map.call(d.querySelectorAll("h2"), function (h) { return h.textContent; }),
    images: imgs.length,
    loaded: imgs.filter(function (i) { return i.complete && i.naturalWidth > 0; }).length,
    widths: imgs.map(function (i) { return i.naturalWidth; }),
    heights: imgs.map(function (i) { return i.naturalHeight; }),
    header_color: getComputedStyle(d.querySelector("header")).backgroundColor,
    body_font_px: parseFloat(getComputedStyle(d.body).fontSize),
    page: [d.documentElement.scrollWidth, d.documentElement.clientWidth],
    tables: Array.prototype.map.call(d.querySelectorAll(".table-wrap"), function (w) {
      var t = w.querySelector("table"), heads = Array.prototype.filter.call(t.querySelectorAll("th"),
        function (h) { return getComputedStyle(h).display !== "none"; });
      var note = Array.prototype.filter.call(w.querySelectorAll(".narrow"),
        function (p) { return getComputedStyle(p).display !== "none"; });
      return {cls: t.className, scroll: w.scrollWidth, client: w.clientWidth, table: t.offsetWidth,
              shown: heads.map(function (h) { return h.textContent; }),
              note: note.map(function (p) { return p.textContent; })};
    }),
    caveat: d.getElementById("caveat") ? d.getElementById("caveat").textContent : null
  });
  document.body.appendChild(out);
}
</script></head>
<body><iframe src="REPORT" onload="check(this)" style="width:WIDTHpx;height:900px;border:0"></iframe></body></html>
"""


@pytest.fixture(scope="module")
def chromium() -> str:
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if exe is None:
        if os.environ.get("CI") == "1":
            pytest.fail("chromium is not installed (CI=1: .ci/run installs Debian's chromium package)")
        pytest.skip("chromium is not installed (apt-get install chromium)")
    return exe


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """(folder, base URL) of a folder served over HTTP on 127.0.0.1 for the module's tests."""
    folder = tmp_path_factory.mktemp("served")

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):  # no request log on the test's stderr
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(folder)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield folder, f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


def _run(chromium: str, tmp: Path, *args: str) -> subprocess.CompletedProcess:
    profile = tmp / "chromium-profile"
    return subprocess.run([chromium, *FLAGS, f"--user-data-dir={profile}", *args], capture_output=True, text=True,
                          timeout=120, check=False)


def _load(chromium: str, served, report: str, tmp: Path, width: int = 1200) -> dict:
    """What the browser found in ``report`` (a file in the served folder) shown ``width`` px wide, read through the
    check page."""
    folder, base = served
    page = folder / f"check_{Path(report).stem}_{width}.html"
    page.write_text(CHECK_PAGE.replace("REPORT", report).replace("WIDTH", str(width)), encoding="utf-8")
    r = _run(chromium, tmp, "--dump-dom", base + page.name)
    found = re.search(r'<pre id="result">(.*?)</pre>', r.stdout, flags=re.S)
    assert found, f"the check page did not report (exit {r.returncode}): {r.stdout[-500:]} {r.stderr[-2000:]}"
    return json.loads(html.unescape(found.group(1)))


def _screenshot(chromium: str, served, report: str, tmp: Path) -> Path:
    """A 1400 x 2000 screenshot of ``report``; checks it is a PNG of that size with more than a blank page in it."""
    from matplotlib.image import imread

    folder, base = served
    shot = folder / f"{Path(report).stem}_screenshot.png"
    r = _run(chromium, tmp, "--window-size=1400,2000", f"--screenshot={shot}", base + report)
    assert shot.exists(), r.stderr[-2000:]
    pixels = imread(shot)
    assert pixels.shape[:2] == (2000, 1400)
    colors = {tuple(p) for p in (pixels[::20, ::20, :3] * 255).round().astype(int).reshape(-1, 3).tolist()}
    assert len(colors) > 20  # text, tables, the header band and charts: not an empty or error page
    return shot


def test_plan_report_in_chromium(chromium, served, tmp_path):
    folder, _ = served
    result = example_fleet_result()
    render_report(result, "html", folder / "plan.html")
    got = _load(chromium, served, "plan.html", tmp_path)
    plan = result.plan
    assert got["url"].endswith("/plan.html") and got["title"] == "gpuopt plan"
    assert plan.commitment_usd > 0 and got["commitment"] == f"${plan.commitment_usd:,.2f}"
    assert got["h2"] == ["Summary", "Plan", "Strategy comparison", "Charts", "Workloads", "Constraints and notes",
                         "Prices"]
    n = len(charts(report_data(result)))
    assert n == 5 and got["images"] == n and got["loaded"] == n
    assert got["widths"] == [round(FIG_SIZE[0] * FIG_DPI)] * n  # 1000 px wide, decoded by the browser
    assert got["header_color"] == "rgb(11, 110, 79)" and got["body_font_px"] == 16  # the shared CSS applies
    _screenshot(chromium, served, "plan.html", tmp_path)


def test_review_report_in_chromium(chromium, served, tmp_path):
    import gpuopt.api

    folder, _ = served
    result = gpuopt.api.review(usage=FIX / "synthetic_cur2.csv")
    render_review_report(result, "html", folder / "review.html")
    got = _load(chromium, served, "review.html", tmp_path)
    totals = commitment_totals(result)
    (rec,) = result.recommendations  # p4d.24xlarge, 1 year, no upfront (tests/fixtures/usage/README)
    assert totals["total_usd"] == pytest.approx(rec.recurring_monthly_cost_usd * 12, abs=0.01)
    assert got["title"] == "gpuopt monthly review" and got["commitment"] == f"${totals['total_usd']:,.2f}"
    assert got["h2"] == ["Summary", "GPU usage", "Recommended commitments", "Chart", "Notes"]
    assert got["images"] == 1 and got["loaded"] == 1 and got["widths"] == [round(FIG_SIZE[0] * FIG_DPI)]
    assert got["header_color"] == "rgb(11, 110, 79)"  # styled like the plan's report
    narrow = _load(chromium, served, "review.html", tmp_path, width=800)  # issue 32: no table overflows at 800 px
    assert narrow["page"][0] <= narrow["page"][1] and narrow["tables"]
    assert all(t["scroll"] <= t["client"] for t in narrow["tables"]), narrow["tables"]
    _screenshot(chromium, served, "review.html", tmp_path)


def test_wide_report_tables_fit_a_narrow_window(chromium, served, tmp_path):
    """Issue 32: at 800 px no table of the plan report overflows its container (no scroll bar hides columns):
    text wraps, and the plan table leaves out its least needed columns (break-even first), saying so under it; at
    1600 px the plan table shows more of them."""
    from focus_validator import one_workload_result

    folder, _ = served
    render_report(one_workload_result(), "html", folder / "narrow.html")
    narrow = _load(chromium, served, "narrow.html", tmp_path, width=800)
    assert narrow["page"][0] <= narrow["page"][1]  # the page itself does not scroll sideways
    tables = {t["cls"]: t for t in narrow["tables"]}
    assert set(tables) == {"plan", "strategies", "workloads", "prices"}
    for t in narrow["tables"]:
        assert t["scroll"] <= t["client"] and t["table"] <= t["client"], t
    plan = tables["plan"]
    assert "break-even" not in plan["shown"] and {"instance type", "count", "$/month", "total"} <= set(plan["shown"])
    (note,) = plan["note"]
    assert note.startswith("Narrow window: break-even, ") and note.endswith(
        "not shown (a wider window, or the CSV or JSON beside this report, shows them).")
    hidden = note.removeprefix("Narrow window: ").split(" not shown")[0].split(", ")
    assert len(plan["shown"]) + len(hidden) == 20
    wide = {t["cls"]: t for t in _load(chromium, served, "narrow.html", tmp_path, width=1600)["tables"]}
    assert len(wide["plan"]["shown"]) > len(plan["shown"]) and all(t["scroll"] <= t["client"] for t in wide.values())
