"""A decision as the tune loop took it: flattened once into the journal's row, and kept whole (what it was made from)
for the views that draw more than the row, so that the journal, the exporter and the terminal all see the same
numbers."""

from __future__ import annotations

from dataclasses import dataclass

from chronos.optimizer.decide import Decision
from chronos.optimizer.evaluate import Evaluation
from chronos.tune.journal import DecisionRecord


@dataclass(frozen=True)
class Decided:
    record: DecisionRecord
    decision: Decision
    evaluation: Evaluation
