"""Tests of LoRA / QLoRA sizing (task "lora"): adapter counts, memory, FLOPs, validation.

Adapter counts are checked against hand arithmetic of r * (d_in + d_out) over the config shapes
(Hu et al. 2021, arXiv 2106.09685); memory against FORMULAS.md §4 (LoRA/QLoRA line) and §5.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpuopt.kernel.errors import InputError
from optimizer.sizing import (
    GIB,
    LORA_ADAPTER_BYTES_PER_PARAM,
    LORA_TARGETS,
    QLORA_NF4_BYTES_PER_PARAM,
    USABLE_FRACTION,
    Workload,
    data_parallel_efficiency,
    estimate,
    gpu_hours,
    lora_adapter_params,
    lora_base_weight_bytes,
    min_gpus_per_replica,
    size_replica,
    train_flops,
    validate_workload,
)
from optimizer.sizing.specs import known_gpus, known_models, load_gpu, load_model

A100 = load_gpu("A100-80GB")
H100 = load_gpu("H100-80GB")
LLAMA7 = load_model("Llama-2-7B")
LLAMA70 = load_model("Llama-2-70B")
MIXTRAL = load_model("Mixtral-8x7B-v0.1")
FALCON40 = load_model("Falcon-40B")
HF_FIXTURES = Path(__file__).parent / "fixtures" / "hf_configs"


def lora(model=LLAMA7, tokens=1e9, **kw):
    return Workload(task="lora", model=model, tokens=tokens, **kw)


# ------------------------------------------------------------------------------------------------ adapter counts


def test_llama2_7b_r16_all_targets():
    # h 4096, a*d = kv*d = 4096, I 11008: per layer q,k,v,o 4 x 16 x (4096 + 4096) = 524,288;
    # gate, up, down 3 x 16 x (4096 + 11008) = 724,992; x 32 layers = 39,976,960.
    per_layer = 4 * 16 * (4096 + 4096) + 3 * 16 * (4096 + 11008)
    assert per_layer * 32 == 39_976_960
    assert lora_adapter_params(LLAMA7, 16, LORA_TARGETS) == 39_976_960
    assert lora_adapter_params(LLAMA7) == 39_976_960  # defaults: r = 16, all seven targets


def test_llama2_7b_single_targets_and_rank_scaling():
    assert lora_adapter_params(LLAMA7, 8, ("q", "v")) == 32 * 2 * 8 * (4096 + 4096)  # the LoRA paper's q,v choice
    assert lora_adapter_params(LLAMA7, 64) == 4 * 39_976_960  # linear in r
    # HF module names are the same targets
    assert lora_adapter_params(LLAMA7, 16, ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj",
                                            "down_proj"]) == 39_976_960


def test_llama2_70b_gqa_shapes():
    # h 8192, a*d 8192, kv*d 8 x 128 = 1024, I 28672: q,o 16 x 16384; k,v 16 x 9216; gate,up,down 16 x 36864.
    per_layer = 2 * 16 * (8192 + 8192) + 2 * 16 * (8192 + 1024) + 3 * 16 * (8192 + 28672)
    assert per_layer == 2_588_672
    assert lora_adapter_params(LLAMA70) == 80 * 2_588_672 == 207_093_760


def test_mixtral_mlp_targets_count_per_expert():
    attn = 2 * 16 * (4096 + 4096) + 2 * 16 * (4096 + 1024)
    mlp = 8 * 3 * 16 * (4096 + 14336)  # 8 experts x (w1, w3, w2)
    assert lora_adapter_params(MIXTRAL) == 32 * (attn + mlp) == 240_123_904
    assert lora_adapter_params(MIXTRAL, 16, ("q", "k", "v", "o")) == 32 * attn


def test_falcon_has_no_gate():
    # 2-matrix GELU MLP (h -> 4h -> h): "gate" adds nothing; q,k,v counted as separate projections.
    h, q, kv, f = 8192, 128 * 64, 8 * 64, 4 * 8192
    expected = 60 * 16 * ((h + q) + 2 * (h + kv) + (q + h) + (h + f) + (f + h))
    assert lora_adapter_params(FALCON40) == expected
    with pytest.raises(InputError) as e:
        validate_workload(lora(FALCON40, lora_targets=("gate",)))
    assert e.value.field == "lora_targets" and "gate" not in e.value.accepted.split(", ")


# ------------------------------------------------------------------------------------------------ memory


def test_qlora_base_bytes():
    # NF4 4 bits + double-quantized constants 8/64 + 32/(64*256) = 0.127 bits (QLoRA paper s.3)
    assert QLORA_NF4_BYTES_PER_PARAM == pytest.approx(4.127 / 8, abs=1e-4)
    embed = 2 * 32000 * 8192  # untied input embedding + output head stay 16-bit
    expected = (68_976_648_192 - embed) * QLORA_NF4_BYTES_PER_PARAM + embed * 2
    assert lora_base_weight_bytes(LLAMA70, "int4") == pytest.approx(expected)
    assert 32 < expected / GIB < 35  # the brief's "70e9 x 0.5 B ~ 32 GiB", plus constants and 16-bit embeddings
    assert lora_base_weight_bytes(LLAMA70, "bf16") == 68_976_648_192 * 2
    # tied embeddings (Falcon) count once
    falcon_embed = 65024 * 8192
    assert lora_base_weight_bytes(FALCON40, "int8") == pytest.approx((41_303_293_952 - falcon_embed) + 2 * falcon_embed)


@pytest.mark.parametrize("gpu", [A100, H100])
def test_qlora_70b_fits_one_80gb_gpu_bf16_lora_does_not(gpu):
    q = size_replica(lora(LLAMA70, precision="int4"), gpu, 1)  # micro-batch 1, 4096 tokens, full recompute
    assert q.fits, q.memory_gib_per_gpu
    assert q.memory_gib_per_gpu < 0.9 * 80
    b = size_replica(lora(LLAMA70, precision="bf16"), gpu, 1)
    assert not b.fits and b.breakdown_gib["weights"] > 128  # 68.98e9 x 2 B = 128.5 GiB
    assert min_gpus_per_replica(lora(LLAMA70, precision="int4"), gpu).gpus_per_replica == 1
    # bf16 on 2 GPUs (ZeRO-3): 64.2 GiB of base + 6.5 GiB activations + 1.6 GiB gathered layer + adapters > 72
    assert min_gpus_per_replica(lora(LLAMA70, precision="bf16"), gpu).gpus_per_replica == 4


def test_lora_breakdown_one_gpu():
    s = size_replica(lora(LLAMA7, zero_stage=0), A100, 1)
    n_ad = 39_976_960
    bd = {k: v * GIB for k, v in s.breakdown_gib.items()}
    assert bd["weights"] == pytest.approx(6_738_415_616 * 2)
    assert bd["adapter_weights"] == pytest.approx(2 * n_ad)
    assert bd["gradients"] == pytest.approx(2 * n_ad)
    assert bd["optimizer_states"] == pytest.approx(12 * n_ad)
    assert bd["adapter_weights"] + bd["gradients"] + bd["optimizer_states"] == pytest.approx(
        LORA_ADAPTER_BYTES_PER_PARAM * n_ad)
    assert bd["kv_cache"] == 0 and bd["overhead"] == 0  # 16-bit base, ZeRO stage 0
    # activations as F§5 with full recompute (LoRA's default): 2 s b h L stored inputs + 34 s b h for the layer
    # being recomputed + 4 s b V fp32 logits; Llama-2-7B, s 4096, b 1
    s_, h, L, V = 4096, 4096, 32, 32000
    assert s.breakdown_gib["activations"] * GIB == pytest.approx(2 * s_ * h * L + 34 * s_ * h + 4 * s_ * V)
    assert s.usable_gib_per_gpu == 80 * USABLE_FRACTION
    assert any("Hu et al. 2021" in a for a in s.assumptions)


def test_zero3_shards_the_frozen_base():
    one = size_replica(lora(LLAMA70), A100, 1)
    four = size_replica(lora(LLAMA70), A100, 4)
    assert four.breakdown_gib["weights"] == pytest.approx(one.breakdown_gib["weights"])  # per replica, summed
    assert four.memory_gib_per_gpu < one.memory_gib_per_gpu
    # stages 0-2 keep a full base on every GPU
    s2 = size_replica(lora(LLAMA70, zero_stage=2), A100, 4)
    assert s2.breakdown_gib["weights"] == pytest.approx(4 * 68_976_648_192 * 2 / GIB)


@pytest.mark.parametrize("model", [LLAMA7, LLAMA70, MIXTRAL])
@pytest.mark.parametrize("gpus", [1, 8])
def test_lora_needs_less_memory_than_full_finetune(model, gpus):
    full = size_replica(Workload(task="finetune", model=model, tokens=1e9), A100, gpus)
    for precision in ("bf16", "int8", "int4"):
        lo = size_replica(lora(model, precision=precision), A100, gpus)
        assert lo.memory_gib_per_gpu < full.memory_gib_per_gpu, precision
    ests = [estimate(Workload(task="finetune", model=model, tokens=1e9), A100),
            estimate(lora(model), A100), estimate(lora(model, precision="int4"), A100)]
    counts = [e["gpus_per_replica"] for e in ests]
    assert counts == sorted(counts, reverse=True)


def test_precision_orders_lora_memory():
    mem = [size_replica(lora(LLAMA70, precision=p), A100, 1).memory_gib_per_gpu for p in ("bf16", "int8", "int4")]
    assert mem == sorted(mem, reverse=True)


# ------------------------------------------------------------------------------------------------ FLOPs and time


@pytest.mark.parametrize("model", [LLAMA7, LLAMA70, MIXTRAL])
def test_lora_flops_are_four_sixths_of_training(model):
    tokens = 3e9
    full = train_flops(Workload(task="train", model=model, tokens=tokens))
    assert train_flops(lora(model, tokens=tokens)) == pytest.approx(full * 4 / 6, rel=1e-12)
    # MoE: active parameters (Mixtral 12,879,925,248)
    assert train_flops(lora(model, tokens=tokens)) == 4 * model.params_active * tokens


def test_lora_tokens_per_second_and_gpu_hours():
    lo = size_replica(lora(LLAMA7), A100, 1)
    assert lo.flops_per_second_per_replica == pytest.approx(312e12 * 0.40)  # peak x the default MFU (F§3)
    # 4 N FLOPs per token (forward + activation gradients, no weight gradients): 1.5x full training's 6 N
    assert lo.tokens_per_second_per_replica == pytest.approx(312e12 * 0.40 / (4 * 6_738_415_616))
    hours = gpu_hours(lora(LLAMA7), lo)
    assert hours == pytest.approx(4 * 6_738_415_616 * 1e9 / (312e12 * 0.40) / 3600)


def test_lora_scales_better_than_full_training():
    # only adapter gradients cross the links (ZeRO stage 2 keeps the base local): the small adapters of rank 16
    # scale better on PCIe than rank-4096 ones, whose gradients are ~4x the base's weights in traffic
    pcie = load_gpu("L4")
    for gpus in (2, 8):
        full = data_parallel_efficiency(Workload(task="lora", model=LLAMA7, tokens=1e9, zero_stage=2, lora_rank=4096),
                                        pcie, gpus)
        lo = data_parallel_efficiency(lora(LLAMA7, zero_stage=2), pcie, gpus)
        assert full < lo <= 1.0


def test_estimate_covers_lora():
    e = estimate(lora(LLAMA70, precision="int4"), "H100-80GB")
    assert {"train_flops", "gpu_hours", "wall_hours_one_replica", "breakdown_gib"} <= set(e)
    assert "adapter_weights" in e["breakdown_gib"]
    assert e["gpus_per_replica"] == 1
    assert e["train_flops"] == 4 * 68_976_648_192 * 1e9
    assert any("QLoRA NF4" in a and "2305.14314" in a for a in e["assumptions"])
    assert any("4*N*D" in a for a in e["assumptions"])


def test_lora_on_a_hf_config_model():
    m = load_model(str(HF_FIXTURES / "Mixtral-8x7B-v0.1"))
    s = min_gpus_per_replica(lora(m, precision="int4"), A100)
    assert s is not None and s.gpus_per_replica == 1  # 46.7e9 x ~0.52 B ~ 22.5 GiB + adapters + activations
    assert train_flops(lora(m)) == 4 * 12_879_925_248 * 1e9


# ------------------------------------------------------------------------------------------------ validation


@pytest.mark.parametrize("rank", [0, -1, 4097, True, 16.0, "16"])
def test_bad_lora_rank(rank):
    with pytest.raises(InputError) as e:
        validate_workload(lora(lora_rank=rank))
    assert e.value.field == "lora_rank" and e.value.accepted.startswith("1..4096")


def test_rank_bounds_accepted():
    validate_workload(lora(lora_rank=1))
    validate_workload(lora(lora_rank=4096))


@pytest.mark.parametrize("targets", [("qkv",), ("q", "q"), (), "q", ("q", 3), ["q", "lm_head"]])
def test_bad_lora_targets_list_the_accepted_ones(targets):
    with pytest.raises(InputError) as e:
        validate_workload(lora(lora_targets=targets))
    assert e.value.field == "lora_targets"
    assert e.value.accepted.startswith("q, k, v, o, gate, up, down")


def test_lora_targets_list_and_case_accepted():
    validate_workload(lora(lora_targets=["Q_PROJ", "v"]))
    assert size_replica(lora(lora_targets=["Q_PROJ", "v"]), A100, 1).fits


def test_lora_precision_and_tokens():
    with pytest.raises(InputError) as e:
        validate_workload(lora(precision="fp32"))
    assert e.value.field == "precision" and e.value.accepted == "bf16, fp16, int8, int4"
    with pytest.raises(InputError) as e:
        validate_workload(Workload(task="lora", model=LLAMA7))
    assert e.value.field == "tokens"
    # full fine-tuning still refuses a quantized base
    with pytest.raises(InputError) as e:
        validate_workload(Workload(task="finetune", model=LLAMA7, tokens=1e9, precision="int4"))
    assert e.value.accepted == "bf16, fp16, fp8"


def test_lora_fields_ignored_by_other_tasks():
    for task, kw in (("serve", {}), ("train", {"tokens": 1e9}), ("finetune", {"tokens": 1e9})):
        plain = Workload(task=task, model=LLAMA7, **kw)
        odd = Workload(task=task, model=LLAMA7, lora_rank=0, lora_targets=("bogus",), **kw)
        validate_workload(odd)
        assert size_replica(odd, A100, 2) == size_replica(plain, A100, 2)


# ------------------------------------------------------------------------------------------------ properties

_COUNTS = [1, 2, 4, 8, 16, 24, 32, 64]


@settings(max_examples=60, deadline=None)
@given(
    model=st.sampled_from(known_models()),
    gpu=st.sampled_from(known_gpus()),
    pair=st.lists(st.sampled_from(_COUNTS), min_size=2, max_size=2, unique=True).map(sorted),
    precision=st.sampled_from(["bf16", "int8", "int4"]),
    stage=st.sampled_from([0, 1, 2, 3]),
    rank=st.sampled_from([1, 8, 16, 64, 256]),
    context=st.integers(1, 2048),
)
def test_lora_memory_per_gpu_non_increasing_in_gpus(model, gpu, pair, precision, stage, rank, context):
    w = Workload(task="lora", model=load_model(model), tokens=1e9, precision=precision, zero_stage=stage,
                 lora_rank=rank, context_tokens=context)
    g = load_gpu(gpu)
    small, big = (size_replica(w, g, n) for n in pair)
    assert big.memory_gib_per_gpu <= small.memory_gib_per_gpu * (1 + 1e-12)
