"""Feeding a profiling copy the job's own recorded input: the sample replayed into the copy's topics at the
profile's rate, by producer processes of the load generator's kind (one tops out near the rate one process
can JSON-rewrite and send, a few thousand records/s), each owning the keys `worker_share` gives it.
"""

from __future__ import annotations

import threading
from collections import Counter
from dataclasses import dataclass
from multiprocessing.sharedctypes import Synchronized
from multiprocessing.synchronize import Event

from chronos.connection_security import PLAINTEXT, KafkaSecurity
from chronos.jobs.loadgen import LoadProgress, LoadReport, paced
from chronos.jobs.parallel_load import run_worker_processes
from chronos.jobs.record_producer import RecordProducer
from chronos.profiler.event_time import EventTimeFields
from chronos.profiler.input_sample import InputSample
from chronos.profiler.replay import ReplayFeed, worker_share
from chronos.rates import RateProfile, ScaledRate


@dataclass(frozen=True)
class ReplayPlan:
    bootstrap: str
    sample: InputSample
    topics: tuple[tuple[str, str], ...]  # (live input topic, the copy's topic standing for it)
    profile: RateProfile
    event_time_paths: tuple[str, ...] = ()
    duration_s: float = 24 * 3600
    workers: int = 1
    niceness: int = 0  # the producers' OS priority: a profiling copy's input runs below the live job
    security: KafkaSecurity = PLAINTEXT


def _replay(plan: ReplayPlan, index: int, sent: Synchronized, stop: Event) -> LoadReport:  # type: ignore[type-arg]
    records = worker_share(plan.sample.records, index, plan.workers)
    if not records:
        return LoadReport(0, 0.0, 0.0, ())
    feed = ReplayFeed(records, dict(plan.topics), EventTimeFields(plan.event_time_paths))
    producer = RecordProducer(plan.bootstrap, plan.security)
    counts: Counter[str] = Counter()
    last = [0]

    def send_batch(batch: int, stamp: int) -> None:
        for _ in range(batch):
            record = feed.next(stamp)
            producer.send_record(record)
            counts[record.topic] += 1

    def progress(p: LoadProgress) -> None:
        with sent.get_lock():
            sent.value += p.sent - last[0]
        last[0] = p.sent

    share = len(records) / len(plan.sample.records)  # this worker's keys' part of the rate
    done, elapsed = paced(ScaledRate(plan.profile, share), send_batch, duration_s=plan.duration_s,
                          on_progress=progress, report_every_s=0.5, should_stop=stop.is_set)
    producer.flush()
    with sent.get_lock():
        sent.value += done - last[0]
    return LoadReport(done, elapsed, done / elapsed if elapsed > 0 else 0.0, tuple(sorted(counts.items())))


def run_replay(plan: ReplayPlan, should_stop: threading.Event) -> list[LoadReport]:
    return run_worker_processes(_replay, plan, plan.workers, plan.profile, should_stop=should_stop.is_set,
                                niceness=plan.niceness)
