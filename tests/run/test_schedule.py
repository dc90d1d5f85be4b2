"""Fault schedules: a seed fixes them entirely, timelines are honoured, every schedule
ends healed, and what a backend cannot inject is refused by name before a run starts."""

from __future__ import annotations

import pytest

from harness.target import Node
from harness.topology import planned_nodes
from nemesis.faults.base import OWNER
from scenarios.format import ScenarioError
from scenarios.plan import schedule_for
from tests.run.conftest import WriteScenario

RANDOM = """
duration_s = 120
[topology]
backend = "docker"
brokers = 3
bookies = 2
zookeepers = 3
[nemesis]
schedule = "random"
faults = ["kill", "pause", "isolate", "random-halves", "expire-session"]
interval_s = 5
duration_s = 4
"""


def test_the_seed_alone_fixes_faults_times_and_targets(write_scenario: WriteScenario) -> None:
    scenario = write_scenario(RANDOM)
    first, again = schedule_for(scenario, 42), schedule_for(scenario, 42)
    assert first == again
    assert len(first.steps) >= 8
    assert {s.fault for s in first.steps} >= {"kill", "pause", "isolate"}
    other = schedule_for(scenario, 43)
    assert [(s.at_s, s.fault, s.targets) for s in other.steps] != \
           [(s.at_s, s.fault, s.targets) for s in first.steps]


def test_random_faults_follow_one_another_within_the_run(write_scenario: WriteScenario) -> None:
    schedule = schedule_for(write_scenario(RANDOM), 7)
    everyone = {n.name for n in planned_nodes(write_scenario(RANDOM).topology)}
    previous_end = 0.0
    for step in schedule.steps:
        assert previous_end < step.at_s < 120
        assert set(step.targets) <= everyone | {OWNER}
        assert 2.0 <= step.duration_s <= 6.0 or step.fault == "expire-session"
        previous_end = step.at_s + step.duration_s
    assert schedule.actions()[-1].kind == "heal"
    assert schedule.actions()[-1].at_s == 120


TIMELINE = """
duration_s = 20
[topology]
backend = "local"
[nemesis]
schedule = "timeline"
[[nemesis.timeline]]
at_s = 12
fault = "kill"
duration_s = 30
targets = ["a-bookie1", "owner"]
[[nemesis.timeline]]
at_s = 2.5
fault = "pause"
duration_s = 4
targets = ["broker"]
[[nemesis.timeline]]
at_s = 9
fault = "expire-session"
targets = ["a-broker2"]
"""


def test_a_timeline_runs_as_written_and_ends_healed(write_scenario: WriteScenario) -> None:
    schedule = schedule_for(write_scenario(TIMELINE), 1)
    actions = [(a.at_s, a.kind, a.step.fault if a.step else None) for a in schedule.actions()]
    assert actions == [
        (2.5, "begin", "pause"), (6.5, "end", "pause"),
        (9.0, "begin", "expire-session"),  # instantaneous: no end
        (12.0, "begin", "kill"),  # would end at 42, after the run: the final heal ends it
        (20.0, "heal", None),
    ]
    kill = next(s for s in schedule.steps if s.fault == "kill")
    assert kill.targets == ("a-bookie1", OWNER)
    pause = next(s for s in schedule.steps if s.fault == "pause")
    assert pause.targets[0] in ("a-broker1", "a-broker2", "a-broker3")
    assert schedule_for(write_scenario(TIMELINE), 1) == schedule


def test_without_faults_the_schedule_is_the_final_heal(write_scenario: WriteScenario) -> None:
    schedule = schedule_for(write_scenario("duration_s = 5\n"), 3)
    assert schedule.steps == ()
    assert [(a.at_s, a.kind) for a in schedule.actions()] == [(5.0, "heal")]


@pytest.mark.parametrize(("text", "message"), [
    ('[topology]\nbackend = "local"\n[nemesis]\nschedule = "random"\n'
     'faults = ["kill", "isolate"]\n',
     "nemesis.faults[1]: the target cannot take isolate: it needs partition, which no "
     "node offers"),
    ('[nemesis]\nschedule = "timeline"\n[[nemesis.timeline]]\nat_s = 1\nfault = "cut-wan"\n',
     "nemesis.timeline[0].fault: cut-wan cuts clusters apart; the target has only"),
    ('[nemesis]\nschedule = "timeline"\n[[nemesis.timeline]]\nat_s = 1\nfault = "kill"\n'
     'targets = ["broker-1"]\n',
     "nemesis.timeline[0].targets[0]: expected a node name (one of a-broker1, a-broker2, "
     "a-broker3, a-bookie1, a-zk1), a role (broker, bookie, zookeeper), owner or "
     "controller-leader, got 'broker-1'"),
    ('[nemesis]\nschedule = "timeline"\n[[nemesis.timeline]]\nat_s = 1\nfault = "isolate"\n'
     'targets = ["a-broker1", "a-broker2"]\n',
     "nemesis.timeline[0].targets: isolate cuts one node off"),
    ('[nemesis]\nschedule = "timeline"\n[[nemesis.timeline]]\nat_s = 1\n'
     'fault = "expire-session"\ntargets = ["bookie"]\n',
     "nemesis.timeline[0].targets: expire-session acts on brokers"),
    ('[nemesis]\nschedule = "timeline"\n[[nemesis.timeline]]\nat_s = 1\n'
     'fault = "random-halves"\ntargets = ["a-zk1"]\n',
     "nemesis.timeline[0].targets: random-halves takes no targets"),
    ('[workload]\nkind = "topic"\n[nemesis]\nschedule = "random"\n'
     'faults = ["kill-controller-leader"]\n',
     "nemesis.faults[0]: kill-controller-leader needs a scalable topic's controller"),
    ('[workload]\nkind = "scalable"\n[nemesis]\nschedule = "timeline"\n[[nemesis.timeline]]\n'
     'at_s = 1\nfault = "isolate-controller-leader"\ntargets = ["a-broker1"]\n',
     "nemesis.timeline[0].targets: isolate-controller-leader acts on the controller leader"),
])
def test_faults_a_backend_or_cluster_cannot_take_are_named(
        write_scenario: WriteScenario, text: str, message: str) -> None:
    scenario = write_scenario(text)
    with pytest.raises(ScenarioError) as caught:
        schedule_for(scenario, 1)
    assert str(caught.value).startswith(f"{scenario.path}: ")
    assert message in str(caught.value)


def test_a_role_the_target_has_no_node_of_is_named(write_scenario: WriteScenario) -> None:
    """A third party's target file may list brokers alone: a fault aimed at a bookie is
    then a plan error naming the key (the feature is skipped), not a crash."""
    scenario = write_scenario('[nemesis]\nschedule = "timeline"\n[[nemesis.timeline]]\n'
                              'at_s = 1\nfault = "kill"\ntargets = ["bookie", "owner"]\n')
    brokers = [Node("a-broker1", "broker", "a", "10.0.0.5", frozenset({"kill"}))]
    with pytest.raises(ScenarioError) as caught:
        schedule_for(scenario, 1, nodes=brokers)
    assert str(caught.value) == (f"{scenario.path}: nemesis.timeline[0].targets[0]: the "
                                 "target names no bookie node")


def test_controller_faults_aim_at_the_leader_found_at_run_time(
        write_scenario: WriteScenario) -> None:
    scenario = write_scenario('[workload]\nkind = "scalable"\n[nemesis]\nschedule = "random"\n'
                              'faults = ["kill-controller-leader", "isolate-controller-leader"]\n')
    steps = schedule_for(scenario, 3).steps
    assert steps and {s.fault for s in steps} <= {"kill-controller-leader",
                                                   "isolate-controller-leader"}
    assert all(s.targets == ("controller-leader",) for s in steps)
