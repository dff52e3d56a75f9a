"""What a recovery-settings proposal needs to know of a cluster, read over its REST API
(`chronos.tune.recovery_advice.ClusterFacts`)."""

from __future__ import annotations

import contextlib

from chronos.errors import ChronosError
from chronos.flink.rest import FlinkRestClient


class RestClusterFacts:
    def __init__(self, client: FlinkRestClient) -> None:
        self._client = client

    def flink_version(self) -> str:
        return self._client.overview().flink_version

    def jobmanager_config(self) -> dict[str, str]:
        return self._client.jobmanager_config()

    def largest_state_bytes(self) -> float:
        """The largest state of the cluster's running jobs, by their latest completed checkpoint (0 when none has)."""
        sizes = [0.0]
        for job in self._client.jobs():
            if job.state == "RUNNING":
                with contextlib.suppress(ChronosError):
                    latest = self._client.checkpoints(job.jid).latest.completed
                    if latest is not None:
                        sizes.append(float(latest.state_size))
        return max(sizes)
