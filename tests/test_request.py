"""The one request object (issue 25, point 1): gpuopt.request.PlanRequest defines every `recommend` option once, and
the Python API, the plan file, the JSON (document and schema) and the CLI use its names, defaults and bounds.

Plans are small and fast: one serving workload of Llama-2-7B on AWS L4s, without the explanation's extra solves.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

import gpuopt
import gpuopt.api
from gpuopt.cli import app
from gpuopt.kernel.errors import InputError
from gpuopt.plan_spec import load_plan_file, plan_to_yaml
from gpuopt.request import (CALL_KEYWORDS, CLI_OPTIONS, DEPRECATED_KEYWORDS, FIELDS, FILE_ONLY, GROUPS, ITEM_KEYS,
                            PLAN_KEYS, PlanRequest, WorkloadItem, cli_help, request_keywords)

SCHEMA = Path(__file__).resolve().parents[1] / "docs" / "schemas" / "plan-request.schema.json"
MODEL = "meta-llama/Llama-2-7b-hf"
SMALL = dict(model=MODEL, tokens_per_second=500, providers=["aws"], gpus=["L4"])
#: The `recommend` options that are not request keys: where the plan comes from and how the answer is written.
NOT_KEYS = {"--workload", "--print-workload", "--output", "--explain", "--format"}


def _request(**plan) -> PlanRequest:
    return PlanRequest(providers=["aws"], gpus=["L4"], **plan,
                       workloads=[WorkloadItem(name="workload", model=MODEL, tokens_per_second=500)])


def _recommend_params() -> list:
    cmd = typer.main.get_command(app)
    return [p for p in cmd.commands["recommend"].params if getattr(p, "param_type_name", "") == "option"]


# --------------------------------------------------------------------------------------------- the API
def test_a_request_and_its_keywords_make_the_same_plan():
    by_keywords = gpuopt.recommend(**SMALL, horizon_months=24, explain=False)
    by_request = gpuopt.recommend(_request(horizon_months=24), explain=False)
    assert by_request.feasible and by_keywords.feasible
    assert by_request.plan.total_usd == by_keywords.plan.total_usd
    assert by_request.plan.horizon_months == by_keywords.plan.horizon_months == 24
    assert by_request.to_dict()["lines"] == by_keywords.to_dict()["lines"]
    assert by_request.workload_origin == "a PlanRequest"


def test_keywords_are_laid_over_a_request():
    over = gpuopt.recommend(_request(), horizon_months=3, explain=False)
    assert over.plan.horizon_months == 3
    with pytest.raises(InputError) as e:
        gpuopt.recommend(_request(), workload="plan.yaml")
    assert e.value.field == "workload"
    with pytest.raises(InputError) as e:
        gpuopt.recommend({"budget": 5})  # a dict is not a request: keywords are
    assert e.value.field == "request"


@pytest.mark.parametrize("old, new, value", [
    ("horizon", "horizon_months", 24), ("ttft_slo_ms", "ttft_ms", 1500.0), ("spot_capacity", "spot_capacity_per_offer", 4),
    ("max_instances_per_offer", "max_instances", 40), ("start_month", "start", 2)])
def test_an_old_keyword_still_works_with_a_warning_naming_the_new_one(old, new, value):
    with pytest.warns(DeprecationWarning, match=f"use {new}="):
        a = gpuopt.recommend(**SMALL, **{old: value}, explain=False)
    b = gpuopt.recommend(**SMALL, **{new: value}, explain=False)
    assert a.plan.total_usd == b.plan.total_usd
    assert a.workload == b.workload  # the same plan, under the same (new) names


def test_an_old_and_a_new_name_together_are_refused():
    with pytest.raises(InputError, match="given twice"), warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        gpuopt.recommend(**SMALL, horizon=2, horizon_months=3)


@pytest.mark.parametrize("typo, closest", [("horizn", "horizon_months"), ("budjet", "budget"),
                                           ("ttft", "ttft_ms"), ("provider", "providers"), ("gpu", "gpus"),
                                           ("max_instance", "max_instances")])
def test_an_unknown_keyword_names_the_closest_known_one(typo, closest):
    with pytest.raises(InputError) as e:
        gpuopt.recommend(**SMALL, **{typo: 1})
    assert e.value.field == typo
    assert f"did you mean {closest}?" in e.value.message


def test_the_api_checks_bounds_with_the_model():
    with pytest.raises(InputError) as e:
        gpuopt.recommend(**SMALL, horizon_months=0)
    # issue 32: the message names where the value came from, the argument (not a file line)
    assert (e.value.field, e.value.message) == ("horizon_months",
                                                "must be at least 1, got 0 (the horizon_months= argument)")


# ------------------------------------------------------------------------------------- one name everywhere
def test_plan_file_key_api_keyword_and_json_key_are_one_name(tmp_path):
    """For every field of the request: it is a keyword of gpuopt.recommend (kept as is), a key of the plan file
    (plan_to_yaml writes it, load_plan_file reads it back), a key of the recommend JSON's ``workload`` and a
    property of the published schema."""
    schema = json.loads(SCHEMA.read_text(encoding="utf-8"))
    r = gpuopt.recommend(**SMALL, explain=False)
    doc = r.to_dict()["workload"]
    assert request_keywords({k: None for k in PLAN_KEYS + ITEM_KEYS}) == {k: None for k in PLAN_KEYS + ITEM_KEYS}
    text = plan_to_yaml(load_plan_file(_write(tmp_path, r.workload)))
    for key in PLAN_KEYS:
        assert key in doc and key in schema["properties"] and f"{key}:" in text, key
    for key in ITEM_KEYS:
        assert key in doc["workloads"][0] and key in schema["$defs"]["WorkloadItem"]["properties"], key
    assert set(schema["properties"]) == set(PLAN_KEYS) | {"workloads"}
    assert set(schema["$defs"]["WorkloadItem"]["properties"]) == set(ITEM_KEYS)
    assert not set(CALL_KEYWORDS) & set(FIELDS) and not set(DEPRECATED_KEYWORDS) & set(FIELDS)


def _write(tmp_path, plan: dict) -> Path:
    import yaml

    p = tmp_path / "plan.yaml"
    p.write_text(yaml.safe_dump({k: v for k, v in plan.items() if v is not None}), encoding="utf-8")
    return p


def test_every_field_is_documented_with_a_part_and_a_default_in_the_schema():
    schema = json.loads(SCHEMA.read_text(encoding="utf-8"))
    props = {**schema["properties"], **schema["$defs"]["WorkloadItem"]["properties"]}
    parts = {"workload", "demand", "serving", "training", "purchase", "placement", "budget", "solver", "workloads"}
    for key, f in FIELDS.items():
        assert f.description, key
        assert GROUPS[key] in parts, key
        assert props[key]["description"] == f.description and props[key]["group"] == GROUPS[key], key
        if key in CLI_OPTIONS:
            assert props[key]["cli"] == CLI_OPTIONS[key], key
    assert schema["properties"]["horizon_months"]["anyOf"][0] == {"maximum": 120, "minimum": 1, "type": "integer"}
    assert props["time_limit_s"]["default"] == FIELDS["time_limit_s"].default == 60.0


# --------------------------------------------------------------------------------------------- the CLI
def test_every_recommend_option_is_a_request_field_and_back():
    flags = {}
    for p in _recommend_params():
        flag = next(o for o in p.opts if o.startswith("--"))
        flags[flag] = p
    by_flag = {v.split("/")[0]: k for k, v in CLI_OPTIONS.items()}
    for flag, p in flags.items():
        if flag in NOT_KEYS:
            continue
        assert flag in by_flag, f"{flag} is not a request field (gpuopt.request) nor in NOT_KEYS"
        assert p.help == cli_help(by_flag[flag]), flag  # the help comes from the field
    for key in FIELDS:
        assert key in CLI_OPTIONS or key in FILE_ONLY, f"{key} has no recommend option and is not FILE_ONLY"
        if key in CLI_OPTIONS:
            assert CLI_OPTIONS[key].split("/")[0] in flags, key


def test_the_cli_hands_the_api_the_request_names(monkeypatch):
    """The command passes every option to gpuopt.api.recommend under its request name: no renaming on the way."""
    seen = {}

    def fake(request=None, /, **kw):
        seen.update(kw)
        raise InputError("budget", "stop here")

    monkeypatch.setattr(gpuopt.api, "recommend", fake)
    r = CliRunner().invoke(app, ["recommend", "--model", MODEL, "--horizon", "7", "--ttft-ms", "900",
                                 "--spot-capacity", "3", "--max-instances", "5", "--start-month", "2"])
    assert r.exit_code == 1
    assert set(seen) == set(CLI_OPTIONS) | {"workload", "explain"}
    assert (seen["horizon_months"], seen["ttft_ms"], seen["spot_capacity_per_offer"], seen["max_instances"],
            seen["start"]) == (7, 900.0, 3, 5, 2)


@pytest.mark.parametrize("args, message", [
    (["--horizon", "0"], "gpuopt: error: --horizon: must be at least 1, got 0"),
    (["--horizon", "121"], "gpuopt: error: --horizon: must be at most 120, got 121"),
    (["--leftover-value", "2"], "gpuopt: error: --leftover-value: must be at most 1, got 2"),
    (["--time-limit", "0"], "gpuopt: error: --time-limit: must be greater than 0, got 0"),
    (["--placement", "planet"], "gpuopt: error: --placement: unknown value 'planet'"),
])
def test_a_bad_cli_value_is_one_line_naming_the_option(args, message):
    r = CliRunner().invoke(app, ["recommend", "--model", MODEL, "--tokens-per-second", "500", "--provider", "aws",
                                 "--gpu", "L4", "--no-explain", *args])
    assert r.exit_code == 1, r.output
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith(message), r.stderr
    assert "Traceback" not in r.output


def test_the_request_is_grouped_into_parts():
    req = _request(budget=1000, max_upfront=0, horizon_months=12)
    assert req.part("budget") == {"budget": 1000, "budget_total": None, "max_upfront": 0, "max_commitment": None}
    assert set(req.part("placement")) == {"placement", "region_group", "spread", "providers", "regions", "gpus",
                                          "exclude_gpus", "include_local_zones"}
    assert {"pricing", "spot_capacity_per_offer", "max_instances", "horizon_months", "leftover_value"} <= \
        set(req.part("purchase"))
    assert req.workloads[0].part("demand")["tokens_per_second"] == 500
    with pytest.raises(InputError):
        req.part("money")


@pytest.mark.parametrize("kw, field", [({"cwd": 5}, "cwd"), ({"workload": 5}, "workload"),
                                       ({"workloads": [{}]}, "workloads"), ({"explain": "no"}, "explain")])
def test_call_keywords_of_the_wrong_kind_are_input_errors(kw, field):
    """Found by a breaker session (issue 25): cwd=5 / workload=5 raised pathlib's TypeError, explain="no" was taken
    as True, and workloads=[...] was told "did you mean workload?" (a file path)."""
    import gpuopt
    from gpuopt.kernel.errors import InputError

    with pytest.raises(InputError) as exc:
        gpuopt.recommend(model="meta-llama/Llama-2-7b-hf", tokens_per_second=100, **kw)
    assert exc.value.field == field and "\n" not in str(exc.value)
    if field == "workloads":
        assert "PlanRequest(workloads=" in str(exc.value)


def test_a_request_built_directly_names_the_field_and_the_closest_key():
    """PlanRequest(...) and WorkloadItem(...) built in Python fail as a plan file does: one InputError line naming
    the field (an unknown key before the required key it hides) and, for a misspelt key, the closest known one."""
    from gpuopt.kernel.errors import InputError

    with pytest.raises(InputError, match=r"^budgett: unknown key; did you mean budget\?"):
        PlanRequest(budgett=5)
    with pytest.raises(InputError, match=r"^modle: unknown key; did you mean model\?.*accepted: name, task"):
        WorkloadItem(name="chat", modle="Llama-2-7b-hf")
    with pytest.raises(InputError, match=r"^workloads\[0\]\.tokns: unknown key; did you mean tokens\?"):
        PlanRequest(workloads=[{"name": "a", "model": "Llama-2-7b-hf", "tokns": 3}])
    with pytest.raises(InputError, match=r"^budget: must be a number, got 'x'$"):
        PlanRequest(budget="x", workloads=[WorkloadItem(name="a", model="Llama-2-7b-hf", tokens_per_second=100)])
    with pytest.raises(InputError, match=r"^workloads: needs at least one workload$"):
        PlanRequest(workloads=[])
    ok = PlanRequest(budget=5000, workloads=[WorkloadItem(name="a", model="Llama-2-7b-hf", tokens_per_second=100)])
    assert ok.budget == 5000.0 and ok.workloads[0].tokens_per_second == 100


def test_a_single_workload_file_names_a_plan_key_for_a_typo(tmp_path):
    """A single-workload file holds plan and workload keys side by side: a misspelt plan key there is offered the
    plan key (this broke once while PlanRequest(...) learnt to word its own errors)."""
    f = tmp_path / "one.yaml"
    f.write_text("model: meta-llama/Llama-2-7b-hf\ntokens_per_second: 100\nbudjet: 5000\n")
    with pytest.raises(InputError) as e:
        load_plan_file(f)
    assert e.value.field == "budjet" and e.value.message.startswith("unknown key; did you mean budget? (")
    assert "line 3" in e.value.message


def test_a_request_built_in_python_keeps_the_plan_files_checks(tmp_path):
    """Found by a breaker session: while PlanRequest(...) learnt to word its errors, nested workloads lost the plan
    file's folder, so a missing ``measured:`` file passed loading; a lone WorkloadItem was read as a list of tuples;
    InputError could not be pickled or copied."""
    import copy
    import pickle

    f = tmp_path / "one.yaml"
    f.write_text("name: chat\nmodel: meta-llama/Llama-2-7b-hf\ntokens_per_second: 200\nmeasured: nothere.csv\n")
    with pytest.raises(InputError) as e:
        load_plan_file(f)
    assert e.value.field == "measured" and "file not found" in e.value.message and "line 4" in e.value.message
    with pytest.raises(InputError, match=r"^workloads: must be a list of workloads, got WorkloadItem$"):
        PlanRequest(workloads=WorkloadItem(name="chat", model="meta-llama/Llama-2-7b-hf", tokens_per_second=1))
    err = InputError("budget", "must be a number", "a number of USD")
    for back in (pickle.loads(pickle.dumps(err)), copy.deepcopy(err)):
        assert (back.field, back.message, back.accepted, str(back)) == (err.field, err.message, err.accepted, str(err))


@pytest.mark.parametrize("key, says", [("tokns", "did you mean the workload key tokens (under workloads:)?"),
                                       ("deadline_hrs", "did you mean the workload key deadline_hours (under workloads:)?"),
                                       ("budjet", "did you mean budget?")])
def test_a_workload_key_misspelt_at_the_top_is_sent_under_workloads(key, says):
    """Found by a breaker session: PlanRequest(workloads=[...], tokns=1) was offered the plan key `blocks`."""
    w = WorkloadItem(name="a", model="meta-llama/Llama-2-7b-hf", tokens_per_second=1)
    with pytest.raises(InputError) as e:
        PlanRequest(workloads=[w], **{key: 1})
    assert e.value.field == key and e.value.message == f"unknown key; {says}"


def test_an_empty_name_says_so():
    with pytest.raises(InputError, match=r"^name: must not be empty$"):
        WorkloadItem(name="", model="meta-llama/Llama-2-7b-hf")
