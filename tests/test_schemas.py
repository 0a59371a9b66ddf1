"""Issue 12 point 3-5: versioned JSON documents with published JSON Schemas (generated from gpuopt.schemas), the exit
codes, JSON errors on stderr, --output for every format, CLI habits (--quiet, --no-color, tables that fit the
terminal) and the complete Python API with ``.to_dataframe()``.

Every document here comes from a real command on the shipped snapshot; each is validated three ways: by its pydantic
model, by the published JSON Schema file through ``jsonschema`` (the FinOps pipeline's view), and by
:func:`gpuopt.schemas.undeclared_keys` (every key gpuopt writes is declared in the schema).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import jsonschema
import pandas as pd
import pytest
from typer.testing import CliRunner

import gpuopt
from gpuopt import schemas
from gpuopt.cli import app

ROOT = Path(__file__).resolve().parents[1]
SCHEMA_DIR = ROOT / "docs" / "schemas"
FOCUS_EXPORT = ROOT / "tests" / "fixtures" / "usage" / "synthetic_focus_1.0.csv"
runner = CliRunner()


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("GPUOPT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("GPUOPT_MAX_PRICE_AGE_DAYS", raising=False)
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.chdir(tmp_path)


def _run(*args, env=None):
    return runner.invoke(app, list(args), env=env)


def _doc(*args) -> dict:
    r = _run(*args)
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout)


def _valid(doc: dict, kind: str) -> None:
    """The document is of ``kind``, carries its version, and passes the model, the published schema and the
    every-key-declared check."""
    assert doc["kind"] == kind and doc["schema_version"] == schemas.VERSIONS[kind]
    parsed = schemas.validate(doc)
    assert schemas.undeclared_keys(parsed) == []
    schema = json.loads((SCHEMA_DIR / f"{kind}.schema.json").read_text(encoding="utf-8"))
    errors = [f"{'/'.join(map(str, e.absolute_path))}: {e.message}"
              for e in jsonschema.Draft202012Validator(schema).iter_errors(doc)]
    assert errors == []


# --------------------------------------------------------------------------------------- published schemas
def test_published_schemas_are_generated_from_the_models(tmp_path):
    """docs/schemas/*.schema.json are exactly what `python -m gpuopt.schemas --write docs/schemas` writes (regenerate
    them after changing a model), and each is a valid draft 2020-12 schema with its kind and version as consts."""
    fresh = schemas.write_schemas(tmp_path)
    assert sorted(p.name for p in SCHEMA_DIR.glob("*.schema.json")) == sorted(p.name for p in fresh)
    for p in fresh:
        assert (SCHEMA_DIR / p.name).read_text(encoding="utf-8") == p.read_text(encoding="utf-8"), \
            f"{p.name} is stale: python -m gpuopt.schemas --write docs/schemas"
        s = json.loads(p.read_text(encoding="utf-8"))
        jsonschema.Draft202012Validator.check_schema(s)
        kind = p.name.removesuffix(".schema.json")
        if kind in schemas.INPUTS:  # what gpuopt reads (the plan request): not a document, no kind or version
            continue
        assert s["properties"]["kind"]["const"] == kind
        assert s["properties"]["schema_version"]["const"] == schemas.VERSIONS[kind]


def test_recommend_document_keeps_its_feasibility_rule():
    """The rule of docs/json-schema.md survives generation: feasible means optimal/time_limit and no reason."""
    s = json.loads((SCHEMA_DIR / "recommend.schema.json").read_text(encoding="utf-8"))
    v = jsonschema.Draft202012Validator(s)
    d = _doc("recommend", "--budget", "50000", "--format", "json", "--no-explain")
    _valid(d, "recommend")
    bad = dict(d, status="infeasible")
    assert any("infeasible" in e.message for e in v.iter_errors(bad))


# ------------------------------------------------------------------------------ every kind of document
def test_every_command_writes_a_versioned_document_of_its_kind():
    _valid(_doc("estimate", "--model", "meta-llama/Llama-2-7b-hf", "--format", "json"), "estimate")
    e = _doc("estimate", "--model", "meta-llama/Llama-2-7b-hf", "--task", "train", "--tokens", "2e10",
             "--format", "json")
    _valid(e, "estimate")
    assert e["gpus"] >= 1 and e["layout"]["tensor_parallel"] >= 1
    _valid(_doc("estimate", "--model", "meta-llama/Llama-2-7b-hf", "--task", "lora", "--tokens", "1e8",
                "--deadline-hours", "10", "--format", "json"), "estimate")
    p = _doc("prices", "list", "--gpu", "H100", "--limit", "5", "--format", "json")
    _valid(p, "prices-list")
    assert len(p["rows"]) == 5 and p["total_matching"] >= 5
    st = _doc("prices", "status", "--format", "json")
    _valid(st, "prices-status")
    assert st["snapshot_schema_version"] >= 1  # the snapshot file's own version, not the document's
    _valid(_doc("prices", "diff", "--since", "2026-01-01", "--format", "json"), "prices-diff")
    rv = _doc("review", "--usage", str(FOCUS_EXPORT), "--format", "json")
    _valid(rv, "review")


def test_plan_diff_document(tmp_path):
    a = _run("recommend", "--budget", "50000", "--format", "json", "--no-explain", "--output", str(tmp_path / "a.json"))
    assert a.exit_code == 0, a.output
    b = _run("recommend", "--budget", "50000", "--format", "json", "--no-explain", "--tokens-per-second", "1500",
             "--model", "meta-llama/Llama-2-7b-hf", "--task", "serve", "--output", str(tmp_path / "b.json"))
    assert b.exit_code == 0, b.output
    d = _doc("diff", str(tmp_path / "a.json"), str(tmp_path / "b.json"), "--format", "json")
    _valid(d, "plan-diff")
    assert d["money"]["total_usd"]["new"] > d["money"]["total_usd"]["old"]  # 3x the demand costs more


# ---------------------------------------------------------------------------------------- exit codes
def test_exit_codes_and_json_errors_on_stderr(tmp_path):
    # 2: usage error (click) -- an unknown option; with --format json the error is a JSON document on stderr
    r = _run("estimate", "--bogus", "--format", "json")
    assert r.exit_code == 2
    # 1: bad input -- a value gpuopt refuses, named
    r = _run("estimate", "--model", "no-such-model-xyz", "--format", "json")
    assert r.exit_code == 1 and r.stdout == ""
    err = json.loads(r.stderr)
    _valid(err, "error")
    assert err["exit_code"] == 1 and err["error"]["type"] == "input" and err["error"]["field"] == "model"
    r = _run("estimate", "--model", "no-such-model-xyz")  # the same as one line for people
    assert r.exit_code == 1 and r.stderr.startswith("gpuopt: error: --model:") and len(r.stderr.splitlines()) == 1
    # 1: no plan -- the plan document (feasible false) on stdout, the error on stderr
    r = _run("recommend", "--budget", "1", "--format", "json", "--no-explain")
    assert r.exit_code == 1
    assert json.loads(r.stdout)["feasible"] is False
    err = json.loads(r.stderr)  # stderr is exactly one error document
    assert err["error"]["type"] == "no_plan" and err["exit_code"] == 1


def test_usage_errors_exit_2_through_the_console_entry_point(capsys):
    from gpuopt.cli import main

    with pytest.raises(SystemExit) as e:
        main(["recommend", "--no-such-option", "-f", "json"])
    assert e.value.code == 2
    err = json.loads(capsys.readouterr().err)
    assert err["kind"] == "error" and err["error"]["type"] == "usage" and "--no-such-option" in err["error"]["message"]
    with pytest.raises(SystemExit) as e:
        main(["no-such-command"])
    assert e.value.code == 2
    with pytest.raises(SystemExit) as e:
        main(["--quiet", "--verbose", "prices", "status"])
    assert e.value.code == 2


def test_cost_gate_exit_code_4(tmp_path):
    for name, tps in (("a.json", "500"), ("b.json", "1500")):
        r = _run("recommend", "--budget", "50000", "--model", "meta-llama/Llama-2-7b-hf", "--task", "serve",
                 "--tokens-per-second", tps, "--format", "json", "--no-explain", "-o", str(tmp_path / name))
        assert r.exit_code == 0, r.output
    r = _run("diff", str(tmp_path / "a.json"), str(tmp_path / "b.json"), "--fail-above", "10", "--format", "json")
    assert r.exit_code == 4
    err = json.loads(r.stderr)
    assert err["exit_code"] == 4 and err["error"]["type"] == "cost_gate"
    assert json.loads(r.stdout)["kind"] == "plan-diff"  # the diff itself is still printed


# -------------------------------------------------------------------------------------------- --output
@pytest.mark.parametrize("args", [
    ("estimate", "--model", "meta-llama/Llama-2-7b-hf"),
    ("prices", "list", "--gpu", "L4", "--limit", "3"),
    ("prices", "status"),
    ("prices", "diff", "--since", "2026-01-01"),
    ("review", "--usage", str(FOCUS_EXPORT)),
])
@pytest.mark.parametrize("fmt", ["json", "table"])
def test_output_writes_every_format_to_the_file(tmp_path, args, fmt):
    out = tmp_path / f"out.{fmt}"
    r = _run(*args, "--format", fmt, "--output", str(out))
    assert r.exit_code == 0, r.output
    assert r.stdout == ""  # nothing on stdout: it all went to the file
    text = out.read_text(encoding="utf-8")
    if fmt == "json":
        assert json.loads(text)["schema_version"] >= 1
    else:
        assert text.strip() and not text.lstrip().startswith("{")
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".out")] == []  # no temporary file left


def test_output_to_a_folder_or_a_missing_folder_is_a_named_error(tmp_path):
    r = _run("estimate", "--model", "meta-llama/Llama-2-7b-hf", "--output", str(tmp_path))
    assert r.exit_code == 1 and r.stderr.startswith("gpuopt: error: output:") and "folder" in r.stderr
    r = _run("estimate", "--model", "meta-llama/Llama-2-7b-hf", "--output", str(tmp_path / "no" / "x.json"))
    assert r.exit_code == 1 and "does not exist" in r.stderr


def test_failed_command_leaves_an_existing_output_untouched(tmp_path):
    out = tmp_path / "plan.json"
    out.write_text("previous", encoding="utf-8")
    r = _run("estimate", "--model", "no-such-model-xyz", "--format", "json", "--output", str(out))
    assert r.exit_code == 1
    assert out.read_text(encoding="utf-8") == "previous"


# ------------------------------------------------------------------------------------------ CLI habits
def test_quiet_drops_warnings_and_notes_not_results(tmp_path):
    loud = _run("prices", "list", "--gpu", "L4", "--limit", "1")
    assert "gpuopt: warning:" in loud.stderr  # the shipped snapshot is in use: said on stderr
    quiet = _run("--quiet", "prices", "list", "--gpu", "L4", "--limit", "1")
    assert quiet.exit_code == 0 and quiet.stderr == ""
    assert quiet.stdout == loud.stdout
    # --format json: stderr is for an error document only; the warnings are in the document
    js = _run("prices", "list", "--gpu", "L4", "--limit", "1", "--format", "json")
    assert js.stderr == "" and any("shipped snapshot" in w for w in json.loads(js.stdout)["prices"]["warnings"])
    r = _run("recommend", "--budget", "1", "--format", "json", "--no-explain")  # no plan: one error document
    assert r.exit_code == 1 and json.loads(r.stderr)["error"]["type"] == "no_plan"
    # global flags may follow the command (moved before it by the console entry point)
    from gpuopt.cli import _globals_first

    assert _globals_first(["prices", "list", "-q", "--no-color"]) == ["-q", "--no-color", "prices", "list"]
    r = _run("-q", "estimate", "--model", "meta-llama/Llama-2-7b-hf", "-o", str(tmp_path / "e.txt"))
    assert r.exit_code == 0 and r.stderr == ""


def test_no_color_and_the_NO_COLOR_variable():
    args = ("prices", "list", "--gpu", "L4", "--limit", "2")
    colored = _run(*args, env={"FORCE_COLOR": "1", "TTY_COMPATIBLE": "1"})
    assert "\x1b[" in colored.stdout  # rich styles a forced terminal
    assert "\x1b[" not in _run("--no-color", *args, env={"FORCE_COLOR": "1", "TTY_COMPATIBLE": "1"}).stdout
    assert "\x1b[" not in _run(*args, env={"FORCE_COLOR": "1", "TTY_COMPATIBLE": "1", "NO_COLOR": "1"}).stdout


@pytest.mark.parametrize("columns", [80, 100])
def test_tables_fit_the_terminal_and_never_cut_a_price(columns):
    """An 80-column terminal: no line is wider, and every price is printed whole (the issue saw "1…")."""
    rows = _doc("prices", "list", "--gpu", "H100", "--limit", "8", "--format", "json")["rows"]
    r = _run("prices", "list", "--gpu", "H100", "--limit", "8", env={"COLUMNS": str(columns)})
    assert r.exit_code == 0
    assert max(len(line) for line in r.stdout.splitlines()) <= columns
    assert "…" not in r.stdout
    for row in rows:
        assert f"{row['usd_per_hour']:,.4f}" in r.stdout
    plan = _run("recommend", "--budget", "50000", "--no-explain", env={"COLUMNS": str(columns)})
    assert plan.exit_code == 0 and max(len(line) for line in plan.stdout.splitlines()) <= columns
    assert "$27,856.80" in plan.stdout  # the plan's total, whole (2 RunPod A100 SXM on demand)


def test_shell_completion_script_and_completion_itself():
    r = _run("completion", "bash")
    assert r.exit_code == 0 and "_GPUOPT_COMPLETE=complete_bash" in r.stdout
    assert _run("completion", "tcsh").exit_code == 1  # one line naming the shells it knows
    # the installed console script completes a command and an option, as the shell would ask it
    import os
    import shutil
    import subprocess

    exe = shutil.which("gpuopt")
    assert exe, "install first: pip install -e ."
    env = {**os.environ, "_GPUOPT_COMPLETE": "complete_bash", "COMP_WORDS": "gpuopt pri", "COMP_CWORD": "1"}
    assert subprocess.run([exe], env=env, capture_output=True, text=True, timeout=60).stdout.split() == ["prices"]
    env.update(COMP_WORDS="gpuopt review --sc", COMP_CWORD="2")
    assert "--scope" in subprocess.run([exe], env=env, capture_output=True, text=True, timeout=60).stdout.split()


# ------------------------------------------------------------------------------------------- Python API
def test_python_api_is_complete_and_returns_dataframes(tmp_path):
    for name in ("recommend", "estimate", "review", "prices_list", "prices_status", "prices_refresh",
                 "prices_import", "prices_diff", "diff"):
        assert callable(getattr(gpuopt, name)), name
    e = gpuopt.estimate(model="meta-llama/Llama-2-7b-hf")
    df = e.to_dataframe()
    assert isinstance(df, pd.DataFrame) and len(df) == 1 and df.loc[0, "gpus_per_replica"] == 1.0
    pl = gpuopt.prices_list(gpu=["L4"], limit=4)
    df = pl.to_dataframe()
    assert list(df["usd_per_hour"]) == sorted(df["usd_per_hour"]) and len(df) == 4
    st = gpuopt.prices_status()
    assert st.to_dict()["kind"] == "prices-status"
    sd = st.to_dataframe()
    assert {"provider", "source", "as_of", "rows"} <= set(sd.columns) and sd["rows"].sum() > 1000
    rv = gpuopt.review(usage=FOCUS_EXPORT)
    rec = rv.to_dataframe()
    assert len(rec) == len(rv.recommendations)
    assert len(rv.to_dataframe("usage")) == len(rv.usage) >= 1
    r = gpuopt.recommend(budget=50000, explain=False, cwd=tmp_path)
    lines = r.to_dataframe()
    assert len(lines) == len(r.plan.lines) and lines["total_usd"].sum() == pytest.approx(r.plan.total_usd, abs=0.05)
    d = gpuopt.prices_diff(since="2026-01-01")
    assert d.to_dict()["kind"] == "prices-diff" and isinstance(d.to_dataframe(), pd.DataFrame)


def test_error_document_schema_names_every_exit_code():
    s = json.loads((SCHEMA_DIR / "error.schema.json").read_text(encoding="utf-8"))
    codes = s["properties"]["exit_code"]["enum"]
    assert sorted(codes) == [1, 2, 3, 4, 5] and sorted(schemas.EXIT_CODES) == [0, 1, 2, 3, 4, 5]
    assert re.search(r"\| *3 *\|", (ROOT / "README.md").read_text(encoding="utf-8"))  # the README's table


# ------------------------------------------------------------------------- what the first users and breakers found
CUR = ROOT / "tests" / "fixtures" / "usage" / "synthetic_cur2.csv"


def test_an_output_never_replaces_a_file_the_command_reads(tmp_path):
    import shutil

    usage = tmp_path / "sept.csv"
    shutil.copy(CUR, usage)
    before = usage.read_bytes()
    # --output the export itself
    r = _run("review", "--usage", str(usage), "--format", "json", "--output", str(usage))
    assert r.exit_code == 1 and "output:" in r.stderr and "reads" in r.stderr
    # a report whose CSV beside it would be named like the export (sept.html -> sept.csv)
    r = _run("review", "--usage", str(usage), "--format", "html", "--output", str(tmp_path / "sept.html"))
    assert r.exit_code == 1 and "sept.csv" in r.stderr
    assert usage.read_bytes() == before and not (tmp_path / "sept.html").exists()
    # the plan file of recommend, the plans of diff
    w = tmp_path / "w.yaml"
    w.write_text("name: x\ntask: serve\nmodel: meta-llama/Llama-2-7b-hf\ntokens_per_second: 500\n")
    r = _run("recommend", "--workload", str(w), "--no-explain", "--format", "json", "--output", str(w))
    assert r.exit_code == 1 and w.read_text().startswith("name: x")


def test_an_output_that_cannot_be_written_is_one_line_and_leaves_no_temporary_file(tmp_path, monkeypatch):
    import os as _os

    def deny(src, dst):
        raise PermissionError(13, "Permission denied")

    out = tmp_path / "e.json"
    out.write_text("previous")
    monkeypatch.setattr(_os, "replace", deny)
    r = _run("estimate", "--model", "meta-llama/Llama-2-7b-hf", "--format", "json", "--output", str(out))
    assert r.exit_code == 1 and isinstance(r.exception, SystemExit)  # no traceback
    err = json.loads(r.stderr)
    assert err["error"]["field"] == "output" and "Permission denied" in err["error"]["message"]
    assert out.read_text() == "previous" and [p.name for p in tmp_path.iterdir() if p.name != "cache"] == ["e.json"]


def test_a_report_and_its_files_are_written_whole_or_not_at_all(tmp_path):
    report = tmp_path / "r.html"
    report.write_text("KEEP")
    (tmp_path / "r.csv").mkdir()  # the CSV beside the report cannot be written
    r = _run("review", "--usage", str(CUR), "--format", "html", "--output", str(report))
    assert r.exit_code == 1 and "r.csv" in r.stderr and "folder" in r.stderr
    assert report.read_text() == "KEEP" and not (tmp_path / "r.json").exists()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []
    (tmp_path / "r.csv").rmdir()
    r = _run("review", "--usage", str(CUR), "--format", "html", "--output", str(report))
    assert r.exit_code == 0 and report.read_text().lower().startswith("<!doctype html>")
    assert {p.name for p in tmp_path.iterdir()} >= {"r.html", "r.csv", "r.json"}


def test_outputs_get_the_mode_of_a_new_file(tmp_path):
    import os as _os

    mask = _os.umask(0o022)
    try:
        out = tmp_path / "e.json"
        assert _run("estimate", "--model", "meta-llama/Llama-2-7b-hf", "--format", "json", "-o", str(out)).exit_code == 0
        assert (out.stat().st_mode & 0o777) == 0o644  # not mkstemp's 0600: other users and CI artifacts can read it
    finally:
        _os.umask(mask)


def test_the_cost_gate_fails_when_the_new_plan_has_no_solution(tmp_path):
    ok = _run("recommend", "--budget", "50000", "--no-explain", "--format", "json", "-o", str(tmp_path / "a.json"))
    assert ok.exit_code == 0
    none = _run("recommend", "--budget", "100", "--no-explain", "--format", "json", "-o", str(tmp_path / "b.json"))
    assert none.exit_code == 1 and json.loads((tmp_path / "b.json").read_text())["feasible"] is False
    r = _run("diff", str(tmp_path / "a.json"), str(tmp_path / "b.json"), "--fail-above", "5")
    assert r.exit_code == 4 and "no solution" in r.stderr


def test_a_value_click_cannot_convert_is_bad_input_not_a_usage_error(capsys):
    from gpuopt.cli import main

    with pytest.raises(SystemExit) as e:
        main(["recommend", "--budget", "abc", "--format", "json"])
    assert e.value.code == 1
    err = json.loads(capsys.readouterr().err)
    assert err["error"]["type"] == "input" and err["error"]["field"] == "budget"


def test_models_and_import_documents_and_their_tables(tmp_path):
    _valid(_doc("estimate", "--list-models", "--format", "json"), "models")
    offers = ROOT / "tests" / "fixtures" / "offers" / "onprem_ok.csv"
    r = _run("prices", "import", str(offers), "--input-format", "offers", "--as-of", "2026-10-01", "--format", "json")
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    _valid(doc, "prices-import")
    df = gpuopt.prices_import(file=offers, fmt="offers", as_of="2026-10-01").to_dataframe()
    assert list(df["provider"]) == ["onprem"] and df.loc[0, "rows"] >= 2


def test_empty_results_keep_their_columns():
    df = gpuopt.prices_list(gpu=["K80"], pricing=["capacity_block"]).to_dataframe()
    assert df.empty and {"provider", "instance_type", "usd_per_hour"} <= set(df.columns)
    d = gpuopt.prices_diff(since="2026-11-30").to_dataframe()
    assert {"change", "provider", "usd_per_hour_now"} <= set(d.columns)
    r = gpuopt.recommend(budget=1, explain=False)
    assert r.to_dataframe().empty and "total_usd" in r.to_dataframe().columns


def test_all_upfront_commitments_have_no_recurring_fee_in_focus():
    rv = gpuopt.review(usage=CUR, term="3y", payment="all_upfront")
    from gpuopt.focus import focus_rows

    rows = focus_rows(rv.focus_charges())
    purchases = [r for r in rows if r["ChargeCategory"] == "Purchase"]
    assert purchases and all(r["ChargeFrequency"] == "One-Time" for r in purchases)


# ------------------------------------------------------------------------------------------ second round
def test_output_writes_through_special_files_and_symlinks(tmp_path):
    import os as _os

    real = tmp_path / "real.json"
    real.write_text("old")
    link = tmp_path / "link.json"
    link.symlink_to(real)
    r = _run("estimate", "--model", "meta-llama/Llama-2-7b-hf", "--format", "json", "--output", str(link))
    assert r.exit_code == 0 and link.is_symlink() and json.loads(real.read_text())["kind"] == "estimate"
    # /dev/null stays a device; a report (files beside it) cannot go there
    r = _run("estimate", "--model", "meta-llama/Llama-2-7b-hf", "--format", "json", "--output", "/dev/null")
    assert r.exit_code == 0 and not Path("/dev/null").is_file()
    r = _run("review", "--usage", str(CUR), "--format", "html", "--output", "/dev/null")
    assert r.exit_code == 1 and "not a regular file" in r.stderr and not Path("/dev/null").is_file()
    r = _run("review", "--usage", str(CUR), "--format", "focus", "--output", "/dev/null")
    assert r.exit_code == 0 and not Path("/dev/null").is_file()
    fifo = tmp_path / "f.json"
    _os.mkfifo(fifo)
    import threading

    got = []
    t = threading.Thread(target=lambda: got.append(open(fifo).read()))
    t.start()
    r = _run("estimate", "--model", "meta-llama/Llama-2-7b-hf", "--format", "json", "--output", str(fifo))
    t.join(30)
    assert r.exit_code == 0 and json.loads(got[0])["kind"] == "estimate" and not fifo.is_file()


def test_files_a_plan_file_names_and_usage_folders_are_inputs_too(tmp_path):
    import shutil

    shutil.copy(ROOT / "gpuopt" / "data" / "chat_daily.csv", tmp_path / "chat_daily.csv")
    plan = tmp_path / "plan.yaml"
    plan.write_text("workloads:\n  - name: chat\n    task: serve\n    model: meta-llama/Llama-2-7b-hf\n"
                    "    demand_profile: chat_daily.csv\n")
    before = (tmp_path / "chat_daily.csv").read_text()
    r = _run("recommend", "--workload", str(plan), "--no-explain", "--format", "json",
             "--output", str(tmp_path / "chat_daily.csv"))
    assert r.exit_code == 1 and "reads" in r.stderr and (tmp_path / "chat_daily.csv").read_text() == before
    # an output inside a --usage folder would be read as part of the export next time
    folder = tmp_path / "cur"
    folder.mkdir()
    import pandas as pd

    pd.read_csv(CUR).to_parquet(folder / "part-0.parquet")
    r = _run("review", "--usage", str(folder), "--format", "focus", "--output", str(folder / "new.parquet"))
    assert r.exit_code == 1 and "inside the folder" in r.stderr and not (folder / "new.parquet").exists()


def test_a_usage_folder_mixing_export_formats_is_refused(tmp_path):
    import pandas as pd

    folder = tmp_path / "mixed"
    folder.mkdir()
    pd.read_csv(CUR).to_parquet(folder / "a.parquet")
    pd.read_csv(FOCUS_EXPORT).to_parquet(folder / "b.parquet")
    r = _run("review", "--usage", str(folder))
    assert r.exit_code == 1 and "mixes export formats" in r.stderr and "aws-cur-2.0" in r.stderr


def test_model_and_params_together_are_refused_by_recommend():
    r = _run("recommend", "--budget", "50000", "--model", "meta-llama/Llama-2-70b-hf", "--params", "3e9",
             "--tokens-per-second", "100")
    assert r.exit_code == 1 and "either --model or --params" in r.stderr


@pytest.mark.parametrize("args", [
    ("prices", "status"),
    ("recommend", "--budget", "50000", "--model", "meta-llama/Llama-2-70b-hf", "--tokens-per-second", "2000"),
    ("review", "--usage", str(CUR)),
])
@pytest.mark.parametrize("columns", [60, 72, 100])
def test_no_table_cuts_a_number_from_60_columns(args, columns):
    r = _run(*args, env={"COLUMNS": str(columns)})
    assert r.exit_code == 0, r.output
    lines = r.stdout.splitlines()
    assert max(len(x) for x in lines) <= columns
    assert not [x for x in lines if "…" in x]


# ------------------------------------------------------------------------------ models built from the results
def test_result_models_are_built_from_the_result_dataclasses():
    """schemas.from_result: the published rows have exactly the result dataclass's fields (a field added to
    FleetLine, TypeUsage, CommitmentRecommendation, ProviderOutcome or PriceDiff is published without restating it),
    and a refinement may not declare a field the dataclass does not have."""
    import dataclasses

    from optimizer import review as rv
    from optimizer.planning.answer import FleetLine
    from pricing_cache.history import PriceDiff
    from pricing_cache.refresh import ProviderOutcome

    for model, cls, extra in [(schemas.Line, FleetLine, set()), (schemas.TypeUsage, rv.TypeUsage, set()),
                              (schemas.CommitmentRecommendation, rv.CommitmentRecommendation, set()),
                              (schemas.RefreshProvider, ProviderOutcome, set()),
                              (schemas.PricesDiffDoc, PriceDiff, {"schema_version", "kind"})]:
        assert set(model.model_fields) == {f.name for f in dataclasses.fields(cls)} | extra, model.__name__

    @dataclasses.dataclass
    class Toy:
        usd: float
        added_later: int = 3
        tags: list[str] = dataclasses.field(default_factory=list)

    class _Toy(schemas._Open):
        usd: float = schemas.Field(ge=0, description="US dollars.")

    s = schemas.from_result(Toy, _Toy).model_json_schema()
    assert s["title"] == "Toy" and list(s["properties"]) == ["usd", "added_later", "tags"]
    assert s["properties"]["usd"]["minimum"] == 0 and s["properties"]["added_later"]["default"] == 3
    assert s["properties"]["tags"]["default"] == [] and s["required"] == ["usd"]

    class _Stale(schemas._Open):
        usd: float
        gone: str

    with pytest.raises(TypeError, match="gone"):
        schemas.from_result(Toy, _Stale)
