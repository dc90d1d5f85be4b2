"""Scenarios drawn from seeds (scenarios/draw.py): every knob any workload declares has a
distribution, every drawn scenario reads back as a valid scenario file whose faults the
backend's nodes can take, a seed draws the same scenario every time and seeds differ, and
the draws know nothing of mutants."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from harness.backends import BACKENDS
from harness.targets.reference_mutants import reference_mutants
from harness.topology import REFERENCE_BROKER_SETTINGS, Topology
from harness.workloads.contract.workload import GROUP_NAMES
from harness.workloads.knobs import declared
from harness.workloads.registry import WORKLOADS
from harness.workloads.settings import SINGLE_ACTIVE_MODES, WorkloadSettings
from nemesis.faults import FAULTS
from scenarios import draw
from scenarios.draw import (
    DRAIN_MARGIN_S,
    DRAIN_WITHIN_S,
    DUPLICATE_WINDOW_BOUND_MS,
    KNOB_DRAWS,
    availability_held,
    draw_scenario,
    liveness_bound_ms,
    shutdown_bound_ms,
)
from scenarios.format import Checkers, load_scenario, scenario_toml
from scenarios.plan import schedule_for

SEEDS = range(120)


def test_every_declared_knob_has_a_distribution() -> None:
    knobs = {spec.name for spec in declared(WorkloadSettings)}
    knobs |= {spec.name for kind in WORKLOADS.values() for spec in declared(kind.knobs)}
    assert knobs - set(KNOB_DRAWS) == set(), "add a distribution to KNOB_DRAWS"
    assert set(KNOB_DRAWS) - knobs == set(), "a distribution for no knob"


@pytest.mark.parametrize("backend", sorted(BACKENDS))
def test_drawn_scenarios_read_back_and_plan_on_their_backend(backend: str,
                                                             tmp_path: Path) -> None:
    capabilities = BACKENDS[backend].capabilities
    for seed in SEEDS:
        drawn = draw_scenario(seed, backend)
        path = tmp_path / f"{drawn.name}.toml"
        path.write_text(scenario_toml(drawn))
        scenario = load_scenario(path)
        assert scenario.seed == seed and scenario.expected == "valid"
        assert scenario.workload.kind not in BACKENDS[backend].unsupported_workloads
        schedule_for(scenario, seed)  # raises when a fault is beyond the nodes
        assert all(FAULTS[name].needs <= capabilities for name in scenario.nemesis.faults)
        bound = liveness_bound_ms(scenario.nemesis, scenario.topology)
        held = availability_held(scenario.nemesis, scenario.topology)
        assert scenario.checkers.unavailable_bound_ms == (bound if held else None)


def test_no_bound_on_availability_where_the_faults_may_halt_every_broker() -> None:
    """Under `shutdown` an expired session halts its broker for the rest of the load; a
    kill does not (the broker starts again). Seed 1 once drew three session expiries under
    `shutdown`, and its clean run was held to a 51 s bound while no broker was left."""
    drawn = [draw_scenario(seed, "local") for seed in SEEDS]
    halting = [s for s in drawn if s.topology.session_expired_policy == "shutdown"
               and "expire-session" in s.nemesis.faults]
    assert halting and all(s.checkers.unavailable_bound_ms is None for s in halting)
    assert any(s.checkers.unavailable_bound_ms is not None for s in drawn
               if s.topology.session_expired_policy == "shutdown")
    assert all(s.checkers.unavailable_bound_ms is not None for s in drawn
               if s.topology.session_expired_policy == "reconnect")


def test_a_subscription_may_stall_as_long_as_the_faults_explain() -> None:
    """Every drawn scenario bounds a stalled subscription by its liveness bound, not the
    checker's 10 s: geo seed 7 on docker cut cluster a's one bookie off for 16 s, its
    consumers stayed connected with nothing to read, and every run of it stalled 17 s."""
    for seed in SEEDS:
        scenario = draw_scenario(seed, "docker")
        assert scenario.checkers.stalled_subscription_bound_ms == liveness_bound_ms(
            scenario.nemesis, scenario.topology), seed
    geo_7 = draw_scenario(7, "docker", kinds=("geo",))
    assert (geo_7.checkers.stalled_subscription_bound_ms or 0) > 17_000


def test_a_seed_draws_one_scenario_and_seeds_draw_many() -> None:
    assert scenario_toml(draw_scenario(7, "docker")) == scenario_toml(draw_scenario(7, "docker"))
    drawn = {scenario_toml(draw_scenario(seed, "docker")).split("\n", 4)[4] for seed in SEEDS}
    assert len(drawn) == len(SEEDS)
    kinds = {draw_scenario(seed, "docker").workload.kind for seed in SEEDS}
    assert kinds == set(draw.KINDS)


def test_the_draws_name_no_mutant() -> None:
    source = Path(draw.__file__).read_text()
    assert [m for m in reference_mutants() if m in source] == []


def test_mutants_asked_for_are_in_every_drawn_scenario() -> None:
    assert draw_scenario(3, "local", mutants=("no-fencing",)).mutants == ("no-fencing",)


@pytest.mark.parametrize("backend", ["local", "docker"])
def test_a_seed_draws_the_same_scenario_whichever_mutants_are_on(backend: str) -> None:
    """`detect --explore` compares mutants on the scenarios of the same seeds, and their
    clean control is those scenarios with no mutant: the mutants field is all that may
    differ, in the scenario and in the file written for it."""
    for seed in range(1, 41):
        clean = draw_scenario(seed, backend)
        for mutants in [("no-fencing",), ("reown-without-owner-check", "no-fencing"),
                        ("receipt-names-latest-write",)]:
            drawn = draw_scenario(seed, backend, mutants=mutants)
            assert drawn.mutants == mutants
            assert replace(drawn, mutants=()) == clean
            written = scenario_toml(drawn).splitlines()
            assert [line for line in written if not line.startswith("mutants")] == [
                line for line in scenario_toml(clean).splitlines()
                if not line.startswith("mutants")]


def test_settings_only_our_brokers_read_are_drawn_for_the_workload_they_serve() -> None:
    """The controller's hold between a change's steps for `scalable`, the replicators'
    keep-alive and the snapshot timeout for `geo`, each away from its default in some
    seeds; never for another workload, nor on a backend whose brokers are not ours."""
    default = Topology()
    for kind, settings in (("scalable", ("controller_step_pause_s",)),
                           ("geo", ("replication_keepalive_s", "snapshot_timeout_s"))):
        drawn = [draw_scenario(seed, "local", kinds=(kind,)).topology for seed in SEEDS]
        for name in settings:
            assert {getattr(t, name) for t in drawn} - {getattr(default, name)}
        assert {getattr(t, name) for t in drawn for name in REFERENCE_BROKER_SETTINGS
                if name not in settings} == {getattr(default, name)
                                             for name in REFERENCE_BROKER_SETTINGS
                                             if name not in settings}
    for seed in SEEDS:
        topology = draw_scenario(seed, "apache-pulsar").topology
        assert all(getattr(topology, name) == getattr(default, name)
                   for name in REFERENCE_BROKER_SETTINGS)


def test_some_drawn_schedules_overlap_faults_and_aim_at_bookies() -> None:
    scenarios = [draw_scenario(seed, "local") for seed in SEEDS]
    nemeses = [s.nemesis for s in scenarios]
    assert {n.overlap for n in nemeses} == set(draw.OVERLAPS)
    assert {s.nemesis.roles for s in scenarios if s.workload.kind != "scalable"} == {
        (), draw.STORAGE_ROLES}
    overlapping = [n for n in nemeses if n.overlap and n.faults]
    assert all(liveness_bound_ms(n, Topology()) > liveness_bound_ms(
        replace(n, overlap=0.0), Topology()) for n in overlapping)


def test_some_draws_leave_the_system_alone_and_bound_it_by_its_session_alone() -> None:
    """About a fifth of the draws have no fault: a contract probe counts only clear of
    any fault and its aftermath, which faults drawn from the first seconds seldom left."""
    quiet = [s for s in (draw_scenario(seed, "local") for seed in SEEDS) if not s.nemesis.faults]
    assert 0.1 * len(SEEDS) < len(quiet) < 0.3 * len(SEEDS)
    assert {s.nemesis.schedule for s in quiet} == {"none"}
    assert all(s.checkers.unavailable_bound_ms == s.topology.session_timeout_ms
               + 1000 * draw.HEAL_MARGIN_S for s in quiet)


@pytest.mark.parametrize("backend", ["local", "docker"])
def test_our_brokers_are_held_to_the_shutdown_they_promise(backend: str) -> None:
    """Every draw on our brokers bounds `zombie-broker` by PIP-57's promise (the session
    timeout and, under `reconnect`, its retries), not by the faults: a broker is unhealthy
    only while a fault cuts it off, so a bound past the longest fault could never be
    exceeded by one that never shuts down."""
    for seed in SEEDS:
        topology = draw_scenario(seed, backend).topology
        bound = draw_scenario(seed, backend).checkers.zombie_broker_bound_ms
        timeout = topology.session_timeout_ms
        retries = 3 if topology.session_expired_policy == "reconnect" else 0
        assert bound == shutdown_bound_ms(topology) == (1 + retries) * timeout + 5000, seed
    # Pulsar documents no such bound (its Target's `metadata_loss_shutdown_s` is None).
    assert {draw_scenario(seed, "apache-pulsar").checkers.zombie_broker_bound_ms
            for seed in SEEDS} == {None}


def test_only_scalable_draws_aim_faults_at_the_controller_leader_and_in_some_seeds() -> None:
    roles = {draw_scenario(seed, "local", kinds=("scalable",)).nemesis.roles for seed in SEEDS}
    assert roles == {(), draw.STORAGE_ROLES, draw.LEADER_AIMS,
                     draw.STORAGE_ROLES + draw.LEADER_AIMS}


def test_lagging_consumers_read_everything_within_the_drain() -> None:
    """Consumers that work on each message may lag, but never past what a drain makes up:
    over every drawn topic and scalable scenario, the consumers reading at once read what
    was sent within DRAIN_WITHIN_S of the load's end, and the drain waits that long and a
    margin. A draw before the cap (one failover consumer at 17 ms a message against 155
    sends a second for 60 s) needed 100 s more and timed out at 60 s, `unknown`."""
    lagging = 0
    for seed in SEEDS:
        for kind in ("topic", "scalable"):
            scenario = draw_scenario(seed, "local", kinds=(kind,))
            workload, knobs = scenario.workload, scenario.workload.knobs
            work_ms = getattr(knobs, "process_ms", 0.0)
            if not work_ms:
                continue
            single = getattr(knobs, "subscription_mode", "shared") in SINGLE_ACTIVE_MODES
            readers = 1 if single else workload.consumers
            after_load_s = workload.rate * scenario.duration_s * work_ms / 1000 / readers \
                - scenario.duration_s
            assert after_load_s <= DRAIN_WITHIN_S + 0.5, (seed, kind)
            assert workload.drain_timeout_s >= after_load_s + DRAIN_MARGIN_S - 0.1, (seed, kind)
            lagging += after_load_s > 0
    assert lagging  # some draws do lag: the cap bounds the lag, it does not remove it


def test_working_consumers_are_drawn_by_how_busy_they_are() -> None:
    """`process_ms` gives each reader a load drawn from CONSUMER_LOAD at the drawn rate,
    below the drain's cap: consumers that keep up and consumers that fall behind, both
    common, whatever the rate."""
    loads = []
    for seed in SEEDS:
        scenario = draw_scenario(seed, "local", kinds=("topic",))
        workload, knobs = scenario.workload, scenario.workload.knobs
        if knobs.process_ms:  # type: ignore[attr-defined]
            single = knobs.subscription_mode in SINGLE_ACTIVE_MODES  # type: ignore[attr-defined]
            readers = 1 if single else workload.consumers
            loads.append(knobs.process_ms * workload.rate / 1000 / readers)  # type: ignore[attr-defined]
    high = draw.CONSUMER_LOAD[1]
    assert all(load <= high + 0.01 for load in loads)
    assert sum(load < 1 for load in loads) > len(loads) / 4
    assert sum(load > 1 for load in loads) > len(loads) / 4


def test_fault_lengths_follow_the_session_timeout_and_the_brokers_give_up_time() -> None:
    """Each schedule's fault length comes from one band: short, past the drawn session
    timeout, or past the time a broker cut from its store stays up (PIP-57's promise,
    which `zombie-broker` bounds); every band is drawn in some seeds."""
    bands_drawn = set()
    for seed in SEEDS:
        scenario = draw_scenario(seed, "local")
        if not scenario.nemesis.faults:
            continue
        bands = draw.fault_lengths(scenario.topology, scenario.faults_s)
        band = next(n for n, (low, high) in enumerate(bands)
                    if low - 0.05 <= scenario.nemesis.duration_s <= high + 0.05)
        bands_drawn.add(band)
        assert scenario.nemesis.duration_s <= max(3.0, scenario.faults_s)
        if band == 2 and bands[2][0] < scenario.faults_s:
            assert scenario.nemesis.duration_s > shutdown_bound_ms(scenario.topology) / 1000
    assert bands_drawn == {0, 1, 2}
    past_session = draw.fault_lengths(Topology(session_timeout_ms=10_000), 60.0)[1]
    assert past_session == (12.0, 25.0)
    past_give_up = draw.fault_lengths(Topology(session_timeout_ms=10_000), 60.0)[2]
    assert past_give_up == (54.0, 60.0)  # (1 + 3) * 10 s + 5 s, times 1.2, to the run's end


def test_the_quiet_gap_leaves_room_for_several_faults_in_a_short_run() -> None:
    drawn = [draw_scenario(seed, "local", kinds=("topic",)) for seed in SEEDS]
    gaps = [(s.nemesis.interval_s, s.duration_s) for s in drawn if s.nemesis.faults]
    assert all(gap <= max(draw.QUIET_S[0], s / 3) + 0.05 for gap, s in gaps)
    assert min(gap for gap, _ in gaps) < 3 and max(gap for gap, _ in gaps) > 15


def test_half_the_several_cluster_schedules_hold_a_fault_between_clusters(
        monkeypatch) -> None:
    between = ("cut-wan", "unlink-replication")
    drawn = [draw_scenario(seed, "docker", kinds=("geo",)) for seed in SEEDS]
    held = sum(any(f in between for f in s.nemesis.faults) for s in drawn if s.nemesis.faults)
    assert held > 0.4 * sum(bool(s.nemesis.faults) for s in drawn)
    single = [draw_scenario(seed, "docker", kinds=("topic",)) for seed in SEEDS]
    assert not any(f in between for s in single for f in s.nemesis.faults)
    monkeypatch.setattr(draw, "_between", lambda *_args: ())
    for scenario in drawn:  # the fault added comes last; nothing else moves
        alone = draw_scenario(scenario.seed, "docker", kinds=("geo",))
        assert alone.nemesis.faults == scenario.nemesis.faults[:len(alone.nemesis.faults)]


def test_geo_runs_over_three_clusters_in_about_half_the_draws() -> None:
    three = sum(len(draw_scenario(seed, "local", kinds=("geo",)).topology.clusters) == 3
                for seed in SEEDS)
    assert 0.35 * len(SEEDS) < three < 0.65 * len(SEEDS)


def test_faults_land_in_any_cluster_in_some_several_cluster_draws() -> None:
    drawn = [draw_scenario(seed, "local", kinds=("geo",)) for seed in SEEDS]
    assert {s.nemesis.aim_clusters for s in drawn if s.nemesis.faults} == {"first", "any"}
    single = [draw_scenario(seed, "local", kinds=("topic",)) for seed in SEEDS]
    assert {s.nemesis.aim_clusters for s in single} == {"first"}


def test_faults_strike_one_to_three_nodes_at_once_moving_no_other_draw(monkeypatch) -> None:
    drawn = [draw_scenario(seed, "local", kinds=("topic",)) for seed in SEEDS]
    assert {s.nemesis.nodes_at_once for s in drawn} == set(draw.NODES_AT_ONCE)
    monkeypatch.setattr(draw, "_nodes_at_once", lambda _seed: 1)
    for scenario in drawn:
        alone = draw_scenario(scenario.seed, "local", kinds=("topic",))
        assert replace(alone, nemesis=replace(alone.nemesis, nodes_at_once=1)) == replace(
            scenario, nemesis=replace(scenario.nemesis, nodes_at_once=1))


def test_some_schedules_mix_the_three_length_bands_moving_no_other_draw(monkeypatch) -> None:
    drawn = [draw_scenario(seed, "local", kinds=("topic",)) for seed in SEEDS]
    mixed = [s for s in drawn if s.nemesis.lengths_s]
    assert 0.3 * len(drawn) < len(mixed) < 0.7 * len(drawn)
    for scenario in mixed:
        bands = draw.fault_lengths(scenario.topology, scenario.faults_s)
        assert all(low <= length <= high
                   for length, (low, high) in zip(scenario.nemesis.lengths_s, bands, strict=True))
        if scenario.nemesis.faults:  # the bound covers the longest length a fault may take
            assert scenario.checkers.stalled_subscription_bound_ms == draw.liveness_bound_ms(
                scenario.nemesis, scenario.topology) > 1500 * max(scenario.nemesis.lengths_s)
    monkeypatch.setattr(draw, "_lengths", lambda *_: ())
    for scenario in mixed:
        alone = draw_scenario(scenario.seed, "local", kinds=("topic",))
        assert alone.nemesis == replace(scenario.nemesis, lengths_s=())


def test_failovers_between_clusters_may_redeliver_past_the_replicators_backlogs(
        tmp_path: Path) -> None:
    assert Checkers().duplicate_window_bound_ms < DUPLICATE_WINDOW_BOUND_MS
    for seed in range(10):
        scenario = draw_scenario(seed, "local", kinds=("geo",))
        path = tmp_path / f"{seed}.toml"
        path.write_text(scenario_toml(scenario))
        assert load_scenario(path).checkers.duplicate_window_bound_ms == (
            DUPLICATE_WINDOW_BOUND_MS)


def test_no_draw_for_apache_pulsar_unlinks_replication() -> None:
    drawn = {fault for seed in SEEDS for fault in draw_scenario(
        seed, "apache-pulsar", kinds=("geo",)).nemesis.faults}
    assert "unlink-replication" not in drawn
    assert "unlink-replication" in {fault for seed in SEEDS for fault in draw_scenario(
        seed, "docker", kinds=("geo",)).nemesis.faults}


def test_in_some_draws_every_optional_client_behaviour_is_on_at_once() -> None:
    """A quarter of the draws switch on every behaviour that is off in some draws, so
    that they meet: drawn one by one, consumers that crash, work on each message and
    deduplication were together in one topic draw of seven, and with cumulative acks
    (which only the single-active modes take) in one of forty."""
    together = 0
    for seed in SEEDS:
        knobs = draw_scenario(seed, "local", kinds=("topic",)).workload.knobs
        together += bool(knobs.crash_interval_s and knobs.process_ms  # type: ignore[attr-defined]
                         and knobs.cumulative_ack_every  # type: ignore[attr-defined]
                         and knobs.deduplication)  # type: ignore[attr-defined]
    one_by_one = 0.6 * 0.5 * 0.6 * 0.5 * 0.5
    assert together > 0.7 * draw.ALL_AT_ONCE_SHARE / 2 * len(SEEDS)
    assert together > 2 * one_by_one * len(SEEDS)


def test_a_third_of_the_schedules_hold_a_long_fault_beneath_the_others_moving_no_other_draw(
        monkeypatch) -> None:
    drawn = [draw_scenario(seed, "local", kinds=("geo",)) for seed in SEEDS]
    beneath = [s for s in drawn if s.nemesis.background]
    faulted = [s for s in drawn if s.nemesis.faults]
    assert 0.15 * len(faulted) < len(beneath) < 0.5 * len(faulted)
    for scenario in beneath:
        nemesis = scenario.nemesis
        assert nemesis.background in nemesis.faults
        assert nemesis.background in ("kill", "pause", "unlink-replication")
        ends = nemesis.background_at_s + nemesis.background_s
        assert 0.3 * scenario.faults_s <= ends <= 0.9 * scenario.faults_s
        assert scenario.checkers.unavailable_bound_ms is None or (
            scenario.checkers.unavailable_bound_ms > 1000 * nemesis.background_s)
    assert not any(s.nemesis.background for s in drawn if not s.nemesis.faults)
    monkeypatch.setattr(draw, "_with_background", lambda settings, *_: settings)
    for scenario in beneath:
        alone = draw_scenario(scenario.seed, "local", kinds=("geo",))
        assert replace(scenario, nemesis=scenario.nemesis.without_background(),
                       checkers=alone.checkers) == alone


def test_half_the_runs_with_faults_end_quiet_moving_no_other_draw(monkeypatch) -> None:
    """A quiet end is added to the run drawn, its faults drawn as over the run without
    it; a run without one is drawn as before quiet ends existed."""
    drawn = [draw_scenario(seed, "local", kinds=("geo",)) for seed in SEEDS]
    faulted = [s for s in drawn if s.nemesis.faults]
    quiet = [s for s in faulted if s.nemesis.quiet_end_s]
    assert 0.3 * len(faulted) < len(quiet) < 0.7 * len(faulted)
    low, high = draw.QUIET_END_S
    assert all(low <= s.nemesis.quiet_end_s <= high and 20 <= s.faults_s <= 60
               for s in quiet)
    assert not any(s.nemesis.quiet_end_s for s in drawn if not s.nemesis.faults)
    monkeypatch.setattr(draw, "_quiet_end", lambda _seed: 0.0)
    for scenario in drawn:
        alone = draw_scenario(scenario.seed, "local", kinds=("geo",))
        assert alone.nemesis == replace(scenario.nemesis, quiet_end_s=0.0)
        assert alone.checkers == scenario.checkers
        if not scenario.nemesis.quiet_end_s and alone.duration_s == scenario.duration_s:
            assert alone == scenario


def test_contract_runs_draw_most_probe_groups_and_every_one_when_all_at_once() -> None:
    """Each group is drawn with chance SUBSET_SHARE, and every one in the draws that switch
    every optional behaviour on (ALL_AT_ONCE_SHARE)."""
    drawn = [draw_scenario(seed, "local", kinds=("contract",)) for seed in SEEDS]
    sizes = [len(s.workload.knobs.groups) for s in drawn]  # type: ignore[attr-defined]
    whole = sum(size == len(GROUP_NAMES) for size in sizes)
    assert 0.5 < whole / (draw.ALL_AT_ONCE_SHARE * len(drawn)) < 2
    partial = [size for size in sizes if size < len(GROUP_NAMES)]
    assert 0.6 < sum(partial) / len(partial) / len(GROUP_NAMES) < 0.9
