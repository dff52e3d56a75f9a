"""Exactly-once, checked for the shop job from its own topics: every order paid within the join's 10 s bound is
written once, and nothing else is. The expectation is computed from what the input topics hold (not from what the
generator meant to send), so a check after failures, restarts and replays compares like with like."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from chronos.connection_security import PLAINTEXT, KafkaSecurity
from chronos.jobs.shop import ShopTopics
from chronos.jobs.topic_offsets import groupless_consumer

JOIN_BOUND_MS = 10_000  # jobs/shop_payments.sql: paid_at BETWEEN placed_at AND placed_at + 10 s


def read_committed(bootstrap: str, topic: str, security: KafkaSecurity = PLAINTEXT) -> list[Any]:
    """Every committed record of a topic, from the beginning to the end offsets as of now."""
    from kafka import TopicPartition

    consumer = groupless_consumer(bootstrap, "read_committed", security)
    try:
        parts = [TopicPartition(topic, p) for p in sorted(consumer.partitions_for_topic(topic) or ())]
        consumer.assign(parts)
        consumer.seek_to_beginning(*parts)
        ends = consumer.end_offsets(parts)
        out: list[Any] = []
        while any(consumer.position(p) < ends[p] for p in parts):
            for messages in consumer.poll(timeout_ms=1000).values():
                out += [json.loads(m.value) for m in messages]
        return out
    finally:
        consumer.close()


def expected_paid(bootstrap: str, topics: ShopTopics, security: KafkaSecurity = PLAINTEXT) -> tuple[Counter[str], int]:
    """Per customer, the orders paid within the join's bound, and the number of orders placed."""
    placed = {o["order_id"]: (o["customer_id"], datetime.fromisoformat(o["placed_at"]).timestamp() * 1000)
              for o in read_committed(bootstrap, topics.orders, security)}
    paid: Counter[str] = Counter()
    for p in read_committed(bootstrap, topics.payments, security):
        order = placed.get(p["payment"]["order_id"])
        if order is not None and order[1] <= p["payment"]["at_ms"] <= order[1] + JOIN_BOUND_MS:
            paid[order[0]] += 1
    return paid, len(placed)


@dataclass(frozen=True)
class ShopDelivery:
    expected: int  # paid orders the input holds
    written: int  # records in the output
    lost: int  # paid orders never written (counted per customer)
    duplicated: int  # paid orders written more than once

    @property
    def exact(self) -> bool:
        return self.lost == 0 and self.duplicated == 0


def check_delivery(expected: Counter[str], output: list[Any]) -> ShopDelivery:
    """Lost and duplicated, per customer: a customer short of its paid orders lost them; an order id seen twice
    was duplicated."""
    per_order = Counter(o["order_id"] for o in output)
    duplicated = sum(n - 1 for n in per_order.values())
    unique = Counter(o["customer"] for o in {o["order_id"]: o for o in output}.values())
    lost = sum(max(0, n - unique.get(c, 0)) for c, n in expected.items())
    return ShopDelivery(sum(expected.values()), len(output), lost, duplicated)
