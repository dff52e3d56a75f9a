"""The hostile and careless inputs of the surfaces added after the first sweep: Kubernetes (a kubeconfig, an API
server's replies, names), secrets quoted back by a server, compressed replies, SQL variable names, Prometheus's
replies, numbers in files and replies, stores read back, text that misprints. Each class of the issue has cases of
its own here (these inputs, not the issue's), run through the CLI by tests/security/test_hostile_sweep.py."""

from __future__ import annotations

import base64
import functools
import gzip
import json
import os
import sqlite3
import time
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.security.sweep_cases import (
    ADOPT,
    DETAIL,
    ENV_SECRET,
    JOBS,
    SECRET,
    Case,
    Scratch,
    fifo,
    job_file,
    job_with_name,
)
from tests.support.fake_operator import changed
from tests.support.hostile_flink import (
    JOB,
    Send,
    endless,
    json_reply,
    raw_reply,
    recorded_routes,
    request_head,
    trickle,
)

KUBE_TOKEN = "kube-tok-5e21c9"  # the kubeconfig's token: never printed
NAMESPACE, NAME = "streaming", "fleet"
FLINK_DEPLOYMENTS = f"/apis/flink.apache.org/v1beta1/namespaces/{NAMESPACE}/flinkdeployments"
QUERY_RANGE = "/api/v1/query_range"
DISCOVER = ("tune", "--discover", NAMESPACE, "--recovery", "60s", "--duration", "2s", "--metrics-port", "-1")
TUNE_DEPLOYMENT = ("tune", "--flink-deployment", NAME, "--namespace", NAMESPACE, "--rest-url", "{url}", "--recovery",
                   "60s", "--duration", "2s", "--metrics-port", "-1", "--pause-watch", "off")
REPORT = ("report", "--prometheus", "{url}", "--job", "fleet", "--since", "10m", "--step", "10s", "--out", "{root}/png")
KUBE_DEADLINE_S = 10.0  # chronos.k8s.kube_api.DEADLINE_S: a trickle is cut there
PROMETHEUS_DEADLINE_S = 5.0  # chronos.report.from_prometheus.DEADLINE_S
START_S = 5.0  # what a case about a deadline allows besides it: the CLI's start and its other calls, on a loaded host
DISCOVER_S = 2.0  # the --duration of DISCOVER


# -- what the cases build ---------------------------------------------------------------------------------------
def kubeconfig(token: str = KUBE_TOKEN, user: str = "", cluster: str = "") -> Callable[[Scratch], Path]:
    """~/.kube/config in the case's HOME, its cluster the case's server."""
    def build(s: Scratch) -> Path:
        return s.file("home/.kube/config", f"""apiVersion: v1
kind: Config
current-context: here
clusters: [{{name: here, cluster: {{server: '{s.url}'{cluster}}}}}]
users: [{{name: me, user: {{token: {token}{user}}}}}]
contexts: [{{name: here, context: {{cluster: here, user: me, namespace: {NAMESPACE}}}}}]
""")
    return build


def then(*steps: Callable[[Scratch], Any]) -> Callable[[Scratch], Any]:
    """Each step in turn; the last one's result fills {file}."""
    def build(s: Scratch) -> Any:
        result = None
        for step in steps:
            result = step(s)
        return result
    return build


def deployment(name: str = NAME, annotate: bool = True, rest_url: str | None = None, **changes: Any) -> dict[str, Any]:
    """A FlinkDeployment as the operator shapes it, its job the recorded Flink job; `changes` by dotted path."""
    resource: dict[str, Any] = {
        "apiVersion": "flink.apache.org/v1beta1", "kind": "FlinkDeployment",
        "metadata": {"name": name, "namespace": NAMESPACE,
                     "annotations": {"chronos/tune": "true", **({"chronos/rest-url": rest_url} if rest_url else {})}
                     if annotate else {}},
        "spec": {"job": {"upgradeMode": "savepoint"},
                 "flinkConfiguration": {"execution.checkpointing.interval": "30s"}},
        "status": {"lifecycleState": "STABLE", "jobStatus": {"state": "RUNNING", "jobId": JOB},
                   "reconciliationStatus": {"lastReconciledSpec": json.dumps(
                       {"flinkConfiguration": {"execution.checkpointing.interval": "30s"}})}},
    }
    return changed(resource, **changes)


def listing(*items: Any) -> Send:
    return json_reply({"apiVersion": "flink.apache.org/v1beta1", "kind": "FlinkDeploymentList", "metadata": {},
                       "items": list(items)})


def kube(reply: Send | Any, *, get: Send | Any | None = None) -> dict[str, Send | Any]:
    """The API server's answers: the namespace's list, and (by default the first listed item) the deployment."""
    answers: dict[str, Send | Any] = {FLINK_DEPLOYMENTS: reply}
    if get is not None:
        answers[f"{FLINK_DEPLOYMENTS}/{NAME}"] = get
    return answers


@functools.cache
def _bomb(layers: int, size: int = 1 << 30) -> bytes:
    """`size` bytes of `[` compressed `layers` times over: a GiB in about a MB (one gzip member per MiB, repeated:
    members in a row inflate to their contents in a row), a few KB with two layers."""
    data = gzip.compress(b"[" * (1 << 20), 9) * (size >> 20)
    for _ in range(layers - 1):
        data = gzip.compress(data, 9)
    return data


@functools.cache
def _deflated() -> bytes:
    return zlib.compress(b" " * (64 << 20), 9)  # 64 MiB in 64 KB: past the cap, and quick to make


def encoded(coding: str, body: bytes | Callable[[], bytes], status: int = 200) -> Send:
    """A reply whose Content-Encoding says `coding`, its body as given (built when the reply is sent)."""
    def send(conn: Any) -> None:
        data = body() if callable(body) else body
        conn.sendall(f"HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Encoding: {coding}\r\n"
                     f"Content-Length: {len(data)}\r\nConnection: close\r\n\r\n".encode() + data)
    return send


def not_http() -> Send:
    def send(conn: Any) -> None:
        conn.sendall(b"SSH-2.0-OpenSSH_9.2\r\nProtocol mismatch.\r\n")
    return send


def echo_headers(status: int) -> Send:
    """An error reply that repeats every header of the request it got (as some proxies' error pages do)."""
    def send(conn: Any) -> None:
        body = json.dumps({"errors": [f"proxy refused: {' | '.join(request_head().splitlines())}"]}).encode()
        conn.sendall(f"HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n"
                     "Connection: close\r\n\r\n".encode() + body)
    return send


def query_result(points: int = 10, series: int = 1, value: Any = "1", stamp: Any = None) -> Send:
    start = 1_765_000_000
    return json_reply({"status": "success", "data": {"resultType": "matrix", "result": [
        {"metric": {"job_name": "fleet", "i": str(i)},
         "values": [[stamp if stamp is not None else start + 10 * n, value] for n in range(points)]}
        for i in range(series)]}})


def profile_store(change: str) -> Callable[[Scratch], Path]:
    """A profile store chronos wrote (one run), then one column or table changed as `change` says (SQL)."""
    def build(s: Scratch) -> Path:
        from chronos.model import FaultRecord, JobSpec, RecoveryMeasurement
        from chronos.profiler.records import ProfileRun, RunConfig, SteadyState
        from chronos.profiler.settings import ProfileSettings
        from chronos.profiler.store import ProfileStore

        path = s.root / "profile.db"
        store = ProfileStore(path)
        settings = ProfileSettings(spec=JobSpec("fleet"), workload=((0.0,), (100.0,)), interval_min_s=1,
                                   interval_max_s=60, loads=(1.0,), faults=1, steady_s=10, seed=0, warmup_s=1, hold_s=1,
                                   timeout_s=60, max_recovery_s=60, max_p99_ms=1000)
        store.create_profile("p1", "fleet", 1_000, settings.model_dump_json())
        fault = FaultRecord("kill-taskmanager", "tm", 2_000, 1.0, "")
        store.save_run(ProfileRun("r1", "p1", 0, RunConfig(5_000, 1.0), 1000.0, "completed", 1_000, 9_000,
                                  SteadyState(1000.0, 10.0, 20.0, 30.0, 50.0, 1e6, 40.0),
                                  (RecoveryMeasurement(fault, 5_000, "worst-case", 3_000, 8_000, 9_000, 7.0, 10.0, 0,
                                                       1_000, 3, settings_in_force=(("heartbeat.timeout", "50 s"),)),)))
        store.close()
        with sqlite3.connect(path) as db:
            db.executescript(change)
        return path
    return build


def journal_store(change: str) -> Callable[[Scratch], Path]:
    def build(s: Scratch) -> Path:
        from chronos.tune.journal import DecisionRecord, TuneJournal

        path = s.root / "journal.db"
        journal = TuneJournal(path)
        a_minute_ago = int(time.time() * 1000) - 60_000  # within the report's range
        journal.record_decision(DecisionRecord(a_minute_ago, "fleet", JOB, "keep", 10.0, None, True, "recovery", "r", "e"))
        journal.close()
        with sqlite3.connect(path) as db:
            db.executescript(change)
        return path
    return build


def victim_unchanged(s: Scratch) -> None:
    """The victim folder and its file keep their owner and mode (a chown or chmod through a link is a write too)."""
    for path in (s.victim, s.victim / "keep.txt"):
        info = os.lstat(path)
        assert (info.st_uid, info.st_mode & 0o7777) == (os.getuid(), 0o755 if path.is_dir() else 0o644), \
            f"{path} changed: uid {info.st_uid}, mode {info.st_mode & 0o7777:o}"


def services_dir_linked_to_victim(s: Scratch) -> Path:
    """The stack's services directory (as root: under the services root) made a symlink to the victim folder, as
    the service user could make it."""
    from chronos.stack.service_account import services_dir_for

    s.victim.chmod(0o755)
    (s.victim / "keep.txt").chmod(0o644)
    s.stack.mkdir(parents=True, exist_ok=True)
    services = services_dir_for(s.stack, separate=True)
    services.parent.mkdir(parents=True, exist_ok=True)
    if services.is_symlink() or services.exists():
        services.unlink()
    services.symlink_to(s.victim)
    s.cleanup.append(lambda: services.unlink(missing_ok=True))
    return services


def text_job_name(name: str) -> dict[str, Send]:
    """The recorded job under `name`, written into the JSON as escapes (a lone surrogate cannot be UTF-8)."""
    routes = recorded_routes()
    overview = json.dumps({"jobs": [{**routes[JOBS]["jobs"][0], "name": name}]})  # ensure_ascii: \\ud800 stays
    detail = json.dumps({**routes[DETAIL], "name": name})
    return {JOBS: raw_reply(overview.encode()), DETAIL: raw_reply(detail.encode())}


def surface_cases() -> list[Case]:
    basic = base64.b64encode(f"admin:{SECRET}".encode()).decode()
    return [
        # 1. privilege: as root, the services directory a link the service user planted
        Case("stack-up-through-a-linked-services-dir", ("stack", "up"), "refused", ("services directory", "symlink"),
             setup=services_dir_linked_to_victim, after=victim_unchanged, root_only=True),
        # 2. secrets a server repeats
        Case("bearer-token-echoed-by-a-500", ("--rest-auth", "bearer:${{env:CHRONOS_SWEEP_TOKEN}}", "status", "--job", JOB,
                                              "--rest-url", "{url}"), "refused", ("Flink refused",),
             answers={DETAIL: echo_headers(500)}),
        Case("basic-login-echoed-by-a-400", ("--rest-auth", "basic:${{file:{root}/login}}", "job", "list",
                                             "--rest-url", "{url}"), "refused", ("Flink refused",),
             setup=lambda s: s.file("login", f"admin:{SECRET}\n"), answers={JOBS: echo_headers(400)},
             absent=(basic,)),
        Case("url-password-echoed-by-a-502", ("job", "list", "--rest-url", "http://admin:" + SECRET + "@{hostport}"),
             "refused", ("Flink refused",), answers={JOBS: json_reply({"errors": [f"bad login admin/{SECRET}"]}, 502)}),
        Case("url-password-echoed-as-base64", ("job", "list", "--rest-url", "http://admin:" + SECRET + "@{hostport}"),
             "refused", ("Flink refused",), answers={JOBS: echo_headers(503)}, absent=(basic,)),
        Case("token-as-a-job-name", ("--rest-auth", "bearer:${{env:CHRONOS_SWEEP_TOKEN}}", "job", "list", "--rest-url",
                                     "{url}"), "shown", ("***",), answers=job_with_name(f"job of {ENV_SECRET}")),
        Case("token-as-a-job-name-in-json", ("--rest-auth", "bearer:${{env:CHRONOS_SWEEP_TOKEN}}", "job", "list", "--json",
                                             "--rest-url", "{url}"), "shown", ("***",),
             answers=job_with_name(f"job of {ENV_SECRET}")),
        Case("kube-token-echoed-by-the-api-server", DISCOVER, "said", ("Kubernetes refused", "403"),
             setup=kubeconfig(), answers=kube(json_reply({"kind": "Status", "code": 403, "message":
                                                          f"token {KUBE_TOKEN} is not allowed"}, 403)),
             absent=(KUBE_TOKEN,)),
        # 3. SQL variables by name
        Case("sql-var-name-with-equals", ADOPT, "refused",
             ("SQL variable name", "x=1"), setup=job_file(program="{sql: q.sql, vars: {'x=1': a, x: b}}")),
        Case("sql-var-name-with-paren", ADOPT, "refused",
             ("SQL variable name",), setup=job_file(program="{sql: q.sql, vars: {'x) OR (1': a, x: b}}")),
        Case("sql-var-name-with-newline", ADOPT, "refused",
             ("SQL variable name",), setup=job_file(program="{sql: q.sql, vars: {\"x\\ny\": a, x: b}}")),
        Case("sql-var-name-starting-with-a-digit", ADOPT,
             "refused", ("SQL variable name",), setup=job_file(program="{sql: q.sql, vars: {'1x': a, x: b}}")),
        # 4. compressed replies
        Case("flink-reply-gzip-twice", ("job", "list", "--rest-url", "{url}"), "refused", ("2 content codings",),
             answers={JOBS: encoded("gzip, gzip", lambda: _bomb(2))}),
        Case("flink-reply-gzip-of-a-gib", ("job", "list", "--rest-url", "{url}"), "refused", ("over 16 MiB",),
             answers={JOBS: encoded("gzip", lambda: _bomb(1))}),
        Case("flink-reply-deflate-of-a-gib", ("status", "--job", JOB, "--rest-url", "{url}"), "refused",
             ("over 16 MiB",), answers={DETAIL: encoded("deflate", _deflated)}),
        Case("flink-reply-claims-gzip", ("job", "list", "--rest-url", "{url}"), "refused", ("gzip-encoded, and is not",),
             answers={JOBS: encoded("gzip", b'{"jobs": []}')}),
        Case("flink-reply-in-brotli", ("job", "list", "--rest-url", "{url}"), "refused", ("content coding 'br'",),
             answers={JOBS: encoded("br", b"\x8b\x02\x80")}),
        Case("flink-reply-gzip-whole", ("job", "list", "--rest-url", "{url}"), "shown", ("chronos-vehicle-stats",),
             answers={JOBS: encoded("gzip", gzip.compress(json.dumps(recorded_routes()[JOBS]).encode()))}),
        Case("prometheus-reply-in-zstd", REPORT, "refused", ("content coding 'zstd'",),
             answers={QUERY_RANGE: encoded("zstd", b"(\xb5/\xfd")}),
        Case("kube-list-gzip-thrice", DISCOVER, "said", ("3 content codings",), setup=kubeconfig(),
             answers=kube(encoded("gzip, gzip, gzip", lambda: gzip.compress(_bomb(2))))),
        # 5. hangs
        Case("bearer-token-file-is-a-fifo", ("--rest-auth", "bearer:${{file:{file}}}", "job", "list", "--rest-url",
                                             "{url}"), "refused", ("is a FIFO",), setup=fifo),
        Case("kafka-ca-file-is-a-fifo", ("--kafka-security", "{file}", "load", "run", "--count", "1", "--bootstrap",
                                         "127.0.0.1:9"), "refused", ("is a FIFO",),
             setup=lambda s: (fifo(s), s.file("kafka.yaml", f"security-protocol: SSL\nca-file: {s.root}/policy.fifo\n"))[1]),
        Case("kubeconfig-is-a-fifo", DISCOVER, "refused", ("kubeconfig", "is a FIFO"),
             setup=lambda s: (s.root / "home" / ".kube").mkdir(parents=True) or os.mkfifo(s.root / "home/.kube/config")),
        Case("kubeconfig-is-dev-zero", DISCOVER, "refused", ("kubeconfig", "is a device"),
             setup=lambda s: (s.root / "home" / ".kube").mkdir(parents=True) or
             (s.root / "home/.kube/config").symlink_to("/dev/zero")),
        Case("kubeconfig-names-a-fifo-key", DISCOVER, "refused", ("client-certificate", "is a FIFO"),
             setup=then(fifo, lambda s: kubeconfig(user=f", client-certificate: {s.root}/policy.fifo, "
                                                        f"client-key: {s.root}/policy.fifo")(s))),
        Case("kube-get-trickles", TUNE_DEPLOYMENT, "refused", ("did not answer whole",), setup=kubeconfig(),
             answers=kube(listing(deployment()), get=trickle(0.5)), within_s=KUBE_DEADLINE_S + START_S),
        Case("kube-list-trickles", DISCOVER, "said", ("did not answer whole",), setup=kubeconfig(),
             answers=kube(trickle(0.5, headers_too=True)), within_s=KUBE_DEADLINE_S + DISCOVER_S + START_S),
        Case("kube-list-endless", DISCOVER, "said", ("over 32 MiB",), setup=kubeconfig(),
             answers=kube(endless(chunked=True)), within_s=KUBE_DEADLINE_S + DISCOVER_S + START_S),
        Case("prometheus-trickles", REPORT, "refused", ("did not answer whole",), answers={QUERY_RANGE: trickle(0.5)},
             within_s=PROMETHEUS_DEADLINE_S + START_S),
        Case("prometheus-sends-400k-points", REPORT, "refused", ("points",),
             answers={QUERY_RANGE: query_result(points=400_000)}),
        Case("prometheus-sends-5000-series", REPORT, "refused", ("series",),
             answers={QUERY_RANGE: query_result(points=2, series=5000)}),
        Case("discover-300-annotated-deployments", (*DISCOVER[:-4], "--duration", "3s", "--metrics-port", "-1"),
             "said", ("300 FlinkDeployments",), setup=kubeconfig(),
             answers=kube(listing(*(deployment(f"job-{i}") for i in range(300)))),
             within_s=3 + START_S + 2),  # its --duration, the CLI's start, and the take-ups in flight at the stop
        # 6. Kubernetes names and shapes
        Case("discover-dot-dot", ("tune", "--discover", "..", "--recovery", "60s"), "refused",
             ("'..' is not a Kubernetes namespace",)),
        Case("discover-empty-namespace", ("tune", "--discover", "", "--recovery", "60s"), "refused",
             ("is not a Kubernetes namespace",)),
        Case("discover-namespace-with-query", ("tune", "--discover", "a?watch=1", "--recovery", "60s"), "refused",
             ("is not a Kubernetes namespace",)),
        Case("flink-deployment-with-slash", ("tune", "--flink-deployment", "a/../b", "--recovery", "60s"), "refused",
             ("is not a Kubernetes object name",)),
        Case("jobs-file-deployment-is-a-path", ("tune", "--jobs", "{file}"), "refused", ("jobs file",
                                                                                         "Kubernetes object name"),
             setup=lambda s: s.file("jobs.yaml", "defaults: {recovery_s: 60}\njobs:\n  - {name: x, flink_deployment: "
                                                 "'../../api/v1/secrets'}\n")),
        Case("jobs-file-namespace-with-slash", ("tune", "--jobs", "{file}"), "refused", ("jobs file", "namespace"),
             setup=lambda s: s.file("jobs.yaml", "defaults: {recovery_s: 60}\njobs:\n  - {name: x, flink_deployment: "
                                                 "fleet, namespace: 'kube-system/secrets'}\n")),
        Case("kube-items-not-a-list", DISCOVER, "said", ("items",), setup=kubeconfig(),
             answers=kube(json_reply({"items": {"a": 1}}))),
        Case("kube-metadata-a-string", DISCOVER, "said", ("not tuned", "metadata"), setup=kubeconfig(),
             answers=kube(listing({"metadata": "fleet"}, deployment("other")))),
        Case("kube-annotation-a-number", DISCOVER, "said", ("not tuned", "annotations"), setup=kubeconfig(),
             answers=kube(listing(deployment(metadata__annotations={"chronos/tune": True})))),
        Case("kube-last-reconciled-not-json", TUNE_DEPLOYMENT, "refused", ("lastReconciledSpec", "not valid JSON"),
             setup=kubeconfig(), answers=kube(listing(), get=deployment(
                 status__reconciliationStatus={"lastReconciledSpec": "{not json"}))),
        Case("kube-configuration-a-list", TUNE_DEPLOYMENT, "refused", ("flinkConfiguration",), setup=kubeconfig(),
             answers=kube(listing(), get=deployment(spec__flinkConfiguration=["a", "b"]))),
        Case("kube-status-a-string", TUNE_DEPLOYMENT, "refused", ("status",), setup=kubeconfig(),
             answers=kube(listing(), get=deployment(status="RUNNING"))),
        Case("kube-job-id-a-path", TUNE_DEPLOYMENT, "refused", ("jobId", "not a Flink job id"), setup=kubeconfig(),
             answers=kube(listing(), get=deployment(status__jobStatus={"state": "RUNNING", "jobId": "../../jars"}))),
        Case("kube-name-not-a-name", DISCOVER, "said", ("not tuned", "Kubernetes object name"), setup=kubeconfig(),
             answers=kube(listing(deployment("Fleet/../x")))),
        Case("kube-interval-of-40-digits", TUNE_DEPLOYMENT, "refused", ("execution.checkpointing.interval",
                                                                        "not a duration chronos takes"),
             setup=kubeconfig(), answers=kube(listing(), get=deployment(
                 spec__flinkConfiguration={"execution.checkpointing.interval": "7" * 40}))),
        Case("kube-deployment-listed-twice", DISCOVER, "said", ("listed twice",), setup=kubeconfig(),
             answers=kube(listing(deployment(rest_url="http://127.0.0.1:9"), deployment(rest_url="http://127.0.0.1:9")))),
        Case("kubeconfig-not-yaml", DISCOVER, "refused", ("kubeconfig", "not valid YAML"),
             setup=lambda s: s.file("home/.kube/config", "clusters: [\n")),
        Case("kubeconfig-nested-deep", DISCOVER, "refused", ("kubeconfig", "nests deeper"),
             setup=lambda s: s.file("home/.kube/config", "clusters: " + "[" * 200 + "]" * 200 + "\n")),
        Case("kubeconfig-clusters-a-string", DISCOVER, "refused", ("kubeconfig", "clusters"),
             setup=lambda s: s.file("home/.kube/config", "clusters: everywhere\ncurrent-context: x\n")),
        Case("kubeconfig-server-ftp", DISCOVER, "refused", ("is not a URL chronos takes",),
             setup=lambda s: s.file("home/.kube/config", "current-context: h\nclusters: [{name: h, cluster: {server: "
                                                          "'ftp://x'}}]\nusers: [{name: u, user: {token: t}}]\n"
                                                          "contexts: [{name: h, context: {cluster: h, user: u}}]\n")),
        Case("kubeconfig-missing", DISCOVER, "refused", ("kubeconfig",)),
        # 7. numbers without bounds
        Case("policy-interval-of-a-microsecond", ("tune", "--config", "{file}"), "refused", ("interval_min_s",),
             setup=lambda s: s.file("p.yaml", "recovery_s: 60\ninterval_min_s: 0.000001\n")),
        Case("policy-recovery-of-1e-200", ("tune", "--config", "{file}"), "refused", ("recovery_s",),
             setup=lambda s: s.file("p.yaml", "recovery_s: 1.0e-200\n")),
        Case("policy-latency-of-a-nanosecond", ("tune", "--config", "{file}"), "refused", ("latency_p99_ms",),
             setup=lambda s: s.file("p.yaml", "recovery_s: 60\nlatency_p99_ms: 0.000001\n")),
        Case("jobs-file-recovery-of-1e-300", ("tune", "--jobs", "{file}"), "refused", ("recovery_s",),
             setup=lambda s: s.file("jobs.yaml", f"defaults: {{recovery_s: 1.0e-300}}\njobs: [{{name: x, job: {JOB}}}]\n")),
        Case("job-file-parallelism-of-25-digits", ADOPT,
             "refused", ("parallelism",), setup=job_file(extra="parallelism: " + "4" * 25 + "\n")),
        Case("experiment-window-of-1e200", ("chaos", "run", "{file}"), "refused", ("window-s",),
             setup=lambda s: s.file("e.yaml", _experiment(window="1.0e200"))),
        Case("experiment-pause-of-1e200", ("chaos", "run", "{file}"), "refused", ("seconds",),
             setup=lambda s: s.file("e.yaml", _experiment(action="{fault: pause-taskmanager, seconds: 1.0e200}"))),
        Case("experiment-mtbf-of-1e-200", ("chaos", "run", "{file}"), "refused", ("mtbf-s",),
             setup=lambda s: s.file("e.yaml", _experiment(action="{fault: kill-taskmanager, when: {strategy: random, "
                                                                  "mtbf-s: 1.0e-200}}"))),
        Case("experiment-a-trillion-keys", ("chaos", "run", "{file}"), "refused", ("vehicles",),
             setup=lambda s: s.file("e.yaml", _experiment(load="{rate: 100, vehicles: 1000000000000}"))),
        Case("experiment-probe-min-above-max", ("chaos", "run", "{file}"), "refused", ("min", "max"),
             setup=lambda s: s.file("e.yaml", _experiment(probe="{name: p, signal: lag, min: 10, max: 5}"))),
        Case("rate-trace-negative-time", ("load", "run", "--profile", "csv", "--trace", "{file}", "--count", "1",
                                          "--bootstrap", "127.0.0.1:9"), "refused", ("time",),
             setup=lambda s: s.file("trace.csv", "seconds,rate\n-30,100\n0,200\n")),
        Case("collect-every-a-millisecond", ("tune", "--recovery", "60s", "--collect-every", "1ms"), "refused",
             ("--collect-every", "out of range")),
        Case("stall-after-a-millisecond", ("tune", "--recovery", "60s", "--stall-after", "1ms"), "refused",
             ("--stall-after", "out of range")),
        Case("decide-before-collecting", ("tune", "--recovery", "60s", "--collect-every", "10s", "--decide-every", "2s"),
             "refused", ("--decide-every",)),
        Case("nan-source-rate-in-status-json", ("status", "--job", JOB, "--json", "--rest-url", "{url}"), "shown",
             ('"source_records_per_s": null',), answers=_source_metric("NaN")),
        Case("infinite-source-rate-in-status-json", ("status", "--job", JOB, "--json", "--rest-url", "{url}"), "shown",
             ('"source_records_per_s": null',), answers=_source_metric("Infinity")),
        Case("reply-number-of-1e400", ("job", "list", "--rest-url", "{url}"), "refused", ("not valid JSON",),
             answers={JOBS: raw_reply(json.dumps(recorded_routes()[JOBS]).replace('"duration": ', '"duration": 1e400, '
                                                                                  '"x": ', 1).encode())}),
        Case("latency-snapshot-from-the-future", ("status", "--job", JOB, "--json", "--rest-url", "{url}"), "shown",
             ('"p99_latency_ms": null',), setup=_snapshot(1e400)),
        Case("recommend-on-a-nan-gc-metric", ("recommend", "--rest-url", "{url}", "--watch", "1s", "--json"), "shown",
             ("heartbeat",), answers=_gc_metric("NaN")),
        Case("recommend-safety-factor-nan", ("recommend", "--rest-url", "{url}", "--safety-factor", "nan"), "refused",
             ("--safety-factor",)),
        # 8. stores read back
        Case("profile-store-text-in-a-number", ("profile", "report", "--db", "{file}"), "refused",
             ("profile database", "interval_ms"), setup=profile_store("UPDATE chronos_runs SET interval_ms = 'soon';")),
        Case("profile-store-infinite-recovery", ("profile", "report", "--db", "{file}", "--models"), "refused",
             ("profile database", "recovery_s"), setup=profile_store("UPDATE chronos_recoveries SET recovery_s = 9e999;")),
        Case("profile-store-garbage-json", ("profile", "report", "--db", "{file}"), "refused",
             ("profile database", "settings_in_force"),
             setup=profile_store("UPDATE chronos_recoveries SET settings_in_force = '[[1, [2]';")),
        Case("profile-store-without-runs", ("profile", "report", "--db", "{file}"), "refused",
             ("profile database", "chronos_runs"), setup=profile_store("DROP TABLE chronos_samples; "
                                                                      "DROP TABLE chronos_repeat_steady; "
                                                                      "DROP TABLE chronos_recoveries; "
                                                                      "DROP TABLE chronos_steady_state; "
                                                                      "DROP TABLE chronos_runs;")),
        Case("profile-store-huge-integer", ("profile", "report", "--db", "{file}"), "refused",
             ("profile database", "started_ms"),
             setup=profile_store("UPDATE chronos_runs SET started_ms = 9223372036854775807;")),
        Case("journal-text-in-an-interval", ("report", "--db", "{file}", "--out", "{root}/png"), "refused",
             ("database", "interval"), setup=journal_store("UPDATE chronos_decisions SET interval_s = 'x';")),
        Case("journal-without-decisions", ("report", "--db", "{file}", "--out", "{root}/png"), "refused",
             ("database", "chronos_decisions"), setup=journal_store("DROP TABLE chronos_decisions;")),
        Case("report-out-names-a-file", ("report", "--db", "{file}", "--out", "{root}/journal.db"), "refused",
             ("--out", "not a directory"), setup=journal_store("")),
        Case("profile-plots-names-a-file", ("profile", "report", "--db", "{file}", "--plots", "{file}"), "refused",
             ("--plots", "not a directory"), setup=profile_store("")),
        # 9. text
        Case("job-name-with-a-lone-surrogate", ("job", "list", "--rest-url", "{url}"), "shown", ("\\ud800",),
             answers=text_job_name("half \ud800 a pair")),
        Case("job-name-with-a-bidi-override", ("status", "--job", JOB, "--rest-url", "{url}"), "shown", ("\\u202e",),
             answers=text_job_name("cost \u202e0001$")),
        Case("non-ascii-bearer-token", ("--rest-auth", "bearer:${{env:CHRONOS_SWEEP_TOKEN_2}}", "job", "list",
                                        "--rest-url", "{url}"), "refused", ("Authorization header cannot carry",),
             env={"CHRONOS_SWEEP_TOKEN_2": "tök€n-ü"}),
        Case("bearer-token-with-a-newline", ("--rest-auth", "bearer:${{env:CHRONOS_SWEEP_TOKEN_2}}", "job", "list",
                                             "--rest-url", "{url}"), "refused", ("Authorization header cannot carry",),
             env={"CHRONOS_SWEEP_TOKEN_2": "abc\r\nX-Injected: 1"}),
        Case("rest-url-path-with-a-control", ("job", "list", "--rest-url", "http://127.0.0.1:9/fl\x07ink"), "refused",
             ("is not a URL chronos takes",)),
        Case("program-path-with-a-nul", ADOPT, "refused",
             ("program",), setup=job_file(program='{python: "job\\0.py"}')),
        Case("metrics-address-that-does-not-resolve", ("tune", "--recovery", "60s", "--metrics-address",
                                                       "no-such-host.invalid", "--metrics-port", "9"), "refused",
             ("--metrics-address", "does not resolve")),
        Case("policy-field-twice", ("tune", "--config", "{file}"), "refused", ("recovery", "twice"),
             setup=lambda s: s.file("p.yaml", "recovery_s: 60\nrecovery-s: 30\n")),
        Case("jobs-file-policy-field-twice", ("tune", "--jobs", "{file}"), "refused", ("interval_max", "twice"),
             setup=lambda s: s.file("jobs.yaml", f"defaults: {{recovery_s: 60, interval_max_s: 60, interval-max-s: 90}}"
                                                 f"\njobs: [{{name: x, job: {JOB}}}]\n")),
        # misleading, not broken
        Case("server-that-is-not-http", ("job", "list", "--rest-url", "{url}"), "refused", ("did not reply", "in HTTP"),
             answers={JOBS: not_http()}),
        Case("discover-without-a-stack", DISCOVER, "said", ("0 FlinkDeployments",), setup=kubeconfig(),
             answers=kube(listing())),
    ]


def _experiment(window: str = "20", action: str = "{fault: kill-taskmanager}", load: str = "null",
                probe: str = "{name: p, signal: lag, max: 10}") -> str:
    return (f"title: t\nload: {load}\nsteady-state-hypothesis: {{title: h, window-s: {window}, probes: [{probe}]}}\n"
            f"method: [{action}]\n")


def _source_metric(value: str) -> dict[str, Send]:
    routes = recorded_routes()
    vertex = routes[DETAIL]["vertices"][0]["id"]
    path = f"/jobs/{JOB}/vertices/{vertex}/metrics"
    return {path: json_reply([{"id": "0.Source__src.numRecordsOutPerSecond", "value": value}])}


def _gc_metric(value: str) -> dict[str, Send]:
    manager = recorded_routes()["/taskmanagers"]["taskmanagers"][0]["id"]
    return {f"/taskmanagers/{manager}/metrics": json_reply(
        [{"id": "Status.JVM.GarbageCollector.G1_Young_Generation.Time", "value": value}])}


def _snapshot(wall_s: float) -> Callable[[Scratch], Path]:
    def build(s: Scratch) -> Path:
        path = s.stack / "helpers" / "latency.json"
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        s.stack.chmod(0o700)
        path.write_text(json.dumps({"wall_time_s": wall_s, "at_s": 1.0, "window_s": 60.0, "records": 10, "events": 10,
                                    "p50_ms": 5.0, "p95_ms": 6.0, "p99_ms": 7.0, "max_ms": 8.0, "records_per_s": 1.0,
                                    "events_per_s": 1.0}).replace("Infinity", "1e400"))
        path.chmod(0o600)
        return path
    return build
