"""How long the job's TaskManagers stall: their JVMs' garbage-collection counts and times and when the resource
manager last heard each one's heartbeat, read over Flink's REST API (any cluster, nothing installed on it), and
turned into `PauseEvidence` by chronos.optimizer.detection: what a proposed heartbeat timeout must stay above."""

from __future__ import annotations

import contextlib
import re
import time
from collections.abc import Callable

from chronos.clock import wall_ms
from chronos.errors import FlinkUnreachable
from chronos.flink.rest import FlinkRestClient
from chronos.optimizer.detection import PauseEvidence, PauseSample, evidence_from

GC_METRIC = re.compile(r"Status\.JVM\.GarbageCollector\.[^.]+\.(Count|Time)")


def sample_pauses(client: FlinkRestClient, now_ms: Callable[[], int] = wall_ms) -> list[PauseSample]:
    samples = []
    for tm in client.taskmanagers():
        metrics = client.taskmanager_metrics(tm.id, GC_METRIC)
        count = sum(v for k, v in metrics.items() if k.endswith(".Count"))
        spent = sum(v for k, v in metrics.items() if k.endswith(".Time"))
        samples.append(PauseSample(tm.id, now_ms(), int(count), int(spent), tm.last_heartbeat_ms))
    return samples


def watch_pauses(client: FlinkRestClient, seconds: float, heartbeat_interval_s: float, *, every_s: float = 0.5,
                 clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], None] = time.sleep,
                 progress: Callable[[float], None] = lambda _: None) -> tuple[PauseEvidence, int]:
    """Sample for `seconds`; returns the evidence and how many samples it rests on. A blip of the REST API
    loses a sample, not the watch."""
    samples: list[PauseSample] = []
    start = clock()
    while True:
        with contextlib.suppress(FlinkUnreachable):
            samples.extend(sample_pauses(client))
        elapsed = clock() - start
        progress(min(elapsed, seconds))
        if elapsed >= seconds:
            return evidence_from(samples, heartbeat_interval_s), len(samples)
        sleep(every_s)
