"""Issue 33, point 3: a ``--measured`` row is checked against what its GPUs can do (the datasheet's roofline,
optimizer/sizing/physical.py) and against its own TPOT and concurrency; the error names the file, the row and its
line, the column, the value, the bound and how it was derived."""

import csv

import pytest
from typer.testing import CliRunner

import gpuopt
from benchmarks import serving_fit as sf
from gpuopt.cli import app
from gpuopt.kernel.errors import InputError
from optimizer.sizing import physical
from optimizer.sizing import serving as sv
from optimizer.sizing.serving import load_measurements
from optimizer.sizing.specs import load_gpu, load_model

HEAD = ("model,gpu,tensor_parallel,precision,engine,input_tokens,output_tokens,concurrency,"
        "output_tokens_per_second,ttft_ms,tpot_ms\n")
L8B = "meta-llama/Llama-3.1-8B-Instruct"
# A real row: data/perf/serving.csv row 693, NVIDIA NIM 1.8.0 (TensorRT-LLM), Llama-3.3-70B-Instruct on 2x H100
# TP2 fp8, 5000 in / 500 out, concurrency 25: 623.4 output tokens/s, mean TTFT 688.69 ms, mean ITL 38.75 ms
# (docs.nvidia.com/nim/benchmarking/llm/1.0.0/performance).
NIM_693 = "meta-llama/Llama-3.3-70B-Instruct,H100-80GB,2,fp8,tensorrt-llm,5000,500,25,623.4,688.69,38.75\n"
runner = CliRunner()


def _file(tmp_path, text: str, name: str = "bench.csv") -> str:
    f = tmp_path / name
    f.write_text(text)
    return str(f)


def _refused(tmp_path, text: str, name: str = "bench.csv") -> str:
    f = _file(tmp_path, text, name)
    with pytest.raises(InputError) as exc:
        load_measurements(f)
    assert exc.value.field == "measured"
    assert "\n" not in str(exc.value)
    return exc.value.message


def test_the_issue_case_1e15_tokens_per_second_on_one_l4_refused_naming_file_row_and_bound(tmp_path):
    msg = _refused(tmp_path, HEAD + NIM_693 + f"{L8B},L4,1,bf16,vllm,1024,256,32,1e15,210,26\n")
    # the L4's dense BF16 peak 121 TFLOP/s (gpu_specs.csv) / (2 x 8,030,261,248 FLOP a token) = 7,534 tokens/s
    assert msg == (f"{tmp_path / 'bench.csv'} row 2 (line 3): output_tokens_per_second 1e+15 is above the L4's compute "
                   "roofline of 7,534 tokens/s for Llama-3.1-8B at bf16 (121 TFLOPS / (2 x 8.03e9 FLOP per token); "
                   "optimizer/data/gpu_specs.csv, FORMULAS.md section 7)")


def test_below_the_compute_roofline_but_above_the_bandwidth_ceiling_at_its_concurrency(tmp_path):
    # one sequence on an L4 (300 GB/s) reads 15.0 GB of Llama-3.1-8B's bf16 weights a token (16.06 GB less the
    # input embedding's 1.05 GB): at most 17 x 300e9 / 15.0e9 = 340 tokens/s even with 16 draft tokens accepted
    # every step
    msg = _refused(tmp_path, HEAD + f"{L8B},L4,1,bf16,vllm,1024,256,1,7000,30,0.15\n")
    assert "row 1 (line 2): output_tokens_per_second 7000 is above the L4's memory-bandwidth ceiling of 340 " \
           "tokens/s for Llama-3.1-8B at bf16 (17 tokens per step (16 draft + 1) x concurrency 1 x 300 GB/s / " \
           "15 GB of weights read per step" in msg


def test_a_tpot_below_the_memory_bound_floor_refused(tmp_path):
    # 15.0 GB / 300 GB/s / 17 = 2.94 ms: no token of one sequence comes faster on one L4
    msg = _refused(tmp_path, HEAD + f"{L8B},L4,1,bf16,vllm,1024,256,,,,0.5\n")
    assert "row 1 (line 2): tpot_ms 0.5 is below the L4's memory-bound floor of 2.94 ms for Llama-3.1-8B at bf16" \
        in msg


def test_1e_minus_9_contradicting_its_own_tpot_and_concurrency_refused(tmp_path):
    msg = _refused(tmp_path, HEAD + f"{L8B},L4,1,bf16,vllm,1024,256,32,1e-9,210,26\n")
    # 32 users x 256 tokens / (0.210 s + 255 x 0.026 s) = 1,198 tokens/s (Little's law)
    assert "row 1 (line 2): output_tokens_per_second 1e-09 is more than 10x below what the row's own TPOT and " \
           "concurrency give (concurrency 32 x 256 output tokens / (TTFT 210 ms + 255 x TPOT 26 ms) = 1,198 " \
           "tokens/s, Little's law)" in msg
    # and far above: 32 users at 26 ms a token read at most 32 x 256 / (255 x 0.026 s) = 1,236 tokens/s (no TTFT
    # given: only the upper side); 20,000 on an H100 is within its rooflines (61,615 compute)
    msg = _refused(tmp_path, HEAD + f"{L8B},H100-80GB,1,bf16,vllm,1024,256,32,20000,,26\n")
    assert "output_tokens_per_second 20000 is more than 10x above what the row's own TPOT and concurrency give " \
           "(concurrency 32 x 256 output tokens / (255 x TPOT 26 ms) = 1,236 tokens/s" in msg


def test_an_open_loop_cannot_emit_more_than_its_request_rate_allows(tmp_path):
    head = "model,input_len,output_len,request_rate,output_throughput\n"
    msg = _refused(tmp_path, head + f"{L8B},1024,128,0.5,2000\n")
    assert "row 1 (line 2): output_tokens_per_second 2000 is more than 10x the request_rate 0.5/s x 128 output " \
           "tokens (64 tokens/s)" in msg
    # vLLM writes request_rate "inf" for a burst: no bound from it
    f = _file(tmp_path, head + f"{L8B},1024,128,inf,2000\n", "inf.csv")
    assert load_measurements(f).rows[0].tokens_per_second == 2000.0


def test_a_json_row_is_named_by_its_index(tmp_path):
    f = _file(tmp_path, '[{"model": "%s", "gpu": "L4", "tp": 1, "precision": "bf16", "input_len": 1024, '
                        '"output_len": 256, "output_throughput": 1e15}]' % L8B, "bench.json")
    with pytest.raises(InputError) as exc:
        load_measurements(f)
    assert exc.value.message.startswith(f"{f} row 1: output_tokens_per_second 1e+15 is above the L4's compute")


def test_a_real_plausible_row_accepted(tmp_path):
    m = load_measurements(_file(tmp_path, HEAD + NIM_693))
    r = m.rows[0]
    assert (r.tokens_per_second, r.ttft_ms, r.tpot_ms, r.concurrency) == (623.4, 688.69, 38.75, 25)
    # and the reproduced figure: the estimate at that point is the measurement
    at = gpuopt.estimate(model="meta-llama/Llama-3.3-70B-Instruct", task="serve", gpu="H100-80GB", tensor_parallel=2,
                         precision="fp8", engine="tensorrt-llm", input_tokens=5000, output_tokens=500, concurrency=25,
                         measured=m.path).numbers
    assert at["tokens_per_second_per_replica"] == pytest.approx(623.4, rel=1e-6)


def test_a_row_naming_no_gpu_is_not_applied_where_the_replicas_gpu_cannot_reach_it(tmp_path):
    # the issue's plan: a row without a GPU is taken to be the replica's; 400,000 tokens/s is within 8 of the
    # fastest GPUs' roofline (read time) but 13x above 4 L4s' (30,136): on L4 the model alone, said
    f = _file(tmp_path, f"model,input_tokens,output_tokens,output_tokens_per_second\n{L8B},1024,128,400000\n")
    kw = dict(model=L8B, task="serve", gpu="L4", tensor_parallel=4, tokens_per_second=1e6)
    alone = gpuopt.estimate(**kw).numbers
    got = gpuopt.estimate(**kw, measured=f).numbers
    assert got["tokens_per_second_per_replica"] == pytest.approx(alone["tokens_per_second_per_replica"], rel=1e-9)
    assert f"{f} row 1 does not apply on L4: row 1: output_tokens_per_second 400000 is above 4 x L4's compute " \
           "roofline of 30,136 tokens/s" in got["estimate_source"]


def test_the_error_through_the_cli_is_one_line_exit_1(tmp_path):
    f = _file(tmp_path, HEAD + f"{L8B},L4,1,bf16,vllm,1024,256,32,1e15,210,26\n")
    r = runner.invoke(app, ["estimate", "--model", L8B, "--task", "serve", "--gpu", "L4", "--measured", f])
    assert r.exit_code == 1
    lines = r.output.strip().splitlines()
    assert len(lines) == 1, r.output
    assert lines[0].startswith(f"gpuopt: error: measured: {f} row 1 (line 2): output_tokens_per_second 1e+15 is "
                               "above the L4's compute roofline of 7,534 tokens/s")
    assert "Traceback" not in r.output


# --------------------------------------------------------------------------- the calibration set passes the bounds
def _calibration_rows():
    """Every row of the calibration set (/work/shared/data/perf/serving.csv, else tests/fixtures/perf/serving.csv)
    with its model, GPU, precision, layout and figures read as benchmarks/serving_fit.py reads them."""
    out = []
    with open(sf.perf_csv("serving.csv"), newline="", encoding="utf-8") as fh:
        for row in csv.DictReader(fh):
            m, g = sf._model(row), sf._gpu(row)
            if m is None or g is None:
                continue
            gpus = sf._int_cell(row.get("gpu_count")) or 1
            tp = sf._int_cell(row.get("tensor_parallel")) or gpus
            lt, load = (row.get("load_type") or "").lower(), sf._num(row.get("load_value"))
            conc = load if load and ("batch" in lt or "concurrency" in lt) else None
            total = sf._num(row.get("output_tok_s_total"))
            per = sf._num(row.get("output_tok_s_per_gpu"))
            out.append(dict(row=row["row_id"], model=m, gpu=g, gpus=gpus, tp=tp,
                            precision=sf._precision(row.get("precision")),
                            tps=total if total else (per * gpus if per else None),
                            ttft=sf._num(row.get("ttft_ms")), tpot=sf._num(row.get("tpot_ms")), conc=conc,
                            out=sf._int_cell(row.get("output_tokens"))))
    return out


def test_every_published_serving_row_passes_the_bounds():
    rows = _calibration_rows()
    assert len(rows) >= 400  # 442 on the shared set: every row's model and GPU are in gpuopt's tables
    worst = {"compute": 0.0, "memory": 0.0, "tpot": 0.0}
    checked = 0
    for c in rows:
        r = physical.roofline(c["model"], [c["gpu"]], c["gpus"], c["tp"], [c["precision"]],
                              peak_of=sv.matmul_peak_flops, bytes_of=sv.weight_bytes)
        assert r is not None, c["row"]
        physical.check_figures(f"serving.csv row {c['row']}", r, tokens_per_second=c["tps"], tpot_ms=c["tpot"],
                               ttft_ms=c["ttft"], concurrency=c["conc"], output_tokens=c["out"] or 1)
        checked += 1
        if c["tps"]:
            worst["compute"] = max(worst["compute"], c["tps"] / r.compute_ceiling())
            if c["conc"]:
                worst["memory"] = max(worst["memory"], c["tps"] / r.memory_ceiling(c["conc"]))
        if c["tpot"]:
            worst["tpot"] = max(worst["tpot"], r.tpot_floor_ms() / c["tpot"])
    assert checked == len(rows)
    # the margins: the published rows reach at most a third of the compute roofline (row 55, 8B on A100 fp16), and
    # without the speculative factor 17, 0.57 of the bandwidth ceiling and of the TPOT floor (row 699, 70B on 2x
    # H100 fp8 at concurrency 1)
    assert 0.30 < worst["compute"] < 0.40
    assert 0.50 < worst["memory"] * physical.MEMORY_FACTOR < 0.65
    assert 0.50 < worst["tpot"] * physical.MEMORY_FACTOR < 0.65


def test_the_published_nim_sweep_agrees_with_littles_law():
    # rows 692-699 give concurrency, TTFT and TPOT: C x O / (TTFT + (O - 1) x TPOT) within 1 % of the stated tokens/s
    sweep = [c for c in _calibration_rows() if c["conc"] and c["ttft"] and c["tpot"] and c["tps"] and c["out"]]
    assert len(sweep) >= 6
    for c in sweep:
        exp = physical.expected_tokens_per_second(c["conc"], c["out"], c["tpot"], c["ttft"])
        assert c["tps"] / exp == pytest.approx(1.0, abs=0.01), c["row"]


def test_roofline_figures_from_the_datasheet():
    m, l4 = load_model(L8B), load_gpu("L4")
    r = physical.roofline(m, [l4], 1, 1, ["bf16"], peak_of=sv.matmul_peak_flops, bytes_of=sv.weight_bytes)
    assert r.peak_flops == 121e12 and r.bandwidth == 300e9
    assert r.compute_ceiling() == pytest.approx(121e12 / (2 * 8_030_261_248))
    # bf16 weights 16,060,522,496 B less the input embedding 128,256 x 4,096 x 2 B
    assert r.bytes_per_step == pytest.approx(2 * 8_030_261_248 - 128_256 * 4_096 * 2)
    # fp8 on an Ampere GPU has no peak: no roofline from it
    assert physical.roofline(m, [load_gpu("A100-80GB")], 1, 1, ["fp8"], peak_of=sv.matmul_peak_flops,
                             bytes_of=sv.weight_bytes) is None
