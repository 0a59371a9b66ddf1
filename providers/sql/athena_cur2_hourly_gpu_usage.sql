-- gpuopt: hourly GPU instance usage from an AWS CUR 2.0 table (Data Exports), Amazon Athena (Trino SQL).
-- Output = the `hourly` format of providers/usage.py: provider, region, instance_type, hour, usage_hours,
-- billed_cost, effective_cost, list_cost, pricing_category, account_id (one row per account, so that
-- `gpuopt review --scope account` can recommend per account), window_start, window_end, plus one row per hour
-- covered by a usage row of any service (Usage / DiscountedUsage / SavingsPlanCoveredUsage, at most a day long;
-- instance_type NULL, usage 0): the window and the hours covered travel with the data (the reader takes covered
-- hours without GPU rows as idle; see spark_focus_hourly_usage.sql's header). Save the result (Athena writes CSV)
-- and run `gpuopt review --usage FILE --usage-format hourly`.
-- Parameters (Athena execution parameters, positional): the two `?` of `params` below, start then end, as
-- timestamp literals' text, e.g. start_query_execution(..., ExecutionParameters=["'2024-09-01 00:00:00'",
-- "'2024-10-01 00:00:00'"]) or `EXECUTE stmt USING '2024-09-01 00:00:00', '2024-10-01 00:00:00'` after PREPARE
-- (UTC; line_item_usage_start_date in [start, end)). Table: a name cannot be a parameter; the query reads `cur`
-- of the query's database (QueryExecutionContext.Database): CREATE VIEW cur AS SELECT * FROM "<db>"."<cur 2.0 table>".
--
-- Same rules as providers/usage.py (AWS CUR 2.0):
--   * instance usage = Usage (on-demand, or spot when pricing_term = 'Spot' or the usage type says SpotUsage),
--     DiscountedUsage (reservation) and SavingsPlanCoveredUsage rows whose usage type is BoxUsage / SpotUsage /
--     DedicatedUsage / HostUsage; the instance type is product_instance_type (CUR 2.0 static column; in an export
--     that keeps it only in the map, use product['instance_type']), else the part of the usage type after ':';
--   * billed_cost = line_item_unblended_cost for Usage, 0 for covered usage (the reservation/plan fee is billed on
--     RIFee / SavingsPlanRecurringFee lines, and SavingsPlanNegation cancels the covered unblended cost);
--     effective_cost = reservation_effective_cost (DiscountedUsage), savings_plan_savings_plan_effective_cost
--     (SavingsPlanCoveredUsage), else line_item_unblended_cost; list_cost = pricing_public_on_demand_cost;
--   * GPU instance = the regular expression of GPU_PATTERNS (AWS p*/g*/gr* families), not the snapshot's list;
--   * account_id = line_item_usage_account_id (the account that ran the usage), else bill_payer_account_id
--     (trimmed), '' when both are empty;
--   * rows in another currency and rows that do not parse are left out (the Python reader reports them).
-- Dialect notes: Trino string literals keep backslashes, but the regexes use none (shared with the Spark and
-- BigQuery files); CROSS JOIN UNNEST(sequence(...)) makes one row per hour. The test suite runs this file in DuckDB
-- after defining regexp_like and sequence as macros (tests/test_usage.py::duckdb_connection), and sqlglot's DuckDB
-- translation of it (read='athena', tests/test_warehouse_sql.py); it never runs on Athena itself.
WITH params AS (
  SELECT CAST(? AS TIMESTAMP) AS w0, CAST(? AS TIMESTAMP) AS w1
),
src AS (
  SELECT
    line_item_line_item_type AS lit,
    coalesce(line_item_usage_type, '') AS usage_type,
    coalesce(nullif(product_instance_type, ''),
             nullif(regexp_extract(coalesce(line_item_usage_type, ''), ':([a-z][a-z0-9-]*[.][a-z0-9-]+)$', 1), ''))
      AS instance_type,
    coalesce(nullif(product_region_code, ''), regexp_replace(coalesce(line_item_availability_zone, ''), '[a-z]$', ''))
      AS region,
    TRY_CAST(line_item_usage_start_date AS TIMESTAMP) AS s,
    TRY_CAST(line_item_usage_end_date AS TIMESTAMP) AS e,
    TRY_CAST(line_item_usage_amount AS DOUBLE) AS qty,
    TRY_CAST(line_item_unblended_cost AS DOUBLE) AS unblended,
    TRY_CAST(reservation_effective_cost AS DOUBLE) AS ri_eff,
    TRY_CAST(savings_plan_savings_plan_effective_cost AS DOUBLE) AS sp_eff,
    TRY_CAST(pricing_public_on_demand_cost AS DOUBLE) AS list_cost,
    lower(coalesce(pricing_term, '')) AS term,
    coalesce(nullif(trim(line_item_usage_account_id), ''), trim(bill_payer_account_id), '') AS account_id,
    regexp_like(coalesce(line_item_usage_type, ''), '(BoxUsage|SpotUsage|DedicatedUsage|HostUsage|DedicatedRes)')
      AND coalesce(line_item_currency_code, '') = 'USD' AS usable
  FROM cur CROSS JOIN params
  WHERE line_item_line_item_type IN ('Usage', 'DiscountedUsage', 'SavingsPlanCoveredUsage')
    AND TRY_CAST(line_item_usage_start_date AS TIMESTAMP) >= w0
    AND TRY_CAST(line_item_usage_start_date AS TIMESTAMP) < w1
),
seen AS (
  SELECT DISTINCT date_trunc('hour', s) AS h0, date_trunc('hour', e - INTERVAL '1' SECOND) AS h1
  FROM src
  WHERE s IS NOT NULL AND e IS NOT NULL AND e > s AND e <= s + INTERVAL '1' DAY
),
covered AS (
  SELECT h0 AS hour FROM seen UNION SELECT h1 AS hour FROM seen
),
gpu AS (
  SELECT 'aws' AS provider, region, instance_type, account_id, s, e, qty, list_cost,
    CASE WHEN lit = 'Usage' THEN unblended ELSE 0.0 END AS billed,
    CASE WHEN lit = 'DiscountedUsage' THEN ri_eff WHEN lit = 'SavingsPlanCoveredUsage' THEN sp_eff
         ELSE unblended END AS eff,
    CASE WHEN lit <> 'Usage' THEN 'Committed'
         WHEN term = 'spot' OR usage_type LIKE '%SpotUsage%' THEN 'Dynamic'
         ELSE 'Standard' END AS pricing_category
  FROM src
  WHERE usable AND regexp_like(instance_type, '^(p[0-9]+[a-z]*(-[a-z0-9]+)?[.][a-z0-9-]+|gr?[0-9]+[a-z]*[.][a-z0-9-]+)$')
    AND s IS NOT NULL AND e IS NOT NULL AND e > s AND qty IS NOT NULL AND unblended IS NOT NULL
),
hours AS (
  SELECT g.*, t.hour
  FROM gpu g
  CROSS JOIN UNNEST(sequence(date_trunc('hour', s), e - INTERVAL '1' SECOND, INTERVAL '1' HOUR)) AS t(hour)
  WHERE eff IS NOT NULL
),
weighted AS (
  SELECT provider, region, instance_type, pricing_category, account_id, hour, qty, billed, eff, list_cost,
    CAST(date_diff('millisecond', greatest(s, hour), least(e, hour + INTERVAL '1' HOUR)) AS DOUBLE)
      / CAST(date_diff('millisecond', s, e) AS DOUBLE) AS w
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
  SELECT '' AS provider, '' AS region, CAST(NULL AS VARCHAR) AS instance_type, hour, 0.0 AS usage_hours,
    0.0 AS billed_cost, 0.0 AS effective_cost, CAST(NULL AS DOUBLE) AS list_cost, '' AS pricing_category,
    '' AS account_id
  FROM covered
) u CROSS JOIN params
ORDER BY provider, region, instance_type, pricing_category, account_id, hour
