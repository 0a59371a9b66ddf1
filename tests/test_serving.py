"""The serving performance model (issue 10): published points, memory against an engine log, latency targets, FP8,
the user's own measurements, the planner's choice of layout and precision, and the interface.

Published points are rows of the calibration set ``shared/data/perf/serving.csv`` (copied to
``tests/fixtures/perf``), each cited by row id and source; tolerances are the issue's: +-30 % for throughput,
+-35 % for TTFT/TPOT.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path

import pytest

from gpuopt.kernel.errors import InputError
from optimizer.sizing import serving as sv
from optimizer.sizing import Workload, estimate, size_replica, with_request_rate
from optimizer.sizing.specs import load_gpu, load_model

ROOT = Path(__file__).resolve().parents[1]
PERF = ROOT / "tests" / "fixtures" / "perf"


def _cli(*args):
    from typer.testing import CliRunner

    from gpuopt.cli import app

    return CliRunner().invoke(app, list(args))


def _offline(model, gpu, tp, precision, engine, inp, out):
    m, g = load_model(model), load_gpu(gpu)
    pt = sv.best_point(m, g, sv.Layout(tp, 1), precision, sv.ENGINES[engine], inp, out)
    return pt.tokens_per_second / tp


@pytest.mark.parametrize("row, model, gpu, tp, precision, inp, out, measured", [
    # TensorRT-LLM perf-overview (trtllm-bench, offline max throughput), NVIDIA/TensorRT-LLM docs, v0.17 / v1.0
    ("52", "meta-llama/Llama-3.1-8B", "H100-80GB", 1, "fp8", 128, 128, 28836.77),
    ("163", "meta-llama/Llama-3.1-70B", "L40S", 4, "fp8", 1000, 1000, 302.31),
    ("200", "meta-llama/Llama-3.1-70B", "A100-80GB", 8, "fp16", 1000, 1000, 415.05),
    ("440", "nvidia/Llama-3.3-70B-Instruct-FP4", "B200", 1, "fp4", 1000, 1000, 7007.0),
])
def test_offline_throughput_matches_published_tensorrt_llm_rows(row, model, gpu, tp, precision, inp, out, measured):
    est = _offline(model, gpu, tp, precision, "tensorrt-llm", inp, out)
    assert est / measured == pytest.approx(1.0, abs=0.30), f"calibration row {row}: {est:.1f} vs {measured}"


def test_nim_interactive_point_latency_and_throughput():
    # row 692: NVIDIA NIM 1.8.0 (TensorRT-LLM), Llama-3.3-70B-Instruct FP8, 2x H100 TP2, 5000 in / 500 out,
    # concurrency 5 (AIPerf): 109.24 output tokens/s per GPU, mean TTFT 546.7 ms, mean ITL 21.83 ms
    m, g = load_model("meta-llama/Llama-3.3-70B-Instruct"), load_gpu("H100-80GB")
    pt = sv.best_point(m, g, sv.Layout(2, 1), "fp8", sv.ENGINES["tensorrt-llm"], 5000, 500, concurrency=5)
    assert pt.batch == 5
    assert pt.tokens_per_second / 2 / 109.24 == pytest.approx(1.0, abs=0.30)
    assert pt.ttft_ms / 546.7 == pytest.approx(1.0, abs=0.35)
    assert pt.tpot_ms / 21.83 == pytest.approx(1.0, abs=0.35)


def test_fit_on_the_whole_calibration_set_meets_the_issue_goal():
    """The fit script's figures (README): >= 80 % of throughput figures within +-30 %, TTFT and TPOT within
    +-35 %."""
    sys.path.insert(0, str(ROOT))
    from benchmarks import serving_fit

    cases, skipped = serving_fit.load_rows(PERF / "serving.csv")
    res = serving_fit.residuals(cases, sv.FIT)
    s = serving_fit.summary(res)
    assert s["tps_per_gpu"]["n"] >= 360 and s["tps_per_gpu"]["within"] >= 0.80
    assert s["ttft_ms"]["n"] >= 20 and s["ttft_ms"]["within"] >= 0.80
    assert s["tpot_ms"]["n"] >= 7 and s["tpot_ms"]["within"] >= 0.80
    assert 0.9 <= s["tps_per_gpu"]["median_estimate_over_measured"] <= 1.1
    assert sum(skipped.values()) == 19  # dataset lengths, disaggregated, two engines (GH200/GB200 rows are used: issue 27)


def test_the_2026_gpus_rows_the_fit_never_saw_are_within_the_bound():
    """GH200 and GB200 rows of the calibration set became usable with their datasheet rows (issue 27 point 4), after
    the fit: the shipped efficiencies (Hopper and Blackwell bandwidth) predict their tokens/s per GPU within +-30 %
    (benchmarks/serving_fit.py by GPU: GH200 23 rows, median error 5.1 %; GB200 16 rows, 5.7 %)."""
    sys.path.insert(0, str(ROOT))
    from benchmarks import serving_fit

    cases, _ = serving_fit.load_rows(PERF / "serving.csv")
    for gpu, n in (("GH200", 20), ("GB200", 14)):
        res = serving_fit.residuals([c for c in cases if c["gpu"].name == gpu], sv.FIT)
        s = serving_fit.summary(res)["tps_per_gpu"]
        assert s["n"] >= n and s["within"] >= 0.95 and s["median_abs_error_pct"] <= 8.0


def test_p99_ratios_are_the_calibration_sets_median():
    sys.path.insert(0, str(ROOT))
    from benchmarks import serving_fit

    r = serving_fit.p99_over_mean(PERF / "serving.csv")
    assert r["rows"] == 7
    assert round(r["ttft"], 2) == sv.P99_OVER_MEAN_TTFT and round(r["tpot"], 2) == sv.P99_OVER_MEAN_TPOT


def test_weights_and_kv_pool_against_a_vllm_log():
    # memory.csv row 63-64: vLLM (0.6.x) log, meta-llama/Llama-3.1-8B-Instruct bf16 on an RTX 3090
    # (total_gpu_memory 23.58 GiB), gpu_memory_utilization 0.90, max_model_len 29000: "Loading model weights took
    # 14.9888 GB" (GiB, per the data README), KV cache 2.89 GiB (1478 blocks of 16 = 23,648 tokens).
    m = load_model("meta-llama/Llama-3.1-8B-Instruct")
    gpu = dataclasses.replace(load_gpu("RTX-3090"), memory_gib=23.58)
    # chunked prefill is off below 32K context in vLLM 0.6: the profiling run is one batch of max_model_len tokens
    engine = dataclasses.replace(sv.ENGINES["vllm"], max_num_tokens=29000, max_num_tokens_small=29000)
    mem = sv.memory_per_gpu(m, gpu, sv.Layout(1, 1), "bf16", engine)
    assert mem["weights"] / 2**30 == pytest.approx(14.9888, rel=0.01)
    assert mem["kv_budget"] / 2**30 == pytest.approx(2.89, rel=0.10)
    tokens = mem["kv_budget"] / mem["kv_per_token"]
    assert tokens == pytest.approx(23648, rel=0.10)


@pytest.mark.parametrize("model", ["Llama-2-7B", "Llama-3-8B", "meta-llama/Llama-3.1-8B-Instruct"])
@pytest.mark.parametrize("gpu", ["A10G", "L4", "RTX-4090"])
def test_a_7b_model_serves_on_one_24gb_gpu(model, gpu):
    # the issue: Llama-2-7B / Llama-3-8B landed on 2 or 4 GPUs over PCIe; 16 GB of bf16 weights fit one 24 GB card
    # (under MLPerf's server limits: at the chat default's 50 ms TPOT an L4's 300 GB/s reads 13.5 GB of weights in
    # 45 ms a token, too slow at p99 on one card)
    e = estimate(Workload(task="serve", model=load_model(model), scenario="server"), gpu)
    assert e["gpus_per_replica"] == 1 and e["tensor_parallel"] == 1
    assert e["concurrency"] >= 4
    assert e["tpot_ms"] * sv.P99_OVER_MEAN_TPOT <= 200 and e["ttft_ms"] * sv.P99_OVER_MEAN_TTFT <= 2000


def test_fp8_refused_without_fp8_tensor_cores():
    w = Workload(task="serve", model=load_model("Llama-2-7B"), precision="fp8")
    with pytest.raises(InputError) as exc:
        estimate(w, "A100-80GB")
    assert exc.value.field == "precision" and "no FP8 tensor cores" in str(exc.value)
    assert "fp8" not in (exc.value.accepted or "")
    with pytest.raises(InputError, match="fp4 needs Blackwell"):
        estimate(dataclasses.replace(w, precision="fp4"), "H100-80GB")
    assert sv.supported_precisions(load_gpu("H100-80GB")) == ("bf16", "fp16", "fp8", "int8", "int4")
    assert "fp4" in sv.supported_precisions(load_gpu("B200"))


def test_fp8_cli_error_is_one_line_exit_1():
    r = _cli("estimate", "--model", "Llama-2-7B", "--gpu", "A100-80GB", "--precision", "fp8")
    assert r.exit_code == 1
    assert r.stderr.strip().count("\n") == 0 and "precision" in r.stderr and "Traceback" not in r.stderr


def test_fp8_doubles_large_batch_throughput_and_halves_weights():
    m, g = load_model("Llama-3.1-70B"), load_gpu("H100-80GB")
    eng = sv.ENGINES["vllm"]
    lay = sv.Layout(4, 1)
    w16 = sv.memory_per_gpu(m, g, lay, "bf16", eng)["weights"]
    w8 = sv.memory_per_gpu(m, g, lay, "fp8", eng)["weights"]
    assert 0.5 < w8 / w16 < 0.53  # embeddings and head stay 16-bit
    b16 = sv.best_point(m, g, lay, "bf16", eng, 1024, 128)
    b8 = sv.best_point(m, g, lay, "fp8", eng, 1024, 128)
    assert b8.tokens_per_second > 1.3 * b16.tokens_per_second
    # weight-only int4 reads a quarter of the bytes: faster than bf16 at batch 1 (decode is bandwidth-bound), by
    # less than 4x as its dequantizing kernels reach 0.65 of the bandwidth (benchmarks/weight_only_fit.py)
    m8, l4, one = load_model("Llama-3.1-8B"), load_gpu("L4"), sv.Layout(1, 1)
    i4 = sv.point(m8, l4, one, "int4", eng, 1, 1024, 128)
    f16 = sv.point(m8, l4, one, "bf16", eng, 1, 1024, 128)
    assert 0.4 * f16.step_ms < i4.step_ms < 0.6 * f16.step_ms
    # an 8B model in bf16 reads 16 GB per token: an L4 (300 GB/s) cannot meet the interactive 40 ms TPOT
    assert sv.best_point(m8, l4, one, "bf16", eng, 1024, 128, ttft_slo_ms=450, tpot_slo_ms=40) is None


def test_batch_is_the_largest_that_meets_the_targets():
    m, g = load_model("Llama-3.1-8B"), load_gpu("A100-80GB")
    eng = sv.ENGINES["vllm"]
    lay = sv.Layout(1, 1)
    pt = sv.best_point(m, g, lay, "bf16", eng, 1024, 128, ttft_slo_ms=450, tpot_slo_ms=40)
    assert pt is not None and pt.tpot_ms * sv.P99_OVER_MEAN_TPOT <= 40
    nxt = sv.point(m, g, lay, "bf16", eng, pt.batch + 1, 1024, 128)
    assert nxt.tpot_ms * sv.P99_OVER_MEAN_TPOT > 40 or nxt.ttft_ms * sv.P99_OVER_MEAN_TTFT > 450 \
        or pt.batch == sv.batch_cap(m, g, lay, "bf16", eng, 1024, 128)
    offline = sv.best_point(m, g, lay, "bf16", eng, 1024, 128)
    assert offline.batch == sv.batch_cap(m, g, lay, "bf16", eng, 1024, 128) > pt.batch
    assert offline.tokens_per_second > pt.tokens_per_second


def test_targets_no_batch_meets_makes_the_replica_unfit():
    w = Workload(task="serve", model=load_model("Llama-2-70B"), tpot_slo_ms=5.0)
    s = size_replica(w, load_gpu("A100-80GB"), 4.0)
    assert not s.fits and any("does not serve: no batch meets" in a for a in s.assumptions)


def test_kv_cache_is_paged_at_the_average_context():
    # vLLM pages on demand: input + half the output per running sequence; TensorRT-LLM's default scheduler
    # reserves the whole request (GUARANTEED_NO_EVICT)
    assert sv.tokens_held(sv.ENGINES["vllm"], 1000, 1000) == 1500
    assert sv.tokens_held(sv.ENGINES["tensorrt-llm"], 1000, 1000) == 2000
    m, g = load_model("Llama-3.1-8B"), load_gpu("A100-80GB")
    held = sv.max_batch_memory(m, g, sv.Layout(1, 1), "bf16", sv.ENGINES["vllm"], 1000, 1000)
    full = sv.max_batch_memory(m, g, sv.Layout(1, 1), "bf16", sv.ENGINES["tensorrt-llm"], 1000, 1000)
    assert held == pytest.approx(full * 2000 / 1500, rel=0.02)


def test_the_same_demand_no_longer_depends_on_a_default_batch():
    # the issue: Llama-2-70B at 2,000 tokens/s cost $8.6k-$28.7k a month depending on --concurrency; the batch is now
    # chosen from memory and the targets, and a given concurrency is honoured exactly
    w = Workload(task="serve", model=load_model("Llama-2-70B"), tokens_per_second=2000, scenario="server")
    e = estimate(w, "H100-80GB")
    assert e["concurrency"] > 16
    e8 = estimate(dataclasses.replace(w, concurrency=8), "H100-80GB")
    assert e8["concurrency"] == 8 and e8["tokens_per_second_per_replica"] < e["tokens_per_second_per_replica"]


def test_request_rate_is_requests_times_output_tokens():
    w = Workload(task="serve", model=load_model("Llama-3.1-8B"), request_rate=5.0, output_tokens=300)
    assert with_request_rate(w).tokens_per_second == 1500.0
    with pytest.raises(InputError, match="not both"):
        with_request_rate(dataclasses.replace(w, tokens_per_second=10.0))


def test_measured_round_trip(tmp_path):
    # the user's benchmark: calibration row 692 (NIM 1.8.0 = TensorRT-LLM, 2x H100 TP2 FP8, 5000/500,
    # concurrency 5): 218.48 output tokens/s for the replica (109.24 per GPU), TTFT 546.7 ms, TPOT 21.83 ms
    f = tmp_path / "bench.csv"
    f.write_text("model,gpu,tensor_parallel,precision,engine,input_tokens,output_tokens,concurrency,"
                 "output_tokens_per_second,ttft_ms,tpot_ms\n"
                 "meta-llama/Llama-3.3-70B-Instruct,H100-80GB,2,fp8,tensorrt-llm,5000,500,5,218.48,546.7,21.83\n")
    import gpuopt

    kw = dict(model="meta-llama/Llama-3.3-70B-Instruct", task="serve", gpu="H100-80GB", tensor_parallel=2,
              precision="fp8", engine="tensorrt-llm", input_tokens=5000, output_tokens=500)
    at = gpuopt.estimate(**kw, concurrency=5, measured=str(f)).numbers
    assert at["tokens_per_second_per_replica"] == pytest.approx(218.48, rel=0.05)
    assert at["ttft_ms"] == pytest.approx(546.7, rel=0.05) and at["tpot_ms"] == pytest.approx(21.83, rel=0.05)
    assert at["estimate_source"].startswith(f"measured: {f} row 1")
    # elsewhere it scales by the model: at concurrency 25 the same NIM run measured 311.70 tokens/s per GPU and
    # 38.75 ms ITL (row 693); the corrected model stays within the issue's bounds
    far = gpuopt.estimate(**kw, concurrency=25, measured=str(f)).numbers
    assert far["tokens_per_second_per_replica"] / 2 / 311.70 == pytest.approx(1.0, abs=0.30)
    assert far["tpot_ms"] / 38.75 == pytest.approx(1.0, abs=0.35)
    plain = gpuopt.estimate(**kw, concurrency=25).numbers
    assert plain["estimate_source"].startswith("model")
    # a JSON of vLLM benchmark_serving's keys reads the same
    j = tmp_path / "bench.json"
    j.write_text(json.dumps({"model_id": "meta-llama/Llama-3.3-70B-Instruct", "gpu": "H100-80GB", "tp": 2,
                             "precision": "fp8", "backend": "tensorrt-llm", "input_len": 5000, "output_len": 500,
                             "max_concurrency": 5, "output_throughput": 218.48, "mean_ttft_ms": 546.7,
                             "mean_tpot_ms": 21.83}))
    again = gpuopt.estimate(**kw, concurrency=5, measured=str(j)).numbers
    assert again["tokens_per_second_per_replica"] == pytest.approx(at["tokens_per_second_per_replica"])


@pytest.mark.parametrize("content, match", [
    ("model,gpu\nLlama-2-7B,A100-80GB\n", "input and output tokens are required"),
    ("model,gpu,input_tokens,output_tokens\nLlama-2-7B,A100-80GB,100,100\n", "no measured figure"),
    ("model,gpu,input_tokens,output_tokens,ttft_ms\nLlama-2-7B,A100-80GB,100,-5,10\n", "output_tokens"),
    ("model,gpu,input_tokens,output_tokens,ttft_ms\nNoSuchModel,A100-80GB,100,100,10\n", "row 1: model"),
    ("{not json", "m.csv is not valid JSON: Expecting property name enclosed in double quotes at line 1 column 2"),
])
def test_measured_file_errors_name_the_row_and_column(tmp_path, content, match):
    f = tmp_path / "m.csv"
    f.write_text(content)
    with pytest.raises(InputError, match=match) as exc:
        sv.load_measurements(str(f))
    assert exc.value.field == "measured"


def test_estimate_interface_json_keys():
    r = _cli("estimate", "--task", "serve", "--model", "meta-llama/Llama-3.1-8B-Instruct", "--gpu", "H100",
             "--tensor-parallel", "1", "--precision", "fp8", "--engine", "vllm", "--input-tokens", "2000",
             "--output-tokens", "200", "--scenario", "interactive", "--format", "json")
    assert r.exit_code == 0, r.stderr
    d = json.loads(r.stdout)
    for k in ("tokens_per_second_per_replica", "ttft_ms", "tpot_ms", "concurrency", "gpus_per_replica",
              "memory_gib_per_replica"):
        assert isinstance(d[k], (int, float)) and d[k] > 0
    assert d["ttft_target_ms"] == 450 and d["tpot_target_ms"] == 40 and d["scenario"] == "interactive"
    assert d["tpot_ms"] * sv.P99_OVER_MEAN_TPOT <= 40
    assert d["gpus_per_replica"] == 1 and d["precision"] == "fp8"


def test_engine_and_scenario_errors():
    w = Workload(task="serve", model=load_model("Llama-2-7B"), engine="tgi")
    with pytest.raises(InputError, match="engine") as exc:
        estimate(w, "L4")
    assert "vllm" in exc.value.accepted
    with pytest.raises(InputError, match="scenario"):
        estimate(dataclasses.replace(w, engine="vllm", scenario="batch"), "L4")
    with pytest.raises(InputError, match="max_context"):
        estimate(Workload(task="serve", model=load_model("Llama-2-7B"), input_tokens=4000, output_tokens=200), "L4")


def test_planner_picks_the_layout_with_most_tokens_per_instance():
    # an 8x H100 instance serving an 8B model: eight TP1 replicas give more tokens/s than one TP8 replica
    from optimizer.planning.candidates import unit_shape
    from optimizer.sizing import size_replica as fn

    w = Workload(task="serve", model=load_model("Llama-3.1-8B"), precision_options=("bf16", "fp8"))
    k, r, s = unit_shape(fn, w, load_gpu("H100-80GB"), 8.0, "nvlink")
    assert (k, r, s.tensor_parallel, s.precision) == (1, 8, 1, "fp8")
    one = fn(dataclasses.replace(w, precision="fp8"), load_gpu("H100-80GB"), 8.0)
    assert r * s.tokens_per_second_per_replica > one.tokens_per_second_per_replica
    # on an A100 (no FP8) the same options fall back to bf16
    k, r, s = unit_shape(fn, w, load_gpu("A100-80GB"), 8.0, "nvlink")
    assert s.precision == "bf16"
    # fp8 only: an A100 offer is rejected with its reason
    assert unit_shape(fn, dataclasses.replace(w, precision="fp8", precision_options=()), load_gpu("A100-80GB"),
                       8.0, "nvlink") == (None, None, "precision_unsupported")


def test_recommend_plan_lines_state_precision_batch_and_latency():
    import gpuopt

    res = gpuopt.recommend(model="meta-llama/Llama-3.1-8B-Instruct", tokens_per_second=3000, providers=["aws"],
                           precision="bf16,fp8", scenario="interactive", explain=False)
    assert res.feasible
    d = res.to_dict()
    serve_lines = [ln for ln in d["lines"] if ln["workloads"]]
    assert serve_lines and all(ln["precision"] in ("bf16", "fp8") and ln["batch"] >= 1 for ln in serve_lines)
    # sized at the operating point: the highest rate whose p99 TPOT (the mean x the simulation's tail, at least
    # MLPerf's 1.15) meets 40 ms, to the 0.1 ms the plan rounds TPOT to
    assert all((ln["tpot_ms"] - 0.05) * sv.P99_OVER_MEAN_TPOT <= 40 for ln in serve_lines)
    assert all(0 < s["utilization"] <= 0.95 for s in d["workloads"][0]["sizing"])
    sizing = d["workloads"][0]["sizing"][0]
    assert sizing["tpot_target_ms"] == 40 and sizing["ttft_target_ms"] == 450 and sizing["engine"] == "vllm"


def test_instruct_and_chat_variants_resolve_to_their_base_config():
    assert load_model("meta-llama/Llama-3.1-8B-Instruct").name == "Llama-3.1-8B"
    assert load_model("meta-llama/Llama-2-70b-chat-hf").name == "Llama-2-70B"
    assert load_model("mistralai/Mixtral-8x7B-Instruct-v0.1").name == "Mixtral-8x7B-v0.1"
    assert load_model("google/gemma-2-9b-it").name == "Gemma-2-9B"
    with pytest.raises(InputError):
        load_model("meta-llama/Llama-9-8B-Instruct")


def test_moe_and_mla_models():
    # Qwen3-235B-A22B (config.json via the reference table): 235.1 B total, 22.2 B active, 128 experts top-8 of width
    # 1536; GQA with 4 KV heads of 128: 2 x 94 x 4 x 128 x 2 = 192,512 B per token in 16-bit
    q = load_model("Qwen/Qwen3-235B-A22B")
    assert (q.experts, q.experts_per_token, q.moe_intermediate_size) == (128, 8, 1536)
    assert q.kv_bytes_per_token_fp16 == 192_512
    # routed experts from the exact counts: (total - active) x E / (E - k)
    assert sv._expert_params(q) == pytest.approx((q.params_total - q.params_active) * 128 / 120)
    # DeepSeek-V3 MLA: kv_lora_rank 512 + qk_rope_head_dim 64 per layer, 61 layers: 70,272 B per token (bf16),
    # the same on every TP rank (the latent is not split by head)
    d = load_model("deepseek-ai/DeepSeek-V3")
    assert d.kv_latent_dim == 576 and d.kv_bytes_per_token_fp16 == 70_272
    assert d.kv_bytes_per_token(2, tensor_parallel=8) == 70_272
    assert load_model("deepseek-ai/DeepSeek-R1").kv_bytes_per_token(1) == 61 * 576
    # 671 B in fp8 is 8 H200s' worth: one node serves it, one of H100 (8 x 80 GiB) does not
    w = Workload(task="serve", model=d, precision="fp8")
    assert size_replica(w, load_gpu("H200-141GB"), 8.0).fits
    assert not size_replica(w, load_gpu("H100-80GB"), 8.0).fits
    # few tokens touch few experts: a decode step at batch 1 reads about k/E of the routed weights
    assert sv._touched_expert_fraction(d, 1) == pytest.approx(8 / 256)
    assert sv._touched_expert_fraction(d, 512) > 0.99


def test_unreachable_target_is_named_not_memory():
    # a fresh user saw "cannot hold one replica ... needs 0.4 GiB, 20.1 GiB usable" for a TPOT target no batch meets
    w = Workload(task="serve", model=load_model("meta-llama/Llama-3.1-8B"), tpot_slo_ms=5.0)
    with pytest.raises(InputError) as exc:
        estimate(w, "L4")
    assert exc.value.field == "tpot_ms" and "at no batch" in str(exc.value) and "GiB" not in str(exc.value)
    r = _cli("recommend", "--model", "meta-llama/Llama-3.1-8B", "--tokens-per-second", "5000", "--tpot-ms", "2",
             "--no-explain")
    assert r.exit_code == 1 and "meet p99 TTFT <= 2000 ms, p99 TPOT <= 2 ms at no batch" in r.stderr
    r = _cli("recommend", "--model", "meta-llama/Llama-3.1-8B", "--tokens-per-second", "5000", "--precision", "fp8",
             "--gpu", "A100-80GB", "--no-explain")
    assert r.exit_code == 1 and "no offered GPU runs fp8" in r.stderr and "H100-80GB" in r.stderr


def test_a_given_concurrency_is_checked_against_the_targets():
    # the breaker: --concurrency 300 on a 7B A100 replica ran 111 sequences (the KV cache) and a 24 s TTFT, "(given)"
    w = Workload(task="serve", model=load_model("meta-llama/Llama-2-7b-hf"), concurrency=300)
    s = size_replica(w, load_gpu("A100-80GB"), 1.0)
    assert s.concurrency == s.kv_capacity_sequences < 300
    assert not s.fits and s.meets_targets is False
    assert any(f"(given 300; the KV cache and the engine run {s.concurrency} at once" in a for a in s.assumptions)
    e = estimate(w, "A100-80GB", tensor_parallel=1)  # estimate still shows what the given batch does, flagged
    assert e["meets_targets"] is False and e["ttft_ms"] > 2000
    bigger = estimate(w, "A100-80GB")  # without a layout: the smallest replica that runs 300 within the targets
    assert bigger["meets_targets"] and bigger["gpus_per_replica"] > 1
    assert bigger["concurrency"] == 256  # vLLM runs at most 256 sequences on an A100 (arg_utils defaults)
    ok = size_replica(dataclasses.replace(w, concurrency=8), load_gpu("A100-80GB"), 1.0)
    assert ok.fits and ok.meets_targets and ok.concurrency == 8


def test_tensor_parallel_must_split_the_heads():
    # vLLM: "Total number of attention heads must be divisible by tensor parallel size"
    assert sv.tp_supported(load_model("Llama-3.1-70B"), 8) and not sv.tp_supported(load_model("Llama-3.1-70B"), 3)
    assert not sv.tp_supported(load_model("Qwen2.5-7B"), 8)  # 28 heads
    with pytest.raises(InputError) as exc:
        estimate(Workload(task="serve", model=load_model("Llama-3.1-70B"), precision="fp8"), "H100-80GB",
                 tensor_parallel=3)
    assert exc.value.field == "tensor_parallel" and exc.value.accepted == "1, 2, 4, 8"
    from optimizer.planning.candidates import unit_shape

    w = Workload(task="serve", model=load_model("Qwen2.5-7B"), scenario="interactive")
    k, r, s = unit_shape(size_replica, w, load_gpu("L4"), 8.0, "pcie")
    assert s.tensor_parallel in (1, 2, 4) and sv.tp_supported(w.model, s.tensor_parallel)


def test_measured_files_from_vllm_and_with_a_bom(tmp_path):
    # vLLM benchmark_serving --save-result keys: model_id, completed, total_input_tokens, total_output_tokens,
    # max_concurrency, output_throughput, mean_ttft_ms, mean_tpot_ms; no GPU: taken to be the estimated replica's
    j = tmp_path / "vllm.json"
    j.write_text("\ufeff" + json.dumps({"backend": "vllm", "model_id": "meta-llama/Llama-3.1-8B-Instruct",
                                        "completed": 100, "total_input_tokens": 102400, "total_output_tokens": 12800,
                                        "max_concurrency": 16, "output_throughput": 640.0, "mean_ttft_ms": 80.0,
                                        "mean_tpot_ms": 20.0}), encoding="utf-8")
    meas = sv.load_measurements(str(j))
    (row,) = meas.rows
    assert (row.input_tokens, row.output_tokens, row.concurrency, row.gpu) == (1024, 128, 16, None)
    w = Workload(task="serve", model=load_model("meta-llama/Llama-3.1-8B"), concurrency=16, measured=meas)
    s = size_replica(w, load_gpu("L40S"), 1.0)
    assert s.tokens_per_second_per_replica == pytest.approx(640.0, rel=0.05)
    assert (s.ttft_ms, s.time_per_output_token_ms) == (pytest.approx(80.0, rel=0.05), pytest.approx(20.0, rel=0.05))
    c = tmp_path / "m.csv"
    c.write_text("\ufeffmodel,gpu,input_tokens,output_tokens,ttft_ms\nLlama-2-7B,A100-80GB,100,100,10\n",
                 encoding="utf-8")
    assert sv.load_measurements(str(c)).rows[0].ttft_ms == 10.0
    c.write_text("model,gpu,tensor_parallel,input_tokens,output_tokens,ttft_ms\nLlama-2-7B,A100-80GB,3,100,100,10\n")
    with pytest.raises(InputError, match="TP3 x PP1 is not a layout"):
        sv.load_measurements(str(c))
    c.write_text("model,gpu,precision,input_tokens,output_tokens,ttft_ms\nLlama-2-7B,A100-80GB,fp8,100,100,10\n")
    with pytest.raises(InputError, match="no FP8 tensor cores"):
        sv.load_measurements(str(c))


def test_two_demands_and_serving_options_on_training_are_refused():
    r = _cli("recommend", "--model", "meta-llama/Llama-3.1-8B", "--tokens-per-second", "5000", "--request-rate", "3")
    assert r.exit_code == 1 and "give one demand, not both tokens_per_second and request_rate" in r.stderr
    import gpuopt

    with pytest.raises(InputError) as exc:
        gpuopt.estimate(model="Llama-2-7B", task="train", tokens=1e9, engine="vllm")
    assert exc.value.field == "engine"
    with pytest.raises(InputError) as exc:
        gpuopt.estimate(model="Llama-2-7B", engine=5)
    assert exc.value.field == "engine"


def test_quantized_checkpoint_names_set_the_precision():
    from gpuopt.api import precision_from_name

    assert precision_from_name("hugging-quants/Meta-Llama-3.1-70B-Instruct-AWQ-INT4") == "int4"
    assert precision_from_name("nvidia/Llama-3.3-70B-Instruct-FP8") == "fp8"
    assert precision_from_name("nvidia/Llama-3.1-405B-Instruct-FP4") == "fp4"
    assert precision_from_name("meta-llama/Llama-3.1-8B-Instruct") is None
    import gpuopt

    e = gpuopt.estimate(model="hugging-quants/Meta-Llama-3.1-70B-Instruct-AWQ-INT4", gpu="H100-80GB")
    assert e.numbers["precision"] == "int4" and e.numbers["gpus_per_replica"] == 1
    assert any("from the checkpoint's name" in a for a in e.assumptions)
    bf = gpuopt.estimate(model="hugging-quants/Meta-Llama-3.1-70B-Instruct-AWQ-INT4", gpu="H100-80GB",
                         precision="bf16")
    assert bf.numbers["precision"] == "bf16" and bf.numbers["gpus_per_replica"] == 2


def test_markdown_report_lines_state_precision_batch_and_latency():
    from gpuopt.report import _layout

    ln = {"tensor_parallel": 2, "pipeline_parallel": 1, "precision": "fp8", "batch": 48, "ttft_ms": 210.4,
          "tpot_ms": 38.25}
    assert _layout(ln) == "TP2 PP1 fp8, batch 48, TTFT 210 ms, TPOT 38.2 ms"
    assert _layout({"tensor_parallel": 1, "pipeline_parallel": 1, "precision": ""}) == "TP1 PP1"


def test_recheck_name_bits_api_backends_and_rows_that_cannot_apply(tmp_path):
    from gpuopt.api import precision_from_name

    assert precision_from_name("Qwen/Qwen2.5-7B-Instruct-GPTQ-Int8") == "int8"  # the bit width named wins
    assert precision_from_name("TheBloke/Llama-2-70B-Chat-GPTQ") == "int4"
    # vLLM benchmark_serving --backend openai-chat names the client API: taken to be the engine estimated
    j = tmp_path / "chat.json"
    j.write_text(json.dumps({"backend": "openai-chat", "model_id": "meta-llama/Llama-3.1-8B-Instruct",
                             "completed": 10, "total_input_tokens": 10240, "total_output_tokens": 1280,
                             "max_concurrency": 8, "mean_tpot_ms": 30.0}))
    meas = sv.load_measurements(str(j))
    assert meas.rows[0].engine is None
    w = Workload(task="serve", model=load_model("meta-llama/Llama-3.1-8B"), concurrency=8, engine="sglang",
                 measured=meas)
    s = size_replica(w, load_gpu("L40S"), 1.0)
    assert s.time_per_output_token_ms == pytest.approx(30.0, rel=0.05) and s.estimate_source.startswith("measured")
    # a row measured in fp8 without a GPU cannot be the A100's: the model alone, and the output says why
    c = tmp_path / "fp8.csv"
    c.write_text("model,precision,input_tokens,output_tokens,tpot_ms\nLlama-3.1-8B,fp8,1024,128,20\n")
    w = Workload(task="serve", model=load_model("Llama-3.1-8B"), measured=sv.load_measurements(str(c)))
    s = size_replica(w, load_gpu("A100-80GB"), 1.0)
    assert s.estimate_source.startswith("model") and "row 1 does not apply on A100-80GB" in s.estimate_source
    assert any("does not apply on A100-80GB" in a for a in s.assumptions)


def test_the_default_serving_target_is_a_chat_target():
    # issue 26: the default was MLPerf's server limit (p99 TPOT 200 ms, ~6 tokens/s per user at 170-175 ms); the
    # chat default is p99 TPOT 50 ms = 20 tokens/s, the low end of the 20-50 tokens/s MLCommons gives for MLPerf's
    # Llama-2-70B interactive limit, and MLPerf's 2 s server TTFT
    from optimizer.sizing import latency_targets

    w = Workload(task="serve", model=load_model("Llama-2-7B"))
    assert w.scenario == sv.DEFAULT_SCENARIO == "chat"
    assert latency_targets(w) == (2000.0, 50.0)
    assert latency_targets(Workload(task="serve", model=load_model("Llama-2-7B"), scenario="server")) == (2000.0, 200.0)
    e = estimate(w, "H100-80GB")
    assert e["tpot_ms"] * sv.P99_OVER_MEAN_TPOT <= 50.0 + 1e-6
    # on an L4 one bf16 7B replica cannot stream 20 tokens/s at p99: the weights alone take 45 ms a token
    # (13.5 GB / 300 GB/s, L4 datasheet), so the estimate uses two GPUs
    assert estimate(w, "L4")["gpus_per_replica"] >= 2


def test_weight_only_int4_decode_against_tensorrt_model_optimizer():
    """Weight-only INT4 (AWQ) against BF16 per GPU, TensorRT-Model-Optimizer benchmark.md (H200, TensorRT-LLM 0.15,
    2,048 in / 128 out): Llama-3.1-8B 1.33x at batch 1; Llama-3.1-70B (BF16 on 2 GPUs, INT4 on 1) 1.93x at batch 1.
    The joint fit of benchmarks/weight_only_fit.py (the kernels reach 0.65 of the bandwidth on the weights) puts
    both within +-30 %; batch-1 INT4 decode is faster than BF16 (it reads a quarter of the weight bytes), and the
    gain shrinks with the batch."""
    from optimizer.sizing.specs import load_gpu, load_model

    h200, eng = load_gpu("H200-141GB"), sv.load_engine("tensorrt-llm")

    def ratio(model, b, nb):
        m = load_model(model)
        i4 = sv.point(m, h200, sv.Layout(1, 1), "int4", eng, b, 2048, 128, static=True).tokens_per_second
        bf = sv.point(m, h200, sv.Layout(nb, 1), "bf16", eng, b, 2048, 128, static=True).tokens_per_second / nb
        return i4 / bf

    assert ratio("Llama-3.1-8B", 1, 1) == pytest.approx(1.33, rel=0.30)
    assert ratio("Llama-3.1-70B", 1, 2) == pytest.approx(1.93, rel=0.30)
    assert 1.0 < ratio("Llama-3.1-8B", 1, 1) and ratio("Llama-3.1-8B", 64, 1) < ratio("Llama-3.1-8B", 1, 1)
    assert sv.FIT.weight_only_bw_efficiency["int4"] == 0.65
