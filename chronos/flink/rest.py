"""A typed client for the Flink REST API (httpx), turning transport and HTTP failures into
one-line ChronosErrors: unreachable cluster, unknown job, refused request."""

from __future__ import annotations

import itertools
import re
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

import httpx
from pydantic import BaseModel, TypeAdapter, ValidationError

from chronos.backoff import Backoff
from chronos.bounded_http import BoundedClient, DeadlinePassed, Reply, ReplyRefused
from chronos.connection_security import NO_REST_SECURITY, RestSecurity
from chronos.errors import FlinkRequestFailed, FlinkUnreachable, UnknownJob, field_error, is_job_id, redact
from chronos.flink.replies import (
    CheckpointConfigReply,
    CheckpointStats,
    CheckpointTrigger,
    ClusterOverview,
    ConfigEntry,
    ExceptionsReply,
    JobDetail,
    JobsOverview,
    JobSummary,
    Metric,
    SavepointTrigger,
    SubtasksTimesReply,
    SubtaskTimes,
    TaskManager,
    TaskManagers,
    VertexLoad,
)
from chronos.model import TERMINAL_STATES, check_url

R = TypeVar("R", bound=BaseModel)
_JAR_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*\.jar$")  # Flink's "<uuid>_<file name>"
_SOURCE_RATE = re.compile(r"^\d+\.Source__.*\.numRecordsOutPerSecond$")


def _parse(model: type[R], data: Any, what: str) -> R:
    """A reply as its model, or one line saying which field Flink's reply lacks."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise FlinkRequestFailed(f"Flink's reply to {what} is not what chronos reads: {field_error(exc.errors())}") from None


def _parse_list(model: type[R], data: Any, what: str) -> tuple[R, ...]:
    """A reply that is a JSON list of `model`s (metrics, config entries)."""
    try:
        return TypeAdapter(tuple[model, ...]).validate_python(data)  # type: ignore[valid-type]
    except ValidationError as exc:
        raise FlinkRequestFailed(f"Flink's reply to {what} is not what chronos reads: {field_error(exc.errors())}") from None


def _job_id_in(reply: Any, what: str) -> str:
    """The job id of a submission reply, refused unless it is one: it becomes a file name and a URL path."""
    job_id = reply.get("jobid") if isinstance(reply, dict) else None
    if not isinstance(job_id, str) or not is_job_id(job_id):
        raise FlinkRequestFailed(f"Flink's reply to {what} carries no job id (got {str(job_id)[:80]!r}); not a Flink "
                                 "REST API, or not one chronos can trust")
    return job_id


def tls_refusal(shown_url: str, security: RestSecurity, exc: BaseException) -> str | None:
    """One line for a TLS handshake that failed, saying which side refused what; None for any other failure."""
    text = str(exc)
    if "CERTIFICATE_VERIFY_FAILED" in text:
        trusted = security.ca_file or "the system's CAs"
        return (f"the Flink REST API at {shown_url} presented a certificate not signed by a CA chronos trusts "
                f"({trusted}); give its CA with --rest-ca-file")
    if any(alert in text for alert in ("CERTIFICATE_REQUIRED", "BAD_CERTIFICATE", "UNKNOWN_CA", "CERTIFICATE_UNKNOWN")):
        given = f"the certificate {security.cert_file}" if security.cert_file else "no client certificate"
        return (f"the Flink REST API at {shown_url} refused chronos's TLS client ({given}): it asks for a certificate "
                "its trust store accepts (mutual TLS: --rest-cert-file and --rest-key-file)")
    if "WRONG_VERSION_NUMBER" in text or "record layer failure" in text:
        return f"the Flink REST API at {shown_url} does not speak TLS (an http:// URL?)"
    return None


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0][:160] if text else type(exc).__name__


def _first_error_line(response: Reply) -> str:
    """Flink's own line, and for its bare "Internal server error." the exception it names as the cause (its second
    entry, "<Exception on server side:" and a stack trace): the one thing that says what went wrong."""
    try:
        body = response.json("an error reply")
    except ReplyRefused:
        body = None
    errors = body.get("errors") if isinstance(body, dict) else None
    text = str(errors[0]) if isinstance(errors, list) and errors else response.text[:2000]
    line = text.strip().splitlines()[0] if text.strip() else f"HTTP {response.status_code}"
    if line == "Internal server error." and isinstance(errors, list) and len(errors) > 1:
        cause = [c.strip() for c in str(errors[1]).splitlines()
                 if c.strip() and not c.strip().startswith(("<Exception on server side", "at "))]
        if cause:
            line = f"{line} ({cause[0][:200]})"
    return line.replace("org.apache.flink.runtime.rest.handler.RestHandlerException: ", "")[:300]


# Polling a job's state or a savepoint: quick at first (a retune's downtime is measured to ~0.1 s), then
# less and less often, at most once a second: a 300 s wait is ~310 requests, not 3,000 or 6,000.
STATE_POLL = Backoff(first_s=0.1, factor=1.25, max_s=1.0, jitter=0.0)
SAVEPOINT_POLL = Backoff(first_s=0.05, factor=1.25, max_s=1.0, jitter=0.0)

# A whole REST exchange (connect, request, every byte of the reply). A command a user waits on (status, job
# list) gives up after REPLY_DEADLINE_S: Flink answers in milliseconds, and a reply still coming after that is
# a hung or hostile server the user should hear about. A long-running part (the tuner, a retune, a profile, a
# chaos experiment, a pause watch) must ride out a JobManager busy for seconds (planning a PyFlink job beside
# two stacks on two cores took a /taskmanagers reply past 4 s in CI, we think), so it waits PATIENT_REPLY_DEADLINE_S; a
# user's SIGTERM still stops it at once (chronos.cli.graceful), and waits that poll take a miss as a blip.
# With the CLI's own start (0.6 s of CPU: 1 s idle, 2.3 s measured in CI beside a profile on two cores), a refusal
# within 5 s: a 3 s deadline ended `status` on a trickling reply at 5.3 s there.
REPLY_DEADLINE_S = 2.5
PATIENT_REPLY_DEADLINE_S = 15.0

# A long-running part also asks a read again that Flink answered with a server error (5xx), for up to this long: a
# copy's GET /jobs/<id>/checkpoints once answered "Internal server error." 80 s into a profiling run in CI, and that
# one reply failed the whole run. Flink keeps a failed checkpoint-statistics reply for web.refresh-interval (3 s by
# default; AbstractCheckpointStatsHandler's cache), so the asks go on past one of those. A command a user waits on
# does not ask again: it says the error at once.
SERVER_ERROR_PATIENCE_S = 6.0
SERVER_ERROR_POLL_S = 1.0

# Running a PyFlink program plans it in a Python process on the JobManager: seconds on a warm
# cluster, much longer on a cold one sharing two cores with others (profiling clusters start cold).
SUBMIT_TIMEOUT_S = 180.0


class FlinkRestClient:
    def __init__(
        self,
        base_url: str,
        timeout_s: float = REPLY_DEADLINE_S,
        transport: httpx.BaseTransport | None = None,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
        server_error_patience_s: float = 0.0,
        security: RestSecurity = NO_REST_SECURITY,
    ) -> None:
        self.base_url = check_url(base_url, "the Flink REST URL").rstrip("/")
        self._shown_url = redact(self.base_url)  # what messages say: no credentials
        self.security = security
        # Every exchange bounded as a whole (chronos.bounded_http): a trickling or endless reply cannot hang a command.
        self._http = BoundedClient(self.base_url, deadline_s=timeout_s, transport=transport, security=security)
        self._sleep = sleep
        self._clock = clock
        self._server_error_patience_s = server_error_patience_s

    @classmethod
    def patient(cls, base_url: str, **kwargs: Any) -> FlinkRestClient:
        """The client of a long-running part: replies awaited PATIENT_REPLY_DEADLINE_S, server errors to a read asked
        again for SERVER_ERROR_PATIENCE_S (both say why)."""
        return cls(base_url, PATIENT_REPLY_DEADLINE_S, server_error_patience_s=SERVER_ERROR_PATIENCE_S, **kwargs)

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> FlinkRestClient:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    # -- transport ------------------------------------------------------------------------------
    def _send(self, method: str, path: str, job_id: str | None = None, **kwargs: Any) -> Reply:
        """The raw reply: a malformed job id and an unreachable cluster are one-line errors, a status is not."""
        if job_id is not None and not is_job_id(job_id):
            raise UnknownJob(f"no such job: {job_id[:80]!r} is not a Flink job id (32 hex digits)")
        try:
            return self._http.request(method, path, **kwargs)
        except DeadlinePassed as exc:
            raise FlinkUnreachable(f"the Flink REST API at {self._shown_url} did not answer {method} {path} whole "
                                   f"({exc})") from None
        except ReplyRefused as exc:
            raise FlinkRequestFailed(f"Flink's reply to {method} {path} is refused: {exc}") from None
        except httpx.RemoteProtocolError as exc:  # something answered, not in HTTP: not "cannot reach"
            raise FlinkRequestFailed(f"what answers at {self._shown_url} did not reply to {method} {path} in HTTP "
                                     f"chronos reads ({_first_line(exc)})") from None
        except httpx.LocalProtocolError as exc:
            raise FlinkRequestFailed(f"chronos cannot send {method} {path} to {self._shown_url}: "
                                     f"{_first_line(exc)}") from None
        except httpx.TransportError as exc:
            raise FlinkUnreachable(tls_refusal(self._shown_url, self.security, exc) or
                                   f"cannot reach the Flink REST API at {self._shown_url} ({type(exc).__name__})") from None

    def _request(self, method: str, path: str, job_id: str | None = None, **kwargs: Any) -> Any:
        response = self._send(method, path, job_id, **kwargs)
        if method == "GET" and response.status_code >= 500 and self._server_error_patience_s > 0:
            give_up_at = self._clock() + self._server_error_patience_s
            while response.status_code >= 500 and self._clock() + SERVER_ERROR_POLL_S <= give_up_at:
                self._sleep(SERVER_ERROR_POLL_S)
                response = self._send(method, path, job_id, **kwargs)
        if response.status_code in (401, 403):
            given = f"the {self.security.auth_scheme} authorization from {self.security.auth}" if self.security.auth \
                else "no Authorization header (--rest-auth)"
            raise FlinkRequestFailed(f"the Flink REST API at {self._shown_url} refused {method} {path} with "
                                     f"HTTP {response.status_code}: chronos sent {given}")
        if response.status_code == 404 and job_id is not None:
            raise UnknownJob(f"no such job on {self._shown_url}: {job_id}")
        if response.status_code >= 400:
            raise FlinkRequestFailed(f"Flink refused {method} {path}: {_first_error_line(response)}")
        if not response.content:
            return {}
        try:
            return response.json(f"Flink's reply to {method} {path}")
        except ReplyRefused as exc:
            raise FlinkRequestFailed(str(exc)) from None

    def _get(self, model: type[R], path: str, job_id: str | None = None) -> R:
        return _parse(model, self._request("GET", path, job_id), f"GET {path}")

    # -- cluster --------------------------------------------------------------------------------
    def overview(self) -> ClusterOverview:
        return self._get(ClusterOverview, "/overview")

    def taskmanagers(self) -> tuple[TaskManager, ...]:
        return self._get(TaskManagers, "/taskmanagers").taskmanagers

    def taskmanager_metrics(self, taskmanager_id: str, pattern: re.Pattern[str]) -> dict[str, float]:
        """The TaskManager's metrics whose ids match `pattern`, with their values (two requests: ids, values)."""
        path = f"/taskmanagers/{taskmanager_id}/metrics"
        listed = _parse_list(Metric, self._request("GET", path), f"GET {path}")
        names = [m.id for m in listed if pattern.fullmatch(m.id)]
        if not names:
            return {}
        values = _parse_list(Metric, self._request("GET", path, params={"get": ",".join(names)}), f"GET {path}")
        return {m.id: m.number for m in values if m.number is not None}

    def jobmanager_config(self) -> dict[str, str]:
        """The cluster's configuration as the JobManager read it (`key: value`, flattened)."""
        entries = _parse_list(ConfigEntry, self._request("GET", "/jobmanager/config"), "GET /jobmanager/config")
        return {entry.key: entry.value for entry in entries}

    # -- jobs -----------------------------------------------------------------------------------
    def restart_strategy(self, job_id: str) -> str | None:
        """The restart strategy the job runs with, as Flink describes it ("Restart with fixed delay (PT0.5S). ...").
        Its own submitted configuration shows here; `/jobs/<id>/jobmanager/config` is the cluster's."""
        reply = self._request("GET", f"/jobs/{job_id}/config", job_id)
        strategy = reply.get("execution-config", {}).get("restart-strategy") if isinstance(reply, dict) else None
        return None if strategy is None else str(strategy)

    def jobs(self) -> tuple[JobSummary, ...]:
        return self._get(JobsOverview, "/jobs/overview").jobs

    def job(self, job_id: str) -> JobDetail:
        return self._get(JobDetail, f"/jobs/{job_id}", job_id)

    def checkpoints(self, job_id: str) -> CheckpointStats:
        return self._get(CheckpointStats, f"/jobs/{job_id}/checkpoints", job_id)

    def checkpoint_config(self, job_id: str) -> CheckpointConfigReply:
        return self._get(CheckpointConfigReply, f"/jobs/{job_id}/checkpoints/config", job_id)

    def exceptions(self, job_id: str) -> ExceptionsReply:
        return self._get(ExceptionsReply, f"/jobs/{job_id}/exceptions", job_id)

    def subtask_times(self, job_id: str, vertex_id: str) -> tuple[SubtaskTimes, ...]:
        """Flink's own moments of each subtask's states: a state a polling reader on a loaded host can miss (a
        restart on a spare TaskManager is RUNNING again within a second) is still dated here."""
        return self._get(SubtasksTimesReply, f"/jobs/{job_id}/vertices/{vertex_id}/subtasktimes", job_id).subtasks

    def vertex_metric_ids(self, job_id: str, vertex_id: str) -> tuple[str, ...]:
        path = f"/jobs/{job_id}/vertices/{vertex_id}/metrics"
        return tuple(m.id for m in _parse_list(Metric, self._request("GET", path, job_id), f"GET {path}"))

    def vertex_metrics(self, job_id: str, vertex_id: str, names: Sequence[str]) -> tuple[Metric, ...]:
        """Per-subtask ids (`0.numRecordsOutPerSecond`) work where aggregated ones often do not."""
        if not names:
            return ()
        path = f"/jobs/{job_id}/vertices/{vertex_id}/metrics"
        return _parse_list(Metric, self._request("GET", path, job_id, params={"get": ",".join(names)}), f"GET {path}")

    def source_throughput(self, job_id: str) -> float | None:
        """Records/s leaving the source operators, summed over subtasks; None if Flink reports none.

        REST metrics can go stale for minutes after a TaskManager loss: treat this as a hint and
        prefer the Prometheus reporter or Kafka offsets for anything that decides.
        """
        total, seen = 0.0, False
        for vertex in self.job(job_id).vertices:
            if not vertex.is_source:
                continue
            ids = [m for m in self.vertex_metric_ids(job_id, vertex.id) if _SOURCE_RATE.match(m)]
            for metric in self.vertex_metrics(job_id, vertex.id, ids):
                if metric.number is not None:
                    total += metric.number
                    seen = True
        return total if seen else None

    def vertex_load(self, job_id: str) -> tuple[VertexLoad, ...]:
        """Busy and back-pressure time per vertex, read per subtask (the aggregated endpoint is often empty)."""
        loads = []
        for vertex in self.job(job_id).vertices:
            names = [f"{i}.{m}" for i in range(vertex.parallelism)
                     for m in ("busyTimeMsPerSecond", "backPressuredTimeMsPerSecond")]
            values: dict[str, list[float]] = {"busy": [], "bp": []}
            for metric in self.vertex_metrics(job_id, vertex.id, names):
                number = metric.number
                if number is None:  # missing, or NaN
                    continue
                values["busy" if metric.id.endswith("busyTimeMsPerSecond") else "bp"].append(number)
            loads.append(VertexLoad(vertex_id=vertex.id, name=vertex.name,
                                    max_busy_ms_per_s=max(values["busy"], default=None),
                                    max_backpressured_ms_per_s=max(values["bp"], default=None)))
        return tuple(loads)

    def cancel(self, job_id: str) -> None:
        self._request("PATCH", f"/jobs/{job_id}", job_id, params={"mode": "cancel"})

    def wait_for_state(
        self, job_id: str, accept: Callable[[JobDetail], bool], timeout_s: float, what: str
    ) -> JobDetail:
        deadline = self._clock() + timeout_s
        state = "unknown"
        for attempt in itertools.count(1):
            try:
                detail = self.job(job_id)
            except FlinkUnreachable as exc:  # a blip while waiting is waited out, up to the deadline
                state = f"unknown: {exc}"
            else:
                if accept(detail):
                    return detail
                state = detail.state
                if detail.state in TERMINAL_STATES:
                    raise FlinkRequestFailed(f"job {job_id} is {detail.state} while waiting until {what}")
            if self._clock() >= deadline:
                raise FlinkRequestFailed(f"job {job_id} not {what} after {timeout_s:.0f} s (state {state})")
            self._sleep(STATE_POLL.base(attempt))
        raise AssertionError("unreachable")  # pragma: no cover

    def wait_until_running(self, job_id: str, timeout_s: float = 120.0) -> JobDetail:
        """All tasks RUNNING, the moment a restarted job processes records again."""
        return self.wait_for_state(job_id, lambda d: d.all_running, timeout_s, "all tasks RUNNING")

    # -- savepoints -----------------------------------------------------------------------------
    def stop_with_savepoint(
        self, job_id: str, target_directory: str | Path, drain: bool = False, timeout_s: float = 300.0
    ) -> str:
        """Stop the job with a savepoint and return the savepoint's path.

        Without `drain` the job stops without emitting MAX_WATERMARK, so open windows stay in the
        savepoint and are completed by the resubmitted job rather than flushed early.
        """
        trigger = self._request(
            "POST", f"/jobs/{job_id}/stop", job_id,
            json={"targetDirectory": str(target_directory), "drain": drain},
        )
        request_id = trigger.get("request-id") if isinstance(trigger, dict) else None
        if not isinstance(request_id, str) or not is_job_id(request_id):  # trigger ids have the same form
            raise FlinkRequestFailed(f"Flink's reply to POST /jobs/{job_id}/stop carries no trigger id")
        deadline = self._clock() + timeout_s
        for attempt in itertools.count(1):
            try:
                status = self._get(SavepointTrigger, f"/jobs/{job_id}/savepoints/{request_id}", job_id)
            except FlinkUnreachable:
                if self._clock() >= deadline:
                    raise
                self._sleep(SAVEPOINT_POLL.base(attempt))
                continue
            if status.status.id == "COMPLETED":
                operation = status.operation
                if operation is None or operation.location is None:
                    cause = (operation.failure_cause or {}) if operation else {}
                    message = str(cause.get("serialized-throwable") or cause.get("class") or "unknown cause")
                    raise FlinkRequestFailed(f"stop-with-savepoint of {job_id} failed: {message[:200]}")
                return operation.location
            if self._clock() >= deadline:
                raise FlinkRequestFailed(f"stop-with-savepoint of {job_id} did not finish in {timeout_s:.0f} s")
            self._sleep(SAVEPOINT_POLL.base(attempt))
        raise AssertionError("unreachable")  # pragma: no cover

    # -- triggered checkpoints (FLINK-27101) ------------------------------------------------------
    def trigger_checkpoint(self, job_id: str) -> str:
        """Ask for a checkpoint now, of the type the job is configured for; the trigger id to follow it by."""
        reply = self._request("POST", f"/jobs/{job_id}/checkpoints", job_id, json={"checkpointType": "CONFIGURED"})
        request_id = reply.get("request-id") if isinstance(reply, dict) else None
        if not isinstance(request_id, str) or not is_job_id(request_id):
            raise FlinkRequestFailed(f"Flink's reply to POST /jobs/{job_id}/checkpoints carries no trigger id")
        return request_id

    def checkpoint_trigger(self, job_id: str, trigger_id: str) -> CheckpointTrigger:
        if not is_job_id(trigger_id):
            raise FlinkRequestFailed(f"not a checkpoint trigger id: {trigger_id[:80]!r}")
        return self._get(CheckpointTrigger, f"/jobs/{job_id}/checkpoints/{trigger_id}", job_id)

    def offers_checkpoint_trigger(self, job_id: str) -> bool:
        """Whether this cluster has the trigger endpoint, asked without triggering anything: the status of a
        trigger id nobody issued. Flink's handler answers that it knows no such operation; a cluster without the
        handler answers from its router ("Not found: ...", or its static files' "Unable to load ...") or 405."""
        response = self._send("GET", f"/jobs/{job_id}/checkpoints/{'0' * 32}", job_id)
        if response.status_code == 405:
            return False
        if response.status_code == 404:
            line = _first_error_line(response)
            return not (line.startswith("Not found") or line.startswith("Unable to load requested file"))
        return True

    # -- jar submission -------------------------------------------------------------------------
    def uploaded_jars(self) -> Mapping[str, str]:
        """Uploaded jars as {jar id: file name} (ids that could not be a jar id are left out: they
        become URL paths)."""
        reply = self._request("GET", "/jars")
        files = reply.get("files", []) if isinstance(reply, dict) else []
        return {str(f["id"]): str(f["name"]) for f in files
                if isinstance(f, dict) and _JAR_ID.match(str(f.get("id", ""))) and "name" in f}

    def upload_jar(self, jar: Path, name: str | None = None) -> str:
        """Upload `jar` (under `name` if given); return the id Flink gave it."""
        with open(jar, "rb") as handle:
            reply = self._request(
                "POST", "/jars/upload", files={"jarfile": (name or jar.name, handle, "application/x-java-archive")},
                deadline_s=SUBMIT_TIMEOUT_S,
            )
        jar_id = Path(str(reply.get("filename", "") if isinstance(reply, dict) else "")).name
        if not _JAR_ID.match(jar_id):
            raise FlinkRequestFailed(f"Flink's reply to POST /jars/upload carries no jar id (got {jar_id[:80]!r})")
        return jar_id

    def run_jar(
        self,
        jar_id: str,
        entry_class: str,
        program_args: Sequence[str],
        savepoint_path: str | None = None,
        flink_configuration: Mapping[str, str] | None = None,
        parallelism: int | None = None,
        allow_non_restored_state: bool = False,
    ) -> str:
        body: dict[str, Any] = {"entryClass": entry_class, "programArgsList": list(program_args)}
        if savepoint_path:
            body["savepointPath"] = savepoint_path
            body["allowNonRestoredState"] = allow_non_restored_state
        if flink_configuration:
            body["flinkConfiguration"] = dict(flink_configuration)
        if parallelism:
            body["parallelism"] = parallelism
        reply = self._request("POST", f"/jars/{jar_id}/run", json=body, deadline_s=SUBMIT_TIMEOUT_S)
        return _job_id_in(reply, f"POST /jars/{jar_id}/run")
