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
from test_usage import (CUR_TWO_ACCOUNT_HOURS, FIX, FOCUS_TWO_ACCOUNT_HOURS, SQL_ACCOUNT_COLUMNS, compare_sql_python,
                        cur_account_hours, cur_rows, csv_view, duckdb_connection, focus_account_hours, run_sql,
                        write_cur, write_cur_two_accounts, write_focus_two_accounts)

FOCUS_EXPORTS = ["focus_sample_1.0.csv", "synthetic_focus_1.0.csv"]  # real (CC BY 4.0), synthetic
SQL_COLUMNS = set(U.HOURLY_COLUMNS) - {"commitment_id"}  # the SQL does not split by commitment
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


def spark_focus(spark, csv_path: Path):
    """The FOCUS CSV as a Spark view ``focus`` of strings, the literal NULL/null and empty fields as SQL NULL and
    the account columns the file lacks added as NULL (as run_sql's DuckDB view), then the Spark SQL file over all
    dates; a Spark DataFrame."""
    from pyspark.sql import functions as F

    raw = spark.read.csv(str(csv_path), header=True, inferSchema=False, escape='"')
    missing = [F.lit(None).cast("string").alias(c) for c in SQL_ACCOUNT_COLUMNS["focus"] if c not in raw.columns]
    raw.select([F.when(F.col(c).isin("NULL", "null", ""), None).otherwise(F.col(c)).alias(c)
                for c in raw.columns] + missing).createOrReplaceTempView("focus")
    return spark.sql(U.load_sql("spark_focus_hourly_usage.sql", table="focus", start="2000-01-01", end="2100-01-01"))


def spark_rows(df) -> pd.DataFrame:
    """Collected rows; the hour as epoch seconds from Spark itself (no Python local-time conversion)."""
    rows = df.selectExpr("*", "unix_timestamp(hour) AS hour_epoch").drop("hour").collect()
    out = pd.DataFrame([r.asDict() for r in rows])
    out["hour"] = pd.to_datetime(out.pop("hour_epoch"), unit="s", utc=True)
    return out


@pytest.mark.parametrize("fixture", FOCUS_EXPORTS)
def test_spark_sql_on_spark_equals_reader(spark, fixture):
    df = spark_focus(spark, FIX / fixture)
    assert set(df.columns) == SQL_COLUMNS
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
    df = spark_focus(spark, FIX / "synthetic_focus_1.0.csv")
    df.coalesce(1).write.csv(str(tmp_path / "out"), header=True)
    (part,) = (tmp_path / "out").glob("part-*.csv")
    d = U.read_usage(part, fmt="hourly")
    assert d.bad_rows == [] and len(d.hourly) == 1620
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


def _parse(name: str, dialect: str, table: str):
    return _sqlglot().parse_one(U.load_sql(name, table=table, start="2000-01-01", end="2100-01-01"), read=dialect)


def _source_columns(tree) -> set[str]:
    """Columns the first CTE (``src``, the only one reading the export) refers to."""
    from sqlglot import exp

    src = next(c for c in tree.find_all(exp.CTE) if c.alias == "src")
    return {c.name for c in src.find_all(exp.Column)}


def test_bigquery_sql_parses_with_the_reader_columns_and_focus_1_2_inputs():
    tree = _parse("bigquery_focus_hourly_usage.sql", "bigquery", "project.dataset.focus")
    assert set(tree.named_selects) == SQL_COLUMNS
    read = _source_columns(tree)
    assert read - FOCUS_1_2_COLUMNS == set()
    assert {"ChargePeriodStart", "ChargePeriodEnd", "ChargeDescription", "BilledCost", "EffectiveCost",
            "ConsumedQuantity", "ConsumedUnit", "BillingCurrency"} <= read
    spark_tree = _parse("spark_focus_hourly_usage.sql", "spark", "focus")
    assert spark_tree.named_selects == tree.named_selects and _source_columns(spark_tree) == read


def _run_transpiled(name: str, dialect: str, csv_path: Path, view: str) -> pd.DataFrame:
    """The SQL file transpiled by sqlglot from its dialect to DuckDB, over the CSV as a view of strings."""
    con = duckdb_connection()
    con.execute("SET TimeZone = 'UTC'")  # BigQuery TIMESTAMP / Athena TIMESTAMP literals are UTC
    csv_view(con, view, csv_path)
    sql = U.load_sql(name, table=view, start="2000-01-01", end="2100-01-01")
    (duck,) = _sqlglot().transpile(sql, read=dialect, write="duckdb")
    out = con.sql(duck).df()
    hour = pd.to_datetime(out["hour"])
    out["hour"] = hour.dt.tz_convert("UTC") if hour.dt.tz is not None else hour.dt.tz_localize("UTC")
    return out


@pytest.mark.parametrize("fixture", FOCUS_EXPORTS)
def test_bigquery_sql_transpiled_to_duckdb_equals_reader(fixture):
    out = _run_transpiled("bigquery_focus_hourly_usage.sql", "bigquery", FIX / fixture, "focus")
    assert set(out.columns) == SQL_COLUMNS
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
