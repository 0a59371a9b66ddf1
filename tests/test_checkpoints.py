"""Published quantized checkpoints and ``--precision auto`` (issue 26, point 6: "picks among the precisions the model
publishes checkpoints for (FP8, AWQ/GPTQ), under a stated quality rule")."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from gpuopt.cli import app
from gpuopt.request import WorkloadItem
from optimizer.sizing.checkpoints import (AUTO_MIN_RECOVERY_PCT, auto_checkpoint, auto_quantized, checkpoints_for,
                                          published_checkpoints)
from optimizer.sizing.specs import known_models


def test_every_checkpoint_row_is_sourced_and_its_recovery_is_its_scores_ratio():
    import csv
    from pathlib import Path

    import optimizer

    rows = list(csv.DictReader((Path(optimizer.__file__).parent / "data" / "checkpoints.csv").open()))
    assert len(rows) == len(published_checkpoints()) >= 25
    models = set(known_models())
    for r in rows:
        assert r["model"] in models, r["model"]
        assert r["precision"] in ("fp8", "int8", "int4") and r["activations_bits"] in ("8", "16")
        assert r["source"].startswith("https://") and r["quote"], r["checkpoint"]
        if r["quantized_score"] and r["baseline_score"]:
            want = 100.0 * float(r["quantized_score"]) / float(r["baseline_score"])
            assert float(r["recovery_pct"]) == pytest.approx(want, abs=0.006), r["checkpoint"]


def test_the_quality_rule_on_published_cards():
    # neuralmagic/Meta-Llama-3.1-70B-Instruct-quantized.w4a16 card: "average score of 78.54 on the OpenLLM
    # benchmark (version 1), whereas the unquantized model achieves 78.67" -> 99.83 %: chosen
    c = auto_checkpoint("Llama-3.1-70B", "int4")
    assert c is not None and c.checkpoint == "neuralmagic/Meta-Llama-3.1-70B-Instruct-quantized.w4a16"
    assert c.recovery_pct == pytest.approx(99.83)
    assert auto_quantized("Llama-3.1-70B") == ["int4"]
    # the 8B w4a16 card: 67.57 vs 69.32 -> 97.48 %, under the 99 % bar; hugging-quants' AWQ card publishes none
    assert AUTO_MIN_RECOVERY_PCT == 99.0
    assert auto_quantized("Llama-3.1-8B") == []
    assert any(c.checkpoint.endswith("AWQ-INT4") and c.recovery_pct is None for c in checkpoints_for("Llama-3.1-8B"))
    # Qwen docs' quantization benchmark (MMLU, C-Eval, IFEval average): GPTQ-Int4 81.2, AWQ 80.4, BF16 81.3 -> the
    # GPTQ checkpoint (99.88 %), not the AWQ one (98.89 %); and the w8a16 card (80.01 vs 80.09)
    assert auto_checkpoint("Qwen2-72B", "int4").checkpoint == "Qwen/Qwen2-72B-Instruct-GPTQ-Int4"
    assert auto_quantized("Qwen2-72B") == ["int8", "int4"]
    # W8A8 INT8 checkpoints are listed, never chosen (the serving model's int8 is weight-only)
    assert auto_checkpoint("Llama-3.3-70B", "int8") is None


@pytest.mark.parametrize("model, want", [
    ("meta-llama/Llama-3.1-70B-Instruct", "bf16,fp8,fp16,int4"),
    ("meta-llama/Llama-2-7b-hf", "bf16,fp8,fp16"),
    ("Qwen/Qwen2-72B-Instruct", "bf16,fp8,fp16,int8,int4"),
    # the base model: the Instruct tune's checkpoints say nothing of it (a breaker's finding)
    ("Qwen/Qwen2-72B", "bf16,fp8,fp16"),
])
def test_precision_auto_adds_the_published_checkpoints(model, want):
    item = WorkloadItem(name="chat", task="serve", model=model, precision="auto", tokens_per_second=100)
    assert item.precision == want


def test_auto_serves_a_checkpoint_names_it_and_prices_the_plan_without_it():
    """Qwen2-72B at 2,000 tokens/s on A100-80GB (no FP8 tensor cores): auto serves the GPTQ-Int4 checkpoint, the plan
    names it with its source, and says what the plan without quantized checkpoints would cost (more)."""
    r = CliRunner().invoke(app, ["recommend", "--model", "Qwen/Qwen2-72B-Instruct", "--tokens-per-second", "2000",
                                 "--precision", "auto", "--gpu", "A100-80GB", "--format", "json"])
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    assert {ln["precision"] for ln in d["lines"]} == {"int4"}
    (note,) = [n for n in d["notes"] if "published checkpoint" in n]
    assert "Qwen/Qwen2-72B-Instruct-GPTQ-Int4" in note and "99.88 %" in note and "qwen.readthedocs.io" in note
    pc = d["precision"]
    assert pc["precision"] == "without quantized checkpoints" and pc["total_usd"] > d["total_usd"]


def test_a_named_quantized_precision_without_a_published_comparison_says_so():
    r = CliRunner().invoke(app, ["recommend", "--model", "meta-llama/Llama-2-7b-hf", "--tokens-per-second", "500",
                                 "--precision", "int4", "--no-explain", "--format", "json"])
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    assert any("no published int4 checkpoint of Llama-2-7B" in n for n in d["notes"])
