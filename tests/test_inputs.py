"""The input boundary of the configuration files (issue 13, points 1 and 2): plan YAML (both shapes), HF config.json,
the measurements JSON, the request trace CSV, the plan JSON of ``gpuopt diff``, and the number options of the CLI.

Each example of the issue is a test with the right behaviour; the hypothesis tests feed the plan and config.json
readers random files and accept only a result or a ``GpuoptError`` (bounded: 200 examples each, no deadline)."""

from __future__ import annotations

import json
import math
import time
import tracemalloc

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from gpuopt.cli import app
from gpuopt.kernel.errors import GpuoptError, InputError
from gpuopt.kernel.inputs import MAX_DEPTH, MAX_YAML_NODES, load_json, load_yaml, read_text
from gpuopt.plan_diff import load_plan_json
from gpuopt.plan_spec import PlanFile, load_plan_file
from optimizer.sizing.serving import load_measurements, load_trace
from optimizer.sizing.specs import ModelSpec, load_model, model_from_hf_config

runner = CliRunner()

#: meta-llama/Llama-2-7b-hf's config.json (tests/fixtures/hf_configs/Llama-2-7b-hf): 6,738,415,616 parameters.
LLAMA2_7B = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 4096,
             "intermediate_size": 11008, "max_position_embeddings": 4096, "num_attention_heads": 32,
             "num_hidden_layers": 32, "num_key_value_heads": 32, "vocab_size": 32000, "tie_word_embeddings": False}
LLAMA2_7B_PARAMS = 6_738_415_616

#: The issue's alias bomb: 342 bytes, nine levels of nine aliases each, 9^9 = 387,420,489 strings once expanded.
ALIAS_BOMB = 'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n' + "".join(
    f"{n}: &{n} [" + ",".join([f"*{p}"] * 9) + "]\n" for p, n in zip("abcdefgh", "bcdefghi"))


def _one_line(exc: pytest.ExceptionInfo) -> str:
    text = str(exc.value)
    assert "\n" not in text
    return text


# ------------------------------------------------------------------------------------------- plan YAML
def test_alias_bomb_fails_fast_in_bounded_memory_naming_the_file(tmp_path):
    f = tmp_path / "bomb.yaml"
    f.write_text(ALIAS_BOMB)
    assert len(ALIAS_BOMB.encode()) < 600
    tracemalloc.start()
    t0 = time.perf_counter()
    try:
        with pytest.raises(InputError) as exc:
            load_plan_file(f)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert time.perf_counter() - t0 < 5.0
    assert peak < 20 * 1024 * 1024  # bytes; the unbounded reader grew past 6 GiB
    text = _one_line(exc)
    assert exc.value.field == "workload"
    assert str(f) in text and f"aliases expand to more than {MAX_YAML_NODES:,} values" in text


def test_alias_bomb_through_the_cli_is_one_line_exit_1(tmp_path):
    f = tmp_path / "bomb.yaml"
    f.write_text(ALIAS_BOMB)
    t0 = time.perf_counter()
    r = runner.invoke(app, ["recommend", "--workload", str(f)])
    assert time.perf_counter() - t0 < 10.0
    assert r.exit_code == 1
    lines = r.output.strip().splitlines()
    assert len(lines) == 1 and "aliases expand" in lines[0] and "bomb.yaml" in lines[0], r.output


def test_recursive_alias_refused(tmp_path):
    f = tmp_path / "rec.yaml"
    f.write_text("model: &m [*m]\n")
    with pytest.raises(InputError, match="recursive alias, line 1") as exc:
        load_plan_file(f)
    assert str(f) in _one_line(exc)


@pytest.mark.parametrize("text", [
    "model: " + "[" * 5000 + "]" * 5000 + "\n",  # flow style
    "".join("  " * i + f"k{i}:\n" for i in range(200)) + "  " * 200 + "x: 1\n",  # block style
    "a: &a " + "[" * 40 + "]" * 40 + "\nb: " + "[" * 30 + "*a" + "]" * 30 + "\n",  # 71 levels through an alias
])
def test_deep_yaml_is_one_line_error_not_recursion_error(tmp_path, text):
    f = tmp_path / "deep.yaml"
    f.write_text(text)
    with pytest.raises(InputError, match=f"nested deeper than {MAX_DEPTH} levels") as exc:
        load_plan_file(f)
    assert str(f) in _one_line(exc)


def test_duplicate_key_in_single_workload_yaml_names_key_and_lines(tmp_path):
    f = tmp_path / "gpuopt.yaml"
    f.write_text("model: llama-3-8b\ntokens_per_second: 100\nbudget: 5000\ntokens_per_second: 200\n")
    with pytest.raises(InputError) as exc:
        load_plan_file(f)
    assert exc.value.field == "tokens_per_second"
    assert _one_line(exc) == f"tokens_per_second: duplicate key in {f} (lines 2 and 4)"


def test_duplicate_key_inside_a_workload_of_a_plan(tmp_path):
    f = tmp_path / "plan.yaml"
    f.write_text("workloads:\n  - name: a\n    model: llama-3-8b\n    tokens_per_second: 5\n    model: mistral-7b\n")
    with pytest.raises(InputError) as exc:
        load_plan_file(f)
    assert exc.value.field == "workloads[0].model" and "(lines 3 and 5)" in _one_line(exc)


def test_merge_key_override_is_no_duplicate(tmp_path):
    f = tmp_path / "plan.yaml"
    f.write_text("workloads:\n  - &a\n    name: a\n    model: llama-3-8b\n    tokens_per_second: 5\n"
                 "  - <<: *a\n    name: b\n    tokens_per_second: 7\n")
    plan = load_plan_file(f)
    assert [(w.name, w.model, w.tokens_per_second) for w in plan.workloads] == [
        ("a", "llama-3-8b", 5.0), ("b", "llama-3-8b", 7.0)]


def test_yaml_with_bom_read_and_latin1_refused_naming_the_file(tmp_path):
    f = tmp_path / "bom.yaml"
    f.write_bytes("\ufeffmodel: llama-3-8b\ntokens_per_second: 250\n".encode())
    assert load_plan_file(f).workloads[0].tokens_per_second == 250.0
    g = tmp_path / "latin.yaml"
    g.write_bytes(b"name: caf\xe9\nmodel: llama-3-8b\ntokens_per_second: 5\n")
    with pytest.raises(InputError) as exc:
        load_plan_file(g)
    assert _one_line(exc).startswith(f"workload: {g} is not UTF-8 text (byte 0xe9 at line 1)")


@pytest.mark.parametrize("line, field, message", [
    ("tokens_per_second: .inf", "tokens_per_second", "must be a finite number, got inf"),
    ("tokens_per_second: .nan", "tokens_per_second", "must be a finite number, got nan"),
    ("tokens_per_second: 1.0e+300", "tokens_per_second", "must be at most 1e+15, got 1e+300"),
    ("tokens_per_second: 5\nbudget: 1.0e+300", "budget", "must be at most 1e+15, got 1e+300"),
    ("tokens_per_second: 5\ncontext_tokens: " + "9" * 30, "context_tokens", "must be at most 1e+15"),
    ("tokens_per_second: 5\ncontext_tokens: " + "9" * 5000, "context_tokens",
     "is not valid: Exceeds the limit (4300 digits) for integer string conversion"),  # issue 33: names the key
])
def test_plan_numbers_finite_and_in_range(tmp_path, line, field, message):
    f = tmp_path / "w.yaml"
    f.write_text("model: llama-3-8b\n" + line + "\n")
    with pytest.raises(InputError) as exc:
        load_plan_file(f)
    assert exc.value.field == field and message in _one_line(exc)


def test_local_gpuopt_yaml_read_through_the_same_boundary(tmp_path, monkeypatch):
    """``gpuopt recommend`` without --workload reads ./gpuopt.yaml: a duplicate key there is refused too."""
    (tmp_path / "gpuopt.yaml").write_text("model: llama-3-8b\ntokens_per_second: 5\ntokens_per_second: 6\n")
    monkeypatch.chdir(tmp_path)
    r = runner.invoke(app, ["recommend"])
    assert r.exit_code == 1
    assert r.output.strip() == ("gpuopt: error: tokens_per_second: duplicate key in "
                                f"{tmp_path / 'gpuopt.yaml'} (lines 2 and 3)")


# ------------------------------------------------------------------------------------------- config.json
def _config(tmp_path, data: bytes | str | dict):
    d = tmp_path / "my-model"
    d.mkdir(exist_ok=True)
    f = d / "config.json"
    if isinstance(data, dict):
        data = json.dumps(data)
    (f.write_bytes if isinstance(data, bytes) else f.write_text)(data)
    return f


def test_config_json_hidden_size_1e308_refused_naming_field_and_file(tmp_path):
    f = _config(tmp_path, json.dumps(LLAMA2_7B).replace('"hidden_size": 4096', '"hidden_size": 1e308'))
    with pytest.raises(InputError) as exc:
        load_model(str(f.parent))
    text = _one_line(exc)
    assert exc.value.field == "model"
    assert f"{f}: field 'hidden_size' must be a whole number from 1 to 1,048,576, got 1e+308" in text


@pytest.mark.parametrize("key, value, shown", [("hidden_size", "1e400", "got inf"),
                                                ("num_hidden_layers", "NaN", "got nan"),
                                                ("vocab_size", "Infinity", "got inf"),
                                                ("intermediate_size", "-11008", "got -11008")])
def test_config_json_bad_numbers_name_the_field(tmp_path, key, value, shown):
    text = json.dumps(LLAMA2_7B).replace(f'"{key}": {LLAMA2_7B[key]}', f'"{key}": {value}')
    f = _config(tmp_path, text)
    with pytest.raises(InputError) as exc:
        model_from_hf_config(f)
    assert f"{f}: field {key!r} must be a whole number > 0, {shown}" in _one_line(exc)


def test_config_json_with_bom_reads_like_without(tmp_path):
    f = _config(tmp_path, b"\xef\xbb\xbf" + json.dumps(LLAMA2_7B).encode())
    spec = load_model(str(f))
    assert spec.params_total == LLAMA2_7B_PARAMS and spec.hidden_size == 4096


def test_config_json_nonfinite_in_a_field_not_read_is_accepted(tmp_path):
    """transformers' json.dumps writes NaN/Infinity; a field gpuopt does not read may hold one."""
    f = _config(tmp_path, json.dumps({**LLAMA2_7B, "rope_scaling_limit": float("inf")}))
    assert model_from_hf_config(f).params_total == LLAMA2_7B_PARAMS


@pytest.mark.parametrize("data, message", [
    (b'{"model_type": "ll\xe9ma"}', "is not UTF-8 text (byte 0xe9 at line 1)"),
    ("[" * 100_000 + "]" * 100_000, f"nested deeper than {MAX_DEPTH} levels"),
    ('{"a": ' * 70 + "1" + "}" * 70, f"nested deeper than {MAX_DEPTH} levels"),
    ('{"hidden_size": 4096, "hidden_size": 8}', "duplicate key 'hidden_size' in one JSON object"),
    ('{"vocab_size": ' + "9" * 5000 + "}", "a value is not valid"),
    ('{"vocab_size": 3', "is not valid JSON: Expecting ',' delimiter at line 1 column 17"),
])
def test_config_json_bad_files_are_one_line_naming_the_file(tmp_path, data, message):
    f = _config(tmp_path, data)
    with pytest.raises(InputError) as exc:
        model_from_hf_config(f)
    text = _one_line(exc)
    assert str(f) in text and message in text


# ------------------------------------------------------------------------------------------- other JSON/CSV
def test_diff_plan_json_with_bom_accepted_and_bad_ones_named(tmp_path):
    plan = {"schema_version": 2, "total_usd": 1234.5, "lines": [{"provider": "aws", "count": 2, "total_usd": 1234.5}]}
    f = tmp_path / "old.json"
    f.write_bytes(b"\xef\xbb\xbf" + json.dumps(plan).encode())
    assert load_plan_json(f, "old")["total_usd"] == 1234.5
    for text, message in [(json.dumps(plan).replace("1234.5,", "Infinity,", 1), "Infinity is not a finite number"),
                          (json.dumps(plan).replace('"count": 2', '"count": "two"'), "lines[0].count: must be a whole"),
                          (json.dumps(plan).replace("1234.5}", "1e300}"), "lines[0].total_usd: must be a number"),
                          ('{"lines": [' * 80 + "]}" * 80, "nested deeper than")]:
        f.write_text(text)
        with pytest.raises(InputError) as exc:
            load_plan_json(f, "old")
        assert exc.value.field == "old" and str(f) in _one_line(exc) and message in str(exc.value), text[:80]


def test_measured_json_with_bom_and_infinite_figures(tmp_path):
    row = {"model_id": "meta-llama/Llama-2-7b-hf", "input_len": 1000, "output_len": 100,
           "output_throughput": 1500.0, "std_ttft_ms": float("nan")}  # vLLM writes NaN for a std of one request
    f = tmp_path / "bench.json"
    f.write_bytes(b"\xef\xbb\xbf" + json.dumps(row).encode())
    (m,) = load_measurements(str(f)).rows
    assert m.tokens_per_second == 1500.0 and m.input_tokens == 1000
    f.write_text(json.dumps({**row, "input_lens": [1e308, 1e308]}).replace('"input_len": 1000, ', ""))
    with pytest.raises(InputError, match="input_tokens inf must be a whole number > 0") as exc:
        load_measurements(str(f))
    assert exc.value.field == "measured"
    f.write_bytes(b'{"model_id": "caf\xe9"}')
    with pytest.raises(InputError, match=r"bench.json is not UTF-8 text \(byte 0xe9 at line 1\)"):
        load_measurements(str(f))


def test_trace_csv_bounds_and_bad_bytes(tmp_path):
    f = tmp_path / "trace.csv"
    f.write_text("input_tokens,output_tokens\n100,10\n1e300,10\n")
    with pytest.raises(InputError, match="line 3: input_tokens '1e300' is not a whole number from 0 to 1,000,000,000"):
        load_trace(str(f))
    f.write_text("input_tokens,output_tokens\n100,10\n\"" + "9" * 200_000 + "\",1\n")
    with pytest.raises(InputError, match=r"cannot read .*trace.csv: field larger than field limit \(131072\)"):
        load_trace(str(f))
    f.write_bytes(b"input_tokens,output_tokens\n100,10\n\xff,1\n")
    with pytest.raises(InputError, match=r"trace.csv is not UTF-8 text \(byte 0xff\)"):
        load_trace(str(f))


# ------------------------------------------------------------------------------------------- CLI options
@pytest.mark.parametrize("args, message", [
    (["estimate", "--model", "llama-3-8b", "--tokens-per-second", "inf"],
     "--tokens-per-second: must be a finite number, got inf"),
    (["estimate", "--model", "llama-3-8b", "--task", "train", "--tokens", "nan"],
     "--tokens: must be a finite number, got nan"),
    (["recommend", "--model", "llama-3-8b", "--tokens-per-second", "5", "--budget", "inf"],
     "--budget: must be a finite number, got inf"),
    (["recommend", "--model", "llama-3-8b", "--tokens-per-second", "-inf"],
     "--tokens-per-second: must be a finite number, got -inf"),
    (["recommend", "--model", "llama-3-8b", "--tokens-per-second", "1e300"],
     "--tokens-per-second: must be from -1e+15 to 1e+15, got 1e+300"),
    (["diff", "a.json", "b.json", "--fail-above", "nan"], "--fail-above: must be a finite number, got nan"),
])
def test_cli_number_options_finite_naming_the_option(args, message):
    r = runner.invoke(app, args)
    assert r.exit_code == 1
    assert r.output.strip() == f"gpuopt: error: {message}"


# ------------------------------------------------------------------------------------------- the loaders alone
def test_loaders_directly():
    assert load_json('{"a": [1, 2.5]}', "x", "f") == {"a": [1, 2.5]}
    assert load_json("NaN", "x", "f", allow_nonfinite=True) != load_json("0", "x", "f")
    data, node = load_yaml("", "x")
    assert data is None and node is None
    with pytest.raises(InputError, match="x is not valid YAML at line 1"):
        load_yaml("a: [", "x")
    with pytest.raises(InputError, match="x is not valid YAML"):
        load_yaml("a: !!python/object:os.system 1", "x")
    with pytest.raises(InputError, match="more than 1000 aliases"):
        load_yaml("a: &a 1\nb: [" + ",".join(["*a"] * 1001) + "]", "x")


def test_read_text_refuses_a_folder_and_a_huge_file(tmp_path):
    with pytest.raises(InputError, match="is a directory, not a plan"):
        read_text(tmp_path, "f", "plan")
    big = tmp_path / "big.yaml"
    big.write_bytes(b"#" * 2000)
    with pytest.raises(InputError, match="is 2,000 bytes, more than the 1,000 a plan may have"):
        read_text(big, "f", "plan", max_bytes=1000)


# ------------------------------------------------------------------------------------------- fuzz
_FUZZ = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                        HealthCheck.function_scoped_fixture])

_scalars = st.one_of(st.none(), st.booleans(), st.integers(min_value=-(10**30), max_value=10**30),
                     st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=12),
                     st.sampled_from(["llama-3-8b", "serve", "train", "bf16", "H100-80GB", "aws", "2024-06-01"]))
_values = st.recursive(_scalars, lambda c: st.lists(c, max_size=4) | st.dictionaries(st.text(max_size=8), c,
                                                                                     max_size=4), max_leaves=12)
_PLAN_KEYS = ["name", "task", "model", "params", "precision", "tokens_per_second", "request_rate", "demand",
              "tokens", "deadline_hours", "budget", "budget_total", "horizon_months", "gpus", "pricing", "allow_spot",
              "min_replicas", "input_tokens", "output_tokens", "start", "end", "months", "blocks", "leftover_value",
              "prices_on"]
_plan_dicts = st.dictionaries(st.sampled_from(_PLAN_KEYS), _values, max_size=8)
_yaml_text = st.one_of(
    _plan_dicts.map(lambda d: yaml.safe_dump(d, allow_unicode=True)),
    st.lists(_plan_dicts, min_size=1, max_size=3).map(lambda ws: yaml.safe_dump({"budget": 1000, "workloads": ws})),
    st.text(alphabet=st.sampled_from(list("ab:-[]{}&*!|>'\"#\n ,.01e<?%\t")), max_size=80),
    st.binary(max_size=60).map(lambda b: b.decode("latin-1")),
)


def _finite_numbers(x) -> bool:
    if isinstance(x, float):
        return math.isfinite(x)
    if isinstance(x, dict):
        return all(_finite_numbers(v) for v in x.values())
    if isinstance(x, list):
        return all(_finite_numbers(v) for v in x)
    return True


@_FUZZ
@given(text=_yaml_text)
def test_fuzz_plan_yaml_gives_a_plan_or_a_gpuopt_error(tmp_path, text):
    f = tmp_path / "fuzz.yaml"
    f.write_text(text, encoding="utf-8", errors="surrogatepass")
    try:
        plan = load_plan_file(f)
    except GpuoptError as exc:
        assert "\n" not in str(exc)
        return
    assert isinstance(plan, PlanFile) and _finite_numbers(plan.model_dump())


_HF_KEYS = list(LLAMA2_7B) + ["head_dim", "num_local_experts", "num_experts_per_tok", "sliding_window",
                               "new_decoder_architecture", "multi_query", "num_kv_heads", "bias", "n_embd", "n_layer"]
_hf_numbers = st.one_of(st.integers(min_value=-4, max_value=2**70), st.floats(),
                        st.sampled_from([0, 1, 2, 8, 64, 4096]))
_hf_dicts = st.fixed_dictionaries(
    {"model_type": st.sampled_from(["llama", "mistral", "mixtral", "qwen2", "falcon", "RefinedWeb", "gpt_neox", "x"])},
    optional={k: st.one_of(_hf_numbers, _scalars) for k in _HF_KEYS if k != "model_type"})


@_FUZZ
@given(cfg=st.one_of(_hf_dicts, _hf_dicts.map(lambda d: {**LLAMA2_7B, **d})))
def test_fuzz_config_json_gives_a_model_or_a_gpuopt_error(tmp_path, cfg):
    f = _config(tmp_path, json.dumps(cfg))  # json.dumps writes NaN and Infinity, as transformers does
    try:
        spec = model_from_hf_config(f)
    except GpuoptError as exc:
        assert "\n" not in str(exc)
        return
    assert isinstance(spec, ModelSpec)
    assert math.isfinite(spec.params_total) and spec.params_total > 0 and spec.hidden_size <= 2**20


@_FUZZ
@given(data=st.one_of(st.binary(max_size=80), st.text(max_size=80).map(str.encode),
                      st.sampled_from([b"\xef\xbb\xbf", b"{}", b"[]", b"null", b"{\"hidden_size\": 1e999}"])))
def test_fuzz_config_json_bytes_give_a_gpuopt_error(tmp_path, data):
    f = _config(tmp_path, data)
    with pytest.raises(GpuoptError) as exc:  # no such bytes make a whole model: each is refused, in one line
        model_from_hf_config(f)
    assert "\n" not in str(exc.value)


# ------------------------------------------------------------------------------ issue 30: the measured reader
def _measured(tmp_path, text, name="m.csv"):
    from optimizer.sizing.serving import load_measurements

    f = tmp_path / name
    f.write_text(text, encoding="utf-8")
    return load_measurements(str(f))


def test_measured_csv_refuses_a_column_given_twice(tmp_path):
    # issue 30: with output_tokens_per_second twice (2000, then 50) the last one won silently
    with pytest.raises(InputError) as exc:
        _measured(tmp_path, "model,input_len,output_len,output_tokens_per_second,output_tokens_per_second\n"
                            "meta-llama/Llama-2-7b-hf,1000,100,2000,50\n")
    assert exc.value.field == "measured" and "column(s) given twice: output_tokens_per_second" in exc.value.message


def test_measured_rows_of_one_point_averaged_or_refused(tmp_path):
    head = "model,input_len,output_len,output_tokens_per_second\n"
    m = _measured(tmp_path, head + "meta-llama/Llama-2-7b-hf,1000,100,2000\nmeta-llama/Llama-2-7b-hf,1000,100,2200\n")
    (r,) = m.rows
    assert r.tokens_per_second == 2100 and r.also == (2,) and r.rows_text == "rows 1, 2 (their mean)"
    # 100 vs 9,000 tokens/s for one point: the first was used without a word
    with pytest.raises(InputError) as exc:
        _measured(tmp_path, head + "meta-llama/Llama-2-7b-hf,1000,100,100\nmeta-llama/Llama-2-7b-hf,1000,100,9000\n")
    assert "rows 1 and 2 measure the same point" in exc.value.message and "100 vs 9000" in exc.value.message
    # another point (other lengths) is another row
    assert len(_measured(tmp_path, head + "meta-llama/Llama-2-7b-hf,1000,100,100\n"
                                          "meta-llama/Llama-2-7b-hf,2000,100,9000\n").rows) == 2


def test_measured_figures_within_physical_bounds(tmp_path):
    head = "model,gpu,tp,input_len,output_len,ttft_ms,output_tokens_per_second\n"
    with pytest.raises(InputError) as exc:  # issue 30: a TTFT of 1e12 ms was taken; the error blamed the target
        _measured(tmp_path, head + "meta-llama/Llama-2-7b-hf,H100-80GB,1,1000,100,1e12,2000\n")
    assert "row 1: ttft_ms 1e+12 ms is beyond any benchmark's wait (more than 6 h)" in exc.value.message
    # an H100 computes at most 1,979 TFLOP/s (fp8 dense) / (2 x 6.7e9 FLOPs a token of Llama-2-7B) ~ 148k tokens/s
    with pytest.raises(InputError) as exc:
        _measured(tmp_path, head + "meta-llama/Llama-2-7b-hf,H100-80GB,1,1000,100,100,1e7\n")
    assert "row 1 (line 2): output_tokens_per_second 1e+07 is above the H100-80GB's compute roofline of 146,845 " \
        "tokens/s for Llama-2-7B at any precision (1979 TFLOPS / (2 x 6.74e9 FLOP per token)" in exc.value.message


def test_measured_genai_perf_export_names_its_model_in_input_config(tmp_path):
    # GenAI-Perf's profile_export_genai_perf.json: statistics objects, the model in input_config.model_names,
    # lengths as input/output_sequence_length statistics (their mean, rounded to whole tokens)
    doc = {"output_token_throughput": {"unit": "tokens/sec", "avg": 1510.4},
           "time_to_first_token": {"unit": "ms", "avg": 180.2, "p99": 300.0},
           "inter_token_latency": {"unit": "ms", "avg": 21.5},
           "input_sequence_length": {"unit": "tokens", "avg": 199.6},
           "output_sequence_length": {"unit": "tokens", "avg": 100.4},
           "input_config": {"model_names": ["meta-llama/Llama-2-7b-hf"], "concurrency": 16}}
    (r,) = _measured(tmp_path, json.dumps(doc), "profile_export_genai_perf.json").rows
    assert (r.model.name, r.input_tokens, r.output_tokens, r.concurrency) == ("Llama-2-7B", 200, 100, 16)
    assert (r.tokens_per_second, r.ttft_ms, r.tpot_ms) == (1510.4, 180.2, 21.5)


def test_measured_given_a_folder_says_so(tmp_path):
    from optimizer.sizing.serving import load_measurements

    with pytest.raises(InputError) as exc:
        load_measurements(str(tmp_path))
    assert exc.value.message == f"{tmp_path} is a folder; give the benchmark file in it"
