"""Reproducers of misleading error messages of `gpuopt recommend` (gpuopt/cli.py, gpuopt.plan_spec.named_as_options,
commit ce4b617): an error in a plan file's key must keep the file's key name and line; only an option the user
typed is named as that option.

Each test fails fast (the error is raised before any solve)."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from gpuopt.cli import app

runner = CliRunner()

SERVE = """\
workloads:
  - name: chat
    task: serve
    model: meta-llama/Llama-2-7b-hf
    tokens_per_second: 500
"""


def _err(r) -> str:
    """The error line; with --format json the error is a JSON document on stderr (gpuopt.schemas.ErrorDoc): its
    message, as the line would say it."""
    for x in reversed(r.stderr.splitlines()):
        if x.startswith("{"):
            doc = json.loads(x)
            assert doc["kind"] == "error" and doc["exit_code"] == r.exit_code
            return f"gpuopt: error: {doc['error']['message']}"
    lines = [x for x in r.stderr.splitlines() if x.startswith("gpuopt: error")]
    return lines[-1] if lines else r.stderr


# ------------------------------------------------------------------------------- ./gpuopt.yaml read implicitly
@pytest.mark.parametrize("text, key, option", [
    ("horizon_months: 0\n" + SERVE, "horizon_months", "--horizon"),
    ("time_limit_s: 0\n" + SERVE, "time_limit_s", "--time-limit"),
    (SERVE + "    min_replicas: -1\n", "workloads[0].min_replicas", "--min-replicas"),
])
def test_errors_of_an_implicit_gpuopt_yaml_keep_the_file_key_and_line(tmp_path, monkeypatch, text, key, option):
    # `gpuopt recommend` with no --workload reads ./gpuopt.yaml (api._plan_path). cli.recommend passes
    # named_as_options(every=workload is None) -> every=True, so an error in a key of that FILE is renamed to an
    # option the user never typed, and the file's line is dropped.
    # today: "gpuopt: error: --horizon: must be at least 1, got 0" (and --time-limit, --min-replicas) where
    # `gpuopt recommend --workload gpuopt.yaml` says "horizon_months: must be at least 1, got 0 (gpuopt.yaml, line 1)"
    (tmp_path / "gpuopt.yaml").write_text(text)
    monkeypatch.chdir(tmp_path)
    r = runner.invoke(app, ["recommend", "--no-explain", "--format", "json"])
    assert r.exit_code == 1
    err = _err(r)
    assert option not in err, err
    assert key in err and "gpuopt.yaml, line" in err, err


# ------------------------------------------------------------------------------- gpus / providers / regions
@pytest.mark.parametrize("line, key", [
    ("gpus: [H100-80GB, bogusgpu]", "gpus"),
    ("providers: [bogus]", "providers"),
    ("regions: [bogus]", "regions"),
])
def test_a_bad_gpu_provider_or_region_in_the_file_is_named_by_its_file_key(tmp_path, line, key):
    # with --workload FILE, a file's key keeps its name and line (region_group, pricing, solver, placement do:
    # "pricing[0]: unknown value 'bogus' (f.yaml, line 1)"); the offer filters (api.filter_offers,
    # _canonical_gpu_filter) raise on fields "gpu" / "provider" / "region", which are neither the file's key nor the
    # option typed (none was). today: "gpuopt: error: gpu: unknown GPU 'bogusgpu' (accepted: ...)", no line.
    f = tmp_path / "plan.yaml"
    f.write_text("horizon_months: 12\n" + line + "\n" + SERVE)
    r = runner.invoke(app, ["recommend", "--workload", str(f), "--no-explain", "--format", "json"])
    assert r.exit_code == 1
    err = _err(r)
    assert err.startswith(f"gpuopt: error: {key}"), err
    assert "plan.yaml, line 2" in err, err


def test_a_file_region_not_offered_by_the_provider_typed_is_named_by_its_file_key(tmp_path):
    # --provider aws typed, regions: [eastus] (an Azure region) in the file: the error is about the file's key.
    # today: "gpuopt: error: region: 'eastus' is not offered by the providers selected (accepted: ...)"
    f = tmp_path / "plan.yaml"
    f.write_text("regions: [eastus]\n" + SERVE)
    r = runner.invoke(app, ["recommend", "--workload", str(f), "--provider", "aws", "--no-explain", "--format", "json"])
    assert r.exit_code == 1
    err = _err(r)
    assert err.startswith("gpuopt: error: regions"), err
    assert "plan.yaml, line 1" in err, err


# ------------------------------------------------------------------------------- a path typed on the command line
def test_a_relative_path_typed_as_an_option_is_not_resolved_against_the_plan_folder(tmp_path, monkeypatch):
    # `--workload sub/plan.yaml --demand-profile here.csv`, here.csv in the current folder: the option's path is
    # resolved against the PLAN FILE's folder (plan_spec: "a relative path is relative to the plan"), so the CLI
    # says the file the user typed does not exist. today:
    # "gpuopt: error: --demand-profile: file not found: sub/here.csv (a relative path is relative to the plan file's
    # folder)". Expected: the path typed is relative to where it was typed (as without --workload), or at least the
    # message does not call an existing file missing. (Same for --catalog.)
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "plan.yaml").write_text(SERVE)
    (tmp_path / "here.csv").write_text("hour,tokens_per_second\n" + "".join(f"{h},{300 + 10 * h}\n" for h in range(24)))
    monkeypatch.chdir(tmp_path)
    r = runner.invoke(app, ["recommend", "--workload", "sub/plan.yaml", "--demand-profile", "here.csv",
                            "--provider", "aws", "--gpu", "L4", "--no-explain", "--format", "json"])
    assert "file not found" not in r.stderr, _err(r)


# ------------------------------------------------------------------------------- merged lines (commit a7f84a1)
def test_a_line_merged_over_periods_adds_up_to_the_plan_total_within_half_a_cent():
    # docs/json-schema.md "Identities": sum(lines[].total_usd) == total_usd, rounding to the cent, "sums agree within
    # half a cent per term" (tests/test_json_schema.py: 0.005 x len(lines)). _merge_periods adds the ROUNDED totals
    # of each period's line, so one merged line carries the rounding of every period: one on-demand instance at
    # $1.00001/h through 10 periods of 12 months (the 1-year renewal cuts of a 120-month horizon) is ONE line of
    # 87,600.90 for a plan total of 87,600.88 (10 x round(8,760.0876, 2) = 87,600.90). Expected: the merged line's
    # total rounded once from the unrounded sum (87,600.88).
    from types import SimpleNamespace

    from optimizer.planning.answer import fleet_lines
    from optimizer.planning.candidates import Candidate
    from optimizer.planning.horizon import Period
    from optimizer.planning.problem import FleetBlock, FleetProblem, FleetWorkload
    from optimizer.planning.solution import money
    from optimizer.planning.solve import solve_cost

    offer = {"provider": "t", "region": "r1", "zone": "", "instance_type": "x", "pricing": "on_demand", "payment": "",
             "usd_per_hour": 1.00001, "recurring_usd_per_hour": 0.0, "upfront_usd": 0.0, "gpu_model": "L4",
             "gpu_count": 1.0, "gpu_memory_gib": 22.35, "interconnect": "pcie", "source": "test", "as_of": "2026-01-01"}
    c = Candidate(key="x", offer=offer, instances_per_unit=1, replicas_per_unit=1,
                  sizing=SimpleNamespace(gpus_per_replica=1.0), usd_per_unit_hour=1.00001, throughput_per_unit=100.0,
                  shape="x")
    n = 10
    periods = [Period(i, 12 * i, 12, ("a",), {}, {}) for i in range(n)]
    blocks = [FleetBlock(0.0, 730.0, {"a": 100.0}, f"p{i}", period=i) for i in range(n)]
    w = FleetWorkload(name="a", workload=SimpleNamespace(task="serve", model=SimpleNamespace(name="m")), min_replicas=1)
    pr = FleetProblem([w], blocks, {"a": [c]}, {}, horizon_months=12 * n, periods=periods)
    sol = solve_cost(pr, gap_rel=0.0)
    lines = fleet_lines(pr, sol, {})
    total = money(pr, sol)["total_usd"]
    assert len(lines) == 1 and (lines[0].start_month, lines[0].end_month) == (1, 120)
    # today: 87600.9 vs 87600.88
    assert abs(sum(ln.total_usd for ln in lines) - total) <= 0.005 * len(lines) + 1e-9, (lines[0].total_usd, total)
