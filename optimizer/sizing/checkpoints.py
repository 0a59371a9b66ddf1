"""Published quantized checkpoints and the quality rule of ``--precision auto`` (issue 26, "precision as a decision").

``optimizer/data/checkpoints.csv`` lists quantized checkpoints that model publishers and quantizers put on Hugging
Face (FP8 W8A8, INT8 W8A8 / W8A16, INT4 W4A16 by GPTQ or AWQ), one row each: the model of ``model_configs.csv`` it
quantizes (``model``; ``tuned_variant`` the instruction tune it was made from), the repository, the weight precision
and activation bits, the method, and -- where the card publishes them -- the quantized and the unquantized model's
score on one benchmark (mostly the Open LLM Leaderboard v1 average the Neural Magic / Red Hat AI cards report; the
Qwen documentation's MMLU / C-Eval / IFEval average for Qwen2) with ``recovery_pct`` = 100 x quantized / unquantized,
the source URL and the card's sentence. Rows whose card publishes no comparison are kept (the checkpoint exists) but
never chosen for you.

The rule (:data:`AUTO_MIN_RECOVERY_PCT`): ``precision: auto`` serves bf16, fp8 on GPUs with FP8 tensor cores
(any model: vLLM quantizes a 16-bit checkpoint to FP8 on load), fp16 where bf16 does not run, and a weight-only
quantized precision (int4 W4A16, int8 W8A16) only for a model with a published checkpoint of that precision whose
card reports at least 99 % of the unquantized model's score. 99 % is the bar FP8 W8A8 meets across model sizes and
tasks in Kurtic et al. 2024, "Give Me BF16 or Give Me Death? Accuracy-Performance Trade-Offs in LLM Quantization"
(arXiv 2411.02355), which auto already allows: a checkpoint is chosen only when it loses no more than that. INT8
W8A8 checkpoints are listed but not chosen: the serving model's int8 is weight-only (W8A16, optimizer.sizing.serving).
The plan names the checkpoint it assumes; a fine-tune of your own would need its own quantization and evaluation.
"""

from __future__ import annotations

import csv
import functools
from dataclasses import dataclass
from pathlib import Path

#: Least published accuracy recovery (%, quantized / unquantized score) for ``precision: auto`` to serve a
#: quantized checkpoint: the bar FP8 W8A8 meets in Kurtic et al. 2024 (arXiv 2411.02355), a stated policy.
AUTO_MIN_RECOVERY_PCT = 99.0

_FILE = Path(__file__).resolve().parent.parent / "data" / "checkpoints.csv"
_COLUMNS = ("model", "tuned_variant", "checkpoint", "precision", "activations_bits", "method", "benchmark",
            "quantized_score", "baseline_score", "recovery_pct", "source", "quote")


@dataclass(frozen=True)
class Checkpoint:
    """One published quantized checkpoint (a row of ``checkpoints.csv``).

    ``precision`` the weights' (fp8, int8, int4), ``activations_bits`` 8 (W8A8: FP8 or INT8 activations) or 16
    (weight-only); ``recovery_pct`` the card's quantized / unquantized score in % (None: not published)."""

    model: str
    tuned_variant: str
    checkpoint: str
    precision: str
    activations_bits: int
    method: str
    benchmark: str
    recovery_pct: float | None
    source: str

    @property
    def weight_only(self) -> bool:
        return self.activations_bits == 16

    def describe(self) -> str:
        """``neuralmagic/...w4a16 (GPTQ W4A16; 99.83 % of the unquantized score, OpenLLM v1 average)``."""
        rec = f"{self.recovery_pct:.2f} % of the unquantized score, {self.benchmark.split(' (')[0]}" \
            if self.recovery_pct is not None else "no published comparison"
        return f"{self.checkpoint} ({self.method}; {rec})"


#: Models whose own released weights are stored in a quantized precision (model -> (precision, where it is said)):
#: their replicas in that precision run the publisher's checkpoint, not one quantized on load. DeepSeek-V3 and R1:
#: "weights FP8 e4m3 block 128x128" (shared/data/reference/model_configs_more.csv, torch_dtype column, from the
#: models' config.json quantization_config; DeepSeek-V3 README: "FP8 mixed precision training").
NATIVE_PRECISION: dict[str, tuple[str, str]] = {
    "DeepSeek-V3": ("fp8", "deepseek-ai/DeepSeek-V3 stores its weights in FP8 e4m3 with 128x128 block scales "
                           "(its config.json quantization_config)"),
    "DeepSeek-R1": ("fp8", "deepseek-ai/DeepSeek-R1 stores its weights in FP8 e4m3 with 128x128 block scales, as "
                           "DeepSeek-V3 (its config.json quantization_config)"),
}


def native_precision(model: str) -> tuple[str, str] | None:
    """(precision, where it is said) of a model released in a quantized precision (:data:`NATIVE_PRECISION`), else
    None."""
    return NATIVE_PRECISION.get(model)


@functools.lru_cache(maxsize=1)
def published_checkpoints() -> tuple[Checkpoint, ...]:
    """Every row of ``optimizer/data/checkpoints.csv``. Raises ValueError when a column is missing."""
    with _FILE.open(newline="", encoding="utf-8") as f:
        reader = csv.DictReader(f)
        missing = [c for c in _COLUMNS if c not in (reader.fieldnames or [])]
        if missing:
            raise ValueError(f"{_FILE.name}: missing columns {', '.join(missing)}")
        out = []
        for r in reader:
            rec = (r["recovery_pct"] or "").strip()
            out.append(Checkpoint(model=r["model"], tuned_variant=r["tuned_variant"], checkpoint=r["checkpoint"],
                                  precision=r["precision"], activations_bits=int(r["activations_bits"]),
                                  method=r["method"], benchmark=r["benchmark"],
                                  recovery_pct=float(rec) if rec else None, source=r["source"]))
    return tuple(out)


def checkpoints_for(model: str) -> list[Checkpoint]:
    """The published checkpoints of ``model`` (a name of ``model_configs.csv``, e.g. ``Llama-3.1-70B``)."""
    return [c for c in published_checkpoints() if c.model == model]


def _base(name: str) -> str:
    """A repository or model name as compared: the part after ``/``, lower case, without Meta's ``meta-`` prefix."""
    key = str(name).rsplit("/", 1)[-1].lower()
    return key[len("meta-"):] if key.startswith("meta-") else key


def serves_variant(c: Checkpoint, named: str | None) -> bool:
    """True when a checkpoint describes the model the user named: its instruction tune (``Llama-3.1-70B-Instruct``)
    or the checkpoint itself. A breaker's ``Qwen/Qwen2-72B`` (the base model) got the Instruct tune's GPTQ
    checkpoint: its score says nothing of the base model. ``named`` None: any (the table's model name only)."""
    if named is None:
        return True
    return _base(named) in (_base(c.tuned_variant), _base(c.checkpoint))


def auto_checkpoint(model: str, precision: str, named: str | None = None) -> Checkpoint | None:
    """The weight-only checkpoint of ``model`` at ``precision`` (int8 or int4) that ``precision: auto`` may serve
    for the model the user ``named`` (:func:`serves_variant`): the highest published recovery at or above
    :data:`AUTO_MIN_RECOVERY_PCT`, or None."""
    ok = [c for c in checkpoints_for(model) if c.precision == precision and c.weight_only and serves_variant(c, named)
          and c.recovery_pct is not None and c.recovery_pct >= AUTO_MIN_RECOVERY_PCT]
    return max(ok, key=lambda c: c.recovery_pct or 0.0, default=None)


def auto_quantized(model: str, named: str | None = None) -> list[str]:
    """The weight-only precisions (``int8``, ``int4``) ``precision: auto`` adds for ``model`` as the user ``named``
    it (:func:`auto_checkpoint`)."""
    return [p for p in ("int8", "int4") if auto_checkpoint(model, p, named) is not None]
