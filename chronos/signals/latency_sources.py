"""Where the tuner reads a job's p99 latency from, as the job file's `io.latency-source` says:

- `output` (default): the committed output's own timestamps (end-to-end, including the commit);
- `flink-latency`: Flink's latency markers from the Prometheus reporter (needs
  `metrics.latency.interval` in the job's flink-config; source-to-operator only);
- `promql`: any PromQL query on a Prometheus server, its first sample read as seconds.
"""

from __future__ import annotations

import math
from typing import Protocol

import httpx
import numpy as np

from chronos.bounded_http import BoundedClient, ReplyRefused
from chronos.errors import InvalidInput
from chronos.flink.prometheus_scrape import LATENCY_METRIC, SCRAPE_DEADLINE_S, marker_latency_p99_ms, scrape
from chronos.model import JobIO
from chronos.signals.live import LiveSignals


class LatencySource(Protocol):
    def p99_ms(self, since_ms: int, until_ms: int) -> float | None: ...


class OutputTimestamps:
    def __init__(self, signals: LiveSignals) -> None:
        self._signals = signals

    def p99_ms(self, since_ms: int, until_ms: int) -> float | None:
        values = self._signals.latencies_between(since_ms, until_ms)
        return float(np.percentile(values, 99)) if values else None


class FlinkLatencyMarkers:
    def __init__(self, reporter_urls: list[str], job_name: str) -> None:
        self._urls = reporter_urls
        self._job_name = job_name
        self._http = BoundedClient(deadline_s=SCRAPE_DEADLINE_S)

    def p99_ms(self, since_ms: int, until_ms: int) -> float | None:
        return marker_latency_p99_ms(scrape(self._urls, client=self._http, names=(LATENCY_METRIC + "{",)), self._job_name)


class PromQLLatency:
    """The query's first sample, in seconds (the Prometheus convention), returned in ms."""

    def __init__(self, prometheus_url: str, query: str, timeout_s: float = 5.0) -> None:
        self._url = prometheus_url.rstrip("/") + "/api/v1/query"
        self._query = query
        self._http = BoundedClient(deadline_s=timeout_s)

    def p99_ms(self, since_ms: int, until_ms: int) -> float | None:
        try:
            reply = self._http.get(self._url, params={"query": self._query}).json("Prometheus's reply")
        except (httpx.HTTPError, ReplyRefused):
            return None
        data = reply.get("data") if isinstance(reply, dict) and reply.get("status") == "success" else None
        result = data.get("result") if isinstance(data, dict) else None
        for item in result if isinstance(result, list) else []:
            value = item.get("value") if isinstance(item, dict) else None
            try:
                seconds = float(value[1]) if isinstance(value, list) and len(value) == 2 else math.nan
            except (TypeError, ValueError):
                continue
            if math.isfinite(seconds) and 0 <= seconds < 1e9:  # a latency; anything else is not one
                return seconds * 1000
        return None


def latency_source(io: JobIO, signals: LiveSignals, reporter_urls: list[str], job_name: str) -> LatencySource:
    if io.latency_source == "output":
        return OutputTimestamps(signals)
    if io.latency_source == "flink-latency":
        return FlinkLatencyMarkers(reporter_urls, job_name)
    if io.latency_source == "promql":
        if not io.prometheus_url or not io.latency_query:
            raise InvalidInput("latency-source promql needs prometheus-url and latency-query in the job file's io")
        return PromQLLatency(io.prometheus_url, io.latency_query)
    raise InvalidInput(f"unknown latency source {io.latency_source!r}: choose output, flink-latency or promql")
