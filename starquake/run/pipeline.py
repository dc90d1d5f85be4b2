"""`starquake run`, step by step (docs/running.md): scenario and seed, run directory,
cluster, workload under the nemesis, heal, drain, teardown with logs, Parquet, checkers,
report, `runs/latest`, summary.

The history is the run's only truth and is written as things happen, so whatever ends the
run early (Ctrl-C, SIGTERM, a crash) leaves a checkable prefix behind; the cluster is torn
down on every path out.
"""

from __future__ import annotations

import dataclasses
import json
import secrets
import threading
import time
import traceback
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console

from checkers.load import prepare
from checkers.spark_settings import SparkSettings
from harness.health_probe import probe_health
from harness.signals import sigterm_interrupts
from harness.target import Target
from harness.targets import deploy
from harness.workloads.base import Workload, WorkloadContext
from harness.workloads.registry import make_workload
from harness.workloads.shared_knobs import deduplicates
from history.errors import BAD_INPUT, ENVIRONMENT, StarquakeError
from nemesis.runner import FaultStatus, NemesisRunner
from nemesis.schedule import Schedule
from scenarios.format import Scenario, load_scenario
from scenarios.plan import schedule_for
from starquake.run.check_worker import CheckWorker, Judge
from starquake.run.progress import CountingHistory, Progress
from starquake.run.run_dir import create_run_dir, reproducing_command, update_latest, write_inputs

INTERRUPTED = 130
"""The shell's code for a run ended by Ctrl-C (128 + SIGINT)."""
SEED_LIMIT = 2**31


class RunInterrupted(StarquakeError):
    """Ctrl-C or SIGTERM: torn down, the history so far kept, nothing judged."""

    exit_code = INTERRUPTED


class RunCrashed(StarquakeError):
    """The harness itself failed; the traceback is in the run directory."""

    exit_code = ENVIRONMENT


class CheckFailed(StarquakeError):
    """`starquake check` could not judge the run's history: bad input when the check
    found it unreadable, else the environment the check failed in (a Spark worker that
    died), which a suite, explore or detect counts as a run that could not finish and
    goes on from, keeping the run's directory and history."""

    def __init__(self, message: str, check_exit: int) -> None:
        super().__init__(message)
        self.check_exit = check_exit
        self.exit_code = ENVIRONMENT if check_exit == ENVIRONMENT else BAD_INPUT

    def __reduce__(self) -> tuple[type[CheckFailed], tuple[str, int]]:
        """Pickled whole: a lane process hands it to the command."""
        return CheckFailed, (str(self), self.check_exit)


@dataclass(frozen=True)
class RunOptions:
    scenario: Path
    seed: int | None = None
    backend: str | None = None
    """Overrides the scenario's `topology.backend`."""
    runs_dir: Path = Path("runs")
    target: Target | None = None
    """A system starquake did not start (`starquake conform`): the run aims its workload
    and faults at it, and neither starts nor stops anything. None: the scenario's
    topology is deployed for the run and torn down after it."""
    command: str | None = None
    """The command that reproduces the run, when it is not `starquake reproduce` (conform)."""
    fault_targets: Sequence[tuple[str, tuple[str, ...]]] = ()
    """The nodes each fault hit in the run being reproduced (`Schedule.pinned`)."""
    spark: SparkSettings = field(default_factory=SparkSettings)
    """Where the run's `starquake check` runs its Spark job."""
    without_mutants: bool = False
    """Run the scenario's clean twin: its mutants off, expecting `valid` (what shows that
    a mutant scenario's anomalies come from the mutant, not from the scenario)."""


@dataclass(frozen=True)
class RunOutcome:
    run_dir: Path
    results: dict[str, Any]
    exit_code: int
    report: Path | None


def resolve(options: RunOptions) -> tuple[Scenario, Schedule]:
    """The scenario as this run executes it (seed chosen, backend applied) and its fault
    schedule; raises ScenarioError before anything starts."""
    scenario = load_scenario(options.scenario)
    seed = next(s for s in (options.seed, scenario.seed, secrets.randbelow(SEED_LIMIT))
                if s is not None)
    topology = dataclasses.replace(scenario.topology,
                                   backend=options.backend or scenario.topology.backend)
    scenario = dataclasses.replace(scenario, seed=seed, topology=topology)
    if options.without_mutants:
        scenario = dataclasses.replace(scenario, mutants=(), expected="valid",
                                       expected_anomalies=())
    nodes = None
    if options.target is not None:
        nodes = [node for cluster in options.target.clusters for node in cluster.nodes]
    return scenario, schedule_for(scenario, seed, nodes=nodes).pinned(options.fault_targets)


def run(options: RunOptions, console: Console, checks: Judge | None = None) -> RunOutcome:
    """Execute and judge one run; `checks` is the check worker of a command that runs
    several (a suite's), else the run starts one of its own."""
    scenario, schedule = resolve(options)
    assert scenario.seed is not None
    seed, backend_name = scenario.seed, scenario.topology.backend
    run_dir = create_run_dir(options.runs_dir, scenario, seed)
    command = options.command or reproducing_command(run_dir)
    write_inputs(run_dir, scenario, command)
    update_latest(options.runs_dir, run_dir)  # the newest run, however it ends
    where = "a given target" if options.target is not None else f"{backend_name} backend"
    console.print(f"run {run_dir} (seed {seed}, {where})", markup=False)
    history = CountingHistory(run_dir / "history.jsonl")
    history.record("harness", "ok", "meta", detail={
        "scenario": scenario.name, "seed": seed,
        "duplicate_window_bound_ms": scenario.checkers.duplicate_window_bound_ms,
        "mutants": list(scenario.mutants), "expected": scenario.expected,
        "expected_anomalies": list(scenario.expected_anomalies), "command": command,
        "snapshot_timeout_ms": round(1000 * (
            scenario.topology.snapshot_timeout_s if options.target is None
            else options.target.snapshot_timeout_s)),
        **({"deduplication": True} if deduplicates(scenario.workload.knobs) else {}),
        **_optional_bounds(scenario)})
    faults = FaultStatus()
    ended = "cluster torn down" if options.target is None else "faults healed, target left running"
    started = time.monotonic()
    try:
        with sigterm_interrupts(), \
                Progress(console, history, faults, scenario.duration_s) as progress:
            _execute(scenario, schedule, run_dir, history, faults, progress, options.target)
    except KeyboardInterrupt:
        raise RunInterrupted(f"run interrupted after {time.monotonic() - started:.0f} s; "
                             f"{ended}, history so far in {run_dir}") from None
    except StarquakeError:
        raise
    except Exception as exc:
        (run_dir / "harness-error.txt").write_text(traceback.format_exc())
        raise RunCrashed(f"run failed: {type(exc).__name__}: {exc} ({ended}; "
                         f"traceback in {run_dir / 'harness-error.txt'})") from exc
    finally:
        history.close()
    try:
        if checks is not None:
            return _judge(run_dir, console, checks)
        with CheckWorker(options.spark) as own:
            return _judge(run_dir, console, own)
    except KeyboardInterrupt:
        raise RunInterrupted(f"run interrupted while judging; {ended}, the whole history in "
                             f"{run_dir}: judge it with `starquake check {run_dir}`") from None


def _optional_bounds(scenario: Scenario) -> dict[str, int]:
    """The bounds of the optional checkers the scenario asks for, which the `meta` event
    carries to them."""
    bounds = {"unavailable_bound_ms": scenario.checkers.unavailable_bound_ms,
              "zombie_broker_bound_ms": scenario.checkers.zombie_broker_bound_ms,
              "stalled_subscription_bound_ms": scenario.checkers.stalled_subscription_bound_ms}
    return {name: bound for name, bound in bounds.items() if bound is not None}


def _execute(scenario: Scenario, schedule: Schedule, run_dir: Path, history: CountingHistory,
             faults: FaultStatus, progress: Progress, given: Target | None) -> None:
    """Load under faults, heal, drain: everything that needs the cluster."""
    topic = workload_topic(scenario, run_dir, fresh=given is None)
    with _serving(scenario, run_dir, progress, given) as target:
        workload: Workload | None = None
        try:
            workload = make_workload(_context(scenario, target, history, run_dir, topic,
                                              faults))
            progress.phase("opening the workload")
            workload.open()
            _load_under_faults(scenario, schedule, target, workload, history, faults, progress)
            progress.phase("draining")
            drained = workload.drain()
            progress.phase("drained" if drained else
                           "the drain could not finish (its info event in the history says "
                           "why): the verdict can be unknown")
        finally:
            if workload is not None:
                workload.close()


@contextmanager
def _serving(scenario: Scenario, run_dir: Path, progress: Progress,
             given: Target | None) -> Iterator[Target]:
    """The Target the run aims at: `given` as it is, or the scenario's topology deployed
    for this run and torn down (its logs saved) on every way out."""
    if given is not None:
        yield given
        return
    deployment = deploy(scenario.topology, scenario.mutants, run_dir,
                        lookup_service=scenario.workload.kind == "migration")
    progress.phase(f"starting the {scenario.topology.backend} cluster: {deployment.where}")
    try:
        deployment.start()
        yield deployment
    finally:
        progress.phase("stopping the cluster, saving logs")
        deployment.stop()


def _context(scenario: Scenario, target: Target, history: CountingHistory,
             run_dir: Path, topic: str, faults: FaultStatus) -> WorkloadContext:
    first = target.clusters[0]
    return WorkloadContext(
        history=history, settings=scenario.workload, seed=scenario.seed or 0,
        cluster=first.name, service_url=first.service_url, admin_urls=first.admin_urls,
        topic=topic, client_log=run_dir / "logs" / "client.log",
        clusters=target.clusters, lookup=target.lookup,
        disturbed_since=faults.disturbed_since)


def workload_topic(scenario: Scenario, run_dir: Path, fresh: bool) -> str:
    """The run's topic. On a cluster deployed for the run it is named after the scenario;
    on a given Target, which outlives runs and keeps what earlier ones wrote, the run's
    directory name (`<timestamp>-<seed>`) is added, so no run reads another's messages."""
    suffix = "" if fresh else f"-{run_dir.name}"
    return f"persistent://public/default/{scenario.name}{suffix}"


def _load_under_faults(scenario: Scenario, schedule: Schedule, target: Target,
                       workload: Workload, history: CountingHistory, faults: FaultStatus,
                       progress: Progress) -> None:
    """The workload in a thread until the deadline; the nemesis in this thread (so Ctrl-C
    reaches it) until the final heal, aimed at the topic the workload drives, then, where
    the schedule ends in a quiet end, this thread waits out the load (Ctrl-C still
    reaches it)."""
    stop = threading.Event()
    started = time.monotonic()
    deadline = started + scenario.duration_s
    load = threading.Thread(target=workload.run, args=(deadline, stop), name="workload",
                            daemon=True)
    progress.phase(f"load for {scenario.duration_s:g} s, {len(schedule.steps)} faults scheduled",
                   load_started=started)
    watchers = [load]
    if scenario.checkers.zombie_broker_bound_ms is not None:
        watchers.append(threading.Thread(target=probe_health, args=(target, history, stop,
                                                                    deadline),
                                         name="health-probe", daemon=True))
    for thread in watchers:
        thread.start()
    try:
        NemesisRunner(schedule, target, history, workload.topic, faults).run(started, stop)
        stop.wait(max(0.0, deadline - time.monotonic()))
    finally:
        stop.set()
        for thread in watchers:
            thread.join(timeout=60)


def _judge(run_dir: Path, console: Console, checks: Judge) -> RunOutcome:
    """Parquet, the check (its exit code is the run's), the report."""
    prepare(run_dir / "history.jsonl")
    console.print("[bold]checking[/bold]")
    code = checks.judge(run_dir)
    results_path = run_dir / "results.json"
    if code not in (0, 1, 2) or not results_path.is_file():
        raise CheckFailed(f"starquake check {run_dir} exited {code}; "
                          f"see {run_dir / 'check.log'}", code)
    results = json.loads(results_path.read_text())
    report = _report(run_dir, console)
    return RunOutcome(run_dir, results, code, report)


def _report(run_dir: Path, console: Console) -> Path | None:
    """report.html by the reports package; a run whose report fails keeps its verdict."""
    try:
        from reports.report import write_report
    except ImportError as exc:
        console.print(f"no report: the reports package is not available ({exc})", markup=False)
        return None
    try:
        return write_report(run_dir)
    except Exception as exc:  # the verdict stands without its report
        console.print(f"report failed: {type(exc).__name__}: {exc}", style="yellow", markup=False)
        return None
