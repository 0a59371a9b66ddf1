"""Where a plan comes from (--workload, ./gpuopt.yaml, the options, the bundled example) and how a single-workload
file is validated: one schema (gpuopt.plan_spec) reads both file formats."""

from __future__ import annotations

import pytest

from gpuopt.api import load_plan
from gpuopt.kernel.errors import InputError
from gpuopt.plan_spec import EXAMPLE_WORKLOAD, ITEM_KEYS, PLAN_KEYS, load_plan_file


def test_bundled_example_is_used_when_nothing_else_is_given(tmp_path):
    plan = load_plan({"budget": 50000}, None, cwd=tmp_path)
    assert "bundled example" in plan.origin
    w = plan.workloads[0]
    assert (w.name, w.task, w.model, w.tokens_per_second) == ("llama2-7b-chat", "serve", "meta-llama/Llama-2-7b-hf", 500)
    assert plan.budget == 50000


def test_local_gpuopt_yaml_wins_over_the_example(tmp_path):
    (tmp_path / "gpuopt.yaml").write_text("name: mine\ntask: train\nmodel: meta-llama/Llama-2-7b-hf\ntokens: 2.0e10\ndeadline_hours: 240\n")
    plan = load_plan({}, None, cwd=tmp_path)
    assert plan.origin.endswith("gpuopt.yaml")
    w = plan.workloads[0]
    assert (w.name, w.task, w.tokens, w.deadline_hours) == ("mine", "train", 2.0e10, 240.0)


def test_local_file_stays_the_base_when_options_are_given(tmp_path):
    # README: "options override the file" -- ./gpuopt.yaml keeps its other keys (providers) under --model
    (tmp_path / "gpuopt.yaml").write_text("task: serve\nmodel: x\ntokens_per_second: 300\nproviders: [aws]\n")
    plan = load_plan({"model": "meta-llama/Llama-2-13b-hf"}, None, cwd=tmp_path)
    w = plan.workloads[0]
    assert (w.task, w.model, w.tokens_per_second, plan.providers) == ("serve", "meta-llama/Llama-2-13b-hf", 300.0, ["aws"])


def test_command_line_model_without_local_file(tmp_path):
    plan = load_plan({"model": "meta-llama/Llama-2-70b-hf", "tokens_per_second": 2000}, None, cwd=tmp_path)
    assert plan.origin == "command-line options"
    assert plan.workloads[0].task == "serve" and plan.workloads[0].model == "meta-llama/Llama-2-70b-hf"


def test_non_finite_numbers_are_refused(tmp_path):
    f = tmp_path / "w.yaml"
    f.write_text("model: m\ntokens_per_second: 1\nbudget: .inf\n")
    with pytest.raises(InputError, match="budget: must be a finite number"):
        load_plan_file(f)


def test_explicit_file_with_overrides(tmp_path):
    f = tmp_path / "plan.yaml"
    f.write_text("task: serve\nmodel: meta-llama/Llama-2-7b-hf\ntokens_per_second: 100\nproviders: [aws]\n")
    plan = load_plan({"tokens_per_second": 900.0, "providers": []}, f)
    assert plan.workloads[0].tokens_per_second == 900.0
    assert plan.providers == ["aws"]  # an empty option list does not erase the file's list


def test_every_example_key_is_a_known_key():
    import yaml

    data = yaml.safe_load(EXAMPLE_WORKLOAD.read_text())
    assert set(data) <= set(ITEM_KEYS) | set(PLAN_KEYS)
    load_plan_file(EXAMPLE_WORKLOAD)  # and the one schema reads it


@pytest.mark.parametrize(
    "text, field",
    [
        ("tusk: serve\n", "tusk"),
        ("model: m\ntask: serve\ntokens_per_second: 1\nconcurrency: -3\n", "concurrency"),
        ("model: m\ntask: serve\ntokens_per_second: 1\nconcurrency: 2.5\n", "concurrency"),
        ("model: m\ntask: serve\ntokens_per_second: lots\n", "tokens_per_second"),
        ("model: m\ntokens_per_second: 1\nallow_spot: maybe\n", "allow_spot"),
        ("model: m\ntokens_per_second: 1\nhorizon_months: 0\n", "horizon_months"),
        ("model: m\ntokens_per_second: 1\nleftover_value: 2\n", "leftover_value"),
        ("model: m\ntokens_per_second: 1\nplacement: galaxy\n", "placement"),
        ("- just\n- a list\n", "workload"),
        ("task: [unclosed\n", "workload"),
    ],
)
def test_bad_files_name_the_field(tmp_path, text, field):
    f = tmp_path / "w.yaml"
    f.write_text(text)
    with pytest.raises(InputError) as exc:
        load_plan_file(f)
    assert exc.value.field == field


def test_bad_task_and_pricing_list_accepted_values(tmp_path):
    with pytest.raises(InputError, match=r"task: unknown value 'inference'.*\(accepted: serve, train, finetune, lora\)"):
        load_plan({"task": "inference", "model": "m", "tokens_per_second": 1}, None, cwd=tmp_path)
    with pytest.raises(InputError, match=r"accepted: on_demand, spot, reserved_1y, reserved_3y"):
        load_plan({"model": "m", "tokens_per_second": 1, "pricing": ["savings"]}, None, cwd=tmp_path)


def test_missing_file(tmp_path):
    with pytest.raises(InputError, match="file not found"):
        load_plan_file(tmp_path / "nope.yaml")
