"""What a drawn view is made of, whichever source filled it."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from chronos.metrics.views import View

_LEGEND = re.compile(r"\{\{\s*(\w+)\s*\}\}")


@dataclass(frozen=True)
class Curve:
    label: str
    times_s: tuple[float, ...]  # unix seconds
    values: tuple[float, ...]


@dataclass(frozen=True)
class Marker:
    at_s: float
    text: str
    color: str


@dataclass(frozen=True)
class Panel:
    view: View
    curves: tuple[Curve, ...]
    note: str = ""  # why a view is empty (not in the source, no data in the range)

    @property
    def empty(self) -> bool:
        return not any(c.values for c in self.curves)


def legend(template: str, labels: Mapping[str, str]) -> str:
    """Grafana's `{{label}}` legend template, filled the way Grafana fills it."""
    return _LEGEND.sub(lambda m: labels.get(m.group(1), ""), template).strip()
