"""GPU datasheet specs and model architectures: the two reference tables sizing reads.

Tables (shipped in ``optimizer/data``, copied unchanged from ``shared/data/reference``):

* ``gpu_specs.csv`` -- one row per GPU board, from vendor datasheets (each row cites its source).
* ``model_configs.csv`` -- one row per model, from the model's HF ``config.json`` (via litgpt 0.5.13) with the
  parameter counts and KV-cache bytes per token derived from the config (FORMULAS.md section 10 and 6).

Both are read with the ``csv`` module on first use and cached (no pandas, no work at import time: this module is
imported by every ``gpuopt`` command). A malformed row is skipped and logged with its line number, never guessed.

Units: memory in GiB (2**30 bytes), bandwidth in GB/s (10**9 bytes/s), compute in TFLOP/s (10**12 FLOP/s) dense.
"""

from __future__ import annotations

import csv
import io
import logging
import dataclasses
import math
import re
from dataclasses import dataclass, replace, field
from functools import lru_cache
from importlib import resources
from pathlib import Path

from gpuopt.kernel.errors import GpuoptError, InputError
from gpuopt.kernel.records import CANONICAL_GPUS

log = logging.getLogger(__name__)

#: Columns of ``gpu_specs.csv`` this module reads (the file has more: notes, corpus checks...).
GPU_SPEC_COLUMNS: tuple[str, ...] = (
    "name",
    "form_factor",
    "memory_gb",
    "memory_bandwidth_gbps",
    "fp32_tflops",
    "fp16_bf16_tensor_tflops_dense",
    "fp8_tensor_tflops_dense",
    "int8_tensor_tops_dense",
    "interconnect",
    "interconnect_gbps_per_gpu",
    "source",
)

#: Columns of ``model_configs.csv`` this module reads.
MODEL_CONFIG_COLUMNS: tuple[str, ...] = (
    "model",
    "hf_repo",
    "hidden_size",
    "num_hidden_layers",
    "num_attention_heads",
    "num_key_value_heads",
    "head_dim",
    "intermediate_size",
    "vocab_size",
    "max_position_embeddings",
    "num_local_experts",
    "num_experts_per_tok",
    "model_type",
    "tie_word_embeddings",
    "derived_params_total",
    "derived_params_active",
    "derived_kv_cache_bytes_per_token_fp16",
    "config_source",
)

GPU_CLASSES = ("datacenter_nvlink", "datacenter_pcie", "consumer")

#: Short names people type, mapped to the canonical name (normalized key -> canonical). Normalization drops
#: case, spaces, ``-`` and ``_`` and a leading ``NVIDIA``/``GEFORCE``, so "a100-80gb", "A100 80GB" and
#: "A100_80GB" already match ``A100-80GB`` without an alias.
_ALIASES: dict[str, str] = {
    "H100": "H100-80GB",
    "H100SXM": "H100-80GB",
    "H100SXM5": "H100-80GB",
    "H100NVL": "H100-NVL-94GB",
    "H100NVL96GB": "H100-NVL-94GB",  # 96 GB of HBM3 on the board, 94 GB usable (NVIDIA H100 NVL product brief)
    "H200": "H200-141GB",
    "H200SXM": "H200-141GB",
    "RTX4090": "RTX-4090",
    "4090": "RTX-4090",
    "RTX3090": "RTX-3090",
    "3090": "RTX-3090",
    "GAUDI": "Gaudi2",
    "MI300": "MI300X",
}

#: Short names that cover more than one canonical GPU: the user must say which.
_AMBIGUOUS: dict[str, tuple[str, ...]] = {
    "A100": ("A100-40GB", "A100-80GB"),
    "V100": ("V100-16GB", "V100-32GB"),
}

#: HF ``model_type`` values whose MLP is 2-matrix GELU (``h -> I -> h``), not gated SwiGLU: Falcon
#: (``falcon``; the pre-transformers ``RefinedWeb`` 40B and ``RefinedWebModel`` 7B configs) and GPT-NeoX.
_UNGATED_MODEL_TYPES = frozenset({"falcon", "RefinedWeb", "RefinedWebModel", "gpt_neox"})

#: Rows whose ``interconnect_gbps_per_gpu`` is already per direction (the table's own note on the Gaudi 2 row:
#: "2400 Gb/s / 8 per direction"). Every other row gives the bidirectional total per GPU.
_PER_DIRECTION_ROWS = frozenset({"Gaudi 2"})


@dataclass(frozen=True)
class GpuSpec:
    """Datasheet facts about one GPU model, as sizing uses them.

    Attributes:
        name: canonical GPU name (the offers' ``gpu_model``), e.g. ``"A100-80GB"``.
        spec_row: the ``name`` of the ``gpu_specs.csv`` row, e.g. ``"A100 80GB SXM4"``.
        memory_gib: memory of one GPU in GiB. Taken from the table's ``memory_gb``: the vendors' "GB" on these
            cards is binary in practice (an A100 80GB reports 81920 MiB = 80 GiB in ``nvidia-smi``; an RTX 4090
            24 GB reports ~24564 MiB). Some of it is reserved (ECC, driver); sizing's usable fraction covers that.
        memory_bandwidth_gbps: peak memory bandwidth, GB/s (10**9 B/s).
        fp16_tflops_dense: peak dense FP16/BF16 tensor throughput, TFLOP/s (FP32 accumulate on GeForce cards).
        fp32_tflops: peak FP32 TFLOP/s (non-tensor), or None if the datasheet gives no single number (Gaudi 2).
        fp8_tflops_dense: peak dense FP8 TFLOP/s, or None when the GPU has no FP8.
        int8_tops_dense: peak dense INT8 TOP/s, or None when not listed.
        interconnect: ``"nvlink"`` for a GPU-to-GPU fabric on the board (SXM/OAM modules: NVLink, Infinity Fabric,
            Gaudi's on-chip RoCE), ``"pcie"`` when GPUs talk over PCIe or only through an optional 2-/4-GPU
            NVLink bridge (A100/H100 PCIe, H100 NVL, RTX 3090).
        interconnect_gbps_per_gpu: GPU-to-GPU bandwidth per GPU as the table gives it, GB/s (bidirectional
            total, except Gaudi 2: per direction).
        gpu_class: ``"datacenter_nvlink"``, ``"datacenter_pcie"`` or ``"consumer"`` (GeForce cards).
        source: the datasheet the row cites.
        link_gbps_one_way: GPU-to-GPU bandwidth per GPU in ONE direction, GB/s, that sizing uses for multi-GPU
            replicas. Default: ``interconnect_gbps_per_gpu / 2`` (NVIDIA figures are bidirectional totals,
            FORMULAS.md section 9: A100 NVLink 600 GB/s = 300 each way; PCIe Gen4 x16 64 GB/s = 32 each way).
            From the table, two exceptions: Gaudi 2's figure is already per direction (the row's own note), and a
            ``pcie`` GPU whose table figure is an NVLink bridge (RTX 3090, H100 NVL) gets its PCIe figure, since
            a bridge joins only 2 (or 4) GPUs.
        architecture: the table's ``architecture`` column, e.g. ``"Hopper (GH100)"`` ("" when absent); the serving
            model reads the GPU generation from it (``optimizer.sizing.serving.gpu_generation``).
    """

    name: str
    spec_row: str
    memory_gib: float
    memory_bandwidth_gbps: float
    fp16_tflops_dense: float
    fp32_tflops: float | None
    fp8_tflops_dense: float | None
    int8_tops_dense: float | None
    interconnect: str
    interconnect_gbps_per_gpu: float
    gpu_class: str
    source: str
    link_gbps_one_way: float | None = None
    architecture: str = ""

    def __post_init__(self) -> None:
        if self.link_gbps_one_way is None:
            object.__setattr__(self, "link_gbps_one_way", self.interconnect_gbps_per_gpu / 2.0)

    @property
    def link_label(self) -> str:
        """The GPU-to-GPU link by its own name for messages: ``interconnect`` ("nvlink" is the class: a fabric
        joining the board's GPUs) except AMD Instinct (Infinity Fabric) and Gaudi (on-chip RoCE)."""
        if self.spec_row.startswith("Instinct"):
            return "Infinity Fabric"
        if self.spec_row.startswith("Gaudi"):
            return "RoCE"
        return self.interconnect


@dataclass(frozen=True)
class ModelSpec:
    """Architecture of one decoder-only transformer, as sizing uses it.

    Attributes:
        name: display name (the table's ``model`` column, e.g. ``"Llama-2-70B"``).
        hf_repo: Hugging Face repository id, or ``""`` for an estimated model.
        params_total: all parameters (every MoE expert), count. Drives weights and optimizer-state memory.
        params_active: parameters used per token (top-k experts for MoE; = total for dense). Drives FLOPs.
        layers, hidden_size, heads, kv_heads, head_dim, intermediate_size, vocab_size: config.json fields
            (``num_hidden_layers``, ``hidden_size``, ``num_attention_heads``, ``num_key_value_heads``, ...).
        max_context: ``max_position_embeddings``, tokens.
        is_moe: mixture-of-experts model.
        estimated: True when the shape was estimated from a parameter count (:func:`model_from_params`).
        source: where the architecture came from.
        sliding_window: ``sliding_window`` of config.json, tokens (Mistral-7B-v0.1: 4096), or None (full attention,
            or a config that sets ``use_sliding_window: false`` as Qwen2 does). Recorded only: sizing does not cap
            the KV cache at the window (conservative, see ``optimizer.sizing.size_replica``).
        experts: MoE experts per layer (``num_local_experts``; 1 for a dense model).
        experts_per_token: experts each token is routed to (``num_experts_per_tok``; 1 for a dense model).
        gated_mlp: True for a gated (SwiGLU) MLP with gate/up/down matrices (Llama, Mistral, Qwen2); False for a
            2-matrix GELU MLP, up ``h -> I`` and down ``I -> h`` (Falcon, GPT-NeoX). Used by LoRA adapter counts.
        tied_embeddings: ``tie_word_embeddings``: the output head shares the input embedding (Falcon).
        moe_intermediate_size: width of one routed expert's MLP when it differs from ``intermediate_size`` (Qwen3 MoE,
            DeepSeek: ``moe_intermediate_size``); 0 = ``intermediate_size``.
        kv_latent_dim: multi-head latent attention (DeepSeek-V2/V3/R1): ``kv_lora_rank + qk_rope_head_dim`` values
            cached per token and layer instead of K and V per head; 0 for ordinary (GQA/MHA) attention.
        kv_bytes_per_token_fp16: computed, not passed: ``2 * layers * kv_heads * head_dim * 2`` bytes
            (K and V, 16-bit; FORMULAS.md section 6, vLLM paper section 3); MLA: ``layers * kv_latent_dim * 2``.
    """

    name: str
    hf_repo: str
    params_total: float
    params_active: float
    layers: int
    hidden_size: int
    heads: int
    kv_heads: int
    head_dim: int
    intermediate_size: int
    vocab_size: int
    max_context: int
    is_moe: bool = False
    estimated: bool = False
    source: str = ""
    sliding_window: int | None = None
    experts: int = 1
    experts_per_token: int = 1
    gated_mlp: bool = True
    tied_embeddings: bool = False
    moe_intermediate_size: int = 0
    kv_latent_dim: int = 0
    kv_bytes_per_token_fp16: int = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "kv_bytes_per_token_fp16", int(self.kv_bytes_per_token(2)))

    def kv_bytes_per_token(self, bytes_per_elem: float, tensor_parallel: int = 1, layers: int | None = None) -> float:
        """KV-cache bytes of one token on one GPU of a tensor-parallel group of ``tensor_parallel``, over ``layers``
        layers (default all): ``2 x L x ceil(kv_heads / TP) x d_head x bytes`` (GQA heads split over TP, replicated
        when TP > kv_heads, as vLLM does); MLA: ``L x (kv_lora_rank + qk_rope_head_dim) x bytes``, one latent vector
        per token and layer, replicated on every TP rank (DeepSeek-V2 paper, arXiv 2405.04434, s.2.1; vLLM's MLA
        backend keeps the latent cache whole on each rank)."""
        n = self.layers if layers is None else layers
        if self.kv_latent_dim:
            return float(n * self.kv_latent_dim * bytes_per_elem)
        return kv_bytes_per_token(n, -(-self.kv_heads // max(1, tensor_parallel)), self.head_dim, bytes_per_elem)


def kv_bytes_per_token(layers: int, kv_heads: int, head_dim: int, bytes_per_elem: float) -> int | float:
    """KV-cache bytes for one token of one sequence: ``2 * L * kv_heads * d_head * bytes_per_elem``.

    The 2 counts K and V. Source: vLLM paper (Kwon et al. 2023, arXiv 2309.06180, section 3: OPT-13B
    2 x 5120 x 40 x 2 B = 800 KB/token); FORMULAS.md section 6.
    """
    return 2 * layers * kv_heads * head_dim * bytes_per_elem


# ----------------------------------------------------------------------------------------------- loading


def _read_table(filename: str) -> tuple[list[str], list[tuple[int, dict[str, str]]]]:
    """Read ``optimizer/data/<filename>``: (header, [(line number, row), ...]); line 1 is the header."""
    text = resources.files("optimizer").joinpath("data", filename).read_text(encoding="utf-8")
    reader = csv.DictReader(io.StringIO(text))
    rows = [(reader.line_num, row) for row in reader]
    return list(reader.fieldnames or []), rows


def _check_columns(filename: str, header: list[str], needed: tuple[str, ...]) -> None:
    missing = [c for c in needed if c not in header]
    if missing:
        raise GpuoptError(f"optimizer/data/{filename} lacks column(s) {', '.join(missing)}")


def _num(row: dict[str, str], col: str, *, required: bool = True) -> float | None:
    raw = (row.get(col) or "").strip()
    if not raw:
        if required:
            raise ValueError(f"empty {col}")
        return None
    value = float(raw)
    if not math.isfinite(value) or value < 0:
        raise ValueError(f"bad {col} {raw!r}")
    return value


def _classify_interconnect(form_factor: str, interconnect: str) -> str:
    """``"nvlink"`` for SXM/OAM modules or a named NVLink/Infinity Fabric link that is not a bridge, else ``"pcie"``.

    PCIe cards whose NVLink is a 2-/4-GPU bridge (A100/H100 PCIe, H100/H200 NVL, RTX 3090) count as ``pcie``: a
    bridge joins pairs, not the whole instance. Gaudi 2 (OAM, 24x100 GbE RoCE all-to-all on chip) counts as a fabric.
    """
    ff, ic = form_factor.lower(), interconnect.lower()
    if ff.startswith(("sxm", "oam")) or "infinity fabric" in ic:
        return "nvlink"
    if "no nvlink" in ic or "bridge" in ic:
        return "pcie"
    return "nvlink" if re.search(r"nvlink \d", ic) else "pcie"


def _link_one_way(row: dict[str, str], interconnect: str, table_gbps: float) -> float:
    """See ``GpuSpec.link_gbps_one_way``."""
    if row["name"] in _PER_DIRECTION_ROWS:
        return table_gbps
    text = row["interconnect"].lower()
    if interconnect == "pcie" and "bridge" in text:
        m = re.search(r"pcie gen\d[^;]*?(\d+(?:\.\d+)?) gb/s", text)
        if m:
            return float(m.group(1)) / 2.0
    return table_gbps / 2.0


def _gpu_from_row(canonical: str, row: dict[str, str]) -> GpuSpec:
    interconnect = _classify_interconnect(row["form_factor"], row["interconnect"])
    table_gbps = float(_num(row, "interconnect_gbps_per_gpu"))
    if "consumer" in row["form_factor"].lower():
        gpu_class = "consumer"
    else:
        gpu_class = "datacenter_nvlink" if interconnect == "nvlink" else "datacenter_pcie"
    fp16 = _num(row, "fp16_bf16_tensor_tflops_dense")
    if not fp16:
        raise ValueError("fp16_bf16_tensor_tflops_dense is 0")
    return GpuSpec(
        name=canonical,
        spec_row=row["name"],
        memory_gib=float(_num(row, "memory_gb")),
        memory_bandwidth_gbps=float(_num(row, "memory_bandwidth_gbps")),
        fp16_tflops_dense=float(fp16),
        fp32_tflops=_num(row, "fp32_tflops", required=False),
        fp8_tflops_dense=_num(row, "fp8_tensor_tflops_dense", required=False),
        int8_tops_dense=_num(row, "int8_tensor_tops_dense", required=False),
        interconnect=interconnect,
        interconnect_gbps_per_gpu=table_gbps,
        gpu_class=gpu_class,
        source=row["source"],
        link_gbps_one_way=_link_one_way(row, interconnect, table_gbps),
        architecture=(row.get("architecture") or "").strip(),
    )


#: Canonical GPUs sold both as SXM (NVLink) and PCIe boards: the datasheet row of the PCIe board. A cloud instance
#: whose offer says ``interconnect = pcie`` (Azure NC A100 v4, NCv3) has PCIe boards: lower bandwidth, PCIe links.
PCIE_BOARD_ROWS = {
    "A100-80GB": "A100 80GB PCIe",
    "A100-40GB": "A100 40GB PCIe",
    "H100-80GB": "H100 PCIe 80GB",
    "V100-16GB": "V100 PCIe 16GB",
    "V100-32GB": "V100 PCIe 32GB",
}


@lru_cache(maxsize=64)
def load_gpu_board(name: str, interconnect: str) -> GpuSpec:
    """The GpuSpec of ``name`` as mounted in an instance with ``interconnect`` ("nvlink" or "pcie").

    For a GPU sold as SXM and PCIe boards (:data:`PCIE_BOARD_ROWS`) an instance with PCIe GPUs gets the PCIe
    board's datasheet row (memory bandwidth, TDP-limited FLOPs, PCIe links), keeping the canonical name. Any other
    NVLink-class GPU in a PCIe instance keeps its datasheet figures but is treated as PCIe-linked (interconnect
    "pcie", PCIe Gen4 x16 = 32 GB/s one way, FORMULAS.md section 9). Raises InputError as :func:`load_gpu`.
    """
    gpu = load_gpu(name)
    if interconnect != "pcie" or gpu.interconnect == "pcie":
        return gpu
    row_name = PCIE_BOARD_ROWS.get(gpu.name)
    if row_name:
        header, rows = _read_table("gpu_specs.csv")
        for _line, row in rows:
            if row["name"] == row_name:
                return _gpu_from_row(gpu.name, row)
    return replace(gpu, interconnect="pcie", gpu_class="datacenter_pcie", interconnect_gbps_per_gpu=64.0,
                   link_gbps_one_way=32.0)


def load_datasheet_row(row_name: str) -> GpuSpec:
    """The GpuSpec of the datasheet row named exactly ``row_name`` in gpu_specs.csv (a board no cloud prices, such
    as "V100S PCIe 32GB", for checks against published measurements). Raises InputError("gpu") when absent."""
    _header, rows = _read_table("gpu_specs.csv")
    for _line, row in rows:
        if row["name"] == row_name:
            return _gpu_from_row(row_name, row)
    raise InputError("gpu", f"no datasheet row {row_name!r} in gpu_specs.csv",
                     accepted=", ".join(r["name"] for _l, r in rows))


@lru_cache(maxsize=1)
def _gpu_table() -> dict[str, GpuSpec]:
    """Canonical name -> GpuSpec for every canonical GPU whose spec row exists and parses (cached)."""
    header, rows = _read_table("gpu_specs.csv")
    _check_columns("gpu_specs.csv", header, GPU_SPEC_COLUMNS)
    by_row = {row["name"]: (line, row) for line, row in rows}
    out: dict[str, GpuSpec] = {}
    for canonical, spec_row in CANONICAL_GPUS.items():
        if spec_row is None:
            continue
        if spec_row not in by_row:
            log.warning("gpu_specs.csv has no row %r for canonical GPU %s; skipped", spec_row, canonical)
            continue
        line, row = by_row[spec_row]
        try:
            out[canonical] = _gpu_from_row(canonical, row)
        except (ValueError, KeyError) as exc:
            log.warning("gpu_specs.csv line %d (%s): %s; skipped", line, spec_row, exc)
    return out


def _model_from_row(row: dict[str, str]) -> ModelSpec:
    def i(col: str) -> int:
        return int(_num(row, col))

    hidden = i("hidden_size")
    experts = int(_num(row, "num_local_experts", required=False) or 1)
    # Falcon-40B has no intermediate_size: its GELU MLP is 4h (table note).
    inter = _num(row, "intermediate_size", required=False)
    spec = ModelSpec(
        name=row["model"],
        hf_repo=row["hf_repo"],
        params_total=float(i("derived_params_total")),
        params_active=float(i("derived_params_active")),
        layers=i("num_hidden_layers"),
        hidden_size=hidden,
        heads=i("num_attention_heads"),
        kv_heads=i("num_key_value_heads"),
        head_dim=i("head_dim"),
        intermediate_size=int(inter) if inter else 4 * hidden,
        vocab_size=i("vocab_size"),
        max_context=i("max_position_embeddings"),
        is_moe=experts > 1,
        estimated=False,
        source=row["config_source"],
        experts=experts,
        experts_per_token=int(_num(row, "num_experts_per_tok")) if experts > 1 else 1,
        gated_mlp=row["model_type"].strip() not in _UNGATED_MODEL_TYPES,
        tied_embeddings=row["tie_word_embeddings"].strip().lower() == "true",
        moe_intermediate_size=int(_num(row, "moe_intermediate_size", required=False) or 0),
        kv_latent_dim=int((_num(row, "kv_lora_rank", required=False) or 0)
                          + ((_num(row, "qk_rope_head_dim", required=False) or 0)
                             if _num(row, "kv_lora_rank", required=False) else 0)),
    )
    table_kv = _num(row, "derived_kv_cache_bytes_per_token_fp16", required=False)
    if table_kv is not None and int(table_kv) != spec.kv_bytes_per_token_fp16:
        raise ValueError(f"KV bytes/token {spec.kv_bytes_per_token_fp16} != table's {int(table_kv)}")
    return spec


@lru_cache(maxsize=1)
def _model_table() -> dict[str, ModelSpec]:
    """Model name -> ModelSpec for every row of model_configs.csv that parses (cached)."""
    header, rows = _read_table("model_configs.csv")
    _check_columns("model_configs.csv", header, MODEL_CONFIG_COLUMNS)
    out: dict[str, ModelSpec] = {}
    for line, row in rows:
        try:
            spec = _model_from_row(row)
        except (ValueError, KeyError, TypeError) as exc:
            log.warning("model_configs.csv line %d (%s): %s; skipped", line, row.get("model"), exc)
            continue
        out[spec.name] = spec
    return out


def _norm(text: str) -> str:
    key = re.sub(r"[\s_\-]+", "", str(text).upper())
    for prefix in ("NVIDIA", "GEFORCE", "AMD", "INTEL"):
        if key.startswith(prefix) and len(key) > len(prefix):
            key = key[len(prefix):]
    return key


# ----------------------------------------------------------------------------------------------- public API


def known_gpus() -> list[str]:
    """Canonical names of the GPUs that have a datasheet row (so can be sized), in ``CANONICAL_GPUS`` order."""
    return list(_gpu_table())


def load_gpu(name: str) -> GpuSpec:
    """The GpuSpec of a GPU given by canonical name, spec-table row name or a common alias.

    Matching ignores case, spaces, ``-`` and ``_`` (``"a100-80gb"``, ``"A100 80GB"``, ``"A100 80GB SXM4"`` all give
    ``A100-80GB``); aliases: ``H100`` -> H100-80GB, ``H200`` -> H200-141GB, ``H100 NVL``, ``RTX4090``/``4090``,
    ``RTX3090``, ``MI300``, ``Gaudi``; a trailing ``G`` is read as ``GB`` (``A100-80G``).

    Raises:
        InputError("gpu"): the name is unknown; ambiguous (``A100``, ``V100``: say which memory size); or a
            canonical GPU that clouds price but the spec table has no datasheet row for (K80, A6000, GH200...).
            ``accepted`` lists :func:`known_gpus`.
    """
    table = _gpu_table()
    accepted = ", ".join(table)
    key = _norm(name)
    if key in _AMBIGUOUS:
        raise InputError("gpu", f"ambiguous GPU {name!r}: say which memory size", accepted=", ".join(_AMBIGUOUS[key]))
    candidates = {_norm(c): c for c in CANONICAL_GPUS}
    candidates.update({_norm(row): c for c, row in CANONICAL_GPUS.items() if row})
    candidates.update(_ALIASES)
    canonical = candidates.get(key)
    if canonical is None and key.endswith("G"):
        canonical = candidates.get(key + "B")
    if canonical is None:
        raise InputError("gpu", f"unknown GPU {name!r}", accepted=accepted)
    if canonical not in table:
        raise InputError(
            "gpu",
            f"GPU {canonical!r} has no datasheet row in optimizer/data/gpu_specs.csv, so it can be priced but not sized",
            accepted=accepted,
        )
    return table[canonical]


def known_models() -> list[str]:
    """Names (the ``model`` column) of the models in ``model_configs.csv``, in table order."""
    return list(_model_table())


#: Name suffixes of fine-tuned or quantized variants that keep the base model's config.json shape (instruction and
#: chat tunes, Hugging Face's ``-hf`` conversions, quantized checkpoints). Version tags (``-v0.1``) are kept: the
#: versions differ (Mistral-7B-v0.1 has a sliding window, v0.3 a larger vocabulary).
_VARIANT_SUFFIXES = ("-hf", "-instruct", "-chat", "-it", "-base", "-fp8", "-fp4", "-nvfp4", "-awq", "-gptq",
                     "-int4", "-int8", "-dynamic")


def _variant_base(name: str) -> str:
    """``name`` (lower case, the part after any ``/``) without :data:`_VARIANT_SUFFIXES`, repeatedly."""
    key = name.rsplit("/", 1)[-1].replace("meta-llama-", "llama-")
    for tune in ("-instruct-v", "-chat-v"):  # Mixtral-8x7B-Instruct-v0.1 is Mixtral-8x7B-v0.1
        key = key.replace(tune, "-v")
    changed = True
    while changed:
        changed = False
        for suffix in _VARIANT_SUFFIXES:
            if key.endswith(suffix) and len(key) > len(suffix):
                key, changed = key[: -len(suffix)], True
    return key


def load_model(name: str | Path) -> ModelSpec:
    """The ModelSpec of a model given by table name (``"Llama-2-70B"``) or HF repo (``"meta-llama/Llama-2-70b-hf"``,
    or its part after the ``/``), case-insensitive; or by a local Hugging Face ``config.json``.

    A ``name`` that is an existing file, or an existing folder holding ``config.json`` (a local model download),
    is read with :func:`model_from_hf_config`; that check comes first, so a local folder named like a table repo
    (``meta-llama/Llama-2-70b-hf``) is read from its own config. Anything else is looked up in the table.

    A fine-tuned or quantized variant of a table model (``meta-llama/Llama-3.1-8B-Instruct``,
    ``Llama-2-70b-chat-hf``, ``google/gemma-2-9b-it``, ``...-Instruct-FP8``) gets its base model's architecture: the
    names are compared without the suffixes of :data:`_VARIANT_SUFFIXES`.

    Raises:
        InputError("model"): unknown model; ``accepted`` lists :func:`known_models`, and the message points to
            ``--params`` (:func:`model_from_params`) for a model not in the table. A config file that cannot be
            read raises as :func:`model_from_hf_config`.
    """
    path = _hf_config_path(name)
    if path is not None:
        return model_from_hf_config(path)
    key = str(name).strip().lower()
    # Hugging Face renamed meta-llama/Meta-Llama-3.1-405B to meta-llama/Llama-3.1-405B: accept both spellings
    key = key.replace("/meta-llama-", "/llama-") if key.startswith("meta-llama/meta-llama-") else key
    for spec in _model_table().values():
        repo = spec.hf_repo.lower().replace("meta-llama/meta-llama-", "meta-llama/llama-")
        if key in (spec.name.lower(), repo, repo.rsplit("/", 1)[-1]):
            return spec
    # a fine-tuned or quantized variant shares its base model's architecture: Llama-3.1-8B-Instruct,
    # Llama-2-70b-chat-hf, gemma-2-9b-it, Llama-3.1-405B-Instruct-FP8 are sized as their base config
    base = _variant_base(key)
    if base:
        for spec in _model_table().values():
            repo = spec.hf_repo.lower().replace("meta-llama/meta-llama-", "meta-llama/llama-")
            if base and base in (_variant_base(spec.name.lower()), _variant_base(repo.rsplit("/", 1)[-1])):
                return spec
    raise InputError(
        "model",
        f"unknown model {name!r}; for a model not in the table give its parameter count with --params",
        accepted=", ".join(known_models()),
    )


#: Shape rules for :func:`model_from_params` (Llama-2-7B/13B and GPT-3 175B all have d_head 128 and h = 128 * L).
ESTIMATE_HEAD_DIM = 128
ESTIMATE_ASPECT = 128  # hidden_size / layers
ESTIMATE_VOCAB = 32000  # Llama 2 / Mistral tokenizer
ESTIMATE_MAX_CONTEXT = 131072  # largest in model_configs.csv (Llama 3.1, Qwen2): the real limit is unknown


def _short_count(p: float) -> str:
    for unit, scale in (("T", 1e12), ("B", 1e9), ("M", 1e6), ("K", 1e3)):
        if p >= scale:
            return f"{p / scale:.3g}{unit}"
    return f"{p:.3g}"


#: Narrowest routed expert :func:`moe_from_params` builds, MLP width: Qwen3-30B-A3B's experts are 768 wide, OLMoE's
#: 1,024, DeepSeek-V3's 2,048 (their config.json ``moe_intermediate_size``); counts that need a narrower one (tens of
#: thousands of experts) are refused, not laid out.
MIN_EXPERT_WIDTH = 128


def moe_from_params(params: float, active_params: float, experts: int, experts_per_token: int | None = None,
                    name: str | None = None) -> ModelSpec:
    """A mixture-of-experts shape for a model known only by its total and active parameter counts (``--params``
    with ``--active-params`` and ``--experts``; issue 28).

    The attention, embeddings and layer count are those of a dense model of the *active* count
    (:func:`model_from_params`): what a token passes through, ``D = 2 V h + 4 h^2 L`` parameters outside the MLPs.
    Each layer's MLP is ``E`` routed experts of ``3 h I_e`` parameters (SwiGLU), ``k`` of them active per token:

    * the total fixes the width: ``params = D + L E 3 h I_e``;
    * the active count fixes ``k = (active - D) / (L 3 h I_e)``, rounded (1..E) unless ``experts_per_token`` is given.

    ``params_total`` and ``params_active`` are the counts given (memory and FLOPs follow them exactly). Example:
    235e9 total, 22e9 active, 128 experts (Qwen3-235B-A22B's counts; its config routes 8 of 128) gives k = 8.

    Raises:
        InputError("active_params"): not a finite number > 0, above the total, or no larger than the attention and
            embeddings of its own dense shape; ("params"): not a finite number > 0; ("experts"): not a whole number
            >= 2, or counts no top-k of 1..E reaches (too few experts for so small an active share, or so many that
            an expert would be narrower than :data:`MIN_EXPERT_WIDTH`); ("experts_per_token"): outside 1..E.
    """
    try:
        act = float(active_params)
    except (TypeError, ValueError):
        act = math.nan
    if not math.isfinite(act) or act <= 0:
        raise InputError("active_params", f"must be a number > 0, got {active_params!r}",
                         accepted="the parameters used per token, e.g. 22e9")
    try:
        total = float(params)
    except (TypeError, ValueError):
        total = math.nan
    if not math.isfinite(total) or total <= 0:
        raise InputError("params", f"must be a number > 0, got {params!r}", accepted="a parameter count > 0, e.g. 235e9")
    if act > total:
        raise InputError("active_params", f"the active count {active_params!r} exceeds the total {params!r}",
                         accepted="active parameters <= --params")
    if isinstance(experts, bool) or not isinstance(experts, (int, float)) or experts != int(experts) or experts < 2:
        raise InputError("experts", f"must be a whole number >= 2, got {experts!r}", accepted="2 or more experts per layer")
    e = int(experts)
    dense = model_from_params(act, name="active")
    h, L, v = dense.hidden_size, dense.layers, dense.vocab_size
    outside = 2 * v * h + 4 * h * h * L  # attention and embeddings
    if act <= outside:
        raise InputError("active_params", f"{act:g} active parameters leave nothing for the experts: the attention "
                         f"and embeddings of that shape ({L} layers, hidden {h}) are {outside:.3g}",
                         accepted="a larger active count")
    inter = (total - outside) / (L * e * 3 * h)
    if inter < MIN_EXPERT_WIDTH:
        raise InputError("experts", f"{e} experts would be {inter:.0f} wide (an expert MLP of at least "
                         f"{MIN_EXPERT_WIDTH}); the counts do not describe a mixture of experts of that many",
                         accepted="fewer experts")
    k_raw = (act - outside) / (L * 3 * h * inter)
    if experts_per_token is None:
        if not 0.5 <= k_raw <= e:
            raise InputError("experts", f"with {e} experts of width {inter:.0f} the active count {act:g} is "
                             f"{k_raw:.2f} experts per token: no whole top-k of 1..{e} reaches it",
                             accepted="more experts, or a larger active count")
        k = max(1, min(e, round(k_raw)))
    else:
        k = experts_per_token
        if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= e:
            raise InputError("experts_per_token", f"must be 1..{e}, got {experts_per_token!r}", accepted=f"1..{e}")
    width = max(1, round(inter))
    label = _short_count(total) + "-A" + _short_count(act)
    return dataclasses.replace(
        dense, name=name or f"~{label} MoE (estimated)", params_total=total, params_active=act, is_moe=True,
        experts=e, experts_per_token=k, moe_intermediate_size=width, intermediate_size=width,
        source=(f"estimated from the parameter counts (optimizer.sizing.specs.moe_from_params): the dense shape of "
                f"the {_short_count(act)} active ({L} layers, hidden {h}), {e} experts of MLP width {width}, {k} "
                "active per token" + ("" if experts_per_token is not None else " (from the counts)")))


def model_spec(model: str | None, params: float | None, *, active_params: float | None = None,
               experts: int | None = None) -> ModelSpec:
    """The model of ``--model`` (:func:`load_model`) or ``--params`` (:func:`model_from_params`; with
    ``active_params`` and ``experts`` a mixture of experts, :func:`moe_from_params`).

    Raises:
        InputError("model"): both or neither given; ("params" | "active_params" | "experts"): a bad count, or the
            MoE counts without ``params`` or one without the other.
    """
    if model and params:
        raise InputError("model", "give either --model or --params, not both")
    moe = (active_params, experts)
    if any(v is not None for v in moe) and not params:
        raise InputError("active_params" if active_params is not None else "experts",
                         "--active-params and --experts describe a model given by --params (a named model has its own)",
                         accepted="--params COUNT --active-params COUNT --experts N")
    if model:
        return load_model(model)
    if params:
        if params <= 0:
            raise InputError("params", f"must be greater than 0, got {params:g}")
        if all(v is None for v in moe):
            return model_from_params(params)
        if active_params is None or experts is None:
            raise InputError("experts" if experts is None else "active_params",
                             "a mixture of experts needs both --active-params and --experts",
                             accepted="--params COUNT --active-params COUNT --experts N")
        return moe_from_params(params, active_params, experts)
    raise InputError("model", "no model given: use --model NAME (see `gpuopt estimate --list-models`) or --params COUNT")


def model_from_params(params: float, name: str | None = None) -> ModelSpec:
    """A Llama-style shape for a model known only by its parameter count (the ``--params`` path).

    ``params_total = params_active = params`` exactly (the user's count; dense model). The shape, used for
    activation and KV-cache memory only, follows standard depth/width rules:

    * non-embedding parameters ``12 * L * h**2`` (Kaplan et al. 2020, arXiv 2001.08361, section 2.1: 4h^2
      attention + 8h^2 MLP; a SwiGLU MLP with I = 8h/3 has the same 3*h*I = 8h^2) plus input and output
      embeddings ``2 * V * h`` with V = 32000;
    * aspect ratio ``h = 128 * L`` and head_dim 128 (the shape of Llama-2-7B: 4096/32, Llama-2-13B: 5120/40,
      GPT-3 175B: 12288/96), so heads = L;
    * L = the integer nearest the real root of ``12 * 128**2 * L**3 + 2 * V * 128 * L = params`` (>= 1);
      ``intermediate_size`` = 8h/3 rounded up to a multiple of 256;
    * multi-head attention, ``kv_heads = heads``: the largest KV cache a model of that shape can have. GQA
      models (Llama 3, Mistral, Llama-2-70B) need up to 8x less, so serving memory is an upper bound;
    * ``max_context`` = 131072 (the largest in the table) since the real limit is unknown.

    Examples: 6.74e9 -> L 32, h 4096 (Llama-2-7B's shape); 175e9 -> L 96, h 12288 (GPT-3's shape).

    Args:
        params: parameter count (> 0), e.g. ``7e9``.
        name: display name; default ``"~7B (estimated)"``.

    Raises:
        InputError("params"): params is not a finite number > 0.
    """
    try:
        p = float(params)
    except (TypeError, ValueError):
        raise InputError("params", f"not a number: {params!r}", accepted="a parameter count > 0, e.g. 7e9") from None
    if not math.isfinite(p) or p <= 0:
        raise InputError("params", f"must be > 0, got {params!r}", accepted="a parameter count > 0, e.g. 7e9")
    a, v = ESTIMATE_ASPECT, ESTIMATE_VOCAB

    def count(layers: float) -> float:
        return 12 * a * a * layers**3 + 2 * v * a * layers

    lo, hi = 0.0, 1.0
    while count(hi) < p:
        hi *= 2
    for _ in range(100):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if count(mid) < p else (lo, mid)
    layers = max(1, round(hi))
    hidden = a * layers
    inter = 256 * math.ceil(8 * hidden / 3 / 256)
    return ModelSpec(
        name=name or f"~{_short_count(p)} (estimated)",
        hf_repo="",
        params_total=p,
        params_active=p,
        layers=layers,
        hidden_size=hidden,
        heads=hidden // ESTIMATE_HEAD_DIM,
        kv_heads=hidden // ESTIMATE_HEAD_DIM,
        head_dim=ESTIMATE_HEAD_DIM,
        intermediate_size=inter,
        vocab_size=v,
        max_context=ESTIMATE_MAX_CONTEXT,
        is_moe=False,
        estimated=True,
        source="estimated from the parameter count (optimizer.sizing.specs.model_from_params: h = 128 L, d_head 128, MHA)",
    )


# ----------------------------------------------------------------------------------------------- HF config.json

#: ``model_type`` families :func:`model_from_hf_config` counts with their own formula; any other model_type is
#: counted with the Llama-style formula (FORMULAS.md section 10) and says so in ``ModelSpec.source``.
HF_CONFIG_FAMILIES: dict[str, str] = {
    "llama": "llama",
    "mistral": "llama",
    "mixtral": "llama",
    "qwen2": "llama",
    "falcon": "falcon",
    "RefinedWeb": "falcon",
    "RefinedWebModel": "falcon",
    "gpt_neox": "gpt_neox",
}

#: ``tie_word_embeddings`` when config.json leaves it out: the default of the model_type's transformers config class
#: (LlamaConfig, MistralConfig, MixtralConfig, Qwen2Config, GPTNeoXConfig set False; FalconConfig does not set it,
#: so PretrainedConfig's True applies). Unknown model_types: False, the larger (untied) count.
_TIE_DEFAULTS: dict[str, bool] = {
    "llama": False, "mistral": False, "mixtral": False, "qwen2": False, "gpt_neox": False,
    "falcon": True, "RefinedWeb": True, "RefinedWebModel": True,
}

#: Falcon configs carry no ``max_position_embeddings`` (tiiuae/falcon-40b): FalconConfig's default, 2048 tokens
#: (transformers configuration_falcon.py), which is also Falcon's training context (model_configs.csv note).
FALCON_DEFAULT_CONTEXT = 2048

#: MoE layouts this module cannot count (shared experts, per-expert ``moe_intermediate_size``, dense first layers:
#: Qwen2-MoE / Qwen3-MoE ``num_experts``, DeepSeek ``n_routed_experts``): refused, not guessed.
_UNSUPPORTED_MOE_KEYS = ("num_experts", "n_routed_experts", "moe_intermediate_size", "n_shared_experts")

_HF_ACCEPTED = ("a Hugging Face config.json with hidden_size, num_hidden_layers, num_attention_heads, vocab_size, "
                "intermediate_size and max_position_embeddings (Llama, Mistral, Mixtral, Qwen2, Falcon, GPT-NeoX)")


def _hf_config_path(name: object) -> Path | None:
    """``name`` as a config.json path when it is an existing file or a folder holding config.json, else None."""
    if isinstance(name, Path):
        path = name
    elif isinstance(name, str) and name.strip():
        path = Path(name.strip()).expanduser()
    else:
        return None
    try:
        if path.is_file():
            return path
        if path.is_dir() and (path / "config.json").is_file():
            return path / "config.json"
    except OSError:  # a name too long or otherwise unusable as a path is a model name
        return None
    return None


def _read_hf_config(config: str | Path | dict) -> tuple[dict, str, str]:
    """(config dict, where it came from, default display name)."""
    if isinstance(config, dict):
        origin = "config dict"
        data = config
        default = ""
    else:
        path = _hf_config_path(config)
        if path is None:
            raise InputError("model", f"no config.json at {str(config)!r} (not a file, nor a folder holding config.json)",
                             accepted=_HF_ACCEPTED)
        origin = str(path)
        from gpuopt.kernel.inputs import load_json_file

        # UTF-8 with or without BOM, bounded size and nesting, duplicate keys refused; NaN/Infinity allowed in the
        # fields not read here (transformers' json.dumps writes them), every field read is checked by _cfg_int
        try:
            data = load_json_file(path, "model", "config.json", allow_nonfinite=True)
        except InputError as exc:
            raise InputError("model", exc.message, accepted=_HF_ACCEPTED) from None
        default = path.parent.name if path.name == "config.json" and path.parent.name else path.stem
    if not isinstance(data, dict):
        raise InputError("model", f"{origin}: a config.json holds a JSON object, got {type(data).__name__}",
                         accepted=_HF_ACCEPTED)
    repo = data.get("_name_or_path")
    if isinstance(repo, str) and repo.strip():
        default = repo.strip().rstrip("/").rsplit("/", 1)[-1]
    return data, origin, default or str(data.get("model_type") or "hf-config")


#: Largest value of a config.json size field: 64x and more above the real ones (hidden_size 16384 of
#: Llama-3.1-405B, vocab_size 256000 of Gemma) and small enough that every count stays finite; a file above it is
#: broken (``hidden_size: 1e308``) and refused naming the field.
_CFG_MAX: dict[str, int] = {
    "hidden_size": 1 << 20, "n_embd": 1 << 20, "head_dim": 1 << 16,
    "num_hidden_layers": 1 << 14, "n_layer": 1 << 14,
    "num_attention_heads": 1 << 16, "n_head": 1 << 16, "num_key_value_heads": 1 << 16, "num_kv_heads": 1 << 16,
    "n_head_kv": 1 << 16, "vocab_size": 1 << 24, "intermediate_size": 1 << 22, "ffn_hidden_size": 1 << 22,
    "num_local_experts": 1 << 12, "num_experts_per_tok": 1 << 12, "num_ln_in_parallel_attn": 16,
}
#: Ceiling of the context fields (max_position_embeddings, n_positions, sliding_window): 2^31 - 1 tokens (Llama 4
#: Scout's config.json says 10,485,760).
_CFG_MAX_CONTEXT = (1 << 31) - 1


def _cfg_int(cfg: dict, origin: str, *keys: str, required: bool = True) -> int | None:
    """The first of ``keys`` that config.json sets (not null) as a whole number > 0 and at most its ceiling
    (:data:`_CFG_MAX`); None when none is set and not ``required``. Raises InputError("model") naming the field
    that is missing or bad and the file."""
    for key in keys:
        value = cfg.get(key)
        if value is None:
            continue
        top = _CFG_MAX.get(key, _CFG_MAX_CONTEXT)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
                or value <= 0 or not float(value).is_integer():
            raise InputError("model", f"{origin}: field {key!r} must be a whole number > 0, got {value!r:.40}",
                             accepted=_HF_ACCEPTED)
        if value > top:
            raise InputError("model", f"{origin}: field {key!r} must be a whole number from 1 to {top:,}, "
                             f"got {value!r:.40}", accepted=_HF_ACCEPTED)
        return int(value)
    if required:
        also = f" (nor {', '.join(repr(k) for k in keys[1:])})" if len(keys) > 1 else ""
        raise InputError("model", f"{origin}: config.json lacks the field {keys[0]!r}{also}", accepted=_HF_ACCEPTED)
    return None


def _cfg_bool(cfg: dict, origin: str, key: str, default: bool) -> bool:
    value = cfg.get(key)
    if value is None:
        return default
    if not isinstance(value, bool):
        raise InputError("model", f"{origin}: field {key!r} must be true or false, got {value!r}", accepted=_HF_ACCEPTED)
    return value


def model_from_hf_config(config: str | Path | dict, name: str | None = None) -> ModelSpec:
    """The ModelSpec of a decoder-only transformer described by a local Hugging Face ``config.json``.

    Reads (first key found; Falcon's pre-transformers ``RefinedWeb`` names second): ``hidden_size`` / ``n_embd``,
    ``num_hidden_layers`` / ``n_layer``, ``num_attention_heads`` / ``n_head``, ``vocab_size``, ``head_dim`` (else
    ``hidden_size / heads``), ``intermediate_size``, ``max_position_embeddings`` / ``n_positions``,
    ``tie_word_embeddings`` (missing: the transformers class default, :data:`_TIE_DEFAULTS`), ``sliding_window``
    (ignored when ``use_sliding_window`` is false), ``num_local_experts`` / ``num_experts_per_tok`` (MoE).

    KV heads: ``num_key_value_heads`` (GQA; missing: = heads, LlamaConfig's rule). Falcon, as transformers'
    FalconAttention: with ``new_decoder_architecture`` (or model_type ``RefinedWeb``) ``num_kv_heads`` /
    ``n_head_kv``; else 1 when ``multi_query`` (FalconConfig default true) else ``num_kv_heads`` (default heads).

    Parameter count, FORMULAS.md section 10 (DERIVED; checked exactly against model_configs.csv), d = head_dim,
    E experts of which k active, per layer:

    * Llama-style (llama, mistral, mixtral, qwen2, and any other model_type -- noted in ``source``):
      attention ``h*a*d + 2*h*kv*d + a*d*h``; MLP ``3*h*I`` per expert; router ``h*E`` when E > 1; 2 RMSNorms
      ``2h``; + final norm ``h`` and embeddings ``V*h`` (x2 when untied). Biases: Qwen2 q/k/v (``a*d + 2*kv*d``);
      Llama ``attention_bias`` q/k/v/o (+ ``h``), ``mlp_bias`` (``2I + h`` per expert). Active: k experts.
    * Falcon: fused QKV ``h*(a + 2*kv)*d``, dense ``a*d*h``, GELU MLP ``2*h*F`` with F = ``ffn_hidden_size`` or
      4h; LayerNorms with bias, 2 per layer in the new decoder architecture (``num_ln_in_parallel_attn``) or
      without ``parallel_attn``, else 1; final LayerNorm ``2h``; linear biases when ``bias``.
    * GPT-NeoX: fused QKV ``3*h*a*d`` and dense ``a*d*h`` with biases (``attention_bias``, default true), MLP
      ``2*h*I + I + h``, 2 LayerNorms ``4h``, final LayerNorm ``2h``, untied embeddings by default.

    Checks: Llama-2-7B 6,738,415,616; Mixtral-8x7B 46,702,792,704 total / 12,879,925,248 active; Qwen2-72B
    72,706,203,648; Falcon-40B 41,303,293,952 (tied); GPT-NeoX-20B 20,554,567,680 (HF model card).

    Args:
        config: path of a config.json, a folder holding one, or the parsed dict.
        name: display name; default: the last part of ``_name_or_path``, else the folder name, else model_type.

    Raises:
        InputError("model"): no such file or folder, unreadable or invalid JSON, not an object; a required field
            missing, null or not a whole number > 0 (the message names it); hidden_size not divisible by heads
            without head_dim; heads not a multiple of KV heads; ``num_experts_per_tok`` missing or above
            ``num_local_experts``; an MoE layout it cannot count (:data:`_UNSUPPORTED_MOE_KEYS`).
    """
    cfg, origin, default_name = _read_hf_config(config)
    model_type = str(cfg.get("model_type") or "")
    family = HF_CONFIG_FAMILIES.get(model_type, "generic")

    h = _cfg_int(cfg, origin, "hidden_size", "n_embd")
    layers = _cfg_int(cfg, origin, "num_hidden_layers", "n_layer")
    heads = _cfg_int(cfg, origin, "num_attention_heads", "n_head")
    vocab = _cfg_int(cfg, origin, "vocab_size")
    head_dim = _cfg_int(cfg, origin, "head_dim", required=False)
    if head_dim is None:
        if h % heads:
            raise InputError("model", f"{origin}: hidden_size {h} is not a multiple of num_attention_heads {heads} "
                             "and there is no head_dim", accepted=_HF_ACCEPTED)
        head_dim = h // heads

    if family == "falcon":
        new_arch = _cfg_bool(cfg, origin, "new_decoder_architecture", model_type == "RefinedWeb")
        if new_arch:
            kv = _cfg_int(cfg, origin, "num_kv_heads", "n_head_kv", required=False) or heads
        elif _cfg_bool(cfg, origin, "multi_query", model_type == "falcon"):
            kv = 1
        else:
            kv = _cfg_int(cfg, origin, "num_kv_heads", "n_head_kv", required=False) or heads
        inter = _cfg_int(cfg, origin, "ffn_hidden_size", required=False) or 4 * h
        max_ctx = _cfg_int(cfg, origin, "max_position_embeddings", required=False) or FALCON_DEFAULT_CONTEXT
    elif family == "gpt_neox":
        kv = heads
        inter = _cfg_int(cfg, origin, "intermediate_size")
        max_ctx = _cfg_int(cfg, origin, "max_position_embeddings", "n_positions")
    else:
        kv = _cfg_int(cfg, origin, "num_key_value_heads", required=False) or heads
        inter = _cfg_int(cfg, origin, "intermediate_size")
        max_ctx = _cfg_int(cfg, origin, "max_position_embeddings", "n_positions")
    if heads % kv:
        raise InputError("model", f"{origin}: num_attention_heads {heads} is not a multiple of the {kv} KV heads",
                         accepted=_HF_ACCEPTED)

    experts = _cfg_int(cfg, origin, "num_local_experts", required=False) or 1
    unsupported = [k for k in _UNSUPPORTED_MOE_KEYS if cfg.get(k) not in (None, 0, 1)]
    if unsupported and experts == 1:
        raise InputError("model", f"{origin}: MoE layout with {', '.join(unsupported)} (shared or fine-grained "
                         "experts) is not supported; only num_local_experts / num_experts_per_tok (Mixtral-style)",
                         accepted=_HF_ACCEPTED)
    top_k = 1
    if experts > 1:
        top_k = _cfg_int(cfg, origin, "num_experts_per_tok")
        if top_k > experts:
            raise InputError("model", f"{origin}: num_experts_per_tok {top_k} > num_local_experts {experts}",
                             accepted=_HF_ACCEPTED)

    tied = _cfg_bool(cfg, origin, "tie_word_embeddings", _TIE_DEFAULTS.get(model_type, False))
    sliding = _cfg_int(cfg, origin, "sliding_window", required=False)
    if sliding is not None and not _cfg_bool(cfg, origin, "use_sliding_window", True):
        sliding = None

    q_out = heads * head_dim  # a * d
    kv_out = kv * head_dim
    embed = vocab * h * (1 if tied else 2)
    if family == "falcon":
        n_ln = (_cfg_int(cfg, origin, "num_ln_in_parallel_attn", required=False) or 2) if new_arch else \
            (1 if _cfg_bool(cfg, origin, "parallel_attn", True) else 2)
        bias = _cfg_bool(cfg, origin, "bias", False)
        attn = h * (q_out + 2 * kv_out) + q_out * h + (q_out + 2 * kv_out + h if bias else 0)
        mlp = 2 * h * inter + (inter + h if bias else 0)
        per_layer = attn + mlp + n_ln * 2 * h
        total = active = layers * per_layer + 2 * h + embed
        formula = (f"Falcon: fused QKV, GELU MLP {inter}, {n_ln} LayerNorm(s) per layer, "
                   f"{'tied' if tied else 'untied'} embeddings")
    elif family == "gpt_neox":
        bias = _cfg_bool(cfg, origin, "attention_bias", True)
        attn = h * 3 * q_out + q_out * h + (3 * q_out + h if bias else 0)
        mlp = 2 * h * inter + inter + h
        per_layer = attn + mlp + 2 * 2 * h
        total = active = layers * per_layer + 2 * h + embed
        formula = f"GPT-NeoX: fused QKV with biases, GELU MLP {inter}, {'tied' if tied else 'untied'} embeddings"
    else:
        attn = h * q_out + 2 * h * kv_out + q_out * h
        if model_type == "qwen2":
            attn += q_out + 2 * kv_out
        elif _cfg_bool(cfg, origin, "attention_bias", False):
            attn += q_out + 2 * kv_out + h
        mlp = 3 * h * inter + (2 * inter + h if _cfg_bool(cfg, origin, "mlp_bias", False) else 0)
        router = h * experts if experts > 1 else 0
        total = layers * (attn + experts * mlp + router + 2 * h) + h + embed
        active = layers * (attn + top_k * mlp + router + 2 * h) + h + embed
        formula = (("Llama-style" if family == "llama" else f"model_type {model_type or '?'!r} counted as Llama-style")
                   + f": SwiGLU MLP {inter}" + (f" x {experts} experts (top-{top_k})" if experts > 1 else "")
                   + f", RMSNorm, {'tied' if tied else 'untied'} embeddings"
                   + (", q/k/v biases" if model_type == "qwen2" else ""))
    repo = cfg.get("_name_or_path")
    hf_repo = repo.strip() if isinstance(repo, str) and repo.count("/") == 1 and not Path(repo).is_absolute() else ""
    return ModelSpec(
        name=name or default_name,
        hf_repo=hf_repo,
        params_total=float(total),
        params_active=float(active),
        layers=layers,
        hidden_size=h,
        heads=heads,
        kv_heads=kv,
        head_dim=head_dim,
        intermediate_size=inter,
        vocab_size=vocab,
        max_context=max_ctx,
        is_moe=experts > 1,
        estimated=False,
        source=f"HF config.json ({origin}); parameters counted from the config, {formula} (FORMULAS.md section 10)",
        sliding_window=sliding,
        experts=experts,
        experts_per_token=top_k,
        gated_mlp=family not in ("falcon", "gpt_neox"),
        tied_embeddings=tied,
    )
