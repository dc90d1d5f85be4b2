"""`starquake bench workload`: how many client operations per second the topic workload
records against three containerised brokers with the nemesis on, and what limits it.

It is a real run (`scenarios/full/topic-workload-bench.toml` through the run pipeline:
deployment, faults, drain, checkers, report), so the figure is what a scenario gets. An
operation is a client's completed `send`, `ack` or `subscribe`, or a `recv`; the rate is
those that ended while the producers ran, over that time. The target is 1,000 operations/s
on a 2-core machine, stated as a ratio.

What limits it is read from the same history: the rate the producers were offered against
the rate they sent at, overall and between faults, and the send latency. Each logical
process keeps one send in flight, so the producers cannot send faster than processes /
latency: when that ceiling is below the offered rate the cluster's latency is the limit.
Otherwise, a rate below the offered one even between faults means the harness (the
machine's CPU) is; a rate that falls short only overall means the faults are (a send
waits a fault out up to its timeout, and the pacing does not make up missed slots).
"""

from __future__ import annotations

import dataclasses
import statistics
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import click
import orjson

from harness.workloads.shared_knobs import OfficialClientKnobs
from scenarios.catalogue import resolve_scenario
from scenarios.format import Scenario, load_scenario, scenario_toml
from starquake.output import command_console

TARGET_OPERATIONS_PER_SECOND = 1_000
BENCH_SCENARIO = "full/topic-workload-bench"
CLIENT_OPERATIONS = frozenset({"send", "ack", "subscribe"})
_NS = 1e9
_MS = 1e6
KEEPS_UP = 0.9
"""A rate at least this share of the offered one counts as keeping up."""


@dataclass(frozen=True)
class WorkloadBench:
    """The figures of one run's history."""

    seconds: float
    """From the first send's invoke to the last send's completion."""
    operations: int
    sends: int
    offered_sends_per_s: float
    processes: int
    send_p50_ms: float
    send_p99_ms: float
    fault_intervals: int
    intervals_with_operations: int
    sends_between_faults_per_s: float
    """The send rate outside every fault interval: what the harness and cluster manage
    when nothing is broken."""

    @property
    def per_second(self) -> float:
        return self.operations / self.seconds

    @property
    def sends_per_second(self) -> float:
        return self.sends / self.seconds

    @property
    def ceiling_sends_per_s(self) -> float:
        """What the processes could send at, each waiting out the median latency."""
        return self.processes / (self.send_p50_ms / 1000) if self.send_p50_ms else float("inf")

    def limit(self) -> str:
        if self.ceiling_sends_per_s < self.offered_sends_per_s:
            return (f"the cluster's send latency (p50 {self.send_p50_ms:.1f} ms): "
                    f"{self.processes} processes cannot send more than "
                    f"{self.ceiling_sends_per_s:,.0f}/s; add processes or brokers")
        if self.sends_between_faults_per_s < KEEPS_UP * self.offered_sends_per_s:
            return ("the harness: even between faults the processes, which the latency "
                    "would let keep up, sent below the offered rate; the machine did not "
                    "run them fast enough (CPU)")
        if self.sends_per_second < KEEPS_UP * self.offered_sends_per_s:
            return ("the faults: between them the offered rate was sent, and during them "
                    "sends wait up to the send timeout and the slots they miss are not "
                    "made up")
        return "the offered rate: the cluster kept up; ask for more (`--rate`)"


def _events(history: Path) -> Iterator[dict[str, object]]:
    with history.open("rb") as lines:
        for line in lines:
            yield orjson.loads(line)


def measure(run_dir: Path, offered_sends_per_s: float, processes: int) -> WorkloadBench:
    """The figures of the run in `run_dir` (its history and verdict)."""
    invoked: dict[object, int] = {}
    send_invokes: list[int] = []
    latencies: list[float] = []
    first_send: int | None = None
    last_send = 0
    ends: list[int] = []
    sends = 0
    for event in _events(run_dir / "history.jsonl"):
        f, kind, time = event["f"], event["type"], int(str(event["time"]))
        if f == "send" and kind == "invoke":
            invoked[event["process"]] = time
            first_send = time if first_send is None else first_send
        elif f == "send":
            started = invoked.pop(event["process"], time)
            latencies.append((time - started) / _MS)
            send_invokes.append(started)
            last_send, sends = time, sends + 1
        if (f in CLIENT_OPERATIONS and kind != "invoke") or f == "recv":
            ends.append(time)
    if first_send is None or not latencies:
        raise click.ClickException(f"{run_dir}: the run recorded no send")
    operations = sum(1 for t in ends if first_send <= t <= last_send)
    results = orjson.loads((run_dir / "results.json").read_bytes())
    intervals = [i for i in results["stats"]["nemesis"] if i["end_ms"] > i["start_ms"]]
    spans = [(i["start_ms"] * _MS, i["end_ms"] * _MS) for i in intervals]
    faulty_ns = sum(max(0.0, min(end, last_send) - max(start, first_send))
                    for start, end in spans)
    quiet_sends = sum(1 for t in send_invokes if not any(a <= t <= b for a, b in spans))
    quiet_s = (last_send - first_send - faulty_ns) / _NS
    cut = statistics.quantiles(latencies, n=100) if len(latencies) > 1 else latencies * 99
    return WorkloadBench(
        seconds=(last_send - first_send) / _NS, operations=operations, sends=sends,
        offered_sends_per_s=offered_sends_per_s, processes=processes,
        send_p50_ms=statistics.median(latencies), send_p99_ms=cut[98],
        fault_intervals=len(intervals),
        intervals_with_operations=sum(1 for i in intervals if sum(i["operations"].values())),
        sends_between_faults_per_s=quiet_sends / quiet_s if quiet_s > 0 else 0.0)


PULSAR = "apache-pulsar"
PULSAR_BOOKIES = 3
"""Both runs of the comparison with Apache Pulsar have three bookies: Pulsar writes each
entry to two, so one bookie cannot serve it."""
PULSAR_SESSION_MS = 10_000
"""...and the session of the Pulsar scenarios, a third of Pulsar's default 30 s."""
PULSAR_DRAIN_S = 180.0
"""A Pulsar broker killed late in the load takes a JVM's start and a session timeout to
come back or hand over; the drain waits that out, as `scenarios/pulsar/` do."""


@click.command()
@click.option("--seed", type=click.IntRange(min=0), default=1, show_default=True)
@click.option("--rate", type=click.IntRange(min=1), default=None,
              help="Sends per second offered [the scenario's, 500].")
@click.option("--processes", type=click.IntRange(min=1), default=None,
              help="Logical processes per producer [the scenario's, 8].")
@click.option("--runs-dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Where the runs go [a temporary directory, removed after].")
@click.option("--target", type=click.Choice([PULSAR]),
              help="Also run the same scenario on this system, both runs with three "
                   "bookies and a 10 s session, and give its rate as a ratio to our "
                   "reference implementation's.")
def bench_workload(seed: int, rate: int | None, processes: int | None,
                   runs_dir: Path | None, target: str | None) -> None:
    """Client operations per second the topic workload records against three
    containerised brokers with the nemesis on (a real run), and what limits it."""
    scenario = load_scenario(resolve_scenario(BENCH_SCENARIO))
    knobs = scenario.workload.knobs_as(OfficialClientKnobs)
    knobs = dataclasses.replace(knobs, processes=processes or knobs.processes)
    workload = dataclasses.replace(scenario.workload, rate=rate or scenario.workload.rate,
                                   knobs=knobs)
    scenario = dataclasses.replace(scenario, workload=workload)
    with tempfile.TemporaryDirectory() as tmp:
        runs = runs_dir or Path(tmp) / "runs"
        if target is None:
            reference = _bench(scenario, seed, runs, Path(tmp))
            click.echo(f"ratio_to_target="
                       f"{reference.per_second / TARGET_OPERATIONS_PER_SECOND:.2f} "
                       f"(target {TARGET_OPERATIONS_PER_SECOND:,} operations/s)")
            click.echo(f"limit: {reference.limit()}")
            return
        shaped = dataclasses.replace(
            scenario, topology=dataclasses.replace(scenario.topology, bookies=PULSAR_BOOKIES,
                                              session_timeout_ms=PULSAR_SESSION_MS))
        figures = {"reference": _bench(shaped, seed, runs, Path(tmp))}
        drained = dataclasses.replace(workload, drain_timeout_s=PULSAR_DRAIN_S)
        figures[target] = _bench(dataclasses.replace(
            shaped, name=f"{scenario.name}-{target}", workload=drained,
            topology=dataclasses.replace(shaped.topology, backend=target)),
            seed, runs, Path(tmp))
    for label, bench in figures.items():
        click.echo(f"{label}: {bench.per_second:,.0f} operations/s; limit: {bench.limit()}")
    click.echo(f"ratio {target}/reference="
               f"{figures[target].per_second / figures['reference'].per_second:.2f}")


def _bench(scenario: Scenario, seed: int, runs_dir: Path, tmp: Path) -> WorkloadBench:
    """Run `scenario` (written to `tmp`) and print and return its figures."""
    from starquake.run.pipeline import RunOptions, run

    path = tmp / f"{scenario.name}.toml"
    path.write_text(scenario_toml(scenario))
    outcome = run(RunOptions(path, seed, runs_dir=runs_dir), command_console())
    workload = scenario.workload
    figures = measure(outcome.run_dir, workload.rate,
                      workload.producers * workload.knobs_as(OfficialClientKnobs).processes)
    click.echo(f"backend={scenario.topology.backend} verdict={outcome.results.get('valid')} "
               f"seconds={figures.seconds:.1f} "
               f"operations={figures.operations} operations_per_s={figures.per_second:,.0f} "
               f"sends_per_s={figures.sends_per_second:,.0f} "
               f"sends_between_faults_per_s={figures.sends_between_faults_per_s:,.0f} "
               f"offered_sends_per_s={workload.rate} send_p50_ms={figures.send_p50_ms:.1f} "
               f"send_p99_ms={figures.send_p99_ms:.1f} "
               f"fault_intervals_with_operations={figures.intervals_with_operations}/"
               f"{figures.fault_intervals}")
    return figures
