"""The job's output as a read_committed consumer sees it, recorded in a thread: when each record became
visible and how late (visible - newest input time it covers). With an exactly-once sink, output becomes
visible when a checkpoint commits, so its visibility bursts show the checkpoint cadence."""

from __future__ import annotations

import itertools
import statistics
import threading
import time

from chronos.jobs.output import committed_consumer, committed_records


class CommittedOutput:
    def __init__(self, bootstrap: str, topic: str) -> None:
        self._consumer = committed_consumer(bootstrap, topic, from_beginning=False)
        self._stop = threading.Event()
        self.seen: list[tuple[int, float]] = []  # (visible wall ms, latency ms)
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        for batch in committed_records(self._consumer, poll_ms=100):
            visible = int(time.time() * 1000)
            self.seen.extend((visible, float(visible - r.max_created_ms)) for r in batch)
            if self._stop.is_set():
                return

    def since(self, wall_ms: int) -> list[tuple[int, float]]:
        return [s for s in list(self.seen) if s[0] >= wall_ms]

    def bursts(self, since_ms: int, gap_ms: int = 1500) -> list[int]:
        """Wall times at which output became visible after a pause of at least `gap_ms`."""
        times = sorted(t for t, _ in self.since(since_ms))
        return [t for n, t in enumerate(times) if n == 0 or t - times[n - 1] >= gap_ms]

    def p99_ms(self, since_ms: int) -> float:
        latencies = sorted(lat for _, lat in self.since(since_ms))
        assert latencies, "no committed output in the window"
        return latencies[min(len(latencies) - 1, int(0.99 * len(latencies)))]

    def median_gap_s(self, since_ms: int) -> float:
        starts = self.bursts(since_ms)
        gaps = [(b - a) / 1000 for a, b in itertools.pairwise(starts)]
        assert gaps, "fewer than two bursts of committed output"
        return statistics.median(gaps)

    def close(self) -> None:
        self._stop.set()
        self._thread.join(10)
        self._consumer.close()
