"""Which realizer a tuned job gets: pacing where the cluster can trigger checkpoints (a cadence change then
costs no restart), the restart path otherwise, or what the user forced. Said once, with why."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from chronos.errors import InvalidInput

Requested = Literal["auto", "paced", "restart"]


@dataclass(frozen=True)
class RealizerChoice:
    paced: bool
    why: str


def choose_realizer(requested: Requested, offers_trigger: Callable[[], bool]) -> RealizerChoice:
    """`offers_trigger` probes the cluster (asked only when it matters)."""
    if requested == "restart":
        return RealizerChoice(False, "forced by --realize restart: every change is a restart")
    offered = offers_trigger()
    if requested == "paced" and not offered:
        raise InvalidInput("--realize paced: this Flink cluster has no checkpoint trigger endpoint "
                           "(POST /jobs/:jobid/checkpoints, Flink 1.17+); use --realize restart or auto")
    if offered:
        return RealizerChoice(True, "the cluster triggers checkpoints on request: chronos paces them, a cadence "
                                    "change needs no restart; the job's own interval is the fallback")
    return RealizerChoice(False, "the cluster has no checkpoint trigger endpoint (Flink < 1.17): every change is "
                                 "a restart")
