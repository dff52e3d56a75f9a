"""`chronos prometheus up` on the real stack: a Prometheus on loopback that scrapes every port of the
stack's Flink reporter range and the tuner's endpoint, found again by a second `up`, stopped by `down`."""

from __future__ import annotations

import json
import time

import httpx

from chronos.stack.processes import is_alive
from chronos.stack.state import StackState
from tests.conftest import wait_until
from tests.support.cli import chronos


def test_prometheus_up_scrapes_the_stack_and_down_stops_it(stack: StackState) -> None:
    sd = ["--stack-dir", stack.stack_dir]
    up = chronos("prometheus", "up", "--port", "0", "--tuner", "127.0.0.1:9464", "--json", *sd)
    assert up.returncode == 0, up.stderr
    server = json.loads(up.stdout)
    try:
        assert server["url"].startswith("http://127.0.0.1:")
        assert set(stack.prometheus_urls) <= set(server["targets"]) and "http://127.0.0.1:9464/metrics" in server["targets"]
        again = json.loads(chronos("prometheus", "up", "--port", "0", "--json", *sd).stdout)
        assert again["pid"] == server["pid"], "one Prometheus per stack"
        listed = json.loads(chronos("stack", "status", "--json", *sd).stdout)["prometheus"]
        assert listed == {"pid": server["pid"], "url": server["url"]}, "stack status shows it"
        assert server["url"] in chronos("stack", "status", *sd).stdout
        deadline = time.monotonic() + 60
        healthy: set[str] = set()
        while time.monotonic() < deadline and not healthy & set(stack.prometheus_urls):
            targets = httpx.get(server["url"] + "/api/v1/targets", timeout=5).json()["data"]["activeTargets"]
            healthy = {t["scrapeUrl"] for t in targets if t["health"] == "up"}
            time.sleep(1)
        assert healthy & set(stack.prometheus_urls), "Flink's reporter is scraped"

        def registered() -> list[dict[str, object]]:  # the JobManager's reporter may be scraped a beat after the first
            return list(httpx.get(server["url"] + "/api/v1/query", timeout=5, params={
                "query": "flink_jobmanager_numRegisteredTaskManagers"}).json()["data"]["result"])

        flink = wait_until(registered, 60, 1.0, what="the JobManager's figures in Prometheus")
        assert float(flink[0]["value"][1]) >= 1  # type: ignore[index]
    finally:
        down = chronos("prometheus", "down", *sd)
    assert down.returncode == 0 and "stopped" in down.stdout
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline and is_alive(server["pid"]):
        time.sleep(0.2)
    assert not is_alive(server["pid"])
    assert json.loads(chronos("stack", "status", "--json", *sd).stdout)["prometheus"] is None
