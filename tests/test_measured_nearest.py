"""Issue 31, point 6: ``--measured`` uses the row nearest the operating point (model, GPU, TP, precision, engine,
lengths, concurrency), or interpolates between the two around it, and names the row(s) it used."""

import pytest

import gpuopt
from optimizer.sizing import serving as sv
from optimizer.sizing.specs import load_gpu, load_model

HEAD = ("model,gpu,tensor_parallel,precision,engine,input_tokens,output_tokens,concurrency,"
        "output_tokens_per_second,ttft_ms,tpot_ms\n")

# The issue's recorded case (the reviewer's file): a concurrency-32 row first, then the row measured at exactly the
# operating point, concurrency 64: 1,900 output tokens/s, TPOT 30 ms -- ignored for the first row before the fix.
# The issue gives only the concurrency-64 row's figures; the concurrency-32 row's (1,150 tokens/s, TTFT 210 ms, TPOT
# 26 ms) are this fixture's, and the 64 row's TTFT (320 ms) too.
ISSUE_CASE = HEAD + ("meta-llama/Llama-3.1-8B-Instruct,H100-80GB,1,fp16,vllm,1024,256,32,1150,210,26\n"
                     "meta-llama/Llama-3.1-8B-Instruct,H100-80GB,1,fp16,vllm,1024,256,64,1900,320,30\n")
ISSUE_KW = dict(model="meta-llama/Llama-3.1-8B-Instruct", task="serve", gpu="H100-80GB", tensor_parallel=1,
                precision="fp16", engine="vllm", input_tokens=1024, output_tokens=256)

# Real rows of data/perf/serving.csv: NVIDIA NIM 1.8.0 (TensorRT-LLM), Llama-3.3-70B-Instruct on 2x H100 TP2 fp8,
# 5000 in / 500 out, AIPerf at concurrency 5 (row 692), 25 (693), 100 (695), 150 (696); output tokens/s of the
# replica, mean TTFT and mean ITL (docs.nvidia.com/nim/benchmarking/llm/1.0.0/performance).
NIM = {5: (218.48, 546.7, 21.83), 25: (623.4, 688.69, 38.75), 100: (917.26, 7996.25, 92.91),
       150: (920.9, 34794.22, 92.86)}
NIM_KW = dict(model="meta-llama/Llama-3.3-70B-Instruct", task="serve", gpu="H100-80GB", tensor_parallel=2,
              precision="fp8", engine="tensorrt-llm", input_tokens=5000, output_tokens=500)


def _nim(*concurrencies: int) -> str:
    return HEAD + "".join(f"meta-llama/Llama-3.3-70B-Instruct,H100-80GB,2,fp8,tensorrt-llm,5000,500,{c},"
                          f"{NIM[c][0]},{NIM[c][1]},{NIM[c][2]}\n" for c in concurrencies)


def _file(tmp_path, text: str, name: str = "bench.csv") -> str:
    f = tmp_path / name
    f.write_text(text)
    return str(f)


def test_the_issue_case_uses_the_row_measured_at_the_operating_point(tmp_path):
    f = _file(tmp_path, ISSUE_CASE)
    at = gpuopt.estimate(**ISSUE_KW, concurrency=64, measured=f).numbers
    assert at["concurrency"] == 64
    assert at["tokens_per_second_per_replica"] == pytest.approx(1900.0, rel=1e-6)
    assert at["tpot_ms"] == pytest.approx(30.0, rel=1e-6) and at["ttft_ms"] == pytest.approx(320.0, rel=1e-6)
    src = at["estimate_source"]
    assert src.startswith(f"measured: {f} row 2 (vllm H100-80GB TP1 fp16, 1024 in / 256 out, concurrency 64)")
    assert "at the operating concurrency 64" in src and "row 1" not in src
    # and the concurrency-32 row where the replica runs 32
    at32 = gpuopt.estimate(**ISSUE_KW, concurrency=32, measured=f).numbers
    assert at32["tokens_per_second_per_replica"] == pytest.approx(1150.0, rel=1e-6)
    assert at32["estimate_source"].startswith(f"measured: {f} row 1 (")


def test_between_two_rows_interpolated_and_both_named(tmp_path):
    f = _file(tmp_path, ISSUE_CASE)
    mid = gpuopt.estimate(**ISSUE_KW, concurrency=48, measured=f).numbers
    src = mid["estimate_source"]
    assert src.startswith(f"measured: {f} rows 1 and 2 (vllm H100-80GB TP1 fp16, 1024 in / 256 out, concurrency 32 "
                          "and 64), interpolated at the operating concurrency 48")
    assert 1150.0 < mid["tokens_per_second_per_replica"] < 1900.0 and 26.0 < mid["tpot_ms"] < 30.0
    # the factors measured / model, linear in ln(concurrency): half-way in ln between 32 and 64 is 45.25, so at 48
    # the weight of the 64 row is ln(48/32) / ln(2) = 0.585
    m, g, eng = load_model(ISSUE_KW["model"]), load_gpu("H100-80GB"), sv.load_engine("vllm")
    meas = sv.load_measurements(f)
    corr = meas.correction(m, g, sv.Layout(1, 1), "fp16", eng, input_tokens=1024, output_tokens=256, concurrency=48)
    f32 = meas.correction(m, g, sv.Layout(1, 1), "fp16", eng, input_tokens=1024, output_tokens=256, concurrency=32)
    f64 = meas.correction(m, g, sv.Layout(1, 1), "fp16", eng, input_tokens=1024, output_tokens=256, concurrency=64)
    t = 0.5849625007211562
    assert corr.rows == (1, 2) and corr.tokens_per_second == pytest.approx(
        f32.tokens_per_second + t * (f64.tokens_per_second - f32.tokens_per_second))
    assert corr.tpot == pytest.approx(f32.tpot + t * (f64.tpot - f32.tpot))


def test_interpolation_on_real_rows_reproduces_the_row_between(tmp_path):
    # NIM rows at concurrency 5 and 100 given; the operating point 25, where NIM also measured (row 693, kept out
    # of the file): the interpolated factors give 623.4 tokens/s and 38.75 ms ITL within 3 % (TTFT, queueing-bound,
    # within 30 %)
    f = _file(tmp_path, _nim(5, 100))
    at = gpuopt.estimate(**NIM_KW, concurrency=25, measured=f).numbers
    assert at["estimate_source"].startswith(f"measured: {f} rows 1 and 2 (tensorrt-llm H100-80GB TP2 fp8, 5000 in / "
                                            "500 out, concurrency 5 and 100), interpolated at the operating "
                                            "concurrency 25")
    assert at["tokens_per_second_per_replica"] == pytest.approx(NIM[25][0], rel=0.03)
    assert at["tpot_ms"] == pytest.approx(NIM[25][2], rel=0.03)
    assert at["ttft_ms"] == pytest.approx(NIM[25][1], rel=0.30)


def test_outside_the_measured_range_the_nearest_row_said(tmp_path):
    f = _file(tmp_path, _nim(5, 25, 100))
    at = gpuopt.estimate(**NIM_KW, concurrency=150, measured=f).numbers
    src = at["estimate_source"]
    assert src.startswith(f"measured: {f} row 3 (tensorrt-llm H100-80GB TP2 fp8, 5000 in / 500 out, concurrency "
                          "100), the nearest: the operating concurrency 150 is outside the measured 5-100")
    assert "not extrapolated" in src
    # NIM at 150 (row 696): 920.9 tokens/s, 92.86 ms ITL -- the engine's batch is full at 100 already
    assert at["tokens_per_second_per_replica"] == pytest.approx(NIM[150][0], rel=0.03)
    assert at["tpot_ms"] == pytest.approx(NIM[150][2], rel=0.03)
    below = gpuopt.estimate(**NIM_KW, concurrency=2, measured=f).numbers
    assert below["estimate_source"].startswith(f"measured: {f} row 1 (") and "outside the measured 5-100" in \
        below["estimate_source"]


def test_the_setup_ranks_before_the_concurrency(tmp_path):
    # GPU, then TP, then precision, then lengths: each outranks the concurrency. A row at exactly the operating
    # concurrency 64 on another GPU, TP, precision or lengths loses to the replica's own setup measured at 32.
    own = "meta-llama/Llama-3.1-8B-Instruct,H100-80GB,1,fp16,vllm,1024,256,32,1150,210,26\n"
    for other in ("meta-llama/Llama-3.1-8B-Instruct,A100-80GB,1,fp16,vllm,1024,256,64,1500,400,40\n",
                  "meta-llama/Llama-3.1-8B-Instruct,H100-80GB,2,fp16,vllm,1024,256,64,2600,250,22\n",
                  "meta-llama/Llama-3.1-8B-Instruct,H100-80GB,1,fp8,vllm,1024,256,64,2400,280,25\n",
                  "meta-llama/Llama-3.1-8B-Instruct,H100-80GB,1,fp16,vllm,2048,256,64,1700,600,33\n"):
        f = _file(tmp_path, HEAD + other + own)
        at = gpuopt.estimate(**ISSUE_KW, concurrency=64, measured=f).numbers
        assert at["estimate_source"].startswith(f"measured: {f} row 2 (vllm H100-80GB TP1 fp16, 1024 in / 256 out, "
                                                "concurrency 32), the nearest"), other
    # of two other lengths the nearer (in log ratio) is used, and the output says the model scaled it
    f = _file(tmp_path, HEAD + "meta-llama/Llama-3.1-8B-Instruct,H100-80GB,1,fp16,vllm,4096,256,64,1500,900,35\n"
                             "meta-llama/Llama-3.1-8B-Instruct,H100-80GB,1,fp16,vllm,1500,256,64,1800,400,31\n")
    at = gpuopt.estimate(**ISSUE_KW, concurrency=64, measured=f).numbers
    assert at["estimate_source"].startswith(f"measured: {f} row 2 (vllm H100-80GB TP1 fp16, 1500 in / 256 out")
    assert at["estimate_source"].endswith("; measured with a different request lengths than this replica's "
                                          "(H100-80GB TP1 fp16): its measured/model ratios scale the model's "
                                          "estimate here")
    # a row of another GPU only: the output names the difference and this replica's setup (a fresh user's H100 row
    # silently corrected a B200 replica)
    f = _file(tmp_path, HEAD + "meta-llama/Llama-3.1-8B-Instruct,A100-80GB,1,fp16,vllm,1024,256,64,1500,400,40\n")
    at = gpuopt.estimate(**ISSUE_KW, concurrency=64, measured=f).numbers
    assert "measured with a different GPU than this replica's (H100-80GB TP1 fp16)" in at["estimate_source"]


def test_without_a_given_concurrency_the_rows_are_chosen_at_the_batch_the_replica_runs(tmp_path):
    f = _file(tmp_path, ISSUE_CASE)
    at = gpuopt.estimate(**ISSUE_KW, measured=f).numbers
    # the source names the operating concurrency it chose at: the batch the replica is sized to run at
    assert f"the operating concurrency {at['concurrency']:g}" in at["estimate_source"]


def test_correction_at_follows_the_batch(tmp_path):
    f = _file(tmp_path, ISSUE_CASE)
    meas = sv.load_measurements(f)
    m, g, eng = load_model(ISSUE_KW["model"]), load_gpu("H100-80GB"), sv.load_engine("vllm")
    seen = []

    def batch_of(corr):  # a replica that runs 64 under any correction
        seen.append(corr)
        return 64.0

    corr = meas.correction_at(m, g, sv.Layout(1, 1), "fp16", eng, 1024, 256, batch_of)
    assert corr.rows == (2,) and corr.concurrency == 64 and seen[0] is None  # first with the model alone
    # a given concurrency is the operating point: no search
    corr = meas.correction_at(m, g, sv.Layout(1, 1), "fp16", eng, 1024, 256, None, concurrency=32)
    assert corr.rows == (1,)

    flips = iter([32.0, 64.0, 32.0, 64.0, 32.0, 64.0])  # a batch that never settles: stopped where it repeats
    corr = meas.correction_at(m, g, sv.Layout(1, 1), "fp16", eng, 1024, 256, lambda c: next(flips))
    assert corr.rows in ((1,), (2,)) and corr.concurrency in (32, 64)


def test_the_plan_names_the_rows(tmp_path):
    from gpuopt.templating import serving_split_text

    f = _file(tmp_path, ISSUE_CASE)
    res = gpuopt.recommend(model=ISSUE_KW["model"], task="serve", tokens_per_second=4000, input_tokens=1024,
                           output_tokens=256, precision="fp16", engine="vllm", gpus=["H100"], concurrency=64,
                           measured=f)
    (s,) = [s for w in res.to_dict()["workloads"] for s in w["sizing"]][:1]
    assert s["estimate_source"].startswith(f"measured: {f} row 2 (") and "concurrency 64" in s["estimate_source"]
    assert serving_split_text(s).endswith(s["estimate_source"])  # the plan's workload table carries it
    assert serving_split_text({"utilization": 0.5, "estimate_source": "model (fit)"}) == "; sized at 50 % of saturation"
