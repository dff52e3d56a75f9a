"""The journal's in-memory twin: the same behaviour as the SQLite `TuneJournal` (held to it by
tests/contracts/test_journal_contract.py), for tests and dry runs that must leave no file behind. Not
crash-safe by nature: nothing survives the process, which is the point of the SQLite one."""

from __future__ import annotations

import threading
import time
from collections import defaultdict
from dataclasses import replace

from chronos.tune.journal import Cadence, DecisionRecord, LiveLatency, LiveRecovery, Retune, Step


class MemoryJournal:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._retunes: dict[int, Retune] = {}
        self._decisions: list[DecisionRecord] = []
        self._days: dict[tuple[str, str], tuple[int, int]] = defaultdict(lambda: (0, 0))
        self._recoveries: dict[tuple[str, int], LiveRecovery] = {}
        self._latencies: dict[tuple[str, int], LiveLatency] = {}
        self._cadences: dict[int, Cadence] = {}

    def close(self) -> None:
        return None

    # -- retunes ------------------------------------------------------------------------------------
    def open_retune(self, job_name: str, old_job_id: str, from_ms: int, to_ms: int, now_ms: int,
                    explanation: str) -> Retune:
        with self._lock:
            retune_id = max(self._retunes, default=0) + 1
            self._retunes[retune_id] = Retune(retune_id, job_name, old_job_id, from_ms, to_ms, "decided", None, None,
                                              0, now_ms, now_ms, None, explanation, "")
            return self._retunes[retune_id]

    def advance(self, retune_id: int, step: Step, now_ms: int, *, savepoint: str | None = None,
                new_job_id: str | None = None, downtime_s: float | None = None, note: str | None = None,
                attempted: bool = False) -> Retune:
        with self._lock:
            r = self._retunes[retune_id]
            self._retunes[retune_id] = replace(
                r, step=step, updated_ms=now_ms, savepoint=savepoint if savepoint is not None else r.savepoint,
                new_job_id=new_job_id if new_job_id is not None else r.new_job_id,
                downtime_s=downtime_s if downtime_s is not None else r.downtime_s,
                note=note if note is not None else r.note, attempts=r.attempts + int(attempted))
            return self._retunes[retune_id]

    def retune(self, retune_id: int) -> Retune:
        with self._lock:
            return self._retunes[retune_id]

    def retunes(self, job_name: str | None = None) -> list[Retune]:
        with self._lock:
            return [r for _, r in sorted(self._retunes.items()) if job_name is None or r.job_name == job_name]

    def unfinished(self, job_name: str) -> Retune | None:
        pending = [r for r in self.retunes(job_name) if not r.finished]
        return pending[-1] if pending else None

    # -- decisions and live failures ---------------------------------------------------------------
    def record_decision(self, record: DecisionRecord) -> None:
        with self._lock:
            self._decisions.append(record)

    def decisions(self, job_name: str, since_ms: int = 0, limit: int = 100_000) -> list[DecisionRecord]:
        with self._lock:
            mine = sorted((d for d in self._decisions if d.job_name == job_name and d.at_ms >= since_ms),
                          key=lambda d: d.at_ms)
        return mine[-limit:] if limit else []

    def prune_decisions(self, before_ms: int) -> int:
        with self._lock:
            old = [d for d in self._decisions if d.at_ms < before_ms]
            for d in old:
                day = time.strftime("%Y-%m-%d", time.gmtime(d.at_ms // 1000))
                n, retunes = self._days[(d.job_name, day)]
                self._days[(d.job_name, day)] = (n + 1, retunes + (d.action == "retune"))
            self._decisions = [d for d in self._decisions if d.at_ms >= before_ms]
            return len(old)

    def decision_days(self, job_name: str) -> list[tuple[str, int, int]]:
        with self._lock:
            return sorted((day, n, r) for (job, day), (n, r) in self._days.items() if job == job_name)

    def job_names(self) -> list[str]:
        with self._lock:
            return sorted({d.job_name for d in self._decisions} | {r.job_name for r in self._retunes.values()})

    def record_recovery(self, recovery: LiveRecovery) -> None:
        with self._lock:
            self._recoveries[(recovery.job_name, recovery.failed_ms)] = recovery

    def recovery_jobs(self) -> list[str]:
        with self._lock:
            return sorted({job for job, _ in self._recoveries})

    def recoveries(self, job_name: str) -> list[LiveRecovery]:
        with self._lock:
            return [r for (job, _), r in sorted(self._recoveries.items()) if job == job_name]

    def record_latency(self, latency: LiveLatency) -> None:
        with self._lock:
            self._latencies[(latency.job_name, latency.ended_ms)] = latency

    def latencies(self, job_name: str) -> list[LiveLatency]:
        with self._lock:
            return [w for (job, _), w in sorted(self._latencies.items()) if job == job_name]

    # -- cadences of paced jobs ----------------------------------------------------------------------
    def open_cadence(self, job_name: str, job_id: str, from_ms: int | None, to_ms: int, fallback_ms: int,
                     now_ms: int, explanation: str) -> Cadence:
        with self._lock:
            cadence_id = max(self._cadences, default=0) + 1
            self._cadences[cadence_id] = Cadence(cadence_id, job_name, job_id, from_ms, to_ms, fallback_ms, now_ms,
                                                 None, explanation)
            return self._cadences[cadence_id]

    def cadence_in_force(self, cadence_id: int, now_ms: int) -> Cadence:
        with self._lock:
            entry = self._cadences[cadence_id]
            if entry.in_force_ms is None:
                self._cadences[cadence_id] = replace(entry, in_force_ms=now_ms)
            return self._cadences[cadence_id]

    def cadences(self, job_name: str) -> list[Cadence]:
        with self._lock:
            return [c for _, c in sorted(self._cadences.items()) if c.job_name == job_name]
