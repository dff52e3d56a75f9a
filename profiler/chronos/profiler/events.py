"""What a user sees of a profile while it runs: hooks the CLI fills with progress bars.

Kept apart (and light) so the CLI can subclass it without importing the profiler's heavy parts.
"""

from __future__ import annotations

from chronos.profiler.records import ProfileRun, RunConfig


class ProfileEvents:
    """No-ops by default; every hook is called from the run's worker thread."""

    def run_started(self, slot: int, trial: int, config: RunConfig) -> None: ...
    def run_phase(self, slot: int, phase: str) -> None: ...
    def run_finished(self, slot: int, run: ProfileRun) -> None: ...
