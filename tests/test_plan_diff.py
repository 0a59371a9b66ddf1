"""`gpuopt diff OLD.json NEW.json` (issue 12, point 7): money and line changes of two plans, and a cost gate."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from gpuopt import api
from gpuopt.kernel.errors import InputError
from gpuopt.plan_diff import EXIT_COST_GATE, diff_plans, gate

ROOT = Path(__file__).resolve().parents[1]


def _line(itype, pricing, count, total, **kw):
    return {"provider": "aws", "region": "us-east-1", "zone": "", "instance_type": itype, "pricing": pricing,
            "payment": kw.get("payment", ""), "start_month": 1, "end_month": 12, "count": count, "total_usd": total}


OLD = {"schema_version": 2, "kind": "recommend", "status": "optimal", "total_usd": 10000.0, "max_month_usd": 1000.0, "commitment_usd": 6000.0,
       "upfront_usd": 0.0, "lines": [_line("g6.xlarge", "on_demand", 2, 4000.0),
                                     _line("p4d.24xlarge", "reserved_1y", 1, 6000.0, payment="no_upfront")]}
NEW = {"schema_version": 2, "kind": "recommend", "status": "optimal", "total_usd": 11000.0, "max_month_usd": 1100.0, "commitment_usd": 6000.0,
       "upfront_usd": 0.0, "lines": [_line("g6.xlarge", "on_demand", 3, 5000.0),
                                     _line("p4d.24xlarge", "reserved_1y", 1, 6000.0, payment="no_upfront")]}


def test_money_and_lines_change():
    d = diff_plans(OLD, NEW)
    assert d.money["total_usd"] == (10000.0, 11000.0, 1000.0, 10.0)
    assert d.money["commitment_usd"] == (6000.0, 6000.0, 0.0, 0.0)
    (ln,) = d.lines  # the reservation did not change
    assert (ln["instance_type"], ln["change"], ln["count_old"], ln["count_new"]) == ("g6.xlarge", "changed", 2, 3)
    assert ln["total_usd_change"] == 1000.0
    gone = diff_plans(OLD, {**NEW, "lines": NEW["lines"][1:]})
    assert [x["change"] for x in gone.lines] == ["removed"]
    assert [x["change"] for x in diff_plans({**OLD, "lines": []}, OLD).lines] == ["added", "added"]


def test_cost_gate():
    d = diff_plans(OLD, NEW)
    assert gate(d, 5.0)[0] is True and gate(d, 10.0)[0] is False  # +10.00 %: above 5, within 10
    assert gate(d, None) == (False, "")
    free = diff_plans({**OLD, "total_usd": 0.0}, NEW)
    assert gate(free, 1000.0)[0] is True  # from $0 to something fails any gate
    with pytest.raises(InputError) as e:
        gate(d, -1.0)
    assert e.value.field == "fail_above"


def test_cli_exit_codes_and_json(tmp_path):
    old, new = tmp_path / "old.json", tmp_path / "new.json"
    old.write_text(json.dumps(OLD))
    new.write_text(json.dumps(NEW))

    def run(*args):
        return subprocess.run([sys.executable, "-m", "gpuopt.cli", "diff", *args], capture_output=True, text=True,
                              cwd=ROOT, timeout=120)

    r = run(str(old), str(new), "--fail-above", "5", "--format", "json")
    assert r.returncode == EXIT_COST_GATE
    doc = json.loads(r.stdout)
    assert doc["money"]["total_usd"]["change_pct"] == 10.0 and "above the limit" in doc["gate"]
    assert run(str(old), str(new), "--fail-above", "10").returncode == 0
    bad = tmp_path / "bad.json"
    bad.write_text("[1, 2]")
    r = run(str(old), str(bad))
    assert r.returncode == 1 and "Traceback" not in r.stderr and "new:" in r.stderr


def test_api_reads_plan_files(tmp_path):
    p = tmp_path / "p.json"
    p.write_text(json.dumps(OLD))
    d = api.diff(p, p)
    assert d.money["total_usd"][2] == 0.0 and d.lines == []
    with pytest.raises(InputError) as e:
        api.diff(tmp_path / "missing.json", p)
    assert e.value.field == "old"


@pytest.mark.parametrize("change, message", [
    ({"schema_version": 99}, "has schema_version 99, which this gpuopt does not read (it reads 1, 2)"),
    ({"schema_version": None}, "has no schema_version: not a plan this gpuopt wrote"),
    ({"schema_version": "2"}, "has schema_version '2', which this gpuopt does not read"),
    ({"kind": "estimate"}, "is a gpuopt estimate document, not a plan"),
])
def test_diff_reads_only_plan_documents_it_knows(tmp_path, change, message):
    # issue 30: plans of schema_version 99, of none, and other documents were compared with exit 0 and no note
    old, new = tmp_path / "old.json", tmp_path / "new.json"
    old.write_text(json.dumps(OLD))
    doc = {**NEW, **change}
    if change.get("schema_version", 0) is None:
        doc.pop("schema_version")
    new.write_text(json.dumps(doc))
    r = subprocess.run([sys.executable, "-m", "gpuopt.cli", "diff", str(old), str(new)], capture_output=True,
                       text=True, cwd=ROOT, timeout=120)
    assert r.returncode == 1 and r.stdout == ""
    assert r.stderr.startswith(f"gpuopt: error: new: {new} ") and message in r.stderr and r.stderr.count("\n") == 1


def test_a_version_1_plan_is_read_with_a_note_of_what_it_lacks(tmp_path):
    # docs/json-schema.md History: version 1 had no schema_version key, one month, total_monthly_usd
    old, new = tmp_path / "old.json", tmp_path / "new.json"
    old.write_text(json.dumps({"status": "optimal", "total_monthly_usd": 900.0,
                               "lines": [{"provider": "aws", "region": "us-east-1", "instance_type": "g6.xlarge",
                                          "pricing": "on_demand", "count": 1}]}))
    new.write_text(json.dumps(NEW))
    r = subprocess.run([sys.executable, "-m", "gpuopt.cli", "diff", str(old), str(new), "--format", "json"],
                       capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    assert d["money"]["total_usd"]["old"] == 900.0 and d["money"]["total_usd"]["new"] == 11000.0
    assert d["notes"] == [f"old (old.json) is a schema_version 1 plan (one month, no horizon): its total is that "
                          "month's cost (total_monthly_usd), it has no max-month, commitment or upfront amounts and "
                          "its lines no totals, so those compare as 0"]
    table = subprocess.run([sys.executable, "-m", "gpuopt.cli", "diff", str(old), str(new)], capture_output=True,
                           text=True, cwd=ROOT, timeout=120, env={**__import__("os").environ, "COLUMNS": "200"})
    assert table.returncode == 0 and "Note: old (old.json) is a schema_version 1 plan" in table.stdout
