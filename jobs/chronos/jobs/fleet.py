"""A seeded fleet of vehicles emitting the demo job's events.

Events are a pure function of the seed and the clock readings given, so a test can know exactly what
was produced (per vehicle) and check the job's output against it.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field

FLUSH_VEHICLE = "__flush__"  # must match jobs/flink-programs/vehicle_stats_job.py


@dataclass
class VehicleFleet:
    vehicles: int
    regions: int = 16
    seed: int = 0
    run_id: str = "run"  # letters, digits and dashes only: it is written into JSON unescaped
    first_vehicle: int = 0  # lets parallel generators own disjoint vehicle ranges
    prefix: str = "v"  # [a-z0-9-]: a run whose keys must not mix with other load gets its own
    _rng: random.Random = field(init=False, repr=False)
    _speed: list[float] = field(init=False, repr=False)
    _pos: list[tuple[float, float]] = field(init=False, repr=False)
    _seq: int = field(default=0, init=False, repr=False)

    def __post_init__(self) -> None:
        if self.vehicles < 1 or self.regions < 1:
            raise ValueError("a fleet needs at least one vehicle and one region")
        self._rng = random.Random(self.seed)
        self._speed = [self._rng.uniform(20, 90) for _ in range(self.vehicles)]
        self._pos = [(self._rng.uniform(52.3, 52.7), self._rng.uniform(13.1, 13.7)) for _ in range(self.vehicles)]

    def vehicle_id(self, index: int) -> str:
        return f"{self.prefix}-{self.first_vehicle + index:06d}"

    def region_of(self, index: int) -> str:
        return f"r-{(self.first_vehicle + index) % self.regions:02d}"

    def next_event(self, now_ms: int) -> tuple[str, bytes]:
        """(key, JSON value) of the next event, created at `now_ms`."""
        i = self._rng.randrange(self.vehicles)
        speed = min(160.0, max(0.0, self._speed[i] + self._rng.gauss(0, 3)))
        self._speed[i] = speed
        lat, lon = self._pos[i]
        lat += self._rng.gauss(0, 1e-4)
        lon += self._rng.gauss(0, 1e-4)
        self._pos[i] = (lat, lon)
        self._seq += 1
        vid = self.vehicle_id(i)
        # Formatted directly (ids are [a-z0-9-] by construction): a third of json.dumps's cost.
        value = (
            f'{{"event_id":"{self.run_id}-{self._seq}","vehicle_id":"{vid}","region":"{self.region_of(i)}",'
            f'"speed":{speed:.2f},"lat":{lat:.6f},"lon":{lon:.6f},"event_time":{now_ms},"created_ms":{now_ms}}}'
        )
        return vid, value.encode()


def flush_event(now_ms: int, horizon_ms: int = 3_600_000) -> bytes:
    """An event far in the future that advances the watermark so that every open window closes;
    the job drops it before aggregating. Used to end a bounded run."""
    event = {
        "event_id": f"flush-{now_ms}", "vehicle_id": FLUSH_VEHICLE, "region": "", "speed": 0.0,
        "lat": 0.0, "lon": 0.0, "event_time": now_ms + horizon_ms, "created_ms": now_ms,
    }
    return json.dumps(event, separators=(",", ":")).encode()
