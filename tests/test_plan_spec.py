"""The plan file: both shapes, one InputError per problem (dotted field, file and line, accepted values),
options over the file, and plan_to_yaml round trips."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
import yaml

from gpuopt.kernel.errors import InputError
from gpuopt.plan_spec import (CLI_OPTIONS, ITEM_KEYS, KEY_DOCS, PLAN_KEYS, PlanFile, WorkloadItem, apply_options,
                              load_plan_file, plan_from_options, plan_to_yaml)
from gpuopt.plan_spec import EXAMPLE_WORKLOAD

WORKLOAD_KEYS = ("name", "task", "model", "params", "precision", "context_tokens", "concurrency", "tokens_per_second",
                 "tokens", "deadline_hours", "zero_stage", "allow_spot", "providers", "regions", "gpus", "pricing", "budget")

EXAMPLE_PLAN = Path(__file__).parents[1] / "gpuopt" / "data" / "example_plan.yaml"
CHAT = Path(__file__).parent / "fixtures" / "profiles" / "chat_daily.csv"

PLAN = """\
budget: 60000
pricing: [on_demand, spot, reserved_1y]
workloads:
  - name: chat
    model: meta-llama/Llama-2-13b-hf
    demand_profile: chat_daily.csv
    value_per_million_tokens: 2.5
  - name: tune
    task: LoRA
    model: Llama-2-7B
    tokens: 5.0e+8
    allow_spot: true
  - name: pretrain
    task: train
    params: 1.3e+9
    tokens: 2.6e+10
    deadline_hours: 240
"""


def _write(tmp_path, text: str, name: str = "plan.yaml") -> Path:
    shutil.copy(CHAT, tmp_path / "chat_daily.csv")
    f = tmp_path / name
    f.write_text(text)
    return f


def _error(tmp_path, text: str) -> InputError:
    with pytest.raises(InputError) as exc:
        load_plan_file(_write(tmp_path, text))
    return exc.value


# ------------------------------------------------------------------------------------------- reading
def test_multi_workload_file(tmp_path):
    plan = load_plan_file(_write(tmp_path, PLAN))
    assert isinstance(plan, PlanFile)
    assert (plan.budget, plan.objective, plan.solver, plan.spot_capacity_per_offer) == (60000, "cost", "cbc", 16)
    assert [w.name for w in plan.workloads] == ["chat", "tune", "pretrain"]
    chat, tune, pre = plan.workloads
    # issue 26: a service keeps two replicas by default (N+1 on top, chat.redundancy 1.0)
    assert (chat.task, chat.min_replicas, chat.allow_spot, chat.spot_only_ok) == ("serve", 2, False, False)
    assert chat.redundancy == 1.0 and tune.redundancy == 0.0
    assert (tune.task, tune.min_replicas, tune.allow_spot) == ("lora", 0, True)
    assert (pre.params, pre.tokens, pre.deadline_hours) == (1.3e9, 2.6e10, 240)
    assert [w.name for w in plan.serving] == ["chat"] and [w.name for w in plan.training] == ["tune", "pretrain"]
    assert plan.origin == str(tmp_path / "plan.yaml") and plan.base_dir == tmp_path
    assert plan.resolve_path(chat.demand_profile) == tmp_path / "chat_daily.csv"
    profiles = plan.demand_profiles()
    assert list(profiles) == ["chat"] and profiles["chat"].peak == 1400


def test_single_workload_format_is_one_workload(tmp_path):
    plan = load_plan_file(EXAMPLE_WORKLOAD)
    assert len(plan.workloads) == 1
    w = plan.workloads[0]
    assert (w.name, w.task, w.model, w.tokens_per_second, w.concurrency) == (
        "llama2-7b-chat", "serve", "meta-llama/Llama-2-7b-hf", 500, None)
    assert (w.input_tokens, w.output_tokens, w.scenario, w.engine) == (1024, 128, "chat", "vllm")
    assert plan.budget is None and plan.providers == []
    f = _write(tmp_path, "task: train\nmodel: x\ntokens: 2.0e10\ndeadline_hours: 240\nbudget: 900\nproviders: aws\n")
    plan = load_plan_file(f)
    assert plan.workloads[0].name == "workload"
    assert (plan.budget, plan.providers, plan.workloads[0].deadline_hours) == (900, ["aws"], 240)


def test_every_old_key_is_accepted():
    assert set(WORKLOAD_KEYS) <= set(PLAN_KEYS) | set(ITEM_KEYS)


def test_keys_not_for_the_task_are_kept_and_reported(tmp_path):
    # options may set them over a file (as gpuopt.workload did): ignored, not refused
    plan = load_plan_file(_write(tmp_path, "model: x\ntokens_per_second: 3\ntokens: 1e9\nzero_stage: 2\n"))
    assert plan.workloads[0].ignored_fields() == ["tokens", "zero_stage"]


def test_example_plan_is_valid_and_documented():
    plan = load_plan_file(EXAMPLE_PLAN)
    assert [w.task for w in plan.workloads] == ["serve", "lora", "train"]
    assert plan.workloads[1].allow_spot and plan.workloads[2].deadline_hours
    assert plan.budget and plan.workloads[0].demand_profile
    assert plan.demand_profiles()["chat"].kind == "hour_of_day"
    text = EXAMPLE_PLAN.read_text()
    assert "ILLUSTRATIVE" in text
    for key in PLAN_KEYS + ITEM_KEYS:  # every key appears, set or commented out
        assert f"{key}:" in text, key


def test_every_key_has_an_option_and_a_doc():
    from gpuopt.request import FILE_ONLY

    # every key has a `recommend` option, or is documented as file-only (--demand was listed but never existed)
    assert set(CLI_OPTIONS) | set(FILE_ONLY) == set(PLAN_KEYS) | set(ITEM_KEYS) | {"workloads"}
    assert not set(CLI_OPTIONS) & set(FILE_ONLY)
    assert set(KEY_DOCS) >= set(CLI_OPTIONS)


# ------------------------------------------------------------------------------------------- errors
@pytest.mark.parametrize(
    "text, field, message, accepted",
    [
        ("budget: -3\nworkloads: [{name: a, model: x, tokens_per_second: 5}]\n",
         "budget", "must be greater than 0, got -3 (plan.yaml, line 1)", None),
        ("budget: .nan\nworkloads: [{name: a, model: x, tokens_per_second: 5}]\n",
         "budget", "must be a finite number", None),
        ("workloads:\n  - name: a\n    model: x\n    tokens_per_second: 5\n  - name: b\n    task: serv\n    model: x\n",
         "workloads[1].task", "unknown value 'serv' (plan.yaml, line 6)", "serve, train, finetune, lora"),
        ("workloads:\n  - name: a\n    model: x\n    tokens_per_second: -5\n",
         "workloads[0].tokens_per_second", "must be greater than 0, got -5 (plan.yaml, line 4)", None),
        ("workloads:\n  - name: a\n    model: x\n    params: 7e9\n    tokens_per_second: 5\n",
         "workloads[0].params", "give either model or params, not both", None),
        ("workloads:\n  - name: a\n    tokens_per_second: 5\n",
         "workloads[0].model", "needs a model", None),
        ("workloads:\n  - name: a\n    model: x\n",
         "workloads[0].tokens_per_second", "a serve workload needs a demand", None),
        ("workloads:\n  - name: a\n    model: x\n    tokens_per_second: 5\n    demand: [1, 2]\n",
         "workloads[0].demand", "give one demand, not both tokens_per_second and demand",
         "tokens_per_second, request_rate, demand_profile, demand"),
        ("workloads:\n  - name: a\n    task: train\n    model: x\n",
         "workloads[0].tokens", "a train workload needs tokens", None),
        ("workloads:\n  - name: a\n    task: finetune\n    model: x\n    tokens: 1e9\n    demand: [1]\n",
         "workloads[0].demand", "is a serving demand", None),
        ("workloads:\n  - name: a\n    model: x\n    tokens_per_second: 5\n    value_usd: 10\n",
         "workloads[0].value_usd", "value_per_million_tokens", None),
        ("workloads:\n  - name: a\n    task: train\n    model: x\n    tokens: 1e9\n    deadline_hours: 90000\n",
         "workloads[0].deadline_hours", "must be at most 87600", None),
        ("workloads:\n  - name: a\n    model: x\n    tokens_per_second: 5\n    deman: [1]\n",
         "workloads[0].deman", "unknown key; did you mean demand? (plan.yaml, line 5)", "name, task, model"),
        ("workloads:\n  - name: a\n    model: x\n    tokens_per_second: 5\n  - name: a\n    model: y\n    demand: [1]\n",
         "workloads[1].name", "duplicate workload name 'a' (also workloads[0].name)", None),
        ("workloads:\n  - model: x\n    tokens_per_second: 5\n",
         "workloads[0].name", "every workload needs a name", None),
        ("workloads:\n  - name: a\n    model: x\n    demand: [1, -2]\n",
         "workloads[0].demand[1]", "must be at least 0", None),
        ("workloads:\n  - name: a\n    model: x\n    demand_profile: nope.csv\n",
         "workloads[0].demand_profile", "file not found", None),
        ("workloads:\n  - name: a\n    model: x\n    tokens_per_second: 5\n    min_replicas: -1\n",
         "workloads[0].min_replicas", "must be at least 0", None),
        ("workloads:\n  - name: a\n    model: x\n    tokens_per_second: 5\n    allow_spot: 1\n",
         "workloads[0].allow_spot", "must be true or false", "true, false"),
        ("workloads: []\n", "workloads", "needs at least one workload", None),
        ("workloads: {name: a}\n", "workloads", "must be a list", None),
        ("pricing: [on_demand, savings]\nworkloads: [{name: a, model: x, tokens_per_second: 5}]\n",
         "pricing[1]", "unknown value 'savings'", "on_demand, spot, reserved_1y, reserved_3y"),
        ("pricing: [spot]\nworkloads: [{name: a, model: x, tokens_per_second: 5}]\n",
         "pricing", "no workload has allow_spot: true", None),
        ("objective: roi\nworkloads: [{name: a, model: x, tokens_per_second: 5}]\n",
         "objective", "roi needs a value", "cost, roi"),
        ("objective: profit\nworkloads: [{name: a, model: x, tokens_per_second: 5}]\n",
         "objective", "unknown value 'profit'", "cost, roi"),
        ("solver: gurobi\nworkloads: [{name: a, model: x, tokens_per_second: 5}]\n",
         "solver", "unknown value", "cbc, highs"),
        ("gpus: [L4]\nexclude_gpus: [L4]\nworkloads: [{name: a, model: x, tokens_per_second: 5}]\n",
         "exclude_gpus", "L4 is both allowed", None),
        ("blocks: 0\nworkloads: [{name: a, model: x, tokens_per_second: 5}]\n",
         "blocks", "must be at least 1", "24 (hours of the day)"),
        ("spot_capacity_per_offer: 2.5\nworkloads: [{name: a, model: x, tokens_per_second: 5}]\n",
         "spot_capacity_per_offer", "must be a whole number, got 2.5", None),
        ("prices_on: last month\nworkloads: [{name: a, model: x, tokens_per_second: 5}]\n",
         "prices_on", "not a date (YYYY-MM-DD): 'last month'", None),
        ("task: serve\nworkloads: [{name: a, model: x, tokens_per_second: 5}]\n",
         "task", "workload keys go under workloads:", "budget, budget_total"),
        ("budget: 1\nbudget: 2\nworkloads: [{name: a, model: x, tokens_per_second: 5}]\n",
         "budget", "duplicate key in", None),
        # the single-workload format names its keys without workloads[0].
        ("task: serve\nmodel: x\ntokens_per_second: lots\n", "tokens_per_second", "must be a number, got 'lots'", None),
        ("model: x\ntokens_per_second: 5\nconcurrency: 2.5\n", "concurrency", "must be a whole number, got 2.5 (" , None),
        ("model: 7\ntokens_per_second: 5\n", "model", "for a parameter count use params", None),
        ("params: true\ntokens_per_second: 5\n", "params", "must be a number, got True", None),
        ("tusk: serve\n", "tusk", "unknown key", "name, task"),
        ("- a\n- list\n", "workload", "must be a mapping", None),
        ("task: [unclosed\n", "workload", "is not valid YAML at line", None),
    ],
)
def test_errors_name_the_field_file_and_line(tmp_path, text, field, message, accepted):
    err = _error(tmp_path, text)
    assert err.field == field
    assert message in str(err).replace(f"{tmp_path}{os.sep}", "")
    if accepted:
        assert accepted in (err.accepted or "")
    assert "validation error" not in str(err).lower() and "pydantic" not in str(err).lower()
    assert "\n" not in str(err)


def test_bad_profile_is_reported_with_the_workload_key(tmp_path):
    (tmp_path / "bad.csv").write_text("hour,demand\n0,1\n1,-4\n")
    err = _error(tmp_path, "workloads:\n  - name: a\n    model: x\n    demand_profile: bad.csv\n")
    assert err.field == "workloads[0].demand_profile"
    assert "line 3: demand must be 0 or more" in str(err)


def test_profiles_that_cannot_share_a_grid_are_refused(tmp_path):
    err = _error(tmp_path, "workloads:\n  - name: a\n    model: x\n    demand_profile: chat_daily.csv\n"
                           "  - name: b\n    model: x\n    demand: [1, 2, 3, 4, 5]\n")
    # the key of the workload named in the message: b's inline list (a fresh user was told demand_profile)
    assert err.field == "demand" and "cannot align 'b'" in str(err)


def test_blocks_rebins_every_profile(tmp_path):
    plan = load_plan_file(_write(tmp_path, "blocks: 168\nworkloads:\n  - name: a\n    model: x\n"
                                           "    demand_profile: chat_daily.csv\n"))
    assert len(plan.demand_profiles()["a"].blocks) == 168


def test_missing_file_and_directory(tmp_path):
    with pytest.raises(InputError, match="file not found"):
        load_plan_file(tmp_path / "nope.yaml")
    with pytest.raises(InputError, match="is a directory"):
        load_plan_file(tmp_path)


def test_direct_construction_validates_too():
    with pytest.raises(Exception):
        WorkloadItem(name="a", model="x")
    w = WorkloadItem(name="a", model="x", tokens_per_second=5)
    assert w.min_replicas == 2 and w.redundancy == 1.0  # issue 26: two replicas and N+1 for a service


# ------------------------------------------------------------------------------------------- options
def test_options_override_the_file(tmp_path):
    f = _write(tmp_path, "model: x\ntokens_per_second: 100\nproviders: [aws]\nbudget: 10\n")
    plan = load_plan_file(f, {"params": 7e9, "demand_profile": "chat_daily.csv", "budget": 20, "providers": [],
                              "allow_spot": None})
    w = plan.workloads[0]
    assert (w.model, w.params, w.tokens_per_second, w.demand_profile) == (None, 7e9, None, "chat_daily.csv")
    assert (plan.budget, plan.providers) == (20, ["aws"])  # an empty option list does not erase the file's list


def test_an_end_or_months_option_replaces_the_other_in_the_file(tmp_path):
    # breaker: --months 2 over a file's end: 3 said "give either end or months, not both"
    f = _write(tmp_path, "model: meta-llama/Llama-2-7b-hf\ntokens_per_second: 100\nend: 3\nhorizon_months: 12\n")
    assert load_plan_file(f, {"months": 2}).workloads[0].month_window() == load_plan_file(
        _write(tmp_path, "model: meta-llama/Llama-2-7b-hf\ntokens_per_second: 100\nmonths: 2\nhorizon_months: 12\n",
               "b.yaml")).workloads[0].month_window()
    assert load_plan_file(f, {"end": 5}).workloads[0].month_window()[1] == 5


def test_workload_option_over_several_workloads_is_refused(tmp_path):
    with pytest.raises(InputError) as exc:
        load_plan_file(_write(tmp_path, PLAN), {"tokens_per_second": 5})
    assert exc.value.field == "tokens_per_second" and "the plan has 3 workloads" in str(exc.value)
    plan = load_plan_file(_write(tmp_path, PLAN), {"budget": 5, "objective": "roi"})  # plan keys are fine
    assert (plan.budget, plan.objective) == (5, "roi")
    with pytest.raises(InputError, match="is not a plan option"):
        apply_options({}, {"colour": "red"})


def test_plan_from_options(tmp_path):
    plan = plan_from_options({"model": "meta-llama/Llama-2-70b-hf", "tokens_per_second": 2000, "budget": 50000,
                              "gpus": ("H100-80GB",), "task": "serve"}, base_dir=tmp_path)
    assert plan.origin == "command-line options"
    assert (plan.workloads[0].name, plan.gpus, plan.budget) == ("workload", ["H100-80GB"], 50000)
    with pytest.raises(InputError) as exc:
        plan_from_options({"tokens_per_second": 5})
    assert exc.value.field == "model"  # a plan from options names keys as the single-workload file does


def test_model_ref_resolves_a_local_config_next_to_the_plan(tmp_path):
    (tmp_path / "my-model").mkdir()
    (tmp_path / "my-model" / "config.json").write_text("{}")
    plan = load_plan_file(_write(tmp_path, "workloads:\n  - {name: a, model: my-model, tokens_per_second: 1}\n"
                                           "  - {name: b, model: Llama-2-7B, tokens_per_second: 1}\n"))
    assert plan.model_ref(plan.workloads[0]) == str(tmp_path / "my-model")
    assert plan.model_ref(plan.workloads[1]) == "Llama-2-7B"


# ------------------------------------------------------------------------------------------- writing
def _round_trip(tmp_path, plan: PlanFile) -> PlanFile:
    text = plan_to_yaml(plan)
    again = load_plan_file(_write(tmp_path, text, "printed.yaml"))
    assert again.model_dump() == plan.model_dump()
    assert plan_to_yaml(again) == text  # stable
    return again


def test_plan_to_yaml_round_trips(tmp_path):
    _round_trip(tmp_path, load_plan_file(_write(tmp_path, PLAN)))
    _round_trip(tmp_path, load_plan_file(EXAMPLE_WORKLOAD))
    odd = PLAN.replace("name: tune", "name: 'yes'").replace("budget: 60000", "budget: 1234.5678\nprices_on: 2024-06-01"
                                                             "\nblocks: 24\ngpus: ['H100-80GB', 'A100: 80GB #x']")
    odd = odd.replace("tokens: 5.0e+8", "tokens: 1.0e+15\n    demand_profile: null")
    odd = odd.replace("demand_profile: chat_daily.csv", "demand: [" + ", ".join(str(0.1 * i) for i in range(24)) + "]")
    plan = _round_trip(tmp_path, load_plan_file(_write(tmp_path, odd)))
    assert plan.workloads[1].name == "yes" and plan.prices_on == "2024-06-01" and plan.workloads[1].tokens == 1e15


def test_plan_to_yaml_is_documented_and_in_order(tmp_path):
    text = plan_to_yaml(load_plan_file(_write(tmp_path, PLAN)))
    data = yaml.safe_load(text)
    assert list(data) == [k for k in PLAN_KEYS if data.get(k) is not None or k in data] + ["workloads"]
    assert "# max_instances:" in text  # unset plan keys are written commented out
    assert "--tokens-per-second" not in text  # no workload key the plan does not use
    assert "budget: 60000" in text and "# --budget:" in text and "tokens: 2.6e+10" in text


@pytest.mark.parametrize("text, near", [
    ("horizon: 24\nworkloads:\n  - {name: a, task: serve, model: m, tokens_per_second: 1}\n", "horizon_months"),
    ("workloads:\n  - {name: a, task: serve, model: m, tokens_per_second: 1, ttft_slo_ms: 500}\n", "ttft_ms"),
    ("workloads:\n  - {name: a, task: serve, model: m, tokens_per_second: 1, tpot_msx: 5}\n", "tpot_ms"),
])
def test_an_unknown_plan_file_key_names_the_closest_one(tmp_path, text, near):
    """As the API does (issue 25, found by a breaker session): an old name maps to its key, a typo to the nearest
    key of the place it is in."""
    from gpuopt.plan_spec import load_plan_file

    p = tmp_path / "plan.yaml"
    p.write_text(text, encoding="utf-8")
    with pytest.raises(InputError) as exc:
        load_plan_file(p)
    assert f"did you mean {near}?" in str(exc.value) and "\n" not in str(exc.value)
