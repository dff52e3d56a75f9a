"""The third shipped job's input: a shop's orders and their payments, on two topics, keyed by customer.

Unlike the vehicle fleet: two record kinds of their own schema, an ISO-8601 event time on orders
(`placed_at`) and an epoch-ms one nested in payments (`payment.at_ms`), and a skewed key space (customers
ordering with Zipf-like popularity), which makes the key distribution worth keeping in a replay. Most orders
are paid 0.2-4 s after they are placed; the rest never are (the job's interval join drops them).
"""

from __future__ import annotations

import heapq
import json
import random
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from itertools import accumulate

from chronos.connection_security import PLAINTEXT, KafkaSecurity
from chronos.jobs.loadgen import LoadProgress, LoadReport, paced
from chronos.jobs.record_producer import RecordProducer
from chronos.profiler.replay import OutgoingRecord
from chronos.rates import RateProfile

CHANNELS = ("web", "app", "store")
METHODS = ("card", "paypal", "invoice", "voucher")


def iso_ms(epoch_ms: int) -> str:
    return datetime.fromtimestamp(epoch_ms / 1000, UTC).strftime("%Y-%m-%dT%H:%M:%S.") + f"{epoch_ms % 1000:03d}Z"


@dataclass(frozen=True)
class ShopTopics:
    orders: str = "shop-orders"
    payments: str = "shop-payments"


class Shop:
    """Orders and payments, in the order they happen; `next(now_ms)` is the next record to send at now."""

    def __init__(self, customers: int, seed: int, run_id: str, topics: ShopTopics = ShopTopics(),
                 paid_share: float = 0.9) -> None:
        self._rng = random.Random(seed)
        self._weights = list(accumulate(1 / (i + 1) ** 0.8 for i in range(customers)))
        self._run_id, self._topics, self._paid_share = run_id, topics, paid_share
        self._due: list[tuple[int, int, bytes, bytes]] = []  # (due ms, seq, key, value) of payments to come
        self._seq = 0

    def next(self, now_ms: int) -> OutgoingRecord:
        if self._due and self._due[0][0] <= now_ms:
            _, _, key, value = heapq.heappop(self._due)
            return OutgoingRecord(self._topics.payments, key, value, (), now_ms, 0)
        self._seq += 1
        rng = self._rng
        customer = f"c{rng.choices(range(len(self._weights)), cum_weights=self._weights)[0]:05d}"
        order_id = f"{self._run_id}-{self._seq}"
        amount = round(rng.uniform(5, 250), 2)
        order = {"order_id": order_id, "customer_id": customer, "items": rng.randint(1, 6), "amount": amount,
                 "channel": rng.choice(CHANNELS), "placed_at": iso_ms(now_ms)}
        if rng.random() < self._paid_share:
            paid_ms = now_ms + rng.randint(200, 4000)
            payment = {"payment": {"id": f"p-{order_id}", "order_id": order_id, "amount": amount,
                                   "method": rng.choice(METHODS), "at_ms": paid_ms}}
            heapq.heappush(self._due, (paid_ms, self._seq, customer.encode(), json.dumps(payment).encode()))
        return OutgoingRecord(self._topics.orders, customer.encode(), json.dumps(order).encode(), (), now_ms, 0)


def run_shop(
    bootstrap: str,
    profile: RateProfile,
    *,
    customers: int = 2000,
    seed: int = 0,
    topics: ShopTopics = ShopTopics(),
    duration_s: float | None = None,
    max_events: int | None = None,
    should_stop: Callable[[], bool] = lambda: False,
    on_progress: Callable[[LoadProgress], None] | None = None,
    security: KafkaSecurity = PLAINTEXT,
) -> LoadReport:
    """Produce the shop's records (orders and payments together) at the profile's rate."""
    shop = Shop(customers, seed, f"s{seed}-{int(time.time())}", topics)
    producer = RecordProducer(bootstrap, security)
    counts: Counter[str] = Counter()

    def send_batch(batch: int, stamp: int) -> None:
        for _ in range(batch):
            record = shop.next(stamp)
            producer.send_record(record)
            counts[record.topic] += 1

    try:
        sent, elapsed = paced(profile, send_batch, duration_s=duration_s, max_events=max_events,
                              should_stop=should_stop, on_progress=on_progress)
        producer.flush()
    finally:
        producer.close()
    return LoadReport(sent, elapsed, sent / elapsed if elapsed > 0 else 0.0, tuple(sorted(counts.items())))
