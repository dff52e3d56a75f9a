"""Reads many jobs share, made once per round (`chronos tune --jobs`): one scrape of each Prometheus reporter and
one end-offsets request per broker, whichever job asks first; the others take the same answer while it is fresh.

Why: the jobs of one controller usually run on one Flink cluster (one reporter range) and one Kafka cluster, and a
TaskManager's exposition is thousands of lines a pure-Python parser reads; fifty jobs scraping it fifty times every
few seconds would be the controller's whole CPU. An answer is shared for `fresh_s` (under the collection cadence),
so each job still reads a value taken within its own step's period.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from chronos.bounded_http import BoundedClient
from chronos.connection_security import PLAINTEXT, KafkaSecurity
from chronos.flink.prometheus_scrape import SCRAPE_DEADLINE_S, PromSample, scrape
from chronos.jobs.topic_offsets import BrokerEndOffsets
from chronos.signals.flink_metrics import FLINK_SOURCE_METRICS
from chronos.signals.live import EndOffsets


class SharedReads:
    def __init__(self, fresh_s: float, clock: Callable[[], float] = time.monotonic,
                 names: tuple[str, ...] = FLINK_SOURCE_METRICS,
                 broker: Callable[..., BrokerEndOffsets] = BrokerEndOffsets) -> None:
        """`names`: the metrics kept of a scrape (every source metric any job's signals read)."""
        self._fresh_s = fresh_s
        self._clock = clock
        self._names = names
        self._broker = broker
        self._http = BoundedClient(deadline_s=SCRAPE_DEADLINE_S)
        self._lock = threading.Lock()
        self._url_locks: dict[str, threading.Lock] = {}
        self._scraped: dict[str, tuple[float, list[PromSample]]] = {}
        self._brokers: dict[tuple[str, KafkaSecurity], BrokerEndOffsets] = {}
        self.scrapes = 0  # reporter requests made (what the sharing saves is measured by it)

    def scrape(self, urls: list[str]) -> list[PromSample]:
        """The source metrics of every endpoint in `urls` that answers, each scraped at most once per `fresh_s`."""
        samples: list[PromSample] = []
        for url in urls:
            with self._lock:
                url_lock = self._url_locks.setdefault(url, threading.Lock())
            with url_lock:  # the jobs asking meanwhile wait for this one answer
                cached = self._scraped.get(url)
                if cached is None or self._clock() - cached[0] >= self._fresh_s:
                    cached = (self._clock(), scrape([url], client=self._http, names=self._names))
                    self._scraped[url] = cached
                    self.scrapes += 1
            samples.extend(cached[1])
        return samples

    def end_offsets(self, bootstrap: str, topics: tuple[str, ...], kafka: KafkaSecurity = PLAINTEXT) -> EndOffsets:
        """One job's input topics on the broker's shared end-offsets request (one per broker and login)."""
        with self._lock:
            broker = self._brokers.get((bootstrap, kafka))
            if broker is None:
                broker = self._brokers[(bootstrap, kafka)] = self._broker(bootstrap, self._fresh_s, security=kafka)
        return broker.ends_of(topics)

    def close(self) -> None:
        with self._lock:
            brokers, self._brokers = list(self._brokers.values()), {}
        for broker in brokers:
            broker.close()
        self._http.close()
