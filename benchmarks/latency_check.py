"""How the serving latency model does at the load users send (issue 27): the operating-point simulation
(``optimizer/sizing/operating.py``) against the published rate sweeps in ``benchmarks/data/rate_sweeps.csv``.

Nothing is fitted here: every row whose model, GPU and precision the sizing tables know is predicted at its stated
request rate (Poisson arrivals, the row's mean lengths, its TP size) and compared with its published TTFT and TPOT
(median where published, else mean; p99 too). Prints, per statistic, how many rows fall within +-35 % (issue 27's
goal: 85 %) and the median error, and the rows the model saturates where the source did not.

    python benchmarks/latency_check.py [--csv benchmarks/data/rate_sweeps.csv] [--rows]
"""

from __future__ import annotations

import argparse
import math
import re
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

#: The GPU names of the sweeps, as the datasheet table names them (None: not in the table).
GPU_NAMES = (("A100-SXM4-80GB", "A100-80GB"), ("A800-SXM4-80GB", "A100-80GB"), ("A100-SXM4-40GB", "A100-40GB"),
             ("H100-PCIe", None), ("H100 80GB", "H100-80GB"), ("H200", "H200-141GB"), ("RTX 4090 D", None),
             ("RTX-4090", "RTX-4090"), ("RTX 4090", "RTX-4090"), ("RTX 3090", "RTX-3090"), ("L4", "L4"),
             ("V100S-PCIE-32GB", "V100-32GB"), ("V100-PCIE-32GB", "V100-32GB"))
PRECISIONS = (("fp8", "fp8"), ("w8a8", None), ("w8a16", "int8"), ("w4a16", "int4"), ("int4", "int4"),
              ("bf16", "bf16"), ("fp16", "fp16"), ("float16", "fp16"))
WITHIN = 0.35


def _gpu(text: str) -> str | None:
    for part, name in GPU_NAMES:
        if part.lower() in str(text).lower():
            return name
    return None


def _precision(row) -> str | None:
    text = f"{row['precision']} {row['hf_repo']}".lower()
    for part, name in PRECISIONS:
        if part in text:
            return name
    return "bf16"


def _num(v) -> float | None:
    try:
        x = float(v)
    except (TypeError, ValueError):
        return None
    return x if math.isfinite(x) and x > 0 else None


def main(argv: list[str] | None = None) -> int:
    import pandas as pd

    from gpuopt.kernel.errors import InputError
    from optimizer.sizing import Workload, operating_point
    from optimizer.sizing.specs import load_gpu, load_model

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--csv", default=str(ROOT / "benchmarks" / "data" / "rate_sweeps.csv"))
    ap.add_argument("--rows", action="store_true", help="print every row's prediction")
    args = ap.parse_args(argv)
    d = pd.read_csv(args.csv)
    d = d[d["load_type"] == "request_rate"]
    errs: dict[str, list[float]] = {"ttft": [], "tpot": [], "ttft_p99": [], "tpot_p99": []}
    used = skipped = saturated = 0
    for _, r in d.iterrows():
        gpu, prec = _gpu(r["gpu"]), _precision(r)
        rate, inp, out = _num(r["load_value"]), _num(r["input_tokens"]), _num(r["output_tokens"])
        tp = int(_num(r["tensor_parallel"]) or _num(r["gpu_count"]) or 1)
        if not (gpu and prec and rate and inp and out):
            skipped += 1
            continue
        try:
            repo = re.sub(r"-quantized\..*|-FP8.*", "", str(r["hf_repo"]).split(" ")[0]).replace("RedHatAI/", "meta-llama/")
            m = load_model(repo)
            w = Workload(task="serve", model=m, precision=prec, input_tokens=int(inp), output_tokens=int(out))
            pt = operating_point(w, load_gpu(gpu), tp, 1, rate)
        except (InputError, ValueError, KeyError):
            skipped += 1
            continue
        if pt is None:
            skipped += 1
            continue
        used += 1
        if pt.saturated:
            saturated += 1
            continue
        pairs = {"ttft": (_num(r["ttft_median_ms"]) or _num(r["ttft_mean_ms"]), pt.ttft_p50_ms
                          if _num(r["ttft_median_ms"]) else pt.ttft_ms),
                 "tpot": (_num(r["tpot_median_ms"]) or _num(r["tpot_mean_ms"]), pt.tpot_p50_ms
                          if _num(r["tpot_median_ms"]) else pt.tpot_ms),
                 "ttft_p99": (_num(r["ttft_p99_ms"]), pt.ttft_p99_ms), "tpot_p99": (_num(r["tpot_p99_ms"]), pt.tpot_p99_ms)}
        for k, (pub, got) in pairs.items():
            if pub and got:
                errs[k].append(got / pub - 1.0)
        if args.rows:
            print(f"{r['setup_id'][:60]:60} {rate:6.2f}/s  TTFT {pairs['ttft'][0]} vs {pairs['ttft'][1]:.0f}  "
                  f"TPOT {pairs['tpot'][0]} vs {pairs['tpot'][1]:.1f}")
    print(f"rows at a stated request rate: {len(d)}; predicted {used} (saturated in the model where the source ran: "
          f"{saturated}); left out {skipped} (GPU, model or precision not in the tables)")
    for k, e in errs.items():
        if e:
            ok = sum(abs(x) <= WITHIN for x in e)
            print(f"{k:9} n={len(e):3}  within +-35 %: {ok / len(e):5.1%}  median |error| "
                  f"{statistics.median(abs(x) for x in e):5.1%}  median signed {statistics.median(e):+6.1%}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
