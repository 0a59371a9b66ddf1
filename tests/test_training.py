"""Issue 11: the training performance model (optimizer/sizing/training.py), its interface and its fit.

Published points come from the calibration set (tests/fixtures/perf/training.csv, a copy of
shared/data/perf/training.csv: the row ids are cited); estimator outputs from DeepSpeed's docs
(docs/code-docs/source/memory.rst, t5-3b) and accelerate's (memory.csv rows 29-31).
"""

from __future__ import annotations

import dataclasses
import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from gpuopt import api
from gpuopt.kernel.errors import InputError
from optimizer.sizing import training as tr
from optimizer.sizing import DEFAULT_NODE_NETWORK, Workload, size_training
from optimizer.sizing.specs import load_gpu, load_model

ROOT = Path(__file__).resolve().parents[1]
G = 2**30


# ----------------------------------------------------------------------------------------------- memory estimators


def test_deepspeed_zero2_estimator_matches_docs_t5_3b():
    # DeepSpeed memory.rst: t5-3b, 2851M params, 1 node x 8 GPUs: per CPU 127.45 GB, per GPU 5.31 GB
    # (offload_optimizer=cpu) and 15.93 GB (none) -- GiB printed as "GB".
    cpu, gpu = tr.deepspeed_zero2_estimate(2851e6, 8, 1)
    assert gpu / G == pytest.approx(15.93, abs=0.01)
    assert cpu / G == pytest.approx(127.45, abs=0.01)
    cpu, gpu = tr.deepspeed_zero2_estimate(2851e6, 8, 1, offload_optimizer=True)
    assert gpu / G == pytest.approx(5.31, abs=0.01)
    assert cpu / G == pytest.approx(127.45, abs=0.01)


@pytest.mark.parametrize("kw, gpu_gb, cpu_gb", [
    ({}, 6.10, 1.47),
    ({"offload_optimizer": True}, 0.79, 63.74),
    ({"offload_optimizer": True, "offload_params": True}, 0.12, 71.71),
])
def test_deepspeed_zero3_estimator_matches_docs_t5_3b(kw, gpu_gb, cpu_gb):
    # DeepSpeed memory.rst: t5-3b, 2851M total params, 32M largest layer, 1 node x 8 GPUs, zero_init=1.
    # The docs' live model has a few more params than the rounded 2851M/32M: within 5 % (issue 11's bound).
    cpu, gpu = tr.deepspeed_zero3_estimate(2851e6, 32e6, 8, 1, **kw)
    assert gpu / G == pytest.approx(gpu_gb, rel=0.05)
    assert cpu / G == pytest.approx(cpu_gb, rel=0.05)


@pytest.mark.parametrize("dtype, load_gib, adam_gib", [
    ("float32", 297.12, 1.16 * 1024), ("float16", 148.56, 594.24), ("int8", 74.28, 297.12)])
def test_accelerate_estimator_idefics_80b(dtype, load_gib, adam_gib):
    # memory.csv rows 29-31 (HF accelerate estimate-memory, idefics-80b, params nominal 80B): within 5 %
    e = tr.accelerate_estimate(80e9, dtype)
    assert e["load_bytes"] / G == pytest.approx(load_gib, rel=0.05)
    assert e["training_adam_bytes"] / G == pytest.approx(adam_gib, rel=0.05)


def test_model_states_as_the_frameworks_count_them():
    p = 1e9
    # Megatron-LM docs, distributed optimizer: bf16 params + fp32 grads = 6 + 12/d bytes/param; 18 without
    ms = tr.model_state_bytes(p, 1, 8, framework="megatron")
    assert sum(ms.values()) / p == pytest.approx(6 + 12 / 8)
    assert sum(tr.model_state_bytes(p, 0, 8, framework="megatron").values()) / p == pytest.approx(18)
    # DeepSpeed ZeRO-2: 4P + 16P/N (the issue: the ZeRO-paper sizing under-sized the t5-3b example by 37 %)
    ds2 = sum(tr.model_state_bytes(2851e6, 2, 8, framework="deepspeed").values())
    assert ds2 == pytest.approx(tr.deepspeed_zero2_estimate(2851e6, 8, 1)[1])
    # DeepSpeed ZeRO-3: 18P/N + 4 x largest layer
    ds3 = sum(tr.model_state_bytes(2851e6, 3, 8, framework="deepspeed", largest_layer=32e6).values())
    assert ds3 == pytest.approx(tr.deepspeed_zero3_estimate(2851e6, 32e6, 8, 1)[1])
    # optimizers: 8-bit Adam 6 B of states, SGD 8, Adafactor 4 (master only) vs Adam 12 (F§4)
    states = {o: tr.model_state_bytes(p, 0, 1, framework="deepspeed", optimizer=o)["optimizer_states"] / p
              for o in tr.OPTIMIZERS}
    assert states == {"adam": 12, "adam8bit": 6, "adafactor": 4, "sgd": 8}
    # CPU offload of the optimizer leaves DeepSpeed ZeRO-2's 2P on the GPU (memory.rst)
    off = tr.model_state_bytes(2851e6, 2, 8, framework="deepspeed", offload="optimizer")
    assert sum(off.values()) == pytest.approx(2 * 2851e6)
    with pytest.raises(InputError) as e:
        tr.model_state_bytes(p, 2, 8, offload="params")
    assert e.value.field == "offload"


# ----------------------------------------------------------------------------------------------- calibration points


def _tps(**kw) -> dict:
    kw.setdefault("tokens", 1e12)
    return api.estimate(task="train", **kw).numbers


@pytest.mark.parametrize("row, kw, measured", [
    # training.csv row 316: NeMo, Llama 3.1 8B, 32 x H100, bf16, seq 8192, global batch 512: 10,043.8 tok/s/GPU
    (316, dict(model="Llama-3.1-8B", gpu="H100-80GB", gpus=32, context_tokens=8192,
               global_batch_tokens=512 * 8192), 10043.8),
    # row 327: NeMo, Llama 3.1 70B, 512 x H100, bf16, batch 1024: 1,100.3
    (327, dict(model="Llama-3.1-70B", gpu="H100-80GB", gpus=512, context_tokens=8192,
               global_batch_tokens=1024 * 8192), 1100.3),
    # row 339: NeMo, Llama 3.1 405B, 576 x H100, fp8, batch 252: 318.9
    (339, dict(model="Llama-3.1-405B", gpu="H100-80GB", gpus=576, context_tokens=8192, precision="fp8",
               global_batch_tokens=252 * 8192), 318.9),
    # row 360: torchtitan FSDP2, Llama 3 8B, 64 x A100-80GB, micro-batch 1, selective AC, batch 64: 2,904
    (360, dict(model="Llama-3-8B", gpu="A100-80GB", gpus=64, context_tokens=8192, global_batch_tokens=64 * 8192,
               framework="fsdp", micro_batch_size=1, activation_recompute=False, tensor_parallel=1,
               pipeline_parallel=1), 2904),
    # row 366: torchtitan FSDP2, Llama 2 70B, 64 x A100-80GB, seq 4096, batch 64: 355
    (366, dict(model="Llama-2-70B", gpu="A100-80GB", gpus=64, context_tokens=4096, global_batch_tokens=64 * 4096,
               framework="fsdp", micro_batch_size=1, tensor_parallel=1, pipeline_parallel=1), 355),
])
def test_published_runs_within_20_percent(row, kw, measured):
    n = _tps(**kw)
    assert n["tokens_per_second_per_gpu"] == pytest.approx(measured, rel=0.20), row
    assert n["memory_gib_per_gpu"] <= n["usable_gib_per_gpu"]


def test_fit_script_meets_the_goal_on_the_whole_set():
    # benchmarks/training_fit.py on the calibration set (issue 11 goal: >= 70 % of runs within +-20 %); the
    # figures are the README's. Not a timing test.
    sys.path.insert(0, str(ROOT))
    from benchmarks import training_fit as tf

    cases, skipped = tf.load_cases(tf.DEFAULT_CSV)
    rows = tf.evaluate(cases)
    summ = tf.summary(rows)
    # issue 28: the shared set and the 40 added runs (benchmarks/data/training_added.csv); goal 85 % within +-20 %
    assert summ["n"] >= 225
    assert summ["within_20pct"] >= 0.88  # README: 89.2 % (issue 28's goal 85 %)
    assert 0.9 <= summ["median_estimate_over_measured"] <= 1.1
    assert skipped["tokens/s from GPU-hours (restarts and downtime inside: a check, not fitted)"] == 7
    checks = tf.memory_checks()
    assert all(abs(c["error_pct"]) <= 5 for c in checks)


def test_llama2_gpu_hours_at_2048_a100s():
    # Llama 2 model card (meta-llama/llama MODEL_CARD.md): 184,320 / 368,640 / 1,720,320 A100-80GB GPU-hours for
    # 7B / 13B / 70B on 2T tokens; at 2,048 GPUs (LLaMA-1's cluster, arXiv 2302.13971) the model's wall time x GPUs
    # (goodput included) is within +-20 % (issue 28: it was 0.66x on 2 GPUs, MFU 0.68 under Megatron)
    sys.path.insert(0, str(ROOT))
    from benchmarks import training_fit as tf

    llama2 = [c for c in tf.published_checks() if c["check"].startswith("Llama-2")]
    assert len(llama2) == 3
    for c in llama2:
        assert c["ratio"] == pytest.approx(1.0, abs=0.20), c


def test_llama3_405b_at_the_papers_layout():
    # Llama 3 paper (arXiv 2407.21783) Table 4: 8,192 H100s TP8 CP1 PP16 DP64 at 430 TFLOP/s per GPU (163 tokens/s
    # DERIVED, training_added.csv row 1015); the model at the paper's layout is within +-20 %
    sys.path.insert(0, str(ROOT))
    from benchmarks import training_fit as tf

    cases, _ = tf.load_cases(tf.DEFAULT_CSV)
    case = next(c for c in cases if c["row"] == "1015")
    st = tf.estimate_case(case)
    assert (st.layout.tp, st.layout.pp, st.layout.cp, st.layout.dp) == (8, 16, 1, 64)
    assert st.tokens_per_second_per_gpu == pytest.approx(163.0, rel=0.20)
    # Table 4's other two stages: 16,384 GPUs at 8k (400 TFLOP/s, 151.6 tokens/s) and at 128k context (380 TFLOP/s,
    # rows 1016-1017, DERIVED): also within +-20 % at the paper's layout
    for row in ("1016", "1017"):
        c = next(c for c in cases if c["row"] == row)
        assert tf.estimate_case(c).tokens_per_second_per_gpu == pytest.approx(c["measured"], rel=0.20), row
    # and the free layout search at the stated scale (43 % / 41 % BF16 MFU, Table 4)
    llama3 = [c for c in tf.published_checks() if c["check"].startswith("Llama-3.1-405B")]
    assert len(llama3) == 2 and all(c["ratio"] == pytest.approx(1.0, abs=0.20) for c in llama3), llama3


def test_mfu_rises_with_model_size_and_fp8_is_faster_but_lower_mfu():
    # Megatron-LM README (A100): MFU rises with model size (22B 41.5 % .. 530B 56 %); FP8 MFU is counted against
    # the FP8 peak (llm-foundry, NVIDIA recipes), so it is lower while tokens/s are higher.
    small = _tps(model="Llama-3.2-1B", gpu="H100-80GB", gpus=64)
    big = _tps(model="Llama-3.1-70B", gpu="H100-80GB", gpus=64)
    assert big["mfu"] > small["mfu"]
    bf = _tps(model="Llama-3.1-8B", gpu="H100-80GB", gpus=64)
    f8 = _tps(model="Llama-3.1-8B", gpu="H100-80GB", gpus=64, precision="fp8")
    assert f8["tokens_per_second_per_gpu"] > 1.2 * bf["tokens_per_second_per_gpu"]
    assert f8["mfu"] < bf["mfu"]


# ----------------------------------------------------------------------------------------------- issue 28


def test_default_scale_finishes_within_30_days_and_says_so():
    # Llama-2-7B on 2T tokens on A100s: the fewest that hold it are 2 GPUs (7 years of wall time); the default is
    # the fewest (power-of-two nodes) that finish within 30 days
    res = api.estimate(model="meta-llama/Llama-2-7b-hf", task="train", tokens=2e12, gpu="A100-80GB")
    n = res.numbers
    assert n["scale"] == "default"
    assert n["wall_hours"] <= 30 * 24
    assert n["gpus"] % 8 == 0 and n["gpus"] & (n["gpus"] - 1) == 0
    half = api.estimate(model="meta-llama/Llama-2-7b-hf", task="train", tokens=2e12, gpu="A100-80GB",
                        gpus=n["gpus"] // 2).numbers
    assert half["wall_hours"] > 30 * 24  # the fewest that finish in a month, not more
    assert res.assumptions[0].startswith(f"scale: {n['gpus']:,} GPUs, the default")
    few = api.estimate(model="meta-llama/Llama-2-7b-hf", task="train", tokens=2e12, gpu="A100-80GB",
                       gpus="fewest").numbers
    assert few["scale"] == "fewest" and few["gpus"] == 2 and few["wall_hours"] > 365 * 24
    with pytest.raises(InputError) as e:
        api.estimate(model="meta-llama/Llama-2-7b-hf", task="train", tokens=2e12, gpu="A100-80GB", gpus="most")
    assert e.value.field == "gpus"


def test_default_scale_is_capped():
    # a job that needs more than 4,096 GPUs to finish in a month is shown at the cap, and says so
    res = api.estimate(model="Llama-3.1-405B", task="train", tokens=15e12, gpu="H100-80GB")
    assert res.numbers["gpus"] == 4096 and res.numbers["wall_hours"] > 30 * 24
    assert "NOT within 30 days" in res.assumptions[0]


def test_cli_gpus_fewest_and_number():
    def run(*args):
        out = subprocess.run([sys.executable, "-m", "gpuopt.cli", "estimate", "--model", "Llama-2-7B", "--task", "train",
                              "--tokens", "2e11", "--gpu", "A100-80GB", "--format", "json", *args],
                             capture_output=True, text=True, cwd=ROOT)
        return out
    assert json.loads(run("--gpus", "fewest").stdout)["scale"] == "fewest"
    assert json.loads(run("--gpus", "16").stdout)["gpus"] == 16
    bad = run("--gpus", "many")
    assert bad.returncode == 1 and "gpus" in bad.stderr and "Traceback" not in bad.stderr


def test_moe_from_parameter_counts_is_laid_out_with_expert_parallelism():
    # Qwen3-235B-A22B by its counts (235B total, 22B active, 128 experts; its config routes 8): the counts give
    # 8 active experts, and 256 H100s lay it out (issue 28: it could not be, EP was tried only for named models)
    from optimizer.sizing.specs import moe_from_params

    m = moe_from_params(235e9, 22e9, 128)
    assert m.is_moe and m.experts == 128 and m.experts_per_token == 8
    assert m.params_active == pytest.approx(22e9, rel=0.01)
    # the routed experts hold what the active count's dense part does not: 235B - 7.6B (attention, embeddings)
    assert tr.expert_params(m) == pytest.approx(235e9 - 7.6e9, rel=0.05)
    n = api.estimate(params=235e9, active_params=22e9, experts=128, task="train", tokens=1e12, gpu="H100-80GB",
                     gpus=256).numbers
    assert n["fits"] and n["gpus"] == 256
    setup = tr.TrainSetup(model=m, gpu=load_gpu("H100-80GB"), network=tr.reference_network(load_gpu("H100-80GB")),
                          seq_len=4096, global_batch_seqs=1024)
    eps = {lay.ep for lay in tr.layouts(setup, 256)}
    assert {1, 8, 32} <= eps
    with pytest.raises(InputError) as e:
        api.estimate(params=235e9, experts=128, task="train", tokens=1e12, gpu="H100-80GB")
    assert e.value.field == "active_params"


def test_default_batch_grows_with_the_job():
    # a fresh user's find: at 4,096 B200s the 4M-token default left one micro-batch per rank (MFU 0.26); the default
    # is 4M (Llama 2) or 2,048 tokens per GPU (Llama 3 405B: 16M on 8,192 H100s, arXiv 2407.21783 Table 4)
    g = load_gpu("B200")
    setup = tr.TrainSetup(model=load_model("Llama-3.1-70B"), gpu=g, network=tr.reference_network(g), seq_len=8192)
    assert tr.default_batch_tokens(setup, 512) == 4 * 2**20
    assert tr.default_batch_tokens(setup, 8192) == 16 * 2**20
    big = _tps(model="Llama-3.1-70B", gpu="B200", gpus=4096, tokens=15e12)
    assert big["layout"]["global_batch_tokens"] >= 8 * 2**20
    assert big["mfu"] > 0.30


def test_a_big_pipeline_bubble_is_a_warning_and_the_title_gives_the_answer():
    # 405B on 16,384 H100s with a 4M-token batch (a quarter of Llama 3's 16M): deep pipelines, few micro-batches
    res = api.estimate(model="Llama-3.1-405B", task="train", tokens=1e12, gpu="H100-80GB", gpus=16384,
                       global_batch_tokens=4 * 2**20)
    assert res.assumptions[0].startswith("WARNING: the pipeline bubble is")
    parts = res.numbers
    assert parts["mfu"] < 0.3
    ok = api.estimate(model="Llama-3.1-70B", task="train", tokens=1e12, gpu="H100-80GB", gpus=512)
    assert not any(a.startswith("WARNING: the pipeline bubble") for a in ok.assumptions)
    out = subprocess.run([sys.executable, "-m", "gpuopt.cli", "estimate", "--model", "Llama-2-7B", "--task", "train",
                          "--tokens", "2e12", "--gpu", "A100-80GB"], capture_output=True, text=True, cwd=ROOT)
    head = " ".join(out.stdout.split("\n", 2)[:2])  # the title line, wrapped at the terminal's width
    assert head.startswith("Estimate: Llama-2-7B, train, on A100-80GB: 256 GPUs,") and "GPU-hours, MFU" in head


def test_scale_rules_do_not_mix():
    # a breaker's finds: --gpus fewest with a deadline used the deadline and called it "fewest"; --gpus N with a
    # deadline was labelled "deadline"; a superscript digit passed str.isdigit() and raised in int()
    with pytest.raises(InputError) as e:
        api.estimate(model="Llama-2-7B", task="train", tokens=2e12, gpu="H100-80GB", deadline_hours=100, gpus="fewest")
    assert e.value.field == "gpus"
    n = api.estimate(model="Llama-2-7B", task="train", tokens=2e12, gpu="H100-80GB", deadline_hours=100,
                     gpus=16).numbers
    assert n["scale"] == "given" and n["meets_deadline"] is False
    out = subprocess.run([sys.executable, "-m", "gpuopt.cli", "estimate", "--model", "Llama-2-7B", "--task", "train",
                          "--tokens", "1e9", "--gpus", "\u00b2"], capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 1 and "gpus" in out.stderr and "Traceback" not in out.stderr


@pytest.mark.parametrize("params, active, experts, field", [
    (235e9, 22e9, 2, "experts"),        # 2 experts cannot hold 213B with 22B active: top-k would be 0.13
    (235e9, 22e9, 100_000, "experts"),  # experts 3 wide
    (1e12, 1e9, 64, "experts"),         # 1B active cannot route to any of 64 experts of 1T
    (235e9, 0, 128, "active_params"),
    (235e9, 300e9, 128, "active_params"),
])
def test_moe_counts_no_model_has_are_refused(params, active, experts, field):
    from optimizer.sizing.specs import moe_from_params

    with pytest.raises(InputError) as e:
        moe_from_params(params, active, experts)
    assert e.value.field == field


def test_mixtral_counts_give_top2():
    # Mixtral 8x7B: 46.7B total, 12.9B active, 8 experts, 2 per token (Mistral AI, "Mixtral of experts",
    # arXiv 2401.04088); the counts alone give k = 2
    from optimizer.sizing.specs import moe_from_params

    m = moe_from_params(46.7e9, 12.9e9, 8)
    assert m.experts_per_token == 2
    assert (m.params_total, m.params_active) == (46.7e9, 12.9e9)


def test_unmeasured_generations_are_no_faster_than_measured_ones():
    # a breaker's find: Volta/Turing took the Hopper factor (1) while Megatron on Ampere is fitted at 0.72, so a
    # V100 trained at a higher MFU than an A100; an unmeasured generation takes the family's lowest fitted factor
    for fam in ("megatron", "fsdp"):
        a100 = tr.generation_factor(load_gpu("A100-80GB"), fam)
        for old in ("V100-32GB", "T4", "L4"):
            assert tr.generation_factor(load_gpu(old), fam) <= max(a100, 1.0)
    assert tr.generation_factor(load_gpu("V100-32GB"), "megatron") == tr.generation_factor(load_gpu("A100-80GB"),
                                                                                           "megatron")
    v100 = _tps(model="Qwen2.5-0.5B", gpu="V100-32GB", gpus=1, precision="fp16")
    a100 = _tps(model="Qwen2.5-0.5B", gpu="A100-80GB", gpus=1, precision="fp16")
    assert v100["mfu"] <= a100["mfu"] * 1.05


def test_unmeasured_blackwells_take_the_b200_ceiling():
    # stas00/ml-engineering measured B200 at 1745 of 2250 bf16 TFLOP/s (0.776); GB200/B300/GB300 have no measurement
    for g in ("GB200", "B300", "GB300"):
        v, note = tr.mamf(load_gpu(g), "bf16")
        assert v == tr.MAMF[("B200 (HGX/DGX, 1000 W)", "bf16")] and "B200" in note
    assert tr.mamf(load_gpu("GH200"), "bf16")[0] == pytest.approx(828.6 / 989, abs=1e-3)


def test_nvl72_racks_are_one_nvlink_domain():
    # GB200/GB300 NVL72: 72 GPUs on NVLink 5 (NVIDIA multi-node tuning guide); one NIC per GPU between racks:
    # ConnectX-7 400 Gb/s (GB200), ConnectX-8 800 Gb/s (GB300); HGX B300: 8 x 800 Gb/s
    gb200 = tr.reference_network(load_gpu("GB200"))
    gb300 = tr.reference_network(load_gpu("GB300"))
    assert (gb200.gpus_per_node, gb200.gbps_per_node) == (72, 3600.0)
    assert (gb300.gpus_per_node, gb300.gbps_per_node) == (72, 7200.0)
    assert tr.reference_network(load_gpu("B300")).gbps_per_node == 800.0
    assert tr.reference_network(load_gpu("B200")).gpus_per_node == 8


def test_expert_all_to_all_across_nodes_costs_more_than_inside_one():
    # EP 64 on 8-GPU B200 nodes sends 56/64 of the tokens over the NICs (1/8 of the node's 400 GB/s per GPU); on a
    # GB200 rack all 64 are on NVLink
    m = load_model("Qwen3-30B-A3B")
    lay = tr.TrainLayout(dp=64, ep=64, micro_batch=1)

    def a2a(gpu):
        g = load_gpu(gpu)
        setup = tr.TrainSetup(model=m, gpu=g, network=tr.reference_network(g), seq_len=4096, global_batch_seqs=64)
        return tr.step(setup, lay).parts_s["expert_parallel"]
    assert a2a("B200") > 10 * a2a("GB200")


def _moe_setup(gpu="B200", seq=4096, batch=512):
    m = load_model("gpt-oss-120b")
    g = load_gpu(gpu)
    return m, tr.TrainSetup(model=m, gpu=g, network=tr.reference_network(g), seq_len=seq, global_batch_seqs=batch)


def test_experts_reduce_their_gradients_over_the_expert_data_parallel_group():
    # Megatron-Core: expert parameters are reduced over the ranks holding the same experts (dp x cp / ep), strided by
    # tp x ep: at EP 8 on 8-GPU nodes that group has one GPU a node, and each of its rings gets one GPU's NIC share
    # (400 GB/s / 8); at EP 64 every GPU holds its own experts and reduces none of them
    m, setup = _moe_setup()
    ep8 = tr.TrainLayout(dp=64, ep=8, micro_batch=4)
    st8 = tr.step(setup, ep8)
    p_gpu, p_exp = tr._shard_params(m, ep8)
    dense = 2.0 * (63 / 64) * 2.0 * (p_gpu - p_exp) / (400e9) + 2.0 * tr._dp_latency_s(setup, ep8, 64, p_gpu - p_exp)
    lay_e = tr.TrainLayout(tp=8, dp=64, ep=8, micro_batch=4)
    experts = 2.0 * (7 / 8) * 2.0 * p_exp / (50e9) + 2.0 * tr._dp_latency_s(setup, lay_e, 8, p_exp)
    assert st8.parts_s["data_parallel_total"] == pytest.approx(dense + experts, rel=1e-9)
    assert experts > 5 * dense  # the experts' 14.6B parameters a GPU dominate
    st64 = tr.step(setup, tr.TrainLayout(dp=64, ep=64, micro_batch=4))
    assert st64.parts_s["data_parallel_total"] < st8.parts_s["data_parallel_total"] / 5


def test_a_fixed_time_per_local_expert():
    # FIT.expert_fixed_s per expert a GPU holds, per MoE layer and micro-batch: EP 8 holds 16 of 128 experts, EP 64
    # two, so the fixed part differs by 14 x 36 layers x that time per micro-batch
    m, setup = _moe_setup()
    a = tr.step(setup, tr.TrainLayout(dp=64, ep=8, micro_batch=4))
    b = tr.step(setup, tr.TrainLayout(dp=64, ep=64, micro_batch=4))
    assert a.microbatches == b.microbatches == 2
    diff = (a.parts_s["fixed_per_layer"] - b.parts_s["fixed_per_layer"]) / a.microbatches
    assert diff == pytest.approx(tr.FIT.expert_fixed_s * (16 - 2) * m.layers, rel=1e-9)
    assert 1e-4 < tr.FIT.expert_fixed_s < 1e-3


def test_zero2_under_a_pipeline_syncs_once_a_step():
    # PyTorch pipelining (stage.py, backward_maybe_with_nosync): "we need to accumulate gradients on previous steps
    # and reduce them on the last step" -- ZeRO-2 under PP moves what ZeRO-1 does and holds the whole gradient buffer
    m = load_model("Llama-3.1-70B")
    g = load_gpu("H100-80GB")
    setup = tr.TrainSetup(model=m, gpu=g, network=tr.reference_network(g), seq_len=8192, global_batch_seqs=256)
    z1, z2 = (tr.step(setup, tr.TrainLayout(tp=8, pp=4, dp=8, zero_stage=z)) for z in (1, 2))
    assert z1.microbatches == 32
    assert z2.parts_s["data_parallel_total"] == pytest.approx(z1.parts_s["data_parallel_total"], rel=1e-12)
    assert z2.memory["gradients"] == pytest.approx(z1.memory["gradients"], rel=1e-12)
    # without a pipeline it reduce-scatters every micro-batch (DeepSpeed ZeRO-2): 8 micro-batches + 1 all-gather =
    # 9 rounds where ZeRO-1 moves 2, and holds a 1/32 shard of the gradients
    n1, n2 = (tr.step(setup, tr.TrainLayout(tp=8, dp=32, zero_stage=z)) for z in (1, 2))
    assert n1.microbatches == 8
    assert n2.parts_s["data_parallel_total"] == pytest.approx(9 / 2 * n1.parts_s["data_parallel_total"], rel=1e-12)
    assert n2.memory["gradients"] < n1.memory["gradients"] / 10


def test_interleaving_multiplies_the_pipeline_point_to_point():
    # Narayanan et al. 2021 s.2.2.2: with v model chunks a rank "the amount of communication also increases by v"
    m = load_model("Llama-3.1-70B")
    g = load_gpu("H100-80GB")
    setup = tr.TrainSetup(model=m, gpu=g, network=tr.reference_network(g), seq_len=8192, global_batch_seqs=256)
    p1, p4 = (tr.step(setup, tr.TrainLayout(tp=8, pp=4, dp=8, vp=v)).parts_s["pipeline_p2p"] for v in (1, 4))
    assert p4 == pytest.approx(4 * p1, rel=1e-12) and p1 > 0


def test_block_recompute_of_the_fewest_layers_that_fit():
    # Megatron-Core --recompute-method block --recompute-num-layers N: recompute N layers a stage, keep the rest;
    # Llama-3-70B on 64 GB300s (NeMo's Megatron-FSDP run, calibration row 257, 5,003 tokens/s) does not fit without
    # recompute at micro-batch 2 x 8k, and needs only part of it
    m = load_model("Llama-3.1-70B")
    g = load_gpu("GB300")
    setup = tr.TrainSetup(model=m, gpu=g, network=tr.reference_network(g), seq_len=8192, precision="fp8",
                          global_batch_seqs=256)
    base = tr.TrainLayout(dp=64, zero_stage=3, micro_batch=2)
    none = tr.step(setup, base)
    full = tr.step(setup, tr.TrainLayout(dp=64, zero_stage=3, micro_batch=2, recompute=True))
    part = tr.least_recompute(setup, full.layout)
    assert not none.fits and full.fits and part is not None and part.fits
    n = part.layout.recompute_layers
    assert 0 < n < m.layers
    assert not tr.step(setup, tr.TrainLayout(dp=64, zero_stage=3, micro_batch=2, recompute=True,
                                             recompute_layers=n - 1)).fits
    assert full.tokens_per_second_per_gpu < part.tokens_per_second_per_gpu < none.tokens_per_second_per_gpu
    assert f"recompute of {n} layers, the rest kept" in part.layout.describe()  # PP1: no "a stage"
    assert tr.TrainLayout.from_dict(part.layout.as_dict()) == part.layout
    # the search takes it when the recompute is not fixed, and keeps every layer when the user asks for recompute
    best, _, _ = tr.search(setup, 64, zero_stage=3, micro_batch=2, tp=1, pp=1, cp=1)
    assert best.layout.recompute and 0 < best.layout.recompute_layers < m.layers
    fixed, _, _ = tr.search(setup, 64, zero_stage=3, micro_batch=2, tp=1, pp=1, cp=1, recompute=True)
    assert fixed.layout.recompute_layers == 0


def test_block_recompute_is_megatron_and_counts_per_virtual_stage():
    # a breaker's finds: Megatron-Core counts --recompute-num-layers per model chunk under virtual pipelining (a
    # multiple of vp a rank), and HF Trainer / DeepSpeed checkpoint every layer (no block recompute there)
    m = load_model("Qwen3-30B-A3B")
    g = load_gpu("H100-80GB")
    setup = tr.TrainSetup(model=m, gpu=g, network=tr.reference_network(g), seq_len=4096, precision="fp8")
    parts = [p for p in (tr.least_recompute(setup, lay) for lay in tr.layouts(setup, 64, pp=2, recompute=True)
                         if lay.vp > 1) if p is not None]
    assert parts  # the breaker's case: PP2 with virtual stages on 64 H100s
    for part in parts:
        vp = part.layout.vp
        assert part.layout.recompute_layers % vp == 0 and part.fits
        assert f"({part.layout.recompute_layers // vp} a virtual stage)" in part.layout.describe()
    llama = load_model("Llama-3.1-8B")
    for fw in ("fsdp", "deepspeed"):
        s = tr.TrainSetup(model=llama, gpu=g, network=tr.reference_network(g), seq_len=8192, framework=fw,
                          global_batch_seqs=64)
        assert tr.least_recompute(s, tr.TrainLayout(dp=2, zero_stage=3, recompute=True)) is None
    s = tr.TrainSetup(model=llama, gpu=g, network=tr.reference_network(g), seq_len=8192, framework="fsdp",
                      global_batch_seqs=64)
    best, _, _ = tr.search(s, 2)  # the breaker's finetune on 2 H100s: every layer, as HF Trainer checkpoints
    assert best.layout.recompute and best.layout.recompute_layers == 0
    assert "recompute of 1 layer a stage, the rest kept" in tr.TrainLayout(pp=2, recompute=True, recompute_layers=1).describe()


def test_the_fixed_time_per_expert_stays_in_the_fitted_range():
    # the runs hold 2-32 experts a GPU: a GPU holding all 128 (EP 1) is charged as 32, not extrapolated
    m, setup = _moe_setup()
    one = tr.step(setup, tr.TrainLayout(tp=8, dp=1, ep=1, micro_batch=1))
    four = tr.step(setup, tr.TrainLayout(tp=8, dp=1, ep=1, micro_batch=1), dataclasses.replace(tr.FIT, expert_fixed_s=0))
    held = (one.parts_s["fixed_per_layer"] - four.parts_s["fixed_per_layer"]) / one.microbatches
    assert held == pytest.approx(tr.FIT.expert_fixed_s * tr.EXPERT_FIXED_MAX_LOCAL * m.layers, rel=1e-9)


def test_zero2_gradients_under_a_pipeline_as_stage_1_for_every_framework():
    # a breaker's find: DeepSpeed's stage-2 gradients (2P + 4P/d) times d gave 494 GiB for Llama-3.1-8B at DP 64
    m = load_model("Llama-3.1-8B")
    g = load_gpu("H100-80GB")
    for fw in ("megatron", "deepspeed", "fsdp"):
        setup = tr.TrainSetup(model=m, gpu=g, network=tr.reference_network(g), seq_len=4096, framework=fw,
                              global_batch_seqs=512)
        z1, z2 = (tr.memory_per_gpu(setup, tr.TrainLayout(pp=2, dp=64, zero_stage=z))["gradients"] for z in (1, 2))
        assert z2 == pytest.approx(z1, rel=1e-12) and z1 < 20 * G, fw


def test_attention_at_head_dim_64_is_slower():
    # FlashAttention-3 (arXiv 2407.08608), H100 BF16 forward, 4k-16k tokens: 476-497 TFLOP/s at head dim 64 against
    # 638-648 at 128 and 612-642 at 256
    assert tr.attention_head_dim_factor(64) == 0.75
    assert tr.attention_head_dim_factor(32) == 0.75
    assert tr.attention_head_dim_factor(96) == pytest.approx(0.875)
    assert tr.attention_head_dim_factor(128) == tr.attention_head_dim_factor(256) == 1.0
    assert 476 / 648 <= tr.attention_head_dim_factor(64) <= 497 / 638


def test_fixed_costs_slow_small_models_more():
    # per-layer and per-step fixed times (FIT.layer_fixed_s, step_fixed_s) do not shrink with the model: a 125M
    # model's step carries a larger share of them than a 7B's
    st = {}
    for p in (125e6, 7e9):
        from optimizer.sizing.specs import model_from_params

        g = load_gpu("A100-80GB")
        setup = tr.TrainSetup(model=model_from_params(p), gpu=g, network=tr.reference_network(g), seq_len=2048,
                              framework="fsdp", global_batch_seqs=256)
        s = tr.step(setup, tr.TrainLayout(dp=8, zero_stage=3, micro_batch=4))
        st[p] = (s.parts_s["fixed_per_layer"] + s.parts_s["fixed_per_step"]) / s.step_s
    assert st[125e6] > 3 * st[7e9] > 0


def test_blackwell_ultra_attention_is_faster():
    # NVIDIA, "Making Softmax More Efficient with NVIDIA Blackwell Ultra": doubled SFU throughput, ~35 % more
    # attention FPROP on GB300 than GB200 at the same tensor-core peak
    assert tr.attention_speedup(load_gpu("GB300")) == 1.35
    assert tr.attention_speedup(load_gpu("B300")) == 1.35
    assert tr.attention_speedup(load_gpu("GB200")) == 1.0


# ----------------------------------------------------------------------------------------------- layouts


def test_405b_layout_on_16384_h100():
    # Llama 3 405B was pre-trained on up to 16,384 H100s with TP 8 inside a node and PP across nodes (Llama 3
    # paper, s.3.3.2: TP8 CP1 PP16 DP128 at 8k tokens)
    n = _tps(model="Llama-3.1-405B", gpu="H100-80GB", gpus=16384, context_tokens=8192,
             global_batch_tokens=16 * 2**20)
    lay = n["layout"]
    assert lay["tensor_parallel"] == 8
    assert lay["pipeline_parallel"] >= 8
    assert lay["tensor_parallel"] * lay["pipeline_parallel"] * lay["data_parallel"] * lay["context_parallel"] == 16384
    assert n["memory_gib_per_gpu"] <= n["usable_gib_per_gpu"]
    # between the published figures for this model: Llama 3 reports 38-43 % BF16 MFU on 8-16k H100s (Table 4),
    # NeMo 54.8 % on 1,152 H100s (training.csv row 337); no run above 2,304 GPUs is in the calibration set
    assert 0.38 <= n["mfu"] <= 0.548
    assert 0.85 <= n["goodput"] < 1.0  # > 90 % effective training time reported; failures every ~3 h


@pytest.mark.parametrize("model, gpu, gpus", [
    ("Llama-2-7B", "A100-40GB", 8), ("Llama-2-13B", "A100-80GB", 16), ("Llama-3.1-70B", "H100-80GB", 64),
    ("Mixtral-8x7B-v0.1", "H100-80GB", 32), ("Llama-3.1-405B", "H200-141GB", 256), ("Llama-3.1-8B", "L40S", 8)])
def test_chosen_layout_never_exceeds_gpu_memory(model, gpu, gpus):
    w = Workload(task="train", model=load_model(model), tokens=1e12)
    spec = load_gpu(gpu)
    s = size_training(w, spec, gpus)
    if s.fits:
        assert s.memory_gib_per_gpu <= s.usable_gib_per_gpu <= spec.memory_gib
        setup = tr.TrainSetup(model=w.model, gpu=spec, network=DEFAULT_NODE_NETWORK, seq_len=4096)
        lay = s.training_layout
        again = tr.memory_per_gpu(setup, tr.TrainLayout.from_dict(lay))
        assert sum(again.values()) / G <= s.usable_gib_per_gpu + 1e-9


def test_slower_fabric_lowers_throughput_across_nodes():
    import dataclasses

    w = Workload(task="train", model=load_model("Llama-3.1-8B"), tokens=1e12, framework="fsdp")
    gpu = load_gpu("H100-80GB")
    fast = size_training(w, gpu, 64, network=dataclasses.replace(DEFAULT_NODE_NETWORK, gbps_per_node=400.0))
    slow = size_training(w, gpu, 64, network=dataclasses.replace(DEFAULT_NODE_NETWORK, gbps_per_node=12.5))
    assert slow.tokens_per_second_per_replica < 0.8 * fast.tokens_per_second_per_replica


# ----------------------------------------------------------------------------------------------- interface


def test_cli_estimate_train_json_has_the_issue_keys():
    out = subprocess.run([sys.executable, "-m", "gpuopt.cli", "estimate", "--task", "train", "--model",
                          "meta-llama/Llama-2-7b-hf", "--gpu", "H100-80GB", "--gpus", "64", "--tokens", "2e12",
                          "--tensor-parallel", "2", "--micro-batch-size", "2", "--no-activation-recompute",
                          "--precision", "fp8", "--optimizer", "adamw", "--zero-stage", "1", "--offload", "none",
                          "--global-batch-tokens", "4194304", "--context", "4096", "--format", "json"],
                         capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert out.returncode == 0, out.stderr
    d = json.loads(out.stdout)
    for key in ("tokens_per_second_per_gpu", "mfu", "step_time_s", "memory_gib_per_gpu", "gpu_hours", "wall_hours",
                "layout", "goodput"):
        assert key in d
    assert d["layout"]["tensor_parallel"] == 2 and d["layout"]["micro_batch_size"] == 2
    assert d["layout"]["precision"] == "fp8" and d["layout"]["optimizer"] == "adam"
    assert d["gpus"] == 64
    # wall time = tokens / (tokens/s per GPU x GPUs) / goodput; GPU-hours = GPUs x wall time
    assert d["wall_hours"] == pytest.approx(2e12 / (d["tokens_per_second_per_gpu"] * 64) / 3600 / d["goodput"])
    assert d["gpu_hours"] == pytest.approx(64 * d["wall_hours"])


@pytest.mark.parametrize("args, field", [
    (["--precision", "fp8", "--gpu", "A100-80GB"], "precision"),
    (["--optimizer", "lion"], "optimizer"),
    (["--offload", "params", "--zero-stage", "1"], "offload"),
    (["--gpus", "3", "--tensor-parallel", "2"], "--tensor-parallel"),  # the option typed (issue 32)
    (["--gpus", "1", "--model", "meta-llama/Llama-2-70b-hf"], "gpus"),
    (["--framework", "jax"], "framework"),
])
def test_cli_bad_training_input_is_one_line(args, field):
    base = ["--task", "train", "--model", "meta-llama/Llama-2-7b-hf", "--tokens", "1e12"]
    out = subprocess.run([sys.executable, "-m", "gpuopt.cli", "estimate", *base, *args], capture_output=True,
                         text=True, cwd=ROOT, timeout=120)
    assert out.returncode == 1
    assert "Traceback" not in out.stderr
    assert field in out.stderr


def test_deadline_picks_the_gpus_that_finish_in_time():
    n = _tps(model="Llama-2-7B", gpu="H100-80GB", deadline_hours=24 * 14)
    assert n["meets_deadline"]
    assert n["wall_hours"] <= 24 * 14
    half = _tps(model="Llama-2-7B", gpu="H100-80GB", gpus=n["gpus"] // 2)
    assert half["wall_hours"] > 24 * 14  # the fewest GPUs (of 1, 2, 4, ...) that meet it


def test_serving_rejects_training_options():
    with pytest.raises(InputError) as e:
        api.estimate(model="Llama-2-7B", task="serve", gpu="A100-80GB", gpus=8)
    assert e.value.field == "gpus"


def test_user_mfu_replaces_the_model():
    n = _tps(model="Llama-2-7B", gpu="A100-80GB", gpus=8, mfu=0.40)
    flops_per_token = tr.model_flops_per_token(load_model("Llama-2-7B"), 4096)
    assert n["tokens_per_second_per_gpu"] == pytest.approx(0.40 * 312e12 / flops_per_token)
    assert math.isclose(n["mfu"], 0.40)


# ----------------------------------------------------------------------------------------------- the planner


@pytest.fixture(scope="module")
def aws_offers():
    from pricing_cache.store import load_offers

    offers = load_offers()[0]
    return offers[(offers["provider"] == "aws") & (offers["zone"].astype(str) == "")].reset_index(drop=True)


def test_a_training_job_runs_on_one_cluster_in_whole_units(aws_offers):
    # issue 11 (breaker): one synchronous job stays on one instance type in one region (one fabric, one GPU model),
    # never more GPUs at once than the job's layout, and every line buys whole units of that layout
    from optimizer.planning.plan import plan_fleet
    from optimizer.planning.problem import FleetWorkload

    w = Workload(task="train", model=load_model("Llama-2-70B"), tokens=1e11, deadline_hours=100.0)
    job = FleetWorkload(name="job", workload=w, deadline_hours=100.0, allow_spot=True)
    res = plan_fleet([job], {}, aws_offers, horizon_months=1, explain=False)
    assert res.status == "optimal", res.reason
    assert len({(ln.provider, ln.region, ln.instance_type) for ln in res.lines}) == 1
    (summary,) = res.workloads
    (s,) = summary["sizing"]
    unit_instances = s["gpus_per_replica"] / (res.lines[0].gpu_count)
    for ln in res.lines:
        if not ln.days:  # hourly lines: whole units of the job's layout
            assert ln.count % unit_instances == 0
        assert ln.training_layout and 0 < ln.mfu < 1
    assert summary["gpus_peak"] <= s["job_gpus"]
    assert summary["finish_by_hour"] <= 100.0


def test_a_deadline_no_cluster_meets_says_so(aws_offers):
    from optimizer.planning.plan import plan_fleet
    from optimizer.planning.problem import FleetWorkload

    w = Workload(task="train", model=load_model("Llama-3.1-405B"), tokens=1e13, deadline_hours=10.0)
    res = plan_fleet([FleetWorkload(name="big", workload=w, deadline_hours=10.0)], {}, aws_offers,
                     horizon_months=1, explain=False)
    assert res.status == "infeasible"
    assert res.reason["kind"] == "deadline"
    assert "on any one cluster" in res.reason["message"] and res.reason["deadline_needed_hours"] > 10


def test_training_options_a_framework_cannot_run_are_refused():
    w = Workload(task="train", model=load_model("Llama-2-7B"), tokens=1e9)
    with pytest.raises(InputError) as e:  # V100 has no bf16 (NVIDIA V100 datasheet: FP16 tensor cores only)
        size_training(w, load_gpu("V100-16GB"), 8)
    assert e.value.field == "precision" and e.value.accepted == "fp16"
    with pytest.raises(InputError) as e:  # DeepSpeed's PipelineEngine runs ZeRO stage 0 or 1 only
        size_training(Workload(task="train", model=load_model("Llama-2-7B"), tokens=1e9, framework="deepspeed",
                               zero_stage=3), load_gpu("H100-80GB"), 8, pipeline_parallel=2)
    assert e.value.field == "pipeline_parallel"
    with pytest.raises(InputError) as e:
        size_training(Workload(task="train", model=load_model("Llama-2-7B"), tokens=1e9, framework="megatron",
                               offload="params"), load_gpu("H100-80GB"), 8)
    assert e.value.field == "offload"
    with pytest.raises(InputError) as e:
        size_training(w, load_gpu("H100-80GB"), 8, expert_parallel=2)  # a dense model has no experts
    assert e.value.field == "expert_parallel"


def test_fsdp_and_deepspeed_stay_data_parallel_unless_told():
    # HF Trainer / accelerate / llm-foundry FSDP and DeepSpeed ZeRO run data parallel: no TP/PP unless given
    for fw in ("fsdp", "deepspeed"):
        n = _tps(model="Llama-2-13B", gpu="A100-80GB", gpus=16, framework=fw, zero_stage=3)
        assert (n["layout"]["tensor_parallel"], n["layout"]["pipeline_parallel"]) == (1, 1)
        assert n["layout"]["data_parallel"] == 16


def test_finetune_default_batch_is_llama2_sft():
    # Llama 2 paper s.3.1: supervised fine-tuning with a batch of 64 sequences of 4096 tokens
    n = api.estimate(model="Llama-2-7B", task="finetune", tokens=1e8, gpu="A100-80GB", gpus=8).numbers
    assert n["layout"]["global_batch_tokens"] == 64 * 4096


def test_the_quota_holds_whole_training_units(aws_offers):
    # a 70B job on 8-GPU A100-40GB instances needs 8 instances at once (64 GPUs): --max-instances 3 cannot run it
    from optimizer.planning.plan import plan_fleet
    from optimizer.planning.problem import FleetWorkload

    offers = aws_offers[aws_offers["gpu_model"] == "A100-40GB"]
    w = Workload(task="train", model=load_model("Llama-2-70B"), tokens=1e9)
    res = plan_fleet([FleetWorkload(name="job", workload=w)], {}, offers, horizon_months=1, explain=False,
                     max_instances=3)
    assert res.status == "infeasible" and res.reason["kind"] == "max_instances"
    ok = plan_fleet([FleetWorkload(name="job", workload=w)], {}, offers, horizon_months=1, explain=False,
                    max_instances=8)
    assert ok.status == "optimal" and all(ln.count <= 8 for ln in ok.lines)


def test_a_long_job_on_capacity_blocks_is_planned(aws_offers):
    # a breaker's 405B job over 2,000 h on AWS: its capacity-block unit-days sit exactly at the window's limit;
    # the plan check must allow the solver's relative tolerance (it had reported not_solved)
    from optimizer.planning.plan import plan_fleet
    from optimizer.planning.problem import FleetWorkload

    offers = aws_offers[aws_offers["instance_type"] == "p6-b200.48xlarge"]
    w = Workload(task="train", model=load_model("Llama-3.1-405B"), tokens=1e13, deadline_hours=2000.0)
    res = plan_fleet([FleetWorkload(name="big", workload=w, deadline_hours=2000.0)], {}, offers,
                     horizon_months=3, explain=False)
    assert res.status == "optimal", res.reason
    assert res.workloads[0]["finish_by_hour"] <= 2000.0


@pytest.mark.parametrize("kw, field", [
    (dict(framework="fsdp", zero_stage=1), "zero_stage"),  # FSDP: NO_SHARD, SHARD_GRAD_OP, FULL_SHARD
    (dict(global_batch_tokens=1e30), "global_batch_tokens"),  # more than the job's tokens
    (dict(context_parallel=2, context_tokens=4095), "context_parallel"),  # Megatron: 2 x CP chunks
])
def test_more_options_no_framework_runs(kw, field):
    with pytest.raises(InputError) as e:
        api.estimate(model="Llama-2-7B", task="train", tokens=1e10, gpu="H100-80GB", gpus=8, **kw)
    assert e.value.field == field


def test_an_amd_gpu_without_a_matmul_measurement_takes_the_amd_one():
    """MI325X and MI355X have no MAMF measurement: they take the measured AMD Instinct bf16 ratio (MI300X 0.514,
    stas00/ml-engineering), not the NVIDIA mean 0.819 (a breaker saw MI325X at MFU 0.66 beside MI300X's 0.40)."""
    from optimizer.sizing.specs import load_gpu
    from optimizer.sizing.training import MAMF, MAMF_DEFAULT, mamf

    for name in ("MI325X", "MI355X"):
        v, why = mamf(load_gpu(name), "bf16")
        assert v == MAMF[("Instinct MI300X", "bf16")] == 0.514 and "AMD Instinct" in why
    assert mamf(load_gpu("H20"), "bf16")[0] == MAMF_DEFAULT["bf16"]  # NVIDIA without a row: the NVIDIA mean
    # (a Blackwell without one takes the B200's: test_unmeasured_blackwells_take_the_b200_ceiling)
