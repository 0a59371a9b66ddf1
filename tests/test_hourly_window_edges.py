"""Edges of the warehouse route's window (issue 32), found by a fresh user on the bundled synthetic hourly file
(tests/fixtures/usage/synthetic_hourly.csv: 30 days of GPU rows, window 2024-09-01 .. 2024-10-01)."""
import csv
import json
import re

from typer.testing import CliRunner

from gpuopt.cli import app

FIX = "tests/fixtures/usage/synthetic_hourly.csv"


def _rows():
    with open(FIX, newline="") as f:
        return list(csv.DictReader(f))


def _write(path, rows, fields=None):
    fields = fields or list(rows[0].keys())
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields)
        w.writeheader()
        w.writerows(rows)
    return path


def _review(path, *extra):
    return CliRunner().invoke(app, ["review", "--usage", str(path), "--usage-format", "hourly", "--format", "json",
                                    *extra])


def test_rows_that_stop_before_the_files_window_end_are_warned_not_trimmed(tmp_path):
    # the export has not landed its last 20 days: the file's window still says 2024-10-01; before, the review took
    # 09-01 .. 09-11 as the whole window ("240 of the window's 240 hours") and said nothing
    f = _write(tmp_path / "ten.csv", [r for r in _rows() if r["hour"] < "2024-09-11"])
    r = _review(f)
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    assert d["window_hours"] == 720 and d["coverage_hours"] == 240
    assert any("runs to 2024-10-01 00:00 UTC but the data ends at 2024-09-11 00:00 UTC" in w and
               "unknown, not idle" in w for w in d["warnings"])


def test_bigquery_csv_timestamps_read_as_iso(tmp_path):
    # bq extract writes TIMESTAMP columns as '2024-09-01 00:00:00 UTC'; they were refused ("1 seen: None .. None")
    rows = _rows()
    bq = [{k: re.sub(r"^(\d{4}-\d\d-\d\d)T(\d\d:\d\d:\d\d)Z$", r"\1 \2 UTC", v) for k, v in r.items()} for r in rows]
    assert bq[0]["hour"].endswith(" UTC") and bq[0]["window_end"] == "2024-10-01 00:00:00 UTC"
    a, b = _review(_write(tmp_path / "iso.csv", rows)), _review(_write(tmp_path / "bq.csv", bq))
    assert a.exit_code == 0 and b.exit_code == 0, (a.output, b.output)
    da, db = json.loads(a.stdout), json.loads(b.stdout)
    assert db["window_hours"] == da["window_hours"] == 720
    assert db["totals"] == da["totals"]


def test_a_window_off_the_hour_is_refused_not_rounded(tmp_path):
    rows = [{k: v for k, v in r.items() if not k.startswith("window_")} for r in _rows()]
    f = _write(tmp_path / "bare.csv", rows)
    r = CliRunner().invoke(app, ["review", "--usage", str(f), "--usage-format", "hourly",
                                 "--window", "2024-09-01T00:30", "2024-10-01"])
    assert r.exit_code == 1
    assert "window: '2024-09-01T00:30' is not on a whole hour" in r.stderr and "Traceback" not in r.output


def test_blank_window_cells_are_named(tmp_path):
    rows = _rows()
    rows[3]["window_end"] = ""
    r = _review(_write(tmp_path / "blank.csv", rows))
    assert r.exit_code == 1
    assert "window_start / window_end are empty or not a date or time on some rows" in r.stderr


def test_rows_outside_the_files_window_are_left_out_as_with_window(tmp_path):
    # a breaker's file: the window ends 2024-09-16 but rows run to 2024-10-01; the review took all 30 days
    # ($28,224.33) while its note named the 15-day window. Now both routes review 15 days: $14,112.17 billed
    rows = _rows()
    own = _write(tmp_path / "own.csv", [{**r, "window_end": "2024-09-16T00:00:00Z"} for r in rows])
    bare = _write(tmp_path / "bare.csv", [{k: v for k, v in r.items() if not k.startswith("window_")} for r in rows])
    a, b = _review(own), _review(bare, "--window", "2024-09-01", "2024-09-16")
    assert a.exit_code == 0 and b.exit_code == 0, (a.output, b.output)
    da, db = json.loads(a.stdout), json.loads(b.stdout)
    assert da["totals"] == db["totals"]
    assert da["totals"]["billed_usd"] == 14112.17 and da["window_hours"] == da["coverage_hours"] == 360
    assert any("GPU row(s) outside it left out" in n for n in da["notes"])


def test_a_reversed_window_in_the_file_names_the_file_not_the_option(tmp_path):
    rows = [{**r, "window_start": "2024-10-01T00:00:00Z", "window_end": "2024-09-01T00:00:00Z"} for r in _rows()]
    r = CliRunner().invoke(app, ["review", "--usage", str(_write(tmp_path / "rev.csv", rows)),
                                 "--usage-format", "hourly"])
    assert r.exit_code == 1
    assert "usage: rev.csv: window_start / window_end: start 2024-10-01 00:00 is not before end" in r.stderr
