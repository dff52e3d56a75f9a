"""The local stack as a cluster that can be restarted with other recovery settings, and the write-ahead plan of
that restart, kept beside the stack's state (chronos.tune.cluster_reconfigure carries it out)."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

from chronos.errors import InvalidInput, StackError
from chronos.input_files import read_own_json
from chronos.model import ClusterShape, ReconfigurePlan
from chronos.stack.local_stack import restart_flink
from chronos.stack.state import load_state

PLAN_FILE = "reconfigure.json"


class LocalClusterRestarter:
    def __init__(self, stack_dir: Path, report: Callable[[str], None] = lambda _: None) -> None:
        self._stack_dir = stack_dir
        self._report = report

    def in_force(self) -> ClusterShape:
        state = load_state(self._stack_dir)
        if state is None:
            raise StackError(f"no stack in {self._stack_dir}; start one with `chronos stack up`")
        return ClusterShape(state.flink_settings, state.spare_taskmanagers)

    def restart(self, shape: ClusterShape) -> None:
        restart_flink(self._stack_dir, shape.flink_settings, shape.spare_taskmanagers, self._report)


class PlanFile:
    """The plan as JSON, replaced atomically (write, fsync, rename): a crash leaves the old plan or the new."""

    def __init__(self, stack_dir: Path) -> None:
        self._path = stack_dir / PLAN_FILE

    def load(self) -> ReconfigurePlan | None:
        if not self._path.exists():
            return None
        try:
            raw = read_own_json(self._path, "reconfiguration plan")  # its job ids are stopped and resubmitted
            target = ClusterShape(tuple((str(k), str(v)) for k, v in raw["target"]["flink_settings"]),
                                  int(raw["target"]["spare_taskmanagers"]))
            plan = ReconfigurePlan(target, tuple(str(j) for j in raw["job_ids"]))
        except InvalidInput as exc:
            raise StackError(f"{exc}; look at it and remove it") from None
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise StackError(f"{self._path} is not a reconfiguration plan chronos wrote ({type(exc).__name__}); "
                             "look at it and remove it") from None
        if not 0 <= plan.target.spare_taskmanagers <= 2:
            raise StackError(f"{self._path} is not a reconfiguration plan chronos wrote (spare TaskManagers "
                             f"{plan.target.spare_taskmanagers}); look at it and remove it")
        return plan

    def save(self, plan: ReconfigurePlan) -> None:
        body = {"target": {"flink_settings": [list(kv) for kv in plan.target.flink_settings],
                           "spare_taskmanagers": plan.target.spare_taskmanagers},
                "job_ids": list(plan.job_ids)}
        tmp = self._path.with_suffix(".tmp")
        with tmp.open("w") as handle:
            json.dump(body, handle)
            handle.flush()
            os.fsync(handle.fileno())
        tmp.replace(self._path)

    def clear(self) -> None:
        self._path.unlink(missing_ok=True)
