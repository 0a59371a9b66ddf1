"""Tests of optimizer.sizing.specs: the GPU spec table, the model table and the --params shape estimate."""

from __future__ import annotations

import csv
import json
import dataclasses
import math
from pathlib import Path

import pytest

from gpuopt.kernel.errors import InputError
from gpuopt.kernel.records import CANONICAL_GPUS
from optimizer.sizing import specs
from optimizer.sizing.specs import (
    ModelSpec,
    known_gpus,
    known_models,
    load_gpu,
    load_model,
    model_from_params,
)

DATA = Path(specs.__file__).parent.parent / "data"  # optimizer/data
GIB = 2**30


def _rows(name: str) -> list[dict[str, str]]:
    with open(DATA / name, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


# ------------------------------------------------------------------------------------------------ GPUs


def test_every_canonical_gpu_with_a_row_is_known():
    """CANONICAL_GPUS names a spec row for every sizable GPU; each such row must exist and parse."""
    rows = {r["name"] for r in _rows("gpu_specs.csv")}
    expected = [c for c, row in CANONICAL_GPUS.items() if row is not None]
    assert all(CANONICAL_GPUS[c] in rows for c in expected)
    assert known_gpus() == expected


def test_a100_80gb_datasheet_values():
    # NVIDIA A100 datasheet (nvidia-a100-datasheet-us-nvidia-1758950-r4-web.pdf): 80 GB HBM2e, 2039 GB/s,
    # BF16 312 TFLOPS dense, INT8 624 TOPS dense, no FP8, NVLink 600 GB/s (bidirectional).
    g = load_gpu("A100-80GB")
    assert (g.name, g.spec_row) == ("A100-80GB", "A100 80GB SXM4")
    assert g.memory_gib == 80.0
    assert g.memory_bandwidth_gbps == 2039.0
    assert g.fp16_tflops_dense == 312.0
    assert g.fp32_tflops == 19.5
    assert g.fp8_tflops_dense is None
    assert g.int8_tops_dense == 624.0
    assert (g.interconnect, g.gpu_class) == ("nvlink", "datacenter_nvlink")
    assert g.interconnect_gbps_per_gpu == 600.0
    assert g.link_gbps_one_way == 300.0  # FORMULAS.md §9: A100 600 GB/s = 300 each way
    assert "datasheet" in g.source


def test_h100_alias_and_dense_numbers():
    # H100 SXM datasheet lists sparse numbers; the table stores dense = sparse / 2 (BF16 989.5, FP8 1979).
    g = load_gpu("H100")
    assert g.name == "H100-80GB"
    assert g.fp16_tflops_dense == 989.5
    assert g.fp8_tflops_dense == 1979.0
    assert g.memory_bandwidth_gbps == 3350.0


@pytest.mark.parametrize(
    "text, canonical",
    [
        ("a100-80gb", "A100-80GB"),
        ("A100 80GB", "A100-80GB"),
        ("A100_80GB", "A100-80GB"),
        ("A100-80G", "A100-80GB"),
        ("A100 80GB SXM4", "A100-80GB"),  # the spec row's own name
        ("h100-80gb", "H100-80GB"),
        ("H200", "H200-141GB"),
        ("H100 NVL", "H100-NVL-94GB"),
        ("NVIDIA L4", "L4"),
        ("rtx 4090", "RTX-4090"),
        ("GeForce RTX 4090", "RTX-4090"),
        ("t4", "T4"),
        ("Gaudi 2", "Gaudi2"),
        ("mi300x", "MI300X"),
    ],
)
def test_load_gpu_accepts_spellings(text, canonical):
    assert load_gpu(text).name == canonical


@pytest.mark.parametrize(
    "name, interconnect, gpu_class",
    [
        ("V100-16GB", "nvlink", "datacenter_nvlink"),  # SXM2, NVLink 2.0
        ("T4", "pcie", "datacenter_pcie"),
        ("A10G", "pcie", "datacenter_pcie"),  # "PCIe Gen4 x16 (AWS G5; no NVLink)"
        ("L40S", "pcie", "datacenter_pcie"),  # "(no NVLink)"
        ("H100-NVL-94GB", "pcie", "datacenter_pcie"),  # NVLink only as a 2-GPU bridge
        ("B200", "nvlink", "datacenter_nvlink"),
        ("MI300X", "nvlink", "datacenter_nvlink"),  # Infinity Fabric
        ("Gaudi2", "nvlink", "datacenter_nvlink"),  # OAM, on-chip RoCE all-to-all
        ("RTX-4090", "pcie", "consumer"),
        ("RTX-3090", "pcie", "consumer"),  # NVLink bridge (2 GPUs) only
    ],
)
def test_interconnect_and_class(name, interconnect, gpu_class):
    g = load_gpu(name)
    assert (g.interconnect, g.gpu_class) == (interconnect, gpu_class)


def test_link_bandwidth_exceptions():
    # Gaudi 2's table figure is already per direction (the row's note: 2400 Gb/s / 8 per direction).
    assert load_gpu("Gaudi2").link_gbps_one_way == 300.0
    # Bridged PCIe cards use their PCIe figure: RTX 3090 PCIe Gen4 64 GB/s, H100 NVL PCIe Gen5 128 GB/s.
    assert load_gpu("RTX-3090").link_gbps_one_way == 32.0
    assert load_gpu("H100-NVL-94GB").link_gbps_one_way == 64.0
    assert load_gpu("L4").link_gbps_one_way == 32.0


def test_ambiguous_gpu_lists_the_choices():
    with pytest.raises(InputError) as e:
        load_gpu("A100")
    assert e.value.field == "gpu"
    assert e.value.accepted == "A100-40GB, A100-80GB"
    with pytest.raises(InputError) as e:
        load_gpu("v100")
    assert "V100-16GB" in e.value.accepted and "V100-32GB" in e.value.accepted


def test_unknown_gpu_lists_known_gpus():
    with pytest.raises(InputError) as e:
        load_gpu("Z9000")
    assert e.value.field == "gpu"
    assert "unknown GPU 'Z9000'" in str(e.value)
    assert e.value.accepted.split(", ") == known_gpus()


@pytest.mark.parametrize("name", ["K80", "A6000", "M60", "p100"])
def test_priced_gpu_without_datasheet_row_is_an_input_error(name):
    with pytest.raises(InputError) as e:
        load_gpu(name)
    assert e.value.field == "gpu"
    assert "no datasheet row" in str(e.value)


def test_gpu_spec_is_frozen():
    with pytest.raises(dataclasses.FrozenInstanceError):
        load_gpu("T4").memory_gib = 99


# ------------------------------------------------------------------------------------------------ models


def test_known_models_follow_the_table():
    assert known_models() == [r["model"] for r in _rows("model_configs.csv")]


@pytest.mark.parametrize(
    "text", ["Llama-2-70B", "llama-2-70b", "meta-llama/Llama-2-70b-hf", "META-LLAMA/LLAMA-2-70B-HF", "Llama-2-70b-hf"]
)
def test_load_model_by_name_or_repo(text):
    assert load_model(text).name == "Llama-2-70B"


def test_llama2_70b_config():
    # HF config.json via litgpt 0.5.13: h 8192, L 80, 64 heads, 8 KV heads (GQA), I 28672, V 32000, ctx 4096.
    m = load_model("Llama-2-70B")
    assert (m.hidden_size, m.layers, m.heads, m.kv_heads, m.head_dim) == (8192, 80, 64, 8, 128)
    assert (m.intermediate_size, m.vocab_size, m.max_context) == (28672, 32000, 4096)
    assert m.params_total == m.params_active == 68_976_648_192
    assert not m.is_moe and not m.estimated


def test_param_counts_match_published():
    # FORMULAS.md §10: Llama-2-7B 6,738,415,616; Mixtral 46,702,792,704 total / 12,879,925,248 active
    # (HF card: 46.7B total / 12.9B active).
    assert load_model("Llama-2-7B").params_total == 6_738_415_616
    mix = load_model("mistralai/Mixtral-8x7B-v0.1")
    assert mix.is_moe
    assert mix.params_total == 46_702_792_704
    assert mix.params_active == 12_879_925_248


def test_falcon_without_intermediate_size_uses_4h():
    # model_configs.csv note: Falcon-40B has no intermediate_size; its GELU MLP is 4h = 32768.
    assert load_model("Falcon-40B").intermediate_size == 4 * 8192


def test_kv_bytes_per_token_matches_the_tables_derived_column():
    for row in _rows("model_configs.csv"):
        m = load_model(row["model"])
        assert m.kv_bytes_per_token_fp16 == int(row["derived_kv_cache_bytes_per_token_fp16"]), m.name
    # FORMULAS.md §6 examples: Llama-2-70B 327,680 B; Llama-2-13B 819,200 B; Falcon-40B 122,880 B.
    assert load_model("Llama-2-70B").kv_bytes_per_token_fp16 == 327_680
    assert load_model("Llama-2-13B").kv_bytes_per_token_fp16 == 819_200
    assert load_model("Falcon-40B").kv_bytes_per_token_fp16 == 122_880


def test_kv_cache_matches_hf_llama31_blog():
    # HF "Llama 3.1" blog, KV cache in FP16 (its "GB" are GiB; "1k" = 1024, "16k" = 16,000, "128k" = 128,000
    # tokens -- checked against its own numbers): 8B 0.125 / 1.95 / 15.62 and 70B 0.313 / 4.88 / 39.06.
    # Llama 3.1 8B/70B have the Llama 3 shapes (same L, kv heads, head_dim).
    for name, expected in (("Llama-3-8B", (0.125, 1.95, 15.62)), ("Llama-3-70B", (0.313, 4.88, 39.06))):
        per_token = load_model(name).kv_bytes_per_token_fp16
        got = [per_token * t / GIB for t in (1024, 16_000, 128_000)]
        assert got == pytest.approx(expected, abs=0.006), name


def test_vllm_paper_opt13b_kv_via_custom_model_spec():
    # vLLM paper (Kwon et al. 2023, arXiv 2309.06180, §3): OPT-13B 2 x 5120 x 40 x 2 B = 800 KB per token,
    # "up to 1.6 GB" for a 2048-token request (both binary units).
    opt13b = ModelSpec(
        name="OPT-13B", hf_repo="facebook/opt-13b", params_total=13e9, params_active=13e9, layers=40,
        hidden_size=5120, heads=40, kv_heads=40, head_dim=128, intermediate_size=20480, vocab_size=50272,
        max_context=2048,
    )
    assert opt13b.kv_bytes_per_token_fp16 == 800 * 1024
    assert opt13b.kv_bytes_per_token_fp16 * 2048 / GIB == pytest.approx(1.5625)


def test_unknown_model_points_to_params():
    with pytest.raises(InputError) as e:
        load_model("gpt-5")
    assert e.value.field == "model"
    assert "--params" in str(e.value)
    assert e.value.accepted.split(", ") == known_models()


# ------------------------------------------------------------------------------------------------ --params


def test_model_from_params_reproduces_known_shapes():
    # h = 128 L and 12 L h^2 + 2 V h: Llama-2-7B's 6.74e9 -> L 32, h 4096; GPT-3's 175e9 -> L 96, h 12288
    # (Brown et al. 2020, Table 2.1: 96 layers, d_model 12288, 96 heads of 128).
    m7 = model_from_params(6.738e9)
    assert (m7.layers, m7.hidden_size, m7.heads, m7.head_dim) == (32, 4096, 32, 128)
    m175 = model_from_params(175e9)
    assert (m175.layers, m175.hidden_size, m175.heads) == (96, 12288, 96)


def test_model_from_params_is_marked_and_keeps_the_count():
    m = model_from_params(7.5e9)
    assert m.estimated and not m.is_moe
    assert m.params_total == m.params_active == 7.5e9
    assert m.kv_heads == m.heads  # multi-head attention: the conservative KV cache
    assert m.intermediate_size % 256 == 0 and m.intermediate_size >= 8 * m.hidden_size / 3
    assert m.max_context == 131072
    assert m.name == "~7.5B (estimated)"
    assert model_from_params(3e9, name="my-3b").name == "my-3b"


def test_model_from_params_tiny_model_has_one_layer():
    m = model_from_params(1e6)
    assert m.layers == 1 and m.hidden_size == 128


@pytest.mark.parametrize("bad", [0, -7e9, math.nan, math.inf, "seven"])
def test_model_from_params_rejects_bad_counts(bad):
    with pytest.raises(InputError) as e:
        model_from_params(bad)
    assert e.value.field == "params"


# ------------------------------------------------------------------------------------------------ HF config.json

HF_FIXTURES = Path(__file__).parent / "fixtures" / "hf_configs"


@pytest.mark.parametrize(
    "folder, table_name",
    [
        ("Llama-2-7b-hf", "Llama-2-7B"),
        ("Llama-2-70b-hf", "Llama-2-70B"),
        ("Mistral-7B-v0.1", "Mistral-7B-v0.1"),
        ("Mixtral-8x7B-v0.1", "Mixtral-8x7B-v0.1"),
        ("Qwen2-72B", "Qwen2-72B"),
        ("falcon-40b", "Falcon-40B"),
    ],
)
def test_hf_config_matches_model_configs_csv(folder, table_name):
    # fixtures: the csv's values under the HF key names (tests/fixtures/hf_configs/README.md); the counts must
    # equal the csv's derived_params_total / derived_params_active and KV bytes/token exactly (FORMULAS.md §10, §6).
    row = next(r for r in _rows("model_configs.csv") if r["model"] == table_name)
    m = specs.model_from_hf_config(HF_FIXTURES / folder / "config.json")
    assert m.params_total == int(row["derived_params_total"])
    assert m.params_active == int(row["derived_params_active"])
    assert m.kv_bytes_per_token_fp16 == int(row["derived_kv_cache_bytes_per_token_fp16"])
    assert (m.hidden_size, m.layers, m.heads, m.kv_heads, m.head_dim, m.vocab_size, m.max_context) == tuple(
        int(row[c]) for c in ("hidden_size", "num_hidden_layers", "num_attention_heads", "num_key_value_heads",
                              "head_dim", "vocab_size", "max_position_embeddings"))
    assert m.hf_repo == row["hf_repo"] and m.name == folder and not m.estimated
    # every architecture field agrees with the table's own ModelSpec
    t = load_model(table_name)
    for f in ("params_total", "params_active", "layers", "hidden_size", "heads", "kv_heads", "head_dim",
              "intermediate_size", "vocab_size", "max_context", "is_moe", "experts", "experts_per_token",
              "gated_mlp", "tied_embeddings"):
        assert getattr(m, f) == getattr(t, f), f


def test_hf_config_published_checks():
    # FORMULAS.md §10 and the brief: Llama-2-7B 6,738,415,616; Mixtral 46,702,792,704 / 12,879,925,248;
    # Qwen2-72B 72,706,203,648 (q/k/v biases); Falcon-40B 41,303,293,952 with tied embeddings.
    load = lambda f: specs.model_from_hf_config(HF_FIXTURES / f)  # noqa: E731
    assert load("Llama-2-7b-hf").params_total == 6_738_415_616
    mix = load("Mixtral-8x7B-v0.1")
    assert (mix.params_total, mix.params_active) == (46_702_792_704, 12_879_925_248)
    assert mix.is_moe and (mix.experts, mix.experts_per_token) == (8, 2)
    assert load("Qwen2-72B").params_total == 72_706_203_648
    falcon = load("falcon-40b")
    assert falcon.params_total == 41_303_293_952 and falcon.tied_embeddings and not falcon.gated_mlp
    assert falcon.max_context == 2048  # FalconConfig default; the config has no max_position_embeddings
    assert falcon.kv_bytes_per_token_fp16 == 122_880  # FORMULAS.md §6


def test_hf_config_qwen2_biases_and_untied_falcon():
    cfg = json.loads((HF_FIXTURES / "Qwen2-72B" / "config.json").read_text())
    # the same shape as model_type llama has no biases: 80 x (8192 + 2 x 1024) fewer parameters
    as_llama = specs.model_from_hf_config({**cfg, "model_type": "llama"})
    assert 72_706_203_648 - as_llama.params_total == 80 * (8192 + 2 * 1024)
    # model_configs.csv note: untied Falcon-40B would be 41,835,970,560
    cfg = json.loads((HF_FIXTURES / "falcon-40b" / "config.json").read_text())
    assert specs.model_from_hf_config({**cfg, "tie_word_embeddings": False}).params_total == 41_835_970_560


def test_hf_config_falcon_refinedweb_names():
    # the pre-transformers tiiuae/falcon-40b config (model_type RefinedWeb, n_head/n_head_kv/n_layer) counts the same
    rw = {"model_type": "RefinedWeb", "hidden_size": 8192, "n_head": 128, "n_head_kv": 8, "n_layer": 60,
          "parallel_attn": True, "bias": False, "vocab_size": 65024}
    m = specs.model_from_hf_config(rw, name="falcon-40b-rw")
    assert (m.params_total, m.kv_heads, m.head_dim, m.name) == (41_303_293_952, 8, 64, "falcon-40b-rw")
    # Falcon-7B (RefinedWebModel / falcon without new_decoder_architecture): multi-query, one KV head
    f7 = {"model_type": "falcon", "hidden_size": 4544, "num_attention_heads": 71, "num_hidden_layers": 32,
          "vocab_size": 65024, "parallel_attn": True, "bias": False}
    m7 = specs.model_from_hf_config(f7)
    assert m7.kv_heads == 1 and m7.kv_bytes_per_token_fp16 == 2 * 32 * 1 * 64 * 2
    assert specs.model_from_hf_config({**f7, "multi_query": False}).kv_heads == 71
    assert specs.model_from_hf_config({**f7, "model_type": "RefinedWebModel", "multi_query": True}).kv_heads == 1


def test_hf_config_gpt_neox_20b():
    # EleutherAI/gpt-neox-20b: 44 layers, h 6144, 64 heads, I 24576, V 50432, ctx 2048; HF model card
    # 20,554,567,680 parameters.
    cfg = {"model_type": "gpt_neox", "hidden_size": 6144, "num_hidden_layers": 44, "num_attention_heads": 64,
           "intermediate_size": 24576, "vocab_size": 50432, "max_position_embeddings": 2048}
    m = specs.model_from_hf_config(cfg)
    assert m.params_total == 20_554_567_680
    assert not m.gated_mlp and not m.tied_embeddings and m.kv_heads == 64


def test_hf_config_explicit_head_dim_sliding_window_and_generic():
    base = json.loads((HF_FIXTURES / "Mistral-7B-v0.1" / "config.json").read_text())
    m = specs.model_from_hf_config(base)
    assert m.sliding_window == 4096
    assert specs.model_from_hf_config({**base, "use_sliding_window": False}).sliding_window is None
    # explicit head_dim wins over hidden/heads (Gemma-style 256 with h 4096, 32 heads)
    m = specs.model_from_hf_config({**base, "head_dim": 256})
    assert m.head_dim == 256 and m.kv_bytes_per_token_fp16 == 2 * 32 * 8 * 256 * 2
    # an unknown model_type is counted Llama-style and says so
    m = specs.model_from_hf_config({**base, "model_type": "mystery"})
    assert m.params_total == 7_241_732_096 and "counted as Llama-style" in m.source


def test_load_model_reads_a_config_path_or_folder(tmp_path):
    folder = HF_FIXTURES / "Llama-2-70b-hf"
    for arg in (folder, str(folder), str(folder / "config.json")):
        m = load_model(arg)
        assert m.params_total == 68_976_648_192 and "HF config.json" in m.source
    # a folder without config.json is a model name, not a path
    with pytest.raises(InputError) as e:
        load_model(str(tmp_path))
    assert "--params" in str(e.value)


@pytest.mark.parametrize("drop", ["hidden_size", "num_hidden_layers", "num_attention_heads", "vocab_size",
                                  "intermediate_size", "max_position_embeddings"])
def test_hf_config_missing_field_is_named(tmp_path, drop):
    cfg = json.loads((HF_FIXTURES / "Llama-2-7b-hf" / "config.json").read_text())
    del cfg[drop]
    f = tmp_path / "config.json"
    f.write_text(json.dumps(cfg))
    with pytest.raises(InputError) as e:
        specs.model_from_hf_config(f)
    assert e.value.field == "model"
    assert repr(drop) in str(e.value) and str(f) in str(e.value)
    with pytest.raises(InputError) as e:
        load_model(str(tmp_path))  # the folder path goes through the same reader
    assert repr(drop) in str(e.value)


@pytest.mark.parametrize(
    "patch, text",
    [
        ({"hidden_size": 0}, "'hidden_size' must be a whole number > 0"),
        ({"num_hidden_layers": 31.5}, "'num_hidden_layers' must be a whole number > 0"),
        ({"vocab_size": "32000"}, "'vocab_size' must be a whole number > 0"),
        ({"num_key_value_heads": 5}, "not a multiple of the 5 KV heads"),
        ({"hidden_size": 4100}, "not a multiple of num_attention_heads"),
        ({"tie_word_embeddings": "no"}, "'tie_word_embeddings' must be true or false"),
        ({"num_local_experts": 8}, "lacks the field 'num_experts_per_tok'"),
        ({"num_local_experts": 8, "num_experts_per_tok": 9}, "num_experts_per_tok 9 > num_local_experts 8"),
        ({"num_experts": 64, "moe_intermediate_size": 1408}, "MoE layout with num_experts, moe_intermediate_size"),
    ],
)
def test_hf_config_bad_values(patch, text):
    cfg = json.loads((HF_FIXTURES / "Llama-2-7b-hf" / "config.json").read_text())
    with pytest.raises(InputError) as e:
        specs.model_from_hf_config({**cfg, **patch})
    assert e.value.field == "model" and text in str(e.value), str(e.value)


def test_hf_config_bad_files(tmp_path):
    with pytest.raises(InputError) as e:
        specs.model_from_hf_config(tmp_path / "nope.json")
    assert e.value.field == "model" and "no config.json" in str(e.value)
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(InputError) as e:
        specs.model_from_hf_config(bad)
    assert "not valid JSON" in str(e.value)
    bad.write_text("[1, 2]")
    with pytest.raises(InputError) as e:
        specs.model_from_hf_config(bad)
    assert "JSON object" in str(e.value)


def test_table_models_carry_moe_and_mlp_facts():
    mix = load_model("Mixtral-8x7B-v0.1")
    assert (mix.experts, mix.experts_per_token, mix.gated_mlp) == (8, 2, True)
    llama = load_model("Llama-2-7B")
    assert (llama.experts, llama.experts_per_token, llama.gated_mlp, llama.tied_embeddings) == (1, 1, True, False)
    falcon = load_model("Falcon-40B")
    assert (falcon.gated_mlp, falcon.tied_embeddings) == (False, True)


def test_the_model_table_has_the_models_users_serve_as_their_configs_give():
    # issue 10: Llama 3.1/3.3, Qwen 2.5/3, Gemma, Mixtral 8x22B, gpt-oss ... from shared/data/reference/
    # model_configs_more.csv (each value from a config.json copy named in its SOURCES file); the derived parameter
    # counts and KV bytes per token are the reference file's, recomputed here from the loaded shapes
    import csv
    from pathlib import Path

    from optimizer.sizing.specs import load_model

    ref = Path(__file__).resolve().parents[2] / "shared" / "data" / "reference" / "model_configs_more.csv"
    table = Path(__file__).resolve().parents[1] / "optimizer" / "data" / "model_configs.csv"
    rows = {r["model"]: r for r in csv.DictReader(open(table, encoding="utf-8"))}
    for name in ("Llama-3.1-8B", "Llama-3.1-70B", "Llama-3.3-70B", "Qwen2.5-7B", "Qwen2.5-72B", "Qwen3-32B",
                 "Gemma-2-27B", "Gemma-3-27B", "Mixtral-8x22B-v0.1", "gpt-oss-20b", "gpt-oss-120b", "Phi-4"):
        r = rows[name]
        m = load_model(r["hf_repo"])
        assert m.params_total == float(r["derived_params_total"]) and m.params_active == float(r["derived_params_active"])
        assert m.kv_bytes_per_token_fp16 == int(r["derived_kv_cache_bytes_per_token_fp16"])
    # Llama-3.1-70B: 70,553,706,496 parameters, 327,680 KV bytes per token (80 layers x 8 KV heads x 128 x 2 x 2)
    assert load_model("meta-llama/Meta-Llama-3.1-70B").params_total == 70_553_706_496
    assert load_model("Llama-3.1-70B").kv_bytes_per_token_fp16 == 80 * 8 * 128 * 2 * 2
    # MoE: Mixtral 8x22B 140.6 B total, 39.2 B active (2 of 8 experts)
    mx = load_model("Mixtral-8x22B-v0.1")
    assert (mx.params_total, mx.params_active) == (140_630_071_296, 39_161_468_928)
    if ref.exists():  # the shared data this table was copied from (absent on a machine without it)
        src = {r["model"]: r for r in csv.DictReader(open(ref, encoding="utf-8"))}
        for name, r in rows.items():
            if name in src:
                assert r["derived_params_total"] == src[name]["derived_params_total"], name


# the GPUs of 2026 (issue 27 point 4): each row's figures as its sources give them
# (optimizer/data/gpu_specs_2026_SOURCES.md quotes each one; "stas00" = stas00/ml-engineering @744d01e,
# compute/accelerator/README.md, dense TFLOPS "w/o sparsity")
@pytest.mark.parametrize("name, mem, bw, bf16, fp8, link_one_way, gen", [
    # stas00: "NVIDIA GH200 SXM | 67.0 | 494.5 | 989 | 989 | 1979"; memory "GH200 SXM (1) | 96 | HBM3 | 4.00";
    # NVLink 4 "900" duplex (network/README.md); NVIDIA MIG user guide "H100 on GH200 ... 96GB"
    ("GH200", 96.0, 4000.0, 989.0, 1979.0, 450.0, "hopper"),
    # the 144 GB HBM3e GH200: 4.9 TB/s (feifeibear/LLMRoofline hardware_dict.py @2830413 'GH200-new' bwd 4.9)
    ("GH200-144GB", 144.0, 4900.0, 989.0, 1979.0, 450.0, "hopper"),
    # stas00 "NVIDIA GB200 SXM | 80.0 | 1250.0 | 2500 | 2500 | 5000"; memory "186 | HBM3e | 8.00"; NVLink 5 1800
    # duplex; NVIDIA MIG user guide "GB200 | Blackwell | GB100 | 10.0 | 186GB"
    ("GB200", 186.0, 8000.0, 2500.0, 5000.0, 900.0, "blackwell"),
    # stas00 "NVIDIA B300 SXM | 80.0 | 1125.0 | 2250 | 2250 | 4500"; memory "288 | HBM3e | 8.00"
    ("B300", 288.0, 8000.0, 2250.0, 4500.0, 900.0, "blackwell"),
    # stas00 "NVIDIA GB300 SXM | 80.0 | 1250.0 | 2500 | 2500 | 5000"
    ("GB300", 288.0, 8000.0, 2500.0, 5000.0, 900.0, "blackwell"),
    # no NVIDIA datasheet: FP16 dense 148, 4.0 TB/s (zangshuxian.com), 96 GB HBM3 (NVIDIA MIG user guide "H20 ...
    # 96GB"), NVLink 900 GB/s (willitrunai.com): the row says it is uncertain
    ("H20", 96.0, 4000.0, 148.0, 296.0, 450.0, "hopper"),
    # stas00 "AMD MI325X | 163.4 | 653.7 | 1300 | 1300 | 2610"; memory "256 | HBM3e | 6.00"; network "MI325X | 64 | 7
    # | 448 | 896"
    ("MI325X", 256.0, 6000.0, 1307.4, 2614.9, 448.0, "other"),
    # stas00 "AMD MI355X | 157.3 | ? | 2500 | 2500 | 5000"; memory "288 | HBM3e | 8.00"; network "MI355X | ... | 1071"
    ("MI355X", 288.0, 8000.0, 2500.0, 5000.0, 535.5, "other"),
])
def test_2026_gpus_datasheet_values(name, mem, bw, bf16, fp8, link_one_way, gen):
    from optimizer.sizing.serving import gpu_generation

    g = load_gpu(name)
    assert (g.name, g.memory_gib, g.memory_bandwidth_gbps) == (name, mem, bw)
    assert (g.fp16_tflops_dense, g.fp8_tflops_dense) == (bf16, fp8)
    assert (g.interconnect, g.link_gbps_one_way, gpu_generation(g)) == ("nvlink", link_one_way, gen)
    assert g.source


def test_uncertain_2026_figures_are_left_empty_not_guessed():
    # B300/GB300 INT8: the sources disagree (4,500 vs ~150-320 TOPS after Blackwell Ultra cut INT8): no value;
    # MI355X TF32: no source gives one
    rows = {r["name"]: r for r in _rows("gpu_specs.csv")}
    assert load_gpu("B300").int8_tops_dense is None and load_gpu("GB300").int8_tops_dense is None
    assert rows[CANONICAL_GPUS["MI355X"]]["tf32_tensor_tflops_dense"] == ""
    assert "No public NVIDIA datasheet" in rows[CANONICAL_GPUS["H20"]]["source"]
    assert load_gpu("H100 NVL 96GB").name == "H100-NVL-94GB"  # 96 GB on the board, 94 usable


def test_an_infeasible_plan_suggests_only_gpus_someone_sells():
    """A fresh user's find: with the 2026 datasheet rows, "it would fit on 1.0 x B300, 1.0 x GB300, 1.0 x MI355X"
    named GPUs no provider in the price data sells. Llama-3.1-70B bf16 (about 134 GiB a replica) on --gpu GH200
    (96 GB, single-GPU instances without a fabric): the GPUs suggested are offered ones, counts without '.0'. Since
    issue 31 the reason is the layout rule (a replica spans instances only node by node over a cluster fabric), with
    the GPUs one node of which would hold it."""
    import json as _json

    from typer.testing import CliRunner

    from gpuopt.cli import app
    from pricing_cache.store import load_offers

    offers, _ = load_offers()
    sold = set(offers["gpu_model"].astype(str))
    r = CliRunner().invoke(app, ["recommend", "--model", "meta-llama/Llama-3.1-70B-Instruct", "--tokens-per-second",
                                 "2000", "--gpu", "GH200", "--no-explain", "--format", "json"])
    assert r.exit_code == 1
    d = _json.loads(r.stdout)
    reason = d.get("reason") or d.get("error") or {}
    fits = reason.get("gpus_that_fit") or []
    assert fits and {f["gpu_model"] for f in fits} <= sold
    assert not {"B300", "GB300", "MI355X", "MI325X"} & {f["gpu_model"] for f in fits}
    assert "1 x GB200" in reason["message"] and "1.0 x" not in reason["message"]
