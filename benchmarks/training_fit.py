"""The training model against published runs (issue 11's calibration set ``shared/data/perf/training.csv``):
prints how far gpuopt's tokens/s per GPU is from the measured runs (estimate / measured), on the whole set and by
framework, GPU, precision and model size, before any fit.

    python benchmarks/training_fit.py [--csv PATH] [--json OUT]

Each usable row (a numeric tokens/s per GPU; a GPU with a datasheet row; a model in gpuopt's table by name, else one
shaped from the row's parameter count) is sized by ``optimizer.sizing.size_replica`` as gpuopt sizes training today:
ZeRO-3 data parallel over the row's GPUs (at most 64: gpuopt has no tensor, pipeline, context or expert parallelism
yet), the row's sequence length and micro-batch, its activation checkpointing when stated, bf16 (fp8 rows are sized at
bf16: no FP8 training yet). Rows that cannot be sized are counted by reason. A row is *within* when estimate /
measured is within +-20 % (issue 11's bound; goal: at least 70 % of runs). Nothing here is fitted: this is the
baseline the training model must beat.
"""

from __future__ import annotations

import argparse
import csv
import json
import statistics
import sys
from collections import Counter, defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))
from benchmarks.serving_fit import _num, perf_csv  # noqa: E402  (after ROOT is on the path)

DEFAULT_CSV = perf_csv("training.csv")
BOUND = 0.20


def _model(row: dict):
    from gpuopt.errors import InputError
    from optimizer.specs import load_model, model_from_params

    name = (row.get("model") or "").split(" (")[0].strip()
    for cand in (name, name.replace("_", "-"), name.replace(" pretraining", "")):
        try:
            return load_model(cand)
        except InputError:
            continue
    params = _num(row.get("params_b"))
    return model_from_params(params * 1e9) if params else None


def evaluate(path: Path) -> dict:
    from gpuopt.errors import InputError
    from optimizer.sizing import Workload, size_replica
    from optimizer.specs import load_gpu

    results, skipped = [], Counter()
    with open(path, newline="", encoding="utf-8") as fh:
        for row in csv.DictReader(fh):
            measured = _num(row.get("tokens_per_s_per_gpu"))
            if not measured:
                skipped["no tokens/s per GPU"] += 1
                continue
            try:
                gpu = load_gpu(row["gpu"])
            except InputError:
                skipped["GPU without a datasheet row (GB200, GB300, B300, 96 GB H100)"] += 1
                continue
            model = _model(row)
            if model is None:
                skipped["model unknown"] += 1
                continue
            gpus = int(_num(row.get("gpu_count")) or 1)
            if gpus > 64:
                skipped["more than 64 GPUs (gpuopt's replica limit today)"] += 1
                continue
            seq = int(_num(row.get("seq_len")) or 2048)
            mb = int(_num(row.get("micro_batch")) or 1)
            ac = (row.get("activation_checkpointing") or "").strip().lower()
            recompute = not ac.startswith(("no", "none", "false", "off"))
            try:
                w = Workload(task="train", model=model, tokens=1e9, context_tokens=min(seq, model.max_context),
                             micro_batch_size=mb, activation_recompute=recompute)
                s = size_replica(w, gpu, float(gpus))
            except (InputError, ValueError, ZeroDivisionError) as exc:
                skipped[f"not sized: {type(exc).__name__}"] += 1
                continue
            est = s.tokens_per_second_per_replica / gpus
            results.append({"row": row["row_id"], "framework": (row.get("framework") or "").split(" (")[0][:30],
                            "gpu": gpu.name, "precision": (row.get("precision") or "")[:12],
                            "params_b": round(model.params_total / 1e9, 2), "measured": measured,
                            "estimated": round(est, 2), "ratio": est / measured, "fits": s.fits})
    return {"rows": results, "skipped": dict(skipped)}


def summary(results: list[dict]) -> dict:
    ratios = [r["ratio"] for r in results]
    if not ratios:
        return {"n": 0}
    return {"n": len(ratios), "median_estimate_over_measured": round(statistics.median(ratios), 3),
            "within_20pct": round(sum(1 for x in ratios if abs(x - 1) <= BOUND) / len(ratios), 3),
            "median_abs_error_pct": round(100 * statistics.median(abs(x - 1) for x in ratios), 1)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--csv", default=str(DEFAULT_CSV))
    ap.add_argument("--json", help="write the rows and the summaries here")
    args = ap.parse_args(argv)
    if not Path(args.csv).is_file():
        print(f"training_fit: no such file: {args.csv}", file=sys.stderr)
        return 1
    out = evaluate(Path(args.csv))
    rows = out["rows"]
    print(f"training calibration set: {len(rows)} rows sized, skipped {out['skipped']}")
    print("all:", summary(rows))
    for key in ("framework", "gpu", "precision"):
        groups = defaultdict(list)
        for r in rows:
            groups[r[key]].append(r)
        for name, rs in sorted(groups.items(), key=lambda kv: -len(kv[1])):
            print(f"  {key} {name}: {summary(rs)}")
    sizes = defaultdict(list)
    for r in rows:
        sizes["<1B" if r["params_b"] < 1 else "1-10B" if r["params_b"] < 10 else "10-100B" if r["params_b"] < 100
              else ">=100B"].append(r)
    for name, rs in sizes.items():
        print(f"  size {name}: {summary(rs)}")
    if args.json:
        Path(args.json).write_text(json.dumps({"summary": summary(rows), **out}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
