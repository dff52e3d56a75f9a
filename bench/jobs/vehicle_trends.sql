-- The held-out job of the profile-trust bench (issue 31): a job unlike the three shipped ones, written only to
-- check that chronos's profiles and models hold on a job they were not developed against. No window and no
-- watermark: a per-vehicle moving average over its last 20 readings (an OVER aggregation in processing time),
-- one output record per input record, so its output rate, its state (20 rows per vehicle) and its sink's
-- transactions are the input's size, where the shipped jobs emit a few aggregates per window.
-- Variables: bootstrap, input_topic, output_topic, group_id, transactional_id_prefix.

CREATE TABLE vehicle_events (
  event_id STRING,
  vehicle_id STRING,
  region STRING,
  speed DOUBLE,
  event_time BIGINT,
  created_ms BIGINT,
  proc AS PROCTIME()
) WITH (
  'connector' = 'kafka',
  'topic' = '${input_topic}',
  'properties.bootstrap.servers' = '${bootstrap}',
  'properties.group.id' = '${group_id}',
  'scan.startup.mode' = 'group-offsets',
  'properties.auto.offset.reset' = 'earliest',
  'format' = 'json',
  'json.ignore-parse-errors' = 'true'
);

CREATE TABLE vehicle_trends (
  event_id STRING,
  vehicle_id STRING,
  speed DOUBLE,
  avg_speed DOUBLE,
  max_speed DOUBLE,
  readings BIGINT,
  created_ms BIGINT
) WITH (
  'connector' = 'kafka',
  'topic' = '${output_topic}',
  'properties.bootstrap.servers' = '${bootstrap}',
  'format' = 'json',
  'sink.delivery-guarantee' = 'exactly-once',
  'sink.transactional-id-prefix' = '${transactional_id_prefix}',
  'properties.transaction.timeout.ms' = '600000'
);

INSERT INTO vehicle_trends
SELECT event_id, vehicle_id, speed,
       AVG(speed) OVER w, MAX(speed) OVER w, COUNT(*) OVER w, created_ms
FROM vehicle_events
WHERE vehicle_id <> '__flush__'
WINDOW w AS (PARTITION BY vehicle_id ORDER BY proc ROWS BETWEEN 19 PRECEDING AND CURRENT ROW);
