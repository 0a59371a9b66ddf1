"""The documented JSON interface of `gpuopt recommend --format json` (docs/json-schema.md,
docs/schemas/recommend.schema.json generated from gpuopt.schemas.RecommendDoc, ``schema_version`` 2): real plans from
``gpuopt.api.recommend`` validate against the JSON Schema (``jsonschema``), the pydantic model, and declare every key,
and their numbers add up as the document says.
"""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import jsonschema
import pytest

from gpuopt import schemas
from gpuopt.api import SCHEMA_VERSION, recommend

ROOT = Path(__file__).resolve().parents[1]
SCHEMA_PATH = ROOT / "docs" / "schemas" / "recommend.schema.json"
DOC_PATH = ROOT / "docs" / "json-schema.md"
MODEL = "meta-llama/Llama-2-7b-hf"


# ------------------------------------------------------------------------------------------------ the checker
def _resolve(root: dict, ref: str) -> dict:
    assert ref.startswith("#/"), f"only local $ref are supported, got {ref}"
    node = root
    for part in ref[2:].split("/"):
        node = node[part]
    return node


def check(instance, schema: dict) -> list[str]:
    """Errors of ``instance`` against the published schema (jsonschema, draft 2020-12)."""
    v = jsonschema.Draft202012Validator(schema)
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in v.iter_errors(instance)]


def validate(doc: dict, schema: dict) -> None:
    """Fail with every error: the published JSON Schema, the pydantic model it is generated from
    (gpuopt.schemas.RecommendDoc), and every key of the document declared there."""
    errors = check(doc, schema)
    assert not errors, "\n".join(errors[:20])
    parsed = schemas.validate(doc)
    assert schemas.undeclared_keys(parsed) == []


# ------------------------------------------------------------------------------------------------ fixtures
@pytest.fixture(scope="module")
def schema() -> dict:
    return json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))


def _plan(tmp_path_factory, **kw) -> dict:
    """recommend(...).to_dict() from an empty folder with an empty price cache (the shipped snapshot), through a
    JSON round trip (plain JSON: no NaN, no numpy scalars)."""
    cwd = tmp_path_factory.mktemp("cwd")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("GPUOPT_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))
        mp.delenv("GPUOPT_MAX_PRICE_AGE_DAYS", raising=False)
        d = recommend(cwd=cwd, **kw).to_dict()
    text = json.dumps(d, allow_nan=False)  # raises on NaN/inf; TypeError on non-JSON values
    out = json.loads(text)
    assert out == d
    return out


@pytest.fixture(scope="module")
def serving(tmp_path_factory) -> dict:
    return _plan(tmp_path_factory, model=MODEL, tokens_per_second=500, explain=False)


@pytest.fixture(scope="module")
def infeasible(tmp_path_factory) -> dict:
    return _plan(tmp_path_factory, model=MODEL, tokens_per_second=500, budget=1, explain=False)


@pytest.fixture(scope="module")
def training_explained(tmp_path_factory) -> dict:
    return _plan(tmp_path_factory, model=MODEL, task="train", tokens=2e9, deadline_hours=240, explain=True)


def _near(a: float, b: float, tol: float) -> bool:
    return abs(a - b) <= tol + 1e-9


# ------------------------------------------------------------------------------------------------ the schema file
def test_schema_file_is_draft_2020_12_and_its_refs_resolve(schema):
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["properties"]["schema_version"]["const"] == SCHEMA_VERSION == 2
    refs = re.findall(r'"\$ref": "([^"]+)"', SCHEMA_PATH.read_text(encoding="utf-8"))
    assert refs
    for ref in refs:
        assert isinstance(_resolve(schema, ref), dict)
    jsonschema.Draft202012Validator.check_schema(schema)


def test_the_checker_rejects_broken_documents(schema, serving):
    """The checker is not vacuous: every kind of damage is caught."""
    assert check(serving, schema) == []
    damage = [
        lambda d: d.pop("total_usd"),
        lambda d: d.__setitem__("schema_version", 3),
        lambda d: d.__setitem__("status", "maybe"),
        lambda d: d.__setitem__("start_month", "January"),
        lambda d: d.__setitem__("horizon_months", 0),
        lambda d: d.__setitem__("reason", {"kind": "budget", "message": "x"}),  # feasible with a reason
        lambda d: d["lines"][0].__setitem__("count", "1"),
        lambda d: d["lines"][0].__setitem__("pricing", "reserved_5y"),
        lambda d: d["lines"][0].pop("fabric"),
        lambda d: d["lines"][0].__setitem__("tensor_parallel", 0),
        lambda d: d["lines"][0].__setitem__("estimated", "no"),
        lambda d: d["solver"].pop("candidates"),
        lambda d: d["prices"]["providers"]["aws"].__setitem__("rows", -1),
    ]
    for i, hurt in enumerate(damage):
        bad = copy.deepcopy(serving)
        hurt(bad)
        assert check(bad, schema), f"damage #{i} not caught"


# ------------------------------------------------------------------------------------------------ real plans
def test_serving_plan_validates_and_adds_up(schema, serving):
    d = serving
    validate(d, schema)
    assert d["schema_version"] == 2
    assert d["status"] == "optimal" and d["feasible"] is True and d["reason"] is None
    assert d["gap"] is not None and d["gap"] <= 0.001
    assert d["solver"]["status"] == d["status"] and d["solver"]["gap"] == d["gap"]
    H = d["horizon_months"]
    assert H == 12  # the default horizon of a plan with a serving workload
    assert d["recurring"] is True and d["objective"] == "cost"
    # money over the horizon: monthly_usd is total_usd / horizon_months rounded to the cent, so
    # monthly_usd x horizon_months is total_usd only within horizon_months / 2 cents
    assert _near(d["monthly_usd"], round(d["total_usd"] / H, 2), 0.005)
    assert _near(d["total_usd"], round(d["monthly_usd"] * H, 2), 0.005 * H)
    lines = d["lines"]
    assert lines
    assert _near(sum(ln["total_usd"] for ln in lines), d["total_usd"], 0.005 * len(lines))
    assert _near(sum(ln["upfront_usd"] for ln in lines), d["upfront_usd"], 0.005 * len(lines))
    assert _near(sum(ln["commitment_usd"] for ln in lines), d["commitment_usd"], 0.005 * len(lines))
    # cash: one entry per month; what is paid inside the horizon + after it - the leftover credit = the total
    cash = d["cash_by_month_usd"]
    assert len(cash) == H
    assert d["max_month_usd"] == max(cash)
    assert _near(sum(cash) + d["after_horizon_usd"] - d["leftover_credit_usd"], d["total_usd"],
                 0.005 * H + 1e-6 * d["total_usd"])
    assert d["commitment"] == {"total_over_term_usd": d["commitment_usd"], "upfront_usd": d["upfront_usd"]}
    for ln in lines:
        assert 1 <= ln["start_month"] <= ln["end_month"] <= H
        assert ln["workloads"] == ["workload"]
        assert ln["estimated"] == ln["source"].startswith("rule:")
        assert ln["replicas"] >= 1
        assert ln["replicas"] * ln["gpus_per_replica"] <= ln["count"] * ln["gpu_count"] + 1e-9
        if ln["pricing"] in ("reserved_1y", "reserved_3y"):
            term = 12 if ln["pricing"] == "reserved_1y" else 36
            assert ln["hours"] == 730.0
            assert re.fullmatch(r"\d{4}-\d{2}", ln["term_end"])
            assert 0 <= ln["utilization"] <= 1.0
            assert _near(ln["commitment_usd"], ln["usd_per_hour"] * 730 * term * ln["count"], 0.01)
            assert _near(ln["monthly_usd"] * term + ln["upfront_usd"], ln["commitment_usd"],
                         0.005 * term + 1e-6 * ln["commitment_usd"])
        else:
            assert ln["term_end"] == "" and ln["commitment_usd"] == 0 and ln["utilization"] is None
            assert ln["upfront_usd"] == 0
    # the workload is served in every block
    (w,) = d["workloads"]
    assert w["name"] == "workload" and w["task"] == "serve" and w["peak_demand"] == 500.0
    assert w["capacity_peak"] >= 500.0 and w["blocks_short"] == 0 and w["end_month"] == H
    for b in d["blocks"]:
        assert b["capacity"]["workload"] >= b["demand"]["workload"]
    assert _near(sum(b["hours"] for b in d["blocks"] if b["period"] == 0), 730.0, 1e-6)
    # explain=False: the explanation's sections are present and empty
    assert d["strategies"] == {} and d["next_best"] == [] and d["demand_sensitivity"] == [] and d["marginal"] == {}
    assert d["savings_vs_on_demand_usd"] is None
    assert d["rules"] and d["workload"]["workloads"][0]["tokens_per_second"] == 500.0
    assert d["prices"]["catalog"] == "shipped snapshot"


def test_infeasible_plan_validates_and_says_what_it_would_take(schema, infeasible):
    d = infeasible
    validate(d, schema)
    assert d["status"] == "infeasible" and d["feasible"] is False and d["gap"] is None
    assert d["reason"]["kind"] == "budget"
    assert d["reason"]["budget_needed_usd"] > 1.0
    assert d["reason"]["monthly_needed_usd"] == d["reason"]["budget_needed_usd"]
    assert "--budget" in d["reason"]["message"]
    assert d["lines"] == [] and d["total_usd"] == 0.0 and d["monthly_usd"] == 0.0
    assert d["horizon_months"] == 12 and d["workload"]["budget"] == 1.0


def test_explained_training_plan_validates(schema, training_explained):
    d = training_explained
    validate(d, schema)
    assert d["feasible"] and d["recurring"] is False
    assert d["horizon_months"] == 1  # a training job alone: the horizon is its span
    assert len(d["cash_by_month_usd"]) == 1
    assert _near(sum(ln["total_usd"] for ln in d["lines"]), d["total_usd"], 0.005 * len(d["lines"]))
    (w,) = d["workloads"]
    assert w["completed"] is True and w["work_flops_planned"] >= w["work_flops_needed"] * (1 - 1e-6)
    assert w["finish_by_hour"] <= w["deadline_hours"] + 1e-6
    st = d["strategies"]
    assert st["this_plan"]["status"] == "plan" and st["this_plan"]["total_usd"] == d["total_usd"]
    base = st["all_on_demand"]["total_usd"]
    assert d["savings_vs_on_demand_usd"] == round(base - d["total_usd"], 2)
    assert {r["provider"] for r in d["next_best"]} <= set(d["prices"]["providers"])
    assert [r["demand_factor"] for r in d["demand_sensitivity"]] == [0.5, 2.0]


# ------------------------------------------------------------------------------------------------ the document
def test_every_output_key_is_in_the_schema_and_the_document(schema, serving, training_explained):
    doc = DOC_PATH.read_text(encoding="utf-8")
    line_schema = schema["$defs"]["Line"]["properties"]
    for d in (serving, training_explained):
        for k in d:
            assert k in schema["properties"], f"top-level key {k!r} is not in docs/schemas/recommend.schema.json"
            assert f"`{k}`" in doc, f"top-level key {k!r} is not documented in docs/json-schema.md"
        for ln in d["lines"]:
            for k in ln:
                assert k in line_schema, f"line key {k!r} is not in docs/schemas/recommend.schema.json"
                assert f"`{k}`" in doc, f"line key {k!r} is not documented in docs/json-schema.md"


def test_the_documents_example_validates(schema):
    doc = DOC_PATH.read_text(encoding="utf-8")
    blocks = re.findall(r"```json\n(.*?)```", doc, flags=re.S)
    assert blocks, "docs/json-schema.md has no ```json example"
    example = json.loads(blocks[0])
    validate(example, schema)
    assert example["schema_version"] == SCHEMA_VERSION
