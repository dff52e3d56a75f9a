"""Shared fixtures. Integration tests run against a real stack (Kafka broker + Flink cluster)
started once per session (under pytest-xdist: once per worker) in a temporary directory, on free
ports, and stopped at the end with a check that no process naming the stack's directory survived.
A test that breaks the stack (kills a TaskManager, restarts the broker) leaves it as it found it."""

from __future__ import annotations

import fcntl
import os
import shutil
import tempfile
import threading
import time
import uuid
import warnings
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
from xdist.workermanage import WorkerController

from chronos.flink.distribution import find_distribution
from chronos.flink.rest import FlinkRestClient
from chronos.flink.submit import RestSubmitter
from chronos.jobs.demo import DemoSettings, demo_spec
from chronos.jobs.fleet import VehicleFleet
from chronos.jobs.loadgen import KafkaEventSink, LoadReport, run_load
from chronos.jobs.topics import ensure_topics
from chronos.model import CheckpointSettings, JobSpec
from chronos.rates import ConstantRate
from chronos.stack.faults import KillTaskManager
from chronos.stack.local_stack import StackOptions, down, status, up
from chronos.stack.locations import default_cache_dir
from chronos.stack.service_account import DEFAULT_SERVICE_USER
from chronos.stack.state import StackState, load_state
from tests.support.module_scheduling import EXCLUSIVE_FILE_KEY, OneModuleAhead, announce_exclusive
from tests.support.processes import leftovers
from tests.support.quiesce import quiesce


def cache_dir() -> Path:
    return default_cache_dir()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The order scripts/test.sh's two workers (a stack each) take whole modules in: the longest module first, the
    short real-stack modules beside it, then the other `long(minutes)` modules, longest first, and last the modules
    that use no `stack` fixture (most take seconds; the contract suites reach it only through `getfixturevalue`;
    test_stack_lifecycle, which starts stacks of its own, is `long(1)`: its JVMs' start is not to run beside the
    hostile-input sweeps, which time the CLI against its deadlines), so that the worker
    that frees first fills the time the other's last long module takes, and a worker that must know its next module
    before it runs its last test holds a short one.
    The modules marked `copies` profile, one at a time (the `profiling_turn` fixture says why): the scheduler
    (tests.support.module_scheduling) passes one over while the other worker runs a profile. Handed out last
    instead, the second profile ran alone for 130-315 s at the end of the suite, beside
    a one-minute module that took 158 s next to it."""
    def minutes(item: pytest.Item) -> float:
        mark = item.get_closest_marker("long")
        return float(mark.args[0]) if mark is not None and mark.args else 0.0

    longest = max((minutes(item) for item in items), default=0.0)
    on_a_stack = {module(item) for item in items if "stack" in getattr(item, "fixturenames", ())}

    def place(item: pytest.Item) -> tuple[int, float]:
        m = minutes(item)
        if m and m == longest:
            return (0, 0.0)
        if m:
            return (2, -m)
        return (1, 0.0) if module(item) in on_a_stack else (3, 0.0)

    items.sort(key=place)  # stable: within a module, and among equals, collection order
    announce_exclusive(config, {module(item) for item in items if item.get_closest_marker("copies")})


def module(item: pytest.Item) -> str:
    return item.nodeid.split("::")[0]


_EXCLUSIVE_FILE = pytest.StashKey[Path]()


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: WorkerController) -> None:
    """Where the workers say which modules take turns: the controller's scheduler never sees marks."""
    node.workerinput[EXCLUSIVE_FILE_KEY] = str(node.config.stash[_EXCLUSIVE_FILE])


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> OneModuleAhead | None:
    if config.getoption("dist") != "loadfile" or _EXCLUSIVE_FILE not in config.stash:
        return None  # another --dist asked for on the command line: xdist's own
    return OneModuleAhead(config, config.stash[_EXCLUSIVE_FILE], log)


@pytest.fixture
def profiling_turn(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """One profile at a time across the suite's workers. A profile's copies run at nice 10 and take the CPU the
    live jobs leave; another worker's profile brings a live job, a tuner and two copies of its own, and on two
    cores its live job left the copies so little that a killed TaskManager's replacement registered 63 s after the
    kill (the job running again 78-117 s after it): in CI, and once here with the two modules alone, one of the
    two profiles measured too few recoveries within its 120 s timeout. The lock file sits in the directory the
    workers' temp dirs share."""
    lock = tmp_path_factory.getbasetemp().parent / "chronos-profiling-turn.lock"
    with lock.open("a") as held:
        fcntl.flock(held, fcntl.LOCK_EX)  # released when the file closes, or the worker dies
        yield


class RealStackProgress:
    """Under scripts/test.sh's two workers the suite would be minutes of dots: on the controller, a line
    when each real-stack test starts and one with its time when it ends, so a slow test is told from a
    hung one."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.took: dict[str, float] = {}
        self.began = time.monotonic()  # each line says when, since the session began: the workers' timelines

    def _say(self, line: str) -> None:
        reporter = self.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            if getattr(getattr(reporter, "_tw", None), "width_of_current_line", 0):
                reporter.write("\n")  # after a row of dots
            reporter.write_line(f"{time.monotonic() - self.began:6.0f} s {line}")

    @pytest.hookimpl
    def pytest_runtest_logstart(self, nodeid: str, location: object) -> None:
        if nodeid.startswith("tests/integration/"):
            self._say(f"  started  {nodeid}")

    @pytest.hookimpl
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if not report.nodeid.startswith("tests/integration/"):
            return
        self.took[report.nodeid] = self.took.get(report.nodeid, 0.0) + report.duration
        if report.when == "teardown":
            self._say(f"  finished {report.nodeid} in {self.took.pop(report.nodeid):.0f} s")


def pytest_configure(config: pytest.Config) -> None:
    # The xdist controller: workers' own output is not shown, their reports are relayed to it.
    if getattr(config.option, "numprocesses", None) and not hasattr(config, "workerinput"):
        config.pluginmanager.register(RealStackProgress(config), "chronos-real-stack-progress")
        handout = Path(tempfile.mkdtemp(prefix="chronos-handout-"))
        config.stash[_EXCLUSIVE_FILE] = handout / "exclusive-modules.json"
        config.add_cleanup(lambda: shutil.rmtree(handout, ignore_errors=True))


# The suite's stacks find a killed TaskManager after two missed 1 s heartbeats (~2 s) instead of Flink's ~20 s
# (10 s x 2): every test that kills one waits that much less. The 10 s timeout (not the 5 s chronos proposes on a
# quiet machine) leaves room for the pauses of two workers' JVMs on 2 cores. Flink's defaults are tested against
# these in tests/integration/test_recovery_settings.py.
SUITE_RECOVERY_SETTINGS = (("heartbeat.interval", "1s"), ("heartbeat.timeout", "10s"))


@pytest.fixture(scope="session")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StackState]:
    stack_dir = tmp_path_factory.mktemp("stack")
    state, started = up(StackOptions(stack_dir, cache_dir(), slots=4, jvm_opts=os.environ.get("CHRONOS_JVM_OPTS", ""),
                                     flink_settings=SUITE_RECOVERY_SETTINGS))
    assert started
    try:
        if os.geteuid() == 0:  # the README flow as root: no service of the stack runs as root
            users = {name: psutil.Process(r.pid).username() for name, r in state.processes().items()}
            assert set(users.values()) == {DEFAULT_SERVICE_USER}, users
        yield state
    finally:
        down(stack_dir, purge=True)
        survivors = leftovers(stack_dir)
        assert not survivors, f"processes survived `stack down`: {survivors}"


# WARN lines every TaskManager of the suite's jobs logs, dozens of times: they crowded the cause of a TaskManager
# that exited (code 1) out of the first lines shown in CI.
_NOISE = ("Name collision: Group already contains a Metric", "Error while loading kafka-version.properties")


def _last_taskmanager_words(state: StackState, lines: int = 12, causes: int = 20) -> str:
    """The dead TaskManager's own account: its log's first and last WARN/ERROR lines (the cause; a tail alone showed
    only the shutdown when a Kafka restart killed one in CI) and its last lines."""
    logs = sorted(Path(state.flink_home, "log").glob("*taskexecutor*"), key=lambda p: p.stat().st_mtime)
    said = []
    for p in logs[-2:]:
        text = p.read_text(errors="replace").splitlines()
        flagged = [line for line in text if (" WARN " in line or " ERROR " in line or "Fatal" in line)
                   and not any(noise in line for noise in _NOISE)]
        if len(flagged) > causes:  # the first (what began it) and the last (what ended it)
            flagged = [*flagged[:causes // 2], "...", *flagged[-causes // 2:]]
        said.append(f"--- {p.name}\n" + "\n".join([*flagged, "...", *text[-lines:]] if flagged else text[-lines:]))
    return "\n".join(said)


def _replace_dead_taskmanagers(request: pytest.FixtureRequest, said: str) -> None:
    state: StackState = request.getfixturevalue("stack")
    found = status(state.stack_dir_path)
    dead = [c.name for c in found.components if c.name.startswith("flink-taskmanager") and not c.alive]
    if not dead:
        return
    warnings.warn(f"{request.node.nodeid}: {', '.join(dead)} {said}; replaced.\n"
                  f"{_last_taskmanager_words(state)}", stacklevel=1)
    KillTaskManager(state.stack_dir_path).rollback()
    live = len(load_state(state.stack_dir_path).taskmanagers)  # type: ignore[union-attr]
    with FlinkRestClient(state.rest_url) as client:  # the dead one forgotten (its heartbeats missed), the new one in
        wait_until(lambda: client.overview().taskmanagers == live and client.overview().slots_total >= state.slots,
                   120, what="the dead TaskManager forgotten and the replacement's slots offered")


@pytest.fixture(autouse=True)
def _stack_left_whole(request: pytest.FixtureRequest) -> Iterator[None]:
    """A TaskManager that died is said (with its last log lines, in the warnings summary) and replaced, so one test's
    casualty is not every later test's on this worker's shared stack. Checked before each test as well as after: a
    TaskManager can die after the check that follows its test: a job's task may still be failing over or closing on
    it (one logged a FATAL in a demo job's exactly-once writer and exited 1.3 s later)."""
    if "stack" in request.fixturenames:
        _replace_dead_taskmanagers(request, "found dead before the test (an earlier test's casualty)")
    yield
    if "stack" in request.fixturenames:
        _replace_dead_taskmanagers(request, "left dead by the test")


@pytest.fixture()
def flink(stack: StackState) -> Iterator[FlinkRestClient]:
    with FlinkRestClient(stack.rest_url) as client:
        yield client


@pytest.fixture()
def submitter(flink: FlinkRestClient) -> RestSubmitter:
    return RestSubmitter(flink, find_distribution().python_jar)


class DemoJob:
    """A demo job on its own fresh topics, cancelled by the fixture at the end of the test."""

    def __init__(self, stack: StackState, flink: FlinkRestClient, submitter: RestSubmitter) -> None:
        suffix = uuid.uuid4().hex[:8]
        self.stack = stack
        self.flink = flink
        self.submitter = submitter
        self.settings = DemoSettings(
            bootstrap=stack.bootstrap,
            input_topic=f"events-{suffix}", output_topic=f"stats-{suffix}", group_id=f"g-{suffix}",
            name=f"demo-{suffix}", parallelism=2, window_s=2,
        )
        self.spec: JobSpec = demo_spec(self.settings)
        self.job_ids: list[str] = []
        ensure_topics(stack.bootstrap, [self.settings.input_topic, self.settings.output_topic], partitions=2)

    def submit(self, interval_ms: int, savepoint: str | None = None) -> str:
        job_id = self.submitter.submit(self.spec, CheckpointSettings(interval_ms), savepoint)
        self.job_ids.append(job_id)
        self.flink.wait_until_running(job_id, timeout_s=120)
        return job_id

    def cancel_all(self) -> None:
        """Cancel this test's jobs and wait until nothing of them is left on the TaskManager
        (tests/support/quiesce.py says why waiting for CANCELED is not enough)."""
        mine = set(self.job_ids)
        quiesce(self.flink, lambda jid, _name: jid in mine)


@pytest.fixture()
def demo_job(stack: StackState, flink: FlinkRestClient, submitter: RestSubmitter) -> Iterator[DemoJob]:
    job = DemoJob(stack, flink, submitter)
    try:
        yield job
    finally:
        job.cancel_all()


class BackgroundLoad:
    """run_load in a thread against the real broker."""

    def __init__(self, bootstrap: str, topic: str, rate: float, *, count: int | None = None,
                 duration_s: float | None = None, vehicles: int = 200, close_windows: bool = False) -> None:
        self.stop = False
        self.report: LoadReport | None = None
        self.error: BaseException | None = None
        sink = KafkaEventSink(bootstrap, topic)

        def work() -> None:
            try:
                self.report = run_load(sink, VehicleFleet(vehicles, seed=11), ConstantRate(rate),
                                       max_events=count, duration_s=duration_s,
                                       should_stop=lambda: self.stop, close_windows=close_windows)
            except BaseException as exc:  # noqa: BLE001 - surfaced by join()
                self.error = exc
            finally:
                sink.close()

        self.thread = threading.Thread(target=work, daemon=True)
        self.thread.start()

    def join(self, timeout_s: float = 120) -> LoadReport:
        self.thread.join(timeout_s)
        if self.error is not None:
            raise self.error
        assert self.report is not None, "the load generator did not finish"
        return self.report

    def halt(self) -> None:
        self.stop = True
        self.thread.join(30)


def wait_until(predicate, timeout_s: float, interval_s: float = 0.5, what: str = "condition"):  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout_s
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s} s waiting for {what}")
        time.sleep(interval_s)
