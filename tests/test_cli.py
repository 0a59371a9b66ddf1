"""The CLI as a user calls it: typer's CliRunner for the commands, and one run of the installed console script."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from gpuopt.cli import app

runner = CliRunner()


def _run(*args):
    return runner.invoke(app, list(args))


def _json(result):
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_recommend_serve_70b_json_meets_demand_and_memory():
    r = _run("recommend", "--budget", "50000", "--model", "meta-llama/Llama-2-70b-hf", "--task", "serve",
             "--tokens-per-second", "2000", "--format", "json")
    d = _json(r)
    assert d["status"] == "optimal"
    assert d["workload_origin"] == "command-line options"
    (w,) = d["workloads"]
    assert w["capacity_peak"] >= 2000
    assert d["horizon_months"] == 12 and "horizon 12 months" in d["rules"][0]  # the default, stated
    assert 0 < d["max_month_usd"] <= 50000
    assert d["total_usd"] == pytest.approx(sum(ln["total_usd"] for ln in d["lines"]), abs=0.05)
    for s in w["sizing"]:
        assert s["memory_gib_per_replica"] > 128  # 69e9 params x 2 bytes = 128.5 GiB of bf16 weights alone
    for ln in d["lines"]:
        # each replica's GPUs hold the weights: GPUs per replica x per-GPU memory >= 128.5 GiB
        assert ln["gpus_per_replica"] * ln["gpu_memory_gib"] >= 128.5
    assert d["strategies"]["all_on_demand"]["total_usd"] >= d["total_usd"]


def test_recommend_table_first_line_names_the_workload_and_its_origin(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    r = _run("recommend", "--budget", "50000")
    assert r.exit_code == 0, r.output
    first = r.stdout.splitlines()[0]
    assert first.startswith("Plan of 1 workload (llama2-7b-chat: serve Llama-2-7B 500 tokens/s) from the bundled example")
    assert "Rule — horizon 12 months" in "\n".join(r.stdout.splitlines()[:5])  # the horizon in the first lines
    assert "Total over 12 months:" in r.stdout and "Prices:" in r.stdout


def test_recommend_uses_local_gpuopt_yaml(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "gpuopt.yaml").write_text(
        "name: nightly-7b\ntask: train\nmodel: meta-llama/Llama-2-7b-hf\ntokens: 2.0e10\ndeadline_hours: 240\n")
    r = _run("recommend", "--budget", "50000", "--format", "json")
    d = _json(r)
    assert d["workload_origin"].endswith("gpuopt.yaml")
    assert d["headline"].startswith("Plan of 1 workload (nightly-7b: train")
    (w,) = d["workloads"]
    assert w["work_flops_planned"] >= w["work_flops_needed"] * (1 - 1e-6)
    # 6 N D (Transformer Math 101): 6 x 6,738,415,616 x 2e10
    assert w["work_flops_needed"] == pytest.approx(6 * 6738415616 * 2e10, rel=1e-9)
    assert w["finish_by_hour"] <= 240 + 1e-6


def test_recommend_train_meets_deadline():
    r = _run("recommend", "--budget", "50000", "--model", "meta-llama/Llama-2-7b-hf", "--task", "train",
             "--tokens", "2e10", "--deadline-hours", "240", "--format", "json")
    d = _json(r)
    assert d["status"] == "optimal"
    assert all(ln["hours"] <= 240 + 1e-6 or ln["pricing"].startswith("reserved") for ln in d["lines"])


def test_budget_too_small_says_what_it_would_take():
    r = _run("recommend", "--budget", "100", "--model", "meta-llama/Llama-2-70b-hf", "--task", "serve",
             "--tokens-per-second", "2000")
    assert r.exit_code == 1
    assert "budget is too small" in r.stdout
    r = _run("recommend", "--budget", "100", "--model", "meta-llama/Llama-2-70b-hf", "--task", "serve",
             "--tokens-per-second", "2000", "--format", "json")
    assert r.exit_code == 1
    d = json.loads(r.stdout)
    assert d["feasible"] is False and d["reason"]["kind"] == "budget"
    assert d["reason"]["budget_needed_usd"] > 100
    # the budget it names is enough:
    ok = _run("recommend", "--budget", str(d["reason"]["budget_needed_usd"] + 0.01), "--model", "meta-llama/Llama-2-70b-hf",
              "--task", "serve", "--tokens-per-second", "2000", "--format", "json")
    assert _json(ok)["max_month_usd"] == pytest.approx(d["reason"]["budget_needed_usd"], abs=0.02)


def test_no_gpu_can_hold_the_replica():
    # a 1-trillion-parameter model in bf16 = 2 TB of weights: more than 64 L4s (1.4 TiB usable) can hold
    r = _run("recommend", "--budget", "50000", "--params", "1e12", "--task", "serve",
             "--tokens-per-second", "10", "--gpu", "L4", "--precision", "bf16")
    assert r.exit_code == 1
    assert "no offered GPU can hold one replica" in r.stdout


@pytest.mark.parametrize(
    "args, field",
    [
        (["recommend", "--budget", "-5", "--model", "meta-llama/Llama-2-7b-hf", "--tokens-per-second", "10"], "--budget"),
        (["recommend", "--budget", "100", "--model", "gpt-9", "--tokens-per-second", "10"], "--model"),
        (["recommend", "--budget", "100", "--model", "meta-llama/Llama-2-7b-hf", "--tokens-per-second", "10", "--gpu", "Z100"], "--gpu"),
        (["recommend", "--budget", "100", "--model", "meta-llama/Llama-2-7b-hf", "--tokens-per-second", "10", "--provider", "ibm"], "--provider"),
        (["recommend", "--budget", "100", "--model", "meta-llama/Llama-2-7b-hf", "--task", "infer"], "--task"),
        (["recommend", "--budget", "100", "--model", "meta-llama/Llama-2-7b-hf", "--task", "train"], "--tokens"),
        (["recommend", "--budget", "100", "--model", "meta-llama/Llama-2-7b-hf", "--tokens-per-second", "10", "--precision", "fp64"], "--precision"),
        (["recommend", "--budget", "100", "--model", "meta-llama/Llama-2-7b-hf", "--tokens-per-second", "10", "--format", "xml"], "--format"),
        (["estimate", "--model", "meta-llama/Llama-2-7b-hf", "--gpu", "Z100"], "--gpu"),
        (["estimate", "--model", "meta-llama/Llama-2-7b-hf", "--task", "train", "--tokens", "1e9", "--zero-stage", "5"], "--zero-stage"),
        (["prices", "list", "--pricing", "free"], "--pricing"),
    ],
)
def test_bad_input_is_one_line_naming_the_field(args, field):
    r = _run(*args)
    assert r.exit_code == 1
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, r.stderr
    assert lines[0].startswith(f"gpuopt: error: {field}"), lines[0]
    assert "Traceback" not in r.output


def test_estimate_train_70b_json():
    d = _json(_run("estimate", "--model", "meta-llama/Llama-2-70b-hf", "--task", "train", "--tokens", "2e12",
                   "--gpu", "A100-80GB", "--format", "json"))
    # 6 N D with N = 68,976,648,192 (model_configs.csv) and D = 2e12
    assert d["train_flops"] == pytest.approx(6 * 68976648192 * 2e12, rel=1e-9)
    for key in ("memory_gib_per_replica", "gpus_per_replica", "gpu_hours", "tokens_per_second_per_replica"):
        assert key in d
    assert d["gpus_per_replica"] >= 16  # 16 bytes/param x 69e9 = 1.1 TB of model states > 8 x 80 GB


def test_prices_list_and_status():
    d = _json(_run("prices", "list", "--gpu", "H100", "--provider", "aws", "--pricing", "reserved_1y", "--format", "json"))
    assert d["rows"], "no AWS reserved 1y H100 rows"
    assert all(r["provider"] == "aws" and r["pricing"] == "reserved_1y" and r["gpu_model"].startswith("H100") for r in d["rows"])
    prices = [r["usd_per_hour"] for r in d["rows"]]
    assert prices == sorted(prices)
    r = _run("prices", "status")
    assert r.exit_code == 0, r.output
    for prov in ("aws", "azure", "gcp", "lambda"):
        assert prov in r.stdout
    s = _json(_run("prices", "status", "--format", "json"))
    assert set(s["prices"]["providers"]) == {"aws", "azure", "gcp", "lambda", "coreweave", "runpod", "nebius"}


def test_catalog_option_plans_over_user_offers(tmp_path):
    f = tmp_path / "offers.csv"
    f.write_text(
        "provider,region,instance_type,gpu_model,gpu_count,gpu_memory_gib,pricing,usd_per_hour\n"
        "onprem,dc1,box-a100,A100-80GB,8,80,on_demand,9.5\n"
        "onprem,dc1,box-l4,L4,1,24,on_demand,0.4\n"
    )
    d = _json(_run("recommend", "--budget", "50000", "--model", "meta-llama/Llama-2-7b-hf", "--tokens-per-second", "100",
                   "--catalog", str(f), "--format", "json"))
    assert {ln["provider"] for ln in d["lines"]} == {"onprem"}
    assert d["prices"]["catalog"] == str(f)


def test_installed_console_script_runs():
    exe = shutil.which("gpuopt")
    assert exe, "the gpuopt console script is not on PATH: install the project first (see README)"
    out = subprocess.run([exe, "estimate", "--model", "meta-llama/Llama-2-7b-hf", "--format", "json"],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    d = json.loads(out.stdout)
    # bf16 weights of Llama-2-7B: 6,738,415,616 x 2 bytes = 12.55 GiB; the replica needs at least that
    assert d["memory_gib_per_replica"] > 12.55
    bad = subprocess.run([exe, "estimate", "--model", "nope"], capture_output=True, text=True, timeout=120)
    assert bad.returncode == 1 and bad.stderr.startswith("gpuopt: error: --model: unknown model")


def test_options_that_do_not_apply_are_reported():
    d = _json(_run("recommend", "--budget", "50000", "--model", "meta-llama/Llama-2-7b-hf", "--tokens-per-second", "100",
                   "--deadline-hours", "10", "--zero-stage", "2", "--format", "json"))
    assert "ignored for workload (task serve): deadline_hours, zero_stage" in d["notes"]


def test_version_and_bare_command():
    r = _run("--version")
    assert r.exit_code == 0 and r.stdout.startswith("gpuopt ")


def test_no_plan_reasons_name_the_cause():
    r = _run("recommend", "--budget", "50000", "--model", "meta-llama/Llama-2-7b-hf", "--tokens-per-second", "100",
             "--provider", "lambda", "--pricing", "reserved_3y")
    assert r.exit_code == 1 and "is sold as reserved_3y; they are offered as: on_demand" in r.stderr
    r = _run("recommend", "--budget", "50000", "--model", "meta-llama/Llama-2-7b-hf", "--tokens-per-second", "100",
             "--gpu", "A6000")
    assert r.exit_code == 1 and "no datasheet row" in r.stderr
    r = _run("recommend", "--budget", "1e9", "--model", "meta-llama/Llama-2-7b-hf", "--tokens-per-second", "1e6",
             "--provider", "lambda", "--max-instances", "1")
    assert r.exit_code == 1 and "--max-instances" in r.stderr and "cheapest plan without that cap uses" in r.stderr
    r = _run("recommend", "--budget", "50000", "--model", "meta-llama/Llama-2-7b-hf", "--tokens-per-second", "100",
             "--gpu", "MI300X")
    assert r.exit_code == 1 and "no provider in the prices offers it" in r.stderr


def test_training_budget_is_for_the_job():
    r = _run("recommend", "--budget", "10", "--model", "meta-llama/Llama-2-7b-hf", "--task", "train", "--tokens", "2e10")
    assert r.exit_code == 1 and "for the whole job" in r.stderr


def test_same_gpu_same_memory_on_every_provider():
    # L4: AWS reports 22,888 MiB = 22.35 GiB; GCP's catalog says 24 (the datasheet's GB): both are sized at 22.35
    d = _json(_run("recommend", "--budget", "50000", "--model", "meta-llama/Llama-2-7b-hf", "--tokens-per-second", "50",
                   "--gpu", "L4", "--concurrency", "1", "--input-tokens", "896", "--output-tokens", "128",
                   "--format", "json"))
    assert d["workloads"][0]["sizing"] and all("22.35 GiB" in s["gpu_shape"] for s in d["workloads"][0]["sizing"])
    e = _json(_run("estimate", "--model", "meta-llama/Llama-2-7b-hf", "--gpu", "L4", "--format", "json"))
    assert any("22.35" in a for a in e["assumptions"])


def test_help_short_option():
    assert _run("-h").exit_code == 0
    assert "refresh" in _run("prices", "-h").stdout


@pytest.mark.parametrize("args", [
    ["prices", "list", "--gpu", "H100", "--format", "json"],
    ["prices", "status", "--format", "table"],
    ["recommend", "--budget", "50000", "--format", "markdown", "--no-explain"],
    ["recommend", "--budget", "50000", "--format", "json", "--no-explain"],
])
def test_a_parquet_suffix_needs_the_focus_format(tmp_path, args):
    # issue 30: --output x.parquet with --format json or markdown wrote text into a .parquet file and exited 0
    out = tmp_path / "x.parquet"
    r = subprocess.run([sys.executable, "-m", "gpuopt.cli", *args, "--output", str(out)], capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 1 and not out.exists() and list(tmp_path.iterdir()) == []
    if "json" in args:  # one error document on stderr
        err = json.loads(r.stderr)["error"]
        assert err["field"] == "output" and err["message"].startswith(f"output: {out}: a .parquet file is Parquet")
    else:  # one line, before any work (no warning of the prices it would have read)
        assert r.stderr.startswith(f"gpuopt: error: output: {out}: a .parquet file is Parquet"), r.stderr
        assert r.stderr.count("\n") == 1 and "only --format focus (recommend, review) writes Parquet" in r.stderr
