-- gpuopt: hourly GPU instance usage from a FOCUS 1.0-1.2 table, Google BigQuery (GoogleSQL).
-- Output = the `hourly` format of providers/usage.py: provider, region, instance_type, hour, usage_hours,
-- billed_cost, effective_cost, list_cost, pricing_category, account_id (SubAccountId, else BillingAccountId, ''
-- when neither; one row per account, for `gpuopt review --scope account`), window_start, window_end, plus one row
-- per hour covered by a usage row of any service (instance_type NULL, usage 0): the window and hours covered travel
-- with the data (spark_focus_hourly_usage.sql's header says how the reader uses them). Export the result (CSV or
-- Parquet) and run `gpuopt review --usage FILE --usage-format hourly`.
-- Parameters (BigQuery named query parameters): @start, @end (STRING 'YYYY-MM-DD' or TIMESTAMP, UTC;
-- ChargePeriodStart in [start, end)), e.g. `bq query --use_legacy_sql=false --parameter=start::2024-09-01
-- --parameter=end::2024-10-01 < bigquery_focus_hourly_usage.sql`, or QueryJobConfig(query_parameters=[...]).
-- Table: a table name cannot be a parameter; the query reads `focus` of the job's default dataset (bq
-- --dataset_id, QueryJobConfig.default_dataset). Point it at the export with a view, which also adds the
-- conditional SubAccountId column when the export lacks it (FOCUS 1.0 exports often do):
--   CREATE VIEW dataset.focus AS SELECT * FROM `project.dataset.focus_export`;                 -- with SubAccountId
--   CREATE VIEW dataset.focus AS SELECT *, CAST(NULL AS STRING) AS SubAccountId FROM `...`;   -- without it
--
-- A line-by-line translation of spark_focus_hourly_usage.sql (read its header for the rules and how they differ
-- from the Python reader). BigQuery differences: SAFE_CAST for TRY_CAST, REGEXP_CONTAINS for regexp_like,
-- REGEXP_EXTRACT takes no group number (the pattern keeps exactly one capturing group), TIMESTAMP_TRUNC,
-- UNNEST(GENERATE_TIMESTAMP_ARRAY(...)) for explode(sequence(...)), TIMESTAMP_ADD / TIMESTAMP_DIFF for the
-- interval arithmetic, FLOAT64 for DOUBLE, CONCAT. The regexes contain no backslash, so BigQuery's string escapes do not change them.
-- The test suite parses this file with sqlglot (read='bigquery'), checks its output and FOCUS 1.2 input columns,
-- and runs sqlglot's DuckDB translation of it (tests/test_warehouse_sql.py); it never runs on BigQuery itself.
WITH params AS (
  SELECT CAST(@start AS TIMESTAMP) AS w0, CAST(@end AS TIMESTAMP) AS w1
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
    SAFE_CAST(ChargePeriodStart AS TIMESTAMP) AS s,
    SAFE_CAST(ChargePeriodEnd AS TIMESTAMP) AS e,
    SAFE_CAST(ConsumedQuantity AS FLOAT64) AS cq,
    lower(trim(coalesce(ConsumedUnit, ''))) AS cu,
    SAFE_CAST(PricingQuantity AS FLOAT64) AS pq,
    lower(trim(coalesce(PricingUnit, ''))) AS pu,
    SAFE_CAST(BilledCost AS FLOAT64) AS billed,
    SAFE_CAST(EffectiveCost AS FLOAT64) AS eff,
    SAFE_CAST(ListCost AS FLOAT64) AS list_cost,
    lower(coalesce(PricingCategory, '')) AS pcat,
    coalesce(CommitmentDiscountId, '') AS cid,
    lower(coalesce(CommitmentDiscountStatus, '')) AS cstatus,
    coalesce(nullif(trim(SubAccountId), ''), trim(BillingAccountId), '') AS account_id,
    lower(coalesce(ChargeClass, '')) <> 'correction' AND coalesce(BillingCurrency, '') = 'USD' AS usable
  FROM focus CROSS JOIN params
  WHERE lower(ChargeCategory) = 'usage'
    AND SAFE_CAST(ChargePeriodStart AS TIMESTAMP) >= w0
    AND SAFE_CAST(ChargePeriodStart AS TIMESTAMP) < w1
),
seen AS (
  SELECT DISTINCT TIMESTAMP_TRUNC(s, HOUR) AS h0, TIMESTAMP_TRUNC(TIMESTAMP_SUB(e, INTERVAL 1 SECOND), HOUR) AS h1
  FROM src
  WHERE s IS NOT NULL AND e IS NOT NULL AND e > s AND e <= TIMESTAMP_ADD(s, INTERVAL 1 DAY)
),
covered AS (
  SELECT h0 AS hour FROM seen UNION DISTINCT SELECT h1 AS hour FROM seen
),
typed AS (
  SELECT *,
    COALESCE(
      CASE WHEN provider IN ('aws', '') AND NOT REGEXP_CONTAINS(descr, 'Mbps per') THEN nullif(lower(REGEXP_EXTRACT(descr,
        '(?i)(?:^|[^a-z0-9.-])([a-z][a-z0-9]*(?:-[a-z0-9]+)?[.](?:nano|micro|small|medium|large|[0-9]*xlarge|metal(?:-[0-9]+xl)?))(?: +(?:Dedicated|Spot|Dedicated Host))* +(?:Instance Hour|Instance-hour|reserved instance applied)')), '') END,
      CASE WHEN provider IN ('azure', '') AND REGEXP_CONTAINS(descr, '(?i)Virtual Machines +.+? +Series') THEN
        nullif(concat('Standard_', replace(trim(regexp_replace(REGEXP_EXTRACT(REGEXP_EXTRACT(descr,
          '(?i)Virtual Machines +.+? +Series(?: +[a-z0-9_]+)? +- +([^-]+?)(?: +- +.*)?$'), '^([^/]*)'),
          '(?i)( +(Spot|Low Priority|Windows|Linux))+$', '')), ' ', '_')), 'Standard_') END,
      CASE WHEN provider IN ('gcp', '') THEN nullif(lower(replace(REGEXP_EXTRACT(descr,
        '(?i)^(?:commitment v[0-9]+: )?(nvidia .+?) +gpu(?:[^a-z0-9_]|$)'), ' ', '-')), '') END
    ) AS instance_type,
    CASE WHEN REGEXP_CONTAINS(cu, '^([0-9]+([.][0-9]+)? *k? +)?(hours?|hrs?|hr|h)$') AND cq IS NOT NULL THEN
           cq * coalesce(SAFE_CAST(REGEXP_EXTRACT(cu, '^([0-9]+(?:[.][0-9]+)?)') AS FLOAT64), 1.0)
              * CASE WHEN REGEXP_CONTAINS(cu, '^[0-9.]+ *k ') THEN 1000.0 ELSE 1.0 END
         WHEN REGEXP_CONTAINS(pu, '^([0-9]+([.][0-9]+)? *k? +)?(hours?|hrs?|hr|h)$') THEN
           pq * coalesce(SAFE_CAST(REGEXP_EXTRACT(pu, '^([0-9]+(?:[.][0-9]+)?)') AS FLOAT64), 1.0)
              * CASE WHEN REGEXP_CONTAINS(pu, '^[0-9.]+ *k ') THEN 1000.0 ELSE 1.0 END
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
  WHERE REGEXP_CONTAINS(instance_type,
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
  SELECT c.*, hour
  FROM costed c
  CROSS JOIN UNNEST(GENERATE_TIMESTAMP_ARRAY(TIMESTAMP_TRUNC(s, HOUR), TIMESTAMP_SUB(e, INTERVAL 1 SECOND),
                                             INTERVAL 1 HOUR)) AS hour
),
weighted AS (
  SELECT provider, region, instance_type, pricing_category, account_id, hour, qty, billed, eff, list_cost,
    TIMESTAMP_DIFF(LEAST(e, TIMESTAMP_ADD(hour, INTERVAL 1 HOUR)), GREATEST(s, hour), MILLISECOND)
      / TIMESTAMP_DIFF(e, s, MILLISECOND) AS w
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
    0.0 AS billed_cost, 0.0 AS effective_cost, CAST(NULL AS FLOAT64) AS list_cost, '' AS pricing_category,
    '' AS account_id
  FROM covered
) u CROSS JOIN params
ORDER BY provider, region, instance_type, pricing_category, account_id, hour
