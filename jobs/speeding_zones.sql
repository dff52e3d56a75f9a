-- The second shipped job: the Yahoo Streaming Benchmark's shape (filter by event type -> map each
-- event to its campaign -> count per campaign in 10 s windows) over the demo's vehicle events:
-- speeding events are the "views", a region's zone is its "campaign". Unlike the demo it is a single
-- aggregation with a distinct count (a set of vehicles per zone and window) and four output keys, so
-- its state and topology differ while the load generator and the latency observer are shared.
-- Variables: bootstrap, input_topic, output_topic, group_id, transactional_id_prefix.
-- Its sources fetch at least 64 KiB or wait up to 100 ms (the consumer's defaults answer a fetch as soon as any
-- record is there: a request per producer batch; flink-programs/vehicle_stats_job.py has the measurement).

CREATE TABLE vehicle_events (
  event_id STRING,
  vehicle_id STRING,
  region STRING,
  speed DOUBLE,
  event_time BIGINT,
  created_ms BIGINT,
  ts AS TO_TIMESTAMP_LTZ(event_time, 3),
  WATERMARK FOR ts AS ts - INTERVAL '2' SECOND
) WITH (
  'connector' = 'kafka',
  'topic' = '${input_topic}',
  'properties.bootstrap.servers' = '${bootstrap}',
  'properties.group.id' = '${group_id}',
  'scan.startup.mode' = 'group-offsets',
  'properties.auto.offset.reset' = 'earliest',
  'properties.fetch.min.bytes' = '65536',
  'properties.fetch.max.wait.ms' = '100',
  'format' = 'json',
  'json.ignore-parse-errors' = 'true'
);

CREATE TABLE zone_counts (
  kind STRING,
  `key` STRING,
  window_start TIMESTAMP(3),
  window_end TIMESTAMP(3),
  event_count BIGINT,
  vehicles BIGINT,
  max_created_ms BIGINT
) WITH (
  'connector' = 'kafka',
  'topic' = '${output_topic}',
  'properties.bootstrap.servers' = '${bootstrap}',
  'format' = 'json',
  'sink.delivery-guarantee' = 'exactly-once',
  'sink.transactional-id-prefix' = '${transactional_id_prefix}',
  'properties.transaction.timeout.ms' = '600000'
);

-- YSB looks each ad's campaign up in Redis; here the region -> zone map is inlined (a regular join
-- would drop the event-time attribute the window needs).
CREATE TEMPORARY VIEW speeding AS
SELECT vehicle_id,
       CASE CAST(SUBSTRING(region FROM 3) AS INT) / 4
         WHEN 0 THEN 'north' WHEN 1 THEN 'east' WHEN 2 THEN 'south' ELSE 'west' END AS zone,
       created_ms, ts
FROM vehicle_events
WHERE speed > 60 AND vehicle_id <> '__flush__';

INSERT INTO zone_counts
SELECT 'zone', zone, window_start, window_end, COUNT(*), COUNT(DISTINCT vehicle_id), MAX(created_ms)
FROM TABLE(TUMBLE(TABLE speeding, DESCRIPTOR(ts), INTERVAL '10' SECOND))
GROUP BY zone, window_start, window_end;
