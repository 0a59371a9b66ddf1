"""Issue 33 point 1: "no plan" only with a proof.

A budget that cannot bind ties every workload together (``optimizer.planning.solve.independent_parts``), and the
joint MILP of 16 or more serving workloads with 24-hour demand lists found nothing in its time: the user read "no plan"
where a plan existed. Now the problem without its shared limits is planned first by the whole machinery (parts apart,
placement search, each workload apart: ``optimizer.planning.solve.solve_within_limits``), and its plan is the answer
when it keeps the limits. A solve that stops at its limit with no plan is "not solved within the limit" (status
not_solved, reason kind time_limit, exit 5), never "no plan" (exit 1, a proven infeasibility).

The plans are kept small (a few GPUs, regions and models) so each test runs in well under a minute.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

import gpuopt
from gpuopt.cli import app

MODELS = ["meta-llama/Llama-2-7b-hf", "Mistral-7B-v0.1"]
NOT_BINDING = 10_000_000.0  # USD a month: far above any of these plans' months


def plan_file(folder: Path, n: int, *, budget: float | None = None, gpus=("L4",),
              regions=("us-east-1", "us-west-2")) -> Path:
    """A plan file of ``n`` serving workloads on AWS, each a 24-hour demand list (one value an hour, a valley at noon),
    every third allowing spot; ``budget``: a monthly budget (USD)."""
    rng = random.Random(3)
    ws = []
    for i in range(n):
        base = rng.randint(100, 3000)
        ws.append({"name": f"s{i}", "task": "serve", "model": MODELS[i % len(MODELS)],
                   "demand": [int(base * (0.4 + 0.6 * abs(12 - h) / 12)) for h in range(24)],
                   "allow_spot": i % 3 == 0})
    doc: dict = {"horizon_months": 12, "pricing": ["on_demand", "spot", "reserved_1y", "reserved_3y"],
                 "providers": ["aws"], "gpus": list(gpus), "regions": list(regions), "workloads": ws}
    if budget is not None:
        doc["budget"] = budget
    path = folder / f"plan_{n}{'_budget' if budget is not None else ''}.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    return path


def _plan(path: Path, limit: float):
    return gpuopt.recommend(workload=path, time_limit_s=limit, explain=False).plan


def test_16_workloads_with_a_budget_that_cannot_bind_get_the_plan_without_it(tmp_path):
    free = _plan(plan_file(tmp_path, 16), 20)
    tied = _plan(plan_file(tmp_path, 16, budget=NOT_BINDING), 20)
    assert free.status == "optimal" and free.feasible
    # a relaxation's optimum that keeps the budget is the optimum: the same plan, said optimal
    assert tied.status == "optimal" and tied.feasible and tied.gap == 0.0
    assert tied.total_usd == pytest.approx(free.total_usd, abs=0.01) and tied.total_usd > 1e6
    assert tied.max_month_usd <= NOT_BINDING
    assert "budgets and quota do not bind" in tied.solver["message"]
    assert tied.reason is None


def test_30_workloads_with_a_budget_that_cannot_bind_get_a_plan_with_its_gap(tmp_path):
    # three regions and two GPUs: the placement search stops at its limit (the joint MILP found nothing in 20 s)
    kw = dict(gpus=("L4", "A10G"), regions=("us-east-1", "us-west-2", "eu-west-1"))
    free = _plan(plan_file(tmp_path, 30, **kw), 20)
    tied = _plan(plan_file(tmp_path, 30, budget=NOT_BINDING, **kw), 30)  # half of it for the plan without the budget
    assert free.feasible and tied.feasible
    assert tied.status in ("optimal", "time_limit") and tied.max_month_usd <= NOT_BINDING
    assert tied.total_usd > 1e6 and 0.0 <= tied.gap < 0.5
    if tied.status == "optimal" and free.status == "optimal":
        assert tied.total_usd == pytest.approx(free.total_usd, abs=0.01)
    else:  # each one's lower bound is a bound of the other (the budget does not bind): the intervals meet
        assert tied.total_usd * (1 - tied.gap) <= free.total_usd + 0.01
        assert free.total_usd * (1 - free.gap) <= tied.total_usd + 0.01


def test_200_workloads_with_a_budget_that_cannot_bind_are_never_called_infeasible(tmp_path):
    plan = _plan(plan_file(tmp_path, 200, budget=100 * NOT_BINDING, regions=("us-east-1",)), 10)
    assert plan.status in ("optimal", "time_limit", "not_solved")
    assert plan.status != "infeasible"
    if plan.feasible:
        assert plan.total_usd > 1e7 and plan.max_month_usd <= 100 * NOT_BINDING
        assert len(plan.workloads) == 200
    else:
        assert plan.reason["kind"] == "time_limit"
        assert plan.reason["message"].startswith("not solved within the limit (10 s): no plan was found and none was "
                                                 "proven impossible; rerun with --time-limit 60")


def test_a_binding_budget_at_a_tiny_time_limit_is_not_solved_exit_5_not_no_plan(tmp_path):
    kw = dict(gpus=("L4", "A10G"), regions=("us-east-1", "us-west-2", "eu-west-1"))
    path = plan_file(tmp_path, 30, budget=300_000.0, **kw)  # the plan without it spends ~312,000 USD a month
    r = CliRunner().invoke(app, ["recommend", "--workload", str(path), "--time-limit", "3", "--format", "json",
                                 "--no-explain"])
    assert r.exit_code == 5, r.output
    doc = json.loads(r.stdout)
    assert doc["status"] == "not_solved" and doc["feasible"] is False
    assert doc["reason"]["kind"] == "time_limit"
    assert doc["reason"]["message"].startswith("not solved within the limit (3 s): no plan was found and none was "
                                               "proven impossible; rerun with --time-limit 60")
    err = json.loads(r.stderr)
    assert err["exit_code"] == 5 and err["error"]["type"] == "not_solved"
    assert "no plan:" not in err["error"]["message"]


def test_the_report_of_a_plan_not_solved_says_not_solved_within_the_limit_not_no_plan(tmp_path):
    kw = dict(gpus=("L4", "A10G"), regions=("us-east-1", "us-west-2", "eu-west-1"))
    path = plan_file(tmp_path, 30, budget=300_000.0, **kw)
    out = tmp_path / "plan.md"
    r = CliRunner().invoke(app, ["recommend", "--workload", str(path), "--time-limit", "3", "--format", "markdown",
                                 "--output", str(out), "--no-explain"])
    assert r.exit_code == 5, r.output
    last = r.stderr.splitlines()[-1]  # after the prices' warning
    assert last.startswith("gpuopt: not solved within the limit (3 s)") and "no plan:" not in r.stderr
    text = out.read_text(encoding="utf-8")
    first = text.index("NOT SOLVED WITHIN THE LIMIT: not solved within the limit (3 s): no plan was found and none "
                       "was proven impossible")
    assert first < text.index("Summary") and "NO PLAN" not in text and "No plan" not in text
    assert "Not solved within the limit: not solved within the limit (3 s)" in text  # the summary's line
