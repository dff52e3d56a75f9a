"""The highest load a tuner has seen, as the fallback's ceiling rule needs it: a load held for a minute, not a burst.

Right after a TaskManager kill on a busy two-core host the input's end offsets stood still, then grew at 22-27k ev/s
for ten seconds (the load generator, starved during the recovery, caught up its schedule) around a 16k ev/s load; kept
as the ceiling, that burst asked the job's own interval to meet the recovery target at a load past its capacity. A
recovery replays what arrived over tens of seconds to minutes, so the ceiling is the mean over a minute.
"""

from __future__ import annotations

from collections.abc import Iterable

SUSTAINED_WINDOW_S = 60.0


def sustained_rate(newest_first: Iterable[tuple[float, float | None]], now_s: float,
                   window_s: float = SUSTAINED_WINDOW_S) -> float | None:
    """The mean input rate of the readings (at, rate) of the last `window_s`, newest first; None until the readings
    reach back that far (a first minute is no evidence of a sustained load) or when none had a rate."""
    rates: list[float] = []
    covered = False
    for at, rate in newest_first:
        if now_s - at > window_s:
            covered = True
            break
        if rate is not None:
            rates.append(rate)
        covered = now_s - at >= window_s
    if not covered or not rates:
        return None
    return sum(rates) / len(rates)
