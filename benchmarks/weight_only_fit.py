"""Weight-only INT4 decode (W4A16: AWQ, GPTQ/Marlin) against BF16 on the same GPU (issue 27, point 0).

A W4A16 decode step reads a quarter of the weight bytes, then dequantizes them to 16 bits inside the matmul. At batch
1 that makes it faster; at larger batches the dequantization and the kernels' lower efficiency take the gain back
(TensorRT-Model-Optimizer's H200 table: Llama-3.1-8B INT4 AWQ 1.33x BF16 at batch 1, 0.75x at 8, 0.83x at 64). The
serving model reads 0.52 B/param for int4 (4 bits + a 16-bit scale per group of 128) at the BF16 compute peak; this
script fits two general factors for weight-only precisions, not one per row:

* ``weight_only_bw_efficiency``: the share of the GPU's fitted decode bandwidth the dequantizing kernels reach on
  the weights (the KV cache keeps its 16-bit reads);
* ``weight_only_compute_efficiency``: their share of the decode compute efficiency (dequantization in the GEMM),

on the TensorRT-Model-Optimizer rows of ``benchmarks/data/int4_decode.csv`` (``benchmark.md``: its H200 table,
TensorRT-LLM 0.15, 2,048 in / 128 out, and its H100 table, TensorRT-LLM 0.11, lengths not stated; INT4/BF16 tokens/s
per GPU as the source normalises it), by a grid search on the mean squared log error of that ratio. The two tables
disagree (at batch 64 INT4 is 0.83-0.88x BF16 on the H200, 1.37-2.19x on the H100): each is also predicted by a
fit on the other alone, which shows how far the relation carries.

    python benchmarks/weight_only_fit.py
"""

from __future__ import annotations

import math
import re
import statistics
import sys
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

CSV = ROOT / "benchmarks" / "data" / "int4_decode.csv"
MODELS = {"Llama3.1-8B": "Llama-3.1-8B", "Llama3.1-70B": "Llama-3.1-70B", "Llama3-8B": "Llama-3-8B",
          "Llama3-70B": "Llama-3-70B"}
GPUS = {"H200": "H200-141GB", "H100": "H100-80GB"}
GRID_BW = tuple(round(0.30 + 0.05 * i, 2) for i in range(15))     # 0.30 .. 1.00
GRID_C = tuple(round(0.10 + 0.05 * i, 2) for i in range(19))      # 0.10 .. 1.00


def rows() -> list[dict]:
    """The TensorRT-Model-Optimizer rows: model, GPU, batch, INT4 and BF16 GPU counts, published ratio per GPU,
    and whether the row is fitted (H200, both values) or held out (H100, speedup only)."""
    import pandas as pd

    d = pd.read_csv(CSV)
    d = d[d["source"].str.contains("TensorRT-Model-Optimizer", na=False)]
    out = []
    for _, r in d.iterrows():
        b = int(re.search(r"batch size (\d+)", str(r["batch_or_load"])).group(1))
        counts = str(r["gpu_count"])
        # 70B in BF16 needs two GPUs of 80-141 GB (the H200 table says TP2; the H100 table does not say: the same
        # taken), INT4 one
        n4, nb = (1, 2) if ("70B" in str(r["model"]) or "BF16: 2" in counts) else (1, 1)
        speed = float(str(r["speedup"]).rstrip("x"))
        out.append({"model": MODELS[r["model"]], "gpu": GPUS[r["gpu"]], "batch": b, "n4": n4, "nb": nb,
                    "ratio": speed, "set": "H200, TensorRT-LLM 0.15" if r["gpu"] == "H200" else
                    "H100, TensorRT-LLM 0.11 (lengths and GPU counts not stated: 2,048 / 128 and TP2 BF16 70B assumed)"})
    return out


def model_ratio(r: dict, fit) -> float:
    """The model's INT4 / BF16 tokens/s per GPU for row ``r`` (TensorRT-LLM, static batch, 2,048 / 128)."""
    from optimizer.sizing import serving as sv
    from optimizer.sizing.specs import load_gpu, load_model

    m, g, eng = load_model(r["model"]), load_gpu(r["gpu"]), sv.load_engine("tensorrt-llm")
    i4 = sv.point(m, g, sv.Layout(r["n4"], 1), "int4", eng, r["batch"], 2048, 128, fit, static=True)
    bf = sv.point(m, g, sv.Layout(r["nb"], 1), "bf16", eng, r["batch"], 2048, 128, fit, static=True)
    return (i4.tokens_per_second / r["n4"]) / (bf.tokens_per_second / r["nb"])


def error(rs: list[dict], fit) -> float:
    return statistics.fmean(math.log(model_ratio(r, fit) / r["ratio"]) ** 2 for r in rs)


def fit_on(rs: list[dict], base) -> tuple[float, float]:
    """(bandwidth factor, compute factor) minimising :func:`error` on ``rs`` over the grid."""
    best = min((error(rs, _with(base, bw, c)), bw, c) for bw in GRID_BW for c in GRID_C)
    return best[1], best[2]


def _with(base, bw: float, c: float):
    return replace(base, weight_only_bw_efficiency={"int4": bw, "int8": bw},
                   weight_only_compute_efficiency={"int4": c, "int8": c})


def _report(title: str, rs: list[dict], base, fit) -> None:
    print(title)
    errs = []
    for r in rs:
        before, after = model_ratio(r, base), model_ratio(r, fit)
        errs.append(after / r["ratio"] - 1)
        print(f"  {r['model']:14} {r['gpu']:11} batch {r['batch']:3}: published INT4/BF16 per GPU "
              f"{r['ratio']:.2f}x, model {before:.2f}x unfitted -> {after:.2f}x")
    print(f"  median |error| {statistics.median(abs(e) for e in errs):.1%}, within +-30 %: "
          f"{sum(abs(e) <= 0.30 for e in errs) / len(errs):.0%}")


def main() -> int:
    from optimizer.sizing import serving as sv

    rs = rows()
    base = _with(sv.FIT, 1.0, 1.0)
    sets = sorted({r["set"] for r in rs})
    bw, c = fit_on(rs, base)
    print(f"joint fit on {len(rs)} rows: weight_only_bw_efficiency {bw:.2f}, weight_only_compute_efficiency "
          f"{c:.2f}; shipped {sv.FIT.weight_only_bw_efficiency['int4']:.2f}, "
          f"{sv.FIT.weight_only_compute_efficiency['int4']:.2f}")
    for st in sets:
        _report(f"{st}: joint fit", [r for r in rs if r["set"] == st], base, _with(base, bw, c))
    for st in sets:  # each source predicted by a fit on the other alone
        other = [r for r in rs if r["set"] != st]
        obw, oc = fit_on(other, base)
        _report(f"{st}: predicted by a fit on the other source alone ({obw:.2f}, {oc:.2f})",
                [r for r in rs if r["set"] == st], base, _with(base, obw, oc))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
