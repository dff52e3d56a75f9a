"""`chronos recommend`: the recovery settings (heartbeats, restart delay, a spare TaskManager) chronos proposes for
a cluster, from the pauses measured on its TaskManagers, with the predicted effect per recovery phase, the cost of
each, and the Flink config lines; `--apply` puts them in force on the local stack (`chronos stack reconfigure`)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn
from rich.table import Table

from chronos.cli.common import AsJson, RestUrl, StackDir, err, finite, out, print_json, stack_dir_of, timed_say
from chronos.model import ClusterShape
from chronos.terminal_text import styled

if TYPE_CHECKING:
    from chronos.optimizer.recovery_proposal import RecoveryProposal


def recommend(
    watch: Annotated[str, typer.Option(help="How long to measure the TaskManagers' GC pauses and heartbeat "
                                            "delays before proposing.")] = "30s",
    safety_factor: Annotated[float, typer.Option(parser=finite, help="The heartbeat timeout stays above this many times the "
                                                      "longest pause measured.")] = 3.0,
    min_timeout: Annotated[str, typer.Option(help="Never propose a heartbeat timeout shorter.")] = "5s",
    spare: Annotated[bool, typer.Option(help="Propose a spare TaskManager (memory and cores for a faster "
                                             "restart).")] = True,
    apply: Annotated[bool, typer.Option(help="Put the proposal in force on the local stack: Flink restarted with "
                                             "it, running jobs stopped with savepoints and resubmitted.")] = False,
    flink_deployment: Annotated[str | None, typer.Option(
        help="With --apply: patch this FlinkDeployment's flinkConfiguration instead (the Flink Kubernetes Operator "
             "restarts the cluster by its upgradeMode); give its REST URL with --rest-url.")] = None,
    namespace: Annotated[str, typer.Option(envvar="POD_NAMESPACE", help="Namespace of the FlinkDeployment.")] = "default",
    stack_dir: StackDir = None,
    rest_url: RestUrl = None,
    as_json: AsJson = False,
) -> None:
    """Propose the settings that shorten recovery beyond the checkpoint interval: detection, rescheduling."""
    from chronos.cli import wiring
    from chronos.errors import InvalidInput
    from chronos.model import check_kube_name, check_kube_namespace, parse_interval_ms
    from chronos.stack.state import load_state

    sd = stack_dir_of(stack_dir)
    if apply and rest_url and flink_deployment is None:
        raise InvalidInput("--apply restarts the local stack's Flink; for another cluster, put the printed lines in "
                           "its configuration (on Kubernetes: --flink-deployment NAME patches it)")
    if flink_deployment is not None and not rest_url:
        raise InvalidInput("--flink-deployment needs the cluster's --rest-url (its JobManager's REST service)")
    if flink_deployment is not None:
        check_kube_namespace(namespace, "--namespace")
        check_kube_name(flink_deployment, "--flink-deployment")
    if not 1 <= safety_factor <= 100:
        raise InvalidInput(f"--safety-factor {safety_factor:g} is out of range: 1 to 100")
    watch_s = parse_interval_ms(watch) / 1000
    if watch_s > 3600:
        raise InvalidInput(f"--watch {watch[:40]!r} is out of range: at most 1 h")
    with Progress(TextColumn("measuring pauses on the TaskManagers"), BarColumn(), TimeRemainingColumn(),
                  console=err, transient=True, disable=as_json) as bar:
        task = bar.add_task("watch", total=watch_s)
        with wiring.flink_client(sd, rest_url, patient=True) as client:
            proposed = wiring.recovery_proposal(
                client, sd, rest_url, watch_s, spare_allowed=spare, safety_factor=safety_factor,
                min_timeout_s=parse_interval_ms(min_timeout) / 1000,
                progress=lambda done: bar.update(task, completed=done))
    proposal, lines, samples = proposed.proposal, proposed.lines, proposed.samples
    state = None if rest_url else load_state(sd)
    if as_json:
        _say_json(proposal, lines.lines(), samples)
    else:
        _say(proposal, lines.lines(), samples, state is not None)
    if apply and flink_deployment is not None:
        from chronos.k8s.flink_deployment import apply_configuration

        changed = apply_configuration(wiring.deployment_api(), namespace, flink_deployment,
                                      lines.as_dict())
        if not as_json:
            out.print(f"patched FlinkDeployment {namespace}/{flink_deployment}: " + (", ".join(changed) or "nothing "
                      "changed") + ("; the operator restarts it by its upgradeMode" if changed else ""))
    elif apply:
        assert state is not None
        current_settings = dict(state.flink_settings)
        target = ClusterShape(tuple({**current_settings, **lines.as_dict()}.items()),
                              max(state.spare_taskmanagers, proposal.spare_taskmanagers))
        _apply(sd, target, as_json)


def _say(proposal: RecoveryProposal, lines: list[str], samples: int, local: bool) -> None:
    e = proposal.evidence
    out.print(f"measured on the TaskManagers ({samples} samples): longest GC pause <= {e.longest_gc_pause_s:g} s, "
              f"longest heartbeat delay {e.longest_heartbeat_delay_s:g} s -> timeout floor "
              f"{proposal.timeout_floor_s:g} s")
    table = Table("setting", "now", "proposed", "why", "cost / risk")
    for change in proposal.changes:
        table.add_row(change.what, change.now, change.proposed, change.why, change.cost)
    out.print(table)
    phases = Table("fault", "phase", "now (s)", "proposed (s)")
    for forecast in proposal.forecasts:
        for name in ("detect_s", "reschedule_s", "restore_s"):
            phases.add_row(forecast.fault, name.removesuffix("_s"), f"{getattr(forecast.now, name):.1f}",
                           f"{getattr(forecast.proposed, name):.1f}")
    out.print(phases)
    fitted = proposal.fitted
    model = ("the phase model's prior (no recovery measured in phases yet)" if fitted is None
             else f"the phase model fitted on {fitted.observations} recoveries measured here" + (
                 f" (held out by setting: {fitted.held_out_mape:.0%} error)" if fitted.held_out_mape is not None
                 else " (one setting: no held-out error yet)"))
    out.print(f"predicted by {model}; catch-up comes on top and depends on the load", style="dim")
    out.print("Flink config lines:")
    for line in lines:
        out.print(f"  {line}")
    if proposal.spare_taskmanagers and local:
        out.print("  (and 1 spare TaskManager: `chronos stack reconfigure --spare-taskmanagers 1`, or --apply)")


def _say_json(proposal: RecoveryProposal, lines: list[str], samples: int) -> None:
    from dataclasses import asdict

    print_json({"samples": samples, "evidence": asdict(proposal.evidence), "timeout_floor_s": proposal.timeout_floor_s,
                "model": proposal.model, "fitted_on": proposal.fitted.observations if proposal.fitted else 0,
                "held_out_mape": proposal.fitted.held_out_mape if proposal.fitted else None,
                "current": asdict(proposal.current), "proposed": asdict(proposal.proposed),
                "spare_taskmanagers": proposal.spare_taskmanagers, "changes": [asdict(c) for c in proposal.changes],
                "forecasts": [{"fault": f.fault, "now": asdict(f.now), "proposed": asdict(f.proposed)}
                              for f in proposal.forecasts],
                "flink_config": lines})


def _apply(sd: Path, target: ClusterShape, as_json: bool) -> None:
    from chronos.cli import wiring
    from chronos.stack.known_jobs import running_chronos_jobs

    journal = wiring.journal(sd / "profiles.db")
    start = time.monotonic()
    try:
        with wiring.flink_client(sd, None, patient=True) as client:
            reconfigurer = wiring.cluster_reconfigurer(client, sd, journal, timed_say(start))
            jobs = running_chronos_jobs(client, wiring.job_records(sd))
            outcome = reconfigurer.reconfigure(target, jobs)
    finally:
        journal.close()
    if not as_json:
        out.print(styled(("applied", "bold green"), f" in {time.monotonic() - start:.1f} s; jobs: "
                  + (", ".join(f"{o.entry.old_job_id} -> {o.job.job_id} ({o.outcome})" for o in outcome.jobs)
                     or "none")))
