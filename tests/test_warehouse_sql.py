"""The warehouse SQL of providers/sql/ on the engines it is written for, or parsed in their dialect.

- spark_focus_hourly_usage.sql runs on real Spark (pyspark, local mode, one module-scoped session: ~5 s to start,
  ~15 s for the first query, which warms the JVM) over the real FOCUS 1.0 sample (FOCUS-Sample-Data, 1,000 rows)
  and the synthetic FOCUS month; its hourly usage equals gpuopt's own reader of the same export, both read
  directly and after Spark writes it as CSV and ``read_usage(fmt="hourly")`` reads that back.
- bigquery_focus_hourly_usage.sql is parsed with sqlglot (read="bigquery"): the columns it selects are the hourly
  format's, the FOCUS columns it reads are FOCUS 1.2 columns and the Spark file's; then sqlglot transpiles it to
  DuckDB and it runs on the same exports with the same result as the reader.
- athena_cur2_hourly_gpu_usage.sql: the same for Trino/Athena (sqlglot read="athena") on the CUR 2.0 fixtures.

Spark needs Java (17 here); without pyspark or java the Spark tests skip, except under CI (env CI set, as .ci/run
and GitHub Actions do), where they fail: CI must not pass without running them.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pandas as pd
import pytest

from focus_validator import FOCUS_1_2_COLUMNS
from providers import usage as U
from gpuopt.kernel.errors import InputError
from test_usage import (CUR_TWO_ACCOUNT_HOURS, FIX, FOCUS_TWO_ACCOUNT_HOURS, SQL_ACCOUNT_COLUMNS, _write_hourly,
                        compare_sql_python, cur_account_hours, cur_rows, csv_view, duckdb_connection,
                        focus_account_hours, run_sql, sql_params, write_cur, write_cur_two_accounts,
                        write_focus_two_accounts)

FOCUS_EXPORTS = ["focus_sample_1.0.csv", "synthetic_focus_1.0.csv"]  # real (CC BY 4.0), synthetic
SQL_COLUMNS = set(U.HOURLY_COLUMNS) - {"commitment_id"} | {"window_start", "window_end"}  # no commitment split
# pyspark warns about pandas 3 on import; these tests use no pyspark pandas API
pytestmark = pytest.mark.filterwarnings("ignore:PySpark does not yet fully support pandas:FutureWarning")


def _need(what: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(f"{what}: the warehouse SQL tests must run in CI (pip install -e '.[test]', Java 17)")
    pytest.skip(what)


# -------------------------------------------------------------------------------------------------------- Spark

@pytest.fixture(scope="module")
def spark():
    try:
        from pyspark.sql import SparkSession
    except ImportError:
        _need("pyspark is not installed")
    if not (shutil.which("java") or os.environ.get("JAVA_HOME")):
        _need("no Java runtime for Spark (java not on PATH, JAVA_HOME unset)")
    session = (SparkSession.builder.master("local[1]").appName("gpuopt-warehouse-sql")
               .config("spark.ui.enabled", "false")
               .config("spark.sql.shuffle.partitions", "1")
               .config("spark.sql.session.timeZone", "UTC")  # as the SQL file's header requires
               .config("spark.driver.memory", "512m")
               .getOrCreate())
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


def spark_focus(spark, csv_path: Path, start: str = "2000-01-01", end: str = "2100-01-01", everything: bool = False):
    """The FOCUS CSV as a Spark view ``focus`` of strings, the literal NULL/null and empty fields as SQL NULL (a
    missing SubAccountId stays missing: the SQL takes sub_account_column BillingAccountId, as its header says), then
    the Spark SQL file with its named parameters; a Spark DataFrame of the GPU rows (window columns dropped) unless
    ``everything``."""
    from pyspark.sql import functions as F

    raw = spark.read.csv(str(csv_path), header=True, inferSchema=False, escape='"')
    raw.select([F.when(F.col(c).isin("NULL", "null", ""), None).otherwise(F.col(c)).alias(c)
                for c in raw.columns]).createOrReplaceTempView("focus")
    sub = "SubAccountId" if "SubAccountId" in raw.columns else "BillingAccountId"
    df = spark.sql(U.load_sql("spark_focus_hourly_usage.sql"),
                   args={"table": "focus", "start": start, "end": end, "sub_account_column": sub})
    return df if everything else df.where("instance_type IS NOT NULL").drop("window_start", "window_end")


def spark_rows(df) -> pd.DataFrame:
    """Collected rows; the hour as epoch seconds from Spark itself (no Python local-time conversion)."""
    rows = df.selectExpr("*", "unix_timestamp(hour) AS hour_epoch").drop("hour").collect()
    out = pd.DataFrame([r.asDict() for r in rows])
    out["hour"] = pd.to_datetime(out.pop("hour_epoch"), unit="s", utc=True)
    return out


@pytest.mark.parametrize("fixture", FOCUS_EXPORTS)
def test_spark_sql_on_spark_equals_reader(spark, fixture):
    assert set(spark_focus(spark, FIX / fixture, everything=True).columns) == SQL_COLUMNS
    df = spark_focus(spark, FIX / fixture)
    out = spark_rows(df)
    d = U.read_usage(FIX / fixture)
    compare_sql_python(out, d)
    if fixture == "focus_sample_1.0.csv":  # the real sample's GPU rows: g3.4xlarge and g5.4xlarge, us-east-1
        hours = out.groupby("instance_type")["usage_hours"].sum()
        assert hours.to_dict() == {"g3.4xlarge": pytest.approx(1.686667), "g5.4xlarge": pytest.approx(6.283056)}
        assert set(out["region"]) == {"us-east-1"} and len(out) == 10


def test_spark_sql_on_spark_splits_accounts_as_reader(spark, tmp_path):
    p = write_focus_two_accounts(tmp_path / "focus_two_accounts.csv")
    out, d = spark_rows(spark_focus(spark, p)), U.read_usage(p)
    compare_sql_python(out, d)
    assert focus_account_hours(out) == FOCUS_TWO_ACCOUNT_HOURS


def test_spark_sql_without_ansi_mode_equals_reader(spark):
    """Spark 3.x (and Databricks before Spark 4) run with spark.sql.ansi.enabled false; Spark 4 with true."""
    ansi = spark.conf.get("spark.sql.ansi.enabled")
    spark.conf.set("spark.sql.ansi.enabled", "false" if ansi == "true" else "true")
    try:
        out = spark_rows(spark_focus(spark, FIX / "focus_sample_1.0.csv"))
    finally:
        spark.conf.set("spark.sql.ansi.enabled", ansi)
    compare_sql_python(out, U.read_usage(FIX / "focus_sample_1.0.csv"))


def test_spark_output_saved_as_csv_reads_back_as_hourly(spark, tmp_path):
    """The file header's workflow: Spark saves the result as CSV, read_usage(fmt="hourly") reads it."""
    df = spark_focus(spark, FIX / "synthetic_focus_1.0.csv", "2024-09-01", "2024-10-01", everything=True)
    df.coalesce(1).write.csv(str(tmp_path / "out"), header=True)
    (part,) = (tmp_path / "out").glob("part-*.csv")
    d = U.read_usage(part, fmt="hourly")
    assert d.bad_rows == [] and len(d.hourly) == 1620 and d.rows_not_gpu == 720  # + one row per covered hour
    ref = U.read_usage(FIX / "synthetic_focus_1.0.csv").hourly
    key = ["provider", "region", "instance_type", "pricing_category", "account_id", "hour"]
    cols = ["usage_hours", "billed_cost", "effective_cost", "list_cost"]
    pd.testing.assert_frame_equal(d.hourly.groupby(key)[cols].sum(min_count=1),
                                  ref.groupby(key)[cols].sum(min_count=1), check_exact=False, rtol=1e-9)


# ---------------------------------------------------------------------------------------------- sqlglot dialects

def _sqlglot():
    try:
        import sqlglot
    except ImportError:
        _need("sqlglot is not installed")
    return sqlglot


def _parse(name: str, dialect: str, table: str = ""):
    return _sqlglot().parse_one(U.load_sql(name), read=dialect)


def _source_columns(tree) -> set[str]:
    """Columns the first CTE (``src``, the only one reading the export) refers to."""
    from sqlglot import exp

    src = next(c for c in tree.find_all(exp.CTE) if c.alias == "src")
    return {c.name for c in src.find_all(exp.Column)} - {"w0", "w1"}  # the window, from the params CTE


def test_bigquery_sql_parses_with_the_reader_columns_and_focus_1_2_inputs():
    tree = _parse("bigquery_focus_hourly_usage.sql", "bigquery", "project.dataset.focus")
    assert set(tree.named_selects) == SQL_COLUMNS
    read = _source_columns(tree)
    assert read - FOCUS_1_2_COLUMNS == set()
    assert {"ChargePeriodStart", "ChargePeriodEnd", "ChargeDescription", "BilledCost", "EffectiveCost",
            "ConsumedQuantity", "ConsumedUnit", "BillingCurrency"} <= read
    spark_tree = _parse("spark_focus_hourly_usage.sql", "spark", "focus")
    # the Spark file names SubAccountId through its :sub_account_column parameter (IDENTIFIER), not as a column
    assert spark_tree.named_selects == tree.named_selects and _source_columns(spark_tree) == read - {"SubAccountId"}


def _run_transpiled(name: str, dialect: str, csv_path: Path, view: str, start: str = "2000-01-01",
                    end: str = "2100-01-01", everything: bool = False) -> pd.DataFrame:
    """The SQL file transpiled by sqlglot from its dialect to DuckDB (its @start / ? parameters become DuckDB's),
    over the CSV as a view of strings, run with the window bound as parameters."""
    con = duckdb_connection()
    con.execute("SET TimeZone = 'UTC'")  # BigQuery TIMESTAMP / Athena TIMESTAMP literals are UTC
    csv_view(con, view, csv_path)
    (duck,) = _sqlglot().transpile(U.load_sql(name), read=dialect, write="duckdb")
    out = con.execute(duck, sql_params(name, start, end)).df()
    for c in ("hour", "window_start", "window_end"):
        hour = pd.to_datetime(out[c])
        out[c] = hour.dt.tz_convert("UTC") if hour.dt.tz is not None else hour.dt.tz_localize("UTC")
    return out if everything else out[out["instance_type"].notna()].drop(columns=["window_start", "window_end"])


@pytest.mark.parametrize("fixture", FOCUS_EXPORTS)
def test_bigquery_sql_transpiled_to_duckdb_equals_reader(fixture):
    out = _run_transpiled("bigquery_focus_hourly_usage.sql", "bigquery", FIX / fixture, "focus")
    assert set(out.columns) | {"window_start", "window_end"} == SQL_COLUMNS
    compare_sql_python(out, U.read_usage(FIX / fixture))


def test_bigquery_sql_transpiled_to_duckdb_splits_accounts_as_reader(tmp_path):
    p = write_focus_two_accounts(tmp_path / "focus_two_accounts.csv")
    out = _run_transpiled("bigquery_focus_hourly_usage.sql", "bigquery", p, "focus")
    compare_sql_python(out, U.read_usage(p))
    assert focus_account_hours(out) == FOCUS_TWO_ACCOUNT_HOURS


def test_athena_sql_parses_and_transpiled_to_duckdb_equals_reader(tmp_path):
    tree = _parse("athena_cur2_hourly_gpu_usage.sql", "athena", "cur")
    assert set(tree.named_selects) == SQL_COLUMNS
    read = _source_columns(tree)
    assert all(c.startswith(("line_item_", "bill_", "product_", "pricing_", "reservation_", "savings_plan_"))
               for c in read)  # CUR 2.0 column groups
    assert {"line_item_usage_account_id", "bill_payer_account_id"} <= read
    p = write_cur(tmp_path / "cur.csv", cur_rows())
    for path in (FIX / "synthetic_cur2.csv", p):
        out = _run_transpiled("athena_cur2_hourly_gpu_usage.sql", "athena", path, "cur")
        compare_sql_python(out, U.read_usage(path))
        # the hand-written DuckDB spelling (macros) agrees with the transpiled one
        compare_sql_python(run_sql("athena_cur2_hourly_gpu_usage.sql", path, "cur"), U.read_usage(path))


def test_athena_sql_transpiled_to_duckdb_splits_accounts_as_reader(tmp_path):
    p = write_cur_two_accounts(tmp_path / "cur_two_accounts.csv")
    out = _run_transpiled("athena_cur2_hourly_gpu_usage.sql", "athena", p, "cur")
    compare_sql_python(out, U.read_usage(p))
    assert cur_account_hours(out) == CUR_TWO_ACCOUNT_HOURS


# ------------------------------------------------------------------------ issue 32: the window travels with the data

GPU_WORDS = ("p4d.24xlarge", "g5.xlarge", "NC24ads A100 v4")


def write_focus_10_of_30(path: Path) -> Path:
    """The synthetic FOCUS 1.0 month (September 2024, no SubAccountId) with its GPU rows kept on Sep 1-10 only; the
    other services' rows (m5.large every hour) stay on all 30 days: GPUs idle 20 of the 30 days the export covers."""
    import csv

    rows = list(csv.DictReader((FIX / "synthetic_focus_1.0.csv").open(newline="", encoding="utf-8")))
    keep = [r for r in rows if not any(w in r["ChargeDescription"] for w in GPU_WORDS)
            or r["ChargePeriodStart"] < "2024-09-11"]
    with path.open("w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(keep)
    return path


def _review(path: Path, **kw):
    from gpuopt import api

    return api.review(usage=path, **kw)


def _same_review(hourly, direct) -> None:
    """Both routes: no commitment pays off, the same window, coverage, bill and per-line usage."""
    assert direct.recommendations == [] and hourly.recommendations == []
    assert direct.totals == hourly.totals == {
        "billed_usd": 9408.11, "effective_usd": 9408.11, "on_demand_equivalent_usd": 9408.11,
        "recommended_monthly_savings_usd": 0.0, "window_hours": 720.0, "coverage_hours": 720.0}
    assert hourly.gap_days == direct.gap_days == []
    assert (hourly.window_start, hourly.window_end) == (direct.window_start, direct.window_end) == (
        "2024-09-01T00:00:00+00:00", "2024-10-01T00:00:00+00:00")
    def per_line(r):
        return {u.instance_type: (round(u.average_instances, 6), round(u.utilization, 6), u.hours_used)
                for u in r.usage}

    assert per_line(hourly) == per_line(direct)
    # average instances over 720 h: a third of the full month's (0.75, 1.5, 1.5)
    assert {k: v[0] for k, v in per_line(hourly).items()} == {"g5.xlarge": 0.25, "p4d.24xlarge": 0.5,
                                                              "Standard_NC24ads_A100_v4": 0.5}


@pytest.fixture(scope="module")
def idle_month(tmp_path_factory):
    p = write_focus_10_of_30(tmp_path_factory.mktemp("idle") / "focus_10_of_30.csv")
    return p, _review(p)


@pytest.mark.parametrize("name,dialect", [("spark_focus_hourly_usage.sql", None),
                                          ("bigquery_focus_hourly_usage.sql", "bigquery")])
def test_idle_days_same_answer_by_the_warehouse_route_in_duckdb(idle_month, tmp_path, name, dialect):
    p, direct = idle_month
    out = (run_sql(name, p, "focus", "2024-09-01", "2024-10-01", everything=True) if dialect is None else
           _run_transpiled(name, dialect, p, "focus", "2024-09-01", "2024-10-01", everything=True))
    h = _write_hourly(out, tmp_path / "hourly.csv")
    _same_review(_review(h, usage_format="hourly"), direct)
    # without the hours-covered rows the 20 idle days would read as missing data: what the issue saw
    gpu_only = _write_hourly(out[out["instance_type"].notna()], tmp_path / "gpu_only.csv")
    bad = _review(gpu_only, usage_format="hourly")
    assert bad.coverage_hours == 240.0 and bad.totals["recommended_monthly_savings_usd"] == pytest.approx(6795.22)


def test_idle_days_same_answer_by_the_warehouse_route_on_spark(spark, idle_month, tmp_path):
    p, direct = idle_month  # no SubAccountId in this FOCUS 1.0 export: sub_account_column BillingAccountId
    df = spark_focus(spark, p, "2024-09-01", "2024-10-01", everything=True)
    df.coalesce(1).write.csv(str(tmp_path / "out"), header=True)
    (part,) = (tmp_path / "out").glob("part-*.csv")
    _same_review(_review(part, usage_format="hourly"), direct)
    assert set(spark_rows(spark_focus(spark, p))["account_id"]) == {"111122223333"}


def test_hourly_file_without_window_refused_unless_window_given(tmp_path):
    src = pd.read_csv(FIX / "synthetic_hourly.csv").drop(columns=["window_start", "window_end"])
    p = tmp_path / "old_hourly.csv"
    src.to_csv(p, index=False)
    with pytest.raises(InputError) as e:
        U.read_usage(p, fmt="hourly")
    msg = str(e.value)
    assert e.value.field == "usage" and "window_start / window_end" in msg and "--window START END" in msg
    assert "\n" not in msg
    d = U.read_usage(p, fmt="hourly", window=("2024-09-01", "2024-10-01"))
    assert (str(d.period_start), str(d.period_end)) == ("2024-09-01 00:00:00+00:00", "2024-10-01 00:00:00+00:00")
    assert len(d.covered_days) == 30 and str(d.coverage_end) == "2024-10-01 00:00:00+00:00"
    # a window of 10 days: the GPU rows after it are left out, said in the notes
    d10 = U.read_usage(p, fmt="hourly", window=("2024-09-01", "2024-09-11"))
    assert d10.hourly["hour"].max() == pd.Timestamp("2024-09-10 23:00", tz="UTC") and len(d10.covered_days) == 10
    assert any("GPU row(s) outside it left out" in n for n in d10.notes)


def test_window_contradicting_the_file_or_bad_is_refused_by_the_cli(tmp_path):
    from typer.testing import CliRunner

    from gpuopt.cli import app

    f = str(FIX / "synthetic_hourly.csv")
    ok = CliRunner().invoke(app, ["review", "--usage", f, "--window", "2024-09-01", "2024-10-01", "--format", "json"])
    assert ok.exit_code == 0, ok.output
    for window, words in ((["2024-09-01", "2024-09-30"], "contradicts synthetic_hourly.csv's own window"),
                          (["2024-09-01", "2024-09-31"], "--window: '2024-09-31' is not a date or time"),
                          (["2024-10-01", "2024-09-01"], "is not before end")):
        r = CliRunner().invoke(app, ["review", "--usage", f, "--window", *window])
        assert r.exit_code == 1 and words in r.output and "Traceback" not in r.output, r.output
    r = CliRunner().invoke(app, ["review", "--usage", str(FIX / "synthetic_focus_1.0.csv"), "--window", "2024-09-01",
                                 "2024-10-01"])
    assert r.exit_code == 1 and "--window applies to the hourly format only" in r.output
