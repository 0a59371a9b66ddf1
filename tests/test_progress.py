"""The progress line of a plan (issue 25: "a progress line on stderr for any solve that takes more than 2 s
(phase, bound, gap), off with --quiet"): what it says, where it goes, and when it stays silent."""

from __future__ import annotations

import io
import json
import re
import time

import pytest
from typer.testing import CliRunner

from gpuopt.cli import app
from optimizer.planning import progress

runner = CliRunner()

#: Lines of a real CBC 2.10 log (PuLP's bundled binary, a 60-variable covering MILP, ``logPath``), in order.
CBC_LOG = """Continuous objective value is 15024.6 - 0.00 seconds
Cbc0012I Integer solution of 15149.706 found by greedy cover after 0 iterations and 0 nodes (0.00 seconds)
Cbc0012I Integer solution of 15085.936 found by DiveCoefficient after 404 iterations and 0 nodes (0.09 seconds)
Cbc0010I After 0 nodes, 1 on tree, 15085.936 best solution, best possible 15031.52 (0.09 seconds)
Cbc0012I Integer solution of 15063.343 found by DiveCoefficient after 408 iterations and 2 nodes (0.09 seconds)
"""


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("GPUOPT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path)


def test_the_line_names_the_phase_best_bound_and_gap():
    out = io.StringIO()
    with progress.reporting(out, after_s=0.0, every_s=0.0, tty=False):
        progress.update("placement search", best=200.0, bound=150.0, detail="3 nodes")
        assert progress.line().startswith("gpuopt: placement search, 3 nodes · best $200.00 · bound $150.00 · "
                                          "gap 25.0 % · ")
        progress.update(bound=190.0)  # a value not given keeps its last one
        assert "best $200.00 · bound $190.00 · gap 5.0 %" in progress.line()
        progress.update("explaining")  # a new phase starts clean
        assert progress.line().startswith("gpuopt: explaining · ") and "best" not in progress.line()
        time.sleep(2 * progress.TICK_S)
    written = out.getvalue().splitlines()
    assert written and all(ln.startswith("gpuopt: ") for ln in written)


def test_nothing_is_shown_before_the_threshold_nor_without_a_reporter():
    out = io.StringIO()
    with progress.reporting(out, after_s=30.0, tty=False):
        progress.update("solving", best=1.0)
    assert out.getvalue() == ""  # the body ended before 30 s: no line
    progress.update("solving", best=1.0)  # no reporter open: a no-op, no error
    assert not progress._state.get("active")


def test_on_a_terminal_the_line_is_rewritten_in_place_and_cleared():
    out = io.StringIO()
    with progress.reporting(out, after_s=0.0, tty=True):
        progress.update("solving")
        time.sleep(3 * progress.TICK_S)
    text = out.getvalue()
    assert text.count("\r") >= 2 and "\n" not in text
    assert text.endswith("\r") and text.rsplit("\r", 2)[-2].strip() == ""  # cleared before the result is printed


def test_cbc_log_gives_the_incumbent_and_bound_while_it_is_written(tmp_path):
    log = tmp_path / "cbc.log"
    read = progress.cbc_log_progress(str(log))
    assert read() == (None, None)  # not written yet
    log.write_text(CBC_LOG.splitlines()[0] + "\n")
    assert read() == (None, 15024.6)  # the root LP is the first bound
    log.write_text(CBC_LOG)
    assert read() == (15063.343, 15031.52)  # the last integer solution, the last "best possible"


def test_a_solver_watch_feeds_the_line_outside_the_placement_search():
    with progress.reporting(io.StringIO(), after_s=60.0, tty=False):
        progress.update("solving")
        progress.watch(lambda: (120.0, 100.0))
        assert "best $120.00 · bound $100.00 · gap 16.7 %" in progress.line()
        progress.update("placement search", best=130.0, bound=90.0)  # a leaf MILP's bound is not the plan's
        progress.watch(lambda: (120.0, 100.0))
        assert "best $130.00 · bound $90.00" in progress.line()
        progress.watch(lambda: 1 / 0)  # a broken source never breaks the plan
        progress.update("solving")
        progress.watch(lambda: 1 / 0)
        assert progress.line().startswith("gpuopt: solving")


def test_recommend_shows_the_line_on_stderr_and_quiet_or_json_keep_it_off(monkeypatch):
    monkeypatch.setattr(progress, "AFTER_S", 0.0)
    args = ["recommend", "--model", "meta-llama/Llama-2-7b-hf", "--tokens-per-second", "500", "--no-explain"]
    r = runner.invoke(app, args)
    assert r.exit_code == 0, r.output
    # into a non-terminal stderr (the table format) a line per phase seen (sampled every TICK_S)
    assert "gpuopt: solving, " in r.stderr
    q = runner.invoke(app, ["--quiet", *args])
    assert q.exit_code == 0 and "gpuopt: " not in q.stderr
    # the plan is the same (the solver's seconds aside); --quiet prints results only, so not the notes (issue 32)
    notes = r.stdout.index("Note: ")
    assert "Note: " not in q.stdout
    assert re.sub(r"[0-9.]+ s;", "", q.stdout) == re.sub(r"[0-9.]+ s;", "", r.stdout[:notes])
    js = runner.invoke(app, [*args, "--format", "json"])
    assert js.exit_code == 0 and js.stderr == ""  # stderr not a terminal: it is for an error document only
    assert json.loads(js.stdout)["total_usd"] > 0


def test_the_explanations_keep_their_line_while_their_what_ifs_search():
    """A new user saw "placement search, 0 nodes ... bound $0.00" after "explaining": the what-if solves' own
    search (issue 25). While a phase is held, other phases do not take the line."""
    with progress.reporting(io.StringIO(), after_s=60.0, tty=False):
        progress.update("placement search", best=10.0, bound=9.0)
        progress.hold("explaining")
        progress.update("placement search", best=500.0, bound=0.0, detail="0 nodes")
        assert progress.line().startswith("gpuopt: explaining · ") and "$500" not in progress.line()
        progress.release()
        progress.update("placement search", detail="1 nodes")
        assert progress.line().startswith("gpuopt: placement search, 1 nodes")
