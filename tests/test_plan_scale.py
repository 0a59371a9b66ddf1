"""Plans of many workloads (issue 30 point 5): what makes them fast keeps their answers, the explanations say when they
are skipped, and a plan past the workload limit is a one-line error. The timings themselves are measured by
benchmarks/bench_workloads.py (README), never here."""

from __future__ import annotations

import dataclasses

import pytest
import yaml
from typer.testing import CliRunner

from gpuopt.cli import app
from gpuopt.request import MAX_WORKLOADS
from optimizer.planning import plan as plan_mod
from optimizer.planning.candidates import shared_records, shared_shapes, unit_table
from optimizer.planning.plan import plan_fleet
from optimizer.planning.problem import FleetWorkload, cand_index
from optimizer.sizing import Workload
from optimizer.sizing.specs import load_model
from pricing_cache.store import load_offers


@pytest.fixture(scope="module")
def offers():
    df, _ = load_offers()
    # one AWS region, on-demand and 1-year reservations of three GPU instance types: small and real
    return df[(df["provider"] == "aws") & (df["region"] == "us-east-1")
              & df["instance_type"].isin(["g6.xlarge", "g5.xlarge", "g6e.xlarge"])
              & df["pricing"].isin(["on_demand", "reserved_1y"])]


def _prof(**peaks):
    from optimizer.planning.demand import inline_profile

    return {w: inline_profile([v]) for w, v in peaks.items()}


def _serve(tps, **kw):
    return Workload(task="serve", model=load_model("meta-llama/Llama-2-7b-hf"), tokens_per_second=tps, **kw)


def test_workloads_that_differ_only_in_demand_share_their_replica_shapes(offers):
    a, b = _serve(500.0), _serve(2400.0)
    store: dict = {}
    assert shared_shapes(a, store) is shared_shapes(b, store)  # the same demand-free workload
    assert shared_shapes(_serve(500.0, scenario="interactive"), store) is not shared_shapes(a, store)  # other targets
    assert shared_shapes(dataclasses.replace(a, disaggregate="on"), store) == {}  # a unit sized for its demand
    assert shared_shapes(a) == {} and shared_shapes(a) is not shared_shapes(b)  # no store: nothing kept
    kw = dict(pricing=("on_demand", "reserved_1y"))
    ta, tb = unit_table(a, offers, shapes=store, **kw), unit_table(b, offers, shapes=store, **kw)
    assert ta.throughput.tolist() == tb.throughput.tolist() and ta.ok.any()
    assert ta.throughput.tolist() == unit_table(b, offers, **kw).throughput.tolist()  # the same as sized alone


def test_candidates_of_every_workload_read_one_dict_per_catalog_row(offers):
    store = shared_records(offers)
    ta = unit_table(_serve(500.0), offers, pricing=("on_demand",), records=store)
    tb = unit_table(_serve(900.0, scenario="interactive"), offers, pricing=("on_demand",), records=store)
    ca, cb = ta.candidates(), tb.candidates()
    assert ca and cb
    by_key = {c.okey: c.offer for c in ca}
    shared = [c for c in cb if c.okey in by_key]
    assert shared and all(c.offer is by_key[c.okey] for c in shared)
    # and the rows are the frame's, as without the store
    alone = {c.okey: c.offer for c in unit_table(_serve(500.0), offers, pricing=("on_demand",)).candidates()}
    assert {k: v["usd_per_hour"] for k, v in alone.items()} == {k: v["usd_per_hour"] for k, v in by_key.items()}
    assert shared_records(offers.reset_index(drop=True).iloc[[0, 0]]) is None  # labels that repeat: no store


def test_the_candidate_index_is_built_once_and_follows_new_candidate_lists(offers):
    ws = [FleetWorkload("a", _serve(500.0), min_replicas=1), FleetWorkload("b", _serve(900.0), min_replicas=1)]
    r = plan_fleet(ws, _prof(a=500.0, b=900.0), offers, explain=False)
    assert r.status == "optimal"
    from optimizer.planning.problem_build import make_problem

    pr = make_problem(ws, _prof(a=500.0, b=900.0), offers)
    idx = cand_index(pr)
    assert cand_index(pr) is idx and len(idx) == sum(len(v) for v in pr.cands.values())
    pr.cands["a"] = pr.cands["a"][:1]  # a new list: the index is rebuilt
    assert len(cand_index(pr)) == 1 + len(pr.cands["b"])


def test_plans_of_more_workloads_than_explained_say_so(offers, monkeypatch):
    monkeypatch.setattr(plan_mod, "EXPLAIN_MAX_WORKLOADS", 1)
    ws = [FleetWorkload("a", _serve(500.0), min_replicas=1), FleetWorkload("b", _serve(900.0), min_replicas=1)]
    r = plan_fleet(ws, _prof(a=500.0, b=900.0), offers, explain=True)
    assert r.status == "optimal" and not r.strategies and not r.targets
    assert any(n.startswith("explanations skipped: 2 workloads, above 1") for n in r.notes)
    one = plan_fleet(ws[:1], _prof(a=500.0), offers, explain=True)
    assert one.strategies and not any("explanations skipped" in n for n in one.notes)


def test_a_plan_file_past_the_workload_limit_is_one_line(tmp_path):
    ws = [{"name": f"s{i}", "task": "serve", "model": "Llama-3-8B", "tokens_per_second": 100}
          for i in range(MAX_WORKLOADS + 1)]
    path = tmp_path / "big.yaml"
    path.write_text(yaml.safe_dump({"workloads": ws}), encoding="utf-8")
    r = CliRunner().invoke(app, ["recommend", "--workload", str(path)])
    assert r.exit_code == 1 and r.exception is None or isinstance(r.exception, SystemExit)
    lines = [ln for ln in r.output.splitlines() if ln.strip()]
    assert len(lines) == 1 and "workloads: has 501 workloads, above the limit of 500" in lines[0]
    assert "Traceback" not in r.output
