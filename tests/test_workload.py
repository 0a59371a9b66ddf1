"""Where a workload comes from (--workload, ./gpuopt.yaml, the bundled example) and how the file is validated."""

from __future__ import annotations

import pytest

from gpuopt.errors import InputError
from gpuopt.workload import EXAMPLE_WORKLOAD, WORKLOAD_KEYS, load_workload_file, resolve_workload


def test_bundled_example_is_used_when_nothing_else_is_given(tmp_path):
    spec = resolve_workload({"budget": 50000}, None, cwd=tmp_path)
    assert "bundled example" in spec.origin
    assert spec.task == "serve"
    assert spec.model == "meta-llama/Llama-2-7b-hf"
    assert spec.tokens_per_second == 500
    assert spec.budget == 50000
    assert spec.describe().startswith("Workload 'llama2-7b-chat' (serve, meta-llama/Llama-2-7b-hf, 500 tokens/s) from the bundled example")


def test_local_gpuopt_yaml_wins_over_the_example(tmp_path):
    (tmp_path / "gpuopt.yaml").write_text("name: mine\ntask: train\nmodel: meta-llama/Llama-2-7b-hf\ntokens: 2.0e10\ndeadline_hours: 240\n")
    spec = resolve_workload({}, None, cwd=tmp_path)
    assert spec.origin == "./gpuopt.yaml"
    assert (spec.name, spec.task, spec.tokens, spec.deadline_hours) == ("mine", "train", 2.0e10, 240.0)


def test_local_file_stays_the_base_when_options_are_given(tmp_path):
    # README: "options override the file" -- ./gpuopt.yaml keeps its other keys (providers) under --model
    (tmp_path / "gpuopt.yaml").write_text("task: serve\nmodel: x\ntokens_per_second: 300\nproviders: [aws]\n")
    spec = resolve_workload({"model": "meta-llama/Llama-2-13b-hf"}, None, cwd=tmp_path)
    assert spec.origin == "./gpuopt.yaml with command-line options over it"
    assert (spec.task, spec.model, spec.tokens_per_second, spec.providers) == ("serve", "meta-llama/Llama-2-13b-hf", 300.0, ["aws"])


def test_command_line_model_without_local_file(tmp_path):
    spec = resolve_workload({"model": "meta-llama/Llama-2-70b-hf", "tokens_per_second": 2000}, None, cwd=tmp_path)
    assert spec.origin == "command-line options"
    assert spec.task == "serve" and spec.model == "meta-llama/Llama-2-70b-hf"


def test_non_finite_numbers_are_refused(tmp_path):
    f = tmp_path / "w.yaml"
    f.write_text("budget: .inf\n")
    with pytest.raises(InputError, match="budget: must be a finite number"):
        load_workload_file(f)


def test_explicit_file_with_overrides(tmp_path):
    f = tmp_path / "plan.yaml"
    f.write_text("task: serve\nmodel: meta-llama/Llama-2-7b-hf\ntokens_per_second: 100\nproviders: [aws]\n")
    spec = resolve_workload({"tokens_per_second": 900.0, "providers": []}, f)
    assert spec.tokens_per_second == 900.0
    assert spec.providers == ["aws"]  # an empty option list does not erase the file's list


def test_every_example_key_is_a_known_key():
    import yaml

    data = yaml.safe_load(EXAMPLE_WORKLOAD.read_text())
    assert set(data) <= set(WORKLOAD_KEYS)
    text = EXAMPLE_WORKLOAD.read_text()
    for key in WORKLOAD_KEYS:  # every key is documented in the example, set or commented out
        assert f"{key}:" in text, key


@pytest.mark.parametrize(
    "text, field",
    [
        ("tusk: serve\n", "tusk"),
        ("task: serve\nconcurrency: -3\n", "concurrency"),
        ("task: serve\nconcurrency: 2.5\n", "concurrency"),
        ("task: serve\ntokens_per_second: lots\n", "tokens_per_second"),
        ("allow_spot: maybe\n", "allow_spot"),
        ("providers: 3\n", "providers"),
        ("- just\n- a list\n", "workload"),
        ("task: [unclosed\n", "workload"),
    ],
)
def test_bad_files_name_the_field(tmp_path, text, field):
    f = tmp_path / "w.yaml"
    f.write_text(text)
    with pytest.raises(InputError) as exc:
        load_workload_file(f)
    assert exc.value.field == field


def test_bad_task_and_pricing_list_accepted_values(tmp_path):
    with pytest.raises(InputError, match=r"task: unknown task 'inference' \(accepted: serve, train, finetune, lora\)"):
        resolve_workload({"task": "inference", "model": "m"}, None, cwd=tmp_path)
    with pytest.raises(InputError, match=r"accepted: on_demand, spot, reserved_1y, reserved_3y"):
        resolve_workload({"model": "m", "pricing": ["savings"]}, None, cwd=tmp_path)


def test_missing_file(tmp_path):
    with pytest.raises(InputError, match="file not found"):
        load_workload_file(tmp_path / "nope.yaml")
