-- gpuopt: hourly GPU instance usage from a FOCUS 1.0-1.2 table, Spark SQL (Databricks, EMR, Synapse Spark).
-- Output = the `hourly` format of providers/usage.py: provider, region, instance_type, hour, usage_hours,
-- billed_cost, effective_cost, list_cost, pricing_category, account_id (one row per account, so that
-- `gpuopt review --scope account` can recommend per account), window_start, window_end. Save it as CSV/Parquet and
-- run `gpuopt review --usage FILE --usage-format hourly` (or `read_usage(path, fmt="hourly")`).
--
-- The window travels with the data (issue 32): every row carries window_start / window_end, the [start, end) the
-- query read (ChargePeriodStart in it), and the query adds one row per hour covered by a usage row of ANY service
-- (ChargeCategory Usage, charge period of at most a day) with instance_type NULL and usage 0: the hours covered.
-- The reader takes hours the export covers without GPU rows as idle (zero use), and days with no row at all as
-- missing data, exactly as it reads the FOCUS export itself; it refuses an hourly file without the window columns
-- unless `--window START END` is given.
--
-- Parameters (Spark >= 3.5 named parameter markers; no text to edit):
--   :table               the FOCUS table (IDENTIFIER clause), e.g. 'main.billing.focus';
--   :start, :end         the window, 'YYYY-MM-DD' (or a timestamp), UTC, ChargePeriodStart in [start, end);
--   :sub_account_column  'SubAccountId', or 'BillingAccountId' for an export without SubAccountId (a conditional
--                        FOCUS column, absent from many FOCUS 1.0 exports): then account_id is BillingAccountId.
-- PySpark: spark.sql(open(path).read(), args={"table": "focus", "start": "2024-09-01", "end": "2024-10-01",
--   "sub_account_column": "SubAccountId"}). Databricks SQL editor / notebooks: the same names as widgets/parameters.
-- Run with spark.sql.session.timeZone = UTC.
--
-- Same rules as providers/usage.py (FOCUS), with these differences:
--   * the instance type comes from ChargeDescription only (AWS "... Linux p4d.24xlarge Instance Hour" /
--     "... reserved instance applied", Azure "Virtual Machines <series> Series - <size> - <region>", GCP
--     "Nvidia ... GPU running in ..."); if your export has x_InstanceType, x_UsageType or SkuPriceDetails, put them
--     first in the COALESCE of `typed.instance_type` below;
--   * GPU instance = the regular expression of providers/usage.py GPU_PATTERNS (all providers at once), not the
--     price snapshot's list;
--   * rows that do not parse (dates, numbers) and rows in another currency are left out silently (the Python
--     reader reports them, and refuses a non-USD file);
--   * a resource-hour split between a Committed and a Standard row is not re-shared by PricingQuantity.
-- account_id = SubAccountId (the :sub_account_column), else BillingAccountId (trimmed), '' when both are empty, as
-- the reader.
-- Dialect notes: the regular expressions use no backslash (Spark's string escapes, Trino's and DuckDB's literal
-- backslashes and BigQuery's all read them the same) and only syntax common to Java, RE2 and Joni; TRY_CAST needs
-- Spark >= 3.2, parameter markers 3.4, IDENTIFIER 3.5; explode(sequence(...)) makes one row per hour;
-- regexp_replace is used only where one match is replaced (DuckDB replaces the first match unless given 'g', the
-- others every match), replace() elsewhere.
-- The test suite runs this file on Spark itself (pyspark in local mode, spark.sql(..., args=...),
-- tests/test_warehouse_sql.py) and in DuckDB with prepared-statement parameters after a textual rewrite of the
-- Spark-only spellings (tests/test_usage.py::duckdb_sql: explode( -> unnest(, :name -> $name, IDENTIFIER(:x) ->
-- the view/column name) and macros for regexp_like, sequence and unix_timestamp (duckdb_connection); both give the
-- Python reader's hourly usage and coverage.
WITH params AS (
  SELECT CAST(:start AS TIMESTAMP) AS w0, CAST(:end AS TIMESTAMP) AS w1
),
src AS (
  SELECT
    CASE lower(trim(ProviderName))
      WHEN 'aws' THEN 'aws' WHEN 'amazon web services' THEN 'aws' WHEN 'amazon web services, inc.' THEN 'aws'
      WHEN 'microsoft' THEN 'azure' WHEN 'azure' THEN 'azure' WHEN 'microsoft azure' THEN 'azure'
      WHEN 'google cloud' THEN 'gcp' WHEN 'google' THEN 'gcp' WHEN 'gcp' THEN 'gcp'
      ELSE replace(lower(trim(coalesce(ProviderName, ''))), ' ', '-') END AS provider,
    coalesce(RegionId, '') AS region,
    coalesce(ChargeDescription, '') AS descr,
    TRY_CAST(ChargePeriodStart AS TIMESTAMP) AS s,
    TRY_CAST(ChargePeriodEnd AS TIMESTAMP) AS e,
    TRY_CAST(ConsumedQuantity AS DOUBLE) AS cq,
    lower(trim(coalesce(ConsumedUnit, ''))) AS cu,
    TRY_CAST(PricingQuantity AS DOUBLE) AS pq,
    lower(trim(coalesce(PricingUnit, ''))) AS pu,
    TRY_CAST(BilledCost AS DOUBLE) AS billed,
    TRY_CAST(EffectiveCost AS DOUBLE) AS eff,
    TRY_CAST(ListCost AS DOUBLE) AS list_cost,
    lower(coalesce(PricingCategory, '')) AS pcat,
    coalesce(CommitmentDiscountId, '') AS cid,
    lower(coalesce(CommitmentDiscountStatus, '')) AS cstatus,
    coalesce(nullif(trim(IDENTIFIER(:sub_account_column)), ''), trim(BillingAccountId), '') AS account_id,
    lower(coalesce(ChargeClass, '')) <> 'correction' AND coalesce(BillingCurrency, '') = 'USD' AS usable
  FROM IDENTIFIER(:table) CROSS JOIN params
  WHERE lower(ChargeCategory) = 'usage'
    AND TRY_CAST(ChargePeriodStart AS TIMESTAMP) >= w0
    AND TRY_CAST(ChargePeriodStart AS TIMESTAMP) < w1
),
seen AS (
  SELECT DISTINCT date_trunc('HOUR', s) AS h0, date_trunc('HOUR', e - INTERVAL '1' SECOND) AS h1
  FROM src
  WHERE s IS NOT NULL AND e IS NOT NULL AND e > s AND e <= s + INTERVAL '1' DAY
),
covered AS (
  SELECT h0 AS hour FROM seen UNION SELECT h1 AS hour FROM seen
),
typed AS (
  SELECT *,
    COALESCE(
      CASE WHEN provider IN ('aws', '') AND NOT regexp_like(descr, 'Mbps per') THEN nullif(lower(regexp_extract(descr,
        '(?i)(?:^|[^a-z0-9.-])([a-z][a-z0-9]*(?:-[a-z0-9]+)?[.](?:nano|micro|small|medium|large|[0-9]*xlarge|metal(?:-[0-9]+xl)?))(?: +(?:Dedicated|Spot|Dedicated Host))* +(?:Instance Hour|Instance-hour|reserved instance applied)',
        1)), '') END,
      CASE WHEN provider IN ('azure', '') AND regexp_like(descr, '(?i)Virtual Machines +.+? +Series') THEN
        nullif(concat('Standard_', replace(trim(regexp_replace(regexp_extract(regexp_extract(descr,
          '(?i)Virtual Machines +.+? +Series(?: +[a-z0-9_]+)? +- +([^-]+?)(?: +- +.*)?$', 1), '^([^/]*)', 1),
          '(?i)( +(Spot|Low Priority|Windows|Linux))+$', '')), ' ', '_')), 'Standard_') END,
      CASE WHEN provider IN ('gcp', '') THEN nullif(lower(replace(regexp_extract(descr,
        '(?i)^(?:commitment v[0-9]+: )?(nvidia .+?) +gpu(?:[^a-z0-9_]|$)', 1), ' ', '-')), '') END
    ) AS instance_type,
    CASE WHEN regexp_like(cu, '^([0-9]+([.][0-9]+)? *k? +)?(hours?|hrs?|hr|h)$') AND cq IS NOT NULL THEN
           cq * coalesce(TRY_CAST(regexp_extract(cu, '^([0-9]+(?:[.][0-9]+)?)', 1) AS DOUBLE), 1.0)
              * CASE WHEN regexp_like(cu, '^[0-9.]+ *k ') THEN 1000.0 ELSE 1.0 END
         WHEN regexp_like(pu, '^([0-9]+([.][0-9]+)? *k? +)?(hours?|hrs?|hr|h)$') THEN
           pq * coalesce(TRY_CAST(regexp_extract(pu, '^([0-9]+(?:[.][0-9]+)?)', 1) AS DOUBLE), 1.0)
              * CASE WHEN regexp_like(pu, '^[0-9.]+ *k ') THEN 1000.0 ELSE 1.0 END
    END AS qty
  FROM src
  WHERE usable AND cstatus <> 'unused'
),
gpu AS (
  SELECT provider, region, instance_type, account_id, s, e, qty, billed, list_cost,
    CASE WHEN pcat IN ('standard', 'on-demand') THEN 'Standard'
         WHEN pcat IN ('committed', 'commitment-based') THEN 'Committed'
         WHEN pcat = 'dynamic' THEN 'Dynamic'
         WHEN cid <> '' AND cstatus = 'used' THEN 'Committed'
         ELSE '' END AS pricing_category,
    eff
  FROM typed
  WHERE regexp_like(instance_type,
    '^(p[0-9]+[a-z]*(-[a-z0-9]+)?[.][a-z0-9-]+|gr?[0-9]+[a-z]*[.][a-z0-9-]+|Standard_N[CDVG][A-Za-z0-9_]*|(a2|a3|a4|a4x|g2|g4)-[a-z0-9-]+|nvidia-[a-z0-9-]+|gpu_[0-9]+x_[a-z0-9_]+)$')
    AND s IS NOT NULL AND e IS NOT NULL AND e > s AND qty IS NOT NULL AND billed IS NOT NULL
),
costed AS (
  SELECT provider, region, instance_type, account_id, s, e, qty, billed, list_cost, pricing_category,
    CASE WHEN eff IS NULL AND pricing_category <> 'Committed' THEN billed ELSE eff END AS eff
  FROM gpu
  WHERE NOT (eff IS NULL AND pricing_category = 'Committed')
),
hours AS (
  SELECT c.*, explode(sequence(date_trunc('HOUR', s), e - INTERVAL '1' SECOND, INTERVAL '1' HOUR)) AS hour
  FROM costed c
),
weighted AS (
  SELECT provider, region, instance_type, pricing_category, account_id, hour, qty, billed, eff, list_cost,
    (unix_timestamp(least(e, hour + INTERVAL '1' HOUR)) - unix_timestamp(greatest(s, hour)))
      / (unix_timestamp(e) - unix_timestamp(s)) AS w
  FROM hours
)
SELECT provider, region, instance_type, hour, usage_hours, billed_cost, effective_cost, list_cost, pricing_category,
  account_id, w0 AS window_start, w1 AS window_end
FROM (
  SELECT provider, region, instance_type, hour,
    SUM(qty * w) AS usage_hours,
    SUM(billed * w) AS billed_cost,
    SUM(eff * w) AS effective_cost,
    SUM(list_cost * w) AS list_cost,
    pricing_category,
    account_id
  FROM weighted
  GROUP BY provider, region, instance_type, pricing_category, account_id, hour
  UNION ALL
  SELECT '' AS provider, '' AS region, CAST(NULL AS STRING) AS instance_type, hour, 0.0 AS usage_hours,
    0.0 AS billed_cost, 0.0 AS effective_cost, CAST(NULL AS DOUBLE) AS list_cost, '' AS pricing_category,
    '' AS account_id
  FROM covered
) u CROSS JOIN params
ORDER BY provider, region, instance_type, pricing_category, account_id, hour
