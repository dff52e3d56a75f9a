"""The pacer as the tuner's realization sees it (`chronos.tune.realization.Pacing`): cadences journaled, the jobs it
was told to follow recorded, no thread and no Flink (the real pacer has its own tests and contract)."""

from __future__ import annotations

from dataclasses import dataclass, field

from chronos.tune.journal import Cadence, Journal


@dataclass
class FakePacing:
    journal: Journal
    job_name: str
    paced: list[tuple[str, int, int]] = field(default_factory=list)  # (job id, cadence ms, fallback ms)
    followed: list[str] = field(default_factory=list)

    def pace(self, job_id: str, cadence_ms: int, fallback_ms: int, explanation: str) -> Cadence:
        self.paced.append((job_id, cadence_ms, fallback_ms))
        return self.journal.open_cadence(self.job_name, job_id, None, cadence_ms, fallback_ms, 0, explanation)

    def take_over(self, job_id: str) -> Cadence | None:
        held = self.journal.cadences(self.job_name)
        return held[-1] if held else None

    def follow(self, job_id: str) -> None:
        self.followed.append(job_id)
