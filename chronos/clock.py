"""The clocks chronos passes in, named once. Every part takes its clock as a parameter (tests step a fake
one); these are the real defaults: `wall_ms` for timestamps that are compared with Flink's and Kafka's
(epoch milliseconds), `time.monotonic` for durations (never stepped by NTP)."""

from __future__ import annotations

import time


def wall_ms() -> int:
    """Now, in epoch milliseconds (Flink's and Kafka's timestamps)."""
    return int(time.time() * 1000)
