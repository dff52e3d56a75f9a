-- The third shipped job, shaped like a user's rather than like the demo: a shop joins its orders with
-- their payments (an event-time interval join of two topics: keyed join state held per order until the
-- watermark passes its 10 s bound) and writes each paid order exactly once. Orders carry an ISO-8601 event
-- time (`placed_at`), payments an epoch-ms one nested in a row (`payment.at_ms`). chronos knows it only
-- from shop_payments.yaml. Variables: bootstrap, orders_topic, payments_topic, output_topic, group_id,
-- transactional_id_prefix.
-- Its sources fetch at least 64 KiB or wait up to 100 ms (the consumer's defaults answer a fetch as soon as any
-- record is there: a request per producer batch; flink-programs/vehicle_stats_job.py has the measurement).

CREATE TABLE orders (
  order_id STRING,
  customer_id STRING,
  items INT,
  amount DOUBLE,
  channel STRING,
  placed_at TIMESTAMP_LTZ(3),
  WATERMARK FOR placed_at AS placed_at - INTERVAL '5' SECOND
) WITH (
  'connector' = 'kafka',
  'topic' = '${orders_topic}',
  'properties.bootstrap.servers' = '${bootstrap}',
  'properties.group.id' = '${group_id}',
  'scan.startup.mode' = 'group-offsets',
  'properties.auto.offset.reset' = 'earliest',
  'properties.fetch.min.bytes' = '65536',
  'properties.fetch.max.wait.ms' = '100',
  'properties.isolation.level' = 'read_committed',
  'format' = 'json',
  'json.timestamp-format.standard' = 'ISO-8601',
  'json.ignore-parse-errors' = 'true'
);

CREATE TABLE payments (
  payment ROW<id STRING, order_id STRING, amount DOUBLE, `method` STRING, at_ms BIGINT>,
  paid_at AS TO_TIMESTAMP_LTZ(payment.at_ms, 3),
  WATERMARK FOR paid_at AS paid_at - INTERVAL '5' SECOND
) WITH (
  'connector' = 'kafka',
  'topic' = '${payments_topic}',
  'properties.bootstrap.servers' = '${bootstrap}',
  'properties.group.id' = '${group_id}',
  'scan.startup.mode' = 'group-offsets',
  'properties.auto.offset.reset' = 'earliest',
  'properties.fetch.min.bytes' = '65536',
  'properties.fetch.max.wait.ms' = '100',
  'properties.isolation.level' = 'read_committed',
  'format' = 'json',
  'json.ignore-parse-errors' = 'true'
);

CREATE TABLE paid_orders (
  customer STRING,
  order_id STRING,
  amount DOUBLE,
  channel STRING,
  `method` STRING,
  paid_ms BIGINT
) WITH (
  'connector' = 'kafka',
  'topic' = '${output_topic}',
  'properties.bootstrap.servers' = '${bootstrap}',
  'format' = 'json',
  'sink.delivery-guarantee' = 'exactly-once',
  'sink.transactional-id-prefix' = '${transactional_id_prefix}',
  'properties.transaction.timeout.ms' = '600000'
);

INSERT INTO paid_orders
SELECT o.customer_id, o.order_id, o.amount, o.channel, p.payment.`method`, p.payment.at_ms
FROM orders AS o
JOIN payments AS p
  ON o.order_id = p.payment.order_id
 AND p.paid_at BETWEEN o.placed_at AND o.placed_at + INTERVAL '10' SECOND;
