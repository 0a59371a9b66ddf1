"""One CLI dialect (issue 32, point 4): ``--format`` is the output format in every command (``prices import`` takes
``--input-format``; the old ``--format <file type>`` and ``--json`` still work for one release, with a deprecation
line), every usage error exits 2, ``-q`` prints results only, errors name the input a bad value came from (the
option, the file and line, the API argument), the plan table keeps its purchase column at 60 columns, counts are in
words ("1 GPU", "3 replicas") and the cost gate is said once."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import gpuopt
from gpuopt.cli import main
from gpuopt.kernel.errors import InputError
from gpuopt.kernel.words import count_range, plural

ROOT = Path(__file__).resolve().parents[1]
OFFERS = ROOT / "tests" / "fixtures" / "offers" / "onprem_ok.csv"
#: A small serving plan the exact enumeration solves in about a second (no MILP, no explanation solves).
SMALL = ["recommend", "--model", "meta-llama/Llama-2-7b-hf", "--tokens-per-second", "100", "--no-explain",
         "--horizon", "1"]


def _run(capsys, *argv) -> tuple[int, str, str]:
    """(exit code, stdout, stderr) of ``gpuopt ARGV`` through the console-script entry point."""
    with pytest.raises(SystemExit) as e:
        main(list(argv))
    out = capsys.readouterr()
    return e.value.code, out.out, out.err


# ------------------------------------------------------------------------------------------- exit codes
@pytest.mark.parametrize("argv, says", [
    (["review"], "Missing option '--usage'"),
    (["diff"], "Missing argument 'old'"),
    (["diff", "a.json"], "Missing argument 'new'"),
    (["prices", "import"], "Missing argument 'file'"),
    (["recommend", "--no-such-option"], "No such option: --no-such-option"),
    (["no-such-command"], "No such command 'no-such-command'"),
    (["prices", "no-such-command"], "No such command 'no-such-command'"),
])
def test_every_usage_error_exits_2_with_one_line(capsys, argv, says):
    code, out, err = _run(capsys, *argv)
    assert code == 2 and out == ""
    assert err.startswith("gpuopt: error: ") and says in err and err.count("\n") == 1


def test_a_usage_error_with_format_json_is_an_error_document_with_code_2(capsys):
    code, out, err = _run(capsys, "review", "--format", "json")
    doc = json.loads(err)
    assert code == 2 and out == ""
    assert doc["kind"] == "error" and doc["exit_code"] == 2
    assert doc["error"]["type"] == "usage" and doc["error"]["field"] == "usage"


@pytest.mark.parametrize("argv, says", [
    (["recommend", "--budget", "abc"], "--budget"),
    (["prices", "list", "--limit", "-1"], "--limit"),
    (["estimate", "--format", "yaml"], "unknown format 'yaml'"),
])
def test_a_bad_value_exits_1(capsys, argv, says):
    code, out, err = _run(capsys, *argv)
    assert code == 1 and out == "" and says in err and err.count("\n") == 1


# ------------------------------------------------------------------------------------------- prices import
def test_prices_import_reads_input_format_and_writes_format(capsys):
    code, out, err = _run(capsys, "prices", "import", str(OFFERS), "--input-format", "offers", "--as-of",
                          "2026-10-01", "--format", "json")
    assert code == 0 and err == ""
    doc = json.loads(out)
    assert doc["kind"] == "prices-import"
    assert [s["provider"] for s in doc["snapshots"]] == ["onprem"]
    code, out, err = _run(capsys, "prices", "import", str(OFFERS), "--input-format", "offers", "--as-of",
                          "2026-10-01")
    assert code == 0 and err == "" and out.startswith("onprem: prices as of 2026-10-01")


def test_the_old_spelling_still_works_for_one_release_with_a_deprecation_line(capsys):
    code, out, err = _run(capsys, "prices", "import", str(OFFERS), "--format", "offers", "--as-of", "2026-10-01")
    assert code == 0 and out.startswith("onprem: prices as of 2026-10-01")
    assert err == ("gpuopt: warning: --format offers is deprecated for the file's type: use --input-format offers "
                   "(--format is the output format, table or json, as in every command)\n")
    # --json (the old output flag) with the old --format: JSON on stdout, stderr kept for an error document
    code, out, err = _run(capsys, "prices", "import", str(OFFERS), "--format", "offers", "--as-of", "2026-10-01",
                          "--json")
    doc = json.loads(out)
    assert code == 0 and err == "" and doc["kind"] == "prices-import"
    # ... the deprecations said in the document's notes (README Habits: "with a one-line deprecation warning")
    assert doc["notes"][:2] == ["deprecated: --format offers is deprecated for the file's type: use --input-format "
                                "offers (--format is the output format, table or json, as in every command)",
                                "deprecated: --json is deprecated: use --format json"]
    # -q: no deprecation line either
    code, out, err = _run(capsys, "-q", "prices", "import", str(OFFERS), "--format", "offers", "--as-of",
                          "2026-10-01")
    assert code == 0 and err == ""


def test_prices_import_errors_name_the_option(capsys):
    code, out, err = _run(capsys, "prices", "import", str(OFFERS))
    assert code == 2 and err.startswith("gpuopt: error: --input-format: missing: the type of the price file "
                                        "(accepted: skypilot, ec2instances, offers,")
    code, out, err = _run(capsys, "prices", "import", str(OFFERS), "--input-format", "xlsx")
    assert code == 1 and err.startswith("gpuopt: error: --input-format: unknown import format 'xlsx'")
    code, out, err = _run(capsys, "prices", "import", str(OFFERS), "--input-format", "offers", "--format", "xlsx")
    assert code == 1 and err.startswith("gpuopt: error: --format: unknown output format 'xlsx'")
    assert err.rstrip().endswith("(accepted: table, json)")
    code, out, err = _run(capsys, "prices", "import", str(OFFERS), "--input-format", "offers", "--as-of",
                          "yesterday", "--format", "json")
    doc = json.loads(err)
    assert code == 1 and doc["error"]["field"] == "as_of" and doc["error"]["message"].startswith("--as-of: ")


# ------------------------------------------------------------------------------------------- errors name their input
def test_a_bad_option_is_named_as_the_option_not_the_example_file(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # no ./gpuopt.yaml: the bundled example workload is read
    code, out, err = _run(capsys, "recommend", "--gpu", "H1000")
    assert code == 1 and err.startswith("gpuopt: error: --gpu: unknown GPU 'H1000' (accepted: ")
    assert "example_workload" not in err and "line" not in err
    code, out, err = _run(capsys, "recommend", "--tokens-per-second", "-5")
    assert (code, err) == (1, "gpuopt: error: --tokens-per-second: must be greater than 0, got -5\n")


def test_a_bad_api_argument_is_named_as_the_argument(tmp_path):
    with pytest.raises(InputError) as e:
        gpuopt.recommend(budget="abc", cwd=tmp_path)
    assert e.value.field == "budget"
    assert str(e.value) == "budget: must be a number, got 'abc' (the budget= argument)"
    with pytest.raises(InputError) as e:
        gpuopt.recommend(gpus=["H1000"], cwd=tmp_path)
    assert e.value.field == "gpus" and e.value.message == "unknown GPU 'H1000' (the gpus= argument)"
    with pytest.raises(InputError) as e:  # over a plan made from the arguments alone (a model given)
        gpuopt.recommend(model="meta-llama/Llama-2-7b-hf", tokens_per_second=100, budget="x", cwd=tmp_path)
    assert str(e.value) == "budget: must be a number, got 'x' (the budget= argument)"


def test_a_bad_file_value_is_named_with_its_file_and_line(tmp_path, capsys):
    plan = tmp_path / "plan.yaml"
    plan.write_text("name: chat\nmodel: meta-llama/Llama-2-7b-hf\ntokens_per_second: 100\n"
                    "gpus: [L4, H1000]\nbudget: abc\n")
    with pytest.raises(InputError) as e:
        gpuopt.recommend(workload=plan)
    assert str(e.value) == f"budget: must be a number, got 'abc' ({plan}, line 5)"
    # the budget given as an argument replaces the file's: the next bad value is the file's GPU, at its line
    with pytest.raises(InputError) as e:
        gpuopt.recommend(workload=plan, budget=1000)
    assert e.value.field == "gpus" and e.value.message == f"unknown GPU 'H1000' ({plan}, line 4)"
    # and from the command line: the file's line for the file's value, the option for the option's
    code, out, err = _run(capsys, "recommend", "--workload", str(plan), "--budget", "1000")
    assert code == 1 and err.startswith(f"gpuopt: error: gpus: unknown GPU 'H1000' ({plan}, line 4)")
    code, out, err = _run(capsys, "recommend", "--workload", str(plan), "--budget", "1000", "--gpu", "H2000")
    assert code == 1 and err.startswith("gpuopt: error: --gpu: unknown GPU 'H2000' (accepted: ")


# ------------------------------------------------------------------------------------------- -q, 60 columns
def test_quiet_prints_results_only(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, out, err = _run(capsys, *SMALL)
    assert code == 0 and "Note: " in out and "gpuopt: warning: " in err  # the notes and warnings -q leaves out
    code, out, err = _run(capsys, "-q", *SMALL)
    assert code == 0 and err == ""
    assert "Note: " not in out and "Note on dates" not in out
    assert out.startswith("Plan of 1 workload") and "Plan (optimal" in out and "Total over 1 month: $" in out


def test_the_plan_table_keeps_its_purchase_column_at_60_columns(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("COLUMNS", "60")
    code, out, err = _run(capsys, "-q", *SMALL)
    assert code == 0
    table = out[out.index("Plan (optimal"):out.index("Total over")]
    head = [ln for ln in table.splitlines() if "where" in ln][0]
    assert "purchase" in head and "count" in head and "$/month" in head
    assert max(len(ln) for ln in table.splitlines()) <= 60
    assert "months, $/h each not shown" in " ".join(table.split())


def test_a_plan_says_which_rows_its_counts_are_of(capsys, tmp_path, monkeypatch):
    """823 undated AWS rows in a plan's Prices line, 832 in `prices status`: the plan counts the offers it may use
    (no AWS Local Zones by default), the status every row; the plan's line says so."""
    monkeypatch.chdir(tmp_path)
    code, out, _ = _run(capsys, "-q", *SMALL, "--format", "json")
    plan_aws = json.loads(out)["prices"]["providers"]["aws"]["undated_rows"]
    code, out, _ = _run(capsys, "prices", "status", "--format", "json")
    status_aws = json.loads(out)["prices"]["providers"]["aws"]["undated_rows"]
    assert 0 < plan_aws < status_aws
    code, out, _ = _run(capsys, "-q", *SMALL)
    assert ("(rows counted: the offers this plan may use, by its providers, regions, GPUs and zones; `gpuopt prices "
            "status` counts every row)") in " ".join(out.split())


# ------------------------------------------------------------------------------------------- words, cost gate
def test_counts_in_words():
    assert [plural(1, "GPU"), plural(2, "GPU"), plural(0, "block"), plural(0.5, "GPU")] == \
        ["1 GPU", "2 GPUs", "0 blocks", "0.5 GPU"]
    assert plural(4096, "GPU", ",") == "4,096 GPUs"
    assert [count_range(3, 3, "replica"), count_range(2, 4, "replica"), count_range(1, 1, "replica")] == \
        ["3 replicas", "2-4 replicas", "1 replica"]


def test_the_cost_gate_is_said_once(capsys, tmp_path):
    def line(count, total):
        return {"provider": "aws", "region": "us-east-1", "zone": "", "instance_type": "g6.xlarge",
                "pricing": "on_demand", "payment": "", "start_month": 1, "end_month": 12, "count": count,
                "total_usd": total}

    base = {"schema_version": 2, "kind": "recommend", "status": "optimal", "max_month_usd": 1000.0,
            "commitment_usd": 0.0, "upfront_usd": 0.0}
    old, new = tmp_path / "old.json", tmp_path / "new.json"
    old.write_text(json.dumps({**base, "total_usd": 10000.0, "lines": [line(2, 10000.0)]}))
    new.write_text(json.dumps({**base, "total_usd": 11000.0, "lines": [line(3, 11000.0)]}))
    code, out, err = _run(capsys, "diff", str(old), str(new), "--fail-above", "5")
    assert code == 4
    assert (out + err).count("above the limit of 5 %") == 1
    assert err == "gpuopt: cost gate: total rose by $1,000.00 (+10.00 %): above the limit of 5 %\n"
    code, out, err = _run(capsys, "diff", str(old), str(new), "--fail-above", "10")
    assert code == 0 and out.count("Cost gate: total rose by $1,000.00 (+10.00 %): within 10 %") == 1


def test_one_gpu_is_one_gpu_not_1_gpus(capsys):
    """A 7B finetune fits one H200: the estimate's head and its scale note say "1 GPU" (they said "1 GPUs")."""
    code, out, err = _run(capsys, "estimate", "--model", "meta-llama/Llama-2-7b-hf", "--task", "finetune", "--gpu",
                          "H200-141GB", "--tokens", "1e6", "--gpus", "fewest")
    assert code == 0
    assert out.startswith("Estimate: Llama-2-7B, finetune, on H200-141GB: 1 GPU, ")
    assert "- scale: 1 GPU, the fewest that hold the job (--gpus fewest)" in out and "1 GPUs" not in out


@pytest.mark.parametrize("argv, says", [
    (["--format", "offers", "--input-format", "skypilot"],
     "--format: 'offers' (the deprecated spelling of --input-format) contradicts --input-format skypilot"),
    (["--input-format", "offers", "--json", "--format", "table"], "--json: contradicts --format table"),
])
def test_contradicting_old_and_new_spellings_are_refused(capsys, argv, says):
    # a breaker's combinations: --json --format table printed JSON; a file type in both spellings was refused as
    # an unknown output format
    code, out, err = _run(capsys, "prices", "import", str(OFFERS), "--as-of", "2026-10-01", *argv)
    assert code == 1 and out == "" and err.count("\n") == 1
    if "--json" in argv:  # JSON asked for: the error is a document
        assert json.loads(err)["error"]["message"].startswith(says)
    else:
        assert err.startswith(f"gpuopt: error: {says}")


def test_the_same_type_in_both_spellings_is_one_type(capsys):
    code, out, err = _run(capsys, "prices", "import", str(OFFERS), "--format", "offers", "--input-format", "offers",
                          "--as-of", "2026-10-01")
    assert code == 0 and out.startswith("onprem: prices as of 2026-10-01") and "deprecated" in err


@pytest.mark.parametrize("argv, says", [
    # a breaker and a new user: review named its fields ("format: unknown format 'foo'", which reads as --format),
    # prices list and estimate said "gpu:" where recommend said "--gpu:"
    (["review", "--usage", str(ROOT / "tests/fixtures/usage/synthetic_hourly.csv"), "--usage-format", "foo"],
     "--usage-format: unknown format 'foo'"),
    (["review", "--usage", str(ROOT / "tests/fixtures/usage/synthetic_hourly.csv"), "--term", "5y"],
     "--term: unknown term '5y'"),
    (["review", "--usage", str(ROOT / "tests/fixtures/usage/synthetic_hourly.csv"), "--lookback", "abc"],
     "--lookback: not a duration: 'abc'"),
    (["review", "--usage", str(ROOT / "tests/fixtures/usage/synthetic_hourly.csv"), "--format", "xml"],
     "--format: unknown format 'xml'"),
    (["prices", "list", "--gpu", "H1000"], "--gpu: unknown GPU 'H1000'"),
    (["estimate", "--model", "meta-llama/Llama-2-7b-hf", "--gpu", "H1000"], "--gpu: unknown GPU 'H1000'"),
])
def test_errors_of_every_command_name_the_option_typed(capsys, argv, says):
    code, out, err = _run(capsys, *argv)
    assert code == 1 and out == "" and err.startswith(f"gpuopt: error: {says}") and err.count("\n") == 1


def test_a_file_options_error_still_names_the_file(capsys, tmp_path):
    bare = tmp_path / "bare.csv"
    bare.write_text("provider,region,instance_type,hour,usage_hours,billed_cost,effective_cost\n"
                    "aws,us-east-1,p4d.24xlarge,2024-09-01T00:00:00Z,1,21.96,21.96\n")
    code, out, err = _run(capsys, "review", "--usage", str(bare), "--usage-format", "hourly")
    assert code == 1 and err.startswith("gpuopt: error: usage: bare.csv has no window_start / window_end column(s)")
