"""The views filled from a Prometheus server's HTTP API (query_range), with the same PromQL the
Grafana panels run, so the PNGs show what Grafana would."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Annotated, Any

import httpx
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError

from chronos.bounded_http import BoundedClient, DeadlinePassed, ReplyRefused
from chronos.errors import InvalidInput, field_error
from chronos.metrics.views import Annotation, Dashboard, View, promql
from chronos.report.curves import Curve, Marker, Panel, legend


@dataclass(frozen=True)
class Window:
    start_s: float
    end_s: float
    step_s: float

    @property
    def range(self) -> str:
        return f"{max(1, round(self.end_s - self.start_s))}s"

    @property
    def rate_interval(self) -> str:
        return f"{max(4 * self.step_s, 30):g}s"


def _job_run(labels: dict[str, str]) -> str:
    """Flink's series of one pipeline split by job id (one per retune): name the run."""
    return f"job {labels['job_id'][:8]}" if "job_id" in labels else ""


# Prometheus answers a range query with at most 11,000 points a series (its own limit) and a report draws a few
# series a view: a reply past these is not one the report could draw, and is refused before it is read whole.
MAX_POINTS = 11_000
MAX_SERIES = 1_000
DEADLINE_S = 5.0  # one query's whole exchange: a Prometheus answers a report's queries in milliseconds


def _sample(text: str) -> float:
    """A sample's value as Prometheus writes it (a decimal, "NaN", "+Inf", "-Inf"); the drawing leaves out what is
    not finite."""
    return float(text)


class _Series(BaseModel):
    model_config = ConfigDict(frozen=True)
    metric: dict[str, str] = Field(max_length=100)
    values: list[tuple[float, Annotated[float, BeforeValidator(_sample)]]] = Field(max_length=MAX_POINTS)


class _Data(BaseModel):
    result: list[_Series]


class _QueryReply(BaseModel):
    """Prometheus's query_range reply, as far as the report reads it."""

    status: str
    data: _Data | None = None
    error: str | None = None


def _within_bounds(data: Any, window: Window, url: str) -> None:
    """Refuse a reply of more series, or a series of more points, than the query can have asked for."""
    result = data.get("data", {}).get("result") if isinstance(data, dict) and isinstance(data.get("data"), dict) else None
    if not isinstance(result, list):
        return  # the schema says what is wrong
    if len(result) > MAX_SERIES:
        raise InvalidInput(f"Prometheus at {url} answered {len(result):,} series for one query; a report draws at most "
                           f"{MAX_SERIES:,}")
    most = min(MAX_POINTS, int((window.end_s - window.start_s) / window.step_s) + 2)
    for series in result:
        values = series.get("values") if isinstance(series, dict) else None
        if isinstance(values, list) and len(values) > most:
            raise InvalidInput(f"Prometheus at {url} answered {len(values):,} points for one series of a range that "
                               f"holds {most:,} at its step; not a reply to chronos's query")


class PrometheusViews:
    def __init__(self, url: str, client: BoundedClient) -> None:
        self._url = url.rstrip("/")
        self._client = client

    def query_range(self, query: str, window: Window) -> list[dict[str, Any]]:
        try:
            reply = self._client.get(f"{self._url}/api/v1/query_range", params={
                "query": query, "start": window.start_s, "end": window.end_s, "step": window.step_s})
            data = reply.json(f"Prometheus's reply at {self._url}")
            _within_bounds(data, window, self._url)
            body = _QueryReply.model_validate(data)
        except ReplyRefused as exc:
            raise InvalidInput(f"Prometheus's reply at {self._url} is refused: {exc}") from None
        except ValidationError as exc:
            raise InvalidInput(f"Prometheus's reply at {self._url} is not a query result: "
                               f"{field_error(exc.errors())}") from None
        except DeadlinePassed as exc:
            raise InvalidInput(f"Prometheus at {self._url} did not answer whole ({exc})") from None
        except httpx.HTTPError as exc:
            raise InvalidInput(f"cannot reach Prometheus at {self._url}: {type(exc).__name__}") from None
        if reply.status_code != 200 or body.status != "success" or body.data is None:
            raise InvalidInput(f"Prometheus at {self._url} refused {query!r}: {(body.error or reply.text)[:200]}")
        return [{"metric": series.metric, "values": series.values} for series in body.data.result]

    def panel(self, view: View, job_name: str, window: Window) -> Panel:
        curves = []
        for series in view.series:
            query = promql(series.expr, job_name, window.rate_interval, window.range)
            for found in self.query_range(query, window):
                points = [(t, v) for t, v in found["values"] if math.isfinite(v)]
                # One job per report: its name is the title, not part of every legend.
                labels = {k: v for k, v in found["metric"].items() if k != "job_name"}
                label = legend(series.legend, labels) or _job_run(labels)
                curves.append(Curve(label, tuple(t for t, _ in points),
                                    tuple(v for _, v in points)))
        return Panel(view, tuple(curves), "" if curves else "no data in the range")

    def markers(self, annotation: Annotation, job_name: str, window: Window) -> list[Marker]:
        """One marker where each run of a true annotation query starts (Grafana draws the same)."""
        markers = []
        for found in self.query_range(promql(annotation.expr, job_name), window):
            previous = None
            for t, _ in found["values"]:
                if previous is None or t - previous > window.step_s * 1.5:
                    markers.append(Marker(t, legend(annotation.text, found["metric"]), annotation.color))
                previous = t
        return markers

    def dashboard(self, spec: Dashboard, job_name: str, window: Window) -> tuple[list[Panel], list[Marker]]:
        panels = [self.panel(view, job_name, window) for view in spec.views]
        markers = [m for a in spec.annotations for m in self.markers(a, job_name, window)]
        return panels, markers
